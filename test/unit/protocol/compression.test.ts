import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import * as lz4 from 'lz4-napi';
import * as snappy from 'snappy';
import { compress as zstdOneShot } from 'zstd-napi';
import {
  compress,
  CompressionError,
  CompressionType,
  decompress,
  isXerialFramed,
  LZ4_BLOCK_BYTES,
  xxhash32,
} from '../../../protocol/compression/index.ts';
import { flipBits } from '../../helpers/bytes.ts';

const ALL = [CompressionType.None, CompressionType.Gzip, CompressionType.Snappy, CompressionType.Lz4, CompressionType.Zstd];

/** Data that compresses somewhat: runs of a small alphabet with random bytes mixed in. */
const payload = fc.oneof(
  fc.uint8Array({ maxLength: 2000 }).map((a) => Buffer.from(a)),
  fc.tuple(fc.integer({ min: 0, max: 300_000 }), fc.integer()).map(([n, seed]) => {
    const b = Buffer.allocUnsafe(n);
    let s = seed >>> 0;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      b[i] = (s >>> 24) % 4 === 0 ? s & 0xff : 97 + ((s >>> 16) % 6);
    }
    return b;
  }),
);

async function rejects(p: Promise<unknown>, kind: CompressionError['kind']): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof CompressionError && err.kind === kind);
}

/** A xerial stream framed by hand with the given chunk size. */
function xerial(data: Buffer, chunkBytes: number): Buffer {
  const parts: Buffer[] = [Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1])];
  for (let at = 0; at < data.length; at += chunkBytes) {
    const chunk = snappy.compressSync(data.subarray(at, at + chunkBytes));
    const length = Buffer.alloc(4);
    length.writeInt32BE(chunk.length);
    parts.push(length, chunk);
  }
  return Buffer.concat(parts);
}

