// Kafka wire primitives (protocol.html "Protocol Primitive Types").
//
// How 64-bit values are carried: int64 fields (offsets, timestamps, producer ids) are
// `bigint` at the wire edge, in every generated message type. Inside the broker offsets are
// JS numbers; code crossing that edge converts with `toSafeNumber`, which refuses values
// beyond 2^53 instead of silently rounding them.

// The global `Buffer` is an accessor property: imported, the hot paths skip a getter call.
import { Buffer } from 'node:buffer';

export class DecodeError extends Error {
  override name = 'DecodeError';
}

export class EncodeError extends Error {
  override name = 'EncodeError';
}

export function toSafeNumber(value: bigint, what = 'int64'): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`${what} ${value} is outside the safe integer range`);
  return n;
}

const UUID_BYTES = 16;
/** Kafka's bound on every string, compact ones included. */
export const MAX_STRING_BYTES = 0x7fff;
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

// int64 values cross to and from bigint through one BigInt64Array element, read or written
// as two big-endian 32-bit words: DataView's getBigInt64/setBigInt64 cost about twice as much.
const INT64 = new BigInt64Array(1);
const INT64_WORDS = new Uint32Array(INT64.buffer);
const HIGH_WORD = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LOW_WORD = 1 - HIGH_WORD;

/** Kafka prints a Uuid as base64url without padding; we carry it in that form. */
export function uuidToString(bytes: Buffer): string {
  return bytes.toString('base64url');
}

export function uuidToBytes(uuid: string): Buffer {
  const bytes = Buffer.from(uuid, 'base64url');
  if (bytes.length !== UUID_BYTES) throw new EncodeError(`invalid uuid ${uuid}`);
  return bytes;
}

/**
 * Reads primitives from a Buffer range. Every length and count is checked against the
 * bytes that remain before anything is allocated, so a hostile length can cost at most
 * a DecodeError.
 */
export class Reader {
  offset: number;
  /** Where reading stops; narrowed to one tagged field while that field is read. */
  end: number;
  // DataView accessors are several times faster than Buffer's readInt*BE / readBigInt64BE.
  private readonly view: DataView;
  // Slices are made from the backing memory directly: Buffer#subarray reads the `buffer`
  // and `byteOffset` getters each time, which cost more than making the slice.
  private readonly memory: ArrayBufferLike;
  private readonly base: number;

  constructor(
    readonly buf: Buffer,
    offset = 0,
    end = buf.length,
  ) {
    this.offset = offset;
    this.end = end;
    this.memory = buf.buffer;
    this.base = buf.byteOffset;
    this.view = new DataView(this.memory, this.base, buf.byteLength);
  }

  remaining(): number {
    return this.end - this.offset;
  }

  private need(n: number, what: string): number {
    if (n < 0 || this.offset + n > this.end) {
      throw new DecodeError(`${what}: need ${n} bytes at ${this.offset}, ${this.remaining()} remain`);
    }
    const at = this.offset;
    this.offset += n;
    return at;
  }

  /**
   * Takes the next `n` bytes, refusing them if fewer remain, and returns where they start.
   * A run of fixed-size fields is taken at once and read with the get* methods.
   */
  take(n: number): number {
    return this.need(n, 'fields');
  }

  getInt8(at: number): number {
    return this.view.getInt8(at);
  }
  getInt16(at: number): number {
    return this.view.getInt16(at);
  }
  getUint16(at: number): number {
    return this.view.getUint16(at);
  }
  getInt32(at: number): number {
    return this.view.getInt32(at);
  }
  getInt64(at: number): bigint {
    INT64_WORDS[HIGH_WORD] = this.view.getUint32(at);
    INT64_WORDS[LOW_WORD] = this.view.getUint32(at + 4);
    return INT64[0]!;
  }
  getFloat64(at: number): number {
    return this.view.getFloat64(at);
  }
  getBoolean(at: number): boolean {
    return this.view.getInt8(at) !== 0;
  }
  getUuid(at: number): string {
    return this.buf.toString('base64url', at, at + UUID_BYTES);
  }

