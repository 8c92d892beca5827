import type { Clock } from '../../../src/replication/purgatory.ts';

/** A clock that moves only when the test advances it; due timers fire in time order. */
export class FakeClock implements Clock {
  private time = 1_700_000_000_000;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;

  now(): number {
    return this.time;
  }

  schedule(delayMs: number, fn: () => void): () => void {
    const id = this.nextId++;
    this.timers.push({ at: this.time + delayMs, fn, id });
    return () => {
      this.timers = this.timers.filter((t) => t.id !== id);
    };
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  advance(ms: number): void {
    this.time += ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= this.time).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) return;
      this.timers = this.timers.filter((t) => t !== due);
      due.fn();
    }
  }
}
