// The transaction coordinator: Kafka's TransactionCoordinator (core/src/main/scala/kafka/
// coordinator/transaction) for transaction version 1, rule for rule. Each transactional id's
// state lives as TransactionLog records in the `__transaction_state` partition its id hashes
// to, served by that partition's leader: InitProducerId hands out (and bumps, fencing older
// instances) the producer id and epoch, AddPartitionsToTxn and AddOffsetsToTxn open the
// transaction on its partitions, EndTxn prepares the commit or abort, after which the
// coordinator writes the markers to every partition and completes the transaction. Expired
// transactions are aborted; idle transactional ids expire.

import { Errors, KafkaError } from '../../protocol/errors.ts';
import type { Clock } from '../runtime/clock.ts';
import { runGuarded, schedulePeriodic, type FailureSink } from '../runtime/guard.ts';
import { coordinatorPartitionFor } from './partitioning.ts';
import {
  NO_PRODUCER_EPOCH,
  TRANSACTION_STATE_NAMES,
  TransactionMetadata,
  TransactionState,
  fencedEpoch,
  type TopicPartitionRef,
  type TxnLogRecord,
  type TxnSnapshot,
} from './transaction-metadata.ts';

export interface TransactionCoordinatorConfig {
  /** transaction.state.log.num.partitions */
  readonly transactionStatePartitions: number;
  /** transaction.max.timeout.ms: the longest transaction.timeout.ms a producer may ask for. */
  readonly maxTimeoutMs: number;
  /** transactional.id.expiration.ms: an id idle this long (and not in a transaction) is forgotten. */
  readonly idExpirationMs: number;
  /** transaction.abort.timed.out.transaction.cleanup.interval.ms */
  readonly abortTimedOutIntervalMs: number;
  /** transaction.remove.expired.transaction.cleanup.interval.ms */
  readonly removeExpiredIntervalMs: number;
}

/** Where the coordinator's records go: the leader of a `__transaction_state` partition. */
export interface TransactionLog {
  append(partition: number, records: TxnLogRecord[]): Promise<void>;
  /** Whether this broker still leads the partition at the leader epoch it loaded (CoordinatorRuntime.holdsLeadership). */
  holdsLeadership(partition: number): boolean;
}

export interface ProducerIdSource {
  generateProducerId(): Promise<bigint>;
}

/** A transaction's end, as WriteTxnMarkers carries it to its partitions. */
export interface TxnMarkerSpec {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly commit: boolean;
  readonly coordinatorEpoch: number;
}

/**
 * Writes a transaction's markers to the leaders of its partitions (Kafka's
 * TransactionMarkerChannelManager). Resolves 'written' once every partition has its marker
 * (or no longer exists), 'fenced' when a partition refused the marker as coming from an older
 * producer or coordinator epoch, 'abandoned' once `isCurrent` says this coordinator no
 * longer owns the transaction.
 */
export interface TxnMarkerWriter {
  write(
    marker: TxnMarkerSpec,
    partitions: readonly TopicPartitionRef[],
    isCurrent: () => boolean,
  ): Promise<'written' | 'fenced' | 'abandoned'>;
}

export interface InitProducerIdResult {
  readonly errorCode: number;
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

export interface TransactionDescription {
  readonly transactionalId: string;
  readonly errorCode: number;
  readonly state: string;
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly timeoutMs: number;
  readonly startTimestampMs: number;
  readonly partitions: readonly TopicPartitionRef[];
}

export interface TransactionListing {
  readonly transactionalId: string;
  readonly producerId: bigint;
  readonly state: string;
}

const NONE = Errors.NONE.code;
const COMPLETE_RETRY_BACKOFF_MS = 100;

export class TransactionCoordinator {
  private readonly txns = new Map<string, TransactionMetadata>();
  private readonly loadingPartitions = new Set<number>();
  /** The coordinator epoch (the partition's leader epoch) a loading partition loads for. */
  private readonly loadingEpochs = new Map<number, number>();
  /** The coordinator epoch of each partition served. */
  private readonly loadedEpochs = new Map<number, number>();
  private readonly stopTimers: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly config: TransactionCoordinatorConfig,
    private readonly clock: Clock,
    private readonly log: TransactionLog,
    private readonly producerIds: ProducerIdSource,
    private readonly markers: TxnMarkerWriter,
    private readonly onError: FailureSink,
  ) {}

