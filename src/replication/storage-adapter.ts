/**
 * Adapts the storage engine (LogManager, PartitionLog) to what the ReplicaManager uses, and
 * maps a topic's effective config (Kafka names) to the log's settings.
 */
import { RecordBatch } from '../../protocol/records/batch.ts';
import type { LogConfig } from '../../storage/config.ts';
import type { LogManager } from '../../storage/log-manager.ts';
import type { PartitionLog } from '../../storage/log.ts';
import type { ReadBufferSource } from '../../storage/read-buffers.ts';
import { type TopicConfigLookup, logConfigOf } from '../config/topic-config.ts';
import type {
  AbortedTxn,
  EpochEndOffset,
  FollowerAppendInfo,
  LeaderAppendInfo,
  LogProvider,
  LogReadResult,
  ProducerDescription,
  ReplicaLog,
  TimestampAndOffset,
  TransactionVerification,
  VerificationGuard,
} from './log.ts';
import { partitionKey } from './partition.ts';

/**
 * The log settings of a topic config. LogAppendTime is left to the ReplicaManager (it stamps
 * batches before the append and answers with that time), so the log keeps CreateTime.
 */
export function toLogConfig(config: TopicConfigLookup): LogConfig {
  // A lookup is immutable (a new one per config change), so its LogConfig is computed once:
  // a delta creating 10000 partitions of one topic shares the topic's lookup.
  const cached = logConfigs.get(config);
  if (cached !== undefined) return cached;
  const computed: LogConfig = { ...logConfigOf(config), messageTimestampType: 'CreateTime' };
  logConfigs.set(config, computed);
  return computed;
}

const logConfigs = new WeakMap<TopicConfigLookup, LogConfig>();

/**
 * A partition's PartitionLog as a ReplicaLog. Every failure of an operation goes to
 * `onError` before it reaches the caller: the LogManager takes the log's dir offline when
 * the file system failed (Kafka's maybeHandleIOException around each UnifiedLog operation).
 */
export class PartitionLogReplica implements ReplicaLog {
  /** `applyConfig` defaults to the log alone; the LogManager also (un)registers compaction. */
  constructor(
    readonly log: PartitionLog,
    private readonly applyConfig: (config: LogConfig) => void = (c) => log.updateConfig(c),
    private readonly onError: (err: unknown, what: string) => void = () => {},
  ) {}

  private guard<T>(what: string, operation: Promise<T>): Promise<T> {
    return operation.catch((err: unknown) => {
      this.onError(err, what);
      throw err;
    });
  }

  get logStartOffset(): number {
    return this.log.logStartOffset;
  }
  get logEndOffset(): number {
    return this.log.logEndOffset;
  }
  get sizeInBytes(): number {
    return this.log.sizeBytes;
  }
  get highWatermark(): number {
    return this.log.highWatermark;
  }

  async appendAsLeader(
    batches: Buffer,
    leaderEpoch: number,
    origin: 'client' | 'coordinator' = 'client',
    verification?: TransactionVerification,
  ): Promise<LeaderAppendInfo> {
    const info = await this.guard('append', this.log.append(batches, { leaderEpoch, assignOffsets: true, origin, verification }));
    return { firstOffset: info.firstOffset, lastOffset: info.lastOffset, duplicate: info.duplicate };
  }

  startTransactionVerification(producerId: bigint, producerEpoch: number): Promise<VerificationGuard | null> {
    return this.guard('verifying a transaction', this.log.startTransactionVerification(producerId, producerEpoch));
  }

  abandonTransactionVerification(guard: VerificationGuard): void {
    this.log.abandonTransactionVerification(guard);
  }

  async appendAsFollower(batches: Buffer): Promise<FollowerAppendInfo> {
    const info = await this.guard('follower append', this.log.appendAsFollower(batches));
    return { firstOffset: info.firstOffset, lastOffset: info.lastOffset, validBytes: info.validBytes };
  }

  truncateTo(offset: number): Promise<void> {
    return this.guard('truncation', this.log.truncateTo(offset));
  }

