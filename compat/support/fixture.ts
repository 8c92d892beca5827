import { Kafka, logLevel } from 'kafkajs';
import type { Admin, Producer } from 'kafkajs';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { sleep } from './process.ts';

const TOPIC_READY_TIMEOUT_MS = 30_000;

// Set-up and inspection done beside the client under test: creating the topics a scenario
// needs and reading end offsets, so that a scenario about consuming does not depend on the
// same client's admin API. It uses kafkajs, whose own cells check these APIs in turn.
export class Fixture {
  private readonly kafka: Kafka;
  private readonly brokers: string[];
  private admin: Admin | null = null;
  private producer: Producer | null = null;

  /** `bootstrap`: host:port, or host:port,host:port,... naming every broker of a cluster. */
  constructor(bootstrap: string) {
    this.brokers = bootstrap.split(',');
    this.kafka = new Kafka({
      clientId: 'compat-fixture',
      brokers: this.brokers,
      logLevel: logLevel.NOTHING,
      retry: { retries: 5, initialRetryTime: 100 },
    });
  }

  private async connectedAdmin(): Promise<Admin> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    return this.admin;
  }

  /**
   * Creates the topic with the broker's default replication factor (one replica on one node,
   * three on a cluster) unless `replicationFactor` names one, and waits until every broker of the bootstrap serves every partition
   * with a leader. Kafka answers Metadata from each broker's own copy of the metadata log, so
   * right after CreateTopics a broker may still say UNKNOWN_TOPIC_OR_PARTITION: that is waited
   * out, as kafkajs's waitForLeaders (which asks one broker) would not.
   */
  async createTopic(topic: string, partitions: number, configs: Record<string, string> = {}, replicationFactor = -1): Promise<void> {
    const admin = await this.connectedAdmin();
    const created = await admin.createTopics({
      // kafkajs's own wait asks one broker and gives up on UNKNOWN_TOPIC_OR_PARTITION.
      waitForLeaders: false,
      topics: [
        {
          topic,
          numPartitions: partitions,
          replicationFactor,
          configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })),
        },
      ],
    });
    if (!created) throw new Error(`topic ${topic} already existed`);
    const deadlineMs = Date.now() + TOPIC_READY_TIMEOUT_MS;
    for (const broker of this.brokers) {
      // Sluice's own client, because it asks exactly the broker it is given.
      const probe = new KafkaCluster([broker]);
      try {
        for (;;) {
          const led = await probe.metadata([topic]).then(
            (res) => res.topics[0]?.partitions.filter((p) => p.errorCode === 0 && p.leaderId >= 0).length ?? 0,
            () => 0,
          );
          if (led === partitions) break;
          if (Date.now() > deadlineMs)
            throw new Error(`topic ${topic}: ${led} of ${partitions} partitions led at ${broker} after ${TOPIC_READY_TIMEOUT_MS} ms`);
          await sleep(50);
        }
      } finally {
        await probe.close();
      }
    }
    // A broker serves the topic's metadata a moment before its partitions exist (Kafka updates
    // its metadata cache, then its ReplicaManager): until then a produce can fail for one
    // partition, and a client that retries a whole request (platformatic) duplicates the
    // others. ListOffsets reaches every partition's leader: once it answers, they all exist.
    for (;;) {
      const served = await admin.fetchTopicOffsets(topic).then(
        (offsets) => offsets.length === partitions,
        () => false,
      );
      if (served) return;
      if (Date.now() > deadlineMs)
        throw new Error(`topic ${topic}: ListOffsets not answered for every partition after ${TOPIC_READY_TIMEOUT_MS} ms`);
      await sleep(50);
    }
  }

  async endOffsets(topic: string): Promise<number[]> {
    const admin = await this.connectedAdmin();
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
  }

  async committedOffsets(group: string, topic: string, partitions: number): Promise<(number | null)[]> {
    const admin = await this.connectedAdmin();
    const [result] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    const byPartition = new Map(result!.partitions.map((p) => [p.partition, Number(p.offset)]));
    return Array.from({ length: partitions }, (_, p) => {
      const offset = byPartition.get(p);
      return offset === undefined || offset < 0 ? null : offset;
    });
  }

  // Uncompressed, non-idempotent writes with explicit timestamps, to seed a topic.
  async seed(topic: string, partition: number, values: string[], timestamps?: number[]): Promise<void> {
    if (!this.producer) {
      const producer = this.kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      this.producer = producer;
    }
    await this.producer.send({
      topic,
      acks: -1,
      messages: values.map((value, i) => ({
        partition,
        key: `seed-${i}`,
        value,
        timestamp: timestamps ? String(timestamps[i]) : undefined,
      })),
    });
  }

  async close(): Promise<void> {
    await this.producer?.disconnect();
    await this.admin?.disconnect();
    this.producer = null;
    this.admin = null;
  }
}
