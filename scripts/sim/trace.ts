// The trace of a run: a bounded ring of the latest events, printed when an invariant fails,
// and a running hash of every event (timers included), which is the same for two runs of
// one seed exactly when they ran the same events in the same order.

import { createHash, type Hash } from 'node:crypto';

export interface TraceEvent {
  timeMs: number;
  who: string;
  what: string;
}

export class Trace {
  private readonly ring: (TraceEvent | undefined)[];
  private at = 0;
  private total = 0;
  private readonly hash: Hash = createHash('sha256');

  constructor(readonly capacity: number) {
    this.ring = new Array(capacity);
  }

  /** Records an event in the ring and the hash. */
  add(timeMs: number, who: string, what: string): void {
    this.hashOnly(timeMs, who, what);
    this.ring[this.at] = { timeMs, who, what };
    this.at = (this.at + 1) % this.capacity;
    this.total++;
  }

  /** Records an event in the hash only: the frequent, uninformative ones (timers). */
  hashOnly(timeMs: number, who: string, what: string): void {
    this.hash.update(`${timeMs}|${who}|${what}\n`);
  }

  /** The hash so far (the trace can still grow afterwards). */
  digest(): string {
    return this.hash.copy().digest('hex').slice(0, 16);
  }

  /** The events in the ring, oldest first. */
  events(): TraceEvent[] {
    const out: TraceEvent[] = [];
    for (let i = 0; i < this.capacity; i++) {
      const e = this.ring[(this.at + i) % this.capacity];
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  format(): string {
    const shown = this.events();
    const head = this.total > shown.length ? [`  ... ${this.total - shown.length} earlier events`] : [];
    return [...head, ...shown.map((e) => `  ${e.timeMs.toFixed(1).padStart(10)} ms  ${e.who.padEnd(10)} ${e.what}`)].join('\n');
  }
}
