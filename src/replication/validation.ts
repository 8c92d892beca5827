/**
 * Checks a produce request's records for one partition before they reach the log, as
 * Kafka's LogValidator and ProducerAppendInfo do, reading batch headers in place. Records
 * are decoded only when a check needs them (keys on compacted topics).
 */
import {
  CompressionType, RecordBatch, RECORD_BATCH_OVERHEAD, LOG_OVERHEAD, MAGIC,
} from '../../protocol/records/batch.ts';
import { Errors } from '../../protocol/errors.ts';
import { records as recordsOf } from '../../protocol/records/record.ts';
import type { LogSettings } from './log.ts';

/** A failed check: Kafka's error code, message and the per-record errors of Produce v8+. */
export class RecordValidationError extends Error {
  constructor(
    readonly errorCode: number,
    message: string,
    readonly recordErrors: readonly { batchIndex: number; message: string | null }[] = [],
  ) {
    super(message);
    this.name = 'RecordValidationError';
  }
}

/** The batches of one partition's produce, validated, with what the response needs. */
export interface ValidatedRecords {
  /** v2 batches laid end to end (converted from v0/v1 when the client sent those). */
  readonly batches: Buffer;
  readonly batchCount: number;
  /** Sum over the batches of lastOffsetDelta + 1: how many offsets the append takes. */
  readonly offsetCount: number;
  /** The producer of the (single) idempotent batch, when there is one. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly isTransactional: boolean;
}

export interface ValidationContext {
  readonly settings: LogSettings;
  readonly nowMs: number;
  readonly produceVersion: number;
  /** Converts a magic 0/1 message set to v2 batches (Produce v0-v2). */
  readonly convertLegacy: (messageSet: Buffer) => Promise<Buffer>;
  /**
   * Whether to check CRC-32C here. The log checks it on append anyway; it must be checked
   * first when the broker rewrites the batch (LogAppendTime re-seals the CRC) or decodes it.
   */
  readonly verifyCrc: boolean;
  /** Whether every record of the v2 batch has a non-null key (decompresses if needed). */
  readonly allRecordsHaveKeys: (batch: RecordBatch) => Promise<boolean>;
}

const MAX_COMPRESSION_ID = CompressionType.Zstd;

/**
 * Validates the records a client sent for one partition. Throws RecordValidationError with
 * the partition's error code; on success the batches are ready for `ReplicaLog.appendAsLeader`.
 */
export async function validateProducedRecords(records: Buffer | null, ctx: ValidationContext): Promise<ValidatedRecords> {
  if (records === null || records.length === 0) {
    throw new RecordValidationError(Errors.INVALID_RECORD.code, 'Produce request carried no record batch');
  }
  let buf = records;
  if (records.length > MAGIC && records.readInt8(MAGIC) < 2) {
    if (ctx.produceVersion >= 3) {
      throw new RecordValidationError(Errors.INVALID_RECORD.code, 'Produce v3+ requires magic v2 record batches');
    }
    try {
      buf = await ctx.convertLegacy(records);
    } catch (err) {
      throw new RecordValidationError(Errors.CORRUPT_MESSAGE.code, `Invalid legacy message set: ${(err as Error).message}`);
    }
  }

  let position = 0;
  let batchCount = 0;
  let offsetCount = 0;
  let first: RecordBatch | null = null;
  while (position < buf.length) {
    const batch = checkFraming(buf, position, ctx);
    checkBatch(batch, ctx);
    if (ctx.settings.compacted) await checkKeys(batch, ctx);
    if (first === null) first = batch;
    batchCount++;
    offsetCount += batch.lastOffsetDelta + 1;
    position += batch.sizeInBytes;
  }
  if (first === null) throw new RecordValidationError(Errors.INVALID_RECORD.code, 'Produce request carried no record batch');
  // ProduceRequest.validateRecords: v3+ carries exactly one batch.
  if (ctx.produceVersion >= 3 && batchCount !== 1) {
    throw new RecordValidationError(Errors.INVALID_RECORD.code, 'Produce requests with version 3 and above must contain exactly one record batch');
  }
  if (batchCount > 1 && first.hasProducerId) {
    throw new RecordValidationError(Errors.INVALID_RECORD.code, 'Idempotent produce must carry exactly one record batch');
  }
  return {
    batches: buf,
    batchCount,
    offsetCount,
    producerId: first.producerId,
    producerEpoch: first.producerEpoch,
    firstSequence: first.baseSequence,
    lastSequence: first.lastSequence,
    isTransactional: first.isTransactional,
  };
}

