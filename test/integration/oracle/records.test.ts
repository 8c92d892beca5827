// Differential tests of protocol/records against Kafka's own record code: batches Kafka's
// MemoryRecordsBuilder writes (every codec, Java's snappy/lz4/zstd framings) read back
// record for record with our reader, and the batches our builder writes pass Kafka's
// MemoryRecords validation (ensureValid on every batch) and read back the same. Likewise
// for transaction markers and the legacy v0/v1 message sets.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  batchesIn,
  buildEndTxnMarker,
  buildLegacyMessageSet,
  buildRecordBatch,
  CompressionType,
  convertLegacyToV2,
  decompressedRecords,
  endTxnMarkerOf,
  legacyRecords,
  readControlRecord,
  readRecords,
  RECORD_BATCH_OVERHEAD,
  TimestampType,
} from '../../../protocol/records/index.ts';
import type { RecordBatch, RecordBatchOptions, RecordInput } from '../../../protocol/records/index.ts';
import { differences } from './compare.ts';
import { kafkaOracle } from './kafka-oracle.ts';
import type { KafkaOracle, OracleBatch, OracleBuildSpec, OracleCodec, OracleReadRecord } from './kafka-oracle.ts';

const CODECS: [OracleCodec, CompressionType][] = [
  ['none', CompressionType.None],
  ['gzip', CompressionType.Gzip],
  ['snappy', CompressionType.Snappy],
  ['lz4', CompressionType.Lz4],
  ['zstd', CompressionType.Zstd],
];
/** SLUICE_ORACLE_RUNS=n multiplies the random cases for a deeper search. */
const RUNS = 15 * Math.max(1, Number(process.env.SLUICE_ORACLE_RUNS ?? 1) || 1);

// ---------------------------------------------------------------- random batches

interface BatchCase {
  baseOffset: number;
  partitionLeaderEpoch: number;
  producer: { producerId: bigint; producerEpoch: number; baseSequence: number; isTransactional: boolean } | null;
  logAppendTimeMs: number | null;
  records: {
    offset: number;
    timestamp: number;
    key: Buffer | null;
    value: Buffer | null;
    headers: { key: string; value: Buffer | null }[];
  }[];
}

const bytes = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)) },
  // Compressible and large enough to cross codec block sizes now and then.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 12_000 }))
      .map(([s, n]) => Buffer.from(s.repeat(n))),
  },
);

const recordsArbitrary = fc
  .tuple(
    fc.integer({ min: 0, max: 2 ** 41 }),
    fc.array(
      fc.record({
        gap: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 1000 }) }),
        timestampDelta: fc.oneof(fc.integer({ min: 0, max: 100_000 }), fc.constant(-1)),
        key: fc.option(bytes, { nil: null, freq: 4 }),
        value: fc.option(bytes, { nil: null, freq: 6 }),
        headers: fc.array(
          fc.record({ key: fc.string({ maxLength: 10, unit: 'grapheme' }), value: fc.option(bytes, { nil: null, freq: 4 }) }),
          { maxLength: 3 },
        ),
      }),
      { minLength: 1, maxLength: 12 },
    ),
    fc.integer({ min: 0, max: 2 ** 40 }),
  )
  .map(([baseTimestamp, rs, baseOffset]) => {
    let offset = baseOffset - 1;
    return {
      baseOffset,
      records: rs.map((r) => {
        offset += 1 + r.gap;
        // -1 is NO_TIMESTAMP, which Kafka accepts in place of a timestamp.
        return {
          offset,
          timestamp: r.timestampDelta < 0 ? -1 : baseTimestamp + r.timestampDelta,
          key: r.key,
          value: r.value,
          headers: r.headers,
        };
      }),
    };
  });