  partitionFor(transactionalId: string): number {
    return coordinatorPartitionFor(transactionalId, this.config.transactionStatePartitions);
  }

  start(): void {
    this.stopTimers.push(
      schedulePeriodic(this.clock, this.config.abortTimedOutIntervalMs, this.onError, 'aborting timed-out transactions', () =>
        this.abortTimedOutTransactions(),
      ),
      schedulePeriodic(this.clock, this.config.removeExpiredIntervalMs, this.onError, 'expiring transactional ids', () =>
        this.expireTransactionalIds(),
      ),
    );
  }

  shutdown(): void {
    this.stopped = true;
    for (const stop of this.stopTimers.splice(0)) stop();
  }

  // ---- partition ownership (the runtime's shard) ------------------------------------------

  beginLoading(partition: number, leaderEpoch: number): void {
    this.loadingPartitions.add(partition);
    this.loadingEpochs.set(partition, leaderEpoch);
  }

  replayLoading(partition: number, records: readonly TxnLogRecord[], onSkipped: (index: number, err: unknown) => void): number {
    let skipped = 0;
    records.forEach((record, index) => {
      if (this.partitionFor(record.transactionalId) !== partition) {
        skipped++;
        onSkipped(index, new Error(`transactional id ${record.transactionalId} does not belong to partition ${partition}`));
        return;
      }
      if (record.value === null) {
        this.txns.delete(record.transactionalId);
        return;
      }
      const current = this.txns.get(record.transactionalId);
      if (current === undefined) this.txns.set(record.transactionalId, new TransactionMetadata(record.transactionalId, record.value));
      else current.apply(record.value);
    });
    return skipped;
  }

  /**
   * Serves the partition's transactional ids. A transaction a previous coordinator prepared
   * but did not complete has its markers written again, as Kafka's loader does.
   */
  completeLoading(partition: number): void {
    const coordinatorEpoch = this.loadingEpochs.get(partition) ?? -1;
    this.loadingPartitions.delete(partition);
    this.loadingEpochs.delete(partition);
    this.loadedEpochs.set(partition, coordinatorEpoch);
    for (const md of this.txns.values()) {
      if (this.partitionFor(md.transactionalId) !== partition) continue;
      if (md.state === TransactionState.PrepareCommit || md.state === TransactionState.PrepareAbort) {
        this.completeInBackground(md, coordinatorEpoch, md.state === TransactionState.PrepareCommit);
      }
    }
  }

  abandonLoading(partition: number): void {
    this.forgetTxnsOf(partition);
    this.loadedEpochs.delete(partition);
    this.loadingPartitions.add(partition);
  }

  unload(partition: number): void {
    this.forgetTxnsOf(partition);
    this.loadedEpochs.delete(partition);
    this.loadingPartitions.delete(partition);
    this.loadingEpochs.delete(partition);
  }

  private forgetTxnsOf(partition: number): void {
    for (const id of [...this.txns.keys()]) if (this.partitionFor(id) === partition) this.txns.delete(id);
  }

  /** The coordinator epoch the id is served at, or the error to answer for it. */
  private ownership(transactionalId: string): { coordinatorEpoch: number } | { errorCode: number } {
    const partition = this.partitionFor(transactionalId);
    if (this.loadingPartitions.has(partition)) return { errorCode: Errors.COORDINATOR_LOAD_IN_PROGRESS.code };
    const coordinatorEpoch = this.loadedEpochs.get(partition);
    if (coordinatorEpoch === undefined || !this.log.holdsLeadership(partition)) return { errorCode: Errors.NOT_COORDINATOR.code };
    return { coordinatorEpoch };
  }

