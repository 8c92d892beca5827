/**
 * Time and timers. Every component of a broker reads the time and sets its timers through
 * a Clock handed down from `BrokerOptions.runtime`, so that tests and the simulation drive
 * elections, session timeouts, delayed operations and retries on virtual time while running
 * the production code paths. The interface is storage's (storage cannot import src/), so the
 * one Clock a broker is given serves its logs too.
 */
import type { Clock } from '../../storage/clock.ts';

export { type Clock, type TimerHandle, repeat, systemClock } from '../../storage/clock.ts';

/** Resolves on the next turn of `clock`'s event loop: lets I/O and other tasks run. */
export function yieldToEventLoop(clock: Clock): Promise<void> {
  return new Promise((resolve) => clock.setImmediate(resolve));
}

/** Runs `fn` once after `delayMs` on `clock`; returns a function that cancels it. */
export function schedule(clock: Clock, delayMs: number, fn: () => void): () => void {
  const handle = clock.setTimeout(fn, delayMs);
  return () => clock.clearTimeout(handle);
}
