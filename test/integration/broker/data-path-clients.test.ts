/**
 * The data path driven by real clients against the real broker process: kafkajs and
 * @platformatic/kafka produce; records are read back with raw Fetch requests, decoded both
 * by kafkajs' own Fetch response decoder (with its codecs) and by the project's codec.
 * Consumer groups are not needed here: fetching is what the data path serves.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import kafkajs, { type Admin, type Kafka as KafkaClient, type Producer } from 'kafkajs';
import { Producer as PlatformaticProducer, stringSerializers } from '@platformatic/kafka';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  decodeFetchResponse,
  encodeFetchRequest,
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import {
  decodeProduceResponse,
  encodeProduceRequest,
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../../protocol/messages/produce.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { batchesIn, CompressionType } from '../../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { readRecords, type Record as KafkaRecord } from '../../../protocol/records/record.ts';
import { compress, decompress } from '../../../protocol/compression/index.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient, requestPayload } from '../../helpers/raw-client.ts';

const { CompressionCodecs, CompressionTypes, Kafka, logLevel } = kafkajs;

/** kafkajs' decoder of Fetch v11 response bodies (what its consumer runs on every fetch). */
const kafkajsDecodeFetchV11 = createRequire(import.meta.url)('kafkajs/src/protocol/requests/fetch/v11/response.js').decode as (
  body: Buffer,
) => Promise<{
  errorCode: number;
  responses: {
    topicName: string;
    partitions: { errorCode: number; highWatermark: string; messages: { offset: string; value: Buffer | null }[] }[];
  }[];
}>;

// kafkajs ships gzip only; its codec plugin interface takes the project's codecs.
for (const [type, ours] of [
  [CompressionTypes.Snappy, CompressionType.Snappy],
  [CompressionTypes.LZ4, CompressionType.Lz4],
  [CompressionTypes.ZSTD, CompressionType.Zstd],
] as const) {
  CompressionCodecs[type] = () => ({
    compress: (encoder: { buffer: Buffer }) => compress(ours, encoder.buffer),
    decompress: (buffer: Buffer) => decompress(ours, buffer),
  });
}

let correlationId = 1;

/** Sends one request on a fresh connection; returns the response body after the correlation id. */
async function rawRequest(port: number, apiKey: number, version: number, body: Buffer): Promise<Buffer> {
  const client = await RawClient.connect(port);
  try {
    client.send(requestPayload(apiKey, version, correlationId++, body, false));
    return (await client.next()).subarray(4);
  } finally {
    client.close();
  }
}

function rawFetchBody(port: number, topic: string, partition: number, fetchOffset: number, maxWaitMs = 0): Promise<Buffer> {
  const w = new Writer();
  encodeFetchRequest(
    w,
    makeFetchRequest({
      maxWaitMs,
      minBytes: 1,
      maxBytes: 50 << 20,
      topics: [
        makeFetchRequestFetchTopic({
          topic,
          partitions: [makeFetchRequestFetchPartition({ partition, fetchOffset: BigInt(fetchOffset), partitionMaxBytes: 50 << 20 })],
        }),
      ],
    }),
    11,
  );
  return rawRequest(port, ApiKey.Fetch, 11, w.toBuffer());
}

async function rawFetch(port: number, topic: string, partition: number, fetchOffset: number, maxWaitMs = 0): Promise<FetchResponse> {
  return decodeFetchResponse(new Reader(await rawFetchBody(port, topic, partition, fetchOffset, maxWaitMs)), 11);
}

/** Consumes a partition from 0 to the high watermark as kafkajs decodes fetches. */
async function kafkajsReadAll(port: number, topic: string, partition: number): Promise<string[]> {
  const values: string[] = [];
  let offset = 0;
  for (;;) {
    const response = await kafkajsDecodeFetchV11(await rawFetchBody(port, topic, partition, offset));
    const p = response.responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, 0);
    // kafkajs skips records before the fetch offset itself (whole batches are returned).
    const messages = p.messages.filter((m) => Number(m.offset) >= offset);
    if (messages.length === 0) return values;
    for (const m of messages) values.push(m.value!.toString());
    offset = Number(messages.at(-1)!.offset) + 1;
  }
}

