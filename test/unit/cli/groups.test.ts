import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseDateTime, parseIsoDuration, parseTopicPartitions } from '../../../src/cli/groups.ts';
import { UsageError } from '../../../src/cli/output.ts';

describe('sluice groups reset-offsets parsing', () => {
  it('reads --topic T as every partition and T:P,P as those partitions, sorted and once each', () => {
    assert.deepEqual(parseTopicPartitions('orders'), { topic: 'orders', partitions: null });
    assert.deepEqual(parseTopicPartitions('orders:0'), { topic: 'orders', partitions: [0] });
    assert.deepEqual(parseTopicPartitions('orders.v2:3,1,3'), { topic: 'orders.v2', partitions: [1, 3] });
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-zA-Z0-9._-]{1,40}$/),
        fc.array(fc.nat({ max: 100_000 }), { minLength: 1, maxLength: 20 }),
        (topic, partitions) => {
          const parsed = parseTopicPartitions(`${topic}:${partitions.join(',')}`);
          assert.equal(parsed.topic, topic);
          assert.deepEqual(
            parsed.partitions,
            [...new Set(partitions)].sort((a, b) => a - b),
          );
        },
      ),
    );
  });

  it('refuses a --topic without a name or with partitions that are not numbers', () => {
    for (const text of ['', ':0', 't:', 't:a', 't:1,,2', 't:-1', 't:1.5']) {
      assert.throws(() => parseTopicPartitions(text), UsageError, text);
    }
  });

  it('reads --by-duration as Java Duration PnDTnHnMnS', () => {
    assert.equal(parseIsoDuration('PT0S'), 0);
    assert.equal(parseIsoDuration('PT30M'), 1_800_000);
    assert.equal(parseIsoDuration('P1DT2H3M4.5S'), 86_400_000 + 7_200_000 + 180_000 + 4_500);
    assert.equal(parseIsoDuration('p2d'), 172_800_000);
    fc.assert(
      fc.property(fc.nat({ max: 1000 }), fc.nat({ max: 23 }), fc.nat({ max: 59 }), fc.nat({ max: 59 }), (d, h, m, s) => {
        assert.equal(parseIsoDuration(`P${d}DT${h}H${m}M${s}S`), ((d * 24 + h) * 60 + m) * 60_000 + s * 1000);
      }),
    );
  });

  it('refuses durations that are not PnDTnHnMnS', () => {
    for (const text of ['', 'P', 'PT', 'P1DT', '1h', 'PT1H30', 'PT-1S', 'P1W', 'PT1S2M']) {
      assert.throws(() => parseIsoDuration(text), UsageError, text);
    }
  });

  it('reads --to-datetime with a zone as that instant and without one as local time', () => {
    assert.equal(parseDateTime('2024-03-01T12:00:00.000Z'), Date.UTC(2024, 2, 1, 12));
    assert.equal(parseDateTime('2024-03-01T12:00:00+01:00'), Date.UTC(2024, 2, 1, 11));
    assert.equal(parseDateTime('2024-03-01T12:00:00-0130'), Date.UTC(2024, 2, 1, 13, 30));
    assert.equal(parseDateTime('2024-03-01T12:00'), new Date(2024, 2, 1, 12).getTime());
    fc.assert(
      fc.property(fc.date({ min: new Date('1971-01-01'), max: new Date('2999-12-31'), noInvalidDate: true }), (date) => {
        assert.equal(parseDateTime(date.toISOString()), date.getTime());
      }),
    );
    for (const text of ['yesterday', '2024-03-01', '2024-13-01T00:00:00Z', '1700000000000']) {
      assert.throws(() => parseDateTime(text), UsageError, text);
    }
  });
});
