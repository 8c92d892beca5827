// Writes v2 batches byte for byte as Kafka's MemoryRecordsBuilder does for the same inputs:
// the same header fields, attributes and record layout, baseTimestamp = the first record's
// timestamp, maxTimestamp = the largest (or the log append time), then CRC-32C over
// attributes..end. Compressed payloads match in layout; their bytes depend on the codec
// implementation.

import { compress, type CompressOptions } from '../compression/index.ts';
import { crc32c } from '../crc.ts';
import { EncodeError, Writer } from '../primitives.ts';
import {
  ATTRIBUTES,
  BASE_OFFSET,
  BASE_SEQUENCE,
  BASE_TIMESTAMP,
  BATCH_LENGTH,
  COMPRESSION_MASK,
  CompressionType,
  CONTROL_BIT,
  CRC,
  LAST_OFFSET_DELTA,
  LOG_OVERHEAD,
  MAGIC,
  MAX_TIMESTAMP,
  NO_PARTITION_LEADER_EPOCH,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  NO_TIMESTAMP,
  PARTITION_LEADER_EPOCH,
  PRODUCER_EPOCH,
  PRODUCER_ID,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT,
  TIMESTAMP_TYPE_BIT,
  TimestampType,
  TRANSACTIONAL_BIT,
} from './batch.ts';
import { type RecordInput, writeRecord } from './record.ts';

export interface RecordBatchOptions {
  baseOffset?: number | bigint;
  partitionLeaderEpoch?: number;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  isTransactional?: boolean;
  isControl?: boolean;
  timestampType?: TimestampType;
  /** Required with TimestampType.LogAppendTime: becomes the batch's maxTimestamp. */
  logAppendTimeMs?: number;
  compression?: CompressionType;
  compressionOptions?: CompressOptions;
}

const MAX_INT32 = 0x7fffffff;

function checkInt(value: number, min: number, max: number, what: string): void {
  if (!Number.isInteger(value) || value < min || value > max) throw new EncodeError(`${what} ${value} out of range`);
}

export function batchAttributes(
  compression: CompressionType,
  timestampType: TimestampType,
  isTransactional: boolean,
  isControl: boolean,
): number {
  return (
    (compression & COMPRESSION_MASK) |
    (timestampType === TimestampType.LogAppendTime ? TIMESTAMP_TYPE_BIT : 0) |
    (isTransactional ? TRANSACTIONAL_BIT : 0) |
    (isControl ? CONTROL_BIT : 0)
  );
}

interface HeaderFields {
  baseOffset: bigint;
  lastOffsetDelta: number;
  partitionLeaderEpoch: number;
  attributes: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

/** Writes the 61-byte header in front of the payload chunks and fills in the CRC. */
function assembleBatch(h: HeaderFields, payload: readonly Buffer[]): Buffer {
  const payloadBytes = payload.reduce((sum, chunk) => sum + chunk.length, 0);
  const out = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + payloadBytes);
  out.writeBigInt64BE(h.baseOffset, BASE_OFFSET);
  out.writeInt32BE(out.length - LOG_OVERHEAD, BATCH_LENGTH);
  out.writeInt32BE(h.partitionLeaderEpoch, PARTITION_LEADER_EPOCH);
  out.writeInt8(2, MAGIC);
  out.writeInt16BE(h.attributes, ATTRIBUTES);
  out.writeInt32BE(h.lastOffsetDelta, LAST_OFFSET_DELTA);
  out.writeBigInt64BE(BigInt(h.baseTimestamp), BASE_TIMESTAMP);
  out.writeBigInt64BE(BigInt(h.maxTimestamp), MAX_TIMESTAMP);
  out.writeBigInt64BE(h.producerId, PRODUCER_ID);
  out.writeInt16BE(h.producerEpoch, PRODUCER_EPOCH);
  out.writeInt32BE(h.baseSequence, BASE_SEQUENCE);
  out.writeInt32BE(h.recordCount, RECORDS_COUNT);
  let at = RECORD_BATCH_OVERHEAD;
  for (const chunk of payload) at += chunk.copy(out, at);
  out.writeUInt32BE(crc32c(out.subarray(ATTRIBUTES)), CRC);
  return out;
}

