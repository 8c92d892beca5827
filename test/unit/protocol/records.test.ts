import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CompressionError } from '../../../protocol/compression/index.ts';
import { EncodeError } from '../../../protocol/primitives.ts';
import {
  ATTRIBUTES,
  MAX_TIMESTAMP,
  batchesIn,
  buildEmptyBatch,
  buildRecordBatch,
  CompressionType,
  decompressedRecords,
  InvalidRecordBatchError,
  iterateRecords,
  NO_TIMESTAMP,
  readRecords,
  RECORD_BATCH_OVERHEAD,
  RecordBatch,
  RecordBatchBuilder,
  records,
  TimestampType,
  validateBatchAt,
  type RecordBatchOptions,
  type RecordInput,
} from '../../../protocol/records/index.ts';

const BASE_TIME = 1_700_000_000_000;

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
const nullableBytes = (max: number) => fc.option(bytes(max), { nil: null, freq: 4 });

const recordArb = fc.record({
  key: nullableBytes(40),
  value: fc.oneof(
    nullableBytes(200),
    fc.integer({ min: 0, max: 20_000 }).map((n) => Buffer.alloc(n, n % 251)),
  ),
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 12 }), value: nullableBytes(30) }), { maxLength: 3 }),
  timestampOffset: fc.integer({ min: -5_000, max: 2 ** 40 }),
  gap: fc.integer({ min: 0, max: 3 }),
});

const codecArb = fc.constantFrom(
  { compression: CompressionType.None },
  { compression: CompressionType.Gzip },
  { compression: CompressionType.Snappy, compressionOptions: { snappyFraming: 'xerial' as const } },
  { compression: CompressionType.Snappy, compressionOptions: { snappyFraming: 'raw' as const } },
  { compression: CompressionType.Lz4 },
  { compression: CompressionType.Zstd },
);

const optionsArb: fc.Arbitrary<RecordBatchOptions> = fc
  .record({
    codec: codecArb,
    baseOffset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 50 })),
    partitionLeaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
    producer: fc.option(
      fc.record({
        producerId: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
        producerEpoch: fc.integer({ min: 0, max: 32767 }),
        baseSequence: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        isTransactional: fc.boolean(),
      }),
      { nil: undefined },
    ),
    logAppendTime: fc.option(fc.integer({ min: 0, max: 2 ** 42 }), { nil: undefined }),
  })
  .map(({ codec, baseOffset, partitionLeaderEpoch, producer, logAppendTime }) => ({
    ...codec,
    baseOffset,
    partitionLeaderEpoch,
    ...producer,
    ...(logAppendTime === undefined ? {} : { timestampType: TimestampType.LogAppendTime, logAppendTimeMs: logAppendTime }),
  }));

type GeneratedRecord = typeof recordArb extends fc.Arbitrary<infer T> ? T : never;

function inputsOf(generated: GeneratedRecord[]): RecordInput[] {
  let offsetDelta = -1;
  return generated.map((g) => {
    offsetDelta += 1 + g.gap;
    const headers = g.headers.map((h) => ({ key: h.key, value: h.value }));
    return { key: g.key, value: g.value, headers, timestamp: Math.max(0, BASE_TIME + g.timestampOffset), offsetDelta };
  });
}

async function expectCorrupt(p: Promise<unknown>): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof InvalidRecordBatchError && err.kind === 'corrupt');
}

