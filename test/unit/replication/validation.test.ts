import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compress } from '../../../protocol/compression/index.ts';
import { gzipCompress } from '../../../protocol/compression/gzip.ts';
import { Errors } from '../../../protocol/errors.ts';
import {
  ATTRIBUTES,
  CompressionType,
  MAX_TIMESTAMP,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT,
  RecordBatch,
  TRANSACTIONAL_BIT,
} from '../../../protocol/records/batch.ts';
import { readRecords } from '../../../protocol/records/record.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { resealCrc, sealBatch } from '../../helpers/record-batches.ts';
import { buildLegacyMessageSet, convertLegacyToV2 } from '../../../protocol/records/legacy.ts';
import { logSettings, type LogSettings } from '../../../src/replication/log.ts';
import {
  maxRecordsBytes,
  RecordValidationError,
  validateProducedRecords,
  type ValidationContext,
} from '../../../src/replication/validation.ts';
import { flipBits } from '../../helpers/bytes.ts';

const NOW = 1_700_000_000_000;

function ctx(settings: Partial<LogSettings> = {}, produceVersion = 9): ValidationContext {
  return {
    settings: { ...logSettings(() => undefined), ...settings },
    nowMs: NOW,
    produceVersion,
    convertLegacy: (messageSet) => convertLegacyToV2(messageSet),
    verifyCrc: true,
  };
}

async function batch(n = 3, opts: Parameters<typeof buildRecordBatch>[0] = {}, key: Buffer | null = Buffer.from('k')): Promise<Buffer> {
  return buildRecordBatch(
    opts,
    Array.from({ length: n }, (_, i) => ({ key, value: Buffer.from(`v${i}`), timestamp: NOW + i })),
  );
}

