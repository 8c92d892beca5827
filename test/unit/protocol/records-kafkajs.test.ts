import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import * as lz4 from 'lz4-napi';
import * as snappy from 'snappy';
import { compress as zstdCompress, decompress as zstdDecompress } from 'zstd-napi';
import binding from 'zstd-napi/binding.js';
import {
  batchesIn,
  buildRecordBatch,
  CompressionType,
  readRecords,
  RECORD_BATCH_OVERHEAD,
  RecordBatch,
  type Record,
  type RecordHeader,
} from '../../../protocol/records/index.ts';
import { FIXTURES, messagesOf } from '../../fixtures/records/fixtures.ts';
import {
  kafkajsDecodeBatch,
  KafkajsCompression,
  type KafkajsMessage,
  kafkajsRecordBatch,
  withKafkajsCodec,
} from '../../fixtures/records/kafkajs.ts';

const fixture = (file: string): Buffer => readFileSync(new URL(`../../fixtures/records/${file}`, import.meta.url));

function headersOf(m: KafkajsMessage): RecordHeader[] {
  return Object.entries(m.headers ?? {}).flatMap(([key, v]) =>
    (Array.isArray(v) ? v : [v]).map((value) => ({ key, value: Buffer.from(value) })),
  );
}

function assertSameRecords(decoded: Record[], messages: KafkajsMessage[]): void {
  assert.equal(decoded.length, messages.length);
  decoded.forEach((r, i) => {
    const m = messages[i]!;
    assert.equal(r.offset, i);
    assert.equal(r.timestamp, m.timestamp);
    assert.deepEqual(r.key, m.key);
    assert.deepEqual(r.value, m.value);
    assert.deepEqual(r.headers, headersOf(m));
  });
}

const kafkajsMessages = fc
  .array(
    fc.record({
      key: fc.option(
        fc.uint8Array({ maxLength: 30 }).map((a) => Buffer.from(a)),
        { nil: null },
      ),
      value: fc.option(
        fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
        { nil: null },
      ),
      headers: fc.dictionary(
        fc.string({ minLength: 1, maxLength: 8 }),
        fc.uint8Array({ maxLength: 10 }).map((a) => Buffer.from(a)),
        { maxKeys: 3 },
      ),
      timestamp: fc.integer({ min: 1_000_000_000_000, max: 1_999_999_999_999 }),
    }),
    { minLength: 1, maxLength: 20 },
  )
  .map((ms) => ms.map((m) => ({ ...m, headers: { ...m.headers } })));

/** Codecs plugged into kafkajs, written with libraries independent of ours. */
const pluggedCodecs = {
  [KafkajsCompression.Snappy]: {
    compress: async (e: { buffer: Buffer }) => snappy.compress(e.buffer),
    decompress: async (b: Buffer) => snappy.uncompress(b, { asBuffer: true }) as Promise<Buffer>,
  },
  [KafkajsCompression.LZ4]: {
    compress: async (e: { buffer: Buffer }) => lz4.compressFrame(e.buffer),
    decompress: async (b: Buffer) => lz4.decompressFrame(b),
  },
  [KafkajsCompression.ZSTD]: {
    compress: async (e: { buffer: Buffer }) => zstdCompress(e.buffer, { contentSizeFlag: false }),
    decompress: async (b: Buffer) => zstdDecompress(b),
  },
};

function pluggedCodec(type: number) {
  const codec = pluggedCodecs[type];
  if (codec === undefined) throw new Error(`no plugged codec for kafkajs compression ${type}`);
  return codec;
}

