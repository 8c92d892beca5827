/**
 * DescribeCluster (KIP-700) and DescribeTopicPartitions (KIP-966, paged by a cursor over
 * topics sorted by name), read from the metadata image.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeDescribeClusterResponse,
  makeDescribeClusterResponseDescribeClusterBroker,
  type DescribeClusterRequest,
  type DescribeClusterResponse,
} from '../../protocol/messages/describe-cluster.ts';
import {
  makeDescribeTopicPartitionsResponse,
  makeDescribeTopicPartitionsResponseCursor,
  makeDescribeTopicPartitionsResponsePartition,
  makeDescribeTopicPartitionsResponseTopic,
  type DescribeTopicPartitionsRequest,
  type DescribeTopicPartitionsResponse,
  type DescribeTopicPartitionsResponseCursor,
  type DescribeTopicPartitionsResponseTopic,
} from '../../protocol/messages/describe-topic-partitions.ts';
import { INTERNAL_TOPICS } from '../../protocol/internal-topics.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import { topicNameError } from '../metadata/controller.ts';
import {
  AUTHORIZED_OPERATIONS_OMITTED,
  CLUSTER_OPERATIONS,
  TOPIC_OPERATIONS,
  brokersOnListener,
  liveLeader,
  offlineReplicas,
  reportedControllerId,
} from '../metadata/describe.ts';
import type { RequestContext } from '../server/session.ts';
import type { MetadataHandlerServices } from './metadata.ts';

/** DescribeCluster endpoint_type values (KIP-919). */
const ENDPOINT_TYPE_BROKERS = 1;
const ENDPOINT_TYPE_CONTROLLERS = 2;

export function handleDescribeCluster(
  services: MetadataHandlerServices,
  ctx: RequestContext,
  request: DescribeClusterRequest,
  version: number,
): DescribeClusterResponse {
  const image = services.metadata.image();
  const base = {
    throttleTimeMs: 0,
    endpointType: version >= 1 ? request.endpointType : ENDPOINT_TYPE_BROKERS,
    clusterId: services.metadata.clusterId,
  };
  if (version >= 1 && request.endpointType === ENDPOINT_TYPE_CONTROLLERS && ctx.session.listenerRole === 'controller') {
    return describeControllers(services, ctx, request, base);
  }
  if (version >= 1 && request.endpointType !== ENDPOINT_TYPE_BROKERS) {
    return makeDescribeClusterResponse({
      ...base,
      errorCode: Errors.UNSUPPORTED_ENDPOINT_TYPE.code,
      errorMessage: 'The broker listeners only describe brokers.',
      controllerId: -1,
    });
  }
  return makeDescribeClusterResponse({
    ...base,
    errorCode: Errors.NONE.code,
    errorMessage: null,
    controllerId: reportedControllerId(image, services.metadata.runtime.random),
    brokers: brokersOnListener(image, ctx.session.listenerName).map((b) =>
      makeDescribeClusterResponseDescribeClusterBroker({ brokerId: b.nodeId, host: b.host, port: b.port, rack: b.rack }),
    ),
    clusterAuthorizedOperations: request.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  });
}

/**
 * DescribeCluster for controllers on a controller listener (KIP-919), as admin clients with
 * bootstrap.controllers ask it (kafka-metadata-quorum --bootstrap-controller): the voters at
 * their endpoint on this listener, and the quorum leader as the controller.
 */
function describeControllers(
  services: MetadataHandlerServices,
  ctx: RequestContext,
  request: DescribeClusterRequest,
  base: { throttleTimeMs: number; endpointType: number; clusterId: string },
): DescribeClusterResponse {
  const raft = services.metadata.raft;
  const voters = raft.voterSet();
  const controllers = voters.ids().flatMap((id) => {
    const endpoint = voters.endpointOf(id, ctx.session.listenerName);
    return endpoint === undefined
      ? []
      : [makeDescribeClusterResponseDescribeClusterBroker({ brokerId: id, host: endpoint.host, port: endpoint.port, rack: null })];
  });
  return makeDescribeClusterResponse({
    ...base,
    errorCode: Errors.NONE.code,
    errorMessage: null,
    controllerId: raft.currentLeaderId,
    brokers: controllers,
    clusterAuthorizedOperations: request.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  });
}

export function handleDescribeTopicPartitions(
  services: MetadataHandlerServices,
  request: DescribeTopicPartitionsRequest,
): DescribeTopicPartitionsResponse {
  const image = services.metadata.image();
  const names = request.topics.length === 0 ? [...image.topicsByName.keys()] : [...new Set(request.topics.map((t) => t.name))];
  names.sort();
  const cursor = request.cursor;
  let budget = Math.max(1, request.responsePartitionLimit);
  const topics: DescribeTopicPartitionsResponseTopic[] = [];
  let nextCursor: DescribeTopicPartitionsResponseCursor | null = null;
  for (const name of names) {
    if (cursor !== null && name < cursor.topicName) continue;
    const topic = image.topic(name);
    if (topic === undefined) {
      const invalid = topicNameError(name) !== null;
      topics.push(
        makeDescribeTopicPartitionsResponseTopic({
          errorCode: invalid ? Errors.INVALID_TOPIC_EXCEPTION.code : Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
          name,
          topicId: ZERO_UUID,
          isInternal: INTERNAL_TOPICS.has(name),
          partitions: [],
          topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
        }),
      );
      continue;
    }
    if (budget === 0) {
      nextCursor = makeDescribeTopicPartitionsResponseCursor({ topicName: name, partitionIndex: 0 });
      break;
    }
    const first = cursor !== null && name === cursor.topicName ? cursor.partitionIndex : 0;
    const partitions = [...topic.partitions.values()].filter((p) => p.partitionId >= first).sort((a, b) => a.partitionId - b.partitionId);
    const included = partitions.slice(0, budget);
    budget -= included.length;
    topics.push(
      makeDescribeTopicPartitionsResponseTopic({
        errorCode: Errors.NONE.code,
        name,
        topicId: topic.id,
        isInternal: INTERNAL_TOPICS.has(name),
        topicAuthorizedOperations: TOPIC_OPERATIONS,
        partitions: included.map((p) => {
          const leader = liveLeader(image, p);
          return makeDescribeTopicPartitionsResponsePartition({
            errorCode: leader === -1 ? Errors.LEADER_NOT_AVAILABLE.code : Errors.NONE.code,
            partitionIndex: p.partitionId,
            leaderId: leader,
            leaderEpoch: p.leaderEpoch,
            replicaNodes: [...p.replicas],
            isrNodes: [...p.isr],
            eligibleLeaderReplicas: [...p.elr],
            lastKnownElr: [...p.lastKnownElr],
            offlineReplicas: offlineReplicas(image, p),
          });
        }),
      }),
    );
    const next = partitions[included.length];
    if (next !== undefined) {
      nextCursor = makeDescribeTopicPartitionsResponseCursor({ topicName: name, partitionIndex: next.partitionId });
      break;
    }
  }
  return makeDescribeTopicPartitionsResponse({ throttleTimeMs: 0, topics, nextCursor });
}
