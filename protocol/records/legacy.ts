// Legacy message sets, message formats v0 and v1 (implementation.html "Old Message Format"),
// carried by Produce v0-v2 and Fetch v0-v3:
//
//   offset int64 | message_size int32 | crc uint32 (CRC-32 of magic..end) | magic int8 |
//   attributes int8 | [timestamp int64, v1 only] | key bytes | value bytes
//
// A compressed "wrapper" message holds a whole inner message set, compressed, as its value.
// v1 inner messages carry offsets relative to the first; the wrapper carries the absolute
// offset of the last. Sluice stores only v2 batches: produced message sets are converted
// (convertLegacyToV2), and stored batches are down-converted for old fetchers (v2ToLegacy).

import * as zlib from 'node:zlib';
import CRC32 from 'crc-32';
import { compress, decompress, DEFAULT_MAX_DECOMPRESSED_BYTES, type CompressOptions } from '../compression/index.ts';
import { CompressionError } from '../compression/types.ts';
import { EncodeError, Writer } from '../primitives.ts';
import {
  CompressionType,
  InvalidRecordBatchError,
  LOG_OVERHEAD,
  MAGIC,
  NO_TIMESTAMP,
  RecordBatch,
  TimestampType,
  validateBatchAt,
} from './batch.ts';
import { buildRecordBatch } from './builder.ts';
import { readRecords, type Record } from './record.ts';

export type LegacyMagic = 0 | 1;

const CRC_AT = LOG_OVERHEAD;
const ATTRIBUTES_AT = MAGIC + 1;
const TIMESTAMP_AT = ATTRIBUTES_AT + 1;
/** crc + magic + attributes + key length + value length. */
export const LEGACY_RECORD_OVERHEAD_V0 = 14;
/** v0 overhead + timestamp. */
export const LEGACY_RECORD_OVERHEAD_V1 = 22;
const COMPRESSION_MASK = 0x07;
const TIMESTAMP_TYPE_BIT = 0x08;

/** CRC-32 (not CRC-32C), natively where Node has zlib.crc32 (20.15+). */
const crc32: (data: Buffer) => number = typeof zlib.crc32 === 'function' ? (data) => zlib.crc32(data) : (data) => CRC32.buf(data) >>> 0;

export interface LegacyMessage {
  offset: number;
  magic: LegacyMagic;
  attributes: number;
  compression: CompressionType;
  timestampType: TimestampType;
  /** NO_TIMESTAMP (-1) in v0. */
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  crc: number;
  /** Bytes of the whole entry, offset and size fields included. */
  sizeInBytes: number;
}

export interface LegacyReadOptions {
  checkCrc?: boolean;
  maxDecompressedBytes?: number;
}

/** The magic byte of the batch or message at `offset`: the same position in every format. */
export function magicAt(buf: Buffer, offset = 0): number {
  if (offset + MAGIC >= buf.length) throw new InvalidRecordBatchError('too short to hold a magic byte', 'truncated');
  return buf.readInt8(offset + MAGIC);
}

/** Shallow iteration: wrapper messages are yielded as they are, still compressed. */
export function* legacyEntries(buf: Buffer, checkCrc = true): Generator<LegacyMessage, void, undefined> {
  for (let pos = 0; pos < buf.length; ) {
    const message = readLegacyEntry(buf, pos, checkCrc);
    yield message;
    pos += message.sizeInBytes;
  }
}

