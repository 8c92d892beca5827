/**
 * The admin APIs on broker listeners, forwarded to the active controller as KRaft brokers do
 * (Kafka's ForwardingManager): CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
 * IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments and
 * ListPartitionReassignments. Each goes in an Envelope as its client's (envelope-forwarding.ts,
 * through the `channel` the registration gives), and the controller authorizes and serves it
 * with topics.ts, configs.ts and controller-apis.ts.
 *
 * - After a CreateTopics, DeleteTopics or CreatePartitions the controller committed, the
 *   broker answers once its own MetadataImage shows the change, for at most the request's
 *   timeoutMs (0: at once, as Kafka's timeout_ms=0 means "do not wait for the brokers"): a
 *   client that produces right after creating a topic finds it here. The controller's answer
 *   is returned either way; the change is committed.
 * - The config APIs are preprocessed here first, as Kafka's ConfigAdminManager does on the
 *   forwarding broker: a resource named twice, a config named twice in one resource, a null
 *   value other than a DELETE, a BROKER resource naming another broker, and BROKER_LOGGER
 *   resources (served by this broker, which has no runtime loggers to change, and authorized
 *   here for that reason: ALTER_CONFIGS on the cluster) are answered without the controller;
 *   the rest is forwarded and the answers reassembled in request order.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAlterConfigsResponse,
  makeAlterConfigsResponseAlterConfigsResourceResponse,
  type AlterConfigsRequest,
  type AlterConfigsResponse,
} from '../../protocol/messages/alter-configs.ts';
import type { CreatePartitionsRequest, CreatePartitionsResponse } from '../../protocol/messages/create-partitions.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableReplicaAssignment,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsRequestCreatableTopicConfig,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import type { DeleteTopicsRequest, DeleteTopicsResponse } from '../../protocol/messages/delete-topics.ts';
import {
  makeIncrementalAlterConfigsResponse,
  makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsResponse,
} from '../../protocol/messages/incremental-alter-configs.ts';
import { ApiKey, apis, type ApiRequest, type ApiResponse } from '../../protocol/messages/index.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import type { ApiResult, CreatableTopic } from '../metadata/controller.ts';
import { AlterConfigOp } from '../metadata/controller.ts';
import type { ControllerChannel, ForwardedApiKey } from '../metadata/controller-channel.ts';
import type { MetadataImage } from '../metadata/image.ts';
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import { ConfigResourceType } from '../metadata/records.ts';

/** What the forwarding handlers need: the way to the controller and the local image. */
export interface ForwardingServices {
  /** This broker's node id (BROKER config resources must name it). */
  readonly nodeId: number;
  readonly channel: Pick<ControllerChannel, 'send'>;
  /** How long a forwarded request may take to reach the controller and be answered (request.timeout.ms). */
  readonly forwardTimeoutMs: number;
  readonly images: Pick<ImageWaiter, 'waitFor'>;
}

/**
 * Waits for the image this broker has published to satisfy a condition. It is fed with every
 * image the broker publishes (`published`, from the metadata delta listener, or once the data
 * path has applied the delta when "published" should mean "served"), so waiting costs nothing
 * per image beyond testing the pending conditions.
 */
export class ImageWaiter {
  private readonly waiting = new Set<{ test(image: MetadataImage): boolean; done(met: boolean): void }>();

  constructor(
    private latest: MetadataImage,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Resolves true once `condition` holds for the current or a later image, false after `timeoutMs`. */
  waitFor(condition: (image: MetadataImage) => boolean, timeoutMs: number): Promise<boolean> {
    if (condition(this.latest)) return Promise.resolve(true);
    if (timeoutMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const entry = {
        test: condition,
        done: (met: boolean) => {
          this.clock.clearTimeout(timer);
          this.waiting.delete(entry);
          resolve(met);
        },
      };
      const timer: TimerHandle = this.clock.setTimeout(() => entry.done(false), timeoutMs);
      this.waiting.add(entry);
    });
  }

  /** Called with every image the broker publishes. */
  published(image: MetadataImage): void {
    this.latest = image;
    for (const entry of [...this.waiting]) {
      let met: boolean;
      try {
        met = entry.test(image);
      } catch {
        // Runs inside the metadata delta listener, which must not throw: release the waiter.
        met = true;
      }
      if (met) entry.done(true);
    }
  }

  /** Releases every waiter (as not met): the broker is shutting down. */
  close(): void {
    for (const entry of [...this.waiting]) entry.done(false);
  }
}

const OK = Errors.NONE.code;

/** A request the broker forwards as it is and answers with the controller's response. */
export function forwardToController<K extends ForwardedApiKey>(
  services: ForwardingServices,
  apiKey: K,
  request: ApiRequest<K>,
  version: number,
): Promise<ApiResponse<K>> {
  return services.channel.send(apiKey, request, version, services.forwardTimeoutMs);
}