describe('record batches', () => {
  it('round-trip through build and iterate with every codec, header fields included', async () => {
    await fc.assert(
      fc.asyncProperty(optionsArb, fc.array(recordArb, { minLength: 1, maxLength: 25 }), async (options, generated) => {
        const inputs = inputsOf(generated);
        const buf = await buildRecordBatch(options, inputs);
        assert.equal(validateBatchAt(buf, 0, buf.length, true), buf.length);
        const batch = new RecordBatch(buf);
        const last = inputs[inputs.length - 1]!;
        const logAppend = options.timestampType === TimestampType.LogAppendTime;
        assert.equal(batch.magic, 2);
        assert.equal(batch.baseOffset, Number(options.baseOffset));
        assert.equal(batch.partitionLeaderEpoch, options.partitionLeaderEpoch);
        assert.equal(batch.compression, options.compression);
        assert.equal(batch.timestampType, logAppend ? TimestampType.LogAppendTime : TimestampType.CreateTime);
        assert.equal(batch.isTransactional, options.isTransactional ?? false);
        assert.equal(batch.isControl, false);
        assert.equal(batch.lastOffsetDelta, last.offsetDelta);
        assert.equal(batch.recordCount, inputs.length);
        assert.equal(batch.baseTimestamp, inputs[0]!.timestamp);
        assert.equal(batch.maxTimestamp, logAppend ? options.logAppendTimeMs : Math.max(...inputs.map((r) => r.timestamp)));
        assert.equal(batch.producerId, options.producerId ?? -1n);
        assert.equal(batch.producerEpoch, options.producerEpoch ?? -1);
        assert.equal(batch.baseSequence, options.baseSequence ?? -1);
        assert.ok(batch.isCrcValid());

        const decoded = await readRecords(batch);
        assert.equal(decoded.length, inputs.length);
        decoded.forEach((r, i) => {
          const input = inputs[i]!;
          assert.equal(r.offset, batch.baseOffset + input.offsetDelta!);
          assert.equal(r.offsetDelta, input.offsetDelta);
          assert.equal(r.timestamp, logAppend ? options.logAppendTimeMs : input.timestamp);
          assert.deepEqual(r.key, input.key);
          assert.deepEqual(r.value, input.value);
          assert.deepEqual(r.headers, input.headers);
          assert.equal(r.attributes, 0);
        });
      }),
      { numRuns: 120 },
    );
  });

  it('keeps the CRC valid through setBaseOffset and setPartitionLeaderEpoch, and offsets follow', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(recordArb, { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 2 ** 52 }),
        fc.integer({ min: -1, max: 2 ** 31 - 1 }),
        async (generated, baseOffset, epoch) => {
          const inputs = inputsOf(generated);
          const buf = await buildRecordBatch({ compression: CompressionType.Lz4 }, inputs);
          const batch = new RecordBatch(buf);
          batch.setBaseOffset(baseOffset);
          batch.setPartitionLeaderEpoch(epoch);
          assert.ok(batch.isCrcValid());
          assert.equal(batch.baseOffset, baseOffset);
          assert.equal(batch.partitionLeaderEpoch, epoch);
          assert.deepEqual(
            (await readRecords(batch)).map((r) => r.offset),
            inputs.map((r) => baseOffset + r.offsetDelta!),
          );
        },
      ),
      { numRuns: 30 },
    );
  });

  it('reads and writes int64 header fields as numbers exactly as the BigInt forms', () => {
    const buf = Buffer.alloc(RECORD_BATCH_OVERHEAD);
    const batch = new RecordBatch(buf);
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        buf.writeBigInt64BE(value, 0);
        buf.writeBigInt64BE(value, MAX_TIMESTAMP);
        assert.equal(batch.baseOffset, Number(value));
        assert.equal(batch.maxTimestamp, Number(value));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.maxSafeInteger(), (value) => {
        batch.setBaseOffset(value);
        assert.equal(buf.readBigInt64BE(0), BigInt(value));
      }),
      { numRuns: 2000 },
    );
    assert.throws(() => batch.setBaseOffset(2 ** 60), RangeError);
  });

  it('fails the CRC when any byte it covers flips', async () => {
    const buf = await buildRecordBatch({ producerId: 7n, producerEpoch: 1, baseSequence: 0 }, [
      { key: Buffer.from('k'), value: Buffer.from('value'), headers: [{ key: 'h', value: null }], timestamp: BASE_TIME },
      { key: null, value: Buffer.from('second'), timestamp: BASE_TIME + 5 },
    ]);
    fc.assert(
      fc.property(fc.integer({ min: ATTRIBUTES, max: buf.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, mask) => {
        const copy = Buffer.from(buf);
        copy[at]! ^= mask;
        assert.equal(new RecordBatch(copy).isCrcValid(), false);
        assert.throws(() => validateBatchAt(copy, 0, copy.length, true), InvalidRecordBatchError);
      }),
    );
  });

  it('lays out an uncompressed batch exactly as Kafka does', async () => {
    const buf = await buildRecordBatch({ baseOffset: 5, partitionLeaderEpoch: 2 }, [
      { key: Buffer.from('k'), value: Buffer.from('v'), headers: [{ key: 'h', value: Buffer.from('x') }], timestamp: 1000 },
    ]);
    const expected = Buffer.from(
      '0000000000000005' +
        '0000003e' +
        '00000002' +
        '02' +
        '00000000' +
        '0000' +
        '00000000' +
        '00000000000003e8' +
        '00000000000003e8' +
        'ffffffffffffffff' +
        'ffff' +
        'ffffffff' +
        '00000001' +
        // length 12, attributes, timestampDelta 0, offsetDelta 0, key "k", value "v", 1 header "h" = "x"
        '18' +
        '00' +
        '00' +
        '00' +
        '02' +
        '6b' +
        '02' +
        '76' +
        '02' +
        '02' +
        '68' +
        '02' +
        '78',
      'hex',
    );
    expected.writeUInt32BE(new RecordBatch(expected).computeCrc(), 17);
    assert.deepEqual(buf, expected);
  });

  it('reads records lazily, one per step', async () => {
    const buf = await buildRecordBatch({}, [
      { value: Buffer.from('a'), timestamp: BASE_TIME },
      { value: Buffer.from('b'), timestamp: BASE_TIME },
    ]);
    const corrupted = Buffer.from(buf);
    corrupted.writeInt32BE(3, 57); // one more record than the payload holds
    const batch = new RecordBatch(corrupted);
    const iterator = iterateRecords(batch, batch.recordsPayload());
    assert.equal(iterator.next().value?.value?.toString(), 'a');
    assert.equal(iterator.next().value?.value?.toString(), 'b');
    assert.throws(() => iterator.next(), InvalidRecordBatchError);
    const seen: string[] = [];
    for await (const r of records(new RecordBatch(buf))) seen.push(r.value!.toString());
    assert.deepEqual(seen, ['a', 'b']);
  });

  it('keeps NO_TIMESTAMP records', async () => {
    const batch = new RecordBatch(await buildRecordBatch({}, [{ value: null, timestamp: NO_TIMESTAMP }]));
    assert.equal(batch.baseTimestamp, NO_TIMESTAMP);
    assert.equal(batch.maxTimestamp, NO_TIMESTAMP);
    assert.equal((await readRecords(batch))[0]!.timestamp, NO_TIMESTAMP);
  });

  it('returns key and value as slices of the records buffer, not copies', async () => {
    const batch = new RecordBatch(await buildRecordBatch({}, [{ key: Buffer.from('key'), value: Buffer.from('value'), timestamp: 1 }]));
    const [r] = await readRecords(batch);
    assert.equal(r!.value!.buffer, batch.buf.buffer);
    r!.value![0] = 0x56;
    assert.equal(batch.recordsPayload().includes('Value'), true);
  });

  it('writes empty batches as compaction leaves them', () => {
    const buf = buildEmptyBatch({ baseOffset: 100, lastOffset: 104, producerId: 9n, producerEpoch: 2, baseSequence: 50, timestamp: 1234 });
    const batch = new RecordBatch(buf);
    assert.equal(buf.length, RECORD_BATCH_OVERHEAD);
    assert.equal(validateBatchAt(buf, 0, buf.length, true), RECORD_BATCH_OVERHEAD);
    assert.equal(batch.recordCount, 0);
    assert.equal(batch.lastOffset, 104);
    assert.equal(batch.lastSequence, 54);
    assert.equal(batch.baseTimestamp, 1234);
    assert.equal([...iterateRecords(batch, batch.recordsPayload())].length, 0);
  });

  it('iterates several batches laid end to end', async () => {
    const a = await buildRecordBatch({ baseOffset: 0 }, [{ value: Buffer.from('a'), timestamp: 1 }]);
    const b = await buildRecordBatch({ baseOffset: 1, compression: CompressionType.Gzip }, [{ value: Buffer.from('b'), timestamp: 2 }]);
    const out: string[] = [];
    for (const batch of batchesIn(Buffer.concat([a, b]), true)) {
      for (const r of await readRecords(batch)) out.push(`${r.offset}:${r.value}`);
    }
    assert.deepEqual(out, ['0:a', '1:b']);
  });

  describe('builder checks', () => {
    it('refuses offsets that do not increase, and bad timestamps', () => {
      const builder = new RecordBatchBuilder();
      builder.add({ value: null, timestamp: 1, offsetDelta: 3 });
      assert.throws(() => builder.add({ value: null, timestamp: 1, offsetDelta: 3 }), EncodeError);
      assert.throws(() => builder.add({ value: null, timestamp: -2 }), EncodeError);
      assert.throws(() => builder.add({ value: null, timestamp: 1, offsetDelta: 2 ** 31 }), EncodeError);
    });

    it('refuses an empty batch and inconsistent producer state, as MemoryRecordsBuilder does', async () => {
      await assert.rejects(new RecordBatchBuilder().build(), EncodeError);
      assert.throws(() => new RecordBatchBuilder({ isTransactional: true }), EncodeError);
      assert.throws(() => new RecordBatchBuilder({ producerId: 1n }), EncodeError);
      assert.throws(() => new RecordBatchBuilder({ producerId: 1n, producerEpoch: 0 }), EncodeError);
      assert.throws(() => new RecordBatchBuilder({ timestampType: TimestampType.LogAppendTime }), EncodeError);
      assert.throws(() => new RecordBatchBuilder({ producerEpoch: 40000 }), EncodeError);
    });
  });

  describe('bad input', () => {
    it('reports any mutation of the records as a typed error, never an out-of-bounds read', async () => {
      const inputs: RecordInput[] = Array.from({ length: 6 }, (_, i) => ({
        key: i % 2 ? null : Buffer.from(`key${i}`),
        value: Buffer.from(`value-${i}`.repeat(i)),
        headers: i % 3 ? [] : [{ key: 'hk', value: Buffer.from('hv') }],
        timestamp: BASE_TIME + i,
      }));
      for (const compression of [
        CompressionType.None,
        CompressionType.Gzip,
        CompressionType.Snappy,
        CompressionType.Lz4,
        CompressionType.Zstd,
      ]) {
        const buf = await buildRecordBatch({ compression }, inputs);
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(fc.integer({ min: RECORD_BATCH_OVERHEAD, max: buf.length - 1 }), fc.integer({ min: 1, max: 255 })), {
              minLength: 1,
              maxLength: 4,
            }),
            async (flips) => {
              const copy = Buffer.from(buf);
              for (const [at, mask] of flips) copy[at]! ^= mask;
              try {
                await readRecords(new RecordBatch(copy), { maxDecompressedBytes: 1 << 20 });
              } catch (err) {
                assert.ok(
                  err instanceof InvalidRecordBatchError || (err instanceof CompressionError && err.kind === 'too-large'),
                  String(err),
                );
              }
            },
          ),
          { numRuns: 60 },
        );
      }
    });

    it('reports truncated payloads, trailing bytes and bad lengths as corrupt', async () => {
      const buf = await buildRecordBatch({}, [{ key: Buffer.from('abc'), value: Buffer.from('defgh'), timestamp: 1 }]);
      const batch = new RecordBatch(buf);
      const payload = batch.recordsPayload();
      assert.throws(() => [...iterateRecords(batch, payload.subarray(0, payload.length - 1))], InvalidRecordBatchError);
      assert.throws(() => [...iterateRecords(batch, Buffer.concat([payload, Buffer.from([0])]))], InvalidRecordBatchError);
      const longer = Buffer.from(payload);
      longer[0] = 0x7e; // record length larger than the buffer
      assert.throws(() => [...iterateRecords(batch, longer)], InvalidRecordBatchError);
      const negativeHeaders = Buffer.from(payload);
      negativeHeaders[negativeHeaders.length - 1] = 0x01; // header count -1
      assert.throws(() => [...iterateRecords(batch, negativeHeaders)], InvalidRecordBatchError);
      const negativeCount = Buffer.from(buf);
      negativeCount.writeInt32BE(-1, 57);
      await expectCorrupt(readRecords(new RecordBatch(negativeCount)));
    });

    it('reports an undecodable compressed payload as corrupt and an oversized one as too-large', async () => {
      const buf = await buildRecordBatch({ compression: CompressionType.Zstd }, [{ value: Buffer.alloc(100_000), timestamp: 1 }]);
      await assert.rejects(
        decompressedRecords(new RecordBatch(buf), { maxDecompressedBytes: 50_000 }),
        (err: unknown) => err instanceof CompressionError && err.kind === 'too-large',
      );
      const garbage = Buffer.from(buf);
      garbage.fill(0x11, RECORD_BATCH_OVERHEAD);
      await expectCorrupt(readRecords(new RecordBatch(garbage)));
    });
  });
});