  /** Whether `md` is still the state of its id, served at `coordinatorEpoch`. */
  private isCurrent(md: TransactionMetadata, coordinatorEpoch: number): boolean {
    return (
      !this.stopped &&
      this.txns.get(md.transactionalId) === md &&
      this.loadedEpochs.get(this.partitionFor(md.transactionalId)) === coordinatorEpoch
    );
  }

  // ---- InitProducerId ------------------------------------------------------------------------

  /**
   * Kafka's handleInitProducerId for a transactional id: a new id gets a producer id at epoch 0;
   * a known one has its epoch bumped (fencing older instances), or a new producer id when the
   * epoch is exhausted. A transaction still open is aborted first with a bumped epoch, and the
   * producer told CONCURRENT_TRANSACTIONS so that it retries. `expected` is the id and epoch a
   * producer recovering from an error sends (KIP-360).
   */
  async initProducerId(
    transactionalId: string,
    transactionTimeoutMs: number,
    expected: { producerId: bigint; producerEpoch: number } | null,
  ): Promise<InitProducerIdResult> {
    const fail = (errorCode: number): InitProducerIdResult => ({ errorCode, producerId: -1n, producerEpoch: -1 });
    if (transactionalId === '') return fail(Errors.INVALID_REQUEST.code);
    if (transactionTimeoutMs <= 0 || transactionTimeoutMs > this.config.maxTimeoutMs) return fail(Errors.INVALID_TRANSACTION_TIMEOUT.code);
    let owned = this.ownership(transactionalId);
    if ('errorCode' in owned) return fail(owned.errorCode);
    let md = this.txns.get(transactionalId);
    if (md === undefined) {
      const producerId = await this.producerIds.generateProducerId();
      owned = this.ownership(transactionalId);
      if ('errorCode' in owned) return fail(owned.errorCode);
      md = this.txns.get(transactionalId);
      if (md === undefined) {
        md = new TransactionMetadata(transactionalId, {
          producerId,
          producerEpoch: NO_PRODUCER_EPOCH,
          txnTimeoutMs: transactionTimeoutMs,
          state: TransactionState.Empty,
          partitions: [],
          txnLastUpdateTimestampMs: this.clock.now(),
          txnStartTimestampMs: -1,
        });
        this.txns.set(transactionalId, md);
      }
    }
    const { coordinatorEpoch } = owned;
    if (md.pendingState !== null) return fail(Errors.CONCURRENT_TRANSACTIONS.code);
    if (expected !== null && md.producerEpoch !== NO_PRODUCER_EPOCH && expected.producerId !== md.producerId) {
      return fail(Errors.PRODUCER_FENCED.code);
    }
    switch (md.state) {
      case TransactionState.Empty:
      case TransactionState.CompleteCommit:
      case TransactionState.CompleteAbort:
        return this.bumpEpoch(md, coordinatorEpoch, transactionTimeoutMs, expected);
      case TransactionState.Ongoing:
        // The epoch that fences the open transaction is never handed out: the producer retries
        // once the abort completes and gets a second bump.
        await this.fenceAndAbort(md);
        return fail(Errors.CONCURRENT_TRANSACTIONS.code);
      default:
        return fail(Errors.CONCURRENT_TRANSACTIONS.code);
    }
  }

