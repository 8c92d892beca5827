/**
 * The broker's client quotas (Kafka's QuotaManagers): producer and consumer byte rates, the
 * request-time percentage and the controller mutation rate, resolved from the ClientQuotaRecords
 * of the metadata image for the principal and client id of each request.
 *
 * What a request is charged and when it is exempt follows KafkaApis: a produce is charged its
 * request size, a consumer's fetch its response size, and every request its handling time
 * against request_percentage, except the requests brokers and controllers send each other
 * (replica fetches, transaction markers, controller traffic) and acks=0 produces, which have no
 * response to carry the throttle time.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import type { FetchRequest } from '../../protocol/messages/fetch.ts';
import { fetchReplicaId, type FetchBandwidth } from '../handlers/fetch.ts';
import type { MetadataImage } from '../metadata/image.ts';
import { ClientQuotaManager, type ClientQuotaSource, type QuotaClient } from '../quota/client-quota-manager.ts';
import { ControllerMutationQuotaManager, type ControllerMutationQuota } from '../quota/controller-mutation-quota.ts';
import type { QuotaWindow } from '../quota/sampled-rate.ts';
import { canonicalIp } from './connection-quotas.ts';
import type { RequestContext, Session } from './session.ts';

/** APIs only brokers and controllers send: never charged to a client quota (Kafka's sendResponseExemptThrottle and the controller's APIs). */
const INTER_BROKER_APIS: ReadonlySet<number> = new Set([
  ApiKey.WriteTxnMarkers,
  ApiKey.AlterPartition,
  ApiKey.BrokerRegistration,
  ApiKey.BrokerHeartbeat,
  ApiKey.UnregisterBroker,
  ApiKey.AllocateProducerIds,
  ApiKey.Vote,
  ApiKey.BeginQuorumEpoch,
  ApiKey.EndQuorumEpoch,
  ApiKey.FetchSnapshot,
  ApiKey.AddRaftVoter,
  ApiKey.RemoveRaftVoter,
  ApiKey.UpdateRaftVoter,
  ApiKey.ControllerRegistration,
  ApiKey.AssignReplicasToDirs,
  ApiKey.Envelope,
]);

export interface QuotaWindows {
  /** quota.window.num and quota.window.size.seconds. */
  readonly client: QuotaWindow;
  /** controller.quota.window.num and controller.quota.window.size.seconds. */
  readonly controllerMutation: QuotaWindow;
}

export class QuotaManagers {
  readonly produce: ClientQuotaManager;
  readonly fetch: ClientQuotaManager;
  readonly request: ClientQuotaManager;
  readonly controllerMutation: ControllerMutationQuotaManager;
  /** connection_creation_rate by canonical address; null keys the default ip entity. */
  private connectionRates: ReadonlyMap<string | null, number>;

  constructor(
    windows: QuotaWindows,
    image: MetadataImage,
    private readonly nowMs: () => number,
  ) {
    const source = quotaSource(image);
    this.produce = new ClientQuotaManager('producer_byte_rate', windows.client, source);
    this.fetch = new ClientQuotaManager('consumer_byte_rate', windows.client, source);
    this.request = new ClientQuotaManager('request_percentage', windows.client, source);
    this.controllerMutation = new ControllerMutationQuotaManager(windows.controllerMutation, source, { monotonicMs: nowMs });
    this.connectionRates = connectionRates(image);
  }

  /** The quotas of a new metadata image (one whose ClientQuotaRecords changed). */
  update(image: MetadataImage): void {
    const source = quotaSource(image);
    this.produce.updateQuotas(source);
    this.fetch.updateQuotas(source);
    this.request.updateQuotas(source);
    this.controllerMutation.updateQuotas(source);
    this.connectionRates = connectionRates(image);
  }

  /**
   * An address's connection_creation_rate: its own ip entity's, else the default ip entity's.
   * Entities are matched by address, as Kafka resolves their names, not by how they are spelled.
   */
  connectionCreationRate(ip: string): number | undefined {
    return this.connectionRates.get(canonicalIp(ip)) ?? this.connectionRates.get(null);
  }

