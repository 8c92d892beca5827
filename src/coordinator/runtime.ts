/**
 * What every coordinator shares (Kafka's CoordinatorRuntime): its state lives as records in
 * the partitions of an internal topic (`__consumer_offsets` for groups, `__transaction_state`
 * for transactions), the coordinator of a key is the leader of the partition the key hashes
 * to, and this broker loads a partition's state when it becomes that leader and forgets it
 * when it stops being it. The runtime owns the topic side of that: creating the topic on
 * first use, loading and unloading partitions as leadership moves (in order per partition,
 * a bounded number at once, retried with a backoff), appending records with the
 * coordinator's origin, and FindCoordinator. What a partition's records mean is the shard's.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  buildRecordBatch,
  decompressedRecords,
  endTxnMarkerOf,
  iterateRecords,
  readControlRecord,
  type EndTxnMarker,
  type RecordBatch,
} from '../../protocol/records/index.ts';
import type { Clock, TimerHandle } from '../runtime/clock.ts';
import type { TransactionVerification } from '../replication/log.ts';
import { guarded } from '../runtime/guard.ts';
import type { Logger } from '../observability/logger.ts';

export interface CoordinatorEndpoint {
  errorCode: number;
  errorMessage: string | null;
  nodeId: number;
  host: string;
  port: number;
}

/** What a coordinator needs from the broker around it, for its topic. */
export interface CoordinatorTopicAccess {
  /** Leader and endpoint (on `listenerName`) of a partition of the topic; null when the topic does not exist. */
  partitionLeader(partition: number, listenerName: string): { leaderId: number; host: string; port: number } | null | 'no-leader';
  /** Creates the topic; resolves with a Kafka error code (0 when created or already there). */
  createTopic(): Promise<number>;
  partitionExists(topic: string, partition: number): boolean;
  /**
   * The partition's leader epoch while this broker leads it, null when it does not: the
   * ReplicaManager's view, which changes before the coordinator hears of it.
   */
  leaderEpoch(partition: number): number | null;
  /**
   * Appends one batch as leader with acks=all; resolves with its base offset once committed,
   * throws an error carrying `errorCode` on failure. `verification`: a transactional batch's
   * (KIP-890 part 1), from verifyTransaction.
   */
  append(partition: number, batch: Buffer, verification?: TransactionVerification): Promise<number>;
  /**
   * KIP-890 part 1: asks the producer's transaction coordinator whether the partition is in its
   * transaction, as a produce's first transactional batch is verified. Absent: no verification.
   */
  verifyTransaction?(partition: number, transactionalId: string, producer: TransactionalProducer): Promise<TransactionVerificationOutcome>;
  /** The partition's batches from its log start to its log end (as its leader), in order. */
  readBatches(partition: number): AsyncIterable<RecordBatch>;
  /**
   * Waits (a bounded while) for everything before `offset` to be committed (below the high
   * watermark): true once it is, false when not yet; throws once this broker no longer leads
   * the partition.
   */
  awaitCommitted(partition: number, offset: number): Promise<boolean>;
}

/** The byte form of a coordinator's records (a key, and a value or a tombstone). */
export interface CoordinatorRecordCodec<R> {
  encode(record: R): { key: Buffer; value: Buffer | null };
  /** null for a record of a type this coordinator does not keep. */
  decode(key: Buffer, value: Buffer | null): R | null;
}

/** A verified transaction to append with (undefined when verification is off), or why not. */
export type TransactionVerificationOutcome =
  | { verification: TransactionVerification | undefined }
  | { errorCode: number; message: string; fromCoordinator: boolean };

/** Where the records a load replays come from. */
export interface ReplayedBatch {
  /** The log offset of each record. */
  readonly offsets: readonly number[];
  /** The producer whose open transaction the records belong to; null outside a transaction. */
  readonly transactionalProducerId: bigint | null;
}

