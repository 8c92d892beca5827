// A response's error messages are free text, and some quote what the request sent (Kafka's
// "Topic name is illegal, it can't be longer than 249 characters, topic name: <name>"). A
// name near the 32767 bytes a string holds makes such a message longer than any string may
// be, and the response could not be encoded. The error code is the answer: the message is cut
// to fit.
import { EncodeError, MAX_STRING_BYTES, utf8Length, utf8Prefix } from './primitives.ts';

/** errorMessage, and the ShareAcknowledge / Produce variants (acknowledgeErrorMessage, batchIndexErrorMessage). */
const ERROR_MESSAGE_FIELD = /^(errorMessage|[a-z][A-Za-z]*ErrorMessage)$/;
const CUT_MARK = '...';

/** `encode()` of `body`, once more with the error messages of `body` cut to fit when it failed for them. */
export function encodeFitting<T>(body: unknown, encode: () => T): T {
  try {
    return encode();
  } catch (err) {
    if (err instanceof EncodeError && fitErrorMessages(body)) return encode();
    throw err;
  }
}

/** Cuts every error message in `body` that a string cannot hold; whether any was cut. */
export function fitErrorMessages(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Buffer.isBuffer(body)) return false;
  let cut = false;
  if (Array.isArray(body)) {
    for (const element of body) cut = fitErrorMessages(element) || cut;
    return cut;
  }
  const fields = body as Record<string, unknown>;
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value === 'string') {
      if (ERROR_MESSAGE_FIELD.test(key) && utf8Length(value) > MAX_STRING_BYTES) {
        fields[key] = fittedMessage(value);
        cut = true;
      }
    } else {
      cut = fitErrorMessages(value) || cut;
    }
  }
  return cut;
}

/** The longest prefix of `message` that fits a string with the cut mark, cut between characters. */
export function fittedMessage(message: string): string {
  if (utf8Length(message) <= MAX_STRING_BYTES) return message;
  return `${utf8Prefix(message, MAX_STRING_BYTES - CUT_MARK.length)}${CUT_MARK}`;
}
