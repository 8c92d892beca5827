/** What a dead letter says about the failure that put it there: the error's class and message. */
import { ERROR_MESSAGE_MAX_CHARS } from '../dead-letters.ts';

export interface Failure {
  readonly errorClass: string;
  readonly errorMessage: string;
}

/** The class given to a thrown value that is not an Error (`throw 'text'`, `throw { code: 1 }`). */
export const NON_ERROR_THROWN = 'NonErrorThrown';

const ELLIPSIS = '…';

/** `message` cut to ERROR_MESSAGE_MAX_CHARS characters (code points), ending in an ellipsis when cut. */
export function boundedMessage(message: string): string {
  if (message.length <= ERROR_MESSAGE_MAX_CHARS) return message;
  const chars = Array.from(message);
  if (chars.length <= ERROR_MESSAGE_MAX_CHARS) return message;
  return chars.slice(0, ERROR_MESSAGE_MAX_CHARS - 1).join('') + ELLIPSIS;
}

function textOf(thrown: unknown): string {
  if (typeof thrown === 'string') return thrown;
  try {
    const json = JSON.stringify(thrown);
    if (json !== undefined) return json;
  } catch {
    // A cycle or a BigInt inside: String() below still gives something to read.
  }
  try {
    return String(thrown);
  } catch {
    // An object without a prototype, or whose toString throws.
    return Object.prototype.toString.call(thrown);
  }
}

/**
 * The error's class is its `name`, or its constructor's name when `name` was left as the
 * inherited 'Error' (`class InvalidOrder extends Error {}`).
 */
export function describeFailure(thrown: unknown): Failure {
  if (!(thrown instanceof Error)) return { errorClass: NON_ERROR_THROWN, errorMessage: boundedMessage(textOf(thrown)) };
  const constructorName = thrown.constructor?.name;
  const errorClass = thrown.name === 'Error' && constructorName ? constructorName : thrown.name || 'Error';
  return { errorClass, errorMessage: boundedMessage(thrown.message) };
}