const batchArbitrary: fc.Arbitrary<BatchCase> = fc
  .record({
    recs: recordsArbitrary,
    partitionLeaderEpoch: fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: 2 ** 31 - 1 })),
    producer: fc.option(
      fc.record({
        producerId: fc.bigInt({ min: 0n, max: 2n ** 62n }),
        producerEpoch: fc.integer({ min: 0, max: 32767 }),
        baseSequence: fc.integer({ min: 0, max: 2 ** 30 }),
        isTransactional: fc.boolean(),
      }),
      { nil: null },
    ),
    logAppendTimeMs: fc.option(fc.integer({ min: 0, max: 2 ** 41 }), { nil: null, freq: 3 }),
  })
  .map(({ recs, ...rest }) => ({ ...rest, ...recs }));

function kafkaSpec(c: BatchCase, codec: OracleCodec): OracleBuildSpec {
  return {
    codec,
    magic: 2,
    baseOffset: BigInt(c.baseOffset),
    partitionLeaderEpoch: c.partitionLeaderEpoch,
    timestampType: c.logAppendTimeMs === null ? 'create' : 'logAppend',
    ...(c.logAppendTimeMs === null ? {} : { logAppendTime: BigInt(c.logAppendTimeMs) }),
    ...(c.producer
      ? {
          producerId: c.producer.producerId,
          producerEpoch: c.producer.producerEpoch,
          baseSequence: c.producer.baseSequence,
          isTransactional: c.producer.isTransactional,
        }
      : {}),
    records: c.records.map((r) => ({
      offset: BigInt(r.offset),
      timestamp: BigInt(r.timestamp),
      key: r.key,
      value: r.value,
      headers: r.headers,
    })),
  };
}

function ourOptions(c: BatchCase, compression: CompressionType): RecordBatchOptions {
  return {
    baseOffset: c.baseOffset,
    partitionLeaderEpoch: c.partitionLeaderEpoch,
    compression,
    ...(c.logAppendTimeMs === null ? {} : { timestampType: TimestampType.LogAppendTime, logAppendTimeMs: c.logAppendTimeMs }),
    ...(c.producer ?? {}),
  };
}

function ourInputs(c: BatchCase): RecordInput[] {
  return c.records.map((r) => ({
    offsetDelta: r.offset - c.baseOffset,
    timestamp: r.timestamp,
    key: r.key,
    value: r.value,
    headers: r.headers,
  }));
}

// ---------------------------------------------------------------- comparisons

/** The records a case should read back as, in Kafka's terms (log append time overrides). */
function expectedRecords(c: BatchCase): OracleReadRecord[] {
  return c.records.map((r) => ({
    offset: BigInt(r.offset),
    timestamp: BigInt(c.logAppendTimeMs ?? r.timestamp),
    key: r.key,
    value: r.value,
    headers: r.headers,
  }));
}

/** Header fields as Kafka reports them, from our view of the batch. */
function ourHeader(b: RecordBatch): Omit<OracleBatch, 'records' | 'recordCount' | 'sizeInBytes'> {
  return {
    baseOffset: b.baseOffsetBig,
    lastOffset: b.baseOffsetBig + BigInt(b.lastOffsetDelta),
    magic: b.magic,
    codec: CODECS.find(([, t]) => t === b.compression)![0],
    timestampType: b.timestampType === TimestampType.LogAppendTime ? 'LogAppendTime' : 'CreateTime',
    maxTimestamp: BigInt(b.maxTimestamp),
    isTransactional: b.isTransactional,
    isControl: b.isControl,
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    baseSequence: b.baseSequence,
    partitionLeaderEpoch: b.partitionLeaderEpoch,
  };
}

async function ourReading(buf: Buffer): Promise<{ batch: RecordBatch; records: OracleReadRecord[] }[]> {
  const out: { batch: RecordBatch; records: OracleReadRecord[] }[] = [];
  for (const batch of batchesIn(buf, true)) {
    assert.ok(batch.isCrcValid(), 'CRC-32C valid');
    const records = (await readRecords(batch)).map((r) => ({
      offset: BigInt(r.offset),
      timestamp: BigInt(r.timestamp),
      key: r.key,
      value: r.value,
      headers: r.headers,
    }));
    out.push({ batch, records });
  }
  return out;
}

function assertSame(actual: unknown, expected: unknown, what: string): void {
  const diffs = differences(actual, expected);
  if (diffs.length) assert.fail(`${what}: ${diffs.join('; ')}`);
}

