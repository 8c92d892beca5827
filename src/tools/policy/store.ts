/**
 * The policy store: what `sluice apply` keeps about the topics it manages, where Kafka has no
 * topic config for it (key and value schemas, the delivery contract), so that `sluice topics
 * describe`, the admin API and `sluice apply --export` can show it. It is an ordinary compacted
 * topic, `__sluice_topic_policies` (one partition), so it works against any Kafka-compatible
 * cluster: key the topic name, value the JSON of the policy as last applied, a tombstone once
 * apply deleted the topic. Reading it to its end, the last value per key wins.
 */
import { Errors } from '../../../protocol/errors.ts';
import type { KafkaCluster } from '../../client/cluster.ts';
import { EARLIEST_TIMESTAMP, listOffsets, tpKey } from '../../client/offsets.ts';
import { TopicProducer } from '../../client/producer.ts';
import { readPartition } from '../../client/records.ts';
import { createTopic } from '../../client/topics.ts';
import { type TopicPolicy, checkPolicy } from './policy.ts';

export const POLICY_STORE_TOPIC = '__sluice_topic_policies';
const STORE_PARTITION = 0;
/** The store's replication factor where the cluster has the brokers for it. */
const STORE_REPLICATION_FACTOR = 3;
/** Records per read of the store; the loop reads on to the high watermark. */
const READ_BATCH_RECORDS = 1000;
/** Reads of the store before giving up reaching its end (a million policies). */
const MAX_READS = 1000;
const WRITE_TIMEOUT_MS = 30_000;

export interface PolicyStoreContents {
  /** The last policy stored per topic. */
  policies: Map<string, TopicPolicy>;
  /** Offsets of records that are not a policy of the topic they are keyed by (not written by apply). */
  skipped: number[];
}

/** A stored record's policy, or null when it is not one of the topic named by its key. */
function storedPolicy(key: string, value: Buffer): TopicPolicy | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    return null;
  }
  const { policy } = checkPolicy(parsed);
  return policy !== null && policy.name === key ? policy : null;
}

/** Whether the store exists; the cluster has none until the first apply that stores something. */
async function storeExists(cluster: KafkaCluster): Promise<boolean> {
  const res = await cluster.metadata([POLICY_STORE_TOPIC]);
  const t = res.topics.find((x) => x.name === POLICY_STORE_TOPIC);
  return t !== undefined && t.errorCode === Errors.NONE.code;
}

/** Every policy in the store (none when there is no store yet). */
export async function readPolicyStore(cluster: KafkaCluster): Promise<PolicyStoreContents> {
  const contents: PolicyStoreContents = { policies: new Map(), skipped: [] };
  if (!(await storeExists(cluster))) return contents;
  const tp = { topic: POLICY_STORE_TOPIC, partition: STORE_PARTITION };
  let position = (await listOffsets(cluster, [tp], EARLIEST_TIMESTAMP)).get(tpKey(tp.topic, tp.partition)) ?? 0;
  for (let reads = 0; reads < MAX_READS; reads++) {
    const read = await readPartition(cluster, tp.topic, tp.partition, position, READ_BATCH_RECORDS);
    for (const r of read.records) {
      if (r.key === null) {
        contents.skipped.push(r.offset);
        continue;
      }
      const key = r.key.toString('utf8');
      if (r.value === null) {
        contents.policies.delete(key);
        continue;
      }
      const policy = storedPolicy(key, r.value);
      if (policy === null) contents.skipped.push(r.offset);
      else contents.policies.set(key, policy);
    }
    const last = read.records.at(-1);
    // Compaction leaves gaps in offsets: an empty read means nothing is left below the high watermark.
    if (last === undefined || last.offset + 1 >= read.highWatermark) return contents;
    position = last.offset + 1;
  }
  throw new Error(`${POLICY_STORE_TOPIC} did not end after ${MAX_READS * READ_BATCH_RECORDS} records`);
}

/** Writes to the store, creating it on first use. */
export class PolicyStoreWriter {
  private producer: TopicProducer | null = null;

  constructor(
    private readonly cluster: KafkaCluster,
    private readonly brokerCount: number,
  ) {}

  private async open(): Promise<TopicProducer> {
    if (this.producer !== null) return this.producer;
    await createTopic(
      this.cluster,
      {
        name: POLICY_STORE_TOPIC,
        numPartitions: 1,
        replicationFactor: Math.min(STORE_REPLICATION_FACTOR, this.brokerCount),
        configs: [['cleanup.policy', 'compact']],
      },
      true,
    );
    const producer = new TopicProducer(this.cluster, POLICY_STORE_TOPIC, { acks: -1, timeoutMs: WRITE_TIMEOUT_MS });
    await producer.open();
    this.producer = producer;
    return producer;
  }

  private async write(name: string, value: Buffer | null): Promise<void> {
    const producer = await this.open();
    await producer.send([{ key: Buffer.from(name, 'utf8'), value, headers: [], partition: STORE_PARTITION, timestamp: null }]);
  }

  /** Remembers `policy` as the one applied to its topic. */
  put(policy: TopicPolicy): Promise<void> {
    return this.write(policy.name, Buffer.from(JSON.stringify(policy), 'utf8'));
  }

  /** Forgets a topic apply deleted (a tombstone: compaction removes its policy). */
  remove(name: string): Promise<void> {
    return this.write(name, null);
  }
}
