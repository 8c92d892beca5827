// Records inside a v2 batch (implementation.html "Record"):
//
//   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//   keyLength varint (-1 null) | key | valueLength varint (-1 null) | value |
//   headersCount varint | { headerKeyLength varint | headerKey utf8 |
//                           headerValueLength varint (-1 null) | headerValue }...
//
// Reading is lazy: a generator decodes one record per step, and keys, values and header
// values are slices of the (decompressed) records buffer, never copies.

import { decompress, DEFAULT_MAX_DECOMPRESSED_BYTES } from '../compression/index.ts';
import { CompressionError } from '../compression/types.ts';
import { DecodeError, Reader, toSafeNumber, type Writer, EncodeError } from '../primitives.ts';
import { InvalidRecordBatchError, type RecordBatch, TimestampType } from './batch.ts';

export interface RecordHeader {
  key: string;
  value: Buffer | null;
}

/** A record read from a batch, with its absolute offset and timestamp. */
export interface Record {
  offset: number;
  timestamp: number;
  offsetDelta: number;
  timestampDelta: number;
  attributes: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  /** Encoded size, length prefix included. */
  sizeInBytes: number;
}

/** A record to write. `offsetDelta` defaults to one past the previous record's. */
export interface RecordInput {
  key?: Buffer | null;
  value?: Buffer | null;
  headers?: readonly RecordHeader[];
  timestamp: number;
  offsetDelta?: number;
}

export interface ReadRecordsOptions {
  /** Bound on the decompressed records of one batch (see compression's decompress). */
  maxDecompressedBytes?: number;
}

/**
 * The batch's records as an uncompressed buffer: the payload slice itself when the batch
 * is not compressed. An undecodable payload surfaces as InvalidRecordBatchError('corrupt');
 * an exceeded bound or an unknown codec id stays a CompressionError ('too-large',
 * 'unsupported').
 */
export async function decompressedRecords(batch: RecordBatch, options: ReadRecordsOptions = {}): Promise<Buffer> {
  const payload = batch.recordsPayload();
  try {
    return await decompress(batch.compression, payload, options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BYTES);
  } catch (err) {
    if (err instanceof CompressionError && err.kind === 'corrupt') {
      throw new InvalidRecordBatchError(`records payload: ${err.message}`, 'corrupt');
    }
    throw err;
  }
}

/**
 * Lazily decodes the batch's records from `records` (the output of decompressedRecords).
 * Exactly the header's record count must fill the buffer; anything else is corrupt.
 */
export function* iterateRecords(batch: RecordBatch, records: Buffer): Generator<Record, void, undefined> {
  const count = batch.recordCount;
  if (count < 0) throw new InvalidRecordBatchError(`negative record count ${count}`, 'corrupt');
  const baseOffset = batch.baseOffset;
  const baseTimestamp = batch.baseTimestamp;
  // Kafka reports the log append time as every record's timestamp (DefaultRecordBatch).
  const logAppendTimeMs = batch.timestampType === TimestampType.LogAppendTime ? batch.maxTimestamp : null;
  const r = new Reader(records);
  for (let i = 0; i < count; i++) {
    if (r.remaining() === 0) {
      throw new InvalidRecordBatchError(`batch declares ${count} records but holds ${i}`, 'corrupt');
    }
    yield readRecord(r, baseOffset, baseTimestamp, logAppendTimeMs);
  }
  if (r.remaining() !== 0) {
    throw new InvalidRecordBatchError(`${r.remaining()} bytes follow the last of ${count} records`, 'corrupt');
  }
}

/** Decompresses (when needed) and lazily decodes the batch's records. */
export async function* records(batch: RecordBatch, options: ReadRecordsOptions = {}): AsyncGenerator<Record, void, undefined> {
  yield* iterateRecords(batch, await decompressedRecords(batch, options));
}

/** All of a batch's records, decoded at once. */
export async function readRecords(batch: RecordBatch, options: ReadRecordsOptions = {}): Promise<Record[]> {
  return [...iterateRecords(batch, await decompressedRecords(batch, options))];
}

