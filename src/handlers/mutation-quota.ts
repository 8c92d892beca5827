/**
 * The controller_mutation_rate quota (KIP-599) on CreateTopics, CreatePartitions and
 * DeleteTopics: each topic spends as many permits as the partitions it creates or deletes.
 * From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 the quota is strict: once it is
 * exhausted, the topics still to come are answered THROTTLING_QUOTA_EXCEEDED and not sent to
 * the controller, and the client retries them after the throttle time. Older versions are
 * served in full and throttled afterwards. Either way the response carries the throttle time
 * and the connection is held back for it.
 *
 * Kafka decides this on the controller, for the principal the forwarding broker wraps in an
 * Envelope. Sluice forwards without one, so the broker that received the request decides, with
 * the partition counts of its own metadata image: each broker keeps its own token buckets.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeCreatePartitionsResponseCreatePartitionsTopicResult,
  type CreatePartitionsRequest,
  type CreatePartitionsResponse,
} from '../../protocol/messages/create-partitions.ts';
import {
  makeCreateTopicsResponseCreatableTopicResult,
  type CreateTopicsRequest,
  type CreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import {
  makeDeleteTopicsResponseDeletableTopicResult,
  type DeleteTopicsRequest,
  type DeleteTopicsRequestDeleteTopicState,
  type DeleteTopicsResponse,
} from '../../protocol/messages/delete-topics.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import type { MetadataImage } from '../metadata/image.ts';
import { ThrottlingQuotaExceededError, type ControllerMutationQuota } from '../quota/controller-mutation-quota.ts';

/** The versions from which a mutation over quota is refused rather than throttled afterwards. */
export const STRICT_SINCE = { createTopics: 6, createPartitions: 3, deleteTopics: 5 } as const;

export interface MutationQuotaServices {
  readonly image: () => MetadataImage;
  /** num.partitions: what a topic created with numPartitions -1 gets. */
  readonly defaultPartitions: () => number;
}

/** Spends each entry's permits in turn: those a strict quota refused are answered over the quota, the others go on. */
function spend<E>(quota: ControllerMutationQuota, entries: readonly E[], permits: (entry: E) => number): { allowed: E[]; refused: E[] } {
  const allowed: E[] = [];
  const refused: E[] = [];
  for (const entry of entries) {
    try {
      quota.record(permits(entry));
      allowed.push(entry);
    } catch (err) {
      if (!(err instanceof ThrottlingQuotaExceededError)) throw err;
      refused.push(entry);
    }
  }
  return { allowed, refused };
}

/** The response with the quota's throttle time, if longer than the controller's. */
function throttled<R extends { throttleTimeMs: number }>(response: R, quota: ControllerMutationQuota): R {
  response.throttleTimeMs = Math.max(response.throttleTimeMs, quota.throttleTimeMs());
  return response;
}

/** Kafka's ApiError leaves out a message that is the error's default one. */
const EXCEEDED = { errorCode: Errors.THROTTLING_QUOTA_EXCEEDED.code, errorMessage: null };

export async function createTopicsWithinQuota(
  services: MutationQuotaServices,
  quota: ControllerMutationQuota,
  request: CreateTopicsRequest,
  forward: (request: CreateTopicsRequest) => Promise<CreateTopicsResponse>,
): Promise<CreateTopicsResponse> {
  const permits = (t: CreateTopicsRequestCreatableTopic) =>
    t.assignments.length > 0 ? t.assignments.length : t.numPartitions === -1 ? services.defaultPartitions() : Math.max(0, t.numPartitions);
  const { allowed, refused } = spend(quota, request.topics, permits);
  const response = await forward({ ...request, topics: allowed });
  response.topics.push(...refused.map((t) => makeCreateTopicsResponseCreatableTopicResult({ name: t.name, ...EXCEEDED })));
  return throttled(response, quota);
}

export async function createPartitionsWithinQuota(
  services: MutationQuotaServices,
  quota: ControllerMutationQuota,
  request: CreatePartitionsRequest,
  forward: (request: CreatePartitionsRequest) => Promise<CreatePartitionsResponse>,
): Promise<CreatePartitionsResponse> {
  const image = services.image();
  const { allowed, refused } = spend(quota, request.topics, (t) =>
    Math.max(0, t.count - (image.topic(t.name)?.partitions.size ?? t.count)),
  );
  const response = await forward({ ...request, topics: allowed });
  response.results.push(...refused.map((t) => makeCreatePartitionsResponseCreatePartitionsTopicResult({ name: t.name, ...EXCEEDED })));
  return throttled(response, quota);
}

export async function deleteTopicsWithinQuota(
  services: MutationQuotaServices,
  quota: ControllerMutationQuota,
  request: DeleteTopicsRequest,
  version: number,
  forward: (request: DeleteTopicsRequest) => Promise<DeleteTopicsResponse>,
): Promise<DeleteTopicsResponse> {
  const image = services.image();
  const partitions = (t: { name: string | null; topicId: string }) =>
    (t.topicId !== ZERO_UUID ? image.topicById(t.topicId) : t.name === null ? undefined : image.topic(t.name))?.partitions.size ?? 0;
  // Up to v5 topics are named only; from v6 by name or id.
  const topics: { name: string | null; topicId: string }[] =
    version >= 6 ? request.topics : request.topicNames.map((name) => ({ name, topicId: ZERO_UUID }));
  const { allowed, refused } = spend(quota, topics, partitions);
  const forwarded =
    version >= 6
      ? { ...request, topics: allowed as DeleteTopicsRequestDeleteTopicState[] }
      : { ...request, topicNames: allowed.map((t) => t.name!) };
  const response = await forward(forwarded);
  response.responses.push(
    ...refused.map((t) => makeDeleteTopicsResponseDeletableTopicResult({ name: t.name, topicId: t.topicId, ...EXCEEDED })),
  );
  return throttled(response, quota);
}