/**
 * Accumulates records and writes one v2 batch. Records are encoded as they are added;
 * compression and the CRC happen in build().
 */
export class RecordBatchBuilder {
  private readonly writer = new Writer(1024);
  private readonly options: Required<Omit<RecordBatchOptions, 'logAppendTimeMs' | 'compressionOptions'>> & {
    logAppendTimeMs: number;
    compressionOptions: CompressOptions;
  };
  private count = 0;
  private lastOffsetDelta = -1;
  private firstTimestampMs: number | null = null;
  private maxTimestampMs = NO_TIMESTAMP;

  constructor(options: RecordBatchOptions = {}) {
    const o = {
      baseOffset: options.baseOffset ?? 0,
      partitionLeaderEpoch: options.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH,
      producerId: options.producerId ?? NO_PRODUCER_ID,
      producerEpoch: options.producerEpoch ?? NO_PRODUCER_EPOCH,
      baseSequence: options.baseSequence ?? NO_SEQUENCE,
      isTransactional: options.isTransactional ?? false,
      isControl: options.isControl ?? false,
      timestampType: options.timestampType ?? TimestampType.CreateTime,
      logAppendTimeMs: options.logAppendTimeMs ?? NO_TIMESTAMP,
      compression: options.compression ?? CompressionType.None,
      compressionOptions: options.compressionOptions ?? {},
    };
    checkInt(o.partitionLeaderEpoch, -0x80000000, MAX_INT32, 'partition leader epoch');
    checkInt(o.producerEpoch, -0x8000, 0x7fff, 'producer epoch');
    checkInt(o.baseSequence, -0x80000000, MAX_INT32, 'base sequence');
    if (o.timestampType === TimestampType.LogAppendTime && o.logAppendTimeMs === NO_TIMESTAMP) {
      throw new EncodeError('LogAppendTime batches need logAppendTimeMs');
    }
    // MemoryRecordsBuilder.validateProducerState
    if (o.isTransactional && o.producerId === NO_PRODUCER_ID) {
      throw new EncodeError('transactional batches need a producer id');
    }
    if (o.producerId !== NO_PRODUCER_ID) {
      if (o.producerEpoch === NO_PRODUCER_EPOCH) throw new EncodeError('a producer id needs a producer epoch');
      if (o.baseSequence < 0 && !o.isControl) throw new EncodeError('a producer id needs a base sequence');
    }
    this.options = o;
  }

  get recordCount(): number {
    return this.count;
  }

  /** Bytes of the records added so far, before compression. */
  get uncompressedBytes(): number {
    return this.writer.length;
  }

  add(record: RecordInput): this {
    const offsetDelta = record.offsetDelta ?? this.lastOffsetDelta + 1;
    if (offsetDelta <= this.lastOffsetDelta) {
      throw new EncodeError(`offset delta ${offsetDelta} does not follow ${this.lastOffsetDelta}`);
    }
    const timestamp = record.timestamp;
    if (!Number.isSafeInteger(timestamp) || (timestamp < 0 && timestamp !== NO_TIMESTAMP)) {
      throw new EncodeError(`invalid timestamp ${timestamp}`);
    }
    this.firstTimestampMs ??= timestamp;
    writeRecord(this.writer, offsetDelta, timestamp - this.firstTimestampMs, record.key, record.value, record.headers);
    this.count++;
    this.lastOffsetDelta = offsetDelta;
    if (timestamp > this.maxTimestampMs) this.maxTimestampMs = timestamp;
    return this;
  }