  /**
   * Charges a request once handled: a produce's size to producer_byte_rate, and its handling
   * time to request_percentage. The throttle time in ms, the longer of the two; 0 when within
   * quota or exempt.
   */
  charge(ctx: RequestContext, request: unknown, handlingMs: number): number {
    const produce = ctx.apiKey === ApiKey.Produce && this.produce.enabled;
    const timed = this.request.enabled && !requestQuotaExempt(ctx, request);
    if (!produce && !timed) return 0;
    const client = quotaClient(ctx.session, ctx.clientId);
    const now = this.nowMs();
    const bandwidthMs = produce ? this.produce.recordAndGetThrottleTimeMs(client, ctx.requestBytes, now) : 0;
    const requestMs = timed ? this.request.recordAndGetThrottleTimeMs(client, handlingMs, now) : 0;
    return Math.max(bandwidthMs, requestMs);
  }

  /**
   * Charges the time spent encoding a request's response to request_percentage, against the
   * client's next request (Kafka's network-thread time, recorded without throttling).
   */
  chargeResponseTime(ctx: RequestContext, request: unknown, encodingMs: number): void {
    if (!this.request.enabled || requestQuotaExempt(ctx, request)) return;
    this.request.recordNoThrottle(quotaClient(ctx.session, ctx.clientId), encodingMs, this.nowMs());
  }

  /** The controller_mutation_rate quota of one CreateTopics, CreatePartitions or DeleteTopics. */
  mutationQuotaFor(ctx: RequestContext, strict: boolean): ControllerMutationQuota {
    return this.controllerMutation.newQuotaFor(quotaClient(ctx.session, ctx.clientId), strict);
  }

  /** A consumer's consumer_byte_rate quota for one Fetch; null for followers or when no consumer quota exists. */
  fetchBandwidth(ctx: RequestContext, request: unknown): FetchBandwidth | null {
    if (!this.fetch.enabled || fetchReplicaId(request as FetchRequest, ctx.apiVersion) >= 0) return null;
    const client = quotaClient(ctx.session, ctx.clientId);
    const fetch = this.fetch;
    return {
      maxBytes: fetch.maxValueInQuotaWindow(client),
      record: (bytes) => fetch.recordAndGetThrottleTimeMs(client, bytes, this.nowMs()),
      unrecord: (bytes) => fetch.unrecord(client, bytes, this.nowMs()),
      throttle: (throttleTimeMs) => ctx.throttle(throttleTimeMs),
    };
  }
}

/** Who a request is charged to: the principal's name (User:alice is alice) and the client id. */
export function quotaClient(session: Session, clientId: string | null): QuotaClient {
  const principal = session.principal;
  return { user: principal.slice(principal.indexOf(':') + 1), clientId: clientId ?? '' };
}

function requestQuotaExempt(ctx: RequestContext, request: unknown): boolean {
  if (ctx.session.listenerRole === 'controller' || INTER_BROKER_APIS.has(ctx.apiKey)) return true;
  // Kafka authenticates in its network layer, before any quota applies to the principal.
  if (!ctx.session.authenticated || ctx.apiKey === ApiKey.SaslHandshake || ctx.apiKey === ApiKey.SaslAuthenticate) return true;
  if (ctx.apiKey === ApiKey.Produce) return (request as { acks: number }).acks === 0;
  if (ctx.apiKey === ApiKey.Fetch) return fetchReplicaId(request as FetchRequest, ctx.apiVersion) >= 0;
  return false;
}

function connectionRates(image: MetadataImage): Map<string | null, number> {
  const rates = new Map<string | null, number>();
  for (const { entity, quotas } of image.allClientQuotas()) {
    const rate = quotas.get('connection_creation_rate');
    if (entity.ip === undefined || rate === undefined) continue;
    rates.set(entity.ip === null ? null : canonicalIp(entity.ip), rate);
  }
  return rates;
}

function quotaSource(image: MetadataImage): ClientQuotaSource {
  const keys = new Set<string>();
  for (const { entity, quotas } of image.allClientQuotas()) {
    if (entity.ip !== undefined) continue;
    for (const key of quotas.keys()) keys.add(key);
  }
  return { lookup: (entity) => image.clientQuotas(entity), has: (key) => keys.has(key) };
}
