/**
 * The ReplicaManager owns the partitions this broker hosts: it opens their logs when it
 * becomes a replica, makes it leader or follower as the metadata says (stopping and starting
 * the follower fetchers), appends client batches as leader (validated, group-committed per
 * partition), serves fetches from the logs (recording each follower's position, answering
 * divergence from the leader-epoch cache), keeps the high watermark with the ISR manager,
 * and parks acks=all produces and waiting fetches in purgatories woken by appends.
 */
import type { TopicTraffic } from '../observability/metrics.ts';
import { Errors, errorByCode } from '../../protocol/errors.ts';
import { type BrokerConfig, DEFAULT_BROKER_CONFIG } from '../config/broker-config.ts';
import { INTERNAL_TOPICS } from '../../protocol/internal-topics.ts';
import { type RecordBatch, batchesIn } from '../../protocol/records/batch.ts';
import { convertLegacyToV2 } from '../../protocol/records/legacy.ts';
import { buildEndTxnMarker } from '../../protocol/records/control.ts';
import {
  CorruptRecordError,
  LogClosedError,
  OffsetOutOfRangeError,
  ProducerStateError,
  RecordTooLargeError,
  StorageError,
  StorageIOError,
} from '../../storage/errors.ts';
import type { LogDirFailureChannel } from '../../storage/log-dir-failure.ts';
import type { ReadBufferSource } from '../../storage/read-buffers.ts';
import { DelayedFetch, DelayedProduce, type FetchPartitionWatch, type ProducePartitionStatus } from './delayed.ts';
import type { TopicConfigLookup } from '../config/topic-config.ts';
import { type ReplicaConnector, ReplicaFetcherManager, type ReplicaFetchSettings } from './fetcher.ts';
import { type AlterPartitionRequest, type AlterPartitionResponse, IsrManager } from './isr-manager.ts';
import type { LeaderAppendInfo, LogProvider, ProducerDescription, ReplicaLog, TransactionVerification, VerificationGuard } from './log.ts';
import { type BrokerRegistrationView, Partition, partitionKey, type PartitionState, type ReplicationSettings } from './partition.ts';
import { DelayedOperationPurgatory } from './purgatory.ts';
import { schedule, systemClock, yieldToEventLoop, type Clock } from '../runtime/clock.ts';
import { RecordValidationError, validateProducedRecords, type ValidatedRecords } from './validation.ts';

export const ISOLATION_READ_UNCOMMITTED = 0;
export const ISOLATION_READ_COMMITTED = 1;
/** ListOffsets special timestamps (ListOffsetsRequest). */
export const LATEST_TIMESTAMP = -1;
export const EARLIEST_TIMESTAMP = -2;
export const MAX_TIMESTAMP = -3;
export const EARLIEST_LOCAL_TIMESTAMP = -4;
export const LATEST_TIERED_TIMESTAMP = -5;
/** replica_id of consumers (FetchRequest.CONSUMER_REPLICA_ID). */
export const CONSUMER_REPLICA_ID = -1;

export interface ReplicaManagerOptions {
  readonly brokerId: number;
  readonly logs: LogProvider;
  readonly clock?: Clock;
  /** Magic 0/1 message set -> v2 batches (Produce v0-v2); protocol's convertLegacyToV2 by default. */
  readonly convertLegacy?: (messageSet: Buffer) => Promise<Buffer>;
  /** Whether the cluster metadata knows this partition (decides UNKNOWN_TOPIC_OR_PARTITION vs NOT_LEADER_OR_FOLLOWER). */
  readonly partitionExists?: (topic: string, partition: number) => boolean;
  readonly onAppendError?: (partition: string, err: unknown) => void;
  /** Told of the records appended as leader and the bytes consumers fetched (metrics). */
  readonly traffic?: TopicTraffic;
  /**
   * KIP-890 part 1 (transaction.partition.verification.enable): asks the producer's transaction
   * coordinator whether a partition is in its open transaction, before the transaction's first
   * batch is appended there; resolves with the coordinator's error for the partition
   * (TRANSACTION_ABORTABLE when it is not in the transaction). Absent: no verification.
   */
  readonly verifyTransaction?: TransactionVerifier;
  /** How much may wait for one partition's log (replica.append.queue.max.*; their defaults when absent). */
  readonly appendQueueLimits?: AppendQueueLimits;
  /** replica.lag.time.max.ms (its default when absent). */
  readonly replicaLagTimeMaxMs?: number;
  /** This broker's epoch from its registration: -1 when absent (and until registered). */
  readonly brokerEpoch?: () => bigint;
  /**
   * Brokers as the metadata registers them: who may join an ISR (unfenced, not shutting
   * down, fetching with its current broker epoch) and which follower fetches are stale.
   * Absent: every replica that fetches is eligible.
   */
  readonly brokerRegistration?: (brokerId: number) => BrokerRegistrationView | undefined;
  /** The leader and leader epoch the metadata gives a partition this broker does not host (KIP-951). */
  readonly metadataLeader?: (topic: string, partition: number) => { leaderId: number; leaderEpoch: number } | undefined;
  /** ISR changes go to the controller through it; absent, the ISR changes only with the metadata. */
  readonly alterPartition?: (request: AlterPartitionRequest) => Promise<AlterPartitionResponse>;
  /** How followers reach their leaders and fetch; absent, this broker never fetches as follower. */
  readonly replicaFetcher?: { readonly connect: ReplicaConnector; readonly settings: ReplicaFetchSettings };
  /** Where failures of the fetchers and the ISR manager go (they retry on their own). */
  readonly onReplicationError?: (err: unknown, what: string) => void;
  /**
   * The log-dir failure channel the logs report to: a dir it marks offline takes this
   * broker's partitions in it offline. Absent, log dirs never go offline.
   */
  readonly logDirFailures?: Pick<LogDirFailureChannel, 'onOfflineLogDir' | 'isOffline'>;
}

/**
 * The bound on the produce requests queued for one partition's log while its previous write
 * is in flight (they go out together as the next write). A request that does not fit waits
 * for room, in arrival order, and is answered REQUEST_TIMED_OUT when its timeout passes
 * first; one request alone always fits an empty queue, however large. Kafka has no such
 * queue (its request handler threads wait on the log lock, bounded by queued.max.requests);
 * here it also bounds the size of one group-committed write.
 */
export interface AppendQueueLimits {
  /** replica.append.queue.max.bytes */
  readonly maxBytes: number;
  /** replica.append.queue.max.requests */
  readonly maxRequests: number;
}

/** The broker definitions' defaults of replica.append.queue.max.bytes and .max.requests. */
export function appendQueueLimitsOf(config: BrokerConfig): AppendQueueLimits {
  return {
    maxBytes: config.getLong('replica.append.queue.max.bytes'),
    maxRequests: config.getInt('replica.append.queue.max.requests'),
  };
}

export interface ProducePartitionInput {
  readonly topic: string;
  readonly partition: number;
  readonly records: Buffer | null;
}

export interface ProducePartitionResult {
  readonly topic: string;
  readonly partition: number;
  errorCode: number;
  errorMessage: string | null;
  baseOffset: number;
  logAppendTimeMs: number;
  logStartOffset: number;
  recordErrors: readonly { batchIndex: number; message: string | null }[];
  /** Who leads the partition (KIP-951 current_leader), -1 when unknown. */
  leaderId: number;
  leaderEpoch: number;
}

/** Coordinator answers to a verification that another attempt may not get. */
const TRANSIENT_VERIFICATION_ERRORS: ReadonlySet<number> = new Set([
  Errors.CONCURRENT_TRANSACTIONS.code,
  Errors.NETWORK_EXCEPTION.code,
  Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
  Errors.COORDINATOR_NOT_AVAILABLE.code,
  Errors.NOT_COORDINATOR.code,
]);

/** See ReplicaManagerOptions.verifyTransaction. */
export type TransactionVerifier = (
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
  topic: string,
  partition: number,
) => Promise<number>;

export interface ProduceParams {
  /** The producer's transactional id (Produce v3+), null without one. */
  readonly transactionalId?: string | null;
  readonly acks: number;
  readonly timeoutMs: number;
  readonly produceVersion: number;
  readonly entries: readonly ProducePartitionInput[];
  /** Only Kafka's admin client (client id `__admin_client`) may write internal topics. */
  readonly internalTopicsAllowed?: boolean;
}

