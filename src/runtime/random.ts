/**
 * Randomness: election jitter, member ids, fetch session ids, topic and cluster ids. A
 * broker draws it from the Random of its runtime so that a seeded simulation replays the
 * same choices.
 */
import { randomBytes, randomUUID } from 'node:crypto';

export interface Random {
  /** A float in [0, 1) (Math.random semantics). */
  next(): number;
  /** `n` random bytes. */
  bytes(n: number): Buffer;
  /** An RFC 4122 version-4 UUID in its canonical text form. */
  uuid(): string;
}

export const systemRandom: Random = {
  next: () => Math.random(),
  bytes: (n) => randomBytes(n),
  uuid: () => randomUUID(),
};
