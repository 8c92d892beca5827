/**
 * Metadata (every version): brokers on the request's listener, cluster and controller ids,
 * topics with ids and partitions, auto-creation of unknown topics (auto.create.topics.enable
 * and, from v4, allow_auto_topic_creation), authorized operations (v8+).
 */
import { Errors, KafkaError } from '../../protocol/errors.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeMetadataResponse,
  makeMetadataResponseBroker,
  makeMetadataResponsePartition,
  makeMetadataResponseTopic,
  type MetadataRequest,
  type MetadataResponse,
  type MetadataResponseTopic,
} from '../../protocol/messages/metadata.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import { OFFSETS_TOPIC, offsetsTopicCreatable } from '../coordinator/service.ts';
import { topicNameError, type CreatableTopic } from '../metadata/controller.ts';
import {
  AUTHORIZED_OPERATIONS_OMITTED,
  CLUSTER_OPERATIONS,
  INTERNAL_TOPICS,
  TOPIC_OPERATIONS,
  brokersOnListener,
  liveLeader,
  offlineReplicas,
  reportedControllerId,
} from '../metadata/describe.ts';
import type { MetadataImage, TopicImage } from '../metadata/image.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import { registerClusterHandlers } from './cluster.ts';
import { registerConfigHandlers } from './configs.ts';
import { registerQuorumHandlers } from './quorum.ts';
import type { HandlerRegistry, RequestContext } from './registry.ts';
import { registerTopicHandlers } from './topics.ts';

/** What the metadata and admin handlers need from the broker. */
export interface MetadataHandlerServices {
  readonly nodeId: number;
  readonly config: BrokerConfig;
  readonly metadata: MetadataManager;
}

/** Registers Metadata, the topic/config/cluster admin APIs and the quorum RPCs. */
export function registerMetadataHandlers(registry: HandlerRegistry, services: MetadataHandlerServices): void {
  registry.register<MetadataRequest, MetadataResponse>(ApiKey.Metadata, (ctx, request, version) =>
    handleMetadata(services, ctx, request, version),
  );
  registerTopicHandlers(registry, services);
  registerConfigHandlers(registry, services);
  registerClusterHandlers(registry, services);
  registerQuorumHandlers(registry, services);
}

export function topicMetadata(image: MetadataImage, topic: TopicImage, includeAuthorizedOperations: boolean): MetadataResponseTopic {
  const partitions = [...topic.partitions.values()]
    .sort((a, b) => a.partitionId - b.partitionId)
    .map((p) => {
      const leader = liveLeader(image, p);
      return makeMetadataResponsePartition({
        errorCode: leader === -1 ? Errors.LEADER_NOT_AVAILABLE.code : Errors.NONE.code,
        partitionIndex: p.partitionId,
        leaderId: leader,
        leaderEpoch: p.leaderEpoch,
        replicaNodes: [...p.replicas],
        isrNodes: [...p.isr],
        offlineReplicas: offlineReplicas(image, p),
      });
    });
  return makeMetadataResponseTopic({
    errorCode: Errors.NONE.code,
    name: topic.name,
    topicId: topic.id,
    isInternal: INTERNAL_TOPICS.has(topic.name),
    partitions,
    topicAuthorizedOperations: includeAuthorizedOperations ? TOPIC_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  });
}

function errorTopic(name: string | null, topicId: string, errorCode: number): MetadataResponseTopic {
  return makeMetadataResponseTopic({
    errorCode,
    name,
    topicId,
    isInternal: name !== null && INTERNAL_TOPICS.has(name),
    partitions: [],
    topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
  });
}

/** How Kafka's AutoTopicCreationManager creates a topic: internal ones with their own settings. */
function autoCreatable(config: BrokerConfig, name: string): CreatableTopic {
  if (name === OFFSETS_TOPIC) return offsetsTopicCreatable(config);
  if (name === '__transaction_state') {
    return {
      name,
      numPartitions: config.getInt('transaction.state.log.num.partitions'),
      replicationFactor: config.getInt('transaction.state.log.replication.factor'),
      assignments: [],
      configs: [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'compression.type', value: 'uncompressed' },
        { name: 'min.insync.replicas', value: config.getString('transaction.state.log.min.isr') },
        { name: 'segment.bytes', value: config.getString('transaction.state.log.segment.bytes') },
      ],
    };
  }
  return { name, numPartitions: -1, replicationFactor: -1, assignments: [], configs: [] };
}