export interface FetchPartitionInput {
  readonly topic: string;
  readonly partition: number;
  readonly fetchOffset: number;
  readonly partitionMaxBytes: number;
  /** -1 when the client did not send one (Fetch < v9). */
  readonly currentLeaderEpoch: number;
  /** The epoch of the last batch a follower holds (Fetch v12+), -1 or absent when not sent. */
  readonly lastFetchedEpoch?: number;
  /** A follower's log start offset (Fetch v5+), -1 or absent when not sent. */
  readonly logStartOffset?: number;
}

export interface FetchParams {
  /** -1 for consumers; a broker id for followers. */
  readonly replicaId: number;
  /** A follower's broker epoch (Fetch v15+ replica state), -1 or absent when not sent. */
  readonly replicaEpoch?: bigint;
  readonly maxWaitMs: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly isolationLevel: number;
  readonly partitions: readonly FetchPartitionInput[];
  /** Where the records read land; the caller releases them once the response is written. */
  readonly readBuffers?: ReadBufferSource;
}

export interface FetchPartitionResult {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
  readonly highWatermark: number;
  readonly lastStableOffset: number;
  readonly logStartOffset: number;
  /** Whole batches; empty (not null) when there is nothing to return. */
  readonly records: Buffer;
  /** null for read_uncommitted (as Kafka), the aborted ranges for read_committed. */
  readonly abortedTransactions: { producerId: bigint; firstOffset: number }[] | null;
  /** The leader's epoch when known, for the response's current_leader. */
  readonly leaderEpoch: number;
  readonly leaderId: number;
  /** For a follower whose log diverged (lastFetchedEpoch, KIP-595): where the leader's epoch ends; null otherwise. */
  readonly divergingEpoch: { readonly epoch: number; readonly endOffset: number } | null;
}

/** A transaction's end, as WriteTxnMarkers carries it to one partition. */
export interface TxnMarker {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly commit: boolean;
  readonly coordinatorEpoch: number;
}

export interface ListOffsetsResult {
  errorCode: number;
  timestampMs: number;
  offset: number;
  leaderEpoch: number;
}

export interface DeleteRecordsResult {
  errorCode: number;
  lowWatermark: number;
}

export interface LogDirDescription {
  readonly logDir: string;
  /** The dir failed (KAFKA_STORAGE_ERROR): it lists no partitions. */
  readonly offline: boolean;
  readonly topics: {
    name: string;
    partitions: { partitionIndex: number; partitionSizeBytes: number; offsetLag: number; isFutureKey: boolean }[];
  }[];
}

interface PendingAppend {
  readonly validated: ValidatedRecords;
  readonly resolve: (outcome: AppendOutcome) => void;
}

type AppendOutcome =
  | { ok: true; baseOffset: number; nextOffset: number; logAppendTimeMs: number }
  | { ok: false; errorCode: number; message: string };

interface AppendQueue {
  /** What the next write takes: within the limits (or one request alone). */
  pending: PendingAppend[];
  pendingBytes: number;
  /** Requests that did not fit, oldest first; each cancels its timeout once admitted. */
  waiting: { append: PendingAppend; cancelTimeout: () => void }[];
  scheduled: boolean;
  chain: Promise<void>;
}

const EMPTY: Buffer = Buffer.alloc(0);

/** The bytes read, and whether an error or a diverging follower log answers the fetch at once. */
function summarize(results: FetchPartitionResult[]): { results: FetchPartitionResult[]; bytes: number; respondNow: boolean } {
  let bytes = 0;
  let respondNow = false;
  for (const r of results) {
    bytes += r.records.length;
    if (r.errorCode !== Errors.NONE.code || r.divergingEpoch !== null) respondNow = true;
  }
  return { results, bytes, respondNow };
}

export class ReplicaManager {
  readonly brokerId: number;
  private readonly partitions = new Map<string, Partition>();
  private readonly topicIds = new Map<string, string>();
  /** Hosted partitions per topic name: config changes and deletions touch one topic's only. */
  private readonly partitionsByTopic = new Map<string, Set<Partition>>();
  /** The log dir of each hosted partition's log, as the log provider names it. */
  private readonly partitionLogDirs = new Map<string, string>();
  /**
   * Kafka's HostedPartition.Offline: partitions whose log dir failed (or whose log could not
   * be created). Answered KAFKA_STORAGE_ERROR and left alone by metadata until a restart.
   */
  private readonly offlinePartitions = new Map<string, { readonly topic: string; readonly partition: number }>();
  private readonly appendQueues = new Map<string, AppendQueue>();
  private readonly appendQueueLimits: AppendQueueLimits;
  private readonly clock: Clock;
  readonly producePurgatory: DelayedOperationPurgatory<DelayedProduce>;
  readonly fetchPurgatory: DelayedOperationPurgatory<DelayedFetch>;
  private readonly replication: ReplicationSettings;
  /** Absent without `alterPartition`. */
  readonly isrManager: IsrManager | undefined;
  /** Absent without `replicaFetcher`. */
  readonly replicaFetcherManager: ReplicaFetcherManager | undefined;

  constructor(private readonly options: ReplicaManagerOptions) {
    this.brokerId = options.brokerId;
    this.clock = options.clock ?? systemClock;
    this.appendQueueLimits = options.appendQueueLimits ?? appendQueueLimitsOf(DEFAULT_BROKER_CONFIG);
    this.producePurgatory = new DelayedOperationPurgatory('Produce', this.clock);
    this.fetchPurgatory = new DelayedOperationPurgatory('Fetch', this.clock);
    const brokerEpoch = options.brokerEpoch ?? (() => -1n);
    const replicaLagTimeMaxMs = options.replicaLagTimeMaxMs ?? DEFAULT_BROKER_CONFIG.getLong('replica.lag.time.max.ms');
    this.replication = { replicaLagTimeMaxMs, localBrokerEpoch: brokerEpoch, brokerRegistration: options.brokerRegistration };
    this.isrManager =
      options.alterPartition === undefined
        ? undefined
        : new IsrManager(
            {
              partitions: () => this.partitions.values(),
              onHighWatermarkIncremented: (partition) => {
                if (this.isCurrent(partition)) this.wake(partition.key);
              },
            },
            {
              brokerId: options.brokerId,
              brokerEpoch,
              alterPartition: options.alterPartition,
              replicaLagTimeMaxMs,
              clock: this.clock,
              onError: options.onReplicationError,
            },
          );
    this.replicaFetcherManager =
      options.replicaFetcher === undefined
        ? undefined
        : new ReplicaFetcherManager({
            brokerId: options.brokerId,
            brokerEpoch,
            connect: options.replicaFetcher.connect,
            settings: options.replicaFetcher.settings,
            clock: this.clock,
            onError: options.onReplicationError,
          });
    options.logDirFailures?.onOfflineLogDir((logDir) => this.handleLogDirFailure(logDir));
  }

  /** Starts the ISR expiration task (Kafka's ReplicaManager.startup). */
  startup(): void {
    this.isrManager?.start();
  }

  /** Stops the follower fetchers (waiting for a response being applied) and the ISR manager. */
  async shutdownReplication(): Promise<void> {
    await this.replicaFetcherManager?.shutdown();
    this.isrManager?.shutdown();
  }

  // ---- partition lifecycle (driven by metadata deltas) ----

  getPartition(topic: string, partition: number): Partition | undefined {
    return this.partitions.get(partitionKey(topic, partition));
  }

  allPartitions(): IterableIterator<Partition> {
    return this.partitions.values();
  }

  topicNameOf(topicId: string): string | undefined {
    return this.topicIds.get(topicId);
  }