describe('record batches written by kafkajs', () => {
  describe('captured fixtures', () => {
    for (const f of FIXTURES.filter((x) => x.kind === 'batch')) {
      it(`decodes ${f.file} (${f.writer}) record for record`, async () => {
        const bytes = fixture(f.file);
        const batches = [...batchesIn(bytes, true)];
        assert.equal(batches.length, 1);
        const batch = batches[0]!;
        assert.equal(batch.compression, { none: 0, gzip: 1, lz4: 3, zstd: 4 }[f.codec]);
        assert.equal(batch.producerId, f.producerId ?? -1n);
        assert.equal(batch.isTransactional, f.transactional ?? false);
        if (f.producerId !== undefined) {
          assert.equal(batch.producerEpoch, f.producerEpoch);
          assert.equal(batch.baseSequence, f.firstSequence);
        }
        const messages = messagesOf(f.messages);
        assert.equal(batch.maxTimestamp, Math.max(...messages.map((m) => m.timestamp)));
        assertSameRecords(await readRecords(batch), messages);
      });
    }

    it('cover the LZ4 and zstd frame variants real clients write', () => {
      const payload = (file: string): Buffer => new RecordBatch(fixture(file)).recordsPayload();
      const librdkafka = payload('lz4-librdkafka-style.bin');
      assert.equal(librdkafka[4], 0x60, 'independent blocks, no checksums, no content size');
      assert.equal(librdkafka[5], 0x40, '64 KiB blocks');
      assert.ok(librdkafka.readUInt32LE(7) < 65536 && librdkafka.length > 7 + 4 + librdkafka.readUInt32LE(7) + 8, 'several blocks');
      const checksums = payload('lz4-checksums.bin');
      assert.equal(checksums[4]! & 0x3c, 0x1c, 'dependent blocks, block checksums, content size, content checksum');
      assert.equal(binding.getFrameContentSize(payload('zstd-no-content-size.bin')), null);
      assert.notEqual(binding.getFrameContentSize(payload('zstd-content-size.bin')), null);
    });

    it('starts records after the 61-byte header, as kafkajs lays them out', () => {
      const batch = new RecordBatch(fixture('kafkajs-v2-none.bin'));
      assert.equal(batch.sizeInBytes, fixture('kafkajs-v2-none.bin').length);
      assert.ok(batch.recordsPayload().length === batch.sizeInBytes - RECORD_BATCH_OVERHEAD);
    });
  });

  describe('live kafkajs encoder', () => {
    for (const [name, type] of [
      ['none', KafkajsCompression.None],
      ['gzip', KafkajsCompression.GZIP],
    ] as const) {
      it(`decodes kafkajs ${name} batches (property)`, async () => {
        await fc.assert(
          fc.asyncProperty(kafkajsMessages, async (messages) => {
            const batch = new RecordBatch(await kafkajsRecordBatch(messages, { compression: type }));
            assert.ok(batch.isCrcValid());
            assertSameRecords(await readRecords(batch), messages);
          }),
          { numRuns: 40 },
        );
      });
    }

    for (const [name, type] of [
      ['snappy (raw)', KafkajsCompression.Snappy],
      ['lz4 (lz4_flex frames)', KafkajsCompression.LZ4],
      ['zstd (no content size)', KafkajsCompression.ZSTD],
    ] as const) {
      it(`decodes kafkajs batches with a plugged ${name} codec (property)`, async () => {
        await withKafkajsCodec(type, pluggedCodec(type), () =>
          fc.assert(
            fc.asyncProperty(kafkajsMessages, async (messages) => {
              const batch = new RecordBatch(await kafkajsRecordBatch(messages, { compression: type }));
              assert.equal(batch.compression, type);
              assertSameRecords(await readRecords(batch), messages);
            }),
            { numRuns: 25 },
          ),
        );
      });
    }
  });

  describe('our batches, for kafkajs', () => {
    const sorted = kafkajsMessages.map((ms) => [...ms].sort((a, b) => a.timestamp - b.timestamp));
    const ours = (messages: KafkajsMessage[], compression: CompressionType): Promise<Buffer> =>
      // kafkajs's defaults: partition leader epoch 0, producer epoch 0, first sequence 0.
      buildRecordBatch(
        { compression, partitionLeaderEpoch: 0, producerEpoch: 0, baseSequence: 0 },
        messages.map((m) => ({ key: m.key, value: m.value, headers: headersOf(m), timestamp: m.timestamp })),
      );

    it('are byte for byte what kafkajs writes for the same records, uncompressed and gzip', async () => {
      await fc.assert(
        fc.asyncProperty(sorted, async (messages) => {
          assert.deepEqual(await ours(messages, CompressionType.None), await kafkajsRecordBatch(messages));
          assert.deepEqual(
            await ours(messages, CompressionType.Gzip),
            await kafkajsRecordBatch(messages, { compression: KafkajsCompression.GZIP }),
          );
        }),
        { numRuns: 40 },
      );
    });

    for (const [name, compression] of [
      ['none', CompressionType.None],
      ['gzip', CompressionType.Gzip],
      ['lz4', CompressionType.Lz4],
      ['zstd', CompressionType.Zstd],
    ] as const) {
      it(`decode with kafkajs's own decoder (${name})`, async () => {
        const plugged = compression === CompressionType.Lz4 || compression === CompressionType.Zstd;
        const run = () =>
          fc.assert(
            fc.asyncProperty(sorted, async (messages) => {
              const decoded = await kafkajsDecodeBatch(await ours(messages, compression));
              assert.equal(decoded.length, messages.length);
              decoded.forEach((r, i) => {
                const m = messages[i]!;
                assert.equal(r.offset, String(i));
                assert.equal(r.timestamp, String(m.timestamp));
                assert.deepEqual(r.key, m.key);
                assert.deepEqual(r.value, m.value);
                assert.deepEqual(Object.keys(r.headers), Object.keys(m.headers ?? {}));
              });
            }),
            { numRuns: 20 },
          );
        if (plugged) await withKafkajsCodec(compression, pluggedCodec(compression), run);
        else await run();
      });
    }
  });
});
