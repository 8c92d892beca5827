import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeCoordinatorRecord, encodeCoordinatorRecord } from '../../../src/coordinator/offsets-topic-codec.ts';
import type { CoordinatorRecord } from '../../../src/coordinator/records.ts';

const text = fc.string({ maxLength: 20 });
const bytes = fc.uint8Array({ maxLength: 32 }).map((a) => Buffer.from(a));
const timestamp = fc.integer({ min: 0, max: 2 ** 45 });

const offsetRecord: fc.Arbitrary<CoordinatorRecord> = fc.record(
  {
    type: fc.constant('offset' as const),
    groupId: text,
    topic: text,
    partition: fc.integer({ min: 0, max: 100_000 }),
    value: fc.option(
      fc.record(
        {
          offset: fc.bigInt({ min: -1n, max: 2n ** 62n }),
          leaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
          metadata: text,
          commitTimestampMs: timestamp,
          expireTimestampMs: fc.constant(-1),
        },
        { noNullPrototype: true },
      ),
      { nil: null },
    ),
  },
  { noNullPrototype: true },
);

const groupRecord: fc.Arbitrary<CoordinatorRecord> = fc.record(
  {
    type: fc.constant('group' as const),
    groupId: text,
    value: fc.option(
      fc.record(
        {
          protocolType: text,
          generationId: fc.integer({ min: 0, max: 1000 }),
          protocolName: fc.option(text, { nil: null }),
          leaderId: fc.option(text, { nil: null }),
          currentStateTimestampMs: timestamp,
          members: fc.array(
            fc.record(
              {
                memberId: text,
                groupInstanceId: fc.option(text, { nil: null }),
                clientId: text,
                clientHost: text,
                rebalanceTimeoutMs: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
                sessionTimeoutMs: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
                subscription: bytes,
                assignment: bytes,
              },
              { noNullPrototype: true },
            ),
            { maxLength: 4 },
          ),
        },
        { noNullPrototype: true },
      ),
      { nil: null },
    ),
  },
  { noNullPrototype: true },
);

describe('__consumer_offsets record format', () => {
  it('round-trips offset and group records, tombstones included', () => {
    fc.assert(
      fc.property(fc.oneof(offsetRecord, groupRecord), (record) => {
        const { key, value } = encodeCoordinatorRecord(record);
        assert.deepEqual(decodeCoordinatorRecord(key, value), record);
      }),
      { numRuns: 300 },
    );
  });

  it('writes the key versions Kafka writes (offset key v1, group key v2) and value v3', () => {
    const offset = encodeCoordinatorRecord({
      type: 'offset',
      groupId: 'g',
      topic: 't',
      partition: 0,
      value: { offset: 1n, leaderEpoch: 0, metadata: '', commitTimestampMs: 1, expireTimestampMs: -1 },
    });
    assert.equal(offset.key.readInt16BE(0), 1);
    assert.equal(offset.value!.readInt16BE(0), 3);
    const group = encodeCoordinatorRecord({ type: 'group', groupId: 'g', value: null });
    assert.equal(group.key.readInt16BE(0), 2);
    assert.equal(group.value, null);
  });

  it('ignores record types it does not keep', () => {
    const key = Buffer.from([0, 5, 0, 1, 0x67]);
    assert.equal(decodeCoordinatorRecord(key, null), null);
  });
});
