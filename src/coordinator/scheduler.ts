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
  private time: number;
  private seq = 0;
  private readonly tasks = new Map<number, { at: number; task: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.time = startMs;
  }

  now(): number {
    return this.time;
  }

  schedule(delayMs: number, task: () => void): Timer {
    const id = this.seq++;
    this.tasks.set(id, { at: this.time + Math.max(0, delayMs), task });
    return {
      cancel: () => {
        this.tasks.delete(id);
      },
    };
  }

  /** Moves time forward, running due tasks in time order (ties in scheduling order). */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      let nextId = -1;
      let nextAt = Infinity;
      for (const [id, t] of this.tasks) {
        if (t.at <= target && t.at < nextAt) {
          nextAt = t.at;
          nextId = id;
        }
      }
      if (nextId < 0) break;
      const due = this.tasks.get(nextId)!;
      this.tasks.delete(nextId);
      this.time = Math.max(this.time, due.at);
      due.task();
    }
    this.time = target;
  }

  pending(): number {
    return this.tasks.size;
  }
}
