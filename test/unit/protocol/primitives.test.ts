import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  DecodeError,
  EncodeError,
  Reader,
  Writer,
  ZERO_UUID,
  ZERO_COPY_BYTES,
  footprintOfBytes,
  sizeOfCompactString,
  sizeOfUvarint,
  toSafeNumber,
  utf8Length,
  uuidToBytes,
  uuidToString,
} from '../../../protocol/primitives.ts';

function hex(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'hex');
}

function written(write: (w: Writer) => void): Buffer {
  const w = new Writer(8);
  write(w);
  return w.toBuffer();
}

describe('wire primitives', () => {
  it('fixed-width integers are big-endian', () => {
    const b = written((w) => w.int8(-1).int16(0x0102).int32(-2).int64(-3n).uint16(65535).uint32(0xfffffffe).float64(1.5).boolean(true));
    assert.deepEqual(b, hex('ff 0102 fffffffe fffffffffffffffd ffff fffffffe 3ff8000000000000 01'));
    const r = new Reader(b);
    assert.deepEqual(
      [r.int8(), r.int16(), r.int32(), r.int64(), r.uint16(), r.uint32(), r.float64(), r.boolean()],
      [-1, 0x0102, -2, -3n, 65535, 0xfffffffe, 1.5, true],
    );
    assert.equal(r.remaining(), 0);
  });

  it('unsigned varints use 7 bits per byte, low bits first', () => {
    assert.deepEqual(
      written((w) => w.uvarint(0)),
      hex('00'),
    );
    assert.deepEqual(
      written((w) => w.uvarint(300)),
      hex('ac02'),
    );
    assert.deepEqual(
      written((w) => w.uvarint(0xffffffff)),
      hex('ffffffff0f'),
    );
    assert.equal(new Reader(hex('ffffffff0f')).uvarint(), 0xffffffff);
    assert.throws(() => new Reader(hex('ffffffff1f')).uvarint(), DecodeError, 'more than 32 bits');
    assert.throws(() => new Reader(hex('80')).uvarint(), DecodeError, 'truncated');
    assert.throws(() => written((w) => w.uvarint(-1)), EncodeError);
  });

  it('zigzag varints and varlongs round-trip over their whole range', () => {
    assert.deepEqual(
      written((w) => w.varint(-1)),
      hex('01'),
    );
    assert.deepEqual(
      written((w) => w.varint(1)),
      hex('02'),
    );
    assert.deepEqual(
      written((w) => w.varlong(-(2n ** 63n))),
      hex('ffffffffffffffffff01'),
    );
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (v) => {
        const b = written((w) => w.varint(v));
        assert.ok(b.length <= 5);
        assert.equal(new Reader(b).varint(), v);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        const b = written((w) => w.varlong(v));
        assert.ok(b.length <= 10);
        assert.equal(new Reader(b).varlong(), v);
      }),
    );
  });

  it('strings: classic int16 length, compact uvarint length+1, null as -1 / 0', () => {
    assert.deepEqual(
      written((w) => w.string('ab')),
      hex('0002 6162'),
    );
    assert.deepEqual(
      written((w) => w.nullableString(null)),
      hex('ffff'),
    );
    assert.deepEqual(
      written((w) => w.compactString('ab')),
      hex('03 6162'),
    );
    assert.deepEqual(
      written((w) => w.compactNullableString(null)),
      hex('00'),
    );
    assert.equal(new Reader(hex('0003 e282ac')).string(), '€');
    assert.equal(new Reader(hex('00')).compactNullableString(), null);
    assert.throws(() => new Reader(hex('00')).compactString(), DecodeError);
    assert.throws(() => new Reader(hex('ffff')).string(), DecodeError);
  });

  it('strings longer than 32767 bytes are refused in both forms', () => {
    const long = 'x'.repeat(0x8000);
    assert.throws(() => written((w) => w.string(long)), EncodeError);
    assert.throws(() => written((w) => w.compactString(long)), EncodeError);
    const frame = Buffer.concat([written((w) => w.uvarint(0x8001)), Buffer.alloc(0x8000, 0x78)]);
    assert.throws(() => new Reader(frame).compactString(), DecodeError);
  });

  it('a string whose invalid UTF-8 decodes to more than 32767 bytes is refused; one that fits decodes', () => {
    const invalid = (n: number) => Buffer.concat([written((w) => w.int16(n)), Buffer.alloc(n, 0xff)]);
    assert.throws(() => new Reader(invalid(11_000)).string(), DecodeError);
    assert.equal(new Reader(invalid(10_922)).string(), '\ufffd'.repeat(10_922));
    const compact = Buffer.concat([written((w) => w.uvarint(20_001)), Buffer.alloc(20_000, 0x80)]);
    assert.throws(() => new Reader(compact).compactString(), DecodeError);
    const text = 'é'.repeat(16_000);
    assert.equal(new Reader(written((w) => w.string(text))).string(), text);
  });

  it('bytes are slices of the input, never copies', () => {
    const frame = hex('00000003 010203 04 aabbcc');
    const r = new Reader(frame);
    const a = r.bytes();
    const b = r.compactBytes();
    assert.deepEqual(a, hex('010203'));
    assert.deepEqual(b, hex('aabbcc'));
    assert.equal(a.buffer, frame.buffer);
    assert.equal(new Reader(hex('ffffffff')).nullableBytes(), null);
    assert.throws(() => new Reader(hex('fffffffe')).nullableBytes(), DecodeError);
    assert.throws(() => new Reader(hex('00000004 0102')).bytes(), DecodeError);
  });

  it("uuids are 16 bytes shown as base64url, like Kafka's Uuid.toString", () => {
    const bytes = hex('000102030405060708090a0b0c0d0e0f');
    const s = uuidToString(bytes);
    assert.equal(s, 'AAECAwQFBgcICQoLDA0ODw');
    assert.deepEqual(uuidToBytes(s), bytes);
    assert.equal(new Reader(Buffer.alloc(16)).uuid(), ZERO_UUID);
    assert.throws(() => uuidToBytes('short'), EncodeError);
  });

  it('array lengths are checked against the bytes that remain', () => {
    assert.equal(new Reader(hex('00000002 0000000100000002')).arrayLength(4), 2);
    assert.equal(new Reader(hex('ffffffff')).arrayLength(), -1);
    assert.throws(() => new Reader(hex('00000003 0000000100000002')).arrayLength(4), DecodeError);
    assert.throws(() => new Reader(hex('fffffffe')).arrayLength(), DecodeError);
    assert.equal(new Reader(hex('00')).compactArrayLength(), -1);
    assert.throws(() => new Reader(hex('ffffffff0f')).compactArrayLength(), DecodeError);
  });

  it('a reader never reads past its end even when the buffer continues', () => {
    const r = new Reader(hex('00000001 ff'), 0, 2);
    assert.throws(() => r.int32(), DecodeError);
    const bounded = new Reader(hex('0005 6162636465'), 0, 4);
    assert.throws(() => bounded.string(), DecodeError);
  });

  it('the writer keeps large byte fields by reference and fills reserved lengths', () => {
    const big = Buffer.alloc(10000, 1);
    const w = new Writer(16);
    const setLength = w.reserveInt32();
    w.int16(7).bytes(big).int8(9);
    setLength(w.length - 4);
    const chunks = w.toChunks();
    assert.ok(chunks.includes(big), 'the 10000-byte field is one of the chunks, uncopied');
    const all = Buffer.concat(chunks);
    assert.equal(all.length, 4 + 2 + 4 + 10000 + 1);
    assert.equal(all.readInt32BE(0), all.length - 4);
    assert.equal(all[all.length - 1], 9);
  });

  it('strings of any length and script are measured and written alike', () => {
    for (const v of ['', 'topic-1', 'x'.repeat(65), 'tópico', '€'.repeat(40), '\ud800', 'a\u{1f600}b']) {
      const n = Buffer.byteLength(v, 'utf8');
      assert.equal(utf8Length(v), n, JSON.stringify(v));
      assert.equal(sizeOfCompactString(v), sizeOfUvarint(n + 1) + n);
      assert.deepEqual(
        written((w) => w.compactString(v)),
        Buffer.concat([written((w) => w.uvarint(n + 1)), Buffer.from(v, 'utf8')]),
      );
      assert.equal(new Reader(written((w) => w.string(v))).string(), Buffer.from(v, 'utf8').toString('utf8'));
    }
  });

  it('unsigned varint sizes match what the writer writes', () => {
    for (const v of [0, 1, 127, 128, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 0xffffffff]) {
      assert.equal(written((w) => w.uvarint(v)).length, sizeOfUvarint(v), String(v));
      assert.equal(new Reader(written((w) => w.uvarint(v))).uvarint(), v);
    }
  });

  it('a run of fixed-size fields is claimed once and filled at offsets, as the sequential writers write it', () => {
    const sequential = written((w) => w.int32(-2).int16(7).int64(-3n).boolean(true).uuid(ZERO_UUID).float64(0.5).uint16(9).int8(-1));
    const w = new Writer(0);
    const at = w.claim(4 + 2 + 8 + 1 + 16 + 8 + 2 + 1);
    w.putInt32(at, -2);
    w.putInt16(at + 4, 7);
    w.putInt64(at + 6, -3n);
    w.putBoolean(at + 14, true);
    w.putUuid(at + 15, ZERO_UUID);
    w.putFloat64(at + 31, 0.5);
    w.putUint16(at + 39, 9);
    w.putInt8(at + 41, -1);
    assert.deepEqual(w.toBuffer(), sequential);
    assert.throws(() => new Writer().putInt32(0, 2 ** 31), EncodeError);
    assert.throws(() => new Writer().putInt16(0, 0x8000), EncodeError);

    const r = new Reader(sequential);
    const from = r.take(sequential.length);
    assert.deepEqual(
      [r.getInt32(from), r.getInt16(from + 4), r.getInt64(from + 6), r.getBoolean(from + 14), r.getUuid(from + 15)],
      [-2, 7, -3n, true, ZERO_UUID],
    );
    assert.deepEqual([r.getFloat64(from + 31), r.getUint16(from + 39), r.getInt8(from + 41)], [0.5, 9, -1]);
    assert.equal(r.remaining(), 0);
    assert.throws(() => new Reader(sequential, 0, 10).take(11), DecodeError);
  });

  it('a reserved footprint holds the copied bytes in one chunk and the large byte fields by reference', () => {
    const larger = ZERO_COPY_BYTES + 976;
    const records = [Buffer.alloc(larger, 1), Buffer.alloc(ZERO_COPY_BYTES, 2)];
    const small = Buffer.alloc(ZERO_COPY_BYTES - 1, 3);
    assert.equal(footprintOfBytes(small.length), small.length);
    const footprint = 3 * 4 + footprintOfBytes(records[0]!.length) + footprintOfBytes(records[1]!.length) + footprintOfBytes(small.length);
    const w = new Writer(0);
    w.reserve(footprint);
    w.bytes(records[0]!).bytes(small).bytes(records[1]!);
    const chunks = w.toChunks();
    assert.deepEqual(
      chunks.map((c) => c.length),
      [4, larger, 4 + small.length + 4, ZERO_COPY_BYTES],
    );
    assert.equal(chunks[1], records[0]);
    assert.equal(chunks[3], records[1]);
    assert.equal(chunks[0]!.buffer, chunks[2]!.buffer, 'the copied bytes share one allocation');
    assert.equal(chunks[2]!.byteOffset, chunks[0]!.byteOffset + 4);
    assert.equal(w.length, 4 + larger + 4 + small.length + 4 + ZERO_COPY_BYTES);
  });

  it('a writer given chunk memory writes its chunks there, and the same bytes as without it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.uint8Array({ maxLength: 6000 })), { maxLength: 40 }),
        fc.nat(70_000),
        (fields, reserved) => {
          const taken: Buffer[] = [];
          const memory = {
            take(size: number): Buffer {
              const b = Buffer.alloc(size, 0xee);
              taken.push(b);
              return b;
            },
          };
          const values: (number | Buffer)[] = fields.map((f) => (typeof f === 'number' ? f : Buffer.from(f)));
          const write = (w: Writer) => {
            w.reserve(reserved);
            for (const v of values) typeof v === 'number' ? w.int32(v) : w.bytes(v);
          };
          const plain = new Writer(0);
          write(plain);
          const pooled = new Writer(0, memory);
          write(pooled);
          assert.deepEqual(pooled.toBuffer(), plain.toBuffer());
          const fromMemory = (c: Buffer) => taken.some((t) => t.buffer === c.buffer);
          const copied = pooled.toChunks().filter((c) => !values.includes(c));
          assert.ok(copied.every(fromMemory), 'every chunk of copied bytes lies in memory the source handed out');
        },
      ),
    );
  });

  it('tagged fields are read bounded to their size; unknown tags are skipped', () => {
    // two tagged fields: tag 1 (int32 5), tag 3 (unknown, 2 bytes), then a trailing int8
    const frame = hex('02 01 04 00000005 03 02 aaaa 7f');
    const seen: Record<string, number> = {};
    const read = (tag: number, r: Reader, target: Record<string, number>) => {
      if (tag !== 1) return false;
      target.leader = r.int32();
      target.left = r.remaining();
      return true;
    };
    const r = new Reader(frame);
    r.taggedFields(read, seen, 0);
    assert.deepEqual(seen, { leader: 5, left: 0 }, 'the field ends at its size');
    assert.equal(r.int8(), 0x7f);
    const leftover = new Reader(hex('01 01 05 00000005 00'));
    assert.throws(() => leftover.taggedFields(read, {}, 0), DecodeError);
    assert.throws(() => new Reader(hex('02 03 00 01 00')).taggedFields(), DecodeError, 'tags out of order');
  });

  it('toSafeNumber refuses int64 values beyond 2^53', () => {
    assert.equal(toSafeNumber(2n ** 53n - 1n), 2 ** 53 - 1);
    assert.throws(() => toSafeNumber(2n ** 53n));
  });
});
