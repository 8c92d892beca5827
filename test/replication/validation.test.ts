import assert from 'node:assert/strict';
import { Errors } from '../../protocol/errors.ts';
import { CompressionType, CRC, RECORDS_COUNT, RecordBatch } from '../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../protocol/records/builder.ts';
import { crc32c } from '../../protocol/crc.ts';
import { buildLegacyMessageSet, convertLegacyToV2 } from '../../protocol/records/legacy.ts';
import { logSettings, type LogSettings } from '../../src/replication/log.ts';
import { allRecordsHaveKeys, RecordValidationError, validateProducedRecords, type ValidationContext } from '../../src/replication/validation.ts';

const NOW = 1_700_000_000_000;

function ctx(settings: Partial<LogSettings> = {}, produceVersion = 9): ValidationContext {
  return {
    settings: { ...logSettings(() => undefined), ...settings },
    nowMs: NOW,
    produceVersion,
    convertLegacy: (messageSet) => convertLegacyToV2(messageSet),
    verifyCrc: true,
    allRecordsHaveKeys,
  };
}

async function batch(n = 3, opts: Parameters<typeof buildRecordBatch>[0] = {}, key: Buffer | null = Buffer.from('k')): Promise<Buffer> {
  return buildRecordBatch(opts, Array.from({ length: n }, (_, i) => ({ key, value: Buffer.from(`v${i}`), timestamp: NOW + i })));
}

async function rejects(records: Buffer | null, c: ValidationContext, code: number): Promise<RecordValidationError> {
  try {
    await validateProducedRecords(records, c);
  } catch (err) {
    assert.ok(err instanceof RecordValidationError, String(err));
    assert.equal(err.errorCode, code, err.message);
    return err;
  }
  assert.fail('expected a validation error');
}

function resealCrc(buf: Buffer): void {
  buf.writeUInt32BE(crc32c(buf.subarray(21)), CRC);
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
    b[b.length - 1] ^= 0xff;
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
    broken[broken.length - 1] ^= 0xff;
    await rejects(broken, ctx({}, 0), Errors.CORRUPT_MESSAGE.code);
  });
});