function checkFraming(buf: Buffer, position: number, ctx: ValidationContext): RecordBatch {
  if (buf.length - position < LOG_OVERHEAD) throw corrupt('Truncated record batch header');
  const batch = new RecordBatch(buf, position);
  const batchLength = batch.batchLength;
  if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) throw corrupt(`Record batch length ${batchLength} is below the header size`);
  const size = LOG_OVERHEAD + batchLength;
  if (position + size > buf.length) throw corrupt(`Record batch of ${size} bytes is truncated`);
  if (batch.magic !== 2) throw corrupt(`Record batch magic ${batch.magic} mixed into a v2 request`);
  // Kafka checks the size before the CRC (RecordTooLargeException wins over corruption).
  if (size > ctx.settings.maxMessageBytes) {
    throw new RecordValidationError(
      Errors.MESSAGE_TOO_LARGE.code,
      `The record batch size in the append to the partition is ${size} bytes which exceeds the maximum configured value of ${ctx.settings.maxMessageBytes}.`,
    );
  }
  if (ctx.verifyCrc && !batch.isCrcValid()) throw corrupt(`Record batch is corrupt (stored crc = ${batch.crc}, computed crc = ${batch.computeCrc()})`);
  return batch;
}

function checkBatch(batch: RecordBatch, ctx: ValidationContext): void {
  const invalid = (message: string): RecordValidationError => new RecordValidationError(Errors.INVALID_RECORD.code, message);
  // UnifiedLog.analyzeAndValidateRecords: clients send batches at offset 0; the log assigns offsets.
  if (batch.baseOffsetBig !== 0n) {
    throw invalid(`The baseOffset of the record batch in the append should be 0, but it is ${batch.baseOffsetBig}`);
  }
  // LogValidator.validateBatch for client appends.
  if (batch.lastOffsetDelta < 0) throw invalid('Batch has a negative last offset delta');
  const count = batch.recordCount;
  if (count <= 0) throw invalid(`Record batch has invalid record count ${count}`);
  if (count !== batch.lastOffsetDelta + 1) {
    throw invalid(`Inconsistent batch offset range [0, ${batch.lastOffsetDelta}] and count of records ${count}`);
  }
  if (batch.isControl) throw invalid('Clients are not allowed to write control records');
  if (batch.hasProducerId && batch.baseSequence < 0) {
    throw invalid(`Invalid sequence number ${batch.baseSequence} in record batch with producerId ${batch.producerId}`);
  }
  const compression = batch.compression;
  if (compression > MAX_COMPRESSION_ID) throw corrupt(`Unknown compression type id ${compression}`);
  // ProduceRequest.validateRecords: zstd needs Produce v7+ (KIP-110).
  if (compression === CompressionType.Zstd && ctx.produceVersion < 7) {
    throw new RecordValidationError(Errors.UNSUPPORTED_COMPRESSION_TYPE.code, 'Produce requests with zstd compression need version 7 or above');
  }
  if (!ctx.settings.logAppendTime) checkTimestamps(batch, ctx);
}

async function checkKeys(batch: RecordBatch, ctx: ValidationContext): Promise<void> {
  let ok: boolean;
  try {
    ok = await ctx.allRecordsHaveKeys(batch);
  } catch (err) {
    throw corrupt(`Record batch could not be decompressed: ${(err as Error).message}`);
  }
  if (!ok) {
    const message = 'Compacted topic cannot accept message without key in topic partition';
    throw new RecordValidationError(Errors.INVALID_RECORD.code, message, [{ batchIndex: 0, message }]);
  }
}

/** The default key check: decodes the batch's records (only compacted topics pay this). */
export async function allRecordsHaveKeys(batch: RecordBatch): Promise<boolean> {
  for await (const record of recordsOf(batch)) if (record.key === null) return false;
  return true;
}

/**
 * CreateTime bounds (message.timestamp.before/after.max.ms, KIP-937). The header carries the
 * first and the largest timestamp; checking those two keeps records undecoded.
 */
function checkTimestamps(batch: RecordBatch, ctx: ValidationContext): void {
  const { timestampBeforeMaxMs, timestampAfterMaxMs } = ctx.settings;
  for (const timestamp of [batch.baseTimestamp, batch.maxTimestamp]) {
    if (timestamp < 0) continue;
    if (ctx.nowMs - timestamp > timestampBeforeMaxMs || timestamp - ctx.nowMs > timestampAfterMaxMs) {
      const message = `Timestamp ${timestamp} of message with offset 0 is out of range. The timestamp should be within [${ctx.nowMs - timestampBeforeMaxMs}, ${ctx.nowMs + timestampAfterMaxMs}]`;
      throw new RecordValidationError(Errors.INVALID_TIMESTAMP.code, message, [{ batchIndex: 0, message }]);
    }
  }
}

function corrupt(message: string): RecordValidationError {
  return new RecordValidationError(Errors.CORRUPT_MESSAGE.code, message);
}