function readLegacyEntry(buf: Buffer, pos: number, checkCrc: boolean): LegacyMessage {
  if (buf.length - pos < LOG_OVERHEAD) throw new InvalidRecordBatchError('truncated message header', 'truncated');
  const size = buf.readInt32BE(pos + 8);
  if (size < LEGACY_RECORD_OVERHEAD_V0) throw new InvalidRecordBatchError(`message size ${size} below the minimum`, 'corrupt');
  const end = pos + LOG_OVERHEAD + size;
  if (end > buf.length) throw new InvalidRecordBatchError(`message of ${size} bytes is truncated`, 'truncated');
  const magic = buf.readInt8(pos + MAGIC);
  if (magic !== 0 && magic !== 1) throw new InvalidRecordBatchError(`magic ${magic} is not a legacy message`, 'unsupported-magic');
  if (magic === 1 && size < LEGACY_RECORD_OVERHEAD_V1) {
    throw new InvalidRecordBatchError(`message size ${size} below the v1 minimum`, 'corrupt');
  }
  const crc = buf.readUInt32BE(pos + CRC_AT);
  if (checkCrc && crc32(buf.subarray(pos + MAGIC, end)) !== crc) {
    throw new InvalidRecordBatchError('message CRC-32 mismatch', 'corrupt');
  }
  const offset = Number(buf.readBigInt64BE(pos));
  if (!Number.isSafeInteger(offset)) throw new InvalidRecordBatchError(`offset ${offset} out of range`, 'corrupt');
  const attributes = buf.readInt8(pos + ATTRIBUTES_AT);
  let at = pos + TIMESTAMP_AT;
  let timestamp = NO_TIMESTAMP;
  if (magic === 1) {
    timestamp = Number(buf.readBigInt64BE(at));
    if (!Number.isSafeInteger(timestamp)) throw new InvalidRecordBatchError(`timestamp ${timestamp} out of range`, 'corrupt');
    at += 8;
  }
  const readBytes = (): Buffer | null => {
    const length = buf.readInt32BE(at);
    at += 4;
    if (length === -1) return null;
    if (length < 0 || at + length > end) throw new InvalidRecordBatchError(`bytes length ${length} overruns the message`, 'corrupt');
    at += length;
    return buf.subarray(at - length, at);
  };
  const key = readBytes();
  if (at + 4 > end) throw new InvalidRecordBatchError('message too short for its value', 'corrupt');
  const value = readBytes();
  if (at !== end) throw new InvalidRecordBatchError(`${end - at} bytes follow the message value`, 'corrupt');
  return {
    offset,
    magic,
    attributes,
    compression: attributes & COMPRESSION_MASK,
    timestampType: magic === 1 && attributes & TIMESTAMP_TYPE_BIT ? TimestampType.LogAppendTime : TimestampType.CreateTime,
    timestamp,
    key,
    value,
    crc,
    sizeInBytes: end - pos,
  };
}

/**
 * The inner messages of a wrapper (or the message itself when uncompressed), with absolute
 * offsets and the wrapper's log append time applied, as Kafka's deep iteration gives them.
 */
async function expand(entry: LegacyMessage, options: LegacyReadOptions): Promise<LegacyMessage[]> {
  if (entry.compression === CompressionType.None) return [entry];
  if (entry.compression === CompressionType.Zstd) {
    throw new CompressionError('unsupported', entry.compression, 'not allowed in message format v0/v1');
  }
  if (entry.value === null) throw new InvalidRecordBatchError('compressed message without a value', 'corrupt');
  let inner: Buffer;
  try {
    inner = await decompress(entry.compression, entry.value, options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES);
  } catch (err) {
    if (err instanceof CompressionError && err.kind === 'corrupt') {
      throw new InvalidRecordBatchError(`compressed message: ${err.message}`, 'corrupt');
    }
    throw err;
  }
  const messages = [...legacyEntries(inner, options.checkCrc ?? true)];
  const last = messages[messages.length - 1];
  if (last === undefined) throw new InvalidRecordBatchError('compressed message with no inner messages', 'corrupt');
  const lastRelative = last.offset;
  return messages.map((m) => {
    if (m.magic !== entry.magic) {
      throw new InvalidRecordBatchError(`inner message magic ${m.magic} differs from its wrapper's ${entry.magic}`, 'corrupt');
    }
    if (m.compression !== CompressionType.None) throw new InvalidRecordBatchError('nested compressed message', 'corrupt');
    const offset = entry.magic === 1 ? entry.offset - lastRelative + m.offset : m.offset;
    // The wrapper's timestamp type rules its messages; with LogAppendTime its timestamp too.
    const timestamp = entry.timestampType === TimestampType.LogAppendTime ? entry.timestamp : m.timestamp;
    return { ...m, offset, timestamp, timestampType: entry.timestampType };
  });
}