async function oracleOrSkip(ctx: Mocha.Context): Promise<KafkaOracle> {
  const o = await kafkaOracle();
  if (!o) ctx.skip();
  return o!;
}

// ---------------------------------------------------------------- v2 batches

describe('Kafka oracle: record batches', function () {
  this.timeout(120_000);
  let oracle: KafkaOracle;

  before(async function () {
    oracle = await oracleOrSkip(this);
  });

  for (const [codec, compression] of CODECS) {
    it(`reads Kafka's ${codec} batches record for record, as Kafka reads them`, async () => {
      await fc.assert(
        fc.asyncProperty(batchArbitrary, async (c) => {
          const kafkaBytes = await oracle.buildRecords(kafkaSpec(c, codec));
          const kafka = await oracle.validateRecords(kafkaBytes);
          assert.equal(kafka.batches.length, 1);
          const ours = await ourReading(kafkaBytes);
          assert.equal(ours.length, 1, 'one batch');
          const { records: kafkaRecords, recordCount, sizeInBytes, ...kafkaHeader } = kafka.batches[0]!;
          assertSame(ourHeader(ours[0]!.batch), kafkaHeader, 'batch header');
          assert.equal(ours[0]!.batch.recordCount, recordCount);
          assert.equal(ours[0]!.batch.sizeInBytes, sizeInBytes);
          assertSame(ours[0]!.records, kafkaRecords, 'records');
          assertSame(kafkaRecords, expectedRecords(c), "Kafka's own reading");
        }),
        { numRuns: RUNS, seed: 0x5eed + compression },
      );
    });

    it(`writes ${codec} batches laid out as Kafka's${codec === 'none' ? ', byte for byte' : ''}`, async () => {
      await fc.assert(
        fc.asyncProperty(batchArbitrary, async (c) => {
          const kafkaBytes = await oracle.buildRecords(kafkaSpec(c, codec));
          const ourBytes = await buildRecordBatch(ourOptions(c, compression), ourInputs(c));
          if (compression === CompressionType.None) {
            assert.ok(
              ourBytes.equals(kafkaBytes),
              `bytes differ:\n ours   ${ourBytes.toString('hex')}\n Kafka's ${kafkaBytes.toString('hex')}`,
            );
            return;
          }
          // Compressed bytes depend on the codec library; everything around them must match,
          // and both payloads must hold the same uncompressed records.
          const [ourBatch] = [...batchesIn(ourBytes, true)];
          const [kafkaBatch] = [...batchesIn(kafkaBytes, true)];
          const headerOutsideLengthAndCrc = (b: Buffer): Buffer =>
            Buffer.concat([b.subarray(0, 8), b.subarray(12, 17), b.subarray(21, RECORD_BATCH_OVERHEAD)]);
          assert.ok(headerOutsideLengthAndCrc(ourBytes).equals(headerOutsideLengthAndCrc(kafkaBytes)), 'batch headers match');
          assert.ok((await decompressedRecords(ourBatch!)).equals(await decompressedRecords(kafkaBatch!)), 'same uncompressed records');
        }),
        { numRuns: RUNS, seed: 0x1eaf + compression },
      );
    });

    it(`writes ${codec} batches that pass Kafka's validation and read back the same`, async () => {
      await fc.assert(
        fc.asyncProperty(batchArbitrary, async (c) => {
          const ourBytes = await buildRecordBatch(ourOptions(c, compression), ourInputs(c));
          const kafka = await oracle.validateRecords(ourBytes);
          assert.equal(kafka.validBytes, ourBytes.length, 'Kafka reads the whole batch');
          assert.equal(kafka.batches.length, 1);
          const { records: kafkaRecords, recordCount, sizeInBytes, ...kafkaHeader } = kafka.batches[0]!;
          assertSame(kafkaHeader, ourHeader([...batchesIn(ourBytes, true)][0]!), "Kafka's reading of our header");
          assert.equal(recordCount, c.records.length);
          assert.equal(sizeInBytes, ourBytes.length);
          assertSame(kafkaRecords, expectedRecords(c), "Kafka's reading of our records");
        }),
        { numRuns: RUNS, seed: 0xbeef + compression },
      );
    });
  }

  it('several batches in one buffer read the same on both sides', async () => {
    const cases = fc.sample(batchArbitrary, { numRuns: CODECS.length, seed: 7 });
    const parts = await Promise.all(cases.map((c, i) => oracle.buildRecords(kafkaSpec(c, CODECS[i]![0]))));
    const joined = Buffer.concat(parts);
    const kafka = await oracle.validateRecords(joined);
    const ours = await ourReading(joined);
    assert.equal(ours.length, CODECS.length);
    assertSame(
      ours.map((b) => b.records),
      kafka.batches.map((b) => b.records),
      'records of every batch',
    );
  });

  it('transaction markers are byte for byte what Kafka writes, and read back', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          commit: fc.boolean(),
          baseOffset: fc.integer({ min: 0, max: 2 ** 40 }),
          timestamp: fc.integer({ min: 0, max: 2 ** 41 }),
          partitionLeaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
          producerId: fc.bigInt({ min: 0n, max: 2n ** 62n }),
          producerEpoch: fc.integer({ min: 0, max: 32767 }),
          coordinatorEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
        }),
        async (m) => {
          const kafkaBytes = await oracle.controlBatch({
            marker: m.commit ? 'commit' : 'abort',
            baseOffset: BigInt(m.baseOffset),
            timestamp: BigInt(m.timestamp),
            partitionLeaderEpoch: m.partitionLeaderEpoch,
            producerId: m.producerId,
            producerEpoch: m.producerEpoch,
            coordinatorEpoch: m.coordinatorEpoch,
          });
          const ourBytes = await buildEndTxnMarker(m);
          assert.ok(
            ourBytes.equals(kafkaBytes),
            `bytes differ:\n ours   ${ourBytes.toString('hex')}\n Kafka's ${kafkaBytes.toString('hex')}`,
          );
          const [batch] = [...batchesIn(kafkaBytes, true)];
          const marker = endTxnMarkerOf(batch!, await readControlRecord(batch!));
          assertSame(
            marker,
            {
              commit: m.commit,
              coordinatorEpoch: m.coordinatorEpoch,
              producerId: m.producerId,
              producerEpoch: m.producerEpoch,
              offset: m.baseOffset,
              timestamp: m.timestamp,
            },
            'marker',
          );
        },
      ),
      { numRuns: RUNS, seed: 11 },
    );
  });
});

