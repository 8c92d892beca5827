/**
 * 64-bit offsets, positions and timestamps from the wire, as the broker carries them: JS
 * numbers, exact to 2^53 (protocol/primitives.ts, `toSafeNumber`). A value beyond that range
 * names no offset of any log and no position the broker can hold, so no handler ever rounds
 * it: each answers it explicitly with the error Kafka gives for a value outside the log.
 */
import { Errors, KafkaError } from '../../protocol/errors.ts';
import { toSafeNumber } from '../../protocol/primitives.ts';

/**
 * An offset below every log's start offset (which is never negative): what a handler passes on
 * for a wire offset beyond ±(2^53 - 1), so that the replica manager checks the partition
 * (leadership, leader epoch) as for any offset and then answers OFFSET_OUT_OF_RANGE.
 */
export const OUTSIDE_EVERY_LOG = Number.MIN_SAFE_INTEGER;

/** `value` as a number, or null when it is beyond ±(2^53 - 1). */
export function safeOrNull(value: bigint): number | null {
  try {
    return toSafeNumber(value);
  } catch (err) {
    if (err instanceof RangeError) return null;
    throw err;
  }
}

/**
 * `value` as a number; beyond ±(2^53 - 1) the whole request is refused with INVALID_REQUEST
 * (the server answers the request's error response), as Kafka's Raft refuses an offset or
 * position it cannot hold.
 */
export function safeOrRefuse(value: bigint, what: string): number {
  const n = safeOrNull(value);
  if (n === null) throw new KafkaError(Errors.INVALID_REQUEST, `${what} ${value} is outside the range this broker can hold`);
  return n;
}
