/**
 * Topics as an admin client manages them, over the wire only (so it works against any
 * Kafka-compatible cluster): list, describe (partitions, leaders, replicas, ISR, offsets and the
 * configs set on the topic), create, delete, alter configs and add partitions. Create and
 * delete wait (briefly) until the brokers' metadata shows the change, so that a caller can use
 * a topic right after creating it.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsRequestCreatableTopicConfig,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import {
  makeDeleteTopicsRequest,
  makeDeleteTopicsRequestDeleteTopicState,
  type DeleteTopicsResponse,
} from '../../protocol/messages/delete-topics.ts';
import {
  makeDescribeConfigsRequest,
  makeDescribeConfigsRequestDescribeConfigsResource,
  type DescribeConfigsResponse,
} from '../../protocol/messages/describe-configs.ts';
import {
  makeIncrementalAlterConfigsRequest,
  makeIncrementalAlterConfigsRequestAlterConfigsResource,
  makeIncrementalAlterConfigsRequestAlterableConfig,
  type IncrementalAlterConfigsResponse,
} from '../../protocol/messages/incremental-alter-configs.ts';
import {
  makeCreatePartitionsRequest,
  makeCreatePartitionsRequestCreatePartitionsTopic,
  type CreatePartitionsResponse,
} from '../../protocol/messages/create-partitions.ts';
import type { MetadataResponseTopic } from '../../protocol/messages/metadata.ts';
import {
  type DescribeTopicPartitionsResponse,
  makeDescribeTopicPartitionsRequest,
  makeDescribeTopicPartitionsRequestCursor,
  makeDescribeTopicPartitionsRequestTopicRequest,
} from '../../protocol/messages/describe-topic-partitions.ts';
import { KafkaError } from '../../protocol/errors.ts';
import type { KafkaCluster } from './cluster.ts';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey, type TopicPartition } from './offsets.ts';
import { UnknownTopicError, brokerError, sleep } from './errors.ts';

/** DescribeConfigs / IncrementalAlterConfigs resource type of a topic (Kafka's ConfigResource.Type.TOPIC). */
const TOPIC_RESOURCE_TYPE = 2;
/** DescribeConfigs v1+ config source of a value set on the topic itself (DYNAMIC_TOPIC_CONFIG). */
const TOPIC_CONFIG_SOURCE = 1;
/** IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType). */
const CONFIG_OP_SET = 0;
const CONFIG_OP_DELETE = 1;
/** How long the controller may take with a CreateTopics/DeleteTopics/CreatePartitions (Kafka's admin default). */
const ADMIN_TIMEOUT_MS = 30_000;
/** How long create and delete wait for the brokers' metadata to show the change. */
const METADATA_WAIT_MS = 15_000;
const METADATA_BACKOFF_MS = 100;

export interface TopicListing {
  name: string;
  topicId: string;
  partitionCount: number;
  internal: boolean;
}

export interface PartitionDescription {
  partition: number;
  /** null when the partition has no leader. */
  leader: number | null;
  replicas: number[];
  isr: number[];
  offline: number[];
  /** Eligible leader replicas (KIP-966); null when the cluster does not answer DescribeTopicPartitions. */
  elr: number[] | null;
  lastKnownElr: number[] | null;
  /** null when the partition has no leader to ask. */
  logStartOffset: number | null;
  logEndOffset: number | null;
}

export interface TopicDescription {
  name: string;
  topicId: string;
  internal: boolean;
  partitionCount: number;
  replicationFactor: number;
  /** The configs set on the topic itself, as kafka-topics --describe shows them (null: sensitive). */
  configs: Record<string, string | null>;
  partitions: PartitionDescription[];
}

export interface NewTopic {
  name: string;
  /** -1: the broker's num.partitions. */
  numPartitions: number;
  /** -1: the broker's default.replication.factor. */
  replicationFactor: number;
  configs: readonly (readonly [string, string])[];
}

export interface ConfigChanges {
  set: readonly (readonly [string, string])[];
  delete: readonly string[];
}