function readRecord(r: Reader, baseOffset: number, baseTimestamp: number, logAppendTimeMs: number | null): Record {
  const start = r.offset;
  try {
    const length = r.varint();
    if (length < 0 || length > r.remaining()) {
      throw new InvalidRecordBatchError(`record length ${length} exceeds the ${r.remaining()} bytes left`, 'corrupt');
    }
    const sizeInBytes = r.offset - start + length;
    // A reader bounded to this record, so a bad inner length cannot reach the next one.
    const body = new Reader(r.buf, r.offset, r.offset + length);
    r.offset += length;
    const attributes = body.int8();
    const timestampDelta = varlongAsNumber(body);
    const offsetDelta = body.varint();
    const key = varintBytes(body);
    const value = varintBytes(body);
    const headerCount = body.varint();
    if (headerCount < 0) throw new InvalidRecordBatchError(`invalid header count ${headerCount}`, 'corrupt');
    // Each header takes at least two bytes (two length varints).
    if (headerCount * 2 > body.remaining()) {
      throw new InvalidRecordBatchError(`${headerCount} headers cannot fit in ${body.remaining()} bytes`, 'corrupt');
    }
    const headers: RecordHeader[] = [];
    for (let h = 0; h < headerCount; h++) {
      const keyLength = body.varint();
      if (keyLength < 0) throw new InvalidRecordBatchError(`negative header key length ${keyLength}`, 'corrupt');
      headers.push({ key: body.raw(keyLength).toString('utf8'), value: varintBytes(body) });
    }
    if (body.remaining() !== 0) {
      throw new InvalidRecordBatchError(`record declares ${length} bytes but its fields take ${length - body.remaining()}`, 'corrupt');
    }
    return {
      offset: baseOffset + offsetDelta,
      timestamp: logAppendTimeMs ?? baseTimestamp + timestampDelta,
      offsetDelta,
      timestampDelta,
      attributes,
      key,
      value,
      headers,
      sizeInBytes,
    };
  } catch (err) {
    if (err instanceof DecodeError || err instanceof RangeError) {
      throw new InvalidRecordBatchError(`record at byte ${start}: ${err.message}`, 'corrupt');
    }
    throw err;
  }
}

/** Kafka reads any negative length as null. */
function varintBytes(r: Reader): Buffer | null {
  const length = r.varint();
  return length < 0 ? null : r.raw(length);
}

/** A zigzag varlong as a JS number: up to 7 bytes (49 bits) without BigInt. */
function varlongAsNumber(r: Reader): number {
  const start = r.offset;
  let u = 0;
  for (let i = 0; i < 7 && r.offset < r.end; i++) {
    const b = r.buf[r.offset++]!;
    u += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }
  r.offset = start;
  return toSafeNumber(r.varlong(), 'timestamp delta');
}

const MAX_INT32 = 0x7fffffff;
const NO_HEADER_KEYS: Buffer[] = [];

export function sizeOfVarint(value: number): number {
  let u = value >= 0 ? value * 2 : -value * 2 - 1;
  let size = 1;
  while (u >= 0x80) {
    u = Math.floor(u / 128);
    size++;
  }
  return size;
}

function sizeOfVarlong(value: number): number {
  if (Math.abs(value) <= MAX_INT32) return sizeOfVarint(value);
  const n = BigInt(value);
  let u = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  let size = 1;
  while (u >= 0x80n) {
    u >>= 7n;
    size++;
  }
  return size;
}

function writeVarlong(w: Writer, value: number): void {
  if (Math.abs(value) <= MAX_INT32) w.varint(value);
  else w.varlong(BigInt(value));
}

function sizeOfBytes(b: Buffer | null | undefined): number {
  return b == null ? 1 : sizeOfVarint(b.length) + b.length;
}

/**
 * Appends one record in Kafka's layout (DefaultRecord.writeTo) and returns its encoded
 * size, length prefix included.
 */
export function writeRecord(
  w: Writer,
  offsetDelta: number,
  timestampDelta: number,
  key: Buffer | null | undefined,
  value: Buffer | null | undefined,
  headers: readonly RecordHeader[] = [],
): number {
  if (!Number.isInteger(offsetDelta) || offsetDelta < 0 || offsetDelta > MAX_INT32) {
    throw new EncodeError(`offset delta ${offsetDelta} out of range`);
  }
  if (!Number.isSafeInteger(timestampDelta)) throw new EncodeError(`timestamp delta ${timestampDelta} out of range`);
  const headerKeys =
    headers.length === 0
      ? NO_HEADER_KEYS
      : headers.map((h) => {
          if (typeof h.key !== 'string') throw new EncodeError('record header keys must be strings');
          return Buffer.from(h.key, 'utf8');
        });
  let bodyBytes = 1 + sizeOfVarlong(timestampDelta) + sizeOfVarint(offsetDelta) + sizeOfBytes(key) + sizeOfBytes(value);
  bodyBytes += sizeOfVarint(headers.length);
  headers.forEach((h, i) => {
    bodyBytes += sizeOfBytes(headerKeys[i]!) + sizeOfBytes(h.value);
  });
  w.varint(bodyBytes).int8(0);
  writeVarlong(w, timestampDelta);
  w.varint(offsetDelta);
  writeVarintBytes(w, key);
  writeVarintBytes(w, value);
  w.varint(headers.length);
  headers.forEach((h, i) => {
    writeVarintBytes(w, headerKeys[i]!);
    writeVarintBytes(w, h.value);
  });
  return sizeOfVarint(bodyBytes) + bodyBytes;
}

function writeVarintBytes(w: Writer, b: Buffer | null | undefined): void {
  if (b == null) w.varint(-1);
  else w.varint(b.length).raw(b);
}
