/**
 * Partition reassignments as an admin client drives them (kafka-reassign-partitions), over the
 * wire only: AlterPartitionReassignments to move partitions to new replica lists, and
 * ListPartitionReassignments to see which moves are still copying data. Brokers forward both to
 * the active controller, so any broker will do.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAlterPartitionReassignmentsRequest,
  makeAlterPartitionReassignmentsRequestReassignablePartition,
  makeAlterPartitionReassignmentsRequestReassignableTopic,
  type AlterPartitionReassignmentsResponse,
} from '../../protocol/messages/alter-partition-reassignments.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeListPartitionReassignmentsRequest,
  makeListPartitionReassignmentsRequestListPartitionReassignmentsTopics,
  type ListPartitionReassignmentsResponse,
} from '../../protocol/messages/list-partition-reassignments.ts';
import type { KafkaCluster } from './cluster.ts';
import { brokerError } from './errors.ts';

/** How long the controller may take to answer (Kafka's admin default). */
const ADMIN_TIMEOUT_MS = 30_000;

/** A partition's target replicas, the preferred leader first. */
export interface PartitionReassignment {
  partition: number;
  replicas: readonly number[];
}

/** A reassignment under way: the replicas being added still catch up, the removed ones still serve. */
export interface OngoingReassignment {
  partition: number;
  replicas: number[];
  addingReplicas: number[];
  removingReplicas: number[];
}

/** AlterPartitionReassignments for one topic; throws Kafka's error of the first partition refused. */
export async function alterPartitionReassignments(
  cluster: KafkaCluster,
  topic: string,
  reassignments: readonly PartitionReassignment[],
): Promise<void> {
  const conn = await cluster.anyConnection();
  const res = await conn.send<AlterPartitionReassignmentsResponse>(
    ApiKey.AlterPartitionReassignments,
    makeAlterPartitionReassignmentsRequest({
      timeoutMs: ADMIN_TIMEOUT_MS,
      topics: [
        makeAlterPartitionReassignmentsRequestReassignableTopic({
          name: topic,
          partitions: reassignments.map((r) =>
            makeAlterPartitionReassignmentsRequestReassignablePartition({ partitionIndex: r.partition, replicas: [...r.replicas] }),
          ),
        }),
      ],
    }),
  );
  if (res.errorCode !== Errors.NONE.code) throw brokerError(res.errorCode, res.errorMessage, `AlterPartitionReassignments '${topic}'`);
  for (const p of res.responses.flatMap((t) => t.partitions)) {
    if (p.errorCode !== Errors.NONE.code) {
      throw brokerError(p.errorCode, p.errorMessage, `AlterPartitionReassignments ${topic}-${p.partitionIndex}`);
    }
  }
}

/** The reassignments of `topic`'s partitions still under way (ListPartitionReassignments). */
export async function listPartitionReassignments(
  cluster: KafkaCluster,
  topic: string,
  partitions: readonly number[],
): Promise<OngoingReassignment[]> {
  const conn = await cluster.anyConnection();
  const res = await conn.send<ListPartitionReassignmentsResponse>(
    ApiKey.ListPartitionReassignments,
    makeListPartitionReassignmentsRequest({
      timeoutMs: ADMIN_TIMEOUT_MS,
      topics: [makeListPartitionReassignmentsRequestListPartitionReassignmentsTopics({ name: topic, partitionIndexes: [...partitions] })],
    }),
  );
  if (res.errorCode !== Errors.NONE.code) throw brokerError(res.errorCode, res.errorMessage, `ListPartitionReassignments '${topic}'`);
  return res.topics
    .filter((t) => t.name === topic)
    .flatMap((t) => t.partitions)
    .map((p) => ({
      partition: p.partitionIndex,
      replicas: p.replicas,
      addingReplicas: p.addingReplicas,
      removingReplicas: p.removingReplicas,
    }));
}
