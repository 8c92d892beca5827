/**
 * Waiting inside a kafkajs batch: a consumer that sleeps without heartbeating is taken for dead
 * and its partitions are given away, so waits are cut into slices with a heartbeat between them.
 */

/** The longest sleep between two heartbeats (kafkajs only sends one per heartbeatInterval). */
const SLICE_MS = 500;

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export interface WaitControl {
  /** Called between slices; may throw (kafkajs throws there when the group rebalances). */
  heartbeat(): Promise<void>;
  /** True when the wait should end early: the consumer stops, or the partition moved. */
  interrupted(): boolean;
  /** Ends a slice early. */
  signal?: AbortSignal;
}

/** Waits until `untilMs` (epoch ms); false when interrupted first. */
export async function waitUntil(untilMs: number, control: WaitControl): Promise<boolean> {
  for (;;) {
    if (control.interrupted()) return false;
    const leftMs = untilMs - Date.now();
    if (leftMs <= 0) return true;
    await control.heartbeat();
    await sleep(Math.min(leftMs, SLICE_MS), control.signal);
  }
}