  int8(): number {
    return this.getInt8(this.need(1, 'int8'));
  }
  uint8(): number {
    return this.view.getUint8(this.need(1, 'uint8'));
  }
  int16(): number {
    return this.getInt16(this.need(2, 'int16'));
  }
  uint16(): number {
    return this.getUint16(this.need(2, 'uint16'));
  }
  int32(): number {
    return this.getInt32(this.need(4, 'int32'));
  }
  uint32(): number {
    return this.view.getUint32(this.need(4, 'uint32'));
  }
  int64(): bigint {
    return this.getInt64(this.need(8, 'int64'));
  }
  float64(): number {
    return this.getFloat64(this.need(8, 'float64'));
  }

  boolean(): boolean {
    return this.getBoolean(this.need(1, 'boolean'));
  }

  uuid(): string {
    return this.getUuid(this.need(UUID_BYTES, 'uuid'));
  }

  /** Unsigned varint of at most 5 bytes (32 bits). */
  uvarint(): number {
    const buf = this.buf;
    const end = this.end;
    let off = this.offset;
    // Lengths, counts and tags are almost always one or two bytes: their 7-bit groups are
    // joined with int32 arithmetic; only a fifth byte can exceed it.
    let value = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (off >= end) throw new DecodeError('uvarint: truncated');
      const b = buf[off++]!;
      value |= (b & 0x7f) << shift;
      if (b < 0x80) {
        this.offset = off;
        return value;
      }
    }
    if (off >= end) throw new DecodeError('uvarint: truncated');
    const last = buf[off++]!;
    if (last >= 0x80) throw new DecodeError('uvarint: longer than 5 bytes');
    if (last > 0x0f) throw new DecodeError('uvarint: exceeds 32 bits');
    this.offset = off;
    return value + last * 2 ** 28;
  }

  /** Zigzag varint of at most 5 bytes (int32). */
  varint(): number {
    const u = this.uvarint();
    return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
  }

  /** Unsigned varlong of at most 10 bytes. */
  uvarlong(): bigint {
    let value = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.offset >= this.end) throw new DecodeError('uvarlong: truncated');
      const b = this.buf[this.offset++]!;
      value |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) {
        if (value > 0xffffffffffffffffn) throw new DecodeError('uvarlong: exceeds 64 bits');
        return value;
      }
    }
    throw new DecodeError('uvarlong: longer than 10 bytes');
  }

  /** Zigzag varlong of at most 10 bytes (int64). */
  varlong(): bigint {
    const u = this.uvarlong();
    return (u >> 1n) ^ -(u & 1n);
  }

  /** Reads n raw bytes as a slice of the underlying buffer (no copy). */
  raw(n: number): Buffer {
    const at = this.need(n, 'bytes');
    return Buffer.from(this.memory, this.base + at, n);
  }

  private text(n: number): string {
    const at = this.need(n, 'string');
    const text = this.buf.toString('utf8', at, at + n);
    // Invalid UTF-8 decodes to U+FFFD, three bytes each: a string of such bytes can come out
    // longer than a string may be, and no response could carry it back.
    if (n > MAX_STRING_BYTES / 3 && Buffer.byteLength(text, 'utf8') > MAX_STRING_BYTES) {
      throw new DecodeError(`string: ${n} bytes that are not UTF-8 decode to more than ${MAX_STRING_BYTES}`);
    }
    return text;
  }

  string(): string {
    const n = this.int16();
    if (n < 0) throw new DecodeError(`string: negative length ${n}`);
    return this.text(n);
  }

  nullableString(): string | null {
    const n = this.int16();
    if (n === -1) return null;
    if (n < 0) throw new DecodeError(`string: negative length ${n}`);
    return this.text(n);
  }

  compactString(): string {
    const n = this.uvarint() - 1;
    if (n < 0) throw new DecodeError('compact string: null where not nullable');
    return this.compactText(n);
  }

  compactNullableString(): string | null {
    const n = this.uvarint() - 1;
    return n < 0 ? null : this.compactText(n);
  }

  // Kafka caps every string at 32767 bytes, compact ones included.
  private compactText(n: number): string {
    if (n > MAX_STRING_BYTES) throw new DecodeError(`string: length ${n} exceeds ${MAX_STRING_BYTES}`);
    return this.text(n);
  }

  bytes(): Buffer {
    const n = this.int32();
    if (n < 0) throw new DecodeError(`bytes: negative length ${n}`);
    return this.raw(n);
  }

  nullableBytes(): Buffer | null {
    const n = this.int32();
    if (n === -1) return null;
    if (n < 0) throw new DecodeError(`bytes: negative length ${n}`);
    return this.raw(n);
  }

  compactBytes(): Buffer {
    const n = this.uvarint() - 1;
    if (n < 0) throw new DecodeError('compact bytes: null where not nullable');
    return this.raw(n);
  }

  compactNullableBytes(): Buffer | null {
    const n = this.uvarint() - 1;
    return n < 0 ? null : this.raw(n);
  }

  /**
   * An array count (int32, -1 for null). Each element takes at least `minElementBytes`,
   * so a count the remaining bytes cannot hold is refused before any allocation.
   */
  arrayLength(minElementBytes = 1): number {
    const n = this.int32();
    if (n < -1) throw new DecodeError(`array: negative length ${n}`);
    this.checkCount(n, minElementBytes);
    return n;
  }

  /** A compact array count (unsigned varint N+1, 0 for null); -1 means null. */
  compactArrayLength(minElementBytes = 1): number {
    const n = this.uvarint() - 1;
    this.checkCount(n, minElementBytes);
    return n;
  }

  private checkCount(n: number, minElementBytes: number): void {
    if (n > 0 && n * minElementBytes > this.remaining()) {
      throw new DecodeError(`array: ${n} elements cannot fit in ${this.remaining()} bytes`);
    }
  }

  /**
   * Reads a tagged-field section. `read` decodes a tag it recognises into `target` and
   * returns true, with this reader bounded to that field; unknown tags are skipped.
   */
  taggedFields(): void;
  taggedFields<T>(read: TaggedFieldReader<T>, target: T, version: number): void;
  taggedFields<T>(read?: TaggedFieldReader<T>, target?: T, version = 0): void {
    if (this.offset < this.end && this.buf[this.offset] === 0) {
      this.offset++;
      return;
    }
    const count = this.uvarint();
    this.checkCount(count, 2);
    let lastTag = -1;
    for (let i = 0; i < count; i++) {
      const tag = this.uvarint();
      if (tag <= lastTag) throw new DecodeError(`tagged fields: tag ${tag} out of order`);
      lastTag = tag;
      const size = this.uvarint();
      const at = this.need(size, 'tagged field');
      if (read === undefined) continue;
      const end = this.end;
      this.offset = at;
      this.end = at + size;
      if (read(tag, this, target as T, version) && this.offset !== this.end) {
        throw new DecodeError(`tagged field ${tag}: ${this.end - this.offset} bytes left over`);
      }
      this.offset = at + size;
      this.end = end;
    }
  }
}