// ---------------------------------------------------------------- legacy message sets

const LEGACY_CODECS = CODECS.filter(([name]) => name !== 'zstd');

interface LegacyCase {
  magic: 0 | 1;
  baseOffset: number;
  logAppendTimeMs: number | null;
  records: { offset: number; timestamp: number; key: Buffer | null; value: Buffer | null }[];
}

const legacyArbitrary: fc.Arbitrary<LegacyCase> = fc
  .record({
    magic: fc.constantFrom(0 as const, 1 as const),
    recs: recordsArbitrary,
    logAppendTimeMs: fc.option(fc.integer({ min: 0, max: 2 ** 41 }), { nil: null, freq: 3 }),
  })
  .map(({ magic, recs, logAppendTimeMs }) => ({
    magic,
    baseOffset: recs.baseOffset,
    logAppendTimeMs: magic === 0 ? null : logAppendTimeMs,
    records: recs.records.map(({ headers: _headers, ...r }) => ({ ...r, timestamp: magic === 0 ? -1 : r.timestamp })),
  }));

function legacyKafkaSpec(c: LegacyCase, codec: OracleCodec): OracleBuildSpec {
  return {
    codec,
    magic: c.magic,
    baseOffset: BigInt(c.baseOffset),
    timestampType: c.logAppendTimeMs === null ? 'create' : 'logAppend',
    ...(c.logAppendTimeMs === null ? {} : { logAppendTime: BigInt(c.logAppendTimeMs) }),
    records: c.records.map((r) => ({ offset: BigInt(r.offset), timestamp: BigInt(r.timestamp), key: r.key, value: r.value, headers: [] })),
  };
}

