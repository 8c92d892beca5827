/**
 * Checks a produce request's records for one partition before they reach the log, as
 * Kafka's LogValidator and ProducerAppendInfo do: batch headers are read in place, and every
 * record of every batch is walked in place (compressed batches through a bounded streaming
 * decompression) without decoding it: lengths, varints, record count, offset deltas, keys on
 * compacted topics and CreateTime bounds. Nothing is recompressed or materialised.
 */
import { CompressionError, decompressChunks } from '../../protocol/compression/index.ts';
import {
  CompressionType,
  CRC,
  MAX_TIMESTAMP,
  RecordBatch,
  RECORD_BATCH_OVERHEAD,
  LOG_OVERHEAD,
  MAGIC,
  TimestampType,
} from '../../protocol/records/batch.ts';
import { Errors, KafkaError, type KafkaErrorCode } from '../../protocol/errors.ts';
import { RecordFault, RecordScanner } from '../../protocol/records/scan.ts';
import type { LogSettings, TransactionVerification } from './log.ts';

/** A failed check: Kafka's error, its message and the per-record errors of Produce v8+. */
export class RecordValidationError extends KafkaError {
  override name = 'RecordValidationError';
  constructor(
    error: KafkaErrorCode,
    message: string,
    readonly recordErrors: readonly { batchIndex: number; message: string | null }[] = [],
  ) {
    super(error, message);
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
  /** 'coordinator': batches a coordinator built (its records, markers); 'client' otherwise. */
  readonly origin?: 'client' | 'coordinator';
  /** KIP-890 part 1: the transaction was verified (with this guard) and must be for the append. */
  readonly verification?: TransactionVerification;
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
  /** `topic-partition`, for Kafka's "... in topic partition t-0" messages. */
  readonly topicPartition?: string;
}

const MAX_COMPRESSION_ID = CompressionType.Zstd;

/**
 * How many times max.message.bytes a batch's records may take uncompressed. Kafka has no
 * such limit; we keep decompression bombs from costing unbounded CPU. Memory does not depend
 * on it: validation streams (see decompressChunks).
 */
export const MAX_INFLATION_FACTOR = 64;

/**
 * Most bytes the records of a batch of `recordCount` records may take uncompressed: no
 * record may exceed max.message.bytes (a producer could not send it uncompressed either),
 * and the whole at most MAX_INFLATION_FACTOR times max.message.bytes (64 MiB by default).
 */
export function maxRecordsBytes(recordCount: number, maxMessageBytes: number): number {
  return Math.min(recordCount * maxMessageBytes, MAX_INFLATION_FACTOR * maxMessageBytes);
}

/**
 * Validates the records a client sent for one partition. Throws RecordValidationError with
 * the partition's error code; on success the batches are ready for `ReplicaLog.appendAsLeader`.
 */
export async function validateProducedRecords(records: Buffer | null, ctx: ValidationContext): Promise<ValidatedRecords> {
  if (records === null || records.length === 0) {
    throw new RecordValidationError(Errors.INVALID_RECORD, 'Produce request carried no record batch');
  }
  let buf = records;
  if (records.length > MAGIC && records.readInt8(MAGIC) < 2) {
    if (ctx.produceVersion >= 3) {
      throw new RecordValidationError(Errors.INVALID_RECORD, 'Produce v3+ requires magic v2 record batches');
    }
    try {
      buf = await ctx.convertLegacy(records);
    } catch (err) {
      throw new RecordValidationError(Errors.CORRUPT_MESSAGE, `Invalid legacy message set: ${(err as Error).message}`);
    }
  }

  let position = 0;
  let batchCount = 0;
  let offsetCount = 0;
  let first: RecordBatch | null = null;
  while (position < buf.length) {
    const batch = checkFraming(buf, position, ctx);
    try {
      checkBatch(batch, ctx);
      await checkRecords(batch, ctx);
    } catch (err) {
      // Kafka checks the CRC before anything inside the batch: corruption in transit stays
      // the retriable CORRUPT_MESSAGE whatever it broke.
      if (err instanceof RecordValidationError && !ctx.verifyCrc) checkCrc(batch);
      throw err;
    }
    if (first === null) first = batch;
    batchCount++;
    offsetCount += batch.lastOffsetDelta + 1;
    position += batch.sizeInBytes;
  }
  if (first === null) throw new RecordValidationError(Errors.INVALID_RECORD, 'Produce request carried no record batch');
  // ProduceRequest.validateRecords: v3+ carries exactly one batch.
  if (ctx.produceVersion >= 3 && batchCount !== 1) {
    throw new RecordValidationError(
      Errors.INVALID_RECORD,
      'Produce requests with version 3 and above must contain exactly one record batch',
    );
  }
  if (batchCount > 1 && first.hasProducerId) {
    throw new RecordValidationError(Errors.INVALID_RECORD, 'Idempotent produce must carry exactly one record batch');
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
      Errors.MESSAGE_TOO_LARGE,
      `The record batch size in the append to the partition is ${size} bytes which exceeds the maximum configured value of ${ctx.settings.maxMessageBytes}.`,
    );
  }
  if (ctx.verifyCrc && !batch.isCrcValid())
    throw corrupt(`Record batch is corrupt (stored crc = ${batch.crc}, computed crc = ${batch.computeCrc()})`);
  return batch;
}