  /**
   * Makes this broker leader or follower of a partition with the given state (the metadata
   * publisher's become-leader / become-follower), opening or creating its log. Metadata older
   * than what the partition has (a lower partition epoch) is ignored. Waiting operations of
   * the partition are re-checked: a broker that no longer leads answers them
   * NOT_LEADER_OR_FOLLOWER. An offline partition (its log dir failed) stays offline: undefined.
   */
  async applyPartitionState(state: PartitionState, config: TopicConfigLookup): Promise<Partition | undefined> {
    const key = partitionKey(state.topic, state.partition);
    if (this.offlinePartitions.has(key)) return undefined;
    let partition = this.partitions.get(key);
    if (partition === undefined) {
      let log: ReplicaLog;
      try {
        log = await this.options.logs.getOrCreateLog(state.topic, state.partition, state.topicId, config);
      } catch (err) {
        // Kafka's makeLeaders/makeFollowers on a KafkaStorageException: the partition is offline here.
        if (err instanceof StorageIOError) this.offlinePartitions.set(key, { topic: state.topic, partition: state.partition });
        throw err;
      }
      if (this.offlinePartitions.has(key)) return undefined;
      // A concurrent delta may have created it while the log opened.
      partition = this.partitions.get(key);
      if (partition === undefined) {
        const logDir = this.options.logs.logDirOf(state.topic, state.partition);
        if (this.options.logDirFailures?.isOffline(logDir) === true) {
          // The dir failed while the log opened.
          this.offlinePartitions.set(key, { topic: state.topic, partition: state.partition });
          return undefined;
        }
        partition = new Partition(state.topic, state.partition, state.topicId, this.brokerId, log, config, this.replication);
        this.partitions.set(key, partition);
        this.partitionLogDirs.set(key, logDir);
        let ofTopic = this.partitionsByTopic.get(state.topic);
        if (ofTopic === undefined) {
          ofTopic = new Set();
          this.partitionsByTopic.set(state.topic, ofTopic);
        }
        ofTopic.add(partition);
      }
    }
    if (partition.isStale(state)) return partition;
    if (state.leaderId === this.brokerId) await this.makeLeader(partition, state);
    else await this.makeFollower(partition, state);
    this.topicIds.set(state.topicId, state.topic);
    this.wake(key);
    return partition;
  }

  /**
   * Kafka's makeLeaders: the fetcher stops first (a response being applied lands before), so
   * the log end the new leader epoch starts at is final; the epoch is recorded in the
   * leader-epoch cache before any follower asks about it.
   */
  private async makeLeader(partition: Partition, state: PartitionState): Promise<void> {
    await this.replicaFetcherManager?.removeFetcherForPartitions([partition.key]);
    const nowMs = this.clock.now();
    const isNewLeaderEpoch = partition.makeLeader(state, nowMs);
    if (isNewLeaderEpoch) await partition.log.assignEpochStartOffset(partition.leaderEpoch, partition.leaderEpochStartOffset);
    partition.maybeIncrementHighWatermark(this.clock.now());
  }

  /**
   * Kafka's makeFollowers: produce is refused from now on; on a new leader epoch the fetcher
   * restarts once the appends this broker wrote as leader reached the log, fetching from the
   * log end (divergence from the new leader is found by the fetch itself).
   */
  private async makeFollower(partition: Partition, state: PartitionState): Promise<void> {
    if (!partition.makeFollower(state)) return;
    // Produces and fetches parked on this partition are answered now, not after the fetcher restarts.
    this.wake(partition.key);
    await this.replicaFetcherManager?.removeFetcherForPartitions([partition.key]);
    await this.appendQueues.get(partition.key)?.chain;
    if (this.isCurrent(partition) && !partition.isLeader && partition.leaderEpoch === state.leaderEpoch) {
      this.replicaFetcherManager?.addFetcherForPartitions([partition]);
    }
  }

  updateTopicConfig(topic: string, config: TopicConfigLookup): void {
    for (const partition of this.partitionsByTopic.get(topic) ?? []) partition.updateConfig(config);
  }

  /** Stops hosting a partition; deletes its log when the topic was deleted. */
  async removePartition(topic: string, partition: number, deleteLog: boolean): Promise<void> {
    const key = partitionKey(topic, partition);
    // An offline partition's log stays on its failed dir: a restart removes it as a stray log.
    this.offlinePartitions.delete(key);
    const existing = this.partitions.get(key);
    if (existing === undefined) return;
    this.partitions.delete(key);
    this.partitionLogDirs.delete(key);
    await this.replicaFetcherManager?.removeFetcherForPartitions([key]);
    const ofTopic = this.partitionsByTopic.get(topic);
    ofTopic?.delete(existing);
    if (ofTopic?.size === 0) this.partitionsByTopic.delete(topic);
    const queue = this.appendQueues.get(key);
    if (queue !== undefined) {
      for (const { append, cancelTimeout } of queue.waiting.splice(0)) {
        cancelTimeout();
        append.resolve({ ok: false, errorCode: Errors.NOT_LEADER_OR_FOLLOWER.code, message: `Not the leader of ${key}` });
      }
      await queue.chain;
    }
    this.appendQueues.delete(key);
    if (![...(this.partitionsByTopic.get(topic) ?? [])].some((p) => p.topicId === existing.topicId)) this.topicIds.delete(existing.topicId);
    this.producePurgatory.completeAll(key);
    this.fetchPurgatory.completeAll(key);
    if (deleteLog) await this.options.logs.deleteLog(topic, partition);
  }

  private isCurrent = (partition: Partition): boolean => this.partitions.get(partition.key) === partition;

  /**
   * Kafka's ReplicaManager.handleLogDirFailure: every partition whose log is in the failed dir
   * goes offline on this broker. Its follower fetcher stops, requests waiting on it are
   * answered KAFKA_STORAGE_ERROR (an acks=all produce parked before the failure is never
   * acknowledged), and later requests get KAFKA_STORAGE_ERROR until a restart. Leadership
   * moves once the controller hears of the dir in this broker's heartbeat.
   */
  private handleLogDirFailure(logDir: string): void {
    const failed = [...this.partitions.values()].filter((p) => this.partitionLogDirs.get(p.key) === logDir);
    if (failed.length === 0) return;
    for (const partition of failed) this.markPartitionOffline(partition);
    this.replicaFetcherManager?.removeFetcherForPartitions(failed.map((p) => p.key)).catch((err: unknown) => {
      this.options.onReplicationError?.(err, `stopping the fetchers of the partitions in the failed log dir ${logDir}`);
    });
  }

  private markPartitionOffline(partition: Partition): void {
    const key = partition.key;
    this.partitions.delete(key);
    this.partitionLogDirs.delete(key);
    const ofTopic = this.partitionsByTopic.get(partition.topic);
    ofTopic?.delete(partition);
    if (ofTopic?.size === 0) this.partitionsByTopic.delete(partition.topic);
    this.offlinePartitions.set(key, { topic: partition.topic, partition: partition.partition });
    partition.markOffline();
    // Appends already admitted find the partition offline when their write comes up.
    for (const { append, cancelTimeout } of this.appendQueues.get(key)?.waiting.splice(0) ?? []) {
      cancelTimeout();
      append.resolve(offlineOutcome(key));
    }
    this.producePurgatory.completeAll(key);
    this.fetchPurgatory.completeAll(key);
  }

  private wake(key: string): void {
    this.producePurgatory.checkAndComplete(key);
    this.fetchPurgatory.checkAndComplete(key);
  }

  /**
   * The partition and NONE when this broker leads it; otherwise the error to answer with. As
   * Kafka's getLocalLog, a client's leader epoch is checked before the leadership: an older
   * one is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (this broker's metadata is
   * behind), whatever this broker's role.
   */
  private leaderError(topic: string, partitionIndex: number, currentLeaderEpoch = -1): { partition: Partition | null; errorCode: number } {
    const key = partitionKey(topic, partitionIndex);
    // Kafka's getPartitionOrError: an offline partition answers so before any epoch check.
    if (this.offlinePartitions.has(key)) return { partition: null, errorCode: Errors.KAFKA_STORAGE_ERROR.code };
    const partition = this.partitions.get(key);
    if (partition === undefined) {
      const known = this.options.partitionExists?.(topic, partitionIndex) ?? false;
      return { partition: null, errorCode: known ? Errors.NOT_LEADER_OR_FOLLOWER.code : Errors.UNKNOWN_TOPIC_OR_PARTITION.code };
    }
    const epochError = ReplicaManager.epochError(partition, currentLeaderEpoch);
    if (epochError !== Errors.NONE.code) return { partition, errorCode: epochError };
    if (!partition.isLeader) return { partition, errorCode: Errors.NOT_LEADER_OR_FOLLOWER.code };
    return { partition, errorCode: Errors.NONE.code };
  }