/** Decodes tagged field `tag` from `r` into `target`; false for a tag it does not know. */
export type TaggedFieldReader<T> = (tag: number, r: Reader, target: T, version: number) => boolean;

const CHUNK_BYTES = 16 * 1024;
/**
 * Byte fields at least this large (record batches, in practice) are kept as references
 * instead of being copied. Below it a copy costs less than another chunk: a Buffer view for
 * the bytes before it and one more socket write, about 150 ns together. Encoding and sending
 * a 1 MiB fetch response of 1,024 partitions over loopback took 650 us of CPU with its 1 KiB
 * batches by reference and 510 us with them copied (scripts/bench/protocol.ts); at 4 KiB
 * references and copies cost alike.
 */
export const ZERO_COPY_BYTES = 4096;
// Names (topics, groups, hosts) are short and almost always ASCII: measured and copied by
// a loop here they cost less than a call into Buffer's UTF-8 codec.
const SHORT_STRING = 64;

/** Bytes of `v` as an unsigned varint. */
export function sizeOfUvarint(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

/** The UTF-8 length of a string. */
export function utf8Length(v: string): number {
  const n = v.length;
  if (n > SHORT_STRING) return Buffer.byteLength(v, 'utf8');
  for (let i = 0; i < n; i++) {
    if (v.charCodeAt(i) >= 0x80) return Buffer.byteLength(v, 'utf8');
  }
  return n;
}

/** The longest prefix of `v` that takes at most `maxBytes` in UTF-8, cut between characters. */
export function utf8Prefix(v: string, maxBytes: number): string {
  if (utf8Length(v) <= maxBytes) return v;
  const bytes = Buffer.from(v, 'utf8');
  let end = maxBytes;
  // A continuation byte (10xxxxxx) is inside a character: back up to the character's start.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end);
}

/** Bytes of a compact (flexible) string: an unsigned varint length+1, then UTF-8. */
export function sizeOfCompactString(v: string): number {
  const n = utf8Length(v);
  return sizeOfUvarint(n + 1) + n;
}

const FOOTPRINT_REFERENCE = 2 ** 32;

// Kept out of line so that the writers stay small enough to be inlined into the codecs.
function outOfRange(type: string, v: number): never {
  throw new EncodeError(`${type} out of range: ${v}`);
}

/**
 * What a byte field of `length` costs the Writer, as a footprint: one number holding the
 * bytes copied into its chunks plus FOOTPRINT_REFERENCE for each field kept by reference
 * (a field of ZERO_COPY_BYTES or more, which becomes a chunk of its own). Footprints add up
 * like sizes, so a message's footprint is the sum of its fields', and Writer.reserve takes
 * it whole. A message is below 2^31 bytes, so the two parts never overlap and the sum stays
 * exact.
 */
export function footprintOfBytes(length: number): number {
  return length >= ZERO_COPY_BYTES ? FOOTPRINT_REFERENCE : length;
}

/**
 * Where a Writer gets the memory of its chunks when not from Buffer.allocUnsafe: a source
 * that hands out buffers it takes back once the written bytes are no longer referenced
 * (a response's, once the socket has sent them).
 */
export interface ChunkMemory {
  /** A buffer of exactly `size` bytes, its contents undefined. */
  take(size: number): Buffer;
}

/**
 * Writes primitives into pooled chunks. Large byte fields (record batches) are appended
 * by reference, so encoding a FetchResponse does not copy its records. A message codec
 * reserves its footprint first, so a message of any size is written into one chunk, and
 * its chunk list is allocated once.
 */
export class Writer {
  private chunks: Buffer[] = [];
  private count = 0;
  private buf: Buffer;
  private view: DataView;
  // The chunk's backing memory: sealed chunks are made from it directly, as in Reader.
  private memory: ArrayBufferLike;
  private base: number;
  private pos = 0;
  private start = 0;
  private total = 0;

  /**
   * `chunkMemory`: where chunks come from. A fresh buffer of a message's size costs more
   * than writing the message into it (its pages are faulted in on first write: about
   * 100 ns per KiB against 28 for the copy), so a server encoding large responses passes
   * memory it reuses.
   */
  constructor(
    initialBytes = 256,
    private readonly chunkMemory: ChunkMemory | null = null,
  ) {
    this.buf = Buffer.allocUnsafe(initialBytes);
    this.memory = this.buf.buffer;
    this.base = this.buf.byteOffset;
    this.view = new DataView(this.memory, this.base, this.buf.length);
  }

  get length(): number {
    return this.total + this.pos - this.start;
  }

  /**
   * Makes room for a footprint (footprintOfBytes): its bytes in the current chunk, allocating
   * exactly that many if it has less, and its references in the chunk list.
   */
  reserve(footprint: number): void {
    const references = Math.floor(footprint / FOOTPRINT_REFERENCE);
    if (references > 0) this.reserveChunks(2 * references + 2);
    const n = footprint - references * FOOTPRINT_REFERENCE;
    if (this.pos + n <= this.buf.length) return;
    this.seal();
    this.use(this.allocate(n));
  }

  private allocate(n: number): Buffer {
    return this.chunkMemory === null ? Buffer.allocUnsafe(n) : this.chunkMemory.take(n);
  }

  // Growing the chunk list an entry at a time costs more than filling it. Each reference is
  // followed by at most one chunk of copied bytes, and one chunk may precede them all.
  private reserveChunks(entries: number): void {
    if (this.count + entries <= this.chunks.length) return;
    const chunks = new Array<Buffer>(this.count + entries);
    for (let i = 0; i < this.count; i++) chunks[i] = this.chunks[i]!;
    this.chunks = chunks;
  }

  // The check stays small enough to be inlined into every writer; growing is kept apart.
  private ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n);
  }

  private grow(n: number): void {
    this.seal();
    this.use(this.allocate(Math.max(n, CHUNK_BYTES, this.buf.length)));
  }

  private use(buf: Buffer): void {
    this.buf = buf;
    this.memory = buf.buffer;
    this.base = buf.byteOffset;
    this.view = new DataView(this.memory, this.base, buf.length);
    this.pos = 0;
    this.start = 0;
  }

  private seal(): void {
    if (this.pos > this.start) {
      this.chunks[this.count++] = Buffer.from(this.memory, this.base + this.start, this.pos - this.start);
      this.total += this.pos - this.start;
      this.start = this.pos;
    }
  }

  /**
   * Claims the next `n` bytes (growing first if the chunk lacks them) and returns where
   * they start. A run of fixed-size fields is claimed once and filled with the put*
   * methods, which check ranges as the sequential writers do.
   */
  claim(n: number): number {
    this.ensure(n);
    const at = this.pos;
    this.pos = at + n;
    return at;
  }

  // Values outside a type's range are refused rather than silently wrapped (int64 wraps
  // modulo 2^64, as BigInt.asIntN does).
  putInt8(at: number, v: number): void {
    if ((v << 24) >> 24 !== v) outOfRange('int8', v);
    this.view.setInt8(at, v);
  }
  putInt16(at: number, v: number): void {
    if ((v << 16) >> 16 !== v) outOfRange('int16', v);
    this.view.setInt16(at, v);
  }
  putUint16(at: number, v: number): void {
    if ((v & 0xffff) !== v) outOfRange('uint16', v);
    this.view.setUint16(at, v);
  }
  putInt32(at: number, v: number): void {
    if ((v | 0) !== v) outOfRange('int32', v);
    this.view.setInt32(at, v);
  }
  putInt64(at: number, v: bigint): void {
    INT64[0] = v;
    this.view.setUint32(at, INT64_WORDS[HIGH_WORD]!);
    this.view.setUint32(at + 4, INT64_WORDS[LOW_WORD]!);
  }
  putFloat64(at: number, v: number): void {
    this.view.setFloat64(at, v);
  }
  putBoolean(at: number, v: boolean): void {
    this.view.setInt8(at, v ? 1 : 0);
  }
  putUuid(at: number, v: string): void {
    this.buf.set(uuidToBytes(v), at);
  }

  int8(v: number): this {
    this.ensure(1);
    this.putInt8(this.pos, v);
    this.pos += 1;
    return this;
  }

  uint8(v: number): this {
    if ((v & 0xff) !== v) outOfRange('uint8', v);
    this.ensure(1);
    this.view.setUint8(this.pos, v);
    this.pos += 1;
    return this;
  }

  int16(v: number): this {
    this.ensure(2);
    this.putInt16(this.pos, v);
    this.pos += 2;
    return this;
  }

  uint16(v: number): this {
    this.ensure(2);
    this.putUint16(this.pos, v);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    this.ensure(4);
    this.putInt32(this.pos, v);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    if (v >>> 0 !== v) outOfRange('uint32', v);
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
    return this;
  }

  int64(v: bigint): this {
    this.ensure(8);
    this.putInt64(this.pos, v);
    this.pos += 8;
    return this;
  }
  float64(v: number): this {
    this.ensure(8);
    this.putFloat64(this.pos, v);
    this.pos += 8;
    return this;
  }
  boolean(v: boolean): this {
    return this.int8(v ? 1 : 0);
  }

  uuid(v: string): this {
    this.ensure(UUID_BYTES);
    this.putUuid(this.pos, v);
    this.pos += UUID_BYTES;
    return this;
  }

  uvarint(v: number): this {
    // Lengths, counts and tags are almost always below 128: one byte.
    if ((v & 0x7f) === v) {
      this.ensure(1);
      this.buf[this.pos++] = v;
      return this;
    }
    if (v >>> 0 !== v) outOfRange('uvarint', v);
    this.ensure(sizeOfUvarint(v));
    const buf = this.buf;
    let pos = this.pos;
    while (v >= 0x80) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
    this.pos = pos;
    return this;
  }

  varint(v: number): this {
    return this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  uvarlong(v: bigint): this {
    this.ensure(10);
    v = BigInt.asUintN(64, v);
    while (v >= 0x80n) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
    return this;
  }

  varlong(v: bigint): this {
    const n = BigInt.asIntN(64, v);
    return this.uvarlong((n << 1n) ^ (n >> 63n));
  }

  raw(b: Buffer): this {
    if (b.length >= ZERO_COPY_BYTES) {
      this.seal();
      this.chunks[this.count++] = b;
      this.total += b.length;
      return this;
    }
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  // Strings are encoded straight into the chunk, without an intermediate Buffer; `n` is
  // their UTF-8 length, equal to the string's length exactly when it is all ASCII.
  private text(v: string, n: number): this {
    this.ensure(n);
    if (n === v.length && n <= SHORT_STRING) {
      const buf = this.buf;
      const pos = this.pos;
      for (let i = 0; i < n; i++) buf[pos + i] = v.charCodeAt(i);
      this.pos = pos + n;
    } else {
      this.pos += this.buf.write(v, this.pos, n, 'utf8');
    }
    return this;
  }

  private textLength(v: string): number {
    const n = utf8Length(v);
    if (n > MAX_STRING_BYTES) throw new EncodeError(`string longer than ${MAX_STRING_BYTES} bytes`);
    return n;
  }

  string(v: string): this {
    const n = this.textLength(v);
    return this.int16(n).text(v, n);
  }

  nullableString(v: string | null): this {
    return v === null ? this.int16(-1) : this.string(v);
  }

  compactString(v: string): this {
    const n = this.textLength(v);
    return this.uvarint(n + 1).text(v, n);
  }

  compactNullableString(v: string | null): this {
    return v === null ? this.uvarint(0) : this.compactString(v);
  }

  bytes(v: Buffer): this {
    return this.int32(v.length).raw(v);
  }
  nullableBytes(v: Buffer | null): this {
    return v === null ? this.int32(-1) : this.int32(v.length).raw(v);
  }
  compactBytes(v: Buffer): this {
    return this.uvarint(v.length + 1).raw(v);
  }
  compactNullableBytes(v: Buffer | null): this {
    return v === null ? this.uvarint(0) : this.uvarint(v.length + 1).raw(v);
  }

  arrayLength(n: number): this {
    return this.int32(n);
  }
  compactArrayLength(n: number): this {
    return this.uvarint(n + 1);
  }

  /** Reserves an int32 to be filled in later (e.g. a length prefix). */
  reserveInt32(): (value: number) => void {
    this.ensure(4);
    const buf = this.buf;
    const at = this.pos;
    this.pos += 4;
    return (value) => {
      buf.writeInt32BE(value, at);
    };
  }

  /** The written bytes as chunks, suitable for a vectored socket write. */
  toChunks(): Buffer[] {
    this.seal();
    if (this.chunks.length !== this.count) this.chunks.length = this.count;
    return this.chunks;
  }

  toBuffer(): Buffer {
    const chunks = this.toChunks();
    const [only] = chunks;
    return chunks.length === 1 && only !== undefined ? only : Buffer.concat(chunks, this.total);
  }
}
