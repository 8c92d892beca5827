import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseStartPosition, parseTimestamp } from '../../../src/cli/consume.ts';
import { UsageError } from '../../../src/cli/output.ts';

describe('consume: start positions', () => {
  it('reads --from-timestamp as milliseconds or as an ISO-8601 date-time', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8_640_000_000_000 }), (ms) => {
        assert.equal(parseTimestamp(String(ms)), ms);
        assert.equal(parseTimestamp(new Date(ms).toISOString()), ms);
      }),
    );
    assert.equal(parseTimestamp('2024-05-01T12:00:00+02:00'), Date.UTC(2024, 4, 1, 10));
    for (const bad of ['', 'yesterday', '-5', '1.5', '99999999999999999999']) assert.throws(() => parseTimestamp(bad), UsageError, bad);
  });

  it('reads --offset earliest, latest or a number; earliest by default', () => {
    assert.deepEqual(parseStartPosition(undefined, undefined), { kind: 'earliest' });
    assert.deepEqual(parseStartPosition('earliest', undefined), { kind: 'earliest' });
    assert.deepEqual(parseStartPosition('latest', undefined), { kind: 'latest' });
    assert.deepEqual(parseStartPosition('42', undefined), { kind: 'offset', offset: 42 });
    assert.deepEqual(parseStartPosition(undefined, '1000'), { kind: 'timestamp', timestampMs: 1000 });
    assert.throws(() => parseStartPosition('first', undefined), UsageError);
    assert.throws(() => parseStartPosition('0', '1000'), UsageError);
  });
});
