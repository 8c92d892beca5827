/**
 * Followers replicate from their leaders as Kafka's ReplicaFetcherManager, ReplicaFetcherThread
 * and AbstractFetcherThread do: one fetcher per source broker fetches every partition this
 * broker follows from it in one Fetch, appends what comes back as follower, takes the
 * leader's high watermark as far as its own log reaches, and follows the leader's log start.
 * The fetch position is the follower's log end and its latest epoch (the fetcher is the only
 * writer of a follower's log), so a truncation needs no separate bookkeeping.
 *
 * Divergence (KIP-101/KIP-595): the leader checks each fetch's lastFetchedEpoch against its
 * leader-epoch cache and answers a divergingEpoch when the follower's tail is not in its log;
 * the follower truncates to min(its own end offset for that epoch, the leader's) and fetches
 * again. OFFSET_OUT_OF_RANGE asks the leader for its offsets: a follower past the leader's end
 * truncates to it, one below the leader's log start restarts its log there. Epoch and
 * leadership errors back off replica.fetch.backoff.ms until the metadata restarts the
 * partition's fetch; a failed connection backs off every partition and is re-opened.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  makeFetchRequestReplicaState,
  type FetchRequestFetchTopic,
  type FetchResponsePartitionData,
} from '../../protocol/messages/fetch.ts';
import { ApiKey, type ApiRequest, type ApiResponse } from '../../protocol/messages/index.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
} from '../../protocol/messages/list-offsets.ts';
import { toSafeNumber, ZERO_UUID } from '../../protocol/primitives.ts';
import { BATCH_LENGTH, LOG_OVERHEAD } from '../../protocol/records/batch.ts';
import { KafkaConnection, type ClientSecurity } from '../client/connection.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import { FINAL_EPOCH, INVALID_SESSION_ID } from './fetch-session.ts';
import type { Partition } from './partition.ts';
import { schedule, type Clock } from '../runtime/clock.ts';
import type { Network } from '../runtime/network.ts';

export type ReplicaApiKey = ApiKey.Fetch | ApiKey.ListOffsets;

/** One connection to a leader broker (Kafka's LeaderEndPoint over a NetworkClient). */
export interface ReplicaTransport {
  /** The highest version of `apiKey` both sides support. */
  version(apiKey: ReplicaApiKey): number;
  send<K extends ReplicaApiKey>(apiKey: K, request: ApiRequest<K>, version: number): Promise<ApiResponse<K>>;
  readonly closed: boolean;
  close(): void;
}

/** Opens a connection to a leader's inter-broker listener. */
export type ReplicaConnector = (leaderId: number) => Promise<ReplicaTransport>;

/** The replica.fetch.* settings of a broker. */
export interface ReplicaFetchSettings {
  /** replica.fetch.wait.max.ms */
  readonly maxWaitMs: number;
  /** replica.fetch.min.bytes */
  readonly minBytes: number;
  /** replica.fetch.max.bytes: per partition */
  readonly maxBytes: number;
  /** replica.fetch.response.max.bytes */
  readonly responseMaxBytes: number;
  /** replica.fetch.backoff.ms */
  readonly backoffMs: number;
}

export function replicaFetchSettingsOf(config: BrokerConfig): ReplicaFetchSettings {
  return {
    maxWaitMs: config.getInt('replica.fetch.wait.max.ms'),
    minBytes: config.getInt('replica.fetch.min.bytes'),
    maxBytes: config.getInt('replica.fetch.max.bytes'),
    responseMaxBytes: config.getInt('replica.fetch.response.max.bytes'),
    backoffMs: config.getInt('replica.fetch.backoff.ms'),
  };
}

/**
 * Kafka's replica.socket.timeout.ms default: a fetch request waits up to
 * replica.fetch.wait.max.ms on the leader, so its timeout must be well above that.
 */
export const REPLICA_SOCKET_TIMEOUT_MS = 30_000;

