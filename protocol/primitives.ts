// Kafka wire primitives (protocol.html "Protocol Primitive Types").
//
// How 64-bit values are carried: int64 fields (offsets, timestamps, producer ids) are
// `bigint` at the wire edge, in every generated message type. Inside the broker offsets are
// JS numbers; code crossing that edge converts with `toSafeNumber`, which refuses values
// beyond 2^53 instead of silently rounding them.

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
const MAX_STRING_BYTES = 0x7fff;
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

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
  readonly end: number;
  // DataView accessors are several times faster than Buffer's readInt*BE / readBigInt64BE.
  private readonly view: DataView;

  constructor(
    readonly buf: Buffer,
    offset = 0,
    end = buf.length,
  ) {
    this.offset = offset;
    this.end = end;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
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

  int8(): number {
    return this.view.getInt8(this.need(1, 'int8'));
  }
  uint8(): number {
    return this.view.getUint8(this.need(1, 'uint8'));
  }
  int16(): number {
    return this.view.getInt16(this.need(2, 'int16'));
  }
  uint16(): number {
    return this.view.getUint16(this.need(2, 'uint16'));
  }
  int32(): number {
    return this.view.getInt32(this.need(4, 'int32'));
  }
  uint32(): number {
    return this.view.getUint32(this.need(4, 'uint32'));
  }
  int64(): bigint {
    return this.view.getBigInt64(this.need(8, 'int64'));
  }
  float64(): number {
    return this.view.getFloat64(this.need(8, 'float64'));
  }

  boolean(): boolean {
    return this.int8() !== 0;
  }

  uuid(): string {
    const at = this.need(UUID_BYTES, 'uuid');
    return uuidToString(this.buf.subarray(at, at + UUID_BYTES));
  }

  /** Unsigned varint of at most 5 bytes (32 bits). */
  uvarint(): number {
    let off = this.offset;
    // Lengths, counts and tags are almost always below 128: one byte.
    if (off < this.end) {
      const first = this.buf[off]!;
      if (first < 0x80) {
        this.offset = off + 1;
        return first;
      }
    }
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 5; i++) {
      if (off >= this.end) throw new DecodeError('uvarint: truncated');
      const b = this.buf[off++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (value > 0xffffffff) throw new DecodeError('uvarint: exceeds 32 bits');
        this.offset = off;
        return value;
      }
      scale *= 128;
    }
    throw new DecodeError('uvarint: longer than 5 bytes');
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
    return this.buf.subarray(at, at + n);
  }

  private text(n: number): string {
    const at = this.need(n, 'string');
    return this.buf.toString('utf8', at, at + n);
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
   * Reads a tagged-field section. `known` decodes a tag it recognises from a Reader bounded
   * to that field and returns true; unknown tags are skipped.
   */
  taggedFields(known?: (tag: number, field: Reader) => boolean): void {
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
      if (known) {
        const field = new Reader(this.buf, at, at + size);
        if (known(tag, field) && field.offset !== field.end) {
          throw new DecodeError(`tagged field ${tag}: ${field.end - field.offset} bytes left over`);
        }
      }
    }
  }
}

const CHUNK_BYTES = 16 * 1024;
// Byte fields at least this large (record batches, in practice) are kept as references
// instead of being copied; below it a copy costs less than another chunk in the writev.
const ZERO_COPY_BYTES = 1024;

/**
 * Writes primitives into pooled chunks. Large byte fields (record batches) are appended
 * by reference, so encoding a FetchResponse does not copy its records.
 */
export class Writer {
  private readonly chunks: Buffer[] = [];
  private buf: Buffer;
  private view: DataView;
  private pos = 0;
  private start = 0;
  private total = 0;

  constructor(initialBytes = 256) {
    this.buf = Buffer.allocUnsafe(initialBytes);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }

  get length(): number {
    return this.total + this.pos - this.start;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    this.seal();
    this.buf = Buffer.allocUnsafe(Math.max(n, CHUNK_BYTES, this.buf.length));
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.pos = 0;
    this.start = 0;
  }

  private seal(): void {
    if (this.pos > this.start) {
      this.chunks.push(this.buf.subarray(this.start, this.pos));
      this.total += this.pos - this.start;
      this.start = this.pos;
    }
  }

  // Values outside a type's range are refused rather than silently wrapped (int64 wraps
  // modulo 2^64, as BigInt.asIntN does).
  int8(v: number): this {
    if ((v << 24) >> 24 !== v) throw new EncodeError(`int8 out of range: ${v}`);
    this.ensure(1);
    this.view.setInt8(this.pos, v);
    this.pos += 1;
    return this;
  }

  uint8(v: number): this {
    if ((v & 0xff) !== v) throw new EncodeError(`uint8 out of range: ${v}`);
    this.ensure(1);
    this.view.setUint8(this.pos, v);
    this.pos += 1;
    return this;
  }

  int16(v: number): this {
    if ((v << 16) >> 16 !== v) throw new EncodeError(`int16 out of range: ${v}`);
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
    return this;
  }

  uint16(v: number): this {
    if ((v & 0xffff) !== v) throw new EncodeError(`uint16 out of range: ${v}`);
    this.ensure(2);
    this.view.setUint16(this.pos, v);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    if ((v | 0) !== v) throw new EncodeError(`int32 out of range: ${v}`);
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    if (v >>> 0 !== v) throw new EncodeError(`uint32 out of range: ${v}`);
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
    return this;
  }

  int64(v: bigint): this {
    this.ensure(8);
    this.view.setBigInt64(this.pos, v);
    this.pos += 8;
    return this;
  }
  float64(v: number): this {
    this.ensure(8);
    this.view.setFloat64(this.pos, v);
    this.pos += 8;
    return this;
  }
  boolean(v: boolean): this {
    return this.int8(v ? 1 : 0);
  }

  uuid(v: string): this {
    return this.raw(uuidToBytes(v));
  }

  uvarint(v: number): this {
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new EncodeError(`uvarint out of range: ${v}`);
    this.ensure(5);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
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
      this.chunks.push(b);
      this.total += b.length;
      return this;
    }
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  // Strings are encoded straight into the chunk, without an intermediate Buffer.
  private text(v: string, n: number): this {
    this.ensure(n);
    this.pos += this.buf.write(v, this.pos, n, 'utf8');
    return this;
  }

  private textLength(v: string): number {
    const n = Buffer.byteLength(v, 'utf8');
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
    return v === null ? this.int32(-1) : this.bytes(v);
  }
  compactBytes(v: Buffer): this {
    return this.uvarint(v.length + 1).raw(v);
  }
  compactNullableBytes(v: Buffer | null): this {
    return v === null ? this.uvarint(0) : this.compactBytes(v);
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
    return this.chunks;
  }

  toBuffer(): Buffer {
    const chunks = this.toChunks();
    const [only] = chunks;
    return chunks.length === 1 && only !== undefined ? only : Buffer.concat(chunks, this.total);
  }
}
