import assert from 'node:assert/strict';
import fc from 'fast-check';
import { clampOffset, resolveNewOffset, type OffsetResetTarget } from '../../../src/client/groups.ts';

const tp = { topic: 't', partition: 0 };
/** A log: start <= end. */
const log = fc.tuple(fc.nat({ max: 1e9 }), fc.nat({ max: 1e9 })).map(([a, b]) => ({ start: Math.min(a, b), end: Math.max(a, b) }));

describe('offset reset planning', () => {
  it('clamps every offset into [log start, log end]', () => {
    fc.assert(
      fc.property(log, fc.integer({ min: -1e12, max: 1e12 }), ({ start, end }, offset) => {
        const clamped = clampOffset(offset, start, end);
        assert.ok(clamped >= start && clamped <= end);
        if (offset >= start && offset <= end) assert.equal(clamped, offset);
      }),
    );
  });

  it('shifts the committed offset and clamps the result into the log', () => {
    assert.equal(resolveNewOffset({ kind: 'shift', by: -2 }, tp, 7, 0, 10, -1), 5);
    assert.equal(resolveNewOffset({ kind: 'shift', by: -20 }, tp, 7, 3, 10, -1), 3);
    assert.equal(resolveNewOffset({ kind: 'shift', by: 20 }, tp, 7, 3, 10, -1), 10);
    fc.assert(
      fc.property(log, fc.nat({ max: 1e9 }), fc.integer({ min: -1e9, max: 1e9 }), ({ start, end }, current, by) => {
        assert.equal(resolveNewOffset({ kind: 'shift', by }, tp, current, start, end, -1), Math.min(Math.max(current + by, start), end));
      }),
    );
  });

  it('refuses to shift a partition the group committed nothing for', () => {
    assert.throws(
      () => resolveNewOffset({ kind: 'shift', by: 1 }, tp, -1, 0, 10, -1),
      /Cannot shift offset for partition t-0 since there is no current committed offset/,
    );
  });

  it('moves to the log start or end, a clamped offset, or the offset found for a timestamp (else the log end)', () => {
    const at = (target: OffsetResetTarget, byTimestamp = -1): number => resolveNewOffset(target, tp, 5, 2, 9, byTimestamp);
    assert.equal(at({ kind: 'earliest' }), 2);
    assert.equal(at({ kind: 'latest' }), 9);
    assert.equal(at({ kind: 'offset', offset: 0 }), 2);
    assert.equal(at({ kind: 'offset', offset: 4 }), 4);
    assert.equal(at({ kind: 'offset', offset: 40 }), 9);
    assert.equal(at({ kind: 'timestamp', timestampMs: 1 }, 6), 6);
    assert.equal(at({ kind: 'timestamp', timestampMs: 1 }, -1), 9);
  });
});