/** Connections over the Kafka protocol to the endpoint the metadata gives each leader. */
export function kafkaReplicaConnector(options: {
  readonly brokerId: number;
  readonly replicaEndpoint: (brokerId: number) => { host: string; port: number } | undefined;
  readonly requestTimeoutMs?: number;
  readonly network?: Network;
  /** The inter-broker listener's TLS and SASL settings. */
  readonly security?: ClientSecurity;
  readonly clock?: Clock;
}): ReplicaConnector {
  const timeoutMs = options.requestTimeoutMs ?? REPLICA_SOCKET_TIMEOUT_MS;
  return async (leaderId) => {
    const endpoint = options.replicaEndpoint(leaderId);
    if (endpoint === undefined) throw new Error(`broker ${leaderId} has no inter-broker endpoint in the metadata`);
    const conn = await KafkaConnection.connect(endpoint.host, endpoint.port, {
      clientId: `broker-${options.brokerId}-fetcher-${leaderId}`,
      connectTimeoutMs: timeoutMs,
      requestTimeoutMs: timeoutMs,
      network: options.network,
      clock: options.clock,
      ...options.security,
    });
    return {
      version: (apiKey) => conn.version(apiKey),
      send: (apiKey, request, version) => conn.send(apiKey, request, version),
      get closed() {
        return conn.closed;
      },
      close: () => conn.close(),
    };
  };
}

export interface ReplicaFetcherManagerOptions {
  readonly brokerId: number;
  readonly brokerEpoch: () => bigint;
  readonly connect: ReplicaConnector;
  readonly settings: ReplicaFetchSettings;
  readonly clock: Clock;
  readonly onError?: (err: unknown, what: string) => void;
}

/** A partition a fetcher replicates, in the leader epoch it was added for. */
interface PartitionFetchState {
  readonly partition: Partition;
  readonly topicId: string;
  readonly currentLeaderEpoch: number;
  /** Not fetched before this time (after an error). */
  delayedUntilMs: number;
}

/** What one partition of a Fetch asked for: the response is applied only if nothing moved since. */
interface SentPartition {
  readonly state: PartitionFetchState;
  readonly fetchOffset: number;
}

export class ReplicaFetcherManager {
  private readonly fetchers = new Map<number, ReplicaFetcher>();
  private closed = false;

  constructor(private readonly options: ReplicaFetcherManagerOptions) {}

  /**
   * Starts fetching each partition from its current leader in its current leader epoch (the
   * ReplicaManager removed any previous fetch of it first).
   */
  addFetcherForPartitions(partitions: readonly Partition[]): void {
    if (this.closed) return;
    for (const partition of partitions) {
      const leaderId = partition.leaderId;
      if (leaderId < 0 || leaderId === this.options.brokerId) continue;
      for (const [id, other] of this.fetchers) if (id !== leaderId) other.forget(partition.key);
      let fetcher = this.fetchers.get(leaderId);
      if (fetcher === undefined) {
        fetcher = new ReplicaFetcher(leaderId, this.options);
        this.fetchers.set(leaderId, fetcher);
        fetcher.start();
      }
      fetcher.add({ partition, topicId: partition.topicId, currentLeaderEpoch: partition.leaderEpoch, delayedUntilMs: 0 });
    }
  }

  /**
   * Stops fetching the partitions; resolves once no response is being applied to them.
   * Fetchers left without partitions stop (Kafka's shutdownIdleFetcherThreads).
   */
  async removeFetcherForPartitions(keys: readonly string[]): Promise<void> {
    const touched = [...this.fetchers.values()].filter((f) => f.forgetAll(keys));
    await Promise.all(touched.map((f) => f.idle()));
    const idle: ReplicaFetcher[] = [];
    for (const fetcher of touched) {
      if (fetcher.size === 0 && this.fetchers.get(fetcher.leaderId) === fetcher) {
        this.fetchers.delete(fetcher.leaderId);
        idle.push(fetcher);
      }
    }
    await Promise.all(idle.map((f) => f.shutdown()));
  }

  /** The leader a partition is fetched from, undefined when it is not fetched. */
  fetchingFrom(key: string): number | undefined {
    for (const [leaderId, fetcher] of this.fetchers) if (fetcher.has(key)) return leaderId;
    return undefined;
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    const all = [...this.fetchers.values()];
    this.fetchers.clear();
    await Promise.all(all.map((f) => f.shutdown()));
  }
}

class ReplicaFetcher {
  /** Fetch order: a partition that got data moves to the end, so none starves under response.max.bytes. */
  private readonly partitions = new Map<string, PartitionFetchState>();
  private transport: ReplicaTransport | null = null;
  private running: Promise<void> = Promise.resolve();
  /** The response being applied (removal waits for it). */
  private processing: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  private stopped = false;
  /** The leader is unreachable: one report per outage, not one per retry. */
  private unreachable = false;

