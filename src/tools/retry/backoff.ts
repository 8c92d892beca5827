/** How long to wait between a record's failed attempts, growing exponentially up to a cap. */
export interface Backoff {
  /** The wait after the first failed attempt, ms. */
  readonly initialMs: number;
  /** What each further wait is multiplied by. */
  readonly multiplier: number;
  /** The longest wait, ms. */
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 200, multiplier: 2, maxMs: 30_000 };

/**
 * The wait before attempt `attemptsMade + 1`, once `attemptsMade` (>= 1) attempts failed:
 * min(maxMs, initialMs * multiplier^(attemptsMade - 1)).
 */
export function backoffDelayMs(backoff: Backoff, attemptsMade: number): number {
  if (backoff.initialMs === 0) return 0;
  // multiplier^(n-1) reaches Infinity for a large n: the cap still applies.
  return Math.min(backoff.maxMs, Math.round(backoff.initialMs * backoff.multiplier ** (attemptsMade - 1)));
}
