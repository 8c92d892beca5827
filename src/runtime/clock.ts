/**
 * Time and timers. Every component of a broker reads the time and sets its timers through
 * a Clock handed down from `BrokerOptions.runtime`, so that tests and the simulation drive
 * elections, session timeouts, delayed operations and retries on virtual time while running
 * the production code paths.
 */

/** Opaque timer reference handed back by a Clock. */
export type TimerHandle = object;

export interface Clock {
  /** Wall-clock milliseconds since the epoch (Date.now semantics): timestamps, deadlines. */
  now(): number;
  /** Milliseconds from an arbitrary origin that never goes backwards (performance.now semantics): durations. */
  monotonicMs(): number;
  /** Runs `fn` once after `delayMs`. A pending timer never keeps the process alive on its own. */
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
  /** Runs `fn` on the next turn of the event loop, after pending I/O callbacks. */
  setImmediate(fn: () => void): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonicMs: () => performance.now(),
  setTimeout(fn, delayMs) {
    const timer = setTimeout(fn, delayMs);
    // A broker is kept alive by its listeners; a timer alone must not hold up the exit of
    // a process (a CLI tool, a test) whose work is done.
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

/** Resolves on the next turn of `clock`'s event loop: lets I/O and other tasks run. */
export function yieldToEventLoop(clock: Clock): Promise<void> {
  return new Promise((resolve) => clock.setImmediate(resolve));
}

/** Runs `fn` once after `delayMs` on `clock`; returns a function that cancels it. */
export function schedule(clock: Clock, delayMs: number, fn: () => void): () => void {
  const handle = clock.setTimeout(fn, delayMs);
  return () => clock.clearTimeout(handle);
}

/**
 * Runs `fn` every `periodMs` on `clock` (setInterval semantics: the next run is armed
 * before `fn` runs, so a throwing `fn` does not stop the series); returns a function that
 * stops it.
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
