/**
 * Timers for the coordinators, behind an interface so their state machines can be driven
 * by a fake clock in tests.
 */
export interface Timer {
  cancel(): void;
}

export interface Scheduler {
  now(): number;
  schedule(delayMs: number, task: () => void): Timer;
}

export const systemScheduler: Scheduler = {
  now: () => Date.now(),
  schedule(delayMs, task) {
    const handle = setTimeout(task, Math.max(0, delayMs));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};

/** A scheduler whose time only moves when `advance` is called. */
export class ManualScheduler implements Scheduler {
  private nowMs: number;
  private seq = 0;
  private readonly tasks = new Map<number, { atMs: number; task: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  schedule(delayMs: number, task: () => void): Timer {
    const id = this.seq++;
    this.tasks.set(id, { atMs: this.nowMs + Math.max(0, delayMs), task });
    return {
      cancel: () => {
        this.tasks.delete(id);
      },
    };
  }

  /** Moves time forward, running due tasks in time order (ties in scheduling order). */
  advance(deltaMs: number): void {
    const targetMs = this.nowMs + deltaMs;
    for (;;) {
      let next: { id: number; atMs: number; task: () => void } | undefined;
      for (const [id, t] of this.tasks) {
        if (t.atMs <= targetMs && (next === undefined || t.atMs < next.atMs)) next = { id, ...t };
      }
      if (next === undefined) break;
      this.tasks.delete(next.id);
      this.nowMs = Math.max(this.nowMs, next.atMs);
      next.task();
    }
    this.nowMs = targetMs;
  }

  pending(): number {
    return this.tasks.size;
  }
}
