// The one loop of a simulation run. Every timer, network delivery, disk completion, fault and
// client action is an event on virtual time; the loop takes the earliest (ties broken by the
// seeded generator, except that one node's timers due together keep their order, as Node's
// do), runs it, then lets the promise jobs it started settle before the next one. The only
// real asynchrony is that settling (a turn of Node's event loop with nothing real pending),
// so the same seed runs the same events in the same order.

import type { Prng } from './random.ts';
import { Trace } from './trace.ts';

/**
 * What an event belongs to: a node's process (one incarnation: a crash kills it, and its
 * pending timers and deliveries with it) or a client. The events of a dead owner never run.
 */
export class Owner {
  alive = true;
  constructor(readonly name: string) {}
}

/**
 * What an event is. The trace keeps 'net' (connects, resets), 'fault' and 'client' events in
 * its ring; the frequent ones ('timer', 'immediate', 'data' deliveries, 'disk' completions)
 * go into its hash only.
 */
export type EventKind = 'timer' | 'immediate' | 'net' | 'data' | 'disk' | 'fault' | 'client';

const QUIET_KINDS: ReadonlySet<EventKind> = new Set(['timer', 'immediate', 'data', 'disk']);

interface SimEvent {
  dueMs: number;
  /** 0 for timers (they keep creation order among equal due times), else seeded. */
  tie: number;
  seq: number;
  owner: Owner;
  kind: EventKind;
  label: string;
  fn: () => void;
  cancelled: boolean;
}

export type EventHandle = object;

/** A throw out of an event: in a real process an uncaught exception, which kills it. */
export interface EventFailure {
  owner: string;
  label: string;
  error: unknown;
}

export class Scheduler {
  /** Virtual time in ms: the true time of the run, which every node's clock is a view of. */
  nowMs = 0;
  steps = 0;
  readonly trace: Trace;
  readonly failures: EventFailure[] = [];
  private readonly heap: SimEvent[] = [];
  private immediates: SimEvent[] = [];
  private seq = 0;

  constructor(
    readonly prng: Prng,
    traceCapacity = 400,
  ) {
    this.trace = new Trace(traceCapacity);
  }

  /** Queues `fn` at now + delayMs; a timer (kind 'timer') at an equal due time after earlier timers. */
  schedule(owner: Owner, kind: EventKind, delayMs: number, label: string, fn: () => void): EventHandle {
    const event: SimEvent = {
      dueMs: this.nowMs + Math.max(0, delayMs),
      tie: kind === 'timer' ? 0 : 1 + this.prng.u32(),
      seq: this.seq++,
      owner,
      kind,
      label,
      fn,
      cancelled: false,
    };
    this.push(event);
    return event;
  }

  /** Runs `fn` on the owner's next turn: before time moves on, after what is already queued. */
  immediate(owner: Owner, label: string, fn: () => void): void {
    this.immediates.push({ dueMs: this.nowMs, tie: 0, seq: this.seq++, owner, kind: 'immediate', label, fn, cancelled: false });
  }

  cancel(handle: EventHandle): void {
    (handle as SimEvent).cancelled = true;
  }

  /**
   * Runs the next event and lets what it started settle. Returns false when nothing is due
   * at or before `untilMs` (time then stands at untilMs).
   */
  async step(untilMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    const event = this.next(untilMs);
    if (event === undefined) {
      if (Number.isFinite(untilMs) && untilMs > this.nowMs) this.nowMs = untilMs;
      return false;
    }
    this.nowMs = event.dueMs;
    this.steps++;
    if (!QUIET_KINDS.has(event.kind)) this.trace.add(this.nowMs, event.owner.name, event.label);
    else this.trace.hashOnly(this.nowMs, event.owner.name, event.label);
    try {
      event.fn();
    } catch (error) {
      this.failures.push({ owner: event.owner.name, label: event.label, error });
      this.trace.add(this.nowMs, event.owner.name, `THREW in ${event.label}: ${describe(error)}`);
    }
    await settle();
    return true;
  }

  private next(untilMs: number): SimEvent | undefined {
    while (this.immediates.length > 0) {
      const e = this.immediates.shift()!;
      if (live(e)) return e;
    }
    this.dropDeadTop();
    const top = this.heap[0];
    if (top === undefined || top.dueMs > untilMs) return undefined;
    return this.pop();
  }

  private dropDeadTop(): void {
    while (this.heap.length > 0 && !live(this.heap[0]!)) this.pop();
  }

  private push(e: SimEvent): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  private pop(): SimEvent {
    const h = this.heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l]!, h[m]!)) m = l;
        if (r < h.length && before(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

function live(e: SimEvent): boolean {
  return !e.cancelled && e.owner.alive;
}

function before(a: SimEvent, b: SimEvent): boolean {
  if (a.dueMs !== b.dueMs) return a.dueMs < b.dueMs;
  if (a.tie !== b.tie) return a.tie < b.tie;
  return a.seq < b.seq;
}

/**
 * Lets every promise job queued so far run: they all run before Node's next check phase, so
 * one real setImmediate suffices when nothing real (a socket, a file, a real timer) is
 * pending — the simulation's own seams make sure of that.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
