/**
 * A small seeded PRNG (splitmix32): the nemesis draws its whole schedule and every target from
 * one, so a failing run's seed replays the same faults in the same order.
 */
export class Prng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  /** A uniform float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 0x1_0000_0000;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** An independent generator for one part of the run (one fault's targets), fixed by the seed. */
  fork(label: number): Prng {
    return new Prng(Math.imul(this.seed ^ 0x5bd1e995, label + 1) ^ label);
  }
}

/** A seed for a run that was given none. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 0x7fff_ffff);
}
