/**
 * The broker's way to the active controller, as Kafka's NodeToControllerChannelManager: a
 * request goes in-process to the local controller-side handler when this node is the active
 * controller, else over one connection to the active controller's controller listener (its
 * address from controller.quorum.voters, or any of controller.quorum.bootstrap.servers while
 * the leader's address is unknown). NOT_CONTROLLER answers (top-level or for any resource),
 * connection failures and an unknown leader are retried with exponential backoff until the
 * request's deadline; past it the caller gets the request's error response with
 * REQUEST_TIMED_OUT, as Kafka's forwarding answers a request it could not deliver.
 *
 * Requests on one connection are served one after another by the controller, so a broker
 * keeps one channel per purpose (forwarded admin requests, lifecycle heartbeats, AlterPartition),
 * as Kafka does, and a slow CreateTopics never holds back a heartbeat.
 */
import { errorResponseFor } from '../../protocol/error-response.ts';
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { makeAllocateProducerIdsRequest } from '../../protocol/messages/allocate-producer-ids.ts';
import { ApiKey, type ApiRequest, type ApiResponse } from '../../protocol/messages/index.ts';
import { ConnectionError, KafkaConnection, type ClientSecurity } from '../client/connection.ts';
import type { Logger } from '../observability/logger.ts';
import type { ProducerIdBlock } from '../replication/producer-id-manager.ts';
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import type { Network } from '../runtime/network.ts';

/** The requests a broker sends to the active controller (a client's admin request inside an Envelope). */
export type ForwardedApiKey =
  | ApiKey.Envelope
  | ApiKey.CreateTopics
  | ApiKey.DeleteTopics
  | ApiKey.CreatePartitions
  | ApiKey.AlterConfigs
  | ApiKey.IncrementalAlterConfigs
  | ApiKey.ElectLeaders
  | ApiKey.AlterPartitionReassignments
  | ApiKey.ListPartitionReassignments
  | ApiKey.BrokerRegistration
  | ApiKey.BrokerHeartbeat
  | ApiKey.AlterPartition
  | ApiKey.AllocateProducerIds
  | ApiKey.AlterUserScramCredentials
  | ApiKey.AlterClientQuotas
  | ApiKey.CreateAcls
  | ApiKey.DeleteAcls;

export interface ControllerChannel {
  /**
   * Sends `request` (at most at `version`) to the active controller and resolves with its
   * response; never rejects for the controller being unknown, unreachable or moving: after
   * `timeoutMs` it resolves with the request's error response carrying REQUEST_TIMED_OUT.
   */
  send<K extends ForwardedApiKey>(apiKey: K, request: ApiRequest<K>, version: number, timeoutMs: number): Promise<ApiResponse<K>>;
  close(): Promise<void>;
}

/** A controller-side handler, called in-process when this node is the active controller. */
export type ControllerHandler<K extends ForwardedApiKey> = (request: ApiRequest<K>, version: number) => Promise<ApiResponse<K>>;

/** The controller-side handlers of this node, present only on a node with the controller role. */
export type LocalControllerHandlers = { readonly [K in ForwardedApiKey]?: ControllerHandler<K> };

export interface ControllerAddress {
  readonly host: string;
  readonly port: number;
}

/** What the channel needs of a connection (KafkaConnection has it). */
export interface ControllerConnection {
  readonly closed: boolean;
  /** The highest version both sides support, at most `cap`; throws UNSUPPORTED_VERSION when none. */
  version(apiKey: number, cap: number): number;
  send<Res>(apiKey: number, request: unknown, version: number): Promise<Res>;
  close(): void;
}

