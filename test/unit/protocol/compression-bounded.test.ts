// decompressChunks: every codec streams its output in bounded chunks, stops when the sink
// says so, refuses output beyond the bound and anything that is not a valid stream.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  CompressionError,
  CompressionType,
  compress,
  decompressChunks,
  type CompressOptions,
} from '../../../protocol/compression/index.ts';

const CODECS: [CompressionType, CompressOptions][] = [
  [CompressionType.Gzip, {}],
  [CompressionType.Snappy, { snappyFraming: 'xerial' }],
  [CompressionType.Snappy, { snappyFraming: 'raw' }],
  [CompressionType.Lz4, {}],
  [CompressionType.Zstd, {}],
];
const name = (type: CompressionType, o: CompressOptions): string =>
  `${CompressionType[type]}${o.snappyFraming ? ` (${o.snappyFraming})` : ''}`;

async function collect(type: CompressionType, data: Buffer, max = 1 << 30): Promise<{ out: Buffer; largestChunk: number }> {
  const parts: Buffer[] = [];
  let largestChunk = 0;
  await decompressChunks(
    type,
    data,
    (chunk) => {
      parts.push(Buffer.from(chunk)); // chunks may be reused after the call
      largestChunk = Math.max(largestChunk, chunk.length);
      return true;
    },
    max,
  );
  return { out: Buffer.concat(parts), largestChunk };
}

async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof CompressionError, String(err));
    return err.kind;
  }
  return 'ok';
}

describe('bounded streaming decompression', () => {
  for (const [type, options] of CODECS) {
    describe(name(type, options), () => {
      it('streams back exactly what was compressed', async () => {
        await fc.assert(
          fc.asyncProperty(fc.uint8Array({ maxLength: 200_000 }), fc.nat(3), async (bytes, repeat) => {
            const data = Buffer.concat(Array.from({ length: repeat + 1 }, () => Buffer.from(bytes)));
            if (data.length === 0) return;
            const { out } = await collect(type, await compress(type, data, options));
            assert.ok(out.equals(data));
          }),
          { numRuns: 25 },
        );
      });

      it('holds at most one chunk of a large output and stops when the sink says so', async () => {
        const data = Buffer.alloc(8 * 1024 * 1024, 7);
        const compressed = await compress(type, data, options);
        let seen = 0;
        let calls = 0;
        let largest = 0;
        await decompressChunks(
          type,
          compressed,
          (chunk) => {
            seen += chunk.length;
            largest = Math.max(largest, chunk.length);
            return ++calls < 2;
          },
          1 << 30,
        );
        assert.equal(calls, type === CompressionType.Snappy && options.snappyFraming === 'raw' ? 1 : 2);
        assert.ok(seen < data.length || calls === 1, `read ${seen} bytes after being told to stop`);
        if (type !== CompressionType.Snappy || options.snappyFraming !== 'raw')
          assert.ok(largest <= 4 * 1024 * 1024, `chunk of ${largest} bytes`);
      });

      it('refuses output beyond the bound as too-large', async () => {
        const compressed = await compress(type, Buffer.alloc(2 * 1024 * 1024), options);
        assert.equal(await kindOf(decompressChunks(type, compressed, () => true, 1024 * 1024)), 'too-large');
      });

      it('refuses empty, garbage and truncated payloads as corrupt', async () => {
        assert.equal(await kindOf(decompressChunks(type, Buffer.alloc(0), () => true, 1 << 20)), 'corrupt');
        assert.equal(
          await kindOf(decompressChunks(type, Buffer.from('plainly not compressed, whatever the codec'), () => true, 1 << 20)),
          'corrupt',
        );
        const compressed = await compress(
          type,
          Buffer.from('some records, long enough to compress into a few blocks '.repeat(50)),
          options,
        );
        assert.equal(await kindOf(decompressChunks(type, compressed.subarray(0, compressed.length - 5), () => true, 1 << 20)), 'corrupt');
      });
    });
  }

  it('a 200 KB gzip bomb stops at the bound without inflating 200 MiB', async function () {
    this.timeout(20_000);
    const bomb = await compress(CompressionType.Gzip, Buffer.alloc(200 * 1024 * 1024), { level: 9 });
    assert.ok(bomb.length < 300 * 1024);
    let seen = 0;
    const started = Date.now();
    assert.equal(
      await kindOf(
        decompressChunks(
          CompressionType.Gzip,
          bomb,
          (c) => {
            seen += c.length;
            return true;
          },
          4 * 1024 * 1024,
        ),
      ),
      'too-large',
    );
    assert.ok(seen <= 4 * 1024 * 1024);
    assert.ok(Date.now() - started < 2000);
  });
});