async function rejects(records: Buffer | null, c: ValidationContext, code: number): Promise<RecordValidationError> {
  try {
    await validateProducedRecords(records, c);
  } catch (err) {
    assert.ok(err instanceof RecordValidationError, String(err));
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail('expected a validation error');
}

describe('produce validation', () => {
  it('accepts a v2 batch and reports its offsets and producer fields', async () => {
    const b = await batch(3, { producerId: 7n, producerEpoch: 1, baseSequence: 10 });
    const v = await validateProducedRecords(b, ctx());
    assert.equal(v.batchCount, 1);
    assert.equal(v.offsetCount, 3);
    assert.equal(v.producerId, 7n);
    assert.equal(v.firstSequence, 10);
    assert.equal(v.lastSequence, 12);
  });

  it('a flipped payload byte is CORRUPT_MESSAGE', async () => {
    const b = await batch();
    flipBits(b, b.length - 1, 0xff);
    await rejects(b, ctx(), Errors.CORRUPT_MESSAGE.code);
  });

  it('a batch above max.message.bytes is MESSAGE_TOO_LARGE', async () => {
    const b = await batch();
    await rejects(b, ctx({ maxMessageBytes: b.length - 1 }), Errors.MESSAGE_TOO_LARGE.code);
    await validateProducedRecords(b, ctx({ maxMessageBytes: b.length }));
  });

  it('a batch whose baseOffset is not 0 is INVALID_RECORD', async () => {
    const b = await batch(1, { baseOffset: 5 });
    await rejects(b, ctx(), Errors.INVALID_RECORD.code);
  });

  it('a record count that disagrees with lastOffsetDelta is INVALID_RECORD', async () => {
    const b = await batch(3);
    b.writeInt32BE(2, RECORDS_COUNT);
    resealCrc(b);
    await rejects(b, ctx(), Errors.INVALID_RECORD.code);
  });

  it('client control batches are INVALID_RECORD', async () => {
    const b = await batch(1, { isControl: true });
    await rejects(b, ctx(), Errors.INVALID_RECORD.code);
  });

  it('Produce v3+ must carry exactly one batch; empty records are INVALID_RECORD', async () => {
    const two = Buffer.concat([await batch(1), await batch(1)]);
    await rejects(two, ctx(), Errors.INVALID_RECORD.code);
    await rejects(Buffer.alloc(0), ctx(), Errors.INVALID_RECORD.code);
    await rejects(null, ctx(), Errors.INVALID_RECORD.code);
  });

  it('zstd below Produce v7 is UNSUPPORTED_COMPRESSION_TYPE', async () => {
    const b = await batch(2, { compression: CompressionType.Zstd });
    await rejects(b, ctx({}, 6), Errors.UNSUPPORTED_COMPRESSION_TYPE.code);
    await validateProducedRecords(b, ctx({}, 7));
  });

  it('CreateTime outside message.timestamp.before/after.max.ms is INVALID_TIMESTAMP with a record error', async () => {
    const b = await batch(2);
    const err = await rejects(b, ctx({ timestampAfterMaxMs: 0 }), Errors.INVALID_TIMESTAMP.code);
    assert.equal(err.recordErrors.length, 1);
    const old = await buildRecordBatch({}, [{ key: null, value: Buffer.from('x'), timestamp: NOW - 10_000 }]);
    await rejects(old, ctx({ timestampBeforeMaxMs: 5_000 }), Errors.INVALID_TIMESTAMP.code);
    await validateProducedRecords(old, ctx({ timestampBeforeMaxMs: 5_000, logAppendTime: true }));
  });

  it('compacted topics refuse keyless records, compressed or not', async () => {
    await rejects(await batch(2, {}, null), ctx({ compacted: true }), Errors.INVALID_RECORD.code);
    const gz = await batch(2, { compression: CompressionType.Gzip }, null);
    const err = await rejects(gz, ctx({ compacted: true }), Errors.INVALID_RECORD.code);
    assert.equal(err.recordErrors[0]?.batchIndex, 0);
    await validateProducedRecords(await batch(2, { compression: CompressionType.Gzip }), ctx({ compacted: true }));
  });

  it('an idempotent batch with a negative sequence is INVALID_RECORD', async () => {
    const b = await batch(1, { producerId: 7n, producerEpoch: 0, baseSequence: 0 });
    b.writeInt32BE(-5, 53);
    resealCrc(b);
    assert.equal(new RecordBatch(b).baseSequence, -5);
    await rejects(b, ctx(), Errors.INVALID_RECORD.code);
  });

  it('converts magic 0/1 message sets of Produce v0-v2 to v2 batches, and refuses them from v3', async () => {
    const v1 = await buildLegacyMessageSet({ magic: 1, compression: CompressionType.Gzip }, [
      { key: Buffer.from('a'), value: Buffer.from('1'), timestamp: NOW },
      { key: Buffer.from('b'), value: Buffer.from('2'), timestamp: NOW + 1 },
    ]);
    const v = await validateProducedRecords(v1, ctx({}, 2));
    const converted = new RecordBatch(v.batches);
    assert.equal(converted.magic, 2);
    assert.equal(converted.compression, CompressionType.Gzip);
    assert.equal(v.offsetCount, 2);
    const v0 = await buildLegacyMessageSet({ magic: 0 }, [{ key: null, value: Buffer.from('x') }]);
    assert.equal((await validateProducedRecords(v0, ctx({}, 0))).offsetCount, 1);
    await rejects(v1, ctx({}, 3), Errors.INVALID_RECORD.code);
    const broken = Buffer.from(v0);
    flipBits(broken, broken.length - 1, 0xff);
    await rejects(broken, ctx({}, 0), Errors.CORRUPT_MESSAGE.code);
  });
});

// --- Every record is checked (LogValidator.validateRecord / DefaultRecord.readFrom) ---

const CODECS = [CompressionType.None, CompressionType.Gzip, CompressionType.Snappy, CompressionType.Lz4, CompressionType.Zstd] as const;

/** The uncompressed records of a batch built from `n` records. */
async function plainRecords(
  n: number,
  key: (i: number) => Buffer | null = () => Buffer.from('k'),
): Promise<{ template: Buffer; payload: Buffer }> {
  const template = await buildRecordBatch(
    {},
    Array.from({ length: n }, (_, i) => ({ key: key(i), value: Buffer.from(`value-${i}`), timestamp: NOW + i })),
  );
  return { template, payload: template.subarray(RECORD_BATCH_OVERHEAD) };
}

/** One record in Kafka's layout from raw field bytes (so tests can write invalid ones). */
function rawRecord(fields: number[][]): Buffer {
  const body = Buffer.from(fields.flat());
  return Buffer.concat([Buffer.from(zigzag(body.length)), body]);
}

function zigzag(v: number): number[] {
  let u = v >= 0 ? v * 2 : -v * 2 - 1;
  const out: number[] = [];
  while (u >= 0x80) {
    out.push((u & 0x7f) | 0x80);
    u = Math.floor(u / 128);
  }
  out.push(u);
  return out;
}

describe('produce validation: every record', () => {
  it('a record length varint longer than 5 bytes is INVALID_RECORD', async () => {
    const { template } = await plainRecords(1);
    const payload = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0, 1, 1, 0]);
    const err = await rejects(sealBatch(template, payload, CompressionType.None, 1), ctx(), Errors.INVALID_RECORD.code);
    assert.match(err.message, /varint longer than 5 bytes/);
  });

  it('a record whose length disagrees with its fields is INVALID_RECORD', async () => {
    const { template } = await plainRecords(1);
    // attributes, timestampDelta 0, offsetDelta 0, key null, value null, 0 headers + a stray byte.
    const long = rawRecord([[0], [0], [0], zigzag(-1), zigzag(-1), [0], [7]]);
    await rejects(sealBatch(template, long, CompressionType.None, 1), ctx(), Errors.INVALID_RECORD.code);
    const short = Buffer.from(rawRecord([[0], [0], [0], zigzag(-1), zigzag(-1)]));
    await rejects(sealBatch(template, short, CompressionType.None, 1), ctx(), Errors.INVALID_RECORD.code);
  });

  it('fewer or more records than the header count is INVALID_RECORD', async () => {
    const { template, payload } = await plainRecords(3);
    const fewer = await rejects(sealBatch(template, payload, CompressionType.None, 4), ctx(), Errors.INVALID_RECORD.code);
    assert.match(fewer.message, /premature EOF/);
    const more = await rejects(sealBatch(template, payload, CompressionType.None, 2), ctx(), Errors.INVALID_RECORD.code);
    assert.match(more.message, /records still remaining/);
  });

  it('key or value lengths below -1 and null header keys are INVALID_RECORD', async () => {
    const { template } = await plainRecords(1);
    const badKey = rawRecord([[0], [0], [0], zigzag(-2), zigzag(-1), [0]]);
    await rejects(sealBatch(template, badKey, CompressionType.None, 1), ctx(), Errors.INVALID_RECORD.code);
    const badValue = rawRecord([[0], [0], [0], zigzag(-1), zigzag(-7), [0]]);
    await rejects(sealBatch(template, badValue, CompressionType.None, 1), ctx(), Errors.INVALID_RECORD.code);
    const nullHeaderKey = rawRecord([[0], [0], [0], zigzag(-1), zigzag(-1), zigzag(1), zigzag(-1), zigzag(-1)]);
    const err = await rejects(sealBatch(template, nullHeaderKey, CompressionType.None, 1), ctx(), Errors.INVALID_RECORD.code);
    assert.match(err.message, /header key/);
    const ok = rawRecord([[0], [0], [0], zigzag(-1), zigzag(-1), zigzag(1), zigzag(1), [0x61], zigzag(-1)]);
    await validateProducedRecords(sealBatch(template, ok, CompressionType.None, 1), ctx());
  });

  it('offset deltas must be 0..count-1 in order: every offender is a record error', async () => {
    const { template } = await plainRecords(3);
    const rec = (delta: number): Buffer => rawRecord([[0], [0], zigzag(delta), zigzag(-1), zigzag(-1), [0]]);
    const err = await rejects(
      sealBatch(template, Buffer.concat([rec(0), rec(2), rec(1)]), CompressionType.None, 3),
      ctx(),
      Errors.INVALID_RECORD.code,
    );
    assert.deepEqual(
      err.recordErrors.map((e) => e.batchIndex),
      [1, 2],
    );
  });

  for (const codec of CODECS) {
    it(`a compacted topic lists every keyless record (${CompressionType[codec]}), as librdkafka's test 0011 expects`, async () => {
      const b = await buildRecordBatch(
        { compression: codec },
        Array.from({ length: 100 }, (_, i) => ({
          key: i === 0 || i === 2 || i === 4 ? null : Buffer.from(`k${i}`),
          value: Buffer.from('v'),
          timestamp: NOW,
        })),
      );
      const err = await rejects(b, ctx({ compacted: true }), Errors.INVALID_RECORD.code);
      assert.deepEqual(
        err.recordErrors.map((e) => e.batchIndex),
        [0, 2, 4],
      );
      assert.match(err.recordErrors[0]!.message!, /^Compacted topic cannot accept message without key/);
      assert.match(
        err.message,
        /^One or more records have been rejected due to 3 record errors in total, and only showing the first three errors at most: \[RecordError\(batchIndex=0, message='Compacted topic/,
      );
    });
  }

  it('every record outside the CreateTime bounds is listed, and the batch is INVALID_TIMESTAMP', async () => {
    const b = await buildRecordBatch(
      {},
      [NOW, NOW + 60_000, NOW, NOW + 90_000].map((timestamp) => ({ key: null, value: Buffer.from('v'), timestamp })),
    );
    const err = await rejects(b, ctx({ timestampAfterMaxMs: 1000 }), Errors.INVALID_TIMESTAMP.code);
    assert.deepEqual(
      err.recordErrors.map((e) => e.batchIndex),
      [1, 3],
    );
    assert.equal(err.message, 'One or more records have been rejected due to invalid timestamp');
    assert.match(err.recordErrors[0]!.message!, new RegExp(`^Timestamp ${NOW + 60_000} of message with offset 1 is out of range`));
  });

  it('a key error takes precedence over a timestamp error of the same record, and INVALID_TIMESTAMP over INVALID_RECORD', async () => {
    const b = await buildRecordBatch({}, [
      { key: null, value: null, timestamp: NOW + 60_000 },
      { key: Buffer.from('k'), value: null, timestamp: NOW + 60_000 },
    ]);
    const err = await rejects(b, ctx({ compacted: true, timestampAfterMaxMs: 1000 }), Errors.INVALID_TIMESTAMP.code);
    assert.deepEqual(
      err.recordErrors.map((e) => e.batchIndex),
      [0, 1],
    );
    assert.match(err.recordErrors[0]!.message!, /Compacted topic/);
  });

  it('a transactional batch without a producer id is INVALID_RECORD', async () => {
    // The builder refuses to write it (as Kafka's MemoryRecordsBuilder does): set the bit by hand.
    const b = await batch(1);
    b.writeInt16BE(b.readInt16BE(ATTRIBUTES) | TRANSACTIONAL_BIT, ATTRIBUTES);
    resealCrc(b);
    const err = await rejects(b, ctx(), Errors.INVALID_RECORD.code);
    assert.match(err.message, /Cannot write transactional messages without a valid producer ID/);
    await validateProducedRecords(await batch(1, { isTransactional: true, producerId: 5n, producerEpoch: 0, baseSequence: 0 }), ctx());
  });

  it('a corrupt CRC wins over what it broke inside the batch when the log checks the CRC', async () => {
    const { template } = await plainRecords(1);
    const b = sealBatch(template, Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), CompressionType.None, 1);
    flipBits(b, b.length - 1, 0x02);
    await rejects(b, { ...ctx(), verifyCrc: false }, Errors.CORRUPT_MESSAGE.code);
  });

  it('maxTimestamp is set from the records, as LogValidator does, and the CRC re-sealed', async () => {
    const b = await batch(3);
    b.writeBigInt64BE(BigInt(NOW + 999_999), MAX_TIMESTAMP);
    resealCrc(b);
    await validateProducedRecords(b, ctx());
    const v = new RecordBatch(b);
    assert.equal(v.maxTimestamp, NOW + 2);
    assert.ok(v.isCrcValid());
  });

  for (const codec of CODECS.slice(1)) {
    it(`garbage, empty and truncated ${CompressionType[codec]} payloads are CORRUPT_MESSAGE`, async () => {
      const good = await batch(5, { compression: codec });
      const payload = good.subarray(RECORD_BATCH_OVERHEAD);
      await rejects(
        sealBatch(good, Buffer.from('this is not a compressed stream at all, not even close'), codec),
        ctx(),
        Errors.CORRUPT_MESSAGE.code,
      );
      await rejects(sealBatch(good, Buffer.alloc(0), codec), ctx(), Errors.CORRUPT_MESSAGE.code);
      await rejects(sealBatch(good, payload.subarray(0, payload.length - 3), codec), ctx(), Errors.CORRUPT_MESSAGE.code);
    });
  }

  it('a gzip bomb (200 KB inflating to 200 MiB) is refused without inflating it', async function () {
    this.timeout(20_000);
    const { template } = await plainRecords(1);
    const bomb = await gzipCompress(Buffer.alloc(200 * 1024 * 1024));
    assert.ok(bomb.length < 300 * 1024, `bomb is ${bomb.length} bytes`);
    const before = process.memoryUsage().arrayBuffers;
    const started = Date.now();
    await rejects(sealBatch(template, bomb, CompressionType.Gzip, 1), ctx(), Errors.INVALID_RECORD.code);
    assert.ok(Date.now() - started < 2000);
    assert.ok(process.memoryUsage().arrayBuffers - before < 32 * 1024 * 1024);
  });

  it('valid records beyond the inflation bound are refused once the bound is passed', async () => {
    const settings = { maxMessageBytes: 4096 };
    const records = Array.from({ length: 200 }, (_, i) => ({ key: null, value: Buffer.alloc(4000, i), timestamp: NOW }));
    // 200 records of ~4 KB = 800 KB > 64 x 4 KB = 256 KB, compressing to well under 4 KB.
    const b = await buildRecordBatch({ compression: CompressionType.Zstd }, records);
    assert.ok(b.length <= settings.maxMessageBytes, `batch is ${b.length} bytes`);
    const err = await rejects(b, ctx(settings), Errors.INVALID_RECORD.code);
    assert.match(err.message, /bytes a batch of 200 records may (inflate to|take)/);
    assert.equal(maxRecordsBytes(200, 4096), 64 * 4096);
  });
});