/** A transactional producer a coordinator writes records for (its transaction holds them until its marker). */
export interface TransactionalProducer {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/** A coordinator's state of the partitions this broker leads (Kafka's CoordinatorShard). */
export interface CoordinatorShard<R> {
  /**
   * The partition's keys answer COORDINATOR_LOAD_IN_PROGRESS from now until it is loaded.
   * `leaderEpoch`: the partition's leader epoch, the coordinator epoch of what loads (-1 when unknown).
   */
  beginLoading(partition: number, leaderEpoch: number): void;
  /**
   * Applies records read back from a loading partition, in log order, chunk by chunk. A record
   * that cannot be applied goes to `onSkipped` with its index. Returns how many were skipped.
   */
  replayLoading(partition: number, records: readonly R[], onSkipped: (index: number, err: unknown) => void, batch: ReplayedBatch): number;
  /**
   * A COMMIT or ABORT marker read back: the transaction of `producerId` ended. Only shards that
   * write transactional records (the group coordinator's offset commits, KIP-447) need it.
   */
  replayEndTransaction?(partition: number, producerId: bigint, commit: boolean): void;
  /** Everything read back is applied and committed: serve the partition's keys. */
  completeLoading(partition: number): void;
  /** A load failed part way: forget what it replayed, keep answering COORDINATOR_LOAD_IN_PROGRESS. */
  abandonLoading(partition: number): void;
  /** This broker no longer leads the partition: forget its state. */
  unload(partition: number): void;
}

export interface CoordinatorRuntimeOptions<R> {
  readonly nodeId: number;
  /** The internal topic, for messages. */
  readonly topic: string;
  readonly clock: Clock;
  readonly access: CoordinatorTopicAccess;
  readonly codec: CoordinatorRecordCodec<R>;
  readonly shard: CoordinatorShard<R>;
  /**
   * Failures of background work (loads, retries) and records a load skipped, each with what it
   * concerns: the partition, or the partition and offset.
   */
  readonly onError: (err: unknown, what: string) => void;
  /** Backoff between attempts to load a partition whose load failed; default 500 ms doubling to 30 s. */
  readonly loadRetryBackoffMs?: { initialMs: number; maxMs: number };
  /** How many partitions load at once (it bounds the memory loads hold beside the state they build). */
  readonly maxConcurrentLoads: number;
  /** Elections, loads and resignations, at info level, so that a coordinator move can be read from the logs. */
  readonly logger?: Pick<Logger, 'info'>;
}

/** Where the load of one partition this broker leads stands. */
export interface PartitionLoadStatus {
  partition: number;
  /** loading: an attempt runs; loaded: its keys are served; failed: waiting to retry. */
  state: 'loading' | 'loaded' | 'failed';
  /** Why the last attempt failed; null unless failed (or loading again after a failure). */
  reason: string | null;
  /** Attempts made since this broker became the partition's leader. */
  attempts: number;
  /** Records of the last completed load that could not be decoded or applied, and were skipped. */
  skippedRecords: number;
  /** When the next attempt starts (failed only). */
  nextAttemptAtMs: number | null;
}

/** Sluice: Kafka retries a failed load only on the next leadership change; we retry on a backoff. */
const DEFAULT_LOAD_RETRY_BACKOFF_MS = { initialMs: 500, maxMs: 30_000 };

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class CoordinatorRuntime<R> {
  private readonly led = new Set<number>();
  private creating: Promise<number> | null = null;
  /** The last step (load or unload) of each partition: a partition's steps run in order. */
  private readonly partitionSteps = new Map<number, Promise<void>>();
  /** Every step not finished yet, for whenLoaded. */
  private readonly runningSteps = new Set<Promise<void>>();
  private readonly loads: LoadSlots;
  /** Bumped each time this broker becomes a partition's leader: a stale retry sees it changed. */
  private readonly leadEpochs = new Map<number, number>();
  /** The partition's leader epoch each led partition was loaded for. */
  private readonly ledLeaderEpochs = new Map<number, number>();
  private stopped = false;
  private readonly loadStatuses = new Map<number, PartitionLoadStatus>();
  private readonly retryTimers = new Map<number, TimerHandle>();

  constructor(private readonly options: CoordinatorRuntimeOptions<R>) {
    this.loads = new LoadSlots(options.maxConcurrentLoads);
  }

  shutdown(): void {
    this.stopped = true;
    for (const timer of this.retryTimers.values()) this.options.clock.clearTimeout(timer);
    this.retryTimers.clear();
  }

  /** The load state of every partition this broker leads, for metrics and tools. */
  partitionLoadStatuses(): PartitionLoadStatus[] {
    return [...this.loadStatuses.values()].map((s) => ({ ...s })).sort((a, b) => a.partition - b.partition);
  }

  /** The load state of one partition; undefined when this broker does not lead it. */
  partitionLoadStatus(partition: number): PartitionLoadStatus | undefined {
    const status = this.loadStatuses.get(partition);
    return status === undefined ? undefined : { ...status };
  }

  /**
   * Leadership of a partition changed: load it if this broker now leads it, unload it if it no
   * longer does. A partition's loads and unloads run in the order changes arrive; at most
   * maxConcurrentLoads partitions load at once, in that order too. A load that fails is
   * retried with a backoff while the partition's keys answer COORDINATOR_LOAD_IN_PROGRESS. A
   * newer `leaderEpoch` while leading means another broker may have led (and appended) in
   * between: the partition is unloaded and loaded again, as Kafka's onElection loads again for
   * a newer coordinator epoch.
   */
  onPartitionLeadership(partition: number, isLeader: boolean, leaderEpoch = -1): void {
    const loadedFor = this.ledLeaderEpochs.get(partition);
    if (isLeader && this.led.has(partition) && loadedFor !== undefined && leaderEpoch > loadedFor) {
      this.onPartitionLeadership(partition, false);
    }
    const where = `${this.options.topic}-${partition}`;
    if (isLeader && !this.led.has(partition)) {
      this.options.logger?.info({ partition: where, leaderEpoch }, 'coordinator elected: loading the partition');
      this.led.add(partition);
      this.ledLeaderEpochs.set(partition, leaderEpoch);
      const epoch = (this.leadEpochs.get(partition) ?? 0) + 1;
      this.leadEpochs.set(partition, epoch);
      this.loadStatuses.set(partition, {
        partition,
        state: 'loading',
        reason: null,
        attempts: 0,
        skippedRecords: 0,
        nextAttemptAtMs: null,
      });
      this.options.shard.beginLoading(partition, leaderEpoch);
      this.enqueue(partition, `loading ${where}`, () => this.load(partition, epoch));
    } else if (!isLeader && this.led.has(partition)) {
      this.options.logger?.info(
        { partition: where, loadedLeaderEpoch: loadedFor ?? -1, state: this.loadStatuses.get(partition)?.state ?? null },
        'coordinator resigned: unloading the partition',
      );
      this.led.delete(partition);
      this.ledLeaderEpochs.delete(partition);
      this.loadStatuses.delete(partition);
      this.cancelRetry(partition);
      this.enqueue(partition, `unloading ${where}`, () => this.options.shard.unload(partition));
    }
  }

  /**
   * Whether this broker still leads the partition at the leader epoch its state was loaded for.
   * Kafka's coordinator answers only while it holds that leadership: between the ReplicaManager
   * learning of a new leader (or a newer epoch of its own) and the unload that follows, the state
   * may miss what a newer leader acknowledged.
   */
  holdsLeadership(partition: number): boolean {
    const loadedFor = this.ledLeaderEpochs.get(partition);
    return loadedFor !== undefined && this.options.access.leaderEpoch(partition) === loadedFor;
  }

  /** Resolves once every load requested so far has finished (an attempt, failed or not). */
  async whenLoaded(): Promise<void> {
    await Promise.all([...this.runningSteps]);
  }

  /**
   * Appends `records` to a partition this broker leads, with acks=all, as one batch: a
   * transactional one of `producer` when given. Resolves with the offset of the first record.
   */
  async append(
    partition: number,
    records: readonly R[],
    producer?: TransactionalProducer,
    verification?: TransactionVerification,
  ): Promise<number> {
    const nowMs = this.options.clock.now();
    const batch = await buildRecordBatch(
      producer === undefined
        ? {}
        : // Sequence 0, as Kafka's coordinators write: a coordinator's batches are not checked for sequence.
          { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: 0, isTransactional: true },
      records.map((r) => ({ ...this.options.codec.encode(r), timestamp: nowMs })),
    );
    return this.options.access.append(partition, batch, verification);
  }

  /** See CoordinatorTopicAccess.verifyTransaction. */
  verifyTransaction(partition: number, transactionalId: string, producer: TransactionalProducer): Promise<TransactionVerificationOutcome> {
    return this.options.access.verifyTransaction?.(partition, transactionalId, producer) ?? Promise.resolve({ verification: undefined });
  }

  /**
   * FindCoordinator for a key of `partition`: the partition's leader. As in Kafka, the request
   * that finds the topic missing creates it and answers COORDINATOR_NOT_AVAILABLE; so does this
   * broker for a partition it leads but has not started to load, and the client asks again.
   */
  async findCoordinator(partition: number, listenerName: string): Promise<CoordinatorEndpoint> {
    const leader = this.options.access.partitionLeader(partition, listenerName);
    if (leader === null) {
      this.creating ??= this.options.access.createTopic().finally(() => {
        this.creating = null;
      });
      await this.creating;
      return unavailable();
    }
    if (leader === 'no-leader') return unavailable();
    if (leader.leaderId === this.options.nodeId && !this.led.has(partition)) return unavailable();
    return { errorCode: 0, errorMessage: null, nodeId: leader.leaderId, host: leader.host, port: leader.port };
  }

  /** Chains a step of loading or unloading of a partition; a step that fails is reported and the chain goes on. */
  private enqueue(partition: number, what: string, step: () => void | Promise<void>): void {
    const previous = this.partitionSteps.get(partition) ?? Promise.resolve();
    const next = previous.then(step).catch((err) => this.options.onError(err, what));
    this.partitionSteps.set(partition, next);
    this.runningSteps.add(next);
    void next.then(() => {
      this.runningSteps.delete(next);
      if (this.partitionSteps.get(partition) === next) this.partitionSteps.delete(partition);
    });
  }

  private isCurrent(partition: number, epoch: number): boolean {
    return !this.stopped && this.led.has(partition) && this.leadEpochs.get(partition) === epoch;
  }

  /**
   * Reads the partition back and applies it, batch by batch: memory holds one read chunk and
   * one batch's records, never the partition's history. A record that cannot be decoded (or
   * a batch whose records cannot be read) is logged with its partition and offset, counted
   * and skipped: it never keeps the rest of the partition from loading. A failure of the read
   * itself (storage) fails the attempt, which is retried with a backoff.
   */
  private async load(partition: number, epoch: number): Promise<void> {
    if (!this.isCurrent(partition, epoch)) return;
    const startedAtMs = this.options.clock.now();
    await this.loads.acquire();
    let replayedTo: number | null;
    try {
      replayedTo = await this.replayPartition(partition, epoch);
    } finally {
      this.loads.release();
    }
    if (replayedTo !== null) await this.completeOnceCommitted(partition, epoch, replayedTo, startedAtMs);
  }

  /**
   * Reads the partition to its log end and replays it; returns the offset it replayed up to,
   * null when the attempt failed or was overtaken.
   */
  private async replayPartition(partition: number, epoch: number): Promise<number | null> {
    const status = this.loadStatuses.get(partition);
    if (status === undefined || !this.isCurrent(partition, epoch)) return null;
    status.state = 'loading';
    status.nextAttemptAtMs = null;
    status.attempts++;
    const where = `${this.options.topic}-${partition}`;
    let skipped = 0;
    const skip = (offset: number | string, err: unknown): void => {
      skipped++;
      this.options.onError(err, `decoding the record at offset ${offset} of ${where} (skipped)`);
    };
    let replayedTo = 0;
    try {
      for await (const batch of this.options.access.readBatches(partition)) {
        // No longer the leader: stop reading. The unload queued behind forgets what was replayed.
        if (!this.isCurrent(partition, epoch)) return null;
        replayedTo = batch.nextOffset;
        if (batch.isControl) {
          let marker: EndTxnMarker | null = null;
          try {
            marker = endTxnMarkerOf(batch, await readControlRecord(batch));
          } catch (err) {
            skip(batch.baseOffset, err);
          }
          if (marker !== null) this.options.shard.replayEndTransaction?.(partition, batch.producerId, marker.commit);
          continue;
        }
        const { records, offsets, unreadable } = await decodeBatch(batch, this.options.codec, skip);
        skipped += unreadable;
        skipped += this.options.shard.replayLoading(
          partition,
          records,
          (index, err) => {
            this.options.onError(err, `replaying the record at offset ${offsets[index]} of ${where} (skipped)`);
          },
          { offsets, transactionalProducerId: batch.isTransactional ? batch.producerId : null },
        );
      }
    } catch (err) {
      this.loadFailed(partition, epoch, err);
      return null;
    }
    status.skippedRecords = skipped;
    if (skipped > 0) {
      this.options.onError(new Error(`${skipped} record(s) could not be loaded and were skipped`), `loading ${where} (completed)`);
    }
    return replayedTo;
  }

  /**
   * Serves the partition's keys once what the load replayed is committed. The log end a new
   * leader loads to may hold a previous leader's uncommitted tail, which the next election can
   * take away again: served before, a state could be answered and then go back (Kafka's
   * coordinator runtime reads only what is below the high watermark). Until then the keys
   * answer COORDINATOR_LOAD_IN_PROGRESS, without holding a load slot.
   */
  private async completeOnceCommitted(partition: number, epoch: number, replayedTo: number, startedAtMs: number): Promise<void> {
    try {
      while (!(await this.options.access.awaitCommitted(partition, replayedTo))) {
        if (!this.isCurrent(partition, epoch)) return;
      }
    } catch (err) {
      if (this.isCurrent(partition, epoch)) this.loadFailed(partition, epoch, err);
      return;
    }
    const status = this.loadStatuses.get(partition);
    if (status === undefined || !this.isCurrent(partition, epoch)) return;
    this.options.shard.completeLoading(partition);
    status.state = 'loaded';
    status.reason = null;
    this.options.logger?.info(
      {
        partition: `${this.options.topic}-${partition}`,
        leaderEpoch: this.ledLeaderEpochs.get(partition) ?? -1,
        replayedToOffset: replayedTo,
        skippedRecords: status.skippedRecords,
        attempts: status.attempts,
        durationMs: this.options.clock.now() - startedAtMs,
      },
      'coordinator loaded the partition: serving its keys',
    );
  }

  private loadFailed(partition: number, epoch: number, err: unknown): void {
    const where = `${this.options.topic}-${partition}`;
    this.options.onError(err, `loading ${where}`);
    if (!this.isCurrent(partition, epoch)) return;
    this.options.shard.abandonLoading(partition);
    const status = this.loadStatuses.get(partition);
    if (status === undefined) return;
    const backoff = this.options.loadRetryBackoffMs ?? DEFAULT_LOAD_RETRY_BACKOFF_MS;
    const delayMs = Math.min(backoff.initialMs * 2 ** Math.min(status.attempts - 1, 30), backoff.maxMs);
    status.state = 'failed';
    status.reason = reasonOf(err);
    status.nextAttemptAtMs = this.options.clock.now() + delayMs;
    this.cancelRetry(partition);
    this.retryTimers.set(
      partition,
      this.options.clock.setTimeout(
        guarded(this.options.onError, `retrying the load of ${where}`, () => {
          this.retryTimers.delete(partition);
          if (this.isCurrent(partition, epoch)) this.enqueue(partition, `loading ${where}`, () => this.load(partition, epoch));
        }),
        delayMs,
      ),
    );
  }

  private cancelRetry(partition: number): void {
    const timer = this.retryTimers.get(partition);
    if (timer !== undefined) this.options.clock.clearTimeout(timer);
    this.retryTimers.delete(partition);
  }
}

function unavailable(): CoordinatorEndpoint {
  const e = Errors.COORDINATOR_NOT_AVAILABLE;
  return { errorCode: e.code, errorMessage: e.message, nodeId: -1, host: '', port: -1 };
}

/**
 * The records of one batch a coordinator keeps, with their offsets. A record that does not
 * decode goes to `skip`; a batch whose records cannot be read (corrupt compression or
 * framing) skips all of them from the first unread one, and `unreadable` counts those beyond
 * the one reported to `skip`.
 */
async function decodeBatch<R>(
  batch: RecordBatch,
  codec: CoordinatorRecordCodec<R>,
  skip: (offset: number | string, err: unknown) => void,
): Promise<{ records: R[]; offsets: number[]; unreadable: number }> {
  const records: R[] = [];
  const offsets: number[] = [];
  let read = 0;
  try {
    const payload = await decompressedRecords(batch);
    for (const record of iterateRecords(batch, payload)) {
      read++;
      if (record.key === null) {
        skip(record.offset, new Error('record without a key'));
        continue;
      }
      let decoded: R | null;
      try {
        decoded = codec.decode(record.key, record.value);
      } catch (err) {
        skip(record.offset, err);
        continue;
      }
      if (decoded === null) continue;
      records.push(decoded);
      offsets.push(record.offset);
    }
  } catch (err) {
    const unread = Math.max(batch.recordCount - read, 1);
    skip(`${batch.baseOffset + read}..${batch.lastOffset}`, err);
    return { records, offsets, unreadable: unread - 1 };
  }
  return { records, offsets, unreadable: 0 };
}

/** A counting semaphore: at most `size` holders, the others served in arrival order. */
class LoadSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = Math.max(1, size);
  }

  acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot to the next waiter, if any. */
  release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.free++;
    else next();
  }
}
