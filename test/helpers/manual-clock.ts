import type { Clock, TimerHandle } from '../../src/runtime/clock.ts';

interface Timer {
  atMs: number;
  seq: number;
  fn: () => void;
}

/** Where a ManualClock starts unless told: records a test stamps at it are not from the future. */
export const MANUAL_CLOCK_START_MS = 1_700_000_000_000;

/**
 * A clock whose time moves only when the test calls `advance`: due timers run synchronously
 * in time order (ties in the order they were set), each seeing the time it was due at.
 */
export class ManualClock implements Clock {
  private nowMs: number;
  private seq = 0;
  private readonly timers = new Set<Timer>();

  constructor(startMs = MANUAL_CLOCK_START_MS) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  monotonicMs(): number {
    return this.nowMs;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer: Timer = { atMs: this.nowMs + Math.max(0, delayMs), seq: this.seq++, fn };
    this.timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as Timer);
  }

  /** Not a timer: runs on the real event loop, so that awaiting a yield needs no `advance`. */
  setImmediate(fn: () => void): void {
    setImmediate(fn);
  }

  /** Moves time forward, running due timers in time order. */
  advance(deltaMs: number): void {
    const targetMs = this.nowMs + deltaMs;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.timers) {
        if (t.atMs <= targetMs && (next === undefined || t.atMs < next.atMs || (t.atMs === next.atMs && t.seq < next.seq))) next = t;
      }
      if (next === undefined) break;
      this.timers.delete(next);
      this.nowMs = Math.max(this.nowMs, next.atMs);
      next.fn();
    }
    this.nowMs = targetMs;
  }

  /** Timers set and not yet run or cleared. */
  get pendingTimers(): number {
    return this.timers.size;
  }
}