/** Deep iteration: every message, wrappers decompressed into their inner messages. */
export async function legacyRecords(buf: Buffer, options: LegacyReadOptions = {}): Promise<LegacyMessage[]> {
  const out: LegacyMessage[] = [];
  for (const entry of legacyEntries(buf, options.checkCrc ?? true)) out.push(...(await expand(entry, options)));
  return out;
}

export interface ConvertLegacyOptions extends LegacyReadOptions {
  /** First offset to assign (default 0). */
  baseOffset?: number;
  compressionOptions?: CompressOptions;
}

/**
 * Converts a produced message set to v2 batches: one batch per compressed wrapper (same
 * codec) and one per run of uncompressed messages of one timestamp type. Offsets are
 * assigned consecutively from `baseOffset`, as Kafka's LogValidator assigns them on append;
 * keys, values and timestamps are kept (v0 has none: NO_TIMESTAMP).
 */
export async function convertLegacyToV2(buf: Buffer, options: ConvertLegacyOptions = {}): Promise<Buffer> {
  const batches: Buffer[] = [];
  let nextOffset = options.baseOffset ?? 0;
  let plain: LegacyMessage[] = [];
  const flush = async (messages: LegacyMessage[], compression: CompressionType): Promise<void> => {
    const [first] = messages;
    if (first === undefined) return;
    const timestampType = first.timestampType;
    const maxTimestampMs = messages.reduce((max, m) => Math.max(max, m.timestamp), NO_TIMESTAMP);
    batches.push(
      await buildRecordBatch(
        {
          baseOffset: nextOffset,
          compression,
          compressionOptions: options.compressionOptions,
          timestampType,
          logAppendTimeMs: timestampType === TimestampType.LogAppendTime ? maxTimestampMs : undefined,
        },
        messages.map((m) => ({ key: m.key, value: m.value, timestamp: m.timestamp })),
      ),
    );
    nextOffset += messages.length;
  };
  for (const entry of legacyEntries(buf, options.checkCrc ?? true)) {
    if (entry.compression === CompressionType.None) {
      const [run] = plain;
      if (run !== undefined && run.timestampType !== entry.timestampType) {
        await flush(plain, CompressionType.None);
        plain = [];
      }
      plain.push(entry);
      continue;
    }
    await flush(plain, CompressionType.None);
    plain = [];
    await flush(await expand(entry, options), entry.compression);
  }
  await flush(plain, CompressionType.None);
  return concatOrOnly(batches);
}

export interface LegacyMessageSetOptions {
  magic: LegacyMagic;
  compression?: CompressionType;
  /** v1 only. */
  timestampType?: TimestampType;
  /** Required with TimestampType.LogAppendTime. */
  logAppendTimeMs?: number;
  /** Offset of the first message, and the base of v1 relative inner offsets (default 0). */
  baseOffset?: number;
  compressionOptions?: CompressOptions;
}

export interface LegacyRecordInput {
  /** Defaults to one past the previous message (baseOffset for the first). */
  offset?: number;
  /** Ignored by v0; NO_TIMESTAMP when absent. A bigint carries one beyond 2^53 exactly. */
  timestamp?: number | bigint;
  key?: Buffer | null;
  value?: Buffer | null;
}

