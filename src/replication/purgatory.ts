/**
 * Delayed operations (Kafka's DelayedOperationPurgatory): a produce waiting for the high
 * watermark or a fetch waiting for bytes is parked under the keys it watches and completed
 * by whoever changes those keys (an append, a high watermark move), or expires on its own
 * timer. Nothing polls: waiters are woken only by the events they watch.
 */

import { schedule, systemClock, type Clock } from '../runtime/clock.ts';

/**
 * One parked operation. `tryComplete` checks its condition and calls `forceComplete` when
 * it holds; `onComplete` runs exactly once, whether by completion or by expiry.
 */
export abstract class DelayedOperation {
  private completed = false;
  private cancelTimer: (() => void) | null = null;
  /** Set by the purgatory: the keys this operation is watched under. */
  watchedKeys: readonly string[] = [];

  constructor(readonly delayMs: number) {}

  get isCompleted(): boolean {
    return this.completed;
  }

  /** Checks the completion condition; returns true when this call completed the operation. */
  abstract tryComplete(): boolean;
  /** Builds and delivers the result. Runs once. */
  protected abstract onComplete(): void;
  /** Called before onComplete when the operation timed out. */
  protected onExpiration(): void {}

  forceComplete(): boolean {
    if (this.completed) return false;
    this.completed = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
    this.onComplete();
    return true;
  }

  /** @internal */
  startTimer(clock: Clock, onExpired: () => void): void {
    this.cancelTimer = schedule(clock, this.delayMs, () => {
      this.cancelTimer = null;
      if (this.completed) return;
      this.onExpiration();
      this.forceComplete();
      onExpired();
    });
  }
}

export class DelayedOperationPurgatory<T extends DelayedOperation> {
  private readonly watchers = new Map<string, Set<T>>();

  constructor(
    readonly name: string,
    private readonly clock: Clock = systemClock,
  ) {}

  /**
   * Completes `op` now if it can; otherwise parks it under `keys` until one of them is
   * checked and its condition holds, or its delay runs out. Returns true when completed now.
   */
  tryCompleteElseWatch(op: T, keys: readonly string[]): boolean {
    if (op.tryComplete()) return true;
    op.watchedKeys = keys;
    for (const key of keys) {
      let set = this.watchers.get(key);
      if (set === undefined) {
        set = new Set();
        this.watchers.set(key, set);
      }
      set.add(op);
    }
    // A change may have happened between the first check and the watch; Kafka re-checks too.
    if (op.tryComplete()) {
      this.unwatch(op);
      return true;
    }
    op.startTimer(this.clock, () => this.unwatch(op));
    return false;
  }

  /** Re-checks every operation watching `key`; returns how many completed. */
  checkAndComplete(key: string): number {
    const set = this.watchers.get(key);
    if (set === undefined) return 0;
    let completed = 0;
    for (const op of [...set]) {
      if (op.isCompleted || op.tryComplete()) {
        this.unwatch(op);
        completed++;
      }
    }
    return completed;
  }

  /** Completes every operation watching `key` at once (the partition went away). */
  completeAll(key: string): void {
    const set = this.watchers.get(key);
    if (set === undefined) return;
    for (const op of [...set]) {
      op.forceComplete();
      this.unwatch(op);
    }
  }

  /** Number of operations parked (each counted once). */
  get size(): number {
    const all = new Set<T>();
    for (const set of this.watchers.values()) for (const op of set) all.add(op);
    return all.size;
  }

  watched(key: string): number {
    return this.watchers.get(key)?.size ?? 0;
  }

  private unwatch(op: T): void {
    for (const key of op.watchedKeys) {
      const set = this.watchers.get(key);
      if (set === undefined) continue;
      set.delete(op);
      if (set.size === 0) this.watchers.delete(key);
    }
  }
}