function legacyExpected(c: LegacyCase): OracleReadRecord[] {
  return c.records.map((r) => ({
    offset: BigInt(r.offset),
    timestamp: BigInt(c.logAppendTimeMs ?? r.timestamp),
    key: r.key,
    value: r.value,
    headers: [],
  }));
}

async function ourLegacyReading(buf: Buffer): Promise<OracleReadRecord[]> {
  return (await legacyRecords(buf)).map((m) => ({
    offset: BigInt(m.offset),
    timestamp: BigInt(m.timestamp),
    key: m.key,
    value: m.value,
    headers: [],
  }));
}

describe('Kafka oracle: legacy message sets (magic 0 and 1)', function () {
  this.timeout(120_000);
  let oracle: KafkaOracle;

  before(async function () {
    oracle = await oracleOrSkip(this);
  });

  for (const [codec, compression] of LEGACY_CODECS) {
    it(`reads Kafka's ${codec} message sets message for message`, async () => {
      await fc.assert(
        fc.asyncProperty(legacyArbitrary, async (c) => {
          const kafkaBytes = await oracle.buildRecords(legacyKafkaSpec(c, codec));
          const kafka = await oracle.validateRecords(kafkaBytes);
          const kafkaRecords = kafka.batches.flatMap((b) => b.records);
          assertSame(kafkaRecords, legacyExpected(c), "Kafka's own reading");
          assertSame(await ourLegacyReading(kafkaBytes), kafkaRecords, 'our reading');
        }),
        { numRuns: RUNS, seed: 0x1e9 + compression },
      );
    });

    it(`writes ${codec} message sets Kafka validates and reads back the same${codec === 'none' ? ', byte for byte' : ''}`, async () => {
      await fc.assert(
        fc.asyncProperty(legacyArbitrary, async (c) => {
          const ourBytes = await buildLegacyMessageSet(
            {
              magic: c.magic,
              compression,
              baseOffset: c.baseOffset,
              ...(c.logAppendTimeMs === null ? {} : { timestampType: TimestampType.LogAppendTime, logAppendTimeMs: c.logAppendTimeMs }),
            },
            c.records,
          );
          if (compression === CompressionType.None) {
            const kafkaBytes = await oracle.buildRecords(legacyKafkaSpec(c, codec));
            assert.ok(
              ourBytes.equals(kafkaBytes),
              `bytes differ:\n ours   ${ourBytes.toString('hex')}\n Kafka's ${kafkaBytes.toString('hex')}`,
            );
          }
          const kafka = await oracle.validateRecords(ourBytes);
          assert.equal(kafka.validBytes, ourBytes.length, 'Kafka reads the whole message set');
          assertSame(
            kafka.batches.flatMap((b) => b.records),
            legacyExpected(c),
            "Kafka's reading of our message set",
          );
        }),
        { numRuns: RUNS, seed: 0x2e9 + compression },
      );
    });

    it(`converts Kafka's ${codec} message sets to v2 batches Kafka validates`, async () => {
      await fc.assert(
        fc.asyncProperty(legacyArbitrary, async (c) => {
          const legacy = await oracle.buildRecords(legacyKafkaSpec(c, codec));
          const converted = await convertLegacyToV2(legacy, { baseOffset: 0 });
          const kafka = await oracle.validateRecords(converted);
          assert.equal(kafka.validBytes, converted.length, 'Kafka reads every converted batch');
          assert.ok(
            kafka.batches.every((b) => b.magic === 2 && b.codec === codec),
            `magic 2 batches of codec ${codec}`,
          );
          const expected = legacyExpected(c).map((r, i) => ({ ...r, offset: BigInt(i) }));
          assertSame(
            kafka.batches.flatMap((b) => b.records),
            expected,
            "Kafka's reading of the converted batches",
          );
        }),
        { numRuns: RUNS, seed: 0x3e9 + compression },
      );
    });
  }
});