function checkBatch(batch: RecordBatch, ctx: ValidationContext): void {
  // UnifiedLog.analyzeAndValidateRecords: clients send batches at offset 0; the log assigns offsets.
  if (batch.baseOffsetBig !== 0n) {
    throw invalid(`The baseOffset of the record batch in the append should be 0, but it is ${batch.baseOffsetBig}`);
  }
  // LogValidator.validateBatch for client appends.
  if (batch.lastOffsetDelta < 0) throw invalid(`Batch has an invalid offset range: [0, ${batch.lastOffsetDelta}]${where(ctx)}`);
  const count = batch.recordCount;
  if (count <= 0) throw invalid(`Invalid reported count for record batch: ${count}${where(ctx)}`);
  if (count !== batch.lastOffsetDelta + 1) {
    throw invalid(`Inconsistent batch offset range [0, ${batch.lastOffsetDelta}] and count of records ${count}${where(ctx)}`);
  }
  if (batch.isControl) throw invalid(`Clients are not allowed to write control records${where(ctx)}`);
  if (batch.hasProducerId && batch.baseSequence < 0) {
    throw invalid(`Invalid sequence number ${batch.baseSequence} in record batch with producerId ${batch.producerId}${where(ctx)}`);
  }
  // Kafka's MemoryRecordsBuilder.validateProducerState refuses to write this; a broker storing
  // it would have a transaction no producer can end (no producer state, no marker).
  if (batch.isTransactional && !batch.hasProducerId) {
    throw invalid(`Cannot write transactional messages without a valid producer ID${where(ctx)}`);
  }
  const compression = batch.compression;
  if (compression > MAX_COMPRESSION_ID) throw corrupt(`Unknown compression type id ${compression}`);
  // ProduceRequest.validateRecords: zstd needs Produce v7+ (KIP-110).
  if (compression === CompressionType.Zstd && ctx.produceVersion < 7) {
    throw new RecordValidationError(Errors.UNSUPPORTED_COMPRESSION_TYPE, 'Produce requests with zstd compression need version 7 or above');
  }
}

/** Walks every record (LogValidator.validateRecord, DefaultRecord.readFrom). */
async function checkRecords(batch: RecordBatch, ctx: ValidationContext): Promise<void> {
  const scanner = await scanRecords(batch, ctx);
  if (scanner.error !== null) throw invalid(`${scanner.error}${where(ctx)}`);
  if (scanner.faultIndexes.length > 0) throw recordErrors(batch, scanner, ctx);
  // LogValidator sets maxTimestamp from the records (setMaxTimestamp); it is covered by the
  // CRC, so the CRC is checked first and re-sealed after.
  if (!ctx.settings.logAppendTime && batch.timestampType === TimestampType.CreateTime && scanner.maxTimestamp !== batch.maxTimestamp) {
    if (!ctx.verifyCrc) checkCrc(batch);
    batch.buf.writeBigInt64BE(BigInt(scanner.maxTimestamp), batch.offset + MAX_TIMESTAMP);
    batch.buf.writeUInt32BE(batch.computeCrc(), batch.offset + CRC);
  }
}