  /** Kafka's prepareIncrementProducerEpoch and prepareProducerIdRotation. */
  private async bumpEpoch(
    md: TransactionMetadata,
    coordinatorEpoch: number,
    transactionTimeoutMs: number,
    expected: { producerId: bigint; producerEpoch: number } | null,
  ): Promise<InitProducerIdResult> {
    const nowMs = this.clock.now();
    let producerId = md.producerId;
    let producerEpoch: number;
    let lastProducerEpoch: number;
    if (md.isProducerEpochExhausted && (expected === null || expected.producerEpoch === md.producerEpoch)) {
      producerId = await this.producerIds.generateProducerId();
      if (!this.isCurrent(md, coordinatorEpoch)) return { errorCode: Errors.NOT_COORDINATOR.code, producerId: -1n, producerEpoch: -1 };
      if (md.pendingState !== null) return { errorCode: Errors.CONCURRENT_TRANSACTIONS.code, producerId: -1n, producerEpoch: -1 };
      producerEpoch = 0;
      lastProducerEpoch = expected === null ? NO_PRODUCER_EPOCH : md.producerEpoch;
    } else if (expected === null) {
      producerEpoch = md.producerEpoch + 1;
      lastProducerEpoch = NO_PRODUCER_EPOCH;
    } else if (md.producerEpoch === NO_PRODUCER_EPOCH || expected.producerEpoch === md.producerEpoch) {
      producerEpoch = md.producerEpoch + 1;
      lastProducerEpoch = md.producerEpoch;
    } else if (expected.producerEpoch === md.lastProducerEpoch) {
      // A retry of a bump whose answer the producer never got: the same answer again.
      producerEpoch = md.producerEpoch;
      lastProducerEpoch = md.lastProducerEpoch;
    } else {
      return { errorCode: Errors.PRODUCER_FENCED.code, producerId: -1n, producerEpoch: -1 };
    }
    const target = md.transitTo(TransactionState.Empty, nowMs, {
      producerId,
      producerEpoch,
      txnTimeoutMs: transactionTimeoutMs,
      partitions: [],
      txnStartTimestampMs: -1,
    });
    const errorCode = await this.persist(md, coordinatorEpoch, target);
    if (errorCode !== NONE) return { errorCode, producerId: -1n, producerEpoch: -1 };
    md.lastProducerEpoch = lastProducerEpoch;
    return { errorCode: NONE, producerId: md.producerId, producerEpoch: md.producerEpoch };
  }

  // ---- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------

  /** Kafka's handleAddPartitionsToTransaction: the partitions join the producer's transaction, opening it if needed. */
  async addPartitions(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: readonly TopicPartitionRef[],
  ): Promise<number> {
    if (transactionalId === '') return Errors.INVALID_REQUEST.code;
    const owned = this.ownership(transactionalId);
    if ('errorCode' in owned) return owned.errorCode;
    const md = this.txns.get(transactionalId);
    if (md === undefined || md.producerId !== producerId) return Errors.INVALID_PRODUCER_ID_MAPPING.code;
    if (md.producerEpoch !== producerEpoch) return Errors.PRODUCER_FENCED.code;
    if (md.pendingState !== null) return Errors.CONCURRENT_TRANSACTIONS.code;
    switch (md.state) {
      case TransactionState.Ongoing:
        if (md.hasPartitions(partitions)) return NONE;
        break;
      case TransactionState.Empty:
      case TransactionState.CompleteCommit:
      case TransactionState.CompleteAbort:
        break;
      default:
        return Errors.CONCURRENT_TRANSACTIONS.code;
    }
    const nowMs = this.clock.now();
    const starting = md.state !== TransactionState.Ongoing;
    const target = md.transitTo(TransactionState.Ongoing, nowMs, {
      partitions: starting ? [...partitions] : md.withPartitionsAdded(partitions),
      txnStartTimestampMs: starting ? nowMs : md.txnStartTimestampMs,
    });
    return this.persist(md, owned.coordinatorEpoch, target);
  }