/** KafkaApis.handleTopicMetadataRequest: v10 and v11 carry topic ids, but only v12 serves them. */
function checkTopicsNamed(request: MetadataRequest, version: number): void {
  for (const topic of request.topics!) {
    if (topic.name === null) throw new KafkaError(Errors.INVALID_REQUEST, `Topic name can not be null for version ${version}`);
    if (topic.topicId !== ZERO_UUID)
      throw new KafkaError(Errors.INVALID_REQUEST, `Topic IDs are not supported in requests for version ${version}`);
  }
}

export async function handleMetadata(
  services: MetadataHandlerServices,
  ctx: RequestContext,
  request: MetadataRequest,
  version: number,
): Promise<MetadataResponse> {
  const { metadata, config } = services;
  let image = metadata.image();
  const includeTopicOps = version >= 8 && request.includeTopicAuthorizedOperations;
  // v0: an empty list means every topic; v1+: null means every topic, empty means none.
  const allTopics = request.topics === null || (version === 0 && request.topics.length === 0);
  if (!allTopics && version < 12) checkTopicsNamed(request, version);
  let topics: MetadataResponseTopic[];
  if (allTopics) {
    topics = [...image.topicsByName.values()].map((t) => topicMetadata(image, t, includeTopicOps));
  } else {
    const allowAutoCreate = config.getBoolean('auto.create.topics.enable') && (version < 4 || request.allowAutoTopicCreation);
    const wanted = request.topics!;
    const toCreate = new Set<string>();
    for (const t of wanted) {
      if (t.name !== null && image.topic(t.name) === undefined && allowAutoCreate && topicNameError(t.name) === null) {
        toCreate.add(t.name);
      }
    }
    const createErrors = new Map<string, number>();
    if (toCreate.size > 0) {
      const results = await metadata.controller.createTopics(
        [...toCreate].map((name) => autoCreatable(config, name)),
        false,
      );
      for (const r of results) {
        // A topic another request created meanwhile is simply there now.
        if (r.errorCode !== Errors.NONE.code && r.errorCode !== Errors.TOPIC_ALREADY_EXISTS.code) createErrors.set(r.name, r.errorCode);
      }
      image = metadata.image();
    }
    topics = wanted.map((t) => {
      if (t.name === null || t.name === '') {
        if (t.topicId !== ZERO_UUID) {
          const byId = image.topicById(t.topicId);
          return byId !== undefined
            ? topicMetadata(image, byId, includeTopicOps)
            : errorTopic(null, t.topicId, Errors.UNKNOWN_TOPIC_ID.code);
        }
        return errorTopic(t.name, ZERO_UUID, Errors.INVALID_TOPIC_EXCEPTION.code);
      }
      const topic = image.topic(t.name);
      if (topic !== undefined) return topicMetadata(image, topic, includeTopicOps);
      if (topicNameError(t.name) !== null) return errorTopic(t.name, ZERO_UUID, Errors.INVALID_TOPIC_EXCEPTION.code);
      if (!toCreate.has(t.name)) return errorTopic(t.name, ZERO_UUID, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
      const createError = createErrors.get(t.name);
      // Kafka answers a topic whose creation is under way (or failed for now) with LEADER_NOT_AVAILABLE.
      return errorTopic(
        t.name,
        ZERO_UUID,
        createError === Errors.INVALID_TOPIC_EXCEPTION.code ? createError : Errors.LEADER_NOT_AVAILABLE.code,
      );
    });
  }
  return makeMetadataResponse({
    throttleTimeMs: 0,
    brokers: brokersOnListener(image, ctx.session.listenerName).map((b) => makeMetadataResponseBroker(b)),
    clusterId: metadata.clusterId,
    controllerId: reportedControllerId(image, metadata.activeControllerId()),
    topics,
    clusterAuthorizedOperations:
      version >= 8 && version <= 10 && request.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  });
}
