/**
 * The controller_mutation_rate quota (KIP-599) on CreateTopics, CreatePartitions and
 * DeleteTopics, on the active controller as Kafka's ControllerApis applies it: the client is
 * the request's principal and client id (a forwarded request's are those of the client the
 * broker wrapped in the Envelope), so one client has one token bucket however many brokers its
 * requests come through. Each topic spends as many permits as the partitions it creates or
 * deletes, once it passed the controller's validation (QuorumController's
 * applyPartitionChangeQuota).
 *
 * From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 the quota is strict: once it is
 * exhausted, the topics still to come are answered THROTTLING_QUOTA_EXCEEDED and the client
 * retries them after the throttle time. Older versions are served in full and throttled
 * afterwards. Either way the response carries the throttle time; a request that came straight
 * to a controller listener has its connection held back for it, a forwarded one is held back
 * by the forwarding broker.
 */
import type { RequestContext } from '../server/session.ts';
import type { ControllerMutationQuota } from '../quota/controller-mutation-quota.ts';

/** The versions from which a mutation over quota is refused rather than throttled afterwards. */
export const STRICT_SINCE = { createTopics: 6, createPartitions: 3, deleteTopics: 5 } as const;

export interface MutationQuotas {
  quotaFor(ctx: RequestContext, strict: boolean): ControllerMutationQuota;
}

/** `serve` with the quota of the request's client; the response carries its throttle time if longer than its own. */
export async function withMutationQuota<R extends { throttleTimeMs: number }>(
  quotas: MutationQuotas | undefined,
  ctx: RequestContext,
  strict: boolean,
  serve: (quota: ControllerMutationQuota | undefined) => Promise<R>,
): Promise<R> {
  if (quotas === undefined) return serve(undefined);
  const quota = quotas.quotaFor(ctx, strict);
  const response = await serve(quota);
  const throttleTimeMs = quota.throttleTimeMs();
  response.throttleTimeMs = Math.max(response.throttleTimeMs, throttleTimeMs);
  ctx.throttle(throttleTimeMs);
  return response;
}