  /** KIP-951: who leads a partition, from this broker's state or else the metadata. */
  private currentLeader(topic: string, partitionIndex: number, partition: Partition | null): { leaderId: number; leaderEpoch: number } {
    if (partition !== null) return { leaderId: partition.leaderId, leaderEpoch: partition.leaderEpoch };
    return this.options.metadataLeader?.(topic, partitionIndex) ?? { leaderId: -1, leaderEpoch: -1 };
  }

  private static epochError(partition: Partition, currentLeaderEpoch: number): number {
    if (currentLeaderEpoch < 0 || currentLeaderEpoch === partition.leaderEpoch) return Errors.NONE.code;
    return currentLeaderEpoch < partition.leaderEpoch ? Errors.FENCED_LEADER_EPOCH.code : Errors.UNKNOWN_LEADER_EPOCH.code;
  }

  // ---- produce ----

  /**
   * Appends each partition's records as leader and answers per partition. With acks=-1 the
   * promise settles once the high watermark passed every appended batch, or after
   * `timeoutMs` with REQUEST_TIMED_OUT for those that did not get there.
   */
  async appendRecords(params: ProduceParams): Promise<ProducePartitionResult[]> {
    const requests = params.entries.map((entry) => {
      const result: ProducePartitionResult = {
        topic: entry.topic,
        partition: entry.partition,
        errorCode: Errors.NONE.code,
        errorMessage: null,
        baseOffset: -1,
        logAppendTimeMs: -1,
        logStartOffset: -1,
        recordErrors: [],
        leaderId: -1,
        leaderEpoch: -1,
      };
      return { entry, result };
    });
    const results = requests.map((r) => r.result);
    if (params.acks !== 0 && params.acks !== 1 && params.acks !== -1) {
      for (const result of results) result.errorCode = Errors.INVALID_REQUIRED_ACKS.code;
      return results;
    }
    const nowMs = this.clock.now();
    const appended = await Promise.all(
      requests.map(async ({ entry, result }) => ({ result, outcome: await this.appendToPartition(entry, result, params, nowMs) })),
    );
    if (params.acks !== -1) return this.withCurrentLeaders(results);

    // Each appended partition waits for its high watermark; its status answers its result.
    const waiting: { result: ProducePartitionResult; status: ProducePartitionStatus }[] = [];
    for (const { result, outcome } of appended) {
      if (outcome === undefined || !outcome.waitForHighWatermark) continue;
      const status = { partition: outcome.partition, requiredOffset: outcome.requiredOffset, errorCode: Errors.NONE.code, pending: true };
      waiting.push({ result, status });
    }
    if (waiting.length === 0) return this.withCurrentLeaders(results);
    const statuses = waiting.map((w) => w.status);
    await new Promise<void>((resolve) => {
      const op = new DelayedProduce(params.timeoutMs, statuses, this.isCurrent, resolve);
      this.producePurgatory.tryCompleteElseWatch(op, [...new Set(statuses.map((s) => s.partition.key))]);
    });
    for (const { result, status } of waiting) {
      if (status.errorCode !== Errors.NONE.code) {
        result.errorCode = status.errorCode;
        result.errorMessage = null;
      }
    }
    return this.withCurrentLeaders(results);
  }

  /**
   * Waits, as an acks=all produce does, for everything before `offset` of a partition this
   * broker leads to be committed: NONE once the high watermark reaches it with the ISR at
   * min.insync.replicas or more, NOT_LEADER_OR_FOLLOWER (or KAFKA_STORAGE_ERROR) once it no
   * longer leads, REQUEST_TIMED_OUT after `timeoutMs`. What a new leader holds past its high
   * watermark may be a previous leader's uncommitted tail, which another election can still
   * take away.
   */
  async awaitCommitted(topic: string, partitionIndex: number, offset: number, timeoutMs: number): Promise<number> {
    const { partition, errorCode } = this.leaderError(topic, partitionIndex);
    if (partition === null || errorCode !== Errors.NONE.code) return errorCode;
    const status: ProducePartitionStatus = { partition, requiredOffset: offset, errorCode: Errors.NONE.code, pending: true };
    await new Promise<void>((resolve) => {
      this.producePurgatory.tryCompleteElseWatch(new DelayedProduce(timeoutMs, [status], this.isCurrent, resolve), [partition.key]);
    });
    return status.errorCode;
  }

  /**
   * Writes a transaction's COMMIT or ABORT marker to a partition this broker leads (the
   * partition side of WriteTxnMarkers). The producer state refuses a marker of an older
   * producer epoch (INVALID_PRODUCER_EPOCH) or from an older coordinator
   * (TRANSACTION_COORDINATOR_FENCED). Answers once the marker is committed.
   */
  async writeTxnMarker(topic: string, partitionIndex: number, marker: TxnMarker, timeoutMs: number): Promise<number> {
    const batch = await buildEndTxnMarker({ ...marker, timestamp: this.clock.now() });
    return (await this.appendAsCoordinator(topic, partitionIndex, batch, timeoutMs)).errorCode;
  }

  /**
   * Kafka's appendRecords with AppendOrigin.COORDINATOR and acks=all: a coordinator appends
   * batches it built itself (its records, a transaction marker) to a partition this broker
   * leads, internal topics included, without the checks a client's batches get (a producer's
   * epoch is still checked); the answer comes once they are committed, with the offset of the
   * first, or with the error an acks=all produce would get.
   */
  async appendAsCoordinator(
    topic: string,
    partitionIndex: number,
    batches: Buffer,
    timeoutMs: number,
    verification?: TransactionVerification,
  ): Promise<{ errorCode: number; errorMessage: string | null; baseOffset: number }> {
    const { partition, errorCode } = this.leaderError(topic, partitionIndex);
    if (partition === null || errorCode !== Errors.NONE.code) return { errorCode, errorMessage: null, baseOffset: -1 };
    if (partition.isr.length < partition.effectiveMinIsr) {
      return { baseOffset: -1, errorCode: Errors.NOT_ENOUGH_REPLICAS.code, errorMessage: notEnoughReplicasMessage(partition) };
    }
    let batchCount = 0;
    let offsetCount = 0;
    let first: RecordBatch | undefined;
    for (const batch of batchesIn(batches)) {
      first ??= batch;
      batchCount++;
      offsetCount += batch.lastOffsetDelta + 1;
    }
    if (first === undefined) return { errorCode: Errors.INVALID_RECORD.code, errorMessage: 'no batch to append', baseOffset: -1 };
    const outcome = await this.enqueueAppend(
      partition,
      {
        batches,
        batchCount,
        offsetCount,
        producerId: first.producerId,
        producerEpoch: first.producerEpoch,
        firstSequence: first.baseSequence,
        lastSequence: first.lastSequence,
        isTransactional: first.isTransactional,
        origin: 'coordinator',
        verification,
      },
      timeoutMs,
    );
    if (!outcome.ok) return { errorCode: outcome.errorCode, errorMessage: outcome.message, baseOffset: -1 };
    return {
      errorCode: await this.awaitCommitted(topic, partitionIndex, outcome.nextOffset, timeoutMs),
      errorMessage: null,
      baseOffset: outcome.baseOffset,
    };
  }

  /** KIP-951: a NOT_LEADER_OR_FOLLOWER answer names who leads now, however the append found out. */
  private withCurrentLeaders(results: ProducePartitionResult[]): ProducePartitionResult[] {
    for (const result of results) {
      if (result.errorCode !== Errors.NOT_LEADER_OR_FOLLOWER.code) continue;
      const leader = this.currentLeader(result.topic, result.partition, this.getPartition(result.topic, result.partition) ?? null);
      result.leaderId = leader.leaderId;
      result.leaderEpoch = leader.leaderEpoch;
    }
    return results;
  }

