/**
 * Metadata (every version): brokers on the request's listener, cluster and controller ids,
 * topics with ids and partitions, auto-creation of unknown topics (auto.create.topics.enable
 * and, from v4, allow_auto_topic_creation), authorized operations (v8+).
 */
import { Errors, KafkaError } from '../../protocol/errors.ts';
import {
  makeMetadataResponse,
  makeMetadataResponseBroker,
  makeMetadataResponsePartition,
  makeMetadataResponseTopic,
  type MetadataRequest,
  type MetadataRequestTopic,
  type MetadataResponse,
  type MetadataResponseTopic,
} from '../../protocol/messages/metadata.ts';
import { INTERNAL_TOPICS, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC } from '../../protocol/internal-topics.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import { offsetsTopicCreatable, transactionStateTopicCreatable } from '../coordinator/internal-topics.ts';
import { topicNameError, type CreatableTopic, type TopicCreator } from '../metadata/controller.ts';
import {
  AUTHORIZED_OPERATIONS_OMITTED,
  CLUSTER_OPERATIONS,
  TOPIC_OPERATIONS,
  brokersOnListener,
  liveLeader,
  offlineReplicas,
  reportedControllerId,
} from '../metadata/describe.ts';
import type { MetadataImage, TopicImage } from '../metadata/image.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import type { RequestContext } from '../server/session.ts';

/** What the metadata and admin handlers (metadata, topics, configs, cluster) need from the broker. */
export interface MetadataHandlerServices {
  readonly nodeId: number;
  readonly config: BrokerConfig;
  readonly metadata: MetadataManager;
}

/** The Metadata API also creates topics (auto.create.topics.enable). */
export interface MetadataRequestServices extends MetadataHandlerServices {
  /** Through the active controller, answered once this broker has the topics. */
  readonly createTopics: TopicCreator;
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
  if (name === TRANSACTION_STATE_TOPIC) return transactionStateTopicCreatable(config);
  return { name, numPartitions: -1, replicationFactor: -1, assignments: [], configs: [] };
}

/** KafkaApis.handleTopicMetadataRequest: v10 and v11 carry topic ids, but only v12 serves them. */
function checkTopicsNamed(topics: readonly MetadataRequestTopic[], version: number): void {
  for (const topic of topics) {
    if (topic.name === null) throw new KafkaError(Errors.INVALID_REQUEST, `Topic name can not be null for version ${version}`);
    if (topic.topicId !== ZERO_UUID)
      throw new KafkaError(Errors.INVALID_REQUEST, `Topic IDs are not supported in requests for version ${version}`);
  }
}

export async function handleMetadata(
  services: MetadataRequestServices,
  ctx: RequestContext,
  request: MetadataRequest,
  version: number,
): Promise<MetadataResponse> {
  const { metadata, config } = services;
  let image = metadata.image();
  const includeTopicOps = version >= 8 && request.includeTopicAuthorizedOperations;
  // v0: an empty list means every topic; v1+: null means every topic, empty means none.
  const wanted = request.topics;
  let topics: MetadataResponseTopic[];
  if (wanted === null || (version === 0 && wanted.length === 0)) {
    topics = [...image.topicsByName.values()].map((t) => topicMetadata(image, t, includeTopicOps));
  } else {
    if (version < 12) checkTopicsNamed(wanted, version);
    const allowAutoCreate = config.getBoolean('auto.create.topics.enable') && (version < 4 || request.allowAutoTopicCreation);
    const toCreate = new Set<string>();
    for (const t of wanted) {
      if (t.name !== null && image.topic(t.name) === undefined && allowAutoCreate && topicNameError(t.name) === null) {
        toCreate.add(t.name);
      }
    }
    const createErrors = new Map<string, number>();
    if (toCreate.size > 0) {
      const results = await services.createTopics([...toCreate].map((name) => autoCreatable(config, name)));
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
    controllerId: reportedControllerId(image, services.metadata.runtime.random),
    topics,
    clusterAuthorizedOperations:
      version >= 8 && version <= 10 && request.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  });
}