export interface ControllerChannelOptions {
  /** This node's id: the active controller is local when it has this id and `local` serves the API. */
  readonly nodeId: number;
  /** The Raft leader, -1 while unknown (MetadataManager.activeControllerId). */
  readonly activeControllerId: () => number;
  /** controller.quorum.voters: the controller listener of each voter. */
  readonly voters: readonly (ControllerAddress & { readonly nodeId: number })[];
  /** controller.quorum.bootstrap.servers: tried in turn while the leader's address is unknown. */
  readonly bootstrapServers?: readonly ControllerAddress[];
  readonly local?: LocalControllerHandlers;
  /** controller.quorum.retry.backoff.ms: the first retry's delay, doubled per retry. */
  readonly retryBackoffMs: number;
  /** The longest delay between retries; defaults to 1000. */
  readonly retryBackoffMaxMs?: number;
  /** Connection client id; defaults to `broker-<nodeId>-to-controller`. */
  readonly clientId?: string;
  /** Per request on the connection; defaults to 30000 (request.timeout.ms). */
  readonly requestTimeoutMs?: number;
  /** Defaults to KafkaConnection.connect. */
  readonly connect?: (address: ControllerAddress) => Promise<ControllerConnection>;
  /** Where the default `connect` opens connections; defaults to the system network. */
  readonly network?: Network;
  /** The controller listener's TLS and SASL settings for the default `connect`. */
  readonly security?: ClientSecurity;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

type AttemptResult<R> = { readonly response: R } | { readonly retry: string };

const DEFAULT_RETRY_BACKOFF_MAX_MS = 1000;
/** Node fires a longer timer at once; a longer deadline (Kafka's Long.MAX_VALUE) is cut to this. */
const MAX_TIMER_MS = 2_147_483_647;

export class ControllerChannelManager implements ControllerChannel {
  private readonly voters: ReadonlyMap<number, ControllerAddress>;
  private readonly bootstrapServers: readonly ControllerAddress[];
  private readonly clock: Clock;
  private readonly connect: (address: ControllerAddress) => Promise<ControllerConnection>;
  private connection: { readonly key: string; readonly conn: Promise<ControllerConnection> } | null = null;
  /** The bootstrap server the next attempt goes to while the leader's address is unknown. */
  private nextBootstrap = 0;
  private closed = false;
  private readonly wakeOnClose = new Set<() => void>();

  constructor(private readonly options: ControllerChannelOptions) {
    this.voters = new Map(options.voters.map((v) => [v.nodeId, { host: v.host, port: v.port }]));
    this.bootstrapServers = options.bootstrapServers ?? [];
    this.clock = options.clock ?? systemClock;
    const clientId = options.clientId ?? `broker-${options.nodeId}-to-controller`;
    const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.connect =
      options.connect ??
      ((a) =>
        KafkaConnection.connect(a.host, a.port, {
          clientId,
          requestTimeoutMs,
          connectTimeoutMs: Math.min(requestTimeoutMs, 10_000),
          network: options.network,
          clock: this.clock,
          ...options.security,
        }));
  }

  async send<K extends ForwardedApiKey>(apiKey: K, request: ApiRequest<K>, version: number, timeoutMs: number): Promise<ApiResponse<K>> {
    const deadline = this.clock.now() + Math.max(0, timeoutMs);
    let backoffMs = this.options.retryBackoffMs;
    let lastReason = 'no attempt made';
    for (;;) {
      if (this.closed) return timedOut(apiKey, version, request, 'The controller channel is closed.');
      const remainingMs = deadline - this.clock.now();
      const result = await this.within(remainingMs, this.attempt(apiKey, request, version));
      if (result === null) break;
      if ('response' in result) return result.response;
      lastReason = result.retry;
      const delayMs = Math.min(backoffMs, deadline - this.clock.now());
      if (delayMs <= 0) break;
      this.options.logger?.debug({ apiKey, reason: lastReason, retryInMs: delayMs }, 'retrying request to the active controller');
      await this.sleep(delayMs);
      backoffMs = Math.min(backoffMs * 2, this.options.retryBackoffMaxMs ?? DEFAULT_RETRY_BACKOFF_MAX_MS);
    }
    if (this.closed) return timedOut(apiKey, version, request, 'The controller channel is closed.');
    this.options.logger?.warn({ apiKey, timeoutMs, reason: lastReason }, 'request to the active controller timed out');
    return timedOut(apiKey, version, request, `No answer from the active controller within ${timeoutMs} ms (${lastReason}).`);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.wakeOnClose) wake();
    this.wakeOnClose.clear();
    this.dropConnection();
  }