function writeLegacyMessage(
  w: Writer,
  offset: number,
  magic: LegacyMagic,
  attributes: number,
  timestamp: number | bigint,
  key: Buffer | null | undefined,
  value: Buffer | null | undefined,
): void {
  const size = (magic === 0 ? LEGACY_RECORD_OVERHEAD_V0 : LEGACY_RECORD_OVERHEAD_V1) + (key?.length ?? 0) + (value?.length ?? 0);
  const body = Buffer.allocUnsafe(size - 4);
  let at = body.writeInt8(magic, 0);
  at = body.writeInt8(attributes, at);
  if (magic === 1) at = body.writeBigInt64BE(BigInt(timestamp), at);
  for (const b of [key, value]) {
    if (b == null) {
      at = body.writeInt32BE(-1, at);
    } else {
      at = body.writeInt32BE(b.length, at);
      at += b.copy(body, at);
    }
  }
  w.int64(BigInt(offset)).int32(size).uint32(crc32(body)).raw(body);
}

/**
 * Writes a v0/v1 message set as Kafka's MemoryRecordsBuilder does for those magics: one
 * message per record when uncompressed; otherwise one wrapper (offset = last offset,
 * timestamp = max timestamp or the log append time) around the compressed inner set, with
 * v1 inner offsets relative to baseOffset. An empty input gives an empty set.
 */
export async function buildLegacyMessageSet(options: LegacyMessageSetOptions, records: readonly LegacyRecordInput[]): Promise<Buffer> {
  const { magic } = options;
  const compression = options.compression ?? CompressionType.None;
  const timestampType = magic === 1 ? (options.timestampType ?? TimestampType.CreateTime) : TimestampType.CreateTime;
  const logAppendTimeMs = options.logAppendTimeMs ?? NO_TIMESTAMP;
  if (compression === CompressionType.Zstd) {
    throw new CompressionError('unsupported', compression, 'not allowed in message format v0/v1');
  }
  if (timestampType === TimestampType.LogAppendTime && logAppendTimeMs === NO_TIMESTAMP) {
    throw new EncodeError('LogAppendTime message sets need logAppendTimeMs');
  }
  if (records.length === 0) return Buffer.alloc(0);
  const baseOffset = options.baseOffset ?? 0;
  const typeBit = timestampType === TimestampType.LogAppendTime ? TIMESTAMP_TYPE_BIT : 0;
  const relative = magic === 1 && compression !== CompressionType.None;
  const inner = new Writer();
  let lastOffset: number | null = null;
  let maxTimestampMs: number | bigint = NO_TIMESTAMP;
  for (const record of records) {
    const offset: number = record.offset ?? (lastOffset === null ? baseOffset : lastOffset + 1);
    if (lastOffset !== null && offset <= lastOffset) throw new EncodeError(`offset ${offset} does not follow ${lastOffset}`);
    let timestamp = magic === 0 ? NO_TIMESTAMP : (record.timestamp ?? NO_TIMESTAMP);
    if (timestampType === TimestampType.LogAppendTime) timestamp = logAppendTimeMs;
    if (!isLegacyTimestamp(timestamp)) throw new EncodeError(`invalid timestamp ${timestamp}`);
    writeLegacyMessage(inner, relative ? offset - baseOffset : offset, magic, typeBit, timestamp, record.key, record.value);
    lastOffset = offset;
    if (timestamp > maxTimestampMs) maxTimestampMs = timestamp;
  }
  if (compression === CompressionType.None) return inner.toBuffer();
  const compressed = await compress(compression, inner.toBuffer(), {
    ...options.compressionOptions,
    // Kafka's v0 LZ4 wrappers carry the broken descriptor checksum old clients expect.
    lz4BrokenHeaderChecksum: magic === 0,
  });
  // `records` is not empty: the loop set it.
  if (lastOffset === null) throw new EncodeError('a message set needs at least one message');
  const wrapper = new Writer();
  const wrapperTimestampMs = timestampType === TimestampType.LogAppendTime ? logAppendTimeMs : maxTimestampMs;
  writeLegacyMessage(wrapper, lastOffset, magic, compression | typeBit, wrapperTimestampMs, null, compressed);
  return wrapper.toBuffer();
}