  private async appendToPartition(
    entry: ProducePartitionInput,
    result: ProducePartitionResult,
    params: ProduceParams,
    nowMs: number,
  ): Promise<{ partition: Partition; requiredOffset: number; waitForHighWatermark: boolean } | undefined> {
    if (INTERNAL_TOPICS.has(entry.topic) && params.internalTopicsAllowed !== true) {
      result.errorCode = Errors.INVALID_TOPIC_EXCEPTION.code;
      result.errorMessage = `Cannot append to internal topic ${entry.topic}`;
      return undefined;
    }
    const { partition, errorCode } = this.leaderError(entry.topic, entry.partition);
    if (partition === null || errorCode !== Errors.NONE.code) {
      result.errorCode = errorCode;
      return undefined;
    }
    let validated: ValidatedRecords;
    try {
      validated = await validateProducedRecords(entry.records, {
        settings: partition.settings,
        nowMs,
        produceVersion: params.produceVersion,
        convertLegacy: this.options.convertLegacy ?? ((messageSet) => convertLegacyToV2(messageSet)),
        verifyCrc: partition.settings.logAppendTime || partition.settings.compacted,
        topicPartition: partition.key,
      });
    } catch (err) {
      if (!(err instanceof RecordValidationError)) throw err;
      result.errorCode = err.code;
      result.errorMessage = err.message;
      result.recordErrors = err.recordErrors;
      result.logStartOffset = partition.logStartOffset;
      return undefined;
    }
    if (params.acks === -1 && partition.isr.length < partition.effectiveMinIsr) {
      result.errorCode = Errors.NOT_ENOUGH_REPLICAS.code;
      result.errorMessage = notEnoughReplicasMessage(partition);
      result.logStartOffset = partition.logStartOffset;
      return undefined;
    }
    let verification: TransactionVerification | undefined;
    if (validated.isTransactional && params.transactionalId != null && this.options.verifyTransaction !== undefined) {
      const verified = await this.verifyTransactionalAppend(partition, params.transactionalId, validated, params.produceVersion);
      if ('errorCode' in verified) {
        result.errorCode = verified.errorCode;
        result.errorMessage = verified.message;
        result.logStartOffset = partition.logStartOffset;
        return undefined;
      }
      verification = verified;
    }
    const outcome = await this.enqueueAppend(
      partition,
      verification === undefined ? validated : { ...validated, verification },
      params.timeoutMs,
    );
    result.logStartOffset = partition.logStartOffset;
    if (!outcome.ok) {
      result.errorCode = outcome.errorCode;
      result.errorMessage = outcome.message;
      return undefined;
    }
    result.baseOffset = outcome.baseOffset;
    result.logAppendTimeMs = outcome.logAppendTimeMs;
    return { partition, requiredOffset: outcome.nextOffset, waitForHighWatermark: true };
  }

  /**
   * KIP-890 part 1 (Kafka's maybeStartTransactionVerificationForPartition): the first batch of
   * a producer's transaction on a partition is appended only once its coordinator confirmed the
   * partition is in the transaction, and with the guard the log handed out before asking (a
   * marker written meanwhile voids it). Resolves with the verification to append with, or the
   * coordinator's error (`fromCoordinator`) or the partition's.
   */
  private async verifyTransaction(
    partition: Partition,
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
  ): Promise<{ verification: TransactionVerification } | { errorCode: number; message: string; fromCoordinator: boolean }> {
    let guard: VerificationGuard | null;
    try {
      guard = await partition.log.startTransactionVerification(producerId, producerEpoch);
    } catch (err) {
      const { errorCode, message } = partition.offline ? offlineError(partition.key) : storageErrorToKafka(err);
      return { errorCode, message: message ?? `verifying the transaction on ${partition.key} failed`, fromCoordinator: false };
    }
    if (guard === null) return { verification: { guard: null } };
    const verify = this.options.verifyTransaction!;
    const code = await verify(transactionalId, producerId, producerEpoch, partition.topic, partition.partition);
    if (code === Errors.NONE.code) return { verification: { guard } };
    // A transient failure keeps the guard for a concurrent verification of the same transaction;
    // a refusal would be the same for every one of them.
    if (!TRANSIENT_VERIFICATION_ERRORS.has(code)) partition.log.abandonTransactionVerification(guard);
    return {
      errorCode: code,
      message: `Unable to verify the partition has been added to the transaction: ${errorByCode(code).name}`,
      fromCoordinator: true,
    };
  }

  /**
   * A coordinator's transactional append (TxnOffsetCommit) verified as a client's produce is:
   * resolves with the verification to append with (undefined when verification is off), or
   * the error: the transaction coordinator's, or the partition's.
   */
  async verifyCoordinatorAppend(
    topic: string,
    partitionIndex: number,
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
  ): Promise<{ verification: TransactionVerification | undefined } | { errorCode: number; message: string; fromCoordinator: boolean }> {
    if (this.options.verifyTransaction === undefined) return { verification: undefined };
    const { partition, errorCode } = this.leaderError(topic, partitionIndex);
    if (partition === null || errorCode !== Errors.NONE.code)
      return { errorCode, message: `not the leader of ${topic}-${partitionIndex}`, fromCoordinator: false };
    return this.verifyTransaction(partition, transactionalId, producerId, producerEpoch);
  }

  /**
   * A produce's verification, with the coordinator's errors turned into the ones producers
   * know how to handle, as Kafka's AddPartitionsToTxnManager and ReplicaManager map them.
   */
  private async verifyTransactionalAppend(
    partition: Partition,
    transactionalId: string,
    validated: ValidatedRecords,
    produceVersion: number,
  ): Promise<TransactionVerification | { errorCode: number; message: string }> {
    const outcome = await this.verifyTransaction(partition, transactionalId, validated.producerId, validated.producerEpoch);
    if ('verification' in outcome) return outcome.verification;
    const { errorCode: code, message: why } = outcome;
    if (!outcome.fromCoordinator) return { errorCode: code, message: why };
    switch (code) {
      case Errors.PRODUCER_FENCED.code:
        return { errorCode: Errors.INVALID_PRODUCER_EPOCH.code, message: why };
      case Errors.TRANSACTION_ABORTABLE.code:
        // Produce v11+ knows TRANSACTION_ABORTABLE; older producers abort on INVALID_TXN_STATE.
        return produceVersion >= 11
          ? { errorCode: code, message: why }
          : { errorCode: Errors.INVALID_TXN_STATE.code, message: 'Partition was not added to the transaction' };
      case Errors.INVALID_TXN_STATE.code:
        return { errorCode: code, message: 'Partition was not added to the transaction' };
      // Retriable for the coordinator but not understood by every producer from a partition:
      // NOT_ENOUGH_REPLICAS makes them retry without a metadata refresh.
      case Errors.CONCURRENT_TRANSACTIONS.code:
      case Errors.NETWORK_EXCEPTION.code:
      case Errors.COORDINATOR_LOAD_IN_PROGRESS.code:
      case Errors.COORDINATOR_NOT_AVAILABLE.code:
      case Errors.NOT_COORDINATOR.code:
        return { errorCode: Errors.NOT_ENOUGH_REPLICAS.code, message: why };
      case Errors.UNKNOWN_PRODUCER_ID.code:
        return { errorCode: Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code, message: why };
      default:
        return { errorCode: code, message: why };
    }
  }

  private enqueueAppend(partition: Partition, validated: ValidatedRecords, timeoutMs: number): Promise<AppendOutcome> {
    let queue = this.appendQueues.get(partition.key);
    if (queue === undefined) {
      queue = { pending: [], pendingBytes: 0, waiting: [], scheduled: false, chain: Promise.resolve() };
      this.appendQueues.set(partition.key, queue);
    }
    const q = queue;
    return new Promise<AppendOutcome>((resolve) => {
      const append: PendingAppend = { validated, resolve };
      // Arrival order holds: nothing overtakes a request already waiting for room.
      if (q.waiting.length === 0 && this.hasRoom(q, validated.batches.length)) this.admit(partition, q, append);
      else this.waitForRoom(partition, q, append, timeoutMs);
    });
  }

  private hasRoom(queue: AppendQueue, bytes: number): boolean {
    const limits = this.appendQueueLimits;
    if (queue.pending.length === 0) return true;
    return queue.pending.length < limits.maxRequests && queue.pendingBytes + bytes <= limits.maxBytes;
  }

