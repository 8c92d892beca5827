// Millisecond timestamps of the group coordinator. Kafka keeps them as Java longs and
// computes `now + retention` in wrapping 64-bit arithmetic; we keep them as JS numbers, so
// every int64 that comes from the wire or from `__consumer_offsets` is brought into range
// here, explicitly, before any arithmetic.
//
// Saturation, not rounding: a time beyond ±(2^53 - 1) ms (±285,000 years from 1970)
// compares with any clock reading exactly as the bound does, so clamping to the bound keeps
// every decision the coordinator makes (expired or not) while making the value exact.

/** The latest instant we represent: 2^53 - 1 ms, about the year 287,000. */
export const MAX_TIMESTAMP_MS = Number.MAX_SAFE_INTEGER;

/** OffsetCommit's and OffsetCommitValue's "no explicit expiry" / "no timestamp". */
export const NO_TIMESTAMP = -1;

const MAX = BigInt(MAX_TIMESTAMP_MS);

/** An int64 instant clamped to [0, MAX_TIMESTAMP_MS]: before the epoch is the epoch. */
export function saturateTimestampMs(value: bigint): number {
  if (value < 0n) return 0;
  if (value > MAX) return MAX_TIMESTAMP_MS;
  return Number(value);
}

/**
 * An int64 instant where -1 means "none" (Kafka's `ofSentinel`): -1 stays -1, anything else
 * is saturated. Another negative value is an instant before the epoch (Kafka treats it as
 * long expired), which 0 means just as well without colliding with the sentinel.
 */
export function saturateOptionalTimestampMs(value: bigint): number {
  return value === -1n ? NO_TIMESTAMP : saturateTimestampMs(value);
}

/**
 * The explicit expiry of an OffsetCommit v2-v4 commit: now + retention_time_ms, -1 (the
 * default) meaning the broker's offsets.retention.minutes applies. Kafka adds the two as
 * longs (OffsetMetadataManager.expireTimestampMs) and accepts any value; a sum past 2^63
 * wraps negative there and expires the offset at once, here it saturates and the offset
 * lives as long as the client asked. A negative retention other than -1 expires the
 * offset at the next check, as in Kafka.
 */
export function expireTimestampFromRetention(nowMs: number, retentionTimeMs: bigint): number {
  if (retentionTimeMs === -1n) return NO_TIMESTAMP;
  return saturateTimestampMs(BigInt(nowMs) + retentionTimeMs);
}

/**
 * The explicit expiry of an OffsetCommit v1 commit that names its commit timestamp: that
 * timestamp plus the broker's retention (the old GroupCoordinator's rule); -1 when the
 * client leaves the timestamp to the broker.
 */
export function expireTimestampFromCommitTimestamp(commitTimestampMs: bigint, retentionMs: number): number {
  if (commitTimestampMs === -1n) return NO_TIMESTAMP;
  return saturateTimestampMs(commitTimestampMs + BigInt(retentionMs));
}

/**
 * Whether `retentionMs` has passed since `baseMs` at `nowMs`, computed as Kafka does
 * (`now - base >= retention`); both instants are within [0, MAX_TIMESTAMP_MS], so the
 * difference is exact.
 */
export function retentionPassed(nowMs: number, baseMs: number, retentionMs: number): boolean {
  return nowMs - baseMs >= retentionMs;
}
