import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import * as lz4 from 'lz4-napi';
import { CompressionError, xxhash32 } from '../../../protocol/compression/index.ts';
import {
  buildControlBatch,
  buildEndTxnMarker,
  buildLegacyMessageSet,
  buildRecordBatch,
  CompressionType,
  ControlRecordType,
  convertLegacyToV2,
  InvalidRecordBatchError,
  legacyEntries,
  legacyRecords,
  magicAt,
  NO_TIMESTAMP,
  readRecords,
  RecordBatch,
  batchesIn,
  TimestampType,
  v2ToLegacy,
  type LegacyMagic,
  type LegacyRecordInput,
} from '../../../protocol/records/index.ts';
import { FIXTURES, messagesOf } from '../../fixtures/records/fixtures.ts';
import { negativeTimestampBatch, timestampedBatch } from '../../helpers/record-batches.ts';
import { kafkajsDecodeMessageSet, KafkajsCompression, withKafkajsCodec } from '../../fixtures/records/kafkajs.ts';

const fixture = (file: string): Buffer => readFileSync(new URL(`../../fixtures/records/${file}`, import.meta.url));
const LEGACY_CODECS = [CompressionType.None, CompressionType.Gzip, CompressionType.Snappy, CompressionType.Lz4];
const BASE_TIME = 1_600_000_000_000;

const bytes = (max: number) =>
  fc.option(
    fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a)),
    { nil: null, freq: 5 },
  );
const legacyInputs = fc.array(
  fc.record({
    key: bytes(20),
    value: bytes(500),
    timestamp: fc.integer({ min: 0, max: 2 ** 42 }),
    gap: fc.integer({ min: 0, max: 2 }),
  }),
  { minLength: 1, maxLength: 15 },
);

function withOffsets(
  generated: { key: Buffer | null; value: Buffer | null; timestamp: number; gap: number }[],
  base: number,
): LegacyRecordInput[] {
  let offset = base - 1;
  return generated.map((g) => {
    offset += 1 + g.gap;
    return { offset, key: g.key, value: g.value, timestamp: g.timestamp };
  });
}

async function rejectsWith(p: Promise<unknown>, kind: InvalidRecordBatchError['kind']): Promise<void> {
  await assert.rejects(p, (err: unknown) => err instanceof InvalidRecordBatchError && err.kind === kind);
}

/** A kafkajs plug-in that decodes LZ4 with an independent decoder (lz4_flex). */
const lz4ForKafkajs = {
  compress: async (e: { buffer: Buffer }) => lz4.compressFrame(e.buffer),
  decompress: async (b: Buffer) => lz4.decompressFrame(b),
};