export async function forwardCreateTopics(
  services: ForwardingServices,
  request: CreateTopicsRequest,
  version: number,
): Promise<CreateTopicsResponse> {
  const response = await services.channel.send(ApiKey.CreateTopics, request, version, services.forwardTimeoutMs);
  const created = request.validateOnly ? [] : response.topics.filter((t) => t.errorCode === OK);
  if (created.length > 0) {
    await services.images.waitFor(
      (image) =>
        created.every((t) => {
          const topic = image.topic(t.name);
          return (
            topic !== undefined &&
            (t.topicId === ZERO_UUID || topic.id === t.topicId) &&
            (t.numPartitions < 0 || topic.partitions.size >= t.numPartitions)
          );
        }),
      request.timeoutMs,
    );
  }
  return response;
}

export async function forwardDeleteTopics(
  services: ForwardingServices,
  request: DeleteTopicsRequest,
  version: number,
): Promise<DeleteTopicsResponse> {
  const response = await services.channel.send(ApiKey.DeleteTopics, request, version, services.forwardTimeoutMs);
  const deleted = response.responses.filter((t) => t.errorCode === OK);
  if (deleted.length > 0) {
    await services.images.waitFor(
      (image) =>
        deleted.every((t) =>
          t.topicId !== ZERO_UUID ? image.topicById(t.topicId) === undefined : t.name === null || image.topic(t.name) === undefined,
        ),
      request.timeoutMs,
    );
  }
  return response;
}

export async function forwardCreatePartitions(
  services: ForwardingServices,
  request: CreatePartitionsRequest,
  version: number,
): Promise<CreatePartitionsResponse> {
  const response = await services.channel.send(ApiKey.CreatePartitions, request, version, services.forwardTimeoutMs);
  const counts = new Map(request.topics.map((t) => [t.name, t.count]));
  const grown = request.validateOnly ? [] : response.results.filter((r) => r.errorCode === OK && counts.has(r.name));
  if (grown.length > 0) {
    await services.images.waitFor(
      (image) => grown.every((r) => (image.topic(r.name)?.partitions.size ?? 0) >= counts.get(r.name)!),
      request.timeoutMs,
    );
  }
  return response;
}

export async function forwardAlterConfigs(
  services: ForwardingServices,
  request: AlterConfigsRequest,
  version: number,
): Promise<AlterConfigsResponse> {
  const preprocessed = preprocessConfigResources(services.nodeId, request.resources, false, () => true);
  const remaining = request.resources.filter((_, i) => !preprocessed.has(i));
  let forwarded: AlterConfigsResponse | null = null;
  if (remaining.length > 0) {
    forwarded = await services.channel.send(ApiKey.AlterConfigs, { ...request, resources: remaining }, version, services.forwardTimeoutMs);
  }
  return makeAlterConfigsResponse({
    throttleTimeMs: forwarded?.throttleTimeMs ?? 0,
    responses: reassemble(request.resources, preprocessed, forwarded?.responses ?? []).map((r) =>
      makeAlterConfigsResponseAlterConfigsResourceResponse(r),
    ),
  });
}

export async function forwardIncrementalAlterConfigs(
  services: ForwardingServices,
  request: IncrementalAlterConfigsRequest,
  version: number,
  mayAlterClusterConfigs: () => boolean = () => true,
): Promise<IncrementalAlterConfigsResponse> {
  const preprocessed = preprocessConfigResources(services.nodeId, request.resources, true, mayAlterClusterConfigs);
  const remaining = request.resources.filter((_, i) => !preprocessed.has(i));
  let forwarded: IncrementalAlterConfigsResponse | null = null;
  if (remaining.length > 0) {
    forwarded = await services.channel.send(
      ApiKey.IncrementalAlterConfigs,
      { ...request, resources: remaining },
      version,
      services.forwardTimeoutMs,
    );
  }
  return makeIncrementalAlterConfigsResponse({
    throttleTimeMs: forwarded?.throttleTimeMs ?? 0,
    responses: reassemble(request.resources, preprocessed, forwarded?.responses ?? []).map((r) =>
      makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse(r),
    ),
  });
}

interface ConfigResource {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly configs: readonly { readonly name: string; readonly value: string | null; readonly configOperation?: number }[];
}

type ResourceResult = ApiResult & { resourceType: number; resourceName: string };

/** Resource types the controller stores configs for; Kafka's broker forwards them untouched. */
const FORWARDED_RESOURCE_TYPES: ReadonlySet<number> = new Set([ConfigResourceType.TOPIC, 16 /* CLIENT_METRICS */, 32 /* GROUP */]);

/**
 * Kafka's ConfigAdminManager.preprocess: the answers of the resources (by index) that do not
 * go to the controller.
 */
function preprocessConfigResources(
  nodeId: number,
  resources: readonly ConfigResource[],
  incremental: boolean,
  mayAlterClusterConfigs: () => boolean,
): Map<number, ApiResult> {
  const results = new Map<number, ApiResult>();
  const firstIndex = new Map<string, number>();
  resources.forEach((r, i) => {
    const key = `${r.resourceType}:${r.resourceName}`;
    const first = firstIndex.get(key);
    if (first === undefined) {
      firstIndex.set(key, i);
      return;
    }
    const duplicate = { errorCode: Errors.INVALID_REQUEST.code, errorMessage: 'Each resource must appear at most once.' };
    results.set(first, duplicate);
    results.set(i, duplicate);
  });
  resources.forEach((r, i) => {
    if (results.has(i)) return;
    const refusal = configResourceRefusal(nodeId, r, incremental, mayAlterClusterConfigs);
    if (refusal !== null) results.set(i, refusal);
  });
  return results;
}