async function scanRecords(batch: RecordBatch, ctx: ValidationContext): Promise<RecordScanner> {
  const { settings, nowMs } = ctx;
  const count = batch.recordCount;
  const maxTotalBytes = maxRecordsBytes(count, settings.maxMessageBytes);
  const scanner = new RecordScanner({
    recordCount: count,
    baseTimestamp: batch.baseTimestamp,
    maxRecordBytes: settings.maxMessageBytes,
    maxTotalBytes,
    requireKeys: settings.compacted,
    minTimestampMs: settings.logAppendTime ? NaN : nowMs - settings.timestampBeforeMaxMs,
    maxTimestampMs: settings.logAppendTime ? NaN : nowMs + settings.timestampAfterMaxMs,
  });
  const payload = batch.recordsPayload();
  if (batch.compression === CompressionType.None) {
    scanner.scanWhole(payload);
    return scanner;
  }
  try {
    await decompressChunks(batch.compression, payload, (chunk) => scanner.feed(chunk), maxTotalBytes);
  } catch (err) {
    if (!(err instanceof CompressionError)) throw err;
    if (err.kind === 'too-large') {
      throw invalid(`The records of the batch inflate beyond the ${maxTotalBytes} bytes a batch of ${count} records may take${where(ctx)}`);
    }
    throw corrupt(`Record batch could not be decompressed (${err.message})${where(ctx)}`);
  }
  scanner.finish();
  return scanner;
}

/** LogValidator.processRecordErrors: every refused record, and Kafka's summary message. */
function recordErrors(batch: RecordBatch, scanner: RecordScanner, ctx: ValidationContext): RecordValidationError {
  const errors = scanner.faultIndexes.map((batchIndex, i) => ({
    batchIndex,
    // The three fault arrays are parallel: one kind and one value per index.
    message: recordErrorMessage(batch, scanner.faultKinds[i] ?? RecordFault.NullKey, scanner.faultValues[i] ?? 0, batchIndex, ctx),
  }));
  if (scanner.faultKinds.includes(RecordFault.Timestamp)) {
    return new RecordValidationError(Errors.INVALID_TIMESTAMP, 'One or more records have been rejected due to invalid timestamp', errors);
  }
  const shown = errors
    .slice(0, 3)
    .map((e) => `RecordError(batchIndex=${e.batchIndex}, message='${e.message}')`)
    .join(', ');
  return new RecordValidationError(
    Errors.INVALID_RECORD,
    `One or more records have been rejected due to ${errors.length} record errors in total, and only showing the first three errors at most: [${shown}]`,
    errors,
  );
}

/** Kafka's message for one refused record. */
function recordErrorMessage(batch: RecordBatch, kind: RecordFault, value: number, batchIndex: number, ctx: ValidationContext): string {
  const { nowMs, settings } = ctx;
  switch (kind) {
    case RecordFault.NullKey:
      return `Compacted topic cannot accept message without key in topic partition ${ctx.topicPartition ?? ''}`.trimEnd();
    case RecordFault.OffsetDelta:
      return `Record ${batchIndex} has offset delta ${value}: the records of a batch must have offset deltas 0 to ${batch.recordCount - 1} in order${where(ctx)}`;
    case RecordFault.Timestamp:
      return `Timestamp ${value} of message with offset ${batchIndex} is out of range. The timestamp should be within [${nowMs - settings.timestampBeforeMaxMs}, ${nowMs + settings.timestampAfterMaxMs}]`;
  }
}

function checkCrc(batch: RecordBatch): void {
  if (!batch.isCrcValid()) throw corrupt(`Record batch is corrupt (stored crc = ${batch.crc}, computed crc = ${batch.computeCrc()})`);
}

function where(ctx: ValidationContext): string {
  return ctx.topicPartition === undefined ? '' : ` in topic partition ${ctx.topicPartition}`;
}

function invalid(message: string): RecordValidationError {
  return new RecordValidationError(Errors.INVALID_RECORD, message);
}

function corrupt(message: string): RecordValidationError {
  return new RecordValidationError(Errors.CORRUPT_MESSAGE, message);
}