describe('legacy message sets (magic 0 and 1)', () => {
  describe('written by kafkajs', () => {
    for (const f of FIXTURES.filter((x) => x.kind === 'legacy')) {
      it(`decodes ${f.file} (${f.writer}) with valid CRC-32s, record for record`, async () => {
        const buf = fixture(f.file);
        assert.equal(magicAt(buf), f.magic);
        const shallow = [...legacyEntries(buf, true)];
        const messages = messagesOf(f.messages);
        assert.equal(shallow.length, f.codec === 'none' ? messages.length : 1);
        const deep = await legacyRecords(buf);
        assert.equal(deep.length, messages.length);
        deep.forEach((m, i) => {
          assert.equal(m.magic, f.magic);
          assert.deepEqual(m.key, messages[i]!.key);
          assert.deepEqual(m.value, messages[i]!.value);
          assert.equal(m.timestamp, f.magic === 0 ? NO_TIMESTAMP : messages[i]!.timestamp);
        });
        if (f.magic === 1 && f.codec !== 'none') {
          // kafkajs gives its wrapper offset 0: inner offsets count back from it.
          assert.deepEqual(
            deep.map((m) => m.offset),
            messages.map((_, i) => i - (messages.length - 1)),
          );
        }
      });

      it(`converts ${f.file} to one v2 batch with the same records and codec`, async () => {
        const converted = await convertLegacyToV2(fixture(f.file), { baseOffset: 1000 });
        const batches = [...batchesIn(converted, true)];
        assert.equal(batches.length, 1);
        const batch = batches[0]!;
        assert.equal(batch.compression, { none: 0, gzip: 1, lz4: 3, zstd: 4 }[f.codec]);
        assert.equal(batch.timestampType, TimestampType.CreateTime);
        assert.equal(batch.producerId, -1n);
        const messages = messagesOf(f.messages);
        const records = await readRecords(batch);
        assert.deepEqual(
          records.map((r) => r.offset),
          messages.map((_, i) => 1000 + i),
        );
        assert.deepEqual(
          records.map((r) => r.value),
          messages.map((m) => m.value),
        );
        assert.deepEqual(
          records.map((r) => r.key),
          messages.map((m) => m.key),
        );
        assert.deepEqual(
          records.map((r) => r.timestamp),
          messages.map((m) => (f.magic === 0 ? NO_TIMESTAMP : m.timestamp)),
        );
        assert.equal(batch.maxTimestamp, f.magic === 0 ? NO_TIMESTAMP : Math.max(...messages.map((m) => m.timestamp)));
      });
    }
  });

  describe('build and read', () => {
    it('round-trip plain and compressed sets in both magics (property)', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom<LegacyMagic>(0, 1),
          fc.constantFrom(...LEGACY_CODECS),
          legacyInputs,
          fc.integer({ min: 0, max: 2 ** 40 }),
          async (magic, compression, generated, base) => {
            const inputs = withOffsets(generated, base);
            const set = await buildLegacyMessageSet({ magic, compression, baseOffset: base }, inputs);
            const shallow = [...legacyEntries(set)];
            assert.equal(shallow.length, compression === CompressionType.None ? inputs.length : 1);
            const last = inputs[inputs.length - 1]!;
            if (compression !== CompressionType.None) {
              const wrapper = shallow[0]!;
              assert.equal(wrapper.compression, compression);
              assert.equal(wrapper.key, null);
              assert.equal(wrapper.offset, last.offset);
              assert.equal(wrapper.timestamp, magic === 0 ? NO_TIMESTAMP : Math.max(...inputs.map((r) => Number(r.timestamp))));
            }
            const deep = await legacyRecords(set);
            assert.deepEqual(
              deep.map((m) => m.offset),
              inputs.map((r) => r.offset),
            );
            assert.deepEqual(
              deep.map((m) => m.key),
              inputs.map((r) => r.key),
            );
            assert.deepEqual(
              deep.map((m) => m.value),
              inputs.map((r) => r.value),
            );
            assert.deepEqual(
              deep.map((m) => m.timestamp),
              inputs.map((r) => (magic === 0 ? NO_TIMESTAMP : r.timestamp)),
            );
          },
        ),
        { numRuns: 80 },
      );
    });

    it("are read by kafkajs's own message set decoder, offsets included (property)", async () => {
      await withKafkajsCodec(KafkajsCompression.LZ4, lz4ForKafkajs, () =>
        fc.assert(
          fc.asyncProperty(
            fc.constantFrom<LegacyMagic>(0, 1),
            fc.constantFrom(CompressionType.None, CompressionType.Gzip, CompressionType.Lz4),
            legacyInputs,
            async (magic, compression, generated) => {
              // kafkajs verifies LZ4 descriptor checksums, so it cannot read Kafka's broken v0 ones.
              if (magic === 0 && compression === CompressionType.Lz4) return;
              const inputs = withOffsets(generated, 50);
              const decoded = await kafkajsDecodeMessageSet(await buildLegacyMessageSet({ magic, compression, baseOffset: 50 }, inputs));
              assert.deepEqual(
                decoded.map((m) => m.offset),
                inputs.map((r) => String(r.offset)),
              );
              assert.deepEqual(
                decoded.map((m) => m.value),
                inputs.map((r) => r.value),
              );
              assert.deepEqual(
                decoded.map((m) => m.key),
                inputs.map((r) => r.key),
              );
              if (magic === 1)
                assert.deepEqual(
                  decoded.map((m) => m.timestamp),
                  inputs.map((r) => String(r.timestamp)),
                );
            },
          ),
          { numRuns: 40 },
        ),
      );
    });

    it('writes v1 inner offsets relative to the first, and the wrapper at the last offset', async () => {
      const set = await buildLegacyMessageSet({ magic: 1, compression: CompressionType.Gzip, baseOffset: 100 }, [
        { offset: 100, value: Buffer.from('a'), timestamp: 5 },
        { offset: 103, value: Buffer.from('b'), timestamp: 9 },
      ]);
      const [wrapper] = [...legacyEntries(set)];
      assert.equal(wrapper!.offset, 103);
      const inner = await import('node:zlib').then((z) => z.gunzipSync(wrapper!.value!));
      assert.deepEqual(
        [...legacyEntries(inner)].map((m) => m.offset),
        [0, 3],
      );
      const v0 = await buildLegacyMessageSet({ magic: 0, compression: CompressionType.Gzip, baseOffset: 100 }, [
        { offset: 100, value: Buffer.from('a') },
        { offset: 103, value: Buffer.from('b') },
      ]);
      const innerV0 = await import('node:zlib').then((z) => z.gunzipSync([...legacyEntries(v0)][0]!.value!));
      assert.deepEqual(
        [...legacyEntries(innerV0)].map((m) => m.offset),
        [100, 103],
      );
    });

    it('stamps every message with the log append time when asked (v1)', async () => {
      for (const compression of [CompressionType.None, CompressionType.Snappy]) {
        const set = await buildLegacyMessageSet(
          { magic: 1, compression, timestampType: TimestampType.LogAppendTime, logAppendTimeMs: 777 },
          [
            { value: Buffer.from('a'), timestamp: 5 },
            { value: Buffer.from('b'), timestamp: 9 },
          ],
        );
        for (const entry of legacyEntries(set)) {
          assert.equal(entry.timestampType, TimestampType.LogAppendTime);
          assert.equal(entry.timestamp, 777);
        }
        const deep = await legacyRecords(set);
        assert.deepEqual(
          deep.map((m) => [m.timestamp, m.timestampType]),
          [
            [777, 1],
            [777, 1],
          ],
        );
      }
    });

    it("writes Kafka's broken LZ4 descriptor checksum in v0 wrappers only", async () => {
      for (const magic of [0, 1] as const) {
        const set = await buildLegacyMessageSet({ magic, compression: CompressionType.Lz4 }, [{ value: Buffer.from('hello') }]);
        const frame = [...legacyEntries(set)][0]!.value!;
        const broken = (xxhash32(frame.subarray(0, 6)) >>> 8) & 0xff;
        assert.equal(frame[6], magic === 0 ? broken : 0x82);
        assert.deepEqual((await legacyRecords(set))[0]!.value, Buffer.from('hello'));
      }
    });
  });

  describe('bad input', () => {
    const plain = () => buildLegacyMessageSet({ magic: 1 }, [{ key: Buffer.from('k'), value: Buffer.from('value'), timestamp: 1 }]);

    it("checks each message's CRC-32", async () => {
      const set = await plain();
      for (let at = 16; at < set.length; at++) {
        const copy = Buffer.from(set);
        copy[at]! ^= 0x40;
        await rejectsWith(legacyRecords(copy), at === 16 ? 'unsupported-magic' : 'corrupt');
      }
      const copy = Buffer.from(set);
      copy[copy.length - 1]! ^= 0x40;
      assert.equal((await legacyRecords(copy, { checkCrc: false }))[0]!.value!.toString().length, 5);
    });

    it('reports truncation, impossible sizes and lengths with typed errors', async () => {
      const set = await plain();
      await rejectsWith(legacyRecords(set.subarray(0, set.length - 1)), 'truncated');
      await rejectsWith(legacyRecords(set.subarray(0, 10)), 'truncated');
      const small = Buffer.from(set);
      small.writeInt32BE(5, 8);
      await rejectsWith(legacyRecords(small), 'corrupt');
      const keyLength = Buffer.from(set);
      keyLength.writeInt32BE(1_000_000, 26);
      await rejectsWith(legacyRecords(keyLength, { checkCrc: false }), 'corrupt');
      const v2 = await buildRecordBatch({}, [{ value: null, timestamp: 1 }]);
      await rejectsWith(legacyRecords(v2), 'unsupported-magic');
    });

    it('refuses nested compression, mixed magics, zstd and empty wrappers', async () => {
      const inner = await buildLegacyMessageSet({ magic: 1, compression: CompressionType.Gzip }, [
        { value: Buffer.from('x'), timestamp: 1 },
      ]);
      // A plain message re-labelled as a wrapper around `innerSet` (CRC left stale, so read without CRC checks).
      const { gzipSync } = await import('node:zlib');
      const wrap = async (innerSet: Buffer, magic: LegacyMagic, codec: number) => {
        const set = await buildLegacyMessageSet({ magic }, [{ value: gzipSync(innerSet), timestamp: 1 }]);
        set[17] = codec;
        return set;
      };
      await rejectsWith(legacyRecords(await wrap(inner, 1, CompressionType.Gzip), { checkCrc: false }), 'corrupt');
      const v0Inner = await buildLegacyMessageSet({ magic: 0 }, [{ value: Buffer.from('x') }]);
      await rejectsWith(legacyRecords(await wrap(v0Inner, 1, CompressionType.Gzip), { checkCrc: false }), 'corrupt');
      await rejectsWith(legacyRecords(await wrap(Buffer.alloc(0), 1, CompressionType.Gzip), { checkCrc: false }), 'corrupt');
      await assert.rejects(
        legacyRecords(await wrap(v0Inner, 0, CompressionType.Zstd), { checkCrc: false }),
        (err: unknown) => err instanceof CompressionError && err.kind === 'unsupported',
      );
      await assert.rejects(buildLegacyMessageSet({ magic: 1, compression: CompressionType.Zstd }, [{ value: null }]), CompressionError);
    });
  });

  describe('convertLegacyToV2', () => {
    it('makes one batch per wrapper and per run of plain messages, offsets consecutive', async () => {
      const a = await buildLegacyMessageSet({ magic: 1 }, [
        { value: Buffer.from('a'), timestamp: 10 },
        { value: Buffer.from('b'), timestamp: 11 },
      ]);
      const w = await buildLegacyMessageSet(
        { magic: 1, compression: CompressionType.Snappy, timestampType: TimestampType.LogAppendTime, logAppendTimeMs: 99 },
        [
          { value: Buffer.from('c'), timestamp: 12 },
          { value: Buffer.from('d'), timestamp: 13 },
        ],
      );
      const c = await buildLegacyMessageSet({ magic: 1 }, [{ key: Buffer.from('k'), value: Buffer.from('e'), timestamp: 14 }]);
      const converted = await convertLegacyToV2(Buffer.concat([a, w, c]), { baseOffset: 7 });
      const batches = [...batchesIn(converted, true)];
      assert.deepEqual(
        batches.map((b) => [b.baseOffset, b.lastOffset, b.compression, b.timestampType]),
        [
          [7, 8, CompressionType.None, 0],
          [9, 10, CompressionType.Snappy, 1],
          [11, 11, CompressionType.None, 0],
        ],
      );
      assert.equal(batches[1]!.maxTimestamp, 99);
      const all = (await Promise.all(batches.map((b) => readRecords(b)))).flat();
      assert.deepEqual(
        all.map((r) => `${r.offset}:${r.value}@${r.timestamp}`),
        ['7:a@10', '8:b@11', '9:c@99', '10:d@99', '11:e@14'],
      );
    });
  });

  describe('v2ToLegacy (down-conversion for Fetch v0-v3)', () => {
    const v2Inputs = fc.array(
      fc.record({
        codec: fc.constantFrom(...LEGACY_CODECS),
        records: fc.array(
          fc.record({
            key: bytes(10),
            value: bytes(200),
            timestamp: fc.integer({ min: 0, max: 2 ** 42 }),
            headers: fc.array(fc.record({ key: fc.string({ maxLength: 5 }), value: bytes(5) }), { maxLength: 2 }),
          }),
          { minLength: 1, maxLength: 6 },
        ),
      }),
      { minLength: 1, maxLength: 4 },
    );

    type StoredInput = typeof v2Inputs extends fc.Arbitrary<infer T> ? T : never;

    async function stored(batches: StoredInput): Promise<Buffer> {
      const out: Buffer[] = [];
      let offset = 0;
      for (const b of batches) {
        out.push(
          await buildRecordBatch(
            { baseOffset: offset, compression: b.codec },
            b.records.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers.map((h) => ({ ...h })) })),
          ),
        );
        offset += b.records.length;
      }
      return Buffer.concat(out);
    }

    it('keeps offsets, keys, values and (v1) timestamps, one message set per batch with its codec (property)', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom<LegacyMagic>(0, 1), v2Inputs, async (magic, batches) => {
          const set = await v2ToLegacy(await stored(batches), magic);
          const shallow = [...legacyEntries(set)];
          const expectedShallow = batches.flatMap((b) => (b.codec === CompressionType.None ? b.records.map(() => 0) : [b.codec]));
          assert.deepEqual(
            shallow.map((m) => m.compression),
            expectedShallow,
          );
          const deep = await legacyRecords(set);
          const flat = batches.flatMap((b) => b.records);
          assert.deepEqual(
            deep.map((m) => m.offset),
            flat.map((_, i) => i),
          );
          assert.deepEqual(
            deep.map((m) => m.key),
            flat.map((r) => r.key),
          );
          assert.deepEqual(
            deep.map((m) => m.value),
            flat.map((r) => r.value),
          );
          assert.deepEqual(
            deep.map((m) => m.timestamp),
            flat.map((r) => (magic === 0 ? NO_TIMESTAMP : r.timestamp)),
          );
          assert.ok(deep.every((m) => m.magic === magic));
        }),
        { numRuns: 60 },
      );
    });

    it("gives old consumers what kafkajs's Fetch v0-v3 decoder reads back", async () => {
      const buf = await stored([
        { codec: CompressionType.Gzip, records: [{ key: null, value: Buffer.from('x'), timestamp: BASE_TIME, headers: [] }] },
        {
          codec: CompressionType.None,
          records: [{ key: Buffer.from('k'), value: Buffer.from('y'), timestamp: BASE_TIME + 1, headers: [] }],
        },
      ]);
      const decoded = await kafkajsDecodeMessageSet(await v2ToLegacy(buf, 1));
      assert.deepEqual(
        decoded.map((m) => [m.offset, m.value?.toString(), m.timestamp]),
        [
          ['0', 'x', String(BASE_TIME)],
          ['1', 'y', String(BASE_TIME + 1)],
        ],
      );
    });

    it('drops control batches and uncompressed records below the fetch offset, keeps compressed batches whole', async () => {
      const parts = [
        await buildRecordBatch({ baseOffset: 0 }, [
          { value: Buffer.from('0'), timestamp: 1 },
          { value: Buffer.from('1'), timestamp: 1 },
        ]),
        await buildRecordBatch({ baseOffset: 2, compression: CompressionType.Gzip }, [
          { value: Buffer.from('2'), timestamp: 1 },
          { value: Buffer.from('3'), timestamp: 1 },
        ]),
        await buildEndTxnMarker({ commit: true, coordinatorEpoch: 0, producerId: 5n, producerEpoch: 0, timestamp: 1, baseOffset: 4 }),
        await buildControlBatch({ type: ControlRecordType.LeaderChange, value: Buffer.alloc(2), timestamp: 1, baseOffset: 5 }),
        await buildRecordBatch({ baseOffset: 6 }, [{ value: Buffer.from('6'), timestamp: 1 }]),
      ];
      const all = Buffer.concat(parts);
      const values = async (firstOffset: number) =>
        (await legacyRecords(await v2ToLegacy(all, 1, { firstOffset }))).map((m) => `${m.offset}:${m.value}`);
      assert.deepEqual(await values(0), ['0:0', '1:1', '2:2', '3:3', '6:6']);
      assert.deepEqual(await values(1), ['1:1', '2:2', '3:3', '6:6']);
      assert.deepEqual(await values(3), ['2:2', '3:3', '6:6']);
      // A batch cut short by the fetch size limit is left out.
      assert.deepEqual((await legacyRecords(await v2ToLegacy(all.subarray(0, all.length - 3), 1))).length, 4);
    });

    it('gives a record whose timestamp magic 1 cannot carry (below 0, not -1) no timestamp, and keeps its key and value', async () => {
      const batch = await negativeTimestampBatch();
      assert.deepEqual(
        (await readRecords(new RecordBatch(batch, 0))).map((r) => r.timestamp),
        [-5, 0],
      );
      for (const magic of [0, 1] as const) {
        const messages = await legacyRecords(await v2ToLegacy(batch, magic));
        assert.deepEqual(
          messages.map((m) => [m.offset, m.timestamp, m.key?.toString(), m.value?.toString()]),
          [
            [0, NO_TIMESTAMP, 'k0', 'before the epoch'],
            [1, magic === 1 ? 0 : NO_TIMESTAMP, 'k1', 'at the epoch'],
          ],
        );
      }
    });

    it('carries a timestamp beyond 2^53 exactly, as the int64 it was produced as', async () => {
      const farAhead = 2n ** 62n + 1n;
      const set = await v2ToLegacy(await timestampedBatch(farAhead), 1);
      // A magic 1 message: offset int64, size int32, crc, magic and attributes, then its timestamp.
      const secondAt = 12 + set.readInt32BE(8);
      assert.deepEqual([set.readBigInt64BE(0), set.readBigInt64BE(secondAt)], [0n, 1n]);
      assert.deepEqual([set.readBigInt64BE(18), set.readBigInt64BE(secondAt + 18)], [farAhead, farAhead + 1n]);
      assert.equal(secondAt + 12 + set.readInt32BE(secondAt + 8), set.length);
    });

    it('carries the log append time, and refuses zstd batches (UNSUPPORTED_COMPRESSION_TYPE)', async () => {
      const lat = await buildRecordBatch(
        { timestampType: TimestampType.LogAppendTime, logAppendTimeMs: 4242, compression: CompressionType.Lz4 },
        [{ value: Buffer.from('a'), timestamp: 1 }],
      );
      const [wrapper] = [...legacyEntries(await v2ToLegacy(lat, 1))];
      assert.equal(wrapper!.timestampType, TimestampType.LogAppendTime);
      assert.equal(wrapper!.timestamp, 4242);
      const zstd = await buildRecordBatch({ compression: CompressionType.Zstd }, [{ value: Buffer.from('a'), timestamp: 1 }]);
      await assert.rejects(v2ToLegacy(zstd, 1), (err: unknown) => err instanceof CompressionError && err.kind === 'unsupported');
      assert.equal((await v2ToLegacy(Buffer.alloc(0), 0)).length, 0);
    });

    it('round-trips: legacy -> v2 -> legacy keeps every message', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...LEGACY_CODECS), legacyInputs, async (compression, generated) => {
          const inputs = withOffsets(
            generated.map((g) => ({ ...g, gap: 0 })),
            0,
          );
          const legacy = await buildLegacyMessageSet({ magic: 1, compression }, inputs);
          const back = await legacyRecords(await v2ToLegacy(await convertLegacyToV2(legacy), 1));
          assert.deepEqual(
            back.map((m) => [m.offset, m.key, m.value, m.timestamp]),
            inputs.map((r) => [r.offset, r.key, r.value, r.timestamp]),
          );
        }),
        { numRuns: 30 },
      );
    });
  });
});
