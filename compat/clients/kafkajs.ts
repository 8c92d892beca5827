import { randomUUID } from 'node:crypto';
import { gunzip, gzip } from 'node:zlib';
import { promisify } from 'node:util';
import kafkajsModule from 'kafkajs';
import type { Admin, Consumer, IHeaders, KafkaMessage } from 'kafkajs';
import * as lz4 from 'lz4-napi';
import * as snappy from 'snappy';
import * as zstd from 'zstd-napi';
import type {
  ClusterInfo,
  Codec,
  ConsumeOptions,
  ConsumedRecord,
  Delivery,
  Driver,
  DriverFactory,
  DriverInfo,
  GroupConsumeOptions,
  GroupConsumeResult,
  Header,
  OffsetSpec,
  ProduceOptions,
  ProducedRecord,
  TopicDescription,
  TransactionSpec,
  TransformOptions,
} from '../driver.ts';
import { CODECS } from '../driver.ts';
import { sleep } from '../support/process.ts';

// kafkajs is CommonJS; Node's named-export detection misses some of its exports.
const { CompressionCodecs, CompressionTypes, ConfigResourceTypes, Kafka, Partitioners, logLevel } = kafkajsModule;
type Kafka = InstanceType<typeof Kafka>;

// kafkajs ships gzip only and asks applications to register the other codecs, as its
// kafkajs-snappy / kafkajs-lz4 companions do; these use the same native libraries as Sluice.
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);

function unsnappy(buffer: Buffer): Buffer {
  if (!buffer.subarray(0, 8).equals(XERIAL_MAGIC)) return snappy.uncompressSync(buffer) as Buffer;
  const chunks: Buffer[] = [];
  for (let at = 16; at < buffer.length; ) {
    const size = buffer.readInt32BE(at);
    chunks.push(snappy.uncompressSync(buffer.subarray(at + 4, at + 4 + size)) as Buffer);
    at += 4 + size;
  }
  return Buffer.concat(chunks);
}

type Encoder = { buffer: Buffer };
const codecs = CompressionCodecs as unknown as Record<number, () => unknown>;
codecs[CompressionTypes.Snappy] = () => ({
  compress: async (encoder: Encoder) => snappy.compressSync(encoder.buffer),
  decompress: async (buffer: Buffer) => unsnappy(buffer),
});
codecs[CompressionTypes.LZ4] = () => ({
  compress: async (encoder: Encoder) => lz4.compressFrame(encoder.buffer),
  decompress: async (buffer: Buffer) => lz4.decompressFrame(buffer),
});
codecs[CompressionTypes.ZSTD] = () => ({
  compress: async (encoder: Encoder) => zstd.compress(encoder.buffer),
  decompress: async (buffer: Buffer) => zstd.decompress(buffer),
});
codecs[CompressionTypes.GZIP] = () => ({
  compress: async (encoder: Encoder) => promisify(gzip)(encoder.buffer),
  decompress: async (buffer: Buffer) => promisify(gunzip)(buffer),
});

const COMPRESSION: Record<Codec, number> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};

function toHeaders(headers: Header[]): IHeaders {
  const out: Record<string, string[]> = {};
  for (const [k, v] of headers) {
    const values = out[k] ?? [];
    values.push(v);
    out[k] = values;
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.length === 1 ? v[0]! : v]));
}

function fromHeaders(headers: IHeaders | undefined): Header[] {
  const out: Header[] = [];
  for (const [k, v] of Object.entries(headers ?? {})) {
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, one === undefined ? '' : one.toString()]);
  }
  return out;
}

function fromMessage(partition: number, m: KafkaMessage): ConsumedRecord {
  return {
    partition,
    offset: Number(m.offset),
    key: m.key === null ? null : m.key.toString(),
    value: m.value === null ? '' : m.value.toString(),
    headers: fromHeaders(m.headers),
    timestamp: Number(m.timestamp),
  };
}

const INFO: DriverInfo = {
  client: 'kafkajs',
  features: {
    recordTimestamps: true,
    recordHeaders: true,
    duplicateHeaderKeys: true,
    murmur2: true,
    idempotence: true,
    transactions: true,
    admin: true,
    groups: true,
    listOffsets: true,
    pastEndTimestamp: 'latest',
    wokenByAppend: false,
    resetsOutOfRange: true,
    codecs: CODECS,
  },
  producerRequires: [],
  // kafkajs consumes only as a group member.
  consumerRequires: ['groups'],
  errors: {
    unknownTopic: /does not host this topic-partition/,
    messageTooLarge: /larger than the max message size the server will accept|KafkaJSProtocolError.*MESSAGE_TOO_LARGE/,
  },
};

class KafkajsDriver implements Driver {
  readonly client = INFO.client;
  readonly features = INFO.features;
  readonly producerRequires = INFO.producerRequires;
  readonly consumerRequires = INFO.consumerRequires;
  readonly errors = INFO.errors;

