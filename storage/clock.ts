// The time seam of storage: every read of the clock and every timer of the logs (flush.ms,
// file.delete.delay.ms, the log manager's periodic tasks, the cleaner's backoff and slices)
// goes through a Clock, carried by the file context (FileHandlePool.clock) the way the
// FileSystem is. Storage cannot import the broker's runtime, so the interface is declared
// here and src/runtime re-exports it: the broker's one Clock is handed in as it is, which
// lets the simulation run the logs on virtual time.

/** Opaque timer reference handed back by a Clock. */
export type TimerHandle = object;

export interface Clock {
  /** Wall-clock milliseconds since the epoch (Date.now semantics): timestamps, retention, segment.ms. */
  now(): number;
  /** Milliseconds from an arbitrary origin that never goes backwards (performance.now semantics): durations. */
  monotonicMs(): number;
  /** Runs `fn` once after `delayMs`. A pending timer never keeps the process alive on its own. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Runs `fn` on the next turn of the event loop, after pending I/O callbacks. */
  setImmediate(fn: () => void): void;
}

/** The real clock, with node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicMs: () => performance.now(),
  setTimeout(fn, delayMs) {
    const timer = setTimeout(fn, delayMs);
    // A broker is kept alive by its listeners; a timer alone (a deferred flush or deletion,
    // an election timeout) must not hold up the exit of a process whose work is done.
    timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
  setImmediate(fn) {
    setImmediate(fn);
  },
};

/**
 * Runs `fn` every `periodMs` on `clock` (setInterval semantics: the next run is armed before
 * `fn` runs, so a throwing `fn` does not stop the series); returns a function that stops it.
 */
export function repeat(clock: Clock, periodMs: number, fn: () => void): () => void {
  let handle: TimerHandle;
  const run = (): void => {
    handle = clock.setTimeout(run, periodMs);
    fn();
  };
  handle = clock.setTimeout(run, periodMs);
  return () => clock.clearTimeout(handle);
}