  constructor(
    readonly leaderId: number,
    private readonly options: ReplicaFetcherManagerOptions,
  ) {}

  get size(): number {
    return this.partitions.size;
  }

  has(key: string): boolean {
    return this.partitions.has(key);
  }

  start(): void {
    this.running = this.run();
  }

  add(state: PartitionFetchState): void {
    this.partitions.set(state.partition.key, state);
    this.wake();
  }

  forget(key: string): boolean {
    return this.partitions.delete(key);
  }

  forgetAll(keys: readonly string[]): boolean {
    let any = false;
    for (const key of keys) any = this.partitions.delete(key) || any;
    return any;
  }

  /** Resolves once the response being applied, if any, is done. */
  idle(): Promise<void> {
    return this.processing.catch(() => {});
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    this.wake();
    this.transport?.close();
    await this.running;
    await this.idle();
  }

  private wake(): void {
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.doWork();
      } catch (err) {
        this.options.onError?.(err, `fetching from broker ${this.leaderId}`);
        this.delay([...this.partitions.values()]);
      }
    }
    this.transport?.close();
  }

  /** One round of AbstractFetcherThread.maybeFetch: build, send, apply. */
  private async doWork(): Promise<void> {
    const nowMs = this.options.clock.now();
    const fetchable = [...this.partitions.values()].filter((s) => s.delayedUntilMs <= nowMs);
    if (fetchable.length === 0) {
      const next = Math.min(...[...this.partitions.values()].map((s) => s.delayedUntilMs));
      await this.waitForWork(Number.isFinite(next) ? next : undefined);
      return;
    }
    let transport: ReplicaTransport;
    try {
      transport = await this.connection();
    } catch (err) {
      if (this.stopped) return;
      this.reportUnreachable(err, `connecting to broker ${this.leaderId} to fetch`);
      this.delay(fetchable);
      return;
    }
    const version = fetchVersion(transport, fetchable);
    const sent = fetchable.map((state) => ({ state, fetchOffset: state.partition.logEndOffset }));
    let response: ApiResponse<ApiKey.Fetch>;
    try {
      response = await transport.send(ApiKey.Fetch, this.buildFetch(sent, version), version);
    } catch (err) {
      if (this.stopped) return;
      this.reportUnreachable(err, `fetching from broker ${this.leaderId}`);
      this.dropConnection();
      this.delay(fetchable);
      return;
    }
    this.unreachable = false;
    if (this.stopped) return;
    if (response.errorCode !== Errors.NONE.code) {
      this.delay(fetchable);
      return;
    }
    this.processing = this.processFetchResponse(transport, sent, response, version);
    await this.processing;
  }

  private async connection(): Promise<ReplicaTransport> {
    if (this.transport !== null && !this.transport.closed) return this.transport;
    this.transport = null;
    const transport = await this.options.connect(this.leaderId);
    if (this.stopped) {
      transport.close();
      throw new Error('fetcher stopped');
    }
    this.transport = transport;
    return transport;
  }

  private reportUnreachable(err: unknown, what: string): void {
    if (!this.unreachable) this.options.onError?.(err, `${what} (retried every replica.fetch.backoff.ms)`);
    this.unreachable = true;
  }

  private dropConnection(): void {
    this.transport?.close();
    this.transport = null;
  }

  private buildFetch(sent: readonly SentPartition[], version: number): ApiRequest<ApiKey.Fetch> {
    const { settings, brokerId } = this.options;
    const usesTopicIds = version >= 13;
    const topics = new Map<string, FetchRequestFetchTopic>();
    for (const { state, fetchOffset } of sent) {
      const { partition } = state;
      const topicKey = usesTopicIds ? state.topicId : partition.topic;
      let topic = topics.get(topicKey);
      if (topic === undefined) {
        topic = makeFetchRequestFetchTopic({
          topic: usesTopicIds ? '' : partition.topic,
          topicId: usesTopicIds ? state.topicId : ZERO_UUID,
        });
        topics.set(topicKey, topic);
      }
      const lastFetchedEpoch = partition.log.latestEpoch();
      topic.partitions.push(
        makeFetchRequestFetchPartition({
          partition: partition.partition,
          currentLeaderEpoch: version >= 9 ? state.currentLeaderEpoch : -1,
          fetchOffset: BigInt(fetchOffset),
          lastFetchedEpoch: version >= 12 && lastFetchedEpoch >= 0 ? lastFetchedEpoch : -1,
          logStartOffset: version >= 5 ? BigInt(partition.logStartOffset) : -1n,
          partitionMaxBytes: settings.maxBytes,
        }),
      );
    }
    return makeFetchRequest({
      replicaId: version >= 15 ? -1 : brokerId,
      replicaState:
        version >= 15
          ? makeFetchRequestReplicaState({ replicaId: brokerId, replicaEpoch: this.options.brokerEpoch() })
          : makeFetchRequestReplicaState(),
      maxWaitMs: settings.maxWaitMs,
      minBytes: settings.minBytes,
      maxBytes: settings.responseMaxBytes,
      isolationLevel: 0,
      // No incremental session: every fetch names all its partitions.
      sessionId: INVALID_SESSION_ID,
      sessionEpoch: FINAL_EPOCH,
      topics: [...topics.values()],
    });
  }

  private async processFetchResponse(
    transport: ReplicaTransport,
    sent: readonly SentPartition[],
    response: ApiResponse<ApiKey.Fetch>,
    version: number,
  ): Promise<void> {
    const usesTopicIds = version >= 13;
    const byKey = new Map<string, SentPartition>();
    for (const s of sent) byKey.set(responseKey(usesTopicIds ? s.state.topicId : s.state.partition.topic, s.state.partition.partition), s);
    const answered = new Set<SentPartition>();
    for (const topic of response.responses) {
      for (const data of topic.partitions) {
        const s = byKey.get(responseKey(usesTopicIds ? topic.topicId : topic.topic, data.partitionIndex));
        if (s === undefined) continue;
        answered.add(s);
        // Removed, or re-added for another leader epoch, while the fetch was out.
        if (this.partitions.get(s.state.partition.key) !== s.state) continue;
        try {
          await this.processPartition(transport, s, data);
        } catch (err) {
          this.options.onError?.(err, `replicating ${s.state.partition.key} from broker ${this.leaderId}`);
          this.delay([s.state]);
        }
      }
    }
    // A partition the leader left out of its answer waits, as after an error.
    this.delay(sent.filter((s) => !answered.has(s)).map((s) => s.state));
  }

  private async processPartition(transport: ReplicaTransport, sent: SentPartition, data: FetchResponsePartitionData): Promise<void> {
    const { state } = sent;
    const { partition } = state;
    switch (data.errorCode) {
      case Errors.NONE.code: {
        if (data.divergingEpoch.epoch >= 0 || data.divergingEpoch.endOffset >= 0n) {
          await truncateOnDivergence(partition, data.divergingEpoch.epoch, toSafeNumber(data.divergingEpoch.endOffset));
          return;
        }
        // The fetcher is the log's only writer while following; anything else is a bug elsewhere.
        if (partition.logEndOffset !== sent.fetchOffset) {
          throw new Error(`offset mismatch for ${partition.key}: fetched at ${sent.fetchOffset}, log end is ${partition.logEndOffset}`);
        }
        const records = wholeBatches(data.records);
        if (records.length > 0) await partition.appendRecordsToFollower(records);
        partition.updateFollowerHighWatermark(toSafeNumber(data.highWatermark));
        await partition.maybeIncrementLogStartOffset(toSafeNumber(data.logStartOffset));
        if (records.length > 0 && this.partitions.get(partition.key) === state) {
          this.partitions.delete(partition.key);
          this.partitions.set(partition.key, state);
        }
        return;
      }
      case Errors.OFFSET_OUT_OF_RANGE.code:
        await this.handleOutOfRange(transport, state);
        return;
      default:
        // FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, unknown topics:
        // the metadata moves on (and restarts this fetch); until then, back off.
        this.delay([state]);
    }
  }

  /**
   * Kafka's fetchOffsetAndTruncate. A follower past the leader's end (an unclean election)
   * truncates to it; one below the leader's log start restarts its log there; otherwise the
   * follower is in range again and fetches on.
   */
  private async handleOutOfRange(transport: ReplicaTransport, state: PartitionFetchState): Promise<void> {
    const { partition } = state;
    const leaderEndOffset = await this.listOffset(transport, state, -1n);
    if (this.partitions.get(partition.key) !== state) return;
    if (leaderEndOffset < partition.logEndOffset) {
      await partition.truncateTo(leaderEndOffset);
      return;
    }
    const leaderStartOffset = await this.listOffset(transport, state, -2n);
    if (this.partitions.get(partition.key) !== state) return;
    if (leaderStartOffset > partition.logEndOffset) await partition.truncateFullyAndStartAt(leaderStartOffset);
    // In range by now (the leader's log moved meanwhile): fetch again, but not in a tight loop.
    else this.delay([state]);
  }

  /** ListOffsets as a replica: the leader answers its log end (-1) or log start (-2). */
  private async listOffset(transport: ReplicaTransport, state: PartitionFetchState, timestamp: bigint): Promise<number> {
    const version = transport.version(ApiKey.ListOffsets);
    if (version < 1) throw new Error(`broker ${this.leaderId} only speaks ListOffsets v0`);
    const response = await transport.send(
      ApiKey.ListOffsets,
      makeListOffsetsRequest({
        replicaId: this.options.brokerId,
        topics: [
          makeListOffsetsRequestListOffsetsTopic({
            name: state.partition.topic,
            partitions: [
              makeListOffsetsRequestListOffsetsPartition({
                partitionIndex: state.partition.partition,
                currentLeaderEpoch: version >= 4 ? state.currentLeaderEpoch : -1,
                timestamp,
              }),
            ],
          }),
        ],
      }),
      version,
    );
    const answer = response.topics[0]?.partitions[0];
    if (answer === undefined) throw new Error(`broker ${this.leaderId} did not answer ListOffsets for ${state.partition.key}`);
    if (answer.errorCode !== Errors.NONE.code) {
      throw new Error(`ListOffsets of ${state.partition.key} at broker ${this.leaderId} failed with error ${answer.errorCode}`);
    }
    return toSafeNumber(answer.offset);
  }

  private delay(states: readonly PartitionFetchState[]): void {
    const until = this.options.clock.now() + this.options.settings.backoffMs;
    for (const state of states) state.delayedUntilMs = until;
  }

  private waitForWork(untilMs: number | undefined): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      let cancel: () => void = () => {};
      const done = (): void => {
        cancel();
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      this.wakeUp = done;
      if (untilMs !== undefined) cancel = schedule(this.options.clock, Math.max(0, untilMs - this.options.clock.now()), done);
    });
  }
}

