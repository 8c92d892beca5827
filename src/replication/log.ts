/**
 * What the replication layer needs from a partition's log, and the settings it reads from a
 * topic's effective config. The storage engine's PartitionLog is adapted to `ReplicaLog`
 * (see storage-adapter.ts); tests use an in-memory implementation.
 */
import type { TimestampAndOffset } from '../../storage/log.ts';
import type { ProducerDescription, TransactionVerification, VerificationGuard } from '../../storage/producer-state.ts';

export type { TransactionVerification, VerificationGuard };
import type { AbortedTxn } from '../../storage/transaction-index.ts';
import type { ReadBufferSource } from '../../storage/read-buffers.ts';
import { hasDeletePolicy, isCompacted } from '../../storage/config.ts';
import { type TopicConfigLookup, cleanupPolicyOf, topicConfigNumber, topicConfigValue } from '../config/topic-config.ts';

/**
 * A producer's state in one partition, as DescribeProducers reports it, and a record found
 * by time (ListOffsets): the storage engine's shapes.
 */
export type { AbortedTxn, ProducerDescription, TimestampAndOffset };

/** What a leader append did. */
export interface LeaderAppendInfo {
  readonly firstOffset: number;
  readonly lastOffset: number;
  /** A retried idempotent batch: nothing written, the offsets are the original ones. */
  readonly duplicate: boolean;
}

/** What a follower append did. */
export interface FollowerAppendInfo {
  /** -1 when nothing was appended. */
  readonly firstOffset: number;
  readonly lastOffset: number;
  readonly validBytes: number;
}

export interface LogReadResult {
  /** Whole batches, in order, as stored. */
  readonly chunks: readonly Buffer[];
  readonly sizeInBytes: number;
}

export interface EpochEndOffset {
  /** The largest epoch <= the requested one that the log knows, -1 when none. */
  readonly leaderEpoch: number;
  /** Start offset of the next epoch, or the log end offset for the latest epoch; -1 when unknown. */
  readonly endOffset: number;
}

export type MaybePromise<T> = T | Promise<T>;