describe('compression', () => {
  it('round-trips every codec', async () => {
    await fc.assert(
      fc.asyncProperty(payload, fc.constantFrom(...ALL), async (data, type) => {
        const packed = await compress(type, data);
        assert.deepEqual(await decompress(type, packed), data);
      }),
      { numRuns: 60 },
    );
  });

  it('round-trips empty input with every codec', async () => {
    for (const type of ALL) assert.equal((await decompress(type, await compress(type, Buffer.alloc(0)))).length, 0);
  });

  it('refuses an unknown codec id', async () => {
    await rejects(compress(5 as CompressionType, Buffer.from('x')), 'unsupported');
    await rejects(decompress(7 as CompressionType, Buffer.from('x')), 'unsupported');
  });

  describe('decompression bound', () => {
    const bomb = Buffer.alloc(4 * 1024 * 1024);
    for (const type of ALL) {
      it(`refuses ${CompressionType[type]} output beyond the bound with kind too-large`, async () => {
        const packed = await compress(type, bomb);
        await rejects(decompress(type, packed, 1024 * 1024), 'too-large');
        assert.equal((await decompress(type, packed, bomb.length)).length, bomb.length);
      });
    }

    it('refuses zstd frames without a content size beyond the bound while streaming', async () => {
      const packed = zstdOneShot(bomb, { contentSizeFlag: false });
      await rejects(decompress(CompressionType.Zstd, packed, 100_000), 'too-large');
      assert.equal((await decompress(CompressionType.Zstd, packed, bomb.length)).length, bomb.length);
    });

    it('refuses raw snappy by its declared length before inflating', async () => {
      await rejects(decompress(CompressionType.Snappy, await snappy.compress(bomb), 1000), 'too-large');
    });
  });

  describe('gzip', () => {
    it('reads gzip written by another encoder (level 9, several members)', async () => {
      const data = Buffer.from('kafka '.repeat(5000));
      const two = Buffer.concat([gzipSync(data.subarray(0, 100), { level: 9 }), gzipSync(data.subarray(100), { level: 1 })]);
      assert.deepEqual(await decompress(CompressionType.Gzip, two), data);
    });

    it('reports garbage as corrupt', async () => {
      await rejects(decompress(CompressionType.Gzip, Buffer.from('not gzip at all')), 'corrupt');
      const packed = await compress(CompressionType.Gzip, Buffer.from('hello '.repeat(100)));
      await rejects(decompress(CompressionType.Gzip, packed.subarray(0, packed.length - 6)), 'corrupt');
    });
  });

  describe('snappy', () => {
    const data = Buffer.from(Array.from({ length: 100_000 }, (_, i) => `${i % 997},`).join(''));

    it('writes the xerial framing the Java client writes, in 32 KiB chunks', async () => {
      const packed = await compress(CompressionType.Snappy, data);
      assert.ok(isXerialFramed(packed));
      assert.equal(packed.readInt32BE(8), 1);
      assert.equal(packed.readInt32BE(12), 1);
      let chunks = 0;
      let inflated = 0;
      for (let at = 16; at < packed.length; chunks++) {
        const length = packed.readInt32BE(at);
        inflated += snappy.uncompressSync(packed.subarray(at + 4, at + 4 + length), { asBuffer: true }).length;
        at += 4 + length;
      }
      assert.equal(chunks, Math.ceil(data.length / 32768));
      assert.equal(inflated, data.length);
    });

    it('writes raw snappy when asked (librdkafka style)', async () => {
      const packed = await compress(CompressionType.Snappy, data, { snappyFraming: 'raw' });
      assert.ok(!isXerialFramed(packed));
      assert.deepEqual(snappy.uncompressSync(packed, { asBuffer: true }), data);
    });

    it('reads xerial streams of any chunk size and raw blocks', async () => {
      for (const chunk of [1000, 8192, 32768, 65536]) {
        assert.deepEqual(await decompress(CompressionType.Snappy, xerial(data, chunk)), data);
      }
      assert.deepEqual(await decompress(CompressionType.Snappy, snappy.compressSync(data)), data);
    });

    it('reports truncated or corrupt streams as corrupt', async () => {
      const framed = xerial(data, 8192);
      await rejects(decompress(CompressionType.Snappy, framed.subarray(0, framed.length - 10)), 'corrupt');
      await rejects(decompress(CompressionType.Snappy, framed.subarray(0, 18)), 'corrupt');
      const raw = Buffer.from(snappy.compressSync(data));
      flipBits(raw, raw.length - 1, 0xff);
      raw[5] = 0xff;
      await rejects(decompress(CompressionType.Snappy, raw), 'corrupt');
    });
  });

  describe('lz4', () => {
    const data = Buffer.from(Array.from({ length: 50_000 }, (_, i) => `${(i * 31) % 1009};`).join(''));

    it('hashes with XXH32 (reference vectors)', () => {
      assert.equal(xxhash32(Buffer.alloc(0)), 0x02cc5d05);
      assert.equal(xxhash32(Buffer.from('a')), 0x550d7456);
      assert.equal(xxhash32(Buffer.from('abc')), 0x32d153ff);
      assert.equal(xxhash32(Buffer.from('Nobody inspects the spammish repetition')), 0xe2293b2f);
    });

    it('writes frames as Kafka does: 64 KiB independent blocks, no checksums, no content size', async () => {
      const packed = await compress(CompressionType.Lz4, data);
      assert.deepEqual([...packed.subarray(0, 7)], [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0x82]);
      let at = 7;
      let blocks = 0;
      for (;;) {
        const word = packed.readUInt32LE(at);
        at += 4;
        if (word === 0) break;
        assert.ok((word & 0x7fffffff) <= LZ4_BLOCK_BYTES);
        at += word & 0x7fffffff;
        blocks++;
      }
      assert.equal(at, packed.length);
      assert.equal(blocks, Math.ceil(data.length / LZ4_BLOCK_BYTES));
      assert.deepEqual(await lz4.decompressFrame(packed), data);
    });

    it('stores incompressible blocks uncompressed, flagged by the high bit', async () => {
      const noise = randomBytes(1000);
      const packed = await compress(CompressionType.Lz4, noise);
      assert.equal(packed.readUInt32LE(7), (noise.length | 0x80000000) >>> 0);
      assert.deepEqual(await decompress(CompressionType.Lz4, packed), noise);
    });

    it('writes and reads the broken descriptor checksum of message format v0 (KAFKA-3160)', async () => {
      const packed = await compress(CompressionType.Lz4, data, { lz4BrokenHeaderChecksum: true });
      assert.equal(packed[6], (xxhash32(packed.subarray(0, 6)) >>> 8) & 0xff);
      assert.notEqual(packed[6], 0x82);
      assert.deepEqual(await decompress(CompressionType.Lz4, packed), data);
    });

    it("rejects a descriptor checksum that is neither right nor Kafka's broken one", async () => {
      const packed = Buffer.from(await compress(CompressionType.Lz4, data));
      flipBits(packed, 6, 0x01);
      await rejects(decompress(CompressionType.Lz4, packed), 'corrupt');
    });

    it('reads frames from another writer (lz4_flex: 256 KiB blocks, with and without checksums)', async () => {
      const big = Buffer.concat([data, data, data, data]);
      for (const options of [undefined, { blockChecksums: true, contentChecksum: true }]) {
        assert.deepEqual(await decompress(CompressionType.Lz4, await lz4.compressFrame(big, options)), big);
      }
    });

    it('verifies block and content checksums when a frame has them', async () => {
      const packed = Buffer.from(await lz4.compressFrame(data, { blockChecksums: true, contentChecksum: true }));
      const corrupted = Buffer.from(packed);
      flipBits(corrupted, packed.length - 12, 0x10);
      await rejects(decompress(CompressionType.Lz4, corrupted), 'corrupt');
      const badContent = Buffer.from(packed);
      flipBits(badContent, packed.length - 1, 0x01);
      await rejects(decompress(CompressionType.Lz4, badContent), 'corrupt');
    });

    it('reports a frame claiming a preset dictionary as corrupt, as Kafka fails to decompress it', async () => {
      const packed = Buffer.from(await compress(CompressionType.Lz4, data));
      packed[4]! |= 0x01;
      await rejects(decompress(CompressionType.Lz4, packed), 'corrupt');
    });

    it('reads concatenated frames and skips skippable frames', async () => {
      const a = await compress(CompressionType.Lz4, data.subarray(0, 1000));
      const b = await compress(CompressionType.Lz4, data.subarray(1000));
      const skippable = Buffer.from([0x53, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3]);
      assert.deepEqual(await decompress(CompressionType.Lz4, Buffer.concat([a, skippable, b])), data);
    });

    it('reports truncation and bad block sizes as corrupt', async () => {
      const packed = await compress(CompressionType.Lz4, data);
      for (const cut of [3, 6, 9, 100, packed.length - 2]) {
        await rejects(decompress(CompressionType.Lz4, packed.subarray(0, cut)), 'corrupt');
      }
      const oversized = Buffer.from(packed);
      oversized.writeUInt32LE(LZ4_BLOCK_BYTES + 1, 7);
      await rejects(decompress(CompressionType.Lz4, oversized), 'corrupt');
      await rejects(decompress(CompressionType.Lz4, Buffer.from('garbage!')), 'corrupt');
    });

    it('refuses a frame whose declared content size exceeds the bound', async () => {
      const frame = Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x68, 0x40, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
      frame[14] = (xxhash32(frame.subarray(4, 14)) >>> 8) & 0xff;
      await rejects(decompress(CompressionType.Lz4, frame, 1024 * 1024), 'too-large');
    });
  });

  describe('zstd', () => {
    const data = Buffer.from(Array.from({ length: 40_000 }, (_, i) => `${i % 333}|`).join(''));

    it('reads frames with and without a content size, and several frames in a row', async () => {
      const withSize = zstdOneShot(data);
      const withoutSize = zstdOneShot(data, { contentSizeFlag: false, checksumFlag: true });
      assert.deepEqual(await decompress(CompressionType.Zstd, withSize), data);
      assert.deepEqual(await decompress(CompressionType.Zstd, withoutSize), data);
      assert.deepEqual(await decompress(CompressionType.Zstd, Buffer.concat([withSize, withoutSize])), Buffer.concat([data, data]));
    });

    it('reports truncated and corrupt frames as corrupt', async () => {
      const packed = zstdOneShot(data, { contentSizeFlag: false, checksumFlag: true });
      await rejects(decompress(CompressionType.Zstd, packed.subarray(0, packed.length - 5)), 'corrupt');
      const corrupted = Buffer.from(packed);
      flipBits(corrupted, packed.length - 2, 0x55);
      await rejects(decompress(CompressionType.Zstd, corrupted), 'corrupt');
      await rejects(decompress(CompressionType.Zstd, Buffer.from('not a zstd frame')), 'corrupt');
      // The decoder recovers for the next call after a failure.
      assert.deepEqual(await decompress(CompressionType.Zstd, packed), data);
    });
  });
});