  private admit(partition: Partition, q: AppendQueue, append: PendingAppend): void {
    q.pending.push(append);
    q.pendingBytes += append.validated.batches.length;
    if (q.scheduled) return;
    q.scheduled = true;
    // Group commit: an idle partition writes at once; what arrives while its previous write
    // is still in flight goes out together as the next write. Waiting for a later event-loop
    // phase to gather more would only add latency to every acknowledgement.
    q.chain = q.chain.then(() => {
      q.scheduled = false;
      return this.flushAppends(partition, q);
    });
  }

  private waitForRoom(partition: Partition, q: AppendQueue, append: PendingAppend, timeoutMs: number): void {
    const entry = {
      append,
      cancelTimeout: schedule(this.clock, Math.max(0, timeoutMs), () => {
        const at = q.waiting.indexOf(entry);
        if (at < 0) return;
        q.waiting.splice(at, 1);
        append.resolve({
          ok: false,
          errorCode: Errors.REQUEST_TIMED_OUT.code,
          message: `The append queue of ${partition.key} stayed full for ${timeoutMs} ms`,
        });
        // The head may have been what held the next ones back.
        this.admitWaiting(partition, q);
      }),
    };
    q.waiting.push(entry);
  }

  /** Moves waiting requests into the queue, oldest first, while they fit. */
  private admitWaiting(partition: Partition, q: AppendQueue): void {
    for (let next = q.waiting[0]; next !== undefined && this.hasRoom(q, next.append.validated.batches.length); next = q.waiting[0]) {
      q.waiting.shift();
      next.cancelTimeout();
      this.admit(partition, q, next.append);
    }
  }

  /**
   * Writes what was queued for the partition. Batches without a producer id are written
   * together in one append; an idempotent batch goes alone, so the log's producer check
   * (duplicate or refusal) concerns only its own request.
   */
  private async flushAppends(partition: Partition, queue: AppendQueue): Promise<void> {
    const pending = queue.pending.splice(0);
    queue.pendingBytes = 0;
    this.admitWaiting(partition, queue);
    if (pending.length === 0) return;
    if (partition.offline) {
      for (const p of pending) p.resolve(offlineOutcome(partition.key));
      return;
    }
    if (!this.isCurrent(partition) || !partition.isLeader) {
      for (const p of pending)
        p.resolve({ ok: false, errorCode: Errors.NOT_LEADER_OR_FOLLOWER.code, message: `Not the leader of ${partition.key}` });
      return;
    }
    const nowMs = this.clock.now();
    try {
      let group: PendingAppend[] = [];
      for (const p of pending) {
        if (p.validated.producerId >= 0n) {
          if (group.length > 0) await this.appendGroup(partition, group, nowMs);
          group = [];
          await this.appendGroup(partition, [p], nowMs);
        } else {
          group.push(p);
        }
      }
      if (group.length > 0) await this.appendGroup(partition, group, nowMs);
    } catch (err) {
      // A broken invariant fails the requests not yet answered (answered ones ignore a second
      // answer) and leaves the queue usable for the next appends.
      this.options.onAppendError?.(partition.key, err);
      for (const p of pending)
        p.resolve({ ok: false, errorCode: Errors.UNKNOWN_SERVER_ERROR.code, message: `Append to ${partition.key} failed` });
    }
  }

  private async appendGroup(partition: Partition, group: readonly PendingAppend[], nowMs: number): Promise<void> {
    const log = partition.log;
    let logAppendTimeMs = -1;
    if (partition.settings.logAppendTime) {
      for (const p of group) for (const batch of batchesIn(p.validated.batches)) batch.setLogAppendTime(nowMs);
      logAppendTimeMs = nowMs;
    }
    const buffers = group.map((p) => p.validated.batches);
    const bytes = buffers.reduce((n, b) => n + b.length, 0);
    const endBefore = log.logEndOffset;
    let info: LeaderAppendInfo;
    try {
      const [only] = buffers;
      // A coordinator's batch carries a producer id, so it is appended alone.
      info = await log.appendAsLeader(
        buffers.length === 1 && only !== undefined ? only : Buffer.concat(buffers, bytes),
        partition.leaderEpoch,
        group.length === 1 ? group[0]?.validated.origin : undefined,
        group.length === 1 ? group[0]?.validated.verification : undefined,
      );
    } catch (err) {
      // One bad batch fails a shared append before anything is written: retry each request alone
      // so only the bad one is refused.
      if (group.length > 1 && err instanceof CorruptRecordError) {
        for (const p of group) await this.appendGroup(partition, [p], nowMs);
        return;
      }
      // A write the dir's failure closed the log under is a storage error too, not a lost leadership.
      const { errorCode, message } = partition.offline ? offlineError(partition.key) : storageErrorToKafka(err);
      if (errorCode === Errors.KAFKA_STORAGE_ERROR.code || errorCode === Errors.UNKNOWN_SERVER_ERROR.code) {
        this.options.onAppendError?.(partition.key, err);
      }
      for (const p of group) p.resolve({ ok: false, errorCode, message });
      return;
    }
    if (info.duplicate) {
      // Only an idempotent batch can be a duplicate, and it is appended alone.
      for (const p of group) p.resolve({ ok: true, baseOffset: info.firstOffset, nextOffset: info.lastOffset + 1, logAppendTimeMs: -1 });
      return;
    }
    if (info.firstOffset !== endBefore) {
      throw new Error(`partition ${partition.key}: append landed at ${info.firstOffset}, log end was ${endBefore}`);
    }
    let next = info.firstOffset;
    for (const p of group) {
      const baseOffset = next;
      next += p.validated.offsetCount;
      p.resolve({ ok: true, baseOffset, nextOffset: next, logAppendTimeMs });
    }
    this.options.traffic?.appended(partition.topic, next - info.firstOffset, bytes, buffers);
    partition.onLocalAppend(next, bytes, this.clock.now());
    this.wake(partition.key);
  }

  // ---- fetch ----

  /**
   * Reads each partition from its log, then, unless min.bytes is met, something failed or
   * max.wait.ms is 0, waits in the fetch purgatory until appends make min.bytes available or
   * max.wait.ms passes, and reads again.
   */
  async fetchMessages(params: FetchParams): Promise<FetchPartitionResult[]> {
    const results = await this.readWaitingForMinBytes(params);
    const traffic = this.options.traffic;
    if (traffic !== undefined && params.replicaId < 0) {
      for (const r of results) if (r.records.length > 0) traffic.fetched(r.topic, r.records.length);
    }
    return results;
  }

  private async readWaitingForMinBytes(params: FetchParams): Promise<FetchPartitionResult[]> {
    const first = await this.readFromLog(params, true);
    const canWait = params.maxWaitMs > 0 && params.partitions.length > 0 && first.bytes < params.minBytes && !first.respondNow;
    if (!canWait) return first.results;
    const fromFollower = params.replicaId >= 0;
    const watches: FetchPartitionWatch[] = [];
    for (const input of params.partitions) {
      const partition = this.getPartition(input.topic, input.partition);
      if (partition === undefined) continue;
      watches.push({
        partition,
        fetchOffset: input.fetchOffset,
        leaderEpoch: partition.leaderEpoch,
        counterAtParkBytes: fromFollower ? partition.appendedBytes : partition.visibleBytes,
      });
    }
    await new Promise<void>((resolve) => {
      const op = new DelayedFetch(params.maxWaitMs, watches, params.minBytes, first.bytes, fromFollower, this.isCurrent, resolve);
      this.fetchPurgatory.tryCompleteElseWatch(
        op,
        watches.map((w) => w.partition.key),
      );
    });
    // As Kafka's DelayedFetch: the follower's position was recorded by the first read.
    return (await this.readFromLog(params, false)).results;
  }

