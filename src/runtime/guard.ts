/**
 * The one way background work runs in the broker: timers, scheduled tasks, loaders and
 * fire-and-forget promises go through `guard` so that an exception (a bug, or a value from
 * the wire that slipped a check) is logged with its context and fails only the group,
 * partition or request it concerns, as Kafka's CoordinatorRuntime and KafkaApis do. Nothing
 * reaches the process's top level; the process installs no handler that would hide it.
 */

import type { Clock, TimerHandle } from './clock.ts';

/** Where a guarded task reports a failure: usually a logger bound to the component. */
export type FailureSink = (err: unknown, what: string) => void;

/**
 * Runs `task` now; a synchronous throw or a rejection goes to `onFailure` with `what`
 * (e.g. "rebalance timeout of group g"), and then to `recover` when given, which undoes the
 * partial state of the thing that failed. Never throws, never rejects.
 */
export function runGuarded(
  onFailure: FailureSink,
  what: string,
  task: () => void | Promise<unknown>,
  recover?: (err: unknown) => void,
): void {
  const fail = (err: unknown): void => {
    try {
      onFailure(err, what);
      recover?.(err);
    } catch {
      // The sink or the recovery failed too (a logger whose stream is gone): nothing is left
      // to tell, and the process must not die of it.
    }
  };
  try {
    const result = task();
    if (result instanceof Promise) result.catch(fail);
  } catch (err) {
    fail(err);
  }
}

/** `runGuarded` as a callback, for `setTimeout`, event emitters and schedulers. */
export function guarded(
  onFailure: FailureSink,
  what: string,
  task: () => void | Promise<unknown>,
  recover?: (err: unknown) => void,
): () => void {
  return () => runGuarded(onFailure, what, task, recover);
}

/**
 * Runs `task` every `intervalMs`, each run counted from the end of the previous one (an
 * asynchronous run is awaited), as runGuarded runs it: a failed run is reported and the next
 * one still comes. Returns the function that stops it, a run in progress included.
 */
export function schedulePeriodic(
  clock: Clock,
  intervalMs: number,
  onFailure: FailureSink,
  what: string,
  task: () => void | Promise<unknown>,
): () => void {
  let stopped = false;
  let handle: TimerHandle | null = null;
  const next = (): void => {
    if (stopped) return;
    handle = clock.setTimeout(
      () => {
        handle = null;
        let run: Promise<unknown>;
        try {
          run = Promise.resolve(task());
        } catch (err) {
          run = Promise.reject(err);
        }
        run.catch((err) => runGuarded(onFailure, what, () => Promise.reject(err))).finally(next);
      },
      Math.max(0, intervalMs),
    );
  };
  next();
  return () => {
    stopped = true;
    if (handle !== null) clock.clearTimeout(handle);
  };
}
