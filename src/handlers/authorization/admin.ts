/**
 * Authorization of the admin APIs that create, delete and configure topics and other
 * resources, as ControllerApis's createTopics, deleteTopics, createPartitions,
 * handleLegacyAlterConfigs and handleIncrementalAlterConfigs, and ConfigHelper's
 * handleDescribeConfigsRequest do it. The mutations are authorized on the controller only:
 * a broker forwards them in an Envelope carrying the client's principal.
 */
import { Errors, type KafkaErrorCode } from '../../../protocol/errors.ts';
import {
  makeAlterConfigsResponse,
  makeAlterConfigsResponseAlterConfigsResourceResponse,
} from '../../../protocol/messages/alter-configs.ts';
import {
  makeCreatePartitionsResponse,
  makeCreatePartitionsResponseCreatePartitionsTopicResult,
} from '../../../protocol/messages/create-partitions.ts';
import { makeCreateTopicsResponse, makeCreateTopicsResponseCreatableTopicResult } from '../../../protocol/messages/create-topics.ts';
import {
  makeDeleteTopicsResponse,
  makeDeleteTopicsResponseDeletableTopicResult,
  type DeleteTopicsRequestDeleteTopicState,
} from '../../../protocol/messages/delete-topics.ts';
import {
  makeDescribeConfigsResponse,
  makeDescribeConfigsResponseDescribeConfigsResult,
} from '../../../protocol/messages/describe-configs.ts';
import {
  makeIncrementalAlterConfigsResponse,
  makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse,
} from '../../../protocol/messages/incremental-alter-configs.ts';
import type { ApiKey } from '../../../protocol/messages/index.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType } from '../../security/acl-types.ts';
import { inRequestOrder, requireTopics, type Access, type Policy } from './policy.ts';

const TOPIC_AUTHORIZATION_FAILED = Errors.TOPIC_AUTHORIZATION_FAILED.code;

/**
 * CREATE on the cluster or on each topic; refused topics answer "Authorization failed.". A
 * created topic whose configs the principal may not DESCRIBE_CONFIGS comes back without them
 * (topic config error TOPIC_AUTHORIZATION_FAILED, v5+).
 */
export const createTopics: Policy<ApiKey.CreateTopics> = async (call) => {
  const { request, version, access } = call;
  const creatable = access.allowsCluster(AclOperation.CREATE) ? () => true : access.topicFilter(AclOperation.CREATE);
  const authorized = request.topics.filter((t) => creatable(t.name));
  const base =
    (authorized.length === request.topics.length
      ? await call.next(request)
      : authorized.length > 0
        ? await call.next({ ...request, topics: authorized })
        : null) ?? makeCreateTopicsResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    creatable(t.name)
      ? null
      : makeCreateTopicsResponseCreatableTopicResult({
          name: t.name,
          errorCode: TOPIC_AUTHORIZATION_FAILED,
          errorMessage: 'Authorization failed.',
        });
  const topics = inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name);
  if (version < 5) return { ...base, topics };
  const describeConfigs = access.topicFilter(AclOperation.DESCRIBE_CONFIGS);
  return {
    ...base,
    topics: topics.map((t) =>
      t.errorCode === Errors.NONE.code && !describeConfigs(t.name)
        ? { ...t, topicConfigErrorCode: TOPIC_AUTHORIZATION_FAILED, configs: [] }
        : t,
    ),
  };
};

/**
 * DELETE on each topic (or on the cluster, for all). A topic the principal may not DESCRIBE
 * is refused before its existence is told; one it may DESCRIBE but not DELETE is refused if it
 * exists, and left to the handler (UNKNOWN_TOPIC_OR_PARTITION) if not. A topic id no topic
 * has is left to the handler; a refused id shows its name only to those who may DESCRIBE it.
 */
export const deleteTopics: Policy<ApiKey.DeleteTopics> = async (call) => {
  const { request, version, access } = call;
  const topics = requireTopics(call);
  const all = access.allowsCluster(AclOperation.DELETE);
  const describable = all ? () => true : access.topicFilter(AclOperation.DESCRIBE);
  const deletable = all ? () => true : access.topicFilter(AclOperation.DELETE);
  const states: DeleteTopicsRequestDeleteTopicState[] =
    version >= 6 ? request.topics : request.topicNames.map((name) => ({ name, topicId: ZERO_UUID }));
  const refusal = (t: DeleteTopicsRequestDeleteTopicState) => {
    const refused = (name: string | null, topicId: string) =>
      makeDeleteTopicsResponseDeletableTopicResult({
        name,
        topicId,
        errorCode: TOPIC_AUTHORIZATION_FAILED,
        errorMessage: Errors.TOPIC_AUTHORIZATION_FAILED.message,
      });
    if (t.name === null) {
      const name = t.topicId === ZERO_UUID ? undefined : topics.topicName(t.topicId);
      if (name === undefined || deletable(name)) return null;
      return refused(describable(name) ? name : null, t.topicId);
    }
    if (t.topicId !== ZERO_UUID) return null;
    if (!describable(t.name)) return refused(t.name, ZERO_UUID);
    return deletable(t.name) || !topics.topicExists(t.name) ? null : refused(t.name, ZERO_UUID);
  };
  const authorized = states.filter((t) => refusal(t) === null);
  if (authorized.length === states.length) return call.next(request);
  const asked = version >= 6 ? { ...request, topics: authorized } : { ...request, topicNames: authorized.map((t) => t.name ?? '') };
  const base = (authorized.length > 0 ? await call.next(asked) : null) ?? makeDeleteTopicsResponse();
  const same = (t: DeleteTopicsRequestDeleteTopicState, r: { name: string | null; topicId: string }) =>
    t.name === null ? r.topicId === t.topicId : r.name === t.name;
  return { ...base, responses: inRequestOrder(states, refusal, base.responses, same) };
};