  /**
   * Reads every partition within the request's max bytes, with Kafka's result: as if in order,
   * each taking what the ones before it left. `respondNow`: an error or a diverging follower log
   * answers at once, without waiting for min.bytes.
   */
  private async readFromLog(
    params: FetchParams,
    updateFetchState: boolean,
  ): Promise<{ results: FetchPartitionResult[]; bytes: number; respondNow: boolean }> {
    let partitionBytes = 0;
    for (const input of params.partitions) partitionBytes += Math.max(0, input.partitionMaxBytes);
    if (params.partitions.length > 1 && partitionBytes <= params.maxBytes) {
      // The request's bound cannot cut any partition short, so the reads can overlap (each one
      // waits on the disk or the thread pool): the results are the in-order reads' unless a
      // partition answered with a first batch larger than its max bytes, which only the first
      // partition with records may do (and which shrinks what the later ones may take).
      const results = await Promise.all(
        params.partitions.map((input) => this.readPartition(params, input, Math.max(0, input.partitionMaxBytes), true, updateFetchState)),
      );
      if (results.every((r, i) => r.records.length <= Math.max(0, params.partitions[i]!.partitionMaxBytes))) return summarize(results);
    }
    const results: FetchPartitionResult[] = [];
    let remaining = params.maxBytes;
    let minOneBatch = true;
    for (const input of params.partitions) {
      const maxBytes = Math.max(0, Math.min(input.partitionMaxBytes, remaining));
      const result = await this.readPartition(params, input, maxBytes, minOneBatch, updateFetchState);
      if (result.records.length > 0) {
        minOneBatch = false;
        remaining -= result.records.length;
      }
      results.push(result);
    }
    return summarize(results);
  }

  /**
   * Kafka's Partition.fetchRecords. A follower's fetch is checked against its replica state
   * (a broker that is no replica, a stale broker epoch) and, with a lastFetchedEpoch, against
   * the leader-epoch cache: a tail the leader does not have is answered with a divergingEpoch
   * and no records. Otherwise the read records the follower's position (which may move the
   * high watermark and bring it into the ISR), measured against the log end before the read.
   */
  private async readPartition(
    params: FetchParams,
    input: FetchPartitionInput,
    maxBytes: number,
    minOneBatch: boolean,
    updateFetchState: boolean,
  ): Promise<FetchPartitionResult> {
    const { partition, errorCode } = this.leaderError(input.topic, input.partition, input.currentLeaderEpoch);
    const fail = (code: number): FetchPartitionResult => {
      const leader = this.currentLeader(input.topic, input.partition, partition);
      return {
        topic: input.topic,
        partition: input.partition,
        errorCode: code,
        highWatermark: partition?.highWatermark ?? -1,
        lastStableOffset: partition?.lastStableOffset ?? -1,
        logStartOffset: partition?.logStartOffset ?? -1,
        records: EMPTY,
        abortedTransactions: null,
        leaderEpoch: leader.leaderEpoch,
        leaderId: leader.leaderId,
        divergingEpoch: null,
      };
    };
    if (partition === null || errorCode !== Errors.NONE.code) return fail(errorCode);
    const fromFollower = params.replicaId >= 0;
    const replicaEpoch = params.replicaEpoch ?? -1n;
    if (fromFollower) {
      const followerError = partition.followerFetchError(params.replicaId, input.currentLeaderEpoch, replicaEpoch);
      if (followerError !== Errors.NONE.code) return fail(followerError);
    }

    const log = partition.log;
    const readCommitted = !fromFollower && params.isolationLevel === ISOLATION_READ_COMMITTED;
    if (readCommitted) {
      try {
        await log.loadProducerState();
      } catch (err) {
        return fail(storageErrorToKafka(err).errorCode);
      }
    }
    const initialHighWatermark = partition.highWatermark;
    const initialLastStableOffset = partition.lastStableOffset;
    const initialLogStartOffset = log.logStartOffset;
    const initialLogEndOffset = log.logEndOffset;
    const answer = (
      records: Buffer,
      divergingEpoch: FetchPartitionResult['divergingEpoch'],
      abortedTransactions: FetchPartitionResult['abortedTransactions'] = readCommitted ? [] : null,
    ): FetchPartitionResult => ({
      topic: input.topic,
      partition: input.partition,
      errorCode: Errors.NONE.code,
      highWatermark: initialHighWatermark,
      lastStableOffset: initialLastStableOffset,
      logStartOffset: initialLogStartOffset,
      records,
      abortedTransactions,
      leaderEpoch: partition.leaderEpoch,
      leaderId: partition.leaderId,
      divergingEpoch,
    });
    const lastFetchedEpoch = input.lastFetchedEpoch ?? -1;
    if (lastFetchedEpoch >= 0) {
      const epochEnd = log.endOffsetForEpoch(lastFetchedEpoch);
      if (epochEnd.endOffset < 0 || epochEnd.leaderEpoch < 0) return fail(Errors.OFFSET_OUT_OF_RANGE.code);
      if (input.fetchOffset < initialLogStartOffset) return fail(Errors.OFFSET_OUT_OF_RANGE.code);
      if (epochEnd.leaderEpoch < lastFetchedEpoch || epochEnd.endOffset < input.fetchOffset) {
        return answer(EMPTY, { epoch: epochEnd.leaderEpoch, endOffset: epochEnd.endOffset });
      }
    }
    if (input.fetchOffset < initialLogStartOffset || input.fetchOffset > initialLogEndOffset) {
      return fail(Errors.OFFSET_OUT_OF_RANGE.code);
    }
    const maxOffset = fromFollower ? initialLogEndOffset : readCommitted ? initialLastStableOffset : initialHighWatermark;
    let records: Buffer = EMPTY;
    let aborted: { producerId: bigint; firstOffset: number }[] | null = readCommitted ? [] : null;
    if (input.fetchOffset < maxOffset) {
      try {
        const read = await log.read(input.fetchOffset, maxBytes, maxOffset, minOneBatch, params.readBuffers);
        const [only] = read.chunks;
        records = read.chunks.length > 1 ? Buffer.concat(read.chunks, read.sizeInBytes) : (only ?? EMPTY);
        // Kafka's UnifiedLog.addAbortedTransactions: the ranges overlapping what was read.
        if (readCommitted && records.length > 0) {
          const found = await log.abortedTransactions(input.fetchOffset, nextOffsetAfter(records));
          aborted = found.map((t) => ({ producerId: t.producerId, firstOffset: t.firstOffset }));
        }
      } catch (err) {
        return fail(storageErrorToKafka(err).errorCode);
      }
    }
    // Only an offset the log holds says what the follower has (checked above, as Kafka
    // checks it before updateFollowerFetchState): one past the log end must not move the HW.
    if (fromFollower && updateFetchState && this.isCurrent(partition) && partition.isLeader) {
      const nowMs = this.clock.now();
      const followerStartOffset = input.logStartOffset ?? -1;
      const moved = partition.updateFollowerFetchState(
        params.replicaId,
        input.fetchOffset,
        followerStartOffset,
        nowMs,
        initialLogEndOffset,
        replicaEpoch,
      );
      this.isrManager?.maybeExpandIsr(partition, params.replicaId);
      if (moved) this.wake(partition.key);
    }
    return answer(records, null, aborted);
  }

  // ---- offsets ----