/** Every record of a partition from `from` up to the high watermark, via raw Fetch v11. */
async function readAll(port: number, topic: string, partition: number, from = 0): Promise<KafkaRecord[]> {
  const out: KafkaRecord[] = [];
  let offset = from;
  for (;;) {
    const response = await rawFetch(port, topic, partition, offset);
    const p = response.responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, Errors.NONE.code);
    const batches = [...batchesIn(p.records ?? Buffer.alloc(0), true)];
    if (batches.length === 0) return out;
    for (const batch of batches) {
      for (const record of await readRecords(batch)) if (record.offset >= offset) out.push(record);
      offset = batch.nextOffset;
    }
  }
}

/** Java's murmur2 (Utils.murmur2), as the default partitioner hashes keys. */
function murmur2(data: Buffer): number {
  const m = 0x5bd1e995;
  let h = (0x9747b28c ^ data.length) | 0;
  const length4 = data.length >> 2;
  for (let i = 0; i < length4; i++) {
    let k = data.readInt32LE(i * 4);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  const rest = data.length & 3;
  const base = length4 * 4;
  if (rest === 3) h ^= data[base + 2]! << 16;
  if (rest >= 2) h ^= data[base + 1]! << 8;
  if (rest >= 1) {
    h ^= data[base]!;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h;
}

describe('data path with real clients', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let kafka: KafkaClient;
  let admin: Admin;
  let producer: Producer;

  before(async () => {
    broker = await spawnBroker();
    kafka = new Kafka({ clientId: 'data-path-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    admin = kafka.admin();
    await admin.connect();
    producer = kafka.producer();
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
    await broker?.cleanup();
  });

  async function createTopic(topic: string, numPartitions = 1, configEntries: { name: string; value: string }[] = []): Promise<void> {
    await admin.createTopics({ topics: [{ topic, numPartitions, configEntries }], waitForLeaders: true });
  }

  it('round-trips records with every codec and acks 0, 1 and -1 (kafkajs produce, kafkajs fetch decoding)', async () => {
    const topic = 'codecs';
    await createTopic(topic);
    const codecs = [CompressionTypes.None, CompressionTypes.GZIP, CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD];
    const sent: string[] = [];
    for (const compression of codecs) {
      for (const acks of [1, -1, 0]) {
        const values = Array.from({ length: 20 }, (_, i) => `c${compression}-a${acks}-${i}-${'x'.repeat(i * 10)}`);
        await producer.send({ topic, acks, compression, messages: values.map((value) => ({ value })) });
        sent.push(...values);
      }
    }
    // acks=0 has no answer: a last acknowledged send orders after it on the same connection.
    await producer.send({ topic, acks: 1, messages: [{ value: 'last' }] });
    sent.push('last');
    const stored = await readAll(broker.port, topic, 0);
    assert.deepEqual(
      stored.map((r) => r.value!.toString()),
      sent,
    );
    assert.deepEqual(
      stored.map((r) => r.offset),
      sent.map((_, i) => i),
      'offsets are contiguous',
    );
    const batches = [...batchesIn((await rawFetch(broker.port, topic, 0, 0)).responses[0]!.partitions[0]!.records!)];
    assert.deepEqual([...new Set(batches.map((b) => b.compression))], [0, 1, 2, 3, 4], 'stored as sent, not recompressed');
    assert.deepEqual(await kafkajsReadAll(broker.port, topic, 0), sent);
  });

  it('places keys with the default murmur2 partitioner and keeps headers and timestamps', async () => {
    const topic = 'keyed';
    await createTopic(topic, 4);
    const timestamp = Date.now() - 60_000;
    const keys = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const results = await producer.send({
      topic,
      acks: -1,
      messages: keys.map((key, i) => ({
        key,
        value: `v-${key}`,
        timestamp: String(timestamp + i),
        headers: { trace: `t-${i}`, bin: Buffer.from([i]) },
      })),
    });
    assert.ok(results.every((r) => r.errorCode === 0));
    for (let partition = 0; partition < 4; partition++) {
      for (const record of await readAll(broker.port, topic, partition)) {
        const key = record.key!.toString();
        const i = keys.indexOf(key);
        assert.equal((murmur2(record.key!) & 0x7fffffff) % 4, partition, `key ${key}`);
        assert.equal(record.timestamp, timestamp + i);
        assert.deepEqual(
          record.headers.map((h) => [h.key, h.value]),
          [
            ['trace', Buffer.from(`t-${i}`)],
            ['bin', Buffer.from([i])],
          ],
        );
      }
    }
  });

  it('ListOffsets by time finds the first record at or after the timestamp', async () => {
    const topic = 'by-time';
    await createTopic(topic);
    const base = Date.now() - 3_600_000;
    await producer.send({ topic, messages: [0, 1000, 2000, 3000].map((d, i) => ({ value: `m${i}`, timestamp: String(base + d) })) });
    const at = async (ts: number) => (await admin.fetchTopicOffsetsByTimestamp(topic, ts))[0]!.offset;
    assert.equal(await at(base), '0');
    assert.equal(await at(base + 1500), '2');
    assert.equal(await at(base + 3000), '3');
    // No record that late: kafkajs maps Kafka's -1 to the latest offset.
    assert.equal(await at(base + 10_000), '4');
    const offsets = await admin.fetchTopicOffsets(topic);
    assert.deepEqual([offsets[0]!.low, offsets[0]!.high], ['0', '4']);
  });

  it('round-trips a 900 KiB record and rejects one above max.message.bytes with MESSAGE_TOO_LARGE', async () => {
    const topic = 'big';
    await createTopic(topic);
    const value = Buffer.alloc(900 * 1024, 7);
    await producer.send({ topic, acks: -1, messages: [{ value }] });
    const [record] = await readAll(broker.port, topic, 0);
    assert.ok(record!.value!.equals(value));

    const tooBig = Buffer.alloc(2 * 1024 * 1024, 1);
    const error = await producer.send({ topic, acks: 1, messages: [{ value: tooBig }] }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(error !== null, 'the produce fails');
    const chain = JSON.stringify(error, Object.getOwnPropertyNames(error)) + String((error as { cause?: unknown }).cause);
    assert.match(chain, /MESSAGE_TOO_LARGE|larger than the server will accept/);
    assert.equal((await readAll(broker.port, topic, 0)).length, 1, 'nothing was appended');
  });

  it('DeleteRecords moves the low watermark; reads below it are OFFSET_OUT_OF_RANGE', async () => {
    const topic = 'trim';
    await createTopic(topic);
    await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}` })) });
    // kafkajs' admin finds the leader from metadata it has already loaded for the topic.
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '6' }] });
    const offsets = await admin.fetchTopicOffsets(topic);
    assert.deepEqual([offsets[0]!.low, offsets[0]!.high], ['6', '10']);
    const below = await rawFetch(broker.port, topic, 0, 2);
    assert.equal(below.responses[0]!.partitions[0]!.errorCode, Errors.OFFSET_OUT_OF_RANGE.code);
    assert.equal(below.responses[0]!.partitions[0]!.logStartOffset, 6n);
    assert.deepEqual(
      (await readAll(broker.port, topic, 0, 6)).map((r) => r.value!.toString()),
      ['r6', 'r7', 'r8', 'r9'],
    );
  });

  it('an idempotent kafkajs producer writes each record once', async () => {
    const topic = 'idempotent';
    await createTopic(topic);
    const idem = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await idem.connect();
    for (let i = 0; i < 5; i++) await idem.send({ topic, acks: -1, messages: [{ value: `i${i}` }, { value: `j${i}` }] });
    await idem.disconnect();
    const stored = await readAll(broker.port, topic, 0);
    assert.equal(stored.length, 10);
    const [batch] = [...batchesIn((await rawFetch(broker.port, topic, 0, 0)).responses[0]!.partitions[0]!.records!)];
    assert.ok(batch!.producerId >= 0n, 'batches carry the producer id');
  });

  it('a raw retried idempotent batch is answered with its original offset', async () => {
    const topic = 'raw-dup';
    await createTopic(topic);
    const batch = await buildRecordBatch({ producerId: 999_999n, producerEpoch: 0, baseSequence: 0 }, [
      { value: Buffer.from('once'), timestamp: Date.now() },
    ]);
    const send = async (): Promise<ProduceResponse> => {
      const w = new Writer();
      encodeProduceRequest(
        w,
        makeProduceRequest({
          acks: -1,
          timeoutMs: 5000,
          topicData: [
            makeProduceRequestTopicProduceData({
              name: topic,
              partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records: Buffer.from(batch) })],
            }),
          ],
        }),
        7,
      );
      return decodeProduceResponse(new Reader(await rawRequest(broker.port, ApiKey.Produce, 7, w.toBuffer())), 7);
    };
    await producer.send({ topic, messages: [{ value: 'first' }] });
    const a = (await send()).responses[0]!.partitionResponses[0]!;
    const b = (await send()).responses[0]!.partitionResponses[0]!;
    assert.deepEqual([a.errorCode, a.baseOffset], [0, 1n]);
    assert.deepEqual([b.errorCode, b.baseOffset], [0, 1n]);
    assert.equal((await readAll(broker.port, topic, 0)).length, 2);
  });

  it('a long-poll fetch at the log end is answered by the next append', async () => {
    const topic = 'long-poll';
    await createTopic(topic);
    // max.wait.ms far beyond the test timeout: only the append can answer it in time.
    const pending = rawFetch(broker.port, topic, 0, 0, 600_000);
    await new Promise((r) => setTimeout(r, 100));
    await producer.send({ topic, messages: [{ value: 'wake' }] });
    const response = await pending;
    const [batch] = [...batchesIn(response.responses[0]!.partitions[0]!.records!)];
    assert.equal((await readRecords(batch!))[0]!.value!.toString(), 'wake');
  });

  it('@platformatic/kafka produces with its codecs and both acks settings', async () => {
    const topic = 'platformatic';
    await createTopic(topic);
    const client = new PlatformaticProducer({ clientId: 'pk', bootstrapBrokers: [broker.bootstrap], serializers: stringSerializers });
    const sent: string[] = [];
    try {
      // Its zstd needs Node 22's zlib zstd: on Node 20 it refuses before sending anything.
      for (const compression of ['none', 'gzip', 'snappy', 'lz4'] as const) {
        for (const acks of [1, -1]) {
          const values = [`${compression}-${acks}-a`, `${compression}-${acks}-b`];
          await client.send({ messages: values.map((value) => ({ topic, key: value, value, partition: 0 })), compression, acks });
          sent.push(...values);
        }
      }
    } finally {
      await client.close();
    }
    assert.deepEqual(
      (await readAll(broker.port, topic, 0)).map((r) => r.value!.toString()),
      sent,
    );
  });
});

describe('data path across restarts', function () {
  this.timeout(90_000);

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`keeps every acknowledged record after ${signal}`, async () => {
      let broker = await spawnBroker();
      try {
        const kafka = new Kafka({ clientId: 'restart', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
        const admin = kafka.admin();
        await admin.connect();
        await admin.createTopics({ topics: [{ topic: 'durable', numPartitions: 2 }], waitForLeaders: true });
        await admin.disconnect();
        const producer = kafka.producer();
        await producer.connect();
        const acknowledged: string[] = [];
        for (let i = 0; i < 50; i++) {
          const value = `rec-${i}`;
          await producer.send({ topic: 'durable', acks: i % 2 === 0 ? 1 : -1, messages: [{ key: value, value }] });
          acknowledged.push(value);
        }
        await producer.disconnect();
        const code = await broker.stop(signal);
        if (signal === 'SIGTERM') assert.equal(code, 0);
        broker = await broker.restart();
        const stored = [...(await readAll(broker.port, 'durable', 0)), ...(await readAll(broker.port, 'durable', 1))].map((r) =>
          r.value!.toString(),
        );
        assert.deepEqual(stored.sort(), [...acknowledged].sort());
        // And the partitions take new writes at the next offsets.
        const again = new Kafka({ clientId: 'restart-2', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).producer();
        await again.connect();
        const [meta] = await again.send({ topic: 'durable', acks: -1, messages: [{ value: 'after', partition: 0 }] });
        await again.disconnect();
        assert.equal(Number(meta!.baseOffset), (await readAll(broker.port, 'durable', 0)).length - 1);
      } finally {
        await broker.cleanup();
      }
    });
  }
});
