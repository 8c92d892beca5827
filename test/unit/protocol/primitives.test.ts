import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  DecodeError,
  EncodeError,
  Reader,
  Writer,
  ZERO_UUID,
  toSafeNumber,
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

  it('toSafeNumber refuses int64 values beyond 2^53', () => {
    assert.equal(toSafeNumber(2n ** 53n - 1n), 2 ** 53 - 1);
    assert.throws(() => toSafeNumber(2n ** 53n));
  });
});
