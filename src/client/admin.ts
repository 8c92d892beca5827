/**
 * The cluster as an admin client describes it, over the wire only: its brokers and active
 * controller (Metadata) and its metadata quorum (DescribeQuorum, which brokers forward to the
 * controllers). Works against any Kafka-compatible cluster.
 */
import { Errors } from '../../protocol/errors.ts';
import { METADATA_TOPIC } from '../../protocol/internal-topics.ts';
import {
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
  type DescribeQuorumResponse,
  type DescribeQuorumResponsePartitionData,
  type DescribeQuorumResponseReplicaState,
} from '../../protocol/messages/describe-quorum.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import { type KafkaCluster, kafkaError } from './cluster.ts';
import type { KafkaConnection } from './connection.ts';

export interface QuorumReplica {
  nodeId: number;
  logEndOffset: number;
  /** -1 when unknown. */
  lastCaughtUpTimestampMs: number;
}

export interface ClusterDescription {
  clusterId: string | null;
  controllerId: number;
  brokers: { nodeId: number; host: string; port: number; rack: string | null }[];
  /** null when the cluster does not answer DescribeQuorum (an older Kafka, ZooKeeper mode). */
  quorum: {
    leaderId: number;
    leaderEpoch: number;
    highWatermark: number;
    voters: QuorumReplica[];
    observers: QuorumReplica[];
  } | null;
}

/**
 * DescribeQuorum of the metadata partition, as the connected node answers it (a controller
 * itself, a broker by forwarding): the whole answer (its `nodes` carry the voters' listeners)
 * and the partition's state, whose own error (NOT_LEADER_OR_FOLLOWER from a controller that
 * is not the leader) is the caller's to read. A refused request throws Kafka's error.
 */
export async function describeQuorum(
  conn: KafkaConnection,
): Promise<{ response: DescribeQuorumResponse; partition: DescribeQuorumResponsePartitionData }> {
  const response = await conn.send<DescribeQuorumResponse>(
    ApiKey.DescribeQuorum,
    makeDescribeQuorumRequest({
      topics: [
        makeDescribeQuorumRequestTopicData({
          topicName: METADATA_TOPIC,
          partitions: [makeDescribeQuorumRequestPartitionData({ partitionIndex: 0 })],
        }),
      ],
    }),
  );
  if (response.errorCode !== Errors.NONE.code) throw kafkaError(response.errorCode, 'DescribeQuorum');
  const partition = response.topics[0]?.partitions[0];
  if (partition === undefined) throw new Error('DescribeQuorum answered without the metadata partition');
  return { response, partition };
}

export async function describeCluster(cluster: KafkaCluster): Promise<ClusterDescription> {
  const metadata = await cluster.metadata([]);
  const conn = await cluster.anyConnection();
  let quorum: ClusterDescription['quorum'] = null;
  if (conn.brokerVersions.has(ApiKey.DescribeQuorum)) {
    const { partition } = await describeQuorum(conn);
    if (partition.errorCode !== Errors.NONE.code) throw kafkaError(partition.errorCode, 'DescribeQuorum');
    const replica = (r: DescribeQuorumResponseReplicaState): QuorumReplica => ({
      nodeId: r.replicaId,
      logEndOffset: Number(r.logEndOffset),
      lastCaughtUpTimestampMs: Number(r.lastCaughtUpTimestamp),
    });
    quorum = {
      leaderId: partition.leaderId,
      leaderEpoch: partition.leaderEpoch,
      highWatermark: Number(partition.highWatermark),
      voters: partition.currentVoters.map(replica),
      observers: partition.observers.map(replica),
    };
  }
  return {
    clusterId: metadata.clusterId,
    controllerId: metadata.controllerId,
    brokers: metadata.brokers
      .map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
      .sort((a, b) => a.nodeId - b.nodeId),
    quorum,
  };
}
