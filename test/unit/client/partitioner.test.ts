import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { murmur2, partitionForKey } from '../../../src/client/partitioner.ts';

describe('partitioner', () => {
  it("murmur2 gives the values of Kafka's UtilsTest", () => {
    const cases: [string, number][] = [
      ['21', -973932308],
      ['foobar', -790332482],
      ['a-little-bit-long-string', -985981536],
      ['a-little-bit-longer-string', -1486304829],
      ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
      ['abc', 479470107],
    ];
    for (const [key, hash] of cases) assert.equal(murmur2(Buffer.from(key)), hash, key);
  });

  it("puts every key in the partition kafkajs's Java-compatible default partitioner picks", () => {
    const kafkajs = Partitioners.DefaultPartitioner();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 1, max: 500 }), (key, partitions) => {
        const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
          partitionId,
          leader: 1,
          partitionErrorCode: 0,
          replicas: [1],
          isr: [1],
        }));
        const expected = kafkajs({ topic: 't', partitionMetadata, message: { key: Buffer.from(key), value: null } });
        assert.equal(partitionForKey(key, partitions), expected);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a partition count below 1', () => {
    assert.throws(() => partitionForKey(Buffer.from('k'), 0), RangeError);
  });
});
