// The simulation's randomness: one seeded generator per run, from which every choice is drawn
// (event tie-breaks, network delays, faults, client actions) and from which each node's
// runtime Random is forked, so that a seed replays the same run.

import { Prng } from '../fuzz/prng.ts';
import type { Random } from '../../src/runtime/random.ts';

export { Prng };

/** A runtime Random over a seeded generator (element ids, election jitter, session ids). */
export function seededRandom(prng: Prng): Random {
  return {
    next: () => prng.float(),
    bytes: (n) => prng.bytes(n),
    uuid: () => {
      const b = prng.bytes(16);
      b[6] = (b[6]! & 0x0f) | 0x40;
      b[8] = (b[8]! & 0x3f) | 0x80;
      const h = b.toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    },
  };
}
