import { randomUUID } from 'node:crypto';
import {
  Admin,
  ConfigResourceTypes,
  Consumer,
  IncrementalAlterConfigOperationTypes,
  Producer,
  compatibilityPartitioner,
  defaultPartitioner,
  stringDeserializers,
  stringSerializer,
} from '@platformatic/kafka-2';
import type { Message } from '@platformatic/kafka-2';
import type {
  ClusterInfo,
  ConsumeOptions,
  ConsumedRecord,
  Delivery,
  Driver,
  DriverInfo,
  GroupConsumeOptions,
  GroupConsumeResult,
  OffsetSpec,
  ProduceOptions,
  ProducedRecord,
  TopicDescription,
  TransactionSpec,
  TransformOptions,
} from '../driver.ts';
import { sleep } from '../support/process.ts';

// The @platformatic/kafka 2.x driver (the npm alias @platformatic/kafka-2), which needs
// Node >= 22.22: it runs in a Node 22 host process (host.ts) behind the proxy of
// compat/clients/platformatic.ts, which holds its DriverInfo.

// The Driver's operations, without its DriverInfo.
export type Operations = Omit<Driver, keyof DriverInfo>;

type StringMessage = Message<string, string, string, string>;

function toRecord(m: StringMessage): ConsumedRecord {
  return {
    partition: m.partition,
    offset: Number(m.offset),
    key: m.key ?? null,
    value: m.value ?? '',
    // headerEntries (new in 2.x) keeps every header; the headers Map keeps one per key.
    headers: m.headerEntries.map(([k, v]) => [String(k), String(v)]),
    timestamp: Number(m.timestamp),
  };
}

export class PlatformaticDriver implements Required<Operations> {
  private adminClient: Admin | null = null;

  constructor(private readonly bootstrap: string) {}

  private base(suffix: string) {
    return { clientId: `compat-platformatic-${suffix}`, bootstrapBrokers: this.bootstrap.split(','), retries: 2, autocreateTopics: false };
  }

  private admin(): Admin {
    this.adminClient ??= new Admin(this.base('admin'));
    return this.adminClient;
  }

  private consumer(groupId: string, maxWaitTime?: number): Consumer<string, string, string, string> {
    return new Consumer({ ...this.base('consumer'), groupId, deserializers: stringDeserializers, maxWaitTime });
  }

  async metadata(): Promise<ClusterInfo> {
    const md = await this.admin().metadata({ topics: [] });
    return {
      brokers: [...md.brokers.entries()].map(([id, b]) => ({ id, host: b.host, port: b.port })),
      controllerId: md.controllerId,
      topics: await this.admin().listTopics(),
    };
  }

  async describeTopic(topic: string): Promise<TopicDescription> {
    const md = await this.admin().metadata({ topics: [topic], forceUpdate: true });
    return { partitions: md.topics.get(topic)!.partitionsCount };
  }

  async createTopic(topic: string, partitions: number, configs: Record<string, string>): Promise<void> {
    await this.admin().createTopics({
      topics: [topic],
      partitions,
      replicas: 1,
      configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
    });
  }

  listTopics(): Promise<string[]> {
    return this.admin().listTopics();
  }

  async createPartitions(topic: string, count: number): Promise<void> {
    await this.admin().createPartitions({ topics: [{ name: topic, count }] });
  }