  truncateFullyAndStartAt(offset: number): Promise<void> {
    return this.guard('truncation', this.log.truncateFullyAndStartAt(offset));
  }

  assignEpochStartOffset(leaderEpoch: number, startOffset: number): Promise<void> {
    return this.guard('assigning a leader epoch', this.log.assignEpochStartOffset(leaderEpoch, startOffset));
  }

  async read(
    fetchOffset: number,
    maxBytes: number,
    maxOffset: number,
    minOneBatch: boolean,
    buffers?: ReadBufferSource,
  ): Promise<LogReadResult> {
    const r = await this.guard('read', this.log.read(fetchOffset, maxBytes, maxOffset, minOneBatch, buffers));
    return { chunks: r.records.length === 0 ? [] : [r.records], sizeInBytes: r.records.length };
  }

  offsetForTimestamp(timestampMs: number): Promise<TimestampAndOffset | null> {
    return this.guard('offset lookup by time', this.log.offsetForTimestamp(timestampMs));
  }

  maxTimestampOffset(): Promise<TimestampAndOffset | null> {
    return this.guard('max timestamp lookup', this.log.maxTimestampOffset());
  }

  async epochForOffset(offset: number): Promise<number> {
    if (offset >= this.log.logEndOffset) return this.log.latestEpoch;
    const r = await this.guard('read', this.log.read(offset, 1, this.log.logEndOffset, true));
    return r.records.length === 0 ? -1 : new RecordBatch(r.records, 0).partitionLeaderEpoch;
  }

  async deleteRecordsBefore(offset: number): Promise<void> {
    await this.guard('deleting records', this.log.deleteRecordsBefore(offset));
  }

  endOffsetForEpoch(leaderEpoch: number): EpochEndOffset {
    const r = this.log.endOffsetForEpoch(leaderEpoch);
    return { leaderEpoch: r.epoch, endOffset: r.endOffset };
  }

  latestEpoch(): number {
    return this.log.latestEpoch;
  }

  activeProducers(): Promise<ProducerDescription[]> {
    return this.guard('reading producer state', this.log.activeProducers());
  }

  updateHighWatermark(offset: number): void {
    this.log.highWatermark = offset;
  }

  get lastStableOffset(): number {
    return this.log.lastStableOffset;
  }

  async loadProducerState(): Promise<void> {
    const loading = this.log.loadProducerStateIfNeeded();
    if (loading !== null) await this.guard('reading producer state', loading);
  }

  abortedTransactions(fetchOffset: number, upperBoundOffset: number): Promise<AbortedTxn[]> {
    return this.guard('reading aborted transactions', this.log.abortedTransactions(fetchOffset, upperBoundOffset));
  }

  updateConfig(config: TopicConfigLookup): void {
    this.applyConfig(toLogConfig(config));
  }
}

export class LogManagerProvider implements LogProvider {
  private readonly replicas = new Map<string, PartitionLogReplica>();

  constructor(readonly manager: LogManager) {}

  async getOrCreateLog(topic: string, partition: number, _topicId: string, config: TopicConfigLookup): Promise<ReplicaLog> {
    const log = await this.manager.getOrCreateLog(topic, partition, toLogConfig(config));
    log.updateConfig(toLogConfig(config));
    const key = partitionKey(topic, partition);
    let replica = this.replicas.get(key);
    if (replica === undefined || replica.log !== log) {
      // This log only (and its cleaner registration): the ReplicaManager updates each
      // partition of the topic, so a topic-wide update here would cost partitions^2.
      replica = new PartitionLogReplica(
        log,
        (c) => this.manager.updateLogConfig(topic, partition, c),
        (err, what) => this.manager.handleLogError(topic, partition, err, `${what} of ${key}`),
      );
      this.replicas.set(key, replica);
    }
    return replica;
  }

  async deleteLog(topic: string, partition: number): Promise<void> {
    this.replicas.delete(partitionKey(topic, partition));
    await this.manager.deleteLog(topic, partition);
  }

  logDirOf(topic: string, partition: number): string {
    return this.manager.logDirOf(topic, partition) ?? '';
  }

  logDirs(): readonly string[] {
    return this.manager.options.logDirs;
  }
}