  private async attempt<K extends ForwardedApiKey>(
    apiKey: K,
    request: ApiRequest<K>,
    version: number,
  ): Promise<AttemptResult<ApiResponse<K>>> {
    const leaderId = this.options.activeControllerId();
    const local = this.options.local?.[apiKey] as ControllerHandler<K> | undefined;
    if (leaderId === this.options.nodeId && local !== undefined) {
      this.dropConnection();
      return this.answer(apiKey, await callLocal(local, apiKey, request, version), `controller ${leaderId}`);
    }
    const voter = leaderId >= 0 ? this.voters.get(leaderId) : undefined;
    let address: ControllerAddress;
    let target: string;
    if (voter !== undefined) {
      address = voter;
      target = `controller ${leaderId} at ${voter.host}:${voter.port}`;
    } else if (this.bootstrapServers.length > 0) {
      address = this.bootstrapServers[this.nextBootstrap % this.bootstrapServers.length]!;
      target = `bootstrap controller ${address.host}:${address.port}`;
    } else {
      return {
        retry: leaderId < 0 ? 'no active controller is known' : `controller ${leaderId} has no address in controller.quorum.voters`,
      };
    }
    const result = await this.sendRemote(apiKey, request, version, address, target);
    if ('retry' in result && voter === undefined) this.nextBootstrap++;
    return result;
  }

  private async sendRemote<K extends ForwardedApiKey>(
    apiKey: K,
    request: ApiRequest<K>,
    version: number,
    address: ControllerAddress,
    target: string,
  ): Promise<AttemptResult<ApiResponse<K>>> {
    const key = `${address.host}:${address.port}`;
    if (this.connection !== null && this.connection.key !== key) this.dropConnection();
    const entry = this.connection ?? { key, conn: this.connect(address) };
    this.connection = entry;
    let conn: ControllerConnection;
    try {
      conn = await entry.conn;
    } catch (err) {
      this.dropConnection(entry);
      return { retry: `${target}: ${(err as Error).message}` };
    }
    if (conn.closed) {
      this.dropConnection(entry);
      return { retry: `${target}: connection closed` };
    }
    let wireVersion: number;
    try {
      wireVersion = conn.version(apiKey, version);
    } catch (err) {
      if (!(err instanceof KafkaError)) throw err;
      return { response: errorResponse(apiKey, version, request, err.code, err.message) };
    }
    try {
      const response = await conn.send<ApiResponse<K>>(apiKey, request, wireVersion);
      const result = this.answer(apiKey, response, target);
      // Kafka drops the connection to a node that is no longer the controller.
      if ('retry' in result) this.dropConnection(entry);
      return result;
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err;
      this.dropConnection(entry);
      return { retry: `${target}: ${err.message}` };
    }
  }

  private answer<K extends ForwardedApiKey>(apiKey: K, response: ApiResponse<K>, target: string): AttemptResult<ApiResponse<K>> {
    return answersNotController(apiKey, response) ? { retry: `${target} is not the active controller` } : { response };
  }

  private dropConnection(entry = this.connection): void {
    if (entry === null || entry !== this.connection) return;
    this.connection = null;
    entry.conn.then(
      (c) => c.close(),
      () => undefined,
    );
  }

  /** `work`'s result, or null when `ms` pass first or the channel closes. */
  private within<T>(ms: number, work: Promise<T>): Promise<T | null> {
    if (ms <= 0) {
      work.catch(() => undefined);
      return Promise.resolve(null);
    }
    return new Promise<T | null>((resolve, reject) => {
      const finish = () => {
        this.clock.clearTimeout(timer);
        this.wakeOnClose.delete(expire);
      };
      const expire = () => {
        finish();
        resolve(null);
      };
      const timer: TimerHandle = this.clock.setTimeout(expire, Math.min(ms, MAX_TIMER_MS));
      this.wakeOnClose.add(expire);
      work.then(
        (value) => {
          finish();
          resolve(value);
        },
        (err: unknown) => {
          finish();
          reject(err);
        },
      );
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        this.clock.clearTimeout(timer);
        this.wakeOnClose.delete(wake);
        resolve();
      };
      const timer = this.clock.setTimeout(wake, ms);
      this.wakeOnClose.add(wake);
    });
  }
}

