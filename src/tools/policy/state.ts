/**
 * The cluster as `sluice apply` plans against it, read over the wire: the live brokers
 * (Metadata), the brokers' defaults for what a policy leaves out and the configs in effect on
 * each topic (DescribeConfigs), each topic's replica lists (Metadata), and the policy store.
 */
import { Errors } from '../../../protocol/errors.ts';
import type { KafkaCluster } from '../../client/cluster.ts';
import { describeConfigs } from '../../client/configs.ts';
import { brokerError } from '../../client/errors.ts';
import type { ClusterDefaults, ClusterState, TopicState } from './plan.ts';
import { normalizeCleanupPolicy } from './policy.ts';
import { type PolicyStoreContents, readPolicyStore } from './store.ts';

/** Kafka's own defaults, for a broker that does not report a setting. */
const KAFKA_DEFAULTS: ClusterDefaults = { replicationFactor: 1, minInsyncReplicas: 1, cleanupPolicy: 'delete' };

async function brokerDefaults(cluster: KafkaCluster, brokerId: number): Promise<ClusterDefaults> {
  const configs = new Map((await describeConfigs(cluster, { type: 'broker', name: String(brokerId) }, true)).map((c) => [c.name, c.value]));
  const int = (name: string, fallback: number): number => {
    const v = configs.get(name);
    return v !== null && v !== undefined && /^\d+$/.test(v) ? Number(v) : fallback;
  };
  const cleanup = configs.get('log.cleanup.policy');
  return {
    replicationFactor: int('default.replication.factor', KAFKA_DEFAULTS.replicationFactor),
    minInsyncReplicas: int('min.insync.replicas', KAFKA_DEFAULTS.minInsyncReplicas),
    cleanupPolicy: (typeof cleanup === 'string' ? normalizeCleanupPolicy(cleanup) : null) ?? KAFKA_DEFAULTS.cleanupPolicy,
  };
}

/** The replica lists of those of `names` that exist. */
async function topicReplicas(cluster: KafkaCluster, names: readonly string[]): Promise<Map<string, number[][]>> {
  const out = new Map<string, number[][]>();
  if (names.length === 0) return out;
  const res = await cluster.metadata(names);
  for (const t of res.topics) {
    if (t.name === null || t.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) continue;
    if (t.errorCode !== Errors.NONE.code) throw brokerError(t.errorCode, null, `topic '${t.name}'`);
    const replicas: number[][] = [];
    for (const p of t.partitions) replicas[p.partitionIndex] = p.replicaNodes;
    out.set(t.name, replicas);
  }
  return out;
}

export interface ReadState {
  state: ClusterState;
  /** The store as read, with the offsets of records that were not policies. */
  store: PolicyStoreContents;
}

/** The cluster's state for policies of `names` (and for every topic the store names). */
export async function readClusterState(cluster: KafkaCluster, names: readonly string[]): Promise<ReadState> {
  const brokers = (await cluster.listBrokers()).map((b) => b.nodeId);
  if (brokers.length === 0) throw new Error('the cluster lists no live broker');
  const [defaults, store] = await Promise.all([brokerDefaults(cluster, brokers[0]!), readPolicyStore(cluster)]);
  const all = [...new Set([...names, ...store.policies.keys()])];
  const replicas = await topicReplicas(cluster, all);
  const topics = new Map<string, TopicState>();
  await Promise.all(
    [...replicas].map(async ([name, r]) => {
      const configs = await describeConfigs(cluster, { type: 'topic', name }, true);
      topics.set(name, { replicas: r, configs: new Map(configs.map((c) => [c.name, c.value])) });
    }),
  );
  return { state: { brokers, defaults, topics, stored: store.policies }, store };
}
