// Record batch v2 header (implementation.html "Record Batch"): a view that reads and
// writes header fields in place, without decoding records.
//
//   baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
//   crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
//   maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
//   records count int32 | records...
//
// The CRC-32C covers attributes to the end of the batch, so baseOffset and
// partitionLeaderEpoch can be rewritten without re-encoding anything.

import { CompressionType } from '../compression/types.ts';
import { crc32c } from '../crc.ts';

export const BASE_OFFSET = 0;
export const BATCH_LENGTH = 8;
export const PARTITION_LEADER_EPOCH = 12;
export const MAGIC = 16;
export const CRC = 17;
export const ATTRIBUTES = 21;
export const LAST_OFFSET_DELTA = 23;
export const BASE_TIMESTAMP = 27;
export const MAX_TIMESTAMP = 35;
export const PRODUCER_ID = 43;
export const PRODUCER_EPOCH = 51;
export const BASE_SEQUENCE = 53;
export const RECORDS_COUNT = 57;
/** Size of the v2 batch header, also the smallest valid batch. */
export const RECORD_BATCH_OVERHEAD = 61;
/** Bytes before the batchLength field counts: baseOffset + batchLength. */
export const LOG_OVERHEAD = 12;

export { CompressionType };

export enum TimestampType {
  CreateTime = 0,
  LogAppendTime = 1,
}

export const COMPRESSION_MASK = 0x07;
export const TIMESTAMP_TYPE_BIT = 0x08;
export const TRANSACTIONAL_BIT = 0x10;
export const CONTROL_BIT = 0x20;
export const DELETE_HORIZON_BIT = 0x40;

export const NO_PRODUCER_ID = -1n;
export const NO_PRODUCER_EPOCH = -1;
export const NO_SEQUENCE = -1;
export const NO_PARTITION_LEADER_EPOCH = -1;
export const NO_TIMESTAMP = -1;

/**
 * An int64 as a number without allocating a BigInt: exact below 2^53, as offsets and
 * timestamps are; beyond that it rounds as Number(bigint) does.
 */
function readInt64AsNumber(buf: Buffer, at: number): number {
  return buf.readInt32BE(at) * 0x1_0000_0000 + buf.readUInt32BE(at + 4);
}

/** Writes a safe integer as an int64, without going through a BigInt. */
function writeInt64FromNumber(buf: Buffer, at: number, value: number): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`int64 value ${value} is not a safe integer`);
  const high = Math.floor(value / 0x1_0000_0000);
  buf.writeInt32BE(high, at);
  buf.writeUInt32BE(value - high * 0x1_0000_0000, at + 4);
}

/**
 * A view over one v2 batch starting at `offset` in `buf`. It never copies: getters read
 * the header in place; `setBaseOffset` / `setPartitionLeaderEpoch` write it in place.
 */
export class RecordBatch {
  constructor(
    readonly buf: Buffer,
    readonly offset = 0,
  ) {}

  get baseOffset(): number {
    return readInt64AsNumber(this.buf, this.offset + BASE_OFFSET);
  }
  get baseOffsetBig(): bigint {
    return this.buf.readBigInt64BE(this.offset + BASE_OFFSET);
  }
  get batchLength(): number {
    return this.buf.readInt32BE(this.offset + BATCH_LENGTH);
  }
  /** Total bytes of the batch, header included. */
  get sizeInBytes(): number {
    return LOG_OVERHEAD + this.batchLength;
  }
  get partitionLeaderEpoch(): number {
    return this.buf.readInt32BE(this.offset + PARTITION_LEADER_EPOCH);
  }
  get magic(): number {
    return this.buf.readInt8(this.offset + MAGIC);
  }
  get crc(): number {
    return this.buf.readUInt32BE(this.offset + CRC);
  }
  get attributes(): number {
    return this.buf.readInt16BE(this.offset + ATTRIBUTES);
  }
  get compression(): CompressionType {
    return this.attributes & COMPRESSION_MASK;
  }
  get timestampType(): TimestampType {
    return this.attributes & TIMESTAMP_TYPE_BIT ? TimestampType.LogAppendTime : TimestampType.CreateTime;
  }
  get isTransactional(): boolean {
    return (this.attributes & TRANSACTIONAL_BIT) !== 0;
  }
  get isControl(): boolean {
    return (this.attributes & CONTROL_BIT) !== 0;
  }
  get hasDeleteHorizon(): boolean {
    return (this.attributes & DELETE_HORIZON_BIT) !== 0;
  }
  get lastOffsetDelta(): number {
    return this.buf.readInt32BE(this.offset + LAST_OFFSET_DELTA);
  }
  get lastOffset(): number {
    return this.baseOffset + this.lastOffsetDelta;
  }
  /** The offset after this batch: where the next batch starts. */
  get nextOffset(): number {
    return this.baseOffset + this.lastOffsetDelta + 1;
  }
  get baseTimestamp(): number {
    return readInt64AsNumber(this.buf, this.offset + BASE_TIMESTAMP);
  }
  /** Exact where baseTimestamp rounds (beyond 2^53, which a producer may set). */
  get baseTimestampBig(): bigint {
    return this.buf.readBigInt64BE(this.offset + BASE_TIMESTAMP);
  }
  get maxTimestamp(): number {
    return readInt64AsNumber(this.buf, this.offset + MAX_TIMESTAMP);
  }
  get producerId(): bigint {
    return this.buf.readBigInt64BE(this.offset + PRODUCER_ID);
  }
  get producerEpoch(): number {
    return this.buf.readInt16BE(this.offset + PRODUCER_EPOCH);
  }
  get baseSequence(): number {
    return this.buf.readInt32BE(this.offset + BASE_SEQUENCE);
  }
  get lastSequence(): number {
    const base = this.baseSequence;
    if (base === NO_SEQUENCE) return NO_SEQUENCE;
    // Sequences wrap at int32 max (Kafka's DefaultRecordBatch.incrementSequence).
    const last = base + this.lastOffsetDelta;
    return last > 0x7fffffff ? last - 0x80000000 : last;
  }
  get recordCount(): number {
    return this.buf.readInt32BE(this.offset + RECORDS_COUNT);
  }
  get hasProducerId(): boolean {
    return this.producerId !== NO_PRODUCER_ID;
  }

