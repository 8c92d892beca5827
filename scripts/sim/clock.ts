// A node's clock in the simulation: a view of the scheduler's virtual time.
//
// Per node, the wall clock (now()) is virtual time plus an offset: the offset starts with a
// small seeded skew and clock jumps move it forward or back (an NTP step, a VM resumed), so
// wall time may run backwards on one node and differ between nodes. Monotonic time
// (monotonicMs()) is virtual time plus an origin per process incarnation: it never goes
// backwards and is unaffected by jumps, and timers run on it, as Node's do. Timers and
// immediates belong to the clock's owner, so a crashed process's pending timers never fire.

import type { Clock, TimerHandle } from '../../src/runtime/clock.ts';
import type { Owner, Scheduler } from './scheduler.ts';

/** Wall-clock time of virtual time 0: a fixed date, so that timestamps replay. */
export const SIM_EPOCH_MS = Date.UTC(2026, 0, 1);

export class SimClock implements Clock {
  private wallOffsetMs: number;

  constructor(
    private readonly scheduler: Scheduler,
    readonly owner: Owner,
    wallSkewMs = 0,
    private readonly monotonicOriginMs = 0,
  ) {
    this.wallOffsetMs = SIM_EPOCH_MS + wallSkewMs;
  }

  now(): number {
    return Math.floor(this.scheduler.nowMs + this.wallOffsetMs);
  }

  monotonicMs(): number {
    return this.scheduler.nowMs + this.monotonicOriginMs;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    // As Node: a delay below 1 ms (or not a number) is 1 ms, so a zero-delay timer loop
    // still lets time move.
    const d = Number.isFinite(delayMs) && delayMs >= 1 ? Math.min(delayMs, 2 ** 31 - 1) : 1;
    return this.scheduler.schedule(this.owner, 'timer', d, 'timer', fn);
  }

  clearTimeout(handle: TimerHandle): void {
    if (handle !== undefined && handle !== null) this.scheduler.cancel(handle);
  }

  setImmediate(fn: () => void): void {
    this.scheduler.immediate(this.owner, 'immediate', fn);
  }

  /** Steps the wall clock by `deltaMs` (negative: backwards); monotonic time and timers are unaffected. */
  jump(deltaMs: number): void {
    this.wallOffsetMs += deltaMs;
  }
}