  async describeConfigs(topic: string): Promise<Record<string, string>> {
    const [described] = await this.admin().describeConfigs({
      resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic }],
    });
    return Object.fromEntries(described!.configs.map((c) => [c.name, c.value ?? '']));
  }

  async alterConfigs(topic: string, configs: Record<string, string>): Promise<void> {
    await this.admin().incrementalAlterConfigs({
      resources: [
        {
          resourceType: ConfigResourceTypes.TOPIC,
          resourceName: topic,
          configs: Object.entries(configs).map(([name, value]) => ({
            name,
            value,
            configOperation: IncrementalAlterConfigOperationTypes.SET,
          })),
        },
      ],
    });
  }

  async deleteTopic(topic: string): Promise<void> {
    await this.admin().deleteTopics({ topics: [topic] });
  }

  async produce(topic: string, records: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]> {
    // Header keys and values stay Buffers (no header serializers): the headers Map then holds
    // one entry per Buffer, so a record can carry one key twice, as Kafka allows.
    const producer = new Producer({
      ...this.base('producer'),
      serializers: { key: stringSerializer, value: stringSerializer },
      idempotent: options.idempotent,
      acks: -1,
      compression: options.codec,
      partitioner: options.murmur2 ? compatibilityPartitioner : defaultPartitioner,
    });
    try {
      await producer.send({
        // Again here: send() takes acks from its own options only, and without them it
        // answers after the leader's append (LEADER) unless idempotent, whatever the
        // constructor said (2.12: `options.acks ??= idempotent ? ALL : LEADER`).
        acks: -1,
        messages: records.map((r) => ({
          topic,
          key: r.key ?? undefined,
          value: r.value,
          headers: new Map(r.headers.map(([k, v]) => [Buffer.from(k), Buffer.from(v)])),
          timestamp: r.timestamp === undefined ? undefined : BigInt(r.timestamp),
        })),
      });
    } catch (error) {
      throw new Error(describe(error));
    } finally {
      await producer.close();
    }
    // It reports one offset per partition, not where each record went.
    return [];
  }

  async produceTransactions(topic: string, transactionalId: string, transactions: TransactionSpec[]): Promise<void> {
    const producer = new Producer({
      ...this.base('producer'),
      serializers: { key: stringSerializer, value: stringSerializer },
      transactionalId,
      idempotent: true,
      acks: -1,
      partitioner: compatibilityPartitioner,
    });
    try {
      for (const spec of transactions) {
        const txn = await producer.beginTransaction();
        await txn.send({
          acks: -1,
          messages: spec.records.map((r) => ({
            topic,
            key: r.key ?? undefined,
            value: r.value,
            headers: new Map(r.headers.map(([k, v]) => [Buffer.from(k), Buffer.from(v)])),
          })),
        });
        if (spec.commit) await txn.commit();
        else await txn.abort();
      }
    } catch (error) {
      throw new Error(describe(error));
    } finally {
      await producer.close();
    }
  }

  async consume(options: ConsumeOptions): Promise<ConsumedRecord[]> {
    const consumer = this.consumer(`compat-platformatic-${randomUUID()}`, options.maxWaitMs);
    const records: ConsumedRecord[] = [];
    try {
      const from = options.from;
      const stream = await consumer.consume({
        topics: [options.topic],
        autocommit: false,
        mode: typeof from === 'object' ? 'manual' : from,
        // Where to start without a committed offset, and (2.x) after OFFSET_OUT_OF_RANGE.
        fallbackMode: options.autoOffsetReset,
        ...(options.readCommitted === undefined ? {} : { isolationLevel: options.readCommitted ? 1 : 0 }),
        offsets:
          typeof from === 'object'
            ? options.partitions.map((partition) => ({ topic: options.topic, partition, offset: BigInt(from.offset) }))
            : undefined,
      });
      let failure: unknown = null;
      stream.on('error', (error) => (failure = error));
      stream.on('data', (m: StringMessage) => records.push(toRecord(m)));
      await waitFor(
        () => {
          if (failure) throw new Error(describe(failure));
          return records.length >= options.count;
        },
        options.timeoutMs,
        () => `received ${records.length} of ${options.count}`,
      );
      await stream.close();
    } finally {
      await consumer.close(true);
    }
    return records;
  }

  async transformInTransaction(options: TransformOptions): Promise<void> {
    const consumer = this.consumer(options.group);
    const producer = new Producer({
      ...this.base('producer'),
      serializers: { key: stringSerializer, value: stringSerializer },
      transactionalId: options.transactionalId,
      idempotent: true,
      acks: -1,
      partitioner: compatibilityPartitioner,
    });
    const read: StringMessage[] = [];
    try {
      const stream = await consumer.consume({
        topics: [options.input],
        autocommit: false,
        mode: 'committed',
        fallbackMode: 'earliest',
        isolationLevel: 1,
      });
      let failure: unknown = null;
      stream.on('error', (error) => (failure = error));
      stream.on('data', (m: StringMessage) => read.push(m));
      await waitFor(
        () => {
          if (failure) throw new Error(describe(failure));
          return read.length >= options.count;
        },
        options.timeoutMs,
        () => `read ${read.length} of ${options.count}`,
      );
      stream.pause();
      const txn = await producer.beginTransaction();
      await txn.send({ acks: -1, messages: read.map((m) => ({ topic: options.output, value: m.value })) });
      // The offset after the last record read of each partition, committed with the transaction.
      const last = new Map<number, StringMessage>();
      for (const m of read) if ((last.get(m.partition)?.offset ?? -1n) < m.offset) last.set(m.partition, m);
      await txn.addConsumer(consumer);
      for (const m of last.values()) await txn.addOffset(m);
      await txn.commit();
      await stream.close();
    } catch (error) {
      throw new Error(describe(error));
    } finally {
      await producer.close();
      await consumer.close(true);
    }
  }

  async listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<number | null> {
    const consumer = this.consumer(`compat-platformatic-${randomUUID()}`);
    try {
      const timestamp = spec === 'earliest' ? -2n : spec === 'latest' ? -1n : BigInt(spec.timestamp);
      const offsets = await consumer.listOffsets({ topics: [topic], timestamp });
      const offset = offsets.get(topic)![partition]!;
      return offset < 0n ? null : Number(offset);
    } finally {
      await consumer.close(true);
    }
  }

  async groupConsume(options: GroupConsumeOptions): Promise<GroupConsumeResult> {
    const records = new Map<string, ConsumedRecord>();
    const consumers = Array.from({ length: options.members }, () => this.consumer(options.group));
    try {
      const streams = await Promise.all(
        consumers.map((c) => c.consume({ topics: [options.topic], autocommit: false, mode: 'committed', fallbackMode: 'earliest' })),
      );
      let failure: unknown = null;
      for (const stream of streams) {
        stream.on('error', (error) => (failure = error));
        stream.on('data', (m: StringMessage) => {
          const r = toRecord(m);
          records.set(`${r.partition}:${r.offset}`, r);
          void m.commit();
        });
      }
      const assignments = () =>
        consumers.map((c) =>
          (c.assignments ?? [])
            .filter((a) => a.topic === options.topic)
            .flatMap((a) => a.partitions)
            .sort((x, y) => x - y),
        );
      const settled = () => {
        const all = assignments().flat();
        return assignments().every((a) => a.length > 0) && new Set(all).size === all.length;
      };
      await waitFor(
        () => {
          if (failure) throw new Error(describe(failure));
          return records.size >= options.count && settled();
        },
        options.timeoutMs,
        () => JSON.stringify(assignments()),
      );
      // Commits follow the records; the group is done when they reach the end of each partition.
      const ends = await consumers[0]!.listOffsets({ topics: [options.topic] });
      const endOffsets = ends.get(options.topic)!.map(Number);
      const deadline = Date.now() + options.timeoutMs;
      for (;;) {
        const committed = await this.committedOffsets(options.group, options.topic, endOffsets.length);
        if (committed.every((c, p) => (c ?? 0) >= endOffsets[p]!)) break;
        if (Date.now() > deadline) throw new Error(`commits did not reach the end: ${JSON.stringify(committed)}`);
        await sleep(100);
      }
      const result = assignments();
      await Promise.all(streams.map((s) => s.close()));
      return { assignments: result, records: [...records.values()] };
    } finally {
      await Promise.all(consumers.map((c) => c.close(true)));
    }
  }

  async committedOffsets(group: string, topic: string, partitions: number): Promise<(number | null)[]> {
    const [found] = await this.admin().listConsumerGroupOffsets({ groups: [group] });
    const t = found?.topics.find((x) => x.name === topic);
    return Array.from({ length: partitions }, (_, p) => {
      const offset = t?.partitions.find((x) => x.partitionIndex === p)?.committedOffset;
      return offset === undefined || offset < 0n ? null : Number(offset);
    });
  }

  async close(): Promise<void> {
    await this.adminClient?.close();
    this.adminClient = null;
  }
}

// Its errors nest (AggregateError of per-broker errors carrying Kafka's error names); the
// whole chain is the message a scenario matches.
function describe(error: unknown, depth = 0): string {
  if (!(error instanceof Error) || depth > 4) return String(error);
  const e = error as Error & { errors?: unknown[]; code?: unknown; apiCode?: unknown; response?: unknown };
  const parts = [`${e.name}: ${e.message}`];
  if (e.code !== undefined) parts.push(`code ${String(e.code)}`);
  if (e.response !== undefined) parts.push(`response ${JSON.stringify(e.response, (_, v) => (typeof v === 'bigint' ? v.toString() : v))}`);
  for (const inner of e.errors ?? []) parts.push(describe(inner, depth + 1));
  if (e.cause) parts.push(describe(e.cause, depth + 1));
  return parts.join(' | ');
}

async function waitFor(done: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${describe()}`);
    await sleep(20);
  }
}
