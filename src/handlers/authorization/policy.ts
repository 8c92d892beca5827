/**
 * What every per-API authorization policy works with: who is asking, the authorizer's answers
 * for that identity, the wrapped handler, and what KafkaApis's AuthHelper gives its handlers
 * (filterByAuthorized, authorizeClusterOperation, the request's error response).
 */
import { errorResponseFor } from '../../../protocol/error-response.ts';
import { Errors, type KafkaErrorCode } from '../../../protocol/errors.ts';
import type { ApiKey, ApiRequest, ApiResponse } from '../../../protocol/messages/index.ts';
import { AclOperation, CLUSTER_RESOURCE_NAME, ResourceType, type Authorizer, type RequestIdentity } from '../../security/acl-types.ts';
import type { RequestContext } from '../../server/session.ts';

/** Topic facts some policies need before the handler runs, as KafkaApis reads them from its metadata cache. */
export interface TopicLookup {
  /** The name of the topic with this id, or undefined when no topic has it. */
  topicName(topicId: string): string | undefined;
  /** Whether a topic of this name exists. */
  topicExists(name: string): boolean;
  /** auto.create.topics.enable: whether Metadata may create the topics it is asked about. */
  autoCreateTopicsEnable(): boolean;
}

/** The authorizer's answers for the identity of one request. */
export class Access {
  constructor(
    private readonly authorizer: Authorizer,
    readonly identity: RequestIdentity,
  ) {}

  allows(operation: number, resourceType: number, name: string): boolean {
    return this.authorizer.authorize(this.identity, operation, resourceType, name);
  }

  allowsCluster(operation: number): boolean {
    return this.allows(operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
  }

  allowsTopic(operation: number, name: string): boolean {
    return this.allows(operation, ResourceType.TOPIC, name);
  }

  allowsGroup(operation: number, name: string): boolean {
    return this.allows(operation, ResourceType.GROUP, name);
  }

  allowsTransactionalId(operation: number, name: string): boolean {
    return this.allows(operation, ResourceType.TRANSACTIONAL_ID, name);
  }

  allowsAny(operation: number, resourceType: number): boolean {
    return this.authorizer.authorizeAny(this.identity, operation, resourceType);
  }

  operations(resourceType: number, name: string): number {
    return this.authorizer.authorizedOperations(this.identity, resourceType, name);
  }

  /** Kafka's filterByAuthorized: each distinct name is asked once. */
  topicFilter(operation: number): (name: string) => boolean {
    const answers = new Map<string, boolean>();
    return (name) => {
      let allowed = answers.get(name);
      if (allowed === undefined) {
        allowed = this.allowsTopic(operation, name);
        answers.set(name, allowed);
      }
      return allowed;
    };
  }
}

/** One request on its way through a policy. */
export interface Call<K extends ApiKey> {
  readonly apiKey: K;
  readonly ctx: RequestContext;
  readonly request: ApiRequest<K>;
  readonly version: number;
  readonly access: Access;
  readonly topics: TopicLookup | undefined;
  /** The wrapped handler, on the request or on a copy holding only its authorized part. */
  next(request: ApiRequest<K>): Promise<ApiResponse<K> | null>;
}

/** Kafka's authorization of one API around its handler. */
export type Policy<K extends ApiKey> = (call: Call<K>) => Promise<ApiResponse<K> | null>;

/** The TopicLookup of a policy that cannot decide without one (authorizing refuses to wrap such an API without it). */
export function requireTopics<K extends ApiKey>(call: Call<K>): TopicLookup {
  if (call.topics === undefined) throw new Error(`api key ${call.apiKey}: authorization needs a TopicLookup`);
  return call.topics;
}

/** The API's error response with `error` throughout, as Kafka's `getErrorResponse`, without calling the handler. */
export function refuse<K extends ApiKey>(call: Call<K>, error: KafkaErrorCode): ApiResponse<K> {
  return errorResponseFor(call.apiKey, call.version, call.request, error.code, error.message) as ApiResponse<K>;
}

/**
 * Kafka's authorizeClusterOperation: the whole request needs `operation` on the cluster, else
 * the API's error response (`refused` where the generic one is not Kafka's).
 */
export function clusterOperation<K extends ApiKey>(
  operation: number,
  refused: (call: Call<K>) => ApiResponse<K> = (call) => refuse(call, Errors.CLUSTER_AUTHORIZATION_FAILED),
): Policy<K> {
  return async (call) => (call.access.allowsCluster(operation) ? call.next(call.request) : refused(call));
}

/** A whole-request check on one resource named by the request, refused with `error`. */
export function resourceOperation<K extends ApiKey>(
  operation: number,
  resourceType: number,
  nameOf: (request: ApiRequest<K>) => string,
  error: KafkaErrorCode,
): Policy<K> {
  return async (call) =>
    call.access.allows(operation, resourceType, nameOf(call.request)) ? call.next(call.request) : refuse(call, error);
}

/** READ on the request's group, else GROUP_AUTHORIZATION_FAILED: the group membership APIs. */
export function groupRead<K extends ApiKey>(groupOf: (request: ApiRequest<K>) => string): Policy<K> {
  return resourceOperation(AclOperation.READ, ResourceType.GROUP, groupOf, Errors.GROUP_AUTHORIZATION_FAILED);
}

/**
 * The response entries for `requested` in request order: a refused entry's error element where
 * `refusal` gives one, else the handler's first unused answer for it (matched by `answers`);
 * answers matching no request entry (the partitions an incremental fetch has cached) follow.
 */
export function inRequestOrder<Q, R>(
  requested: readonly Q[],
  refusal: (entry: Q) => R | null,
  answered: readonly R[],
  answers: (entry: Q, answer: R) => boolean,
): R[] {
  const unused = new Set(answered);
  const out: R[] = [];
  for (const entry of requested) {
    const refused = refusal(entry);
    if (refused !== null) {
      out.push(refused);
      continue;
    }
    const answer = answered.find((a) => unused.has(a) && answers(entry, a));
    if (answer !== undefined) {
      out.push(answer);
      unused.delete(answer);
    }
  }
  for (const answer of answered) if (unused.has(answer)) out.push(answer);
  return out;
}