function configResourceRefusal(
  nodeId: number,
  resource: ConfigResource,
  incremental: boolean,
  mayAlterClusterConfigs: () => boolean,
): ApiResult | null {
  const invalid = (errorMessage: string): ApiResult => ({ errorCode: Errors.INVALID_REQUEST.code, errorMessage });
  const names = resource.configs.map((c) => c.name);
  if (new Set(names).size !== names.length) return invalid('Error due to duplicate config keys');
  const nullUpdates = resource.configs.filter((c) => c.value === null && (!incremental || c.configOperation !== AlterConfigOp.DELETE));
  if (nullUpdates.length > 0) return invalid(`Null value not supported for : ${nullUpdates.map((c) => c.name).join(', ')}`);
  switch (resource.resourceType) {
    case ConfigResourceType.BROKER:
      // The cluster-wide default ("") or this broker: another broker's configs go to that broker.
      return resource.resourceName === '' ? null : nodeIdRefusal(nodeId, resource.resourceName);
    case ConfigResourceType.BROKER_LOGGER: {
      // Legacy AlterConfigs never supported log levels (KIP-412 is incremental only).
      if (!incremental) return invalid(`Unknown resource type ${resource.resourceType}`);
      // Served here, so authorized here: the controller never sees it.
      if (!mayAlterClusterConfigs()) {
        return { errorCode: Errors.CLUSTER_AUTHORIZATION_FAILED.code, errorMessage: Errors.CLUSTER_AUTHORIZATION_FAILED.message };
      }
      const refusal = nodeIdRefusal(nodeId, resource.resourceName);
      if (refusal !== null) return refusal;
      // DescribeConfigs lists no loggers for this broker: none can be altered.
      const logger = resource.configs[0];
      if (logger !== undefined) return { errorCode: Errors.INVALID_CONFIG.code, errorMessage: `Logger ${logger.name} does not exist!` };
      return { errorCode: OK, errorMessage: null };
    }
    default:
      return FORWARDED_RESOURCE_TYPES.has(resource.resourceType) ? null : invalid(`Unknown resource type ${resource.resourceType}`);
  }
}

function nodeIdRefusal(nodeId: number, resourceName: string): ApiResult | null {
  if (!/^-?\d+$/.test(resourceName)) {
    return { errorCode: Errors.INVALID_REQUEST.code, errorMessage: `Node id must be an integer, but it is: ${resourceName}` };
  }
  if (Number(resourceName) !== nodeId) {
    return {
      errorCode: Errors.INVALID_REQUEST.code,
      errorMessage: `Unexpected broker id, expected ${nodeId}, but received ${resourceName}`,
    };
  }
  return null;
}

/** The answers in request order: preprocessed ones, then the controller's by resource. */
function reassemble(
  resources: readonly ConfigResource[],
  preprocessed: ReadonlyMap<number, ApiResult>,
  forwarded: readonly ResourceResult[],
): ResourceResult[] {
  const byResource = new Map(forwarded.map((r) => [`${r.resourceType}:${r.resourceName}`, r]));
  return resources.map((r, i) => {
    const own = preprocessed.get(i) ?? byResource.get(`${r.resourceType}:${r.resourceName}`);
    const result = own ?? {
      errorCode: Errors.UNKNOWN_SERVER_ERROR.code,
      errorMessage: 'The controller returned no result for this resource.',
    };
    return { resourceType: r.resourceType, resourceName: r.resourceName, errorCode: result.errorCode, errorMessage: result.errorMessage };
  });
}

/**
 * Topic creation from inside the broker (Metadata auto-creation, the coordinators' internal
 * topics), through the active controller as Kafka's AutoTopicCreationManager does.
 */
export function createTopicsThroughController(
  channel: Pick<ControllerChannel, 'send'>,
  timeoutMs: number,
): (topics: readonly CreatableTopic[]) => Promise<(ApiResult & { name: string })[]> {
  const version = apis.get(ApiKey.CreateTopics)!.maxVersion;
  return async (topics) => {
    const request = makeCreateTopicsRequest({
      timeoutMs,
      validateOnly: false,
      topics: topics.map((t) =>
        makeCreateTopicsRequestCreatableTopic({
          name: t.name,
          numPartitions: t.numPartitions,
          replicationFactor: t.replicationFactor,
          assignments: t.assignments.map((a) =>
            makeCreateTopicsRequestCreatableReplicaAssignment({ partitionIndex: a.partitionIndex, brokerIds: a.brokerIds }),
          ),
          configs: t.configs.map((c) => makeCreateTopicsRequestCreatableTopicConfig({ name: c.name, value: c.value })),
        }),
      ),
    });
    const response = await channel.send(ApiKey.CreateTopics, request, version, timeoutMs);
    return response.topics.map((t) => ({ name: t.name, errorCode: t.errorCode, errorMessage: t.errorMessage }));
  };
}