  /** The whole batch as a slice of the underlying buffer. */
  bytes(): Buffer {
    return this.buf.subarray(this.offset, this.offset + this.sizeInBytes);
  }

  /** The bytes after the header: records, possibly compressed. */
  recordsPayload(): Buffer {
    return this.buf.subarray(this.offset + RECORD_BATCH_OVERHEAD, this.offset + this.sizeInBytes);
  }

  computeCrc(): number {
    return crc32c(this.buf.subarray(this.offset + ATTRIBUTES, this.offset + this.sizeInBytes));
  }

  isCrcValid(): boolean {
    return this.computeCrc() === this.crc;
  }

  setBaseOffset(offset: number | bigint): void {
    if (typeof offset === 'bigint') this.buf.writeBigInt64BE(offset, this.offset + BASE_OFFSET);
    else writeInt64FromNumber(this.buf, this.offset + BASE_OFFSET, offset);
  }

  setPartitionLeaderEpoch(epoch: number): void {
    this.buf.writeInt32BE(epoch, this.offset + PARTITION_LEADER_EPOCH);
  }

  /**
   * Sets maxTimestamp and the LogAppendTime bit (the broker does this for topics with
   * message.timestamp.type=LogAppendTime), then recomputes the CRC since both are covered.
   */
  setLogAppendTime(timestampMs: number): void {
    const attributes = this.attributes | TIMESTAMP_TYPE_BIT;
    this.buf.writeInt16BE(attributes, this.offset + ATTRIBUTES);
    this.buf.writeBigInt64BE(BigInt(timestampMs), this.offset + MAX_TIMESTAMP);
    this.buf.writeUInt32BE(this.computeCrc(), this.offset + CRC);
  }
}

export class InvalidRecordBatchError extends Error {
  override name = 'InvalidRecordBatchError';
  constructor(
    message: string,
    readonly kind: 'corrupt' | 'truncated' | 'unsupported-magic',
  ) {
    super(message);
  }
}

/**
 * Checks the framing of the batch at `offset`: its length fits in `end`, magic is 2, the
 * header is whole, and (when `checkCrc`) the CRC-32C matches. Returns the batch size.
 */
export function validateBatchAt(buf: Buffer, offset: number, end = buf.length, checkCrc = true): number {
  if (end - offset < LOG_OVERHEAD) throw new InvalidRecordBatchError('truncated batch header', 'truncated');
  const batchLength = buf.readInt32BE(offset + BATCH_LENGTH);
  const size = LOG_OVERHEAD + batchLength;
  if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) {
    throw new InvalidRecordBatchError(`batch length ${batchLength} below the header size`, 'corrupt');
  }
  if (offset + size > end) throw new InvalidRecordBatchError(`batch of ${size} bytes is truncated`, 'truncated');
  const magic = buf.readInt8(offset + MAGIC);
  if (magic !== 2) throw new InvalidRecordBatchError(`magic ${magic} is not a v2 batch`, 'unsupported-magic');
  const batch = new RecordBatch(buf, offset);
  if (batch.lastOffsetDelta < 0) throw new InvalidRecordBatchError('negative lastOffsetDelta', 'corrupt');
  if (checkCrc && !batch.isCrcValid()) throw new InvalidRecordBatchError('CRC-32C mismatch', 'corrupt');
  return size;
}

/** Iterates the v2 batches laid end to end in `buf` as header views. */
export function* batchesIn(buf: Buffer, checkCrc = false): Generator<RecordBatch> {
  let offset = 0;
  while (offset < buf.length) {
    const size = validateBatchAt(buf, offset, buf.length, checkCrc);
    yield new RecordBatch(buf, offset);
    offset += size;
  }
}