  /**
   * KIP-890 part 1 (AddPartitionsToTxn v4+ with verifyOnly, Kafka's
   * handleVerifyPartitionsInTransaction): whether each partition is in the producer's open
   * transaction, asked by a partition leader before it appends the transaction's first batch
   * there. A partition not in it answers TRANSACTION_ABORTABLE: the producer must abort.
   */
  verifyPartitions(transactionalId: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartitionRef[]): number[] {
    const all = (code: number) => partitions.map(() => code);
    if (transactionalId === '') return all(Errors.INVALID_REQUEST.code);
    const owned = this.ownership(transactionalId);
    if ('errorCode' in owned) return all(owned.errorCode);
    const md = this.txns.get(transactionalId);
    if (md === undefined || md.producerId !== producerId) return all(Errors.INVALID_PRODUCER_ID_MAPPING.code);
    if (md.producerEpoch !== producerEpoch) return all(Errors.PRODUCER_FENCED.code);
    if (md.pendingState !== null || md.state === TransactionState.PrepareCommit || md.state === TransactionState.PrepareAbort) {
      return all(Errors.CONCURRENT_TRANSACTIONS.code);
    }
    return partitions.map((tp) => (md.hasPartitions([tp]) ? NONE : Errors.TRANSACTION_ABORTABLE.code));
  }

  // ---- EndTxn ----------------------------------------------------------------------------------

  /**
   * Kafka's handleEndTransaction: an open transaction moves to PrepareCommit or PrepareAbort
   * (answered once that is stored), then its markers are written and it completes. A retried
   * EndTxn of a transaction already ending or ended the same way is answered as Kafka does.
   * `fromClient` false: the coordinator aborts on its own (a fenced or timed-out producer),
   * with an epoch above the producer's.
   */
  async endTransaction(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
    fromClient = true,
  ): Promise<number> {
    if (transactionalId === '') return Errors.INVALID_REQUEST.code;
    const owned = this.ownership(transactionalId);
    if ('errorCode' in owned) return owned.errorCode;
    const md = this.txns.get(transactionalId);
    if (md === undefined || md.producerId !== producerId) return Errors.INVALID_PRODUCER_ID_MAPPING.code;
    if ((fromClient && producerEpoch !== md.producerEpoch) || producerEpoch < md.producerEpoch) return Errors.PRODUCER_FENCED.code;
    if (md.pendingState !== null && md.pendingState !== TransactionState.PrepareEpochFence) return Errors.CONCURRENT_TRANSACTIONS.code;
    switch (md.state) {
      case TransactionState.Ongoing: {
        if (!commit && md.pendingState === TransactionState.PrepareEpochFence) {
          md.pendingState = null;
          md.producerEpoch = producerEpoch;
          md.lastProducerEpoch = NO_PRODUCER_EPOCH;
        }
        const target = md.transitTo(commit ? TransactionState.PrepareCommit : TransactionState.PrepareAbort, this.clock.now());
        const errorCode = await this.persist(md, owned.coordinatorEpoch, target);
        if (errorCode === NONE) this.completeInBackground(md, owned.coordinatorEpoch, commit);
        return errorCode;
      }
      case TransactionState.CompleteCommit:
        return commit ? NONE : Errors.INVALID_TXN_STATE.code;
      case TransactionState.CompleteAbort:
        return commit ? Errors.INVALID_TXN_STATE.code : NONE;
      case TransactionState.PrepareCommit:
        return commit ? Errors.CONCURRENT_TRANSACTIONS.code : Errors.INVALID_TXN_STATE.code;
      case TransactionState.PrepareAbort:
        return commit ? Errors.INVALID_TXN_STATE.code : Errors.CONCURRENT_TRANSACTIONS.code;
      default:
        return Errors.INVALID_TXN_STATE.code;
    }
  }

  private completeInBackground(md: TransactionMetadata, coordinatorEpoch: number, commit: boolean): void {
    runGuarded(this.onError, `completing the transaction of ${md.transactionalId}`, () => this.complete(md, coordinatorEpoch, commit));
  }