/** ALTER on each topic. */
export const createPartitions: Policy<ApiKey.CreatePartitions> = async (call) => {
  const { request } = call;
  const alterable = call.access.topicFilter(AclOperation.ALTER);
  const authorized = request.topics.filter((t) => alterable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeCreatePartitionsResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    alterable(t.name)
      ? null
      : makeCreatePartitionsResponseCreatePartitionsTopicResult({
          name: t.name,
          errorCode: TOPIC_AUTHORIZATION_FAILED,
          errorMessage: Errors.TOPIC_AUTHORIZATION_FAILED.message,
        });
  return { ...base, results: inRequestOrder(request.topics, refused, base.results, (t, r) => t.name === r.name) };
};

/** ConfigResource.Type codes. */
const ConfigResourceType = { TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8, CLIENT_METRICS: 16, GROUP: 32 } as const;

/**
 * What `operation` on a config resource needs: the cluster for broker, broker-logger and
 * client-metrics resources, else the topic or the group; null for a type left to the handler.
 */
function configResourceRefusal(access: Access, operation: number, resourceType: number, resourceName: string): KafkaErrorCode | null {
  switch (resourceType) {
    case ConfigResourceType.BROKER:
    case ConfigResourceType.BROKER_LOGGER:
    case ConfigResourceType.CLIENT_METRICS:
      return access.allows(operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME) ? null : Errors.CLUSTER_AUTHORIZATION_FAILED;
    case ConfigResourceType.TOPIC:
      return access.allows(operation, ResourceType.TOPIC, resourceName) ? null : Errors.TOPIC_AUTHORIZATION_FAILED;
    case ConfigResourceType.GROUP:
      return access.allows(operation, ResourceType.GROUP, resourceName) ? null : Errors.GROUP_AUTHORIZATION_FAILED;
    default:
      return null;
  }
}

interface ConfigResource {
  readonly resourceType: number;
  readonly resourceName: string;
}

const sameResource = (q: ConfigResource, r: ConfigResource) => q.resourceType === r.resourceType && q.resourceName === r.resourceName;

/** DESCRIBE_CONFIGS on each resource; refused ones answer with no configs. */
export const describeConfigs: Policy<ApiKey.DescribeConfigs> = async (call) => {
  const { request, access } = call;
  const refusal = (r: ConfigResource) => {
    const error = configResourceRefusal(access, AclOperation.DESCRIBE_CONFIGS, r.resourceType, r.resourceName);
    return error === null
      ? null
      : makeDescribeConfigsResponseDescribeConfigsResult({
          ...identityOf(r),
          errorCode: error.code,
          errorMessage: error.message,
          configs: [],
        });
  };
  const authorized = request.resources.filter((r) => refusal(r) === null);
  if (authorized.length === request.resources.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, resources: authorized }) : null) ?? makeDescribeConfigsResponse();
  return { ...base, results: inRequestOrder(request.resources, refusal, base.results, sameResource) };
};

function identityOf(r: ConfigResource): ConfigResource {
  return { resourceType: r.resourceType, resourceName: r.resourceName };
}

/** ALTER_CONFIGS on each resource. */
export const alterConfigs: Policy<ApiKey.AlterConfigs> = async (call) => {
  const { request, access } = call;
  const refusal = (r: ConfigResource) => {
    const error = configResourceRefusal(access, AclOperation.ALTER_CONFIGS, r.resourceType, r.resourceName);
    return error === null
      ? null
      : makeAlterConfigsResponseAlterConfigsResourceResponse({ ...identityOf(r), errorCode: error.code, errorMessage: error.message });
  };
  const authorized = request.resources.filter((r) => refusal(r) === null);
  if (authorized.length === request.resources.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, resources: authorized }) : null) ?? makeAlterConfigsResponse();
  return { ...base, responses: inRequestOrder(request.resources, refusal, base.responses, sameResource) };
};

/** ALTER_CONFIGS on each resource. */
export const incrementalAlterConfigs: Policy<ApiKey.IncrementalAlterConfigs> = async (call) => {
  const { request, access } = call;
  const refusal = (r: ConfigResource) => {
    const error = configResourceRefusal(access, AclOperation.ALTER_CONFIGS, r.resourceType, r.resourceName);
    return error === null
      ? null
      : makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse({
          ...identityOf(r),
          errorCode: error.code,
          errorMessage: error.message,
        });
  };
  const authorized = request.resources.filter((r) => refusal(r) === null);
  if (authorized.length === request.resources.length) return call.next(request);
  const base =
    (authorized.length > 0 ? await call.next({ ...request, resources: authorized }) : null) ?? makeIncrementalAlterConfigsResponse();
  return { ...base, responses: inRequestOrder(request.resources, refusal, base.responses, sameResource) };
};
