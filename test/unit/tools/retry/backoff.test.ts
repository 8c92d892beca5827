import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { type Backoff, DEFAULT_BACKOFF, backoffDelayMs } from '../../../../src/tools/retry/backoff.ts';

describe('retry backoff', () => {
  it('doubles from 200 ms by default and stops growing at 30 s', () => {
    const delays = Array.from({ length: 10 }, (_, i) => backoffDelayMs(DEFAULT_BACKOFF, i + 1));
    assert.deepEqual(delays, [200, 400, 800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000]);
  });

  it('waits initialMs * multiplier^(k-1) before attempt k+1, capped at maxMs', () => {
    const backoff: Backoff = { initialMs: 50, multiplier: 3, maxMs: 1000 };
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((k) => backoffDelayMs(backoff, k)),
      [50, 150, 450, 1000, 1000],
    );
  });

  it('a multiplier of 1 waits the same each time; an initial 0 never waits', () => {
    assert.deepEqual(
      [1, 2, 3].map((k) => backoffDelayMs({ initialMs: 70, multiplier: 1, maxMs: 100 }, k)),
      [70, 70, 70],
    );
    assert.deepEqual(
      [1, 2, 2000].map((k) => backoffDelayMs({ initialMs: 0, multiplier: 2, maxMs: 100 }, k)),
      [0, 0, 0],
    );
  });

  it('is non-decreasing, within [initialMs, maxMs], and finite even for huge attempt counts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 5000 }),
        (initialMs, multiplier, extraMs, k) => {
          const backoff = { initialMs, multiplier, maxMs: initialMs + extraMs };
          const d = backoffDelayMs(backoff, k);
          assert.ok(Number.isFinite(d) && Number.isInteger(d), `delay ${d}`);
          assert.ok(d >= initialMs && d <= backoff.maxMs, `delay ${d} out of [${initialMs}, ${backoff.maxMs}]`);
          assert.ok(backoffDelayMs(backoff, k + 1) >= d);
        },
      ),
    );
  });
});