  async listOffset(
    topic: string,
    partitionIndex: number,
    timestampMs: number,
    isolationLevel: number,
    currentLeaderEpoch: number,
    replicaId: number,
  ): Promise<ListOffsetsResult> {
    const none = (errorCode: number): ListOffsetsResult => ({ errorCode, timestampMs: -1, offset: -1, leaderEpoch: -1 });
    const { partition, errorCode } = this.leaderError(topic, partitionIndex, currentLeaderEpoch);
    if (partition === null || errorCode !== Errors.NONE.code) return none(errorCode);
    const log = partition.log;
    const fromConsumer = replicaId < 0;
    const readCommitted = fromConsumer && isolationLevel === ISOLATION_READ_COMMITTED;
    if (readCommitted) {
      try {
        await log.loadProducerState();
      } catch (err) {
        return none(storageErrorToKafka(err).errorCode);
      }
    }
    const lastFetchableOffset = !fromConsumer ? log.logEndOffset : readCommitted ? partition.lastStableOffset : partition.highWatermark;
    // Kafka's Partition.fetchOffsetForTimestamp: a new leader's high watermark starts from its
    // checkpoint and can be below the one the previous leader answered. Everything a previous
    // leader exposed is below the start of this leader epoch, so until the high watermark
    // reaches that start a client asking for the latest offset, or by a timestamp nothing below
    // the last fetchable offset matches, gets OFFSET_NOT_AVAILABLE (retriable) instead of an
    // answer lower than one it may already have had.
    const notYet =
      fromConsumer && partition.leaderEpochStartOffset > partition.highWatermark ? Errors.OFFSET_NOT_AVAILABLE.code : Errors.NONE.code;
    try {
      switch (timestampMs) {
        case LATEST_TIMESTAMP:
          if (notYet !== Errors.NONE.code) return none(notYet);
          return { errorCode: Errors.NONE.code, timestampMs: -1, offset: lastFetchableOffset, leaderEpoch: partition.leaderEpoch };
        case EARLIEST_TIMESTAMP:
        case EARLIEST_LOCAL_TIMESTAMP: {
          const offset = log.logStartOffset;
          return { errorCode: Errors.NONE.code, timestampMs: -1, offset, leaderEpoch: await log.epochForOffset(offset) };
        }
        case LATEST_TIERED_TIMESTAMP:
          // No tiered storage: Kafka answers "no such offset".
          return { errorCode: Errors.NONE.code, timestampMs: -1, offset: -1, leaderEpoch: -1 };
        case MAX_TIMESTAMP: {
          const found = await log.maxTimestampOffset();
          if (found === null || (fromConsumer && found.offset >= lastFetchableOffset)) return none(notYet);
          return { errorCode: Errors.NONE.code, timestampMs: found.timestampMs, offset: found.offset, leaderEpoch: found.leaderEpoch };
        }
        default: {
          if (timestampMs < 0) return none(Errors.INVALID_REQUEST.code);
          const found = await log.offsetForTimestamp(timestampMs);
          if (found === null || found.offset >= lastFetchableOffset) return none(notYet);
          return { errorCode: Errors.NONE.code, timestampMs: found.timestampMs, offset: found.offset, leaderEpoch: found.leaderEpoch };
        }
      }
    } catch (err) {
      return none(storageErrorToKafka(err).errorCode);
    }
  }

  /**
   * Moves the log start offset up to `offset` (-1: the high watermark). Offsets past the
   * high watermark are OFFSET_OUT_OF_RANGE; compacted-only topics refuse (POLICY_VIOLATION).
   */
  async deleteRecords(topic: string, partitionIndex: number, offset: number): Promise<DeleteRecordsResult> {
    const { partition, errorCode } = this.leaderError(topic, partitionIndex);
    if (partition === null || errorCode !== Errors.NONE.code) return { errorCode, lowWatermark: -1 };
    const target = offset === -1 ? partition.highWatermark : offset;
    if (target < 0 || target > partition.highWatermark) {
      return { errorCode: Errors.OFFSET_OUT_OF_RANGE.code, lowWatermark: -1 };
    }
    if (!partition.settings.deletePolicy) {
      return { errorCode: Errors.POLICY_VIOLATION.code, lowWatermark: -1 };
    }
    try {
      if (target > partition.logStartOffset) await partition.log.deleteRecordsBefore(target);
    } catch (err) {
      return { errorCode: storageErrorToKafka(err).errorCode, lowWatermark: -1 };
    }
    partition.assertInvariants();
    this.fetchPurgatory.checkAndComplete(partition.key);
    return { errorCode: Errors.NONE.code, lowWatermark: partition.logStartOffset };
  }

  /** OffsetForLeaderEpoch: the end offset of `leaderEpoch` (or the largest epoch below it). */
  offsetForLeaderEpoch(
    topic: string,
    partitionIndex: number,
    leaderEpoch: number,
    currentLeaderEpoch: number,
  ): {
    errorCode: number;
    leaderEpoch: number;
    endOffset: number;
  } {
    const { partition, errorCode } = this.leaderError(topic, partitionIndex, currentLeaderEpoch);
    if (partition === null || errorCode !== Errors.NONE.code) return { errorCode, leaderEpoch: -1, endOffset: -1 };
    const found = partition.log.endOffsetForEpoch(leaderEpoch);
    return { errorCode: Errors.NONE.code, leaderEpoch: found.leaderEpoch, endOffset: found.endOffset };
  }

  async describeProducers(
    topic: string,
    partitionIndex: number,
  ): Promise<{ errorCode: number; producers: readonly ProducerDescription[] }> {
    const { partition, errorCode } = this.leaderError(topic, partitionIndex);
    if (partition === null || errorCode !== Errors.NONE.code) return { errorCode, producers: [] };
    return { errorCode: Errors.NONE.code, producers: await partition.log.activeProducers() };
  }

  /** Every hosted partition grouped by log directory (DescribeLogDirs). */
  describeLogDirs(filter: ((topic: string, partition: number) => boolean) | null): LogDirDescription[] {
    const byDir = new Map<
      string,
      Map<string, { partitionIndex: number; partitionSizeBytes: number; offsetLag: number; isFutureKey: boolean }[]>
    >();
    for (const dir of this.options.logs.logDirs()) byDir.set(dir, new Map());
    for (const partition of this.partitions.values()) {
      if (filter !== null && !filter(partition.topic, partition.partition)) continue;
      const dir = this.options.logs.logDirOf(partition.topic, partition.partition);
      let topics = byDir.get(dir);
      if (topics === undefined) {
        topics = new Map();
        byDir.set(dir, topics);
      }
      let list = topics.get(partition.topic);
      if (list === undefined) {
        list = [];
        topics.set(partition.topic, list);
      }
      // Kafka's offset lag is for future (moving) replicas only: 0 for the current log.
      list.push({ partitionIndex: partition.partition, partitionSizeBytes: partition.log.sizeInBytes, offsetLag: 0, isFutureKey: false });
    }
    return [...byDir].map(([logDir, topics]) => ({
      logDir,
      offline: this.options.logDirFailures?.isOffline(logDir) === true,
      topics: [...topics].map(([name, partitions]) => ({
        name,
        partitions: partitions.sort((a, b) => a.partitionIndex - b.partitionIndex),
      })),
    }));
  }

  /** Completes every waiting operation (shutdown): fetches answer with what they have. */
  shutdown(): void {
    for (const key of this.partitions.keys()) {
      this.producePurgatory.completeAll(key);
      this.fetchPurgatory.completeAll(key);
    }
  }

  /** Resolves once every queued append, waiting ones included, has reached the log. */
  async flushPendingAppends(): Promise<void> {
    await yieldToEventLoop(this.clock);
    for (;;) {
      const busy = [...this.appendQueues.values()].filter((q) => q.scheduled || q.pending.length > 0 || q.waiting.length > 0);
      if (busy.length === 0) return;
      await Promise.all(busy.map((q) => q.chain));
    }
  }
}

function offlineError(key: string): { errorCode: number; message: string } {
  return { errorCode: Errors.KAFKA_STORAGE_ERROR.code, message: `The log dir of ${key} is offline` };
}

function offlineOutcome(key: string): AppendOutcome {
  return { ok: false, ...offlineError(key) };
}

/** The offset after the last of the whole batches in `records` (not empty). */
function nextOffsetAfter(records: Buffer): number {
  let next = -1;
  for (const batch of batchesIn(records)) next = batch.nextOffset;
  return next;
}

/** Maps a storage failure to the partition error Kafka would answer. */
function storageErrorToKafka(err: unknown): { errorCode: number; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof ProducerStateError) return { errorCode: Errors[err.code].code, message };
  if (err instanceof RecordTooLargeError) return { errorCode: Errors.MESSAGE_TOO_LARGE.code, message };
  if (err instanceof CorruptRecordError) return { errorCode: Errors.CORRUPT_MESSAGE.code, message };
  if (err instanceof OffsetOutOfRangeError) return { errorCode: Errors.OFFSET_OUT_OF_RANGE.code, message };
  if (err instanceof LogClosedError) return { errorCode: Errors.NOT_LEADER_OR_FOLLOWER.code, message };
  if (err instanceof StorageError) return { errorCode: Errors.KAFKA_STORAGE_ERROR.code, message };
  return { errorCode: Errors.UNKNOWN_SERVER_ERROR.code, message };
}

/** Kafka's NotEnoughReplicasException message for an acks=all append below the effective min ISR. */
function notEnoughReplicasMessage(partition: Partition): string {
  return `The size of the current ISR ${partition.isr.length} is insufficient to satisfy the min.isr requirement of ${partition.effectiveMinIsr} for partition ${partition.key}`;
}
