/**
 * Authorization of the cluster-describing APIs, as KafkaApis's handleTopicMetadataRequest,
 * handleDescribeCluster (and ControllerApis's), and DescribeTopicPartitionsRequestHandler do it.
 */
import { Errors } from '../../../protocol/errors.ts';
import { INTERNAL_TOPICS } from '../../../protocol/internal-topics.ts';
import {
  makeDescribeTopicPartitionsResponse,
  makeDescribeTopicPartitionsResponseTopic,
} from '../../../protocol/messages/describe-topic-partitions.ts';
import type { ApiKey } from '../../../protocol/messages/index.ts';
import { makeMetadataResponseTopic, type MetadataRequestTopic, type MetadataResponseTopic } from '../../../protocol/messages/metadata.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../../security/acl-types.ts';
import { inRequestOrder, refuse, requireTopics, type Access, type Policy } from './policy.ts';

const TOPIC_AUTHORIZATION_FAILED = Errors.TOPIC_AUTHORIZATION_FAILED.code;

/** Kafka's cluster authorized operations: the bitfield for DESCRIBE on the cluster, else none. */
function clusterOperations(access: Access): number {
  return access.allowsCluster(AclOperation.DESCRIBE) ? access.operations(ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME) : 0;
}

/** Requested by id (v12+): no name, a topic id. */
function byId(t: MetadataRequestTopic): boolean {
  return (t.name === null || t.name === '') && t.topicId !== ZERO_UUID;
}

/**
 * DESCRIBE on each topic. All topics: the answer keeps only describable ones. Named topics
 * refused answer TOPIC_AUTHORIZATION_FAILED (with no topic id, or, asked by id, with no name);
 * a describable topic that does not exist and would be auto-created also needs CREATE on the
 * cluster or on the topic. Authorized operations (v8+) when asked.
 */
export const metadata: Policy<ApiKey.Metadata> = async (call) => {
  const { request, version, access } = call;
  const topics = requireTopics(call);
  const describable = access.topicFilter(AclOperation.DESCRIBE);
  const allTopics = request.topics === null || (version === 0 && request.topics.length === 0);
  const autoCreate = !allTopics && topics.autoCreateTopicsEnable() && (version < 4 || request.allowAutoTopicCreation);
  let mayCreateAny: boolean | undefined;
  const mayCreate = (name: string) => {
    mayCreateAny ??= access.allowsCluster(AclOperation.CREATE);
    return mayCreateAny || access.allowsTopic(AclOperation.CREATE, name);
  };
  const refusal = (t: MetadataRequestTopic): MetadataResponseTopic | null => {
    if (byId(t)) {
      const name = topics.topicName(t.topicId);
      if (name === undefined || describable(name)) return null;
      return makeMetadataResponseTopic({ errorCode: TOPIC_AUTHORIZATION_FAILED, name: null, topicId: t.topicId });
    }
    if (t.name === null) return null;
    if (!describable(t.name)) return makeMetadataResponseTopic({ errorCode: TOPIC_AUTHORIZATION_FAILED, name: t.name });
    if (autoCreate && !topics.topicExists(t.name) && !mayCreate(t.name)) {
      return makeMetadataResponseTopic({ errorCode: TOPIC_AUTHORIZATION_FAILED, name: t.name, isInternal: INTERNAL_TOPICS.has(t.name) });
    }
    return null;
  };
  const requested = allTopics ? [] : request.topics!;
  const asked = requested.filter((t) => refusal(t) === null);
  const response = await call.next(asked.length === requested.length ? request : { ...request, topics: asked });
  if (response === null) return null;
  const answered = allTopics
    ? response.topics.filter((t) => t.name !== null && describable(t.name))
    : asked.length > 0
      ? response.topics
      : [];
  const withOperations = version >= 8 && request.includeTopicAuthorizedOperations;
  const operationsOf = (t: MetadataResponseTopic) =>
    withOperations && t.name !== null && t.name !== ''
      ? { ...t, topicAuthorizedOperations: access.operations(ResourceType.TOPIC, t.name) }
      : t;
  const same = (t: MetadataRequestTopic, r: MetadataResponseTopic) => (byId(t) ? r.topicId === t.topicId : r.name === t.name);
  const merged = allTopics ? answered.map(operationsOf) : inRequestOrder(requested, refusal, answered.map(operationsOf), same);
  const clusterAsked = version >= 8 && version <= 10 && request.includeClusterAuthorizedOperations;
  return {
    ...response,
    topics: merged,
    clusterAuthorizedOperations: clusterAsked ? clusterOperations(access) : response.clusterAuthorizedOperations,
  };
};

/**
 * Brokers answer anyone (authorized operations need DESCRIBE on the cluster); controllers,
 * unlike brokers, require ALTER on the cluster.
 */
export const describeCluster: Policy<ApiKey.DescribeCluster> = async (call) => {
  if (call.ctx.session.listenerRole === 'controller' && !call.access.allowsCluster(AclOperation.ALTER)) {
    return refuse(call, Errors.CLUSTER_AUTHORIZATION_FAILED);
  }
  const response = await call.next(call.request);
  if (response === null || !call.request.includeClusterAuthorizedOperations || response.errorCode !== Errors.NONE.code) return response;
  return { ...response, clusterAuthorizedOperations: clusterOperations(call.access) };
};

/**
 * DESCRIBE on each topic: all topics keeps the describable ones; named topics refused are
 * answered TOPIC_AUTHORIZATION_FAILED after the described ones, as Kafka lists them. Every
 * described topic carries its authorized operations.
 */
export const describeTopicPartitions: Policy<ApiKey.DescribeTopicPartitions> = async (call) => {
  const { request, access } = call;
  const describable = access.topicFilter(AclOperation.DESCRIBE);
  const allTopics = request.topics.length === 0;
  const asked = request.topics.filter((t) => describable(t.name));
  const refused = request.topics
    .filter((t) => !describable(t.name))
    .map((t) => makeDescribeTopicPartitionsResponseTopic({ errorCode: TOPIC_AUTHORIZATION_FAILED, name: t.name }));
  const response = allTopics || asked.length > 0 ? await call.next(allTopics ? request : { ...request, topics: asked }) : null;
  const base = response ?? makeDescribeTopicPartitionsResponse();
  const described = base.topics
    .filter((t) => !allTopics || (t.name !== null && describable(t.name)))
    .map((t) => (t.name === null ? t : { ...t, topicAuthorizedOperations: access.operations(ResourceType.TOPIC, t.name) }));
  return { ...base, topics: [...described, ...refused] };
};