  private readonly kafka: Kafka;
  private adminClient: Admin | null = null;

  constructor(bootstrap: string) {
    this.kafka = new Kafka({
      clientId: 'compat-kafkajs',
      brokers: bootstrap.split(','),
      logLevel: logLevel.NOTHING,
    });
  }

  private async admin(): Promise<Admin> {
    if (!this.adminClient) {
      // Fewer retries than its default: the unknown-topic scenario waits for them all.
      const admin = this.kafka.admin({ retry: { retries: 2, initialRetryTime: 100 } });
      await admin.connect();
      this.adminClient = admin;
    }
    return this.adminClient;
  }

  async metadata(): Promise<ClusterInfo> {
    const admin = await this.admin();
    const cluster = await admin.describeCluster();
    return {
      brokers: cluster.brokers.map((b) => ({ id: b.nodeId, host: b.host, port: b.port })),
      controllerId: cluster.controller,
      topics: await admin.listTopics(),
    };
  }

  async describeTopic(topic: string): Promise<TopicDescription> {
    const admin = await this.admin();
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    return { partitions: topics[0]!.partitions.length };
  }

  async createTopic(topic: string, partitions: number, configs: Record<string, string>): Promise<void> {
    const admin = await this.admin();
    const created = await admin.createTopics({
      // Its wait for leaders asks one broker and fails on UNKNOWN_TOPIC_OR_PARTITION while the
      // others learn of the topic; the scenarios wait for the topic to show instead.
      waitForLeaders: false,
      topics: [
        {
          topic,
          numPartitions: partitions,
          replicationFactor: 1,
          configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })),
        },
      ],
    });
    if (!created) throw new Error(`${topic} already exists`);
  }

  async listTopics(): Promise<string[]> {
    return (await this.admin()).listTopics();
  }

  async createPartitions(topic: string, count: number): Promise<void> {
    await (await this.admin()).createPartitions({ topicPartitions: [{ topic, count }] });
  }

  async describeConfigs(topic: string): Promise<Record<string, string>> {
    const result = await (await this.admin()).describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
      includeSynonyms: false,
    });
    return Object.fromEntries(result.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
  }

  async alterConfigs(topic: string, configs: Record<string, string>): Promise<void> {
    await (await this.admin()).alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: topic,
          configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })),
        },
      ],
    });
  }

  async deleteTopic(topic: string): Promise<void> {
    await (await this.admin()).deleteTopics({ topics: [topic] });
  }

  async produce(topic: string, records: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]> {
    const producer = this.kafka.producer({
      allowAutoTopicCreation: false,
      idempotent: options.idempotent,
      maxInFlightRequests: options.idempotent ? 1 : undefined,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    try {
      await producer.send({
        topic,
        acks: -1,
        compression: COMPRESSION[options.codec],
        messages: records.map((r) => ({
          key: r.key,
          value: r.value,
          headers: toHeaders(r.headers),
          timestamp: r.timestamp === undefined ? undefined : String(r.timestamp),
        })),
      });
    } finally {
      await producer.disconnect();
    }
    // kafkajs reports one base offset per partition, not where each record went.
    return [];
  }

  async consume(options: ConsumeOptions): Promise<ConsumedRecord[]> {
    const consumer = this.kafka.consumer({
      groupId: `compat-kafkajs-${randomUUID()}`,
      maxWaitTimeInMs: options.maxWaitMs ?? 500,
      ...(options.readCommitted === undefined ? {} : { readUncommitted: !options.readCommitted }),
    });
    const records: ConsumedRecord[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [options.topic], fromBeginning: options.autoOffsetReset === 'earliest' });
      const done = collect(consumer, records, options.count, options.timeoutMs);
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          records.push(fromMessage(partition, message));
        },
      });
      const from = options.from;
      if (typeof from === 'object') {
        for (const partition of options.partitions) consumer.seek({ topic: options.topic, partition, offset: String(from.offset) });
      }
      await done;
    } finally {
      await consumer.disconnect();
    }
    return records;
  }

  async produceTransactions(topic: string, transactionalId: string, transactions: TransactionSpec[]): Promise<void> {
    const producer = this.kafka.producer({
      allowAutoTopicCreation: false,
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    try {
      for (const spec of transactions) {
        const txn = await producer.transaction();
        await txn.send({
          topic,
          acks: -1,
          messages: spec.records.map((r) => ({ key: r.key, value: r.value, headers: toHeaders(r.headers) })),
        });
        if (spec.commit) await txn.commit();
        else await txn.abort();
      }
    } finally {
      await producer.disconnect();
    }
  }

  async transformInTransaction(options: TransformOptions): Promise<void> {
    const consumer = this.kafka.consumer({ groupId: options.group, readUncommitted: false, maxWaitTimeInMs: 500 });
    const producer = this.kafka.producer({
      allowAutoTopicCreation: false,
      transactionalId: options.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    const read: { partition: number; offset: number; value: string }[] = [];
    await consumer.connect();
    await producer.connect();
    try {
      await consumer.subscribe({ topics: [options.input], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          read.push({ partition, offset: Number(message.offset), value: message.value?.toString() ?? '' });
        },
      });
      await waitFor(
        () => read.length >= options.count,
        options.timeoutMs,
        () => `read ${read.length} of ${options.count} records`,
      );
      await consumer.pause([{ topic: options.input }]);
      const next = new Map<number, number>();
      for (const r of read) next.set(r.partition, Math.max(next.get(r.partition) ?? 0, r.offset + 1));
      const txn = await producer.transaction();
      await txn.send({ topic: options.output, acks: -1, messages: read.map((r) => ({ value: r.value })) });
      await txn.sendOffsets({
        consumerGroupId: options.group,
        topics: [{ topic: options.input, partitions: [...next].map(([partition, offset]) => ({ partition, offset: String(offset) })) }],
      });
      await txn.commit();
    } finally {
      await producer.disconnect();
      await consumer.disconnect();
    }
  }

  async listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<number | null> {
    const admin = await this.admin();
    if (typeof spec === 'object') {
      const offsets = await admin.fetchTopicOffsetsByTimestamp(topic, spec.timestamp);
      const found = offsets.find((o) => o.partition === partition)!;
      return Number(found.offset) >= 0 ? Number(found.offset) : null;
    }
    const offsets = await admin.fetchTopicOffsets(topic);
    const found = offsets.find((o) => o.partition === partition)!;
    return Number(spec === 'earliest' ? found.low : found.high);
  }

  async groupConsume(options: GroupConsumeOptions): Promise<GroupConsumeResult> {
    const records: ConsumedRecord[] = [];
    const assignments: number[][] = [];
    const consumers: Consumer[] = [];
    try {
      for (let i = 0; i < options.members; i++) {
        const consumer = this.kafka.consumer({ groupId: options.group, allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
        consumers.push(consumer);
        assignments.push([]);
        consumer.on(consumer.events.GROUP_JOIN, (event) => {
          assignments[i] = [...(event.payload.memberAssignment[options.topic] ?? [])].sort((a, b) => a - b);
        });
        await consumer.connect();
        await consumer.subscribe({ topics: [options.topic], fromBeginning: true });
      }
      const done = waitFor(
        () => unique(records).length >= options.count,
        options.timeoutMs,
        () => `received ${unique(records).length} of ${options.count} records`,
      );
      await Promise.all(
        consumers.map((consumer) =>
          consumer.run({
            autoCommit: true,
            autoCommitThreshold: 1,
            eachMessage: async ({ partition, message }) => {
              records.push(fromMessage(partition, message));
            },
          }),
        ),
      );
      await done;
      // The first member to join may start alone and be reassigned when the others arrive.
      await waitFor(
        () => settled(assignments),
        options.timeoutMs,
        () => JSON.stringify(assignments),
      );
    } finally {
      for (const consumer of consumers) await consumer.disconnect();
    }
    return { assignments, records: unique(records) };
  }

  async committedOffsets(group: string, topic: string, partitions: number): Promise<(number | null)[]> {
    const [result] = await (await this.admin()).fetchOffsets({ groupId: group, topics: [topic] });
    const byPartition = new Map(result!.partitions.map((p) => [p.partition, Number(p.offset)]));
    return Array.from({ length: partitions }, (_, p) => {
      const offset = byPartition.get(p);
      return offset === undefined || offset < 0 ? null : offset;
    });
  }

  async close(): Promise<void> {
    await this.adminClient?.disconnect();
    this.adminClient = null;
  }
}

function settled(assignments: number[][]): boolean {
  const all = assignments.flat();
  return assignments.every((a) => a.length > 0) && new Set(all).size === all.length;
}

// A member that loses partitions in a rebalance may hand over records it had read but not yet
// committed (at-least-once); the group's result is each record once.
function unique(records: ConsumedRecord[]): ConsumedRecord[] {
  const seen = new Map<string, ConsumedRecord>();
  for (const r of records) seen.set(`${r.partition}:${r.offset}`, r);
  return [...seen.values()];
}

async function collect(_consumer: Consumer, records: ConsumedRecord[], count: number, timeoutMs: number): Promise<void> {
  await waitFor(
    () => records.length >= count,
    timeoutMs,
    () => `received ${records.length} of ${count} records`,
  );
}

async function waitFor(done: () => boolean, timeoutMs: number, describe?: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms${describe ? `: ${describe()}` : ''}`);
    await sleep(20);
  }
}

export const kafkajs: DriverFactory = {
  info: INFO,
  unavailable: () => null,
  create: (bootstrap) => new KafkajsDriver(bootstrap),
};