export async function listTopics(cluster: KafkaCluster, includeInternal: boolean): Promise<TopicListing[]> {
  const res = await cluster.metadata(null);
  return res.topics
    .filter((t) => t.name !== null && t.errorCode === Errors.NONE.code && (includeInternal || !t.isInternal))
    .map((t) => ({ name: t.name!, topicId: t.topicId, partitionCount: t.partitions.length, internal: t.isInternal }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The topics' metadata, in the order asked; an unknown topic throws UnknownTopicError. */
async function topicMetadata(cluster: KafkaCluster, names: readonly string[]): Promise<MetadataResponseTopic[]> {
  const res = await cluster.metadata(names);
  return names.map((name) => {
    const t = res.topics.find((x) => x.name === name);
    if (t === undefined || t.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(name);
    if (t.errorCode !== Errors.NONE.code) throw brokerError(t.errorCode, null, `topic '${name}'`);
    return t;
  });
}

/**
 * Each partition's ELR and LastKnownElr by DescribeTopicPartitions, following its cursor, as
 * Kafka's admin client describes topics; null from a cluster without that API.
 */
async function eligibleLeaderReplicas(
  cluster: KafkaCluster,
  names: readonly string[],
): Promise<Map<string, { elr: number[]; lastKnownElr: number[] }> | null> {
  const conn = await cluster.anyConnection();
  let version: number;
  try {
    version = conn.version(ApiKey.DescribeTopicPartitions);
  } catch (err) {
    if (err instanceof KafkaError && err.code === Errors.UNSUPPORTED_VERSION.code) return null;
    throw err;
  }
  const out = new Map<string, { elr: number[]; lastKnownElr: number[] }>();
  let cursor: { topicName: string; partitionIndex: number } | null = null;
  do {
    const res: DescribeTopicPartitionsResponse = await conn.send<DescribeTopicPartitionsResponse>(
      ApiKey.DescribeTopicPartitions,
      makeDescribeTopicPartitionsRequest({
        topics: names.map((name) => makeDescribeTopicPartitionsRequestTopicRequest({ name })),
        responsePartitionLimit: 2000,
        cursor: cursor === null ? null : makeDescribeTopicPartitionsRequestCursor(cursor),
      }),
      version,
    );
    for (const t of res.topics) {
      if (t.name === null) continue;
      for (const p of t.partitions) {
        out.set(tpKey(t.name, p.partitionIndex), { elr: p.eligibleLeaderReplicas ?? [], lastKnownElr: p.lastKnownElr ?? [] });
      }
    }
    cursor = res.nextCursor;
  } while (cursor !== null);
  return out;
}

/** The configs set on each topic (DescribeConfigs), keyed by topic. */
async function topicConfigs(cluster: KafkaCluster, names: readonly string[]): Promise<Map<string, Record<string, string | null>>> {
  const conn = await cluster.anyConnection();
  const version = conn.version(ApiKey.DescribeConfigs);
  const res = await conn.send<DescribeConfigsResponse>(
    ApiKey.DescribeConfigs,
    makeDescribeConfigsRequest({
      resources: names.map((resourceName) =>
        makeDescribeConfigsRequestDescribeConfigsResource({ resourceType: TOPIC_RESOURCE_TYPE, resourceName, configurationKeys: null }),
      ),
    }),
    version,
  );
  const out = new Map<string, Record<string, string | null>>();
  for (const r of res.results) {
    if (r.errorCode !== Errors.NONE.code) throw brokerError(r.errorCode, r.errorMessage, `DescribeConfigs '${r.resourceName}'`);
    const set = r.configs
      .filter((c) => (version === 0 ? !c.isDefault : c.configSource === TOPIC_CONFIG_SOURCE))
      .sort((a, b) => a.name.localeCompare(b.name));
    out.set(r.resourceName, Object.fromEntries(set.map((c) => [c.name, c.isSensitive ? null : c.value])));
  }
  return out;
}

/** The partition indexes of a topic, in order; UnknownTopicError when the cluster does not know it. */
export async function topicPartitions(cluster: KafkaCluster, topic: string): Promise<number[]> {
  const res = await cluster.metadata([topic]);
  const t = res.topics.find((x) => x.name === topic);
  if (t === undefined || t.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(topic);
  if (t.errorCode !== Errors.NONE.code) throw brokerError(t.errorCode, null, `topic '${topic}'`);
  return t.partitions.map((p) => p.partitionIndex).sort((a, b) => a - b);
}

/** Partitions, leaders, replicas, ISR, offsets and configs of each topic, as kafka-topics --describe shows them. */
export async function describeTopics(cluster: KafkaCluster, names: readonly string[]): Promise<TopicDescription[]> {
  const topics = await topicMetadata(cluster, names);
  const led: TopicPartition[] = topics.flatMap((t) =>
    t.partitions.filter((p) => p.leaderId >= 0).map((p) => ({ topic: t.name!, partition: p.partitionIndex })),
  );
  const [starts, ends, configs, elrs] = await Promise.all([
    led.length > 0 ? listOffsets(cluster, led, EARLIEST_TIMESTAMP) : new Map<string, number>(),
    led.length > 0 ? listOffsets(cluster, led, LATEST_TIMESTAMP) : new Map<string, number>(),
    topicConfigs(cluster, names),
    eligibleLeaderReplicas(cluster, names),
  ]);
  return topics.map((t) => {
    const name = t.name!;
    const partitions = [...t.partitions]
      .sort((a, b) => a.partitionIndex - b.partitionIndex)
      .map(
        (p): PartitionDescription => ({
          partition: p.partitionIndex,
          leader: p.leaderId >= 0 ? p.leaderId : null,
          replicas: p.replicaNodes,
          isr: p.isrNodes,
          offline: p.offlineReplicas,
          elr: elrs?.get(tpKey(name, p.partitionIndex))?.elr ?? null,
          lastKnownElr: elrs?.get(tpKey(name, p.partitionIndex))?.lastKnownElr ?? null,
          logStartOffset: starts.get(tpKey(name, p.partitionIndex)) ?? null,
          logEndOffset: ends.get(tpKey(name, p.partitionIndex)) ?? null,
        }),
      );
    return {
      name,
      topicId: t.topicId,
      internal: t.isInternal,
      partitionCount: partitions.length,
      replicationFactor: partitions[0]?.replicas.length ?? 0,
      configs: configs.get(name) ?? {},
      partitions,
    };
  });
}

/** Polls the metadata until `done` holds for it, or gives up silently after METADATA_WAIT_MS. */
async function awaitMetadata(cluster: KafkaCluster, names: readonly string[], done: (topics: MetadataResponseTopic[]) => boolean) {
  const deadline = Date.now() + METADATA_WAIT_MS;
  while (Date.now() < deadline) {
    const res = await cluster.metadata(names);
    if (done(res.topics)) return;
    await sleep(METADATA_BACKOFF_MS);
  }
}

/**
 * CreateTopics at any broker (it forwards to the controller, as for Kafka's admin client).
 * Returns false when the topic existed and `ifNotExists` was given.
 */
export async function createTopic(cluster: KafkaCluster, topic: NewTopic, ifNotExists: boolean): Promise<boolean> {
  const conn = await cluster.anyConnection();
  const version = conn.version(ApiKey.CreateTopics);
  if (version < 4 && (topic.numPartitions < 0 || topic.replicationFactor < 0)) {
    throw new Error(`the broker's CreateTopics v${version} has no defaults: give --partitions and --replication-factor`);
  }
  const res = await conn.send<CreateTopicsResponse>(
    ApiKey.CreateTopics,
    makeCreateTopicsRequest({
      timeoutMs: ADMIN_TIMEOUT_MS,
      topics: [
        makeCreateTopicsRequestCreatableTopic({
          name: topic.name,
          numPartitions: topic.numPartitions,
          replicationFactor: topic.replicationFactor,
          configs: topic.configs.map(([name, value]) => makeCreateTopicsRequestCreatableTopicConfig({ name, value })),
        }),
      ],
    }),
    version,
  );
  const result = res.topics.find((t) => t.name === topic.name);
  if (result === undefined) throw new Error(`CreateTopics answered without topic '${topic.name}'`);
  if (result.errorCode === Errors.TOPIC_ALREADY_EXISTS.code && ifNotExists) return false;
  if (result.errorCode !== Errors.NONE.code) throw brokerError(result.errorCode, result.errorMessage, `CreateTopics '${topic.name}'`);
  await awaitMetadata(cluster, [topic.name], (ts) =>
    ts.some((t) => t.name === topic.name && t.errorCode === Errors.NONE.code && t.partitions.every((p) => p.leaderId >= 0)),
  );
  return true;
}

/** DeleteTopics; returns the topics deleted (with `ifExists`, unknown ones are skipped). */
export async function deleteTopics(cluster: KafkaCluster, names: readonly string[], ifExists: boolean): Promise<string[]> {
  // As kafka-topics does, an unknown topic without --if-exists fails before anything is deleted.
  if (!ifExists) await topicMetadata(cluster, names);
  const conn = await cluster.anyConnection();
  const version = conn.version(ApiKey.DeleteTopics);
  const res = await conn.send<DeleteTopicsResponse>(
    ApiKey.DeleteTopics,
    // v6 names topics in `topics` (name or id); earlier versions in `topicNames`.
    makeDeleteTopicsRequest({
      timeoutMs: ADMIN_TIMEOUT_MS,
      topicNames: [...names],
      topics: names.map((name) => makeDeleteTopicsRequestDeleteTopicState({ name })),
    }),
    version,
  );
  const deleted: string[] = [];
  for (const name of names) {
    const r = res.responses.find((x) => x.name === name);
    if (r === undefined) throw new Error(`DeleteTopics answered without topic '${name}'`);
    if (r.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code && ifExists) continue;
    if (r.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(name);
    if (r.errorCode !== Errors.NONE.code) throw brokerError(r.errorCode, r.errorMessage, `DeleteTopics '${name}'`);
    deleted.push(name);
  }
  if (deleted.length > 0) await awaitMetadata(cluster, deleted, (ts) => !ts.some((t) => t.errorCode === Errors.NONE.code));
  return deleted;
}

/** IncrementalAlterConfigs on one topic: set and delete topic-level configs. */
export async function alterTopicConfigs(cluster: KafkaCluster, topic: string, changes: ConfigChanges): Promise<void> {
  const conn = await cluster.anyConnection();
  const res = await conn.send<IncrementalAlterConfigsResponse>(
    ApiKey.IncrementalAlterConfigs,
    makeIncrementalAlterConfigsRequest({
      resources: [
        makeIncrementalAlterConfigsRequestAlterConfigsResource({
          resourceType: TOPIC_RESOURCE_TYPE,
          resourceName: topic,
          configs: [
            ...changes.set.map(([name, value]) =>
              makeIncrementalAlterConfigsRequestAlterableConfig({ name, configOperation: CONFIG_OP_SET, value }),
            ),
            ...changes.delete.map((name) =>
              makeIncrementalAlterConfigsRequestAlterableConfig({ name, configOperation: CONFIG_OP_DELETE, value: null }),
            ),
          ],
        }),
      ],
    }),
  );
  const r = res.responses.find((x) => x.resourceName === topic);
  if (r === undefined) throw new Error(`IncrementalAlterConfigs answered without topic '${topic}'`);
  if (r.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(topic);
  if (r.errorCode !== Errors.NONE.code) throw brokerError(r.errorCode, r.errorMessage, `IncrementalAlterConfigs '${topic}'`);
}

/** CreatePartitions: grow the topic to `count` partitions, replicas placed by the controller. */
export async function increasePartitions(cluster: KafkaCluster, topic: string, count: number): Promise<void> {
  const conn = await cluster.anyConnection();
  const res = await conn.send<CreatePartitionsResponse>(
    ApiKey.CreatePartitions,
    makeCreatePartitionsRequest({
      timeoutMs: ADMIN_TIMEOUT_MS,
      topics: [makeCreatePartitionsRequestCreatePartitionsTopic({ name: topic, count, assignments: null })],
    }),
  );
  const r = res.results.find((x) => x.name === topic);
  if (r === undefined) throw new Error(`CreatePartitions answered without topic '${topic}'`);
  if (r.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(topic);
  if (r.errorCode !== Errors.NONE.code) throw brokerError(r.errorCode, r.errorMessage, `CreatePartitions '${topic}'`);
  await awaitMetadata(cluster, [topic], (ts) => ts.some((t) => t.name === topic && t.partitions.length >= count));
}
