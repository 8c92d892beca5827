// Read-side views of the MetadataImage shared by the Metadata, DescribeCluster, DescribeGroups and
// DescribeTopicPartitions handlers.

import type { BrokerRegistration, MetadataImage, PartitionImage } from './image.ts';
import { systemRandom, type Random } from '../runtime/random.ts';
import { AclOperation } from '../security/acl-types.ts';

/** Authorized-operations value when the client did not ask (Integer.MIN_VALUE). */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648;

/** Operations as the bits of an authorized-operations field. */
const operationBits = (...ops: number[]): number => ops.reduce((acc, op) => acc | (1 << op), 0);

/** Everything a topic supports: with no authorizer configured every principal may do it all. */
export const TOPIC_OPERATIONS = operationBits(
  AclOperation.READ,
  AclOperation.WRITE,
  AclOperation.CREATE,
  AclOperation.DELETE,
  AclOperation.ALTER,
  AclOperation.DESCRIBE,
  AclOperation.DESCRIBE_CONFIGS,
  AclOperation.ALTER_CONFIGS,
);

/** Everything a group supports, likewise. */
export const GROUP_OPERATIONS = operationBits(AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE);

export const CLUSTER_OPERATIONS = operationBits(
  AclOperation.CREATE,
  AclOperation.ALTER,
  AclOperation.DESCRIBE,
  AclOperation.CLUSTER_ACTION,
  AclOperation.DESCRIBE_CONFIGS,
  AclOperation.ALTER_CONFIGS,
  AclOperation.IDEMPOTENT_WRITE,
  AclOperation.CREATE_TOKENS,
  AclOperation.DESCRIBE_TOKENS,
);

export interface BrokerAddress {
  nodeId: number;
  host: string;
  port: number;
  rack: string | null;
}

/** Live brokers reachable on `listenerName` (Kafka lists only brokers that have that listener). */
export function brokersOnListener(image: MetadataImage, listenerName: string): BrokerAddress[] {
  const out: BrokerAddress[] = [];
  for (const broker of image.liveBrokers()) {
    const endpoint = broker.endpoints.find((e) => e.name === listenerName) ?? (listenerName === '' ? broker.endpoints[0] : undefined);
    if (endpoint !== undefined) out.push({ nodeId: broker.id, host: endpoint.host, port: endpoint.port, rack: broker.rack });
  }
  return out;
}

function isLive(image: MetadataImage, id: number): boolean {
  const b: BrokerRegistration | undefined = image.brokers.get(id);
  return b !== undefined && !b.fenced;
}

/** Replicas whose broker is unregistered or fenced. */
export function offlineReplicas(image: MetadataImage, partition: PartitionImage): number[] {
  return partition.replicas.filter((id) => !isLive(image, id));
}

/** The leader clients may use: -1 when the recorded leader is not live. */
export function liveLeader(image: MetadataImage, partition: PartitionImage): number {
  return partition.leader >= 0 && isLive(image, partition.leader) ? partition.leader : -1;
}

/**
 * The controller id Metadata and DescribeCluster report on broker listeners: as a KRaft
 * broker (KRaftMetadataCache.getControllerId, KIP-590), a random live broker, -1 when none is.
 * Clients send controller-bound admin requests to that id, and a broker forwards them to the
 * active controller, which may be a controller-only node no client can reach; naming the
 * active controller even when it is a broker too would load one node with every client's
 * admin traffic.
 */
export function reportedControllerId(image: MetadataImage, random: Pick<Random, 'next'> = systemRandom): number {
  const live = image.liveBrokers();
  if (live.length === 0) return -1;
  return live[Math.min(live.length - 1, Math.floor(random.next() * live.length))]!.id;
}