export interface ReplicaLog {
  readonly logStartOffset: number;
  readonly logEndOffset: number;
  readonly sizeInBytes: number;
  /**
   * Appends v2 batches laid end to end, already validated. The log assigns offsets from its
   * end offset by rewriting baseOffset and partitionLeaderEpoch in place, checks idempotent
   * batches against its producer state (throwing the storage ProducerStateError, or answering
   * a retried duplicate with its original offsets), and updates the leader-epoch cache.
   * `origin` 'coordinator': a coordinator's own batches, whose producers are checked for their
   * epoch only.
   */
  appendAsLeader(
    batches: Buffer,
    leaderEpoch: number,
    origin?: 'client' | 'coordinator',
    verification?: TransactionVerification,
  ): MaybePromise<LeaderAppendInfo>;
  /**
   * KIP-890 part 1: starts verifying the producer's transaction on the partition; null when its
   * transaction is open here already (no verification needed).
   */
  startTransactionVerification(producerId: bigint, producerEpoch: number): MaybePromise<VerificationGuard | null>;
  /** The coordinator refused the verification: the guard is dropped. */
  abandonTransactionVerification(guard: VerificationGuard): void;
  /**
   * Appends batches fetched from the leader as they are: offsets and leader epochs kept, the
   * first at or after the log end; the producer state and the leader-epoch cache learn them
   * as on the leader, so a follower that becomes leader answers retried idempotent batches.
   */
  appendAsFollower(batches: Buffer): MaybePromise<FollowerAppendInfo>;
  /** Removes everything at and after `offset` (a divergent tail); the high watermark follows. */
  truncateTo(offset: number): MaybePromise<void>;
  /** Drops the whole log and restarts it empty at `offset` (the leader's log start is past it). */
  truncateFullyAndStartAt(offset: number): MaybePromise<void>;
  /** A new leader epoch starts at `startOffset` (the log end when this broker became leader). */
  assignEpochStartOffset(leaderEpoch: number, startOffset: number): MaybePromise<void>;
  /**
   * Whole batches from the one containing `fetchOffset`, up to `maxBytes` (the first batch
   * whole when `minOneBatch`), none at or past `maxOffset`; into a buffer from `buffers`
   * when given.
   */
  read(
    fetchOffset: number,
    maxBytes: number,
    maxOffset: number,
    minOneBatch: boolean,
    buffers?: ReadBufferSource,
  ): MaybePromise<LogReadResult>;
  /** Earliest record with timestamp >= `timestampMs`, or null. */
  offsetForTimestamp(timestampMs: number): MaybePromise<TimestampAndOffset | null>;
  /** The record with the largest timestamp (first of equals), or null for an empty log. */
  maxTimestampOffset(): MaybePromise<TimestampAndOffset | null>;
  /** Leader epoch of the batch holding `offset`, -1 when unknown. */
  epochForOffset(offset: number): MaybePromise<number>;
  deleteRecordsBefore(offset: number): MaybePromise<void>;
  endOffsetForEpoch(leaderEpoch: number): EpochEndOffset;
  latestEpoch(): number;
  activeProducers(): MaybePromise<readonly ProducerDescription[]>;
  /**
   * The high watermark, owned by the log (Kafka's UnifiedLog) and checkpointed by it; after a
   * restart the checkpointed one. Within [logStartOffset, logEndOffset], truncation included.
   */
  readonly highWatermark: number;
  /** Sets the high watermark; the caller keeps it within [logStartOffset, logEndOffset]. */
  updateHighWatermark(offset: number): void;
  /**
   * The last stable offset (the high watermark, or below it the first offset of a transaction
   * not yet decided); right once `loadProducerState` resolved, the high watermark before.
   */
  readonly lastStableOffset: number;
  /** Loads the producer state if it is not yet (it is loaded lazily, on first use). */
  loadProducerState(): MaybePromise<void>;
  /** The aborted transactions overlapping [fetchOffset, upperBoundOffset), for read_committed fetches. */
  abortedTransactions(fetchOffset: number, upperBoundOffset: number): MaybePromise<readonly AbortedTxn[]>;
  updateConfig(config: TopicConfigLookup): void;
}

/** Opens, creates and deletes partition logs (the storage engine's LogManager). */
export interface LogProvider {
  getOrCreateLog(topic: string, partition: number, topicId: string, config: TopicConfigLookup): MaybePromise<ReplicaLog>;
  deleteLog(topic: string, partition: number): MaybePromise<void>;
  /** Directory holding the partition's log. */
  logDirOf(topic: string, partition: number): string;
  /** Every configured log directory. */
  logDirs(): readonly string[];
}

/** The topic settings the data path checks on every produce, parsed once per config change. */
export interface LogSettings {
  readonly maxMessageBytes: number;
  readonly logAppendTime: boolean;
  readonly timestampBeforeMaxMs: number;
  readonly timestampAfterMaxMs: number;
  /** cleanup.policy has compact: records need keys. */
  readonly compacted: boolean;
  /** cleanup.policy has delete: DeleteRecords is allowed. */
  readonly deletePolicy: boolean;
  readonly minInsyncReplicas: number;
}

/** The data path's settings, parsed by the config module's topic-config accessors. */
export function logSettings(config: TopicConfigLookup): LogSettings {
  const policy = { cleanupPolicy: cleanupPolicyOf(topicConfigValue(config, 'cleanup.policy')) };
  return {
    maxMessageBytes: topicConfigNumber(config, 'max.message.bytes'),
    logAppendTime: topicConfigValue(config, 'message.timestamp.type') === 'LogAppendTime',
    // Long.MAX_VALUE means "no limit", which a double keeps as a huge number.
    timestampBeforeMaxMs: topicConfigNumber(config, 'message.timestamp.before.max.ms'),
    timestampAfterMaxMs: topicConfigNumber(config, 'message.timestamp.after.max.ms'),
    compacted: isCompacted(policy),
    deletePolicy: hasDeletePolicy(policy),
    minInsyncReplicas: topicConfigNumber(config, 'min.insync.replicas'),
  };
}