describe('produce validation: properties', () => {
  const recordArb = fc.record({
    key: fc.option(
      fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
      { nil: null },
    ),
    value: fc.option(
      fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      { nil: null },
    ),
    headers: fc.array(
      fc.record({
        key: fc.string({ maxLength: 8 }),
        value: fc.option(
          fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.from(a)),
          { nil: null },
        ),
      }),
      { maxLength: 3 },
    ),
    dt: fc.integer({ min: -1000, max: 1000 }),
  });

  it('every batch the builder writes passes, whatever its codec and records', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...CODECS), fc.array(recordArb, { minLength: 1, maxLength: 30 }), async (codec, recs) => {
        const b = await buildRecordBatch(
          { compression: codec },
          recs.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: NOW + r.dt })),
        );
        const v = await validateProducedRecords(b, ctx());
        assert.equal(v.offsetCount, recs.length);
      }),
      { numRuns: 150 },
    );
  });

  it('corrupting record bytes (CRC re-sealed) is refused, or still decodes to exactly the declared records', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...CODECS),
        fc.array(recordArb, { minLength: 1, maxLength: 10 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: -2, max: 2 }),
        async (codec, recs, flips, cut) => {
          const { template, payload } = await (async () => {
            const t = await buildRecordBatch(
              {},
              recs.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: NOW + r.dt })),
            );
            return { template: t, payload: Buffer.from(t.subarray(RECORD_BATCH_OVERHEAD)) };
          })();
          for (const [at, mask] of flips) flipBits(payload, at % payload.length, mask);
          const body = cut < 0 ? payload.subarray(0, Math.max(0, payload.length + cut)) : Buffer.concat([payload, Buffer.alloc(cut)]);
          const compressed = codec === CompressionType.None ? body : await compress(codec, body);
          const b = sealBatch(template, compressed, codec);
          let accepted = true;
          try {
            await validateProducedRecords(b, ctx());
          } catch (err) {
            assert.ok(err instanceof RecordValidationError, String(err));
            accepted = false;
          }
          if (accepted) {
            const decoded = await readRecords(new RecordBatch(b));
            assert.equal(decoded.length, recs.length);
            decoded.forEach((r, i) => {
              assert.equal(r.offsetDelta, i);
            });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
