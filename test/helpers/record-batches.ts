// Hand-made record batches for validation tests: a batch whose bytes a test changed, sealed
// again so that only the change (not the CRC) is what the broker sees wrong.
import { crc32c } from '../../protocol/crc.ts';
import { buildRecordBatch } from '../../protocol/records/builder.ts';
import {
  ATTRIBUTES,
  BASE_TIMESTAMP,
  BATCH_LENGTH,
  COMPRESSION_MASK,
  CRC,
  LAST_OFFSET_DELTA,
  LOG_OVERHEAD,
  MAX_TIMESTAMP,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT,
  type CompressionType,
} from '../../protocol/records/batch.ts';

/** Recomputes the batch's CRC-32C (attributes to the end) in place. */
export function resealCrc(batch: Buffer): Buffer {
  batch.writeUInt32BE(crc32c(batch.subarray(ATTRIBUTES)), CRC);
  return batch;
}

/** `template`'s header around `payload` (already compressed as `compression`), CRC re-sealed. */
export function sealBatch(template: Buffer, payload: Buffer, compression: CompressionType, recordCount?: number): Buffer {
  const out = Buffer.concat([template.subarray(0, RECORD_BATCH_OVERHEAD), payload]);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH);
  out.writeInt16BE((out.readInt16BE(ATTRIBUTES) & ~COMPRESSION_MASK) | compression, ATTRIBUTES);
  if (recordCount !== undefined) {
    out.writeInt32BE(recordCount, RECORDS_COUNT);
    out.writeInt32BE(recordCount - 1, LAST_OFFSET_DELTA);
  }
  return resealCrc(out);
}

/**
 * A batch whose records carry timestamps -5 and 0, as a client may produce them (the batch's
 * base timestamp is -5): Kafka accepts them, though magic 1 cannot carry -5.
 */
export async function negativeTimestampBatch(): Promise<Buffer> {
  const batch = await buildRecordBatch({}, [
    { key: Buffer.from('k0'), value: Buffer.from('before the epoch'), timestamp: 100 },
    { key: Buffer.from('k1'), value: Buffer.from('at the epoch'), timestamp: 105 },
  ]);
  batch.writeBigInt64BE(-5n, BASE_TIMESTAMP);
  batch.writeBigInt64BE(0n, MAX_TIMESTAMP);
  return resealCrc(batch);
}

/**
 * A batch of two records stamped `baseTimestamp` and one more: beyond 2^53 a number cannot
 * carry them exactly, as an int64 on the wire does.
 */
export async function timestampedBatch(baseTimestamp: bigint): Promise<Buffer> {
  const batch = await buildRecordBatch({}, [
    { key: Buffer.from('k0'), value: Buffer.from('far ahead'), timestamp: 0 },
    { key: Buffer.from('k1'), value: Buffer.from('one later'), timestamp: 1 },
  ]);
  batch.writeBigInt64BE(baseTimestamp, BASE_TIMESTAMP);
  batch.writeBigInt64BE(baseTimestamp + 1n, MAX_TIMESTAMP);
  return resealCrc(batch);
}