export interface DownConvertOptions {
  /** Uncompressed records below this offset are left out, as Kafka's RecordsUtil.downConvert does. */
  firstOffset?: number;
  maxDecompressedBytes?: number;
}

/**
 * Down-converts stored v2 batches to a magic 0/1 message set for Fetch v0-v3: control
 * batches are dropped, each batch becomes a message set of its codec (headers, producer
 * state and transactions have no place there). zstd batches cannot be down-converted
 * (Kafka answers UNSUPPORTED_COMPRESSION_TYPE): a CompressionError of kind 'unsupported'.
 * A partial batch at the end (a fetch cut at maxBytes) is left out.
 */
export async function v2ToLegacy(batches: Buffer, magic: LegacyMagic, options: DownConvertOptions = {}): Promise<Buffer> {
  const parts: Buffer[] = [];
  const firstOffset = options.firstOffset ?? 0;
  for (let pos = 0; pos < batches.length; ) {
    let size: number;
    try {
      size = validateBatchAt(batches, pos, batches.length, false);
    } catch (err) {
      if (err instanceof InvalidRecordBatchError && err.kind === 'truncated') break;
      throw err;
    }
    const batch = new RecordBatch(batches, pos);
    pos += size;
    if (batch.isControl) continue;
    if (batch.compression === CompressionType.Zstd) {
      throw new CompressionError('unsupported', batch.compression, 'cannot be down-converted to message format v0/v1');
    }
    let records = await readRecords(batch, { maxDecompressedBytes: options.maxDecompressedBytes });
    if (batch.compression === CompressionType.None) records = records.filter((r) => r.offset >= firstOffset);
    const [first] = records;
    if (first === undefined) continue;
    parts.push(
      await buildLegacyMessageSet(
        {
          magic,
          compression: batch.compression,
          timestampType: batch.timestampType,
          logAppendTimeMs: batch.timestampType === TimestampType.LogAppendTime ? batch.maxTimestamp : undefined,
          baseOffset: first.offset,
        },
        records.map((r) => ({ offset: r.offset, timestamp: legacyTimestamp(exactTimestamp(batch, r)), key: r.key, value: r.value })),
      ),
    );
  }
  return concatOrOnly(parts);
}

/**
 * A v2 record's timestamp as a magic 1 message carries it. A producer may set any timestamp
 * (Kafka's LogValidator bounds only its distance from now, by default not at all), but
 * magic 1 holds none below 0 but -1: such a record goes down as having no timestamp, as magic
 * 0 carries none at all, and the old consumer still gets its key and value. Kafka's own
 * down-conversion throws there and fails the fetch at every retry.
 */
function legacyTimestamp(timestampMs: bigint): number | bigint {
  if (timestampMs < 0n) return NO_TIMESTAMP;
  return timestampMs <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(timestampMs) : timestampMs;
}

const INT64_MAX = 2n ** 63n - 1n;

/** A record's CreateTime from its batch's base timestamp, exact where Record.timestamp rounds. */
function exactTimestamp(batch: RecordBatch, record: Record): bigint {
  return batch.baseTimestampBig + BigInt(record.timestampDelta);
}

/** NO_TIMESTAMP, or an int64 at or above 0 (a number only while exact). */
function isLegacyTimestamp(timestamp: number | bigint): boolean {
  if (typeof timestamp === 'bigint') return timestamp >= 0n && timestamp <= INT64_MAX;
  return Number.isSafeInteger(timestamp) && (timestamp >= 0 || timestamp === NO_TIMESTAMP);
}

/** The one buffer as it is (no copy), or several joined. */
function concatOrOnly(parts: readonly Buffer[]): Buffer {
  const [only] = parts;
  return parts.length === 1 && only !== undefined ? only : Buffer.concat(parts);
}
