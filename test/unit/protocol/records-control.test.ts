import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  buildControlBatch,
  buildEndTxnMarker,
  buildRecordBatch,
  CompressionType,
  ControlRecordType,
  decodeControlRecordKey,
  decodeEndTxnMarkerValue,
  encodeControlRecordKey,
  encodeEndTxnMarkerValue,
  endTxnMarkerOf,
  InvalidRecordBatchError,
  readControlRecord,
  readControlRecordSync,
  readRecords,
  RecordBatch,
  validateBatchAt,
} from '../../../protocol/records/index.ts';

describe('control batches', () => {
  it('round-trip commit and abort markers with their header fields', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
        fc.integer({ min: 0, max: 32767 }),
        fc.integer({ min: 0, max: 2 ** 50 }),
        fc.integer({ min: -1, max: 1000 }),
        async (commit, coordinatorEpoch, producerId, producerEpoch, baseOffset, partitionLeaderEpoch) => {
          const timestamp = 1_700_000_000_123;
          const buf = await buildEndTxnMarker({
            commit,
            coordinatorEpoch,
            producerId,
            producerEpoch,
            timestamp,
            baseOffset,
            partitionLeaderEpoch,
          });
          validateBatchAt(buf, 0, buf.length, true);
          const batch = new RecordBatch(buf);
          assert.ok(batch.isControl);
          assert.ok(batch.isTransactional);
          assert.equal(batch.attributes, 0x30);
          assert.equal(batch.compression, CompressionType.None);
          assert.equal(batch.baseSequence, -1);
          assert.equal(batch.recordCount, 1);
          assert.equal(batch.lastOffsetDelta, 0);
          assert.equal(batch.partitionLeaderEpoch, partitionLeaderEpoch);
          const marker = endTxnMarkerOf(batch, readControlRecordSync(batch));
          assert.deepEqual(marker, { commit, coordinatorEpoch, producerId, producerEpoch, offset: baseOffset, timestamp });
        },
      ),
      { numRuns: 50 },
    );
  });

  it('writes the key and value bytes Kafka writes', async () => {
    const batch = new RecordBatch(
      await buildEndTxnMarker({ commit: true, coordinatorEpoch: 5, producerId: 1n, producerEpoch: 0, timestamp: 0 }),
    );
    const [record] = await readRecords(batch);
    assert.deepEqual(record!.key, Buffer.from('00000001', 'hex'));
    assert.deepEqual(record!.value, Buffer.from('000000000005', 'hex'));
    assert.deepEqual(encodeControlRecordKey(ControlRecordType.Abort), Buffer.from('00000000', 'hex'));
    assert.deepEqual(encodeEndTxnMarkerValue(7), Buffer.from('000000000007', 'hex'));
  });

  it('carries KRaft control records (leader change, snapshot header) with opaque values', async () => {
    const value = Buffer.from('0001020304', 'hex');
    const buf = await buildControlBatch({
      type: ControlRecordType.LeaderChange,
      value,
      timestamp: 42,
      baseOffset: 10,
      partitionLeaderEpoch: 3,
    });
    const batch = new RecordBatch(buf);
    assert.ok(batch.isControl);
    assert.ok(!batch.isTransactional);
    assert.equal(batch.producerId, -1n);
    const control = await readControlRecord(batch);
    assert.deepEqual(control, { type: ControlRecordType.LeaderChange, version: 0, value, offset: 10, timestamp: 42 });
    assert.equal(endTxnMarkerOf(batch, control), null);
  });

  it('reads a control record from a compressed control batch too', async () => {
    const buf = await buildRecordBatch({ isControl: true, compression: CompressionType.Gzip }, [
      { key: encodeControlRecordKey(ControlRecordType.SnapshotHeader), value: Buffer.from([1]), timestamp: 5 },
    ]);
    const batch = new RecordBatch(buf);
    assert.equal((await readControlRecord(batch)).type, ControlRecordType.SnapshotHeader);
    assert.throws(() => readControlRecordSync(batch), InvalidRecordBatchError);
  });

  it('refuses non-control batches and malformed keys and values', async () => {
    const plain = new RecordBatch(await buildRecordBatch({}, [{ value: null, timestamp: 1 }]));
    await assert.rejects(readControlRecord(plain), InvalidRecordBatchError);
    assert.throws(() => readControlRecordSync(plain), InvalidRecordBatchError);
    assert.throws(() => decodeControlRecordKey(null), InvalidRecordBatchError);
    assert.throws(() => decodeControlRecordKey(Buffer.from('000000', 'hex')), InvalidRecordBatchError);
    assert.throws(() => decodeControlRecordKey(Buffer.from('ffff0001', 'hex')), InvalidRecordBatchError);
    assert.throws(() => decodeEndTxnMarkerValue(Buffer.from('0000', 'hex')), InvalidRecordBatchError);
    // A newer value version is read by its version-0 prefix, as Kafka does.
    assert.deepEqual(decodeEndTxnMarkerValue(Buffer.from('00010000000900', 'hex')), { version: 1, coordinatorEpoch: 9 });
    // Types this code does not know still decode.
    assert.deepEqual(decodeControlRecordKey(Buffer.from('00000063', 'hex')), { version: 0, type: 99 });
  });

  it('refuses a marker without a producer id', async () => {
    await assert.rejects(buildEndTxnMarker({ commit: true, coordinatorEpoch: 0, producerId: -1n, producerEpoch: 0, timestamp: 0 }));
  });
});
