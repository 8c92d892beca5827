const INT32_MAX = 2 ** 31 - 1;

/**
 * A computed throttle time as the int32 that throttle_time_ms fields carry: rounded as Java's
 * Math.round (NaN gives 0). Kafka then casts the long to int, which wraps for the throttle of a
 * very large overrun of a very small quota; here it saturates instead, so such a client is
 * throttled for the longest time the protocol can say rather than for a wrapped, arbitrary one.
 * A throttle time is never negative.
 */
export function toThrottleTimeMs(ms: number): number {
  if (Number.isNaN(ms)) return 0;
  return Math.min(Math.max(Math.round(ms), 0), INT32_MAX);
}