  async build(): Promise<Buffer> {
    const o = this.options;
    if (o.compression === CompressionType.None) return this.buildUncompressed();
    const firstTimestampMs = this.checkNotEmpty();
    return this.assemble(firstTimestampMs, [await compress(o.compression, this.writer.toBuffer(), o.compressionOptions)]);
  }

  /**
   * The batch, synchronously: only for uncompressed batches (compression runs off the event
   * loop). What the Raft log writes, whose appends cannot wait.
   */
  buildUncompressed(): Buffer {
    if (this.options.compression !== CompressionType.None) throw new EncodeError('a compressed batch is built with build()');
    return this.assemble(this.checkNotEmpty(), this.writer.toChunks());
  }

  /** The first record's timestamp (the batch's baseTimestamp); throws for an empty batch. */
  private checkNotEmpty(): number {
    if (this.firstTimestampMs === null) throw new EncodeError('a record batch needs at least one record');
    return this.firstTimestampMs;
  }

  private assemble(baseTimestampMs: number, payload: readonly Buffer[]): Buffer {
    const o = this.options;
    return assembleBatch(
      {
        baseOffset: BigInt(o.baseOffset),
        lastOffsetDelta: this.lastOffsetDelta,
        partitionLeaderEpoch: o.partitionLeaderEpoch,
        attributes: batchAttributes(o.compression, o.timestampType, o.isTransactional, o.isControl),
        baseTimestamp: baseTimestampMs,
        maxTimestamp: o.timestampType === TimestampType.LogAppendTime ? o.logAppendTimeMs : this.maxTimestampMs,
        producerId: o.producerId,
        producerEpoch: o.producerEpoch,
        baseSequence: o.baseSequence,
        recordCount: this.count,
      },
      payload,
    );
  }
}

/** Builds one batch from `records`. */
export async function buildRecordBatch(options: RecordBatchOptions, records: Iterable<RecordInput>): Promise<Buffer> {
  const builder = new RecordBatchBuilder(options);
  for (const record of records) builder.add(record);
  return builder.build();
}

/** Builds one uncompressed batch from `records`, synchronously (see buildUncompressed). */
export function buildUncompressedRecordBatch(options: Omit<RecordBatchOptions, 'compression'>, records: Iterable<RecordInput>): Buffer {
  const builder = new RecordBatchBuilder(options);
  for (const record of records) builder.add(record);
  return builder.buildUncompressed();
}

export interface EmptyBatchOptions {
  baseOffset: number | bigint;
  lastOffset: number | bigint;
  partitionLeaderEpoch?: number;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  isTransactional?: boolean;
  isControl?: boolean;
  timestampType?: TimestampType;
  timestamp?: number;
}

/**
 * A batch with no records that keeps an offset range and producer state, as compaction
 * leaves behind to preserve a producer's last sequence (DefaultRecordBatch.writeEmptyHeader).
 */
export function buildEmptyBatch(o: EmptyBatchOptions): Buffer {
  const baseOffset = BigInt(o.baseOffset);
  const lastOffsetDelta = Number(BigInt(o.lastOffset) - baseOffset);
  checkInt(lastOffsetDelta, 0, MAX_INT32, 'last offset delta');
  const timestamp = o.timestamp ?? NO_TIMESTAMP;
  return assembleBatch(
    {
      baseOffset,
      lastOffsetDelta,
      partitionLeaderEpoch: o.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH,
      attributes: batchAttributes(
        CompressionType.None,
        o.timestampType ?? TimestampType.CreateTime,
        o.isTransactional ?? false,
        o.isControl ?? false,
      ),
      baseTimestamp: timestamp,
      maxTimestamp: timestamp,
      producerId: o.producerId ?? NO_PRODUCER_ID,
      producerEpoch: o.producerEpoch ?? NO_PRODUCER_EPOCH,
      baseSequence: o.baseSequence ?? NO_SEQUENCE,
      recordCount: 0,
    },
    [],
  );
}