/**
 * Kafka's getOffsetTruncationState for a divergingEpoch answer. The leader names the largest
 * epoch it has at or below the follower's last fetched one, and where that epoch ends in its
 * log. A follower that has the same epoch truncates to where it ends in both logs; one whose
 * largest epoch at or below it is smaller truncates to that epoch's end in its own log (the
 * next fetch checks again from there); a follower without epochs, or an answer without an
 * epoch, takes the leader's end offset.
 */
export async function truncateOnDivergence(partition: Partition, leaderEpoch: number, leaderEndOffset: number): Promise<void> {
  const replicaEndOffset = partition.logEndOffset;
  let offset: number;
  if (leaderEndOffset < 0) {
    offset = partition.highWatermark;
  } else if (leaderEpoch < 0) {
    offset = Math.min(leaderEndOffset, replicaEndOffset);
  } else {
    const local = partition.log.endOffsetForEpoch(leaderEpoch);
    if (local.leaderEpoch < 0 || local.endOffset < 0) offset = Math.min(leaderEndOffset, replicaEndOffset);
    else if (local.leaderEpoch !== leaderEpoch) offset = Math.min(local.endOffset, replicaEndOffset);
    else offset = Math.min(local.endOffset, leaderEndOffset, replicaEndOffset);
  }
  await partition.truncateTo(offset);
}

/** The highest Fetch version both sides speak; without a topic id for every partition, v12 at most. */
function fetchVersion(transport: ReplicaTransport, fetchable: readonly PartitionFetchState[]): number {
  const version = transport.version(ApiKey.Fetch);
  return fetchable.some((s) => s.topicId === ZERO_UUID) ? Math.min(version, 12) : version;
}

function responseKey(topic: string, partition: number): string {
  return `${topic}:${partition}`;
}

/** The whole batches at the front of `records`: a response cut mid-batch keeps the rest for the next fetch. */
function wholeBatches(records: Buffer | null): Buffer {
  if (records === null) return Buffer.alloc(0);
  let end = 0;
  while (end + LOG_OVERHEAD <= records.length) {
    const size = LOG_OVERHEAD + records.readInt32BE(end + BATCH_LENGTH);
    if (size <= LOG_OVERHEAD || end + size > records.length) break;
    end += size;
  }
  return end === records.length ? records : records.subarray(0, end);
}