/** A local handler's refusal (a thrown KafkaError) is answered as the server would answer it. */
async function callLocal<K extends ForwardedApiKey>(
  handler: ControllerHandler<K>,
  apiKey: K,
  request: ApiRequest<K>,
  version: number,
): Promise<ApiResponse<K>> {
  try {
    return await handler(request, version);
  } catch (err) {
    if (!(err instanceof KafkaError)) throw err;
    return errorResponse(apiKey, version, request, err.code, err.message);
  }
}

type ErrorCoded = { readonly errorCode: number };

/** Kafka retries a response whose error counts include NOT_CONTROLLER, wherever it appears. */
export function answersNotController(apiKey: ForwardedApiKey, response: ApiResponse<ForwardedApiKey>): boolean {
  const not = (e: ErrorCoded) => e.errorCode === Errors.NOT_CONTROLLER.code;
  switch (apiKey) {
    case ApiKey.CreateTopics:
      return (response as ApiResponse<ApiKey.CreateTopics>).topics.some(not);
    case ApiKey.DeleteTopics:
      return (response as ApiResponse<ApiKey.DeleteTopics>).responses.some(not);
    case ApiKey.CreatePartitions:
      return (response as ApiResponse<ApiKey.CreatePartitions>).results.some(not);
    case ApiKey.AlterConfigs:
      return (response as ApiResponse<ApiKey.AlterConfigs>).responses.some(not);
    case ApiKey.IncrementalAlterConfigs:
      return (response as ApiResponse<ApiKey.IncrementalAlterConfigs>).responses.some(not);
    case ApiKey.ElectLeaders: {
      const r = response as ApiResponse<ApiKey.ElectLeaders>;
      return not(r) || r.replicaElectionResults.some((t) => t.partitionResult.some(not));
    }
    case ApiKey.AlterClientQuotas:
      return (response as ApiResponse<ApiKey.AlterClientQuotas>).entries.some(not);
    case ApiKey.AlterPartitionReassignments: {
      const r = response as ApiResponse<ApiKey.AlterPartitionReassignments>;
      return not(r) || r.responses.some((t) => t.partitions.some(not));
    }
    default:
      return not(response as ErrorCoded);
  }
}

function errorResponse<K extends ForwardedApiKey>(
  apiKey: K,
  version: number,
  request: ApiRequest<K>,
  errorCode: number,
  message: string | null,
): ApiResponse<K> {
  return errorResponseFor(apiKey, version, request, errorCode, message) as ApiResponse<K>;
}

function timedOut<K extends ForwardedApiKey>(apiKey: K, version: number, request: ApiRequest<K>, message: string): ApiResponse<K> {
  return errorResponse(apiKey, version, request, Errors.REQUEST_TIMED_OUT.code, message);
}

export interface ProducerIdBlockOptions {
  readonly brokerId: number;
  /** The broker's current epoch (BrokerLifecycleManager.brokerEpoch). */
  readonly brokerEpoch: () => bigint;
  readonly timeoutMs: number;
}

/**
 * The data path's source of producer-id blocks (Kafka's RPCProducerIdManager): one
 * AllocateProducerIds to the active controller per block. A refusal rejects, and
 * InitProducerId answers it with a retriable error.
 */
export function producerIdBlockAllocator(
  channel: Pick<ControllerChannel, 'send'>,
  options: ProducerIdBlockOptions,
): () => Promise<ProducerIdBlock> {
  return async () => {
    const request = makeAllocateProducerIdsRequest({ brokerId: options.brokerId, brokerEpoch: options.brokerEpoch() });
    const response = await channel.send(ApiKey.AllocateProducerIds, request, 0, options.timeoutMs);
    if (response.errorCode !== Errors.NONE.code) {
      throw new KafkaError(errorByCode(response.errorCode), `AllocateProducerIds for broker ${options.brokerId} failed`);
    }
    if (response.producerIdStart < 0n || response.producerIdLen <= 0) {
      throw new KafkaError(
        Errors.UNKNOWN_SERVER_ERROR,
        `AllocateProducerIds answered an invalid block: start ${response.producerIdStart}, length ${response.producerIdLen}`,
      );
    }
    return { firstProducerId: response.producerIdStart, size: response.producerIdLen };
  };
}