  /** Writes the markers, then stores CompleteCommit or CompleteAbort (retrying while this coordinator owns the id). */
  private async complete(md: TransactionMetadata, coordinatorEpoch: number, commit: boolean): Promise<void> {
    const marker: TxnMarkerSpec = { producerId: md.producerId, producerEpoch: md.producerEpoch, commit, coordinatorEpoch };
    const outcome = await this.markers.write(marker, [...md.partitions.values()], () => this.isCurrent(md, coordinatorEpoch));
    if (outcome === 'fenced') {
      this.onError(
        new Error(`a partition refused the ${commit ? 'commit' : 'abort'} marker of producer ${md.producerId} epoch ${md.producerEpoch}`),
        `completing the transaction of ${md.transactionalId}`,
      );
      return;
    }
    if (outcome !== 'written') return;
    for (;;) {
      if (!this.isCurrent(md, coordinatorEpoch)) return;
      if (md.pendingState !== null) {
        await this.sleep(COMPLETE_RETRY_BACKOFF_MS);
        continue;
      }
      const target = md.transitTo(commit ? TransactionState.CompleteCommit : TransactionState.CompleteAbort, this.clock.now(), {
        partitions: [],
      });
      const errorCode = await this.persist(md, coordinatorEpoch, target);
      if (errorCode === NONE || errorCode === Errors.NOT_COORDINATOR.code) return;
      await this.sleep(COMPLETE_RETRY_BACKOFF_MS);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }

  /**
   * Stores `target` as the id's state (Kafka's appendTransactionToLog): other requests for the
   * id answer CONCURRENT_TRANSACTIONS meanwhile; the state changes once the append is
   * committed. Append failures map to the errors Kafka gives producers.
   */
  private async persist(md: TransactionMetadata, coordinatorEpoch: number, target: TxnSnapshot): Promise<number> {
    md.pendingState = target.state;
    try {
      await this.log.append(this.partitionFor(md.transactionalId), [{ transactionalId: md.transactionalId, value: target }]);
    } catch (err) {
      md.pendingState = null;
      return appendErrorCode(err);
    }
    md.pendingState = null;
    if (!this.isCurrent(md, coordinatorEpoch)) return Errors.NOT_COORDINATOR.code;
    md.apply(target);
    return NONE;
  }

  // ---- timers ------------------------------------------------------------------------------------

  /** Kafka's abortTimedOutTransactions: an open transaction past its timeout is aborted with a bumped epoch, fencing its producer. */
  abortTimedOutTransactions(): void {
    const nowMs = this.clock.now();
    for (const md of this.txns.values()) {
      if (md.state !== TransactionState.Ongoing || md.pendingState !== null) continue;
      if (md.txnStartTimestampMs + md.txnTimeoutMs >= nowMs) continue;
      if (!this.loadedEpochs.has(this.partitionFor(md.transactionalId))) continue;
      runGuarded(this.onError, `aborting the timed-out transaction of ${md.transactionalId}`, () => this.fenceAndAbort(md));
    }
  }

  /**
   * Aborts the open transaction with an epoch above its producer's (Kafka's
   * PrepareEpochFence): the producer is fenced, and other requests for the id wait meanwhile.
   */
  private async fenceAndAbort(md: TransactionMetadata): Promise<void> {
    md.pendingState = TransactionState.PrepareEpochFence;
    try {
      await this.endTransaction(md.transactionalId, md.producerId, fencedEpoch(md.producerEpoch), false, false);
    } finally {
      if (md.pendingState === TransactionState.PrepareEpochFence) md.pendingState = null;
    }
  }

  /** Kafka's removeExpiredTransactionalIds: an id idle past transactional.id.expiration.ms, with no transaction, is tombstoned. */
  expireTransactionalIds(): void {
    const nowMs = this.clock.now();
    for (const md of this.txns.values()) {
      const idle =
        md.state === TransactionState.Empty || md.state === TransactionState.CompleteCommit || md.state === TransactionState.CompleteAbort;
      if (!idle || md.pendingState !== null || md.txnLastUpdateTimestampMs + this.config.idExpirationMs > nowMs) continue;
      const partition = this.partitionFor(md.transactionalId);
      const coordinatorEpoch = this.loadedEpochs.get(partition);
      if (coordinatorEpoch === undefined) continue;
      md.pendingState = TransactionState.Dead;
      runGuarded(this.onError, `expiring the transactional id ${md.transactionalId}`, async () => {
        try {
          await this.log.append(partition, [{ transactionalId: md.transactionalId, value: null }]);
        } finally {
          md.pendingState = null;
        }
        if (this.isCurrent(md, coordinatorEpoch)) this.txns.delete(md.transactionalId);
      });
    }
  }

  // ---- DescribeTransactions / ListTransactions ---------------------------------------------------

  describe(transactionalId: string): TransactionDescription {
    const empty = (errorCode: number): TransactionDescription => ({
      transactionalId,
      errorCode,
      state: '',
      producerId: -1n,
      producerEpoch: -1,
      timeoutMs: -1,
      startTimestampMs: -1,
      partitions: [],
    });
    const owned = this.ownership(transactionalId);
    if ('errorCode' in owned) return empty(owned.errorCode);
    const md = this.txns.get(transactionalId);
    if (md === undefined || md.state === TransactionState.Dead) return empty(Errors.TRANSACTIONAL_ID_NOT_FOUND.code);
    return {
      transactionalId,
      errorCode: NONE,
      state: TRANSACTION_STATE_NAMES[md.state],
      producerId: md.producerId,
      producerEpoch: md.producerEpoch,
      timeoutMs: md.txnTimeoutMs,
      startTimestampMs: md.txnStartTimestampMs,
      partitions: [...md.partitions.values()],
    };
  }

  /**
   * Kafka's listTransactionStates: the ids of every partition served, filtered by state names,
   * producer ids and (v1+) a minimum running time; COORDINATOR_LOAD_IN_PROGRESS alongside
   * them while a partition is still loading.
   */
  list(
    stateFilters: readonly string[],
    producerIdFilters: readonly bigint[],
    durationFilterMs: number,
  ): { errorCode: number; transactions: TransactionListing[] } {
    const states = new Set(stateFilters);
    const producerIds = new Set(producerIdFilters);
    const nowMs = this.clock.now();
    const transactions: TransactionListing[] = [];
    for (const md of this.txns.values()) {
      if (!this.loadedEpochs.has(this.partitionFor(md.transactionalId)) || md.state === TransactionState.Dead) continue;
      const state = TRANSACTION_STATE_NAMES[md.state];
      if (states.size > 0 && !states.has(state)) continue;
      if (producerIds.size > 0 && !producerIds.has(md.producerId)) continue;
      if (durationFilterMs >= 0 && (md.state !== TransactionState.Ongoing || nowMs - md.txnStartTimestampMs < durationFilterMs)) continue;
      transactions.push({ transactionalId: md.transactionalId, producerId: md.producerId, state });
    }
    const errorCode = this.loadingPartitions.size > 0 ? Errors.COORDINATOR_LOAD_IN_PROGRESS.code : NONE;
    return { errorCode, transactions };
  }
}

/** Kafka's appendTransactionToLog error mapping: what a producer retries, where. */
function appendErrorCode(err: unknown): number {
  const code = err instanceof KafkaError ? err.code : undefined;
  switch (code) {
    case Errors.NOT_LEADER_OR_FOLLOWER.code:
    case Errors.KAFKA_STORAGE_ERROR.code:
      return Errors.NOT_COORDINATOR.code;
    case Errors.UNKNOWN_TOPIC_OR_PARTITION.code:
    case Errors.NOT_ENOUGH_REPLICAS.code:
    case Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.code:
    case Errors.REQUEST_TIMED_OUT.code:
      return Errors.COORDINATOR_NOT_AVAILABLE.code;
    default:
      return Errors.UNKNOWN_SERVER_ERROR.code;
  }
}
