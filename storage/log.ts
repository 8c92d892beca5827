// One partition's log: an ordered list of segments, the leader-epoch cache and the
// producer state, with Kafka's UnifiedLog operations. Mutations (append, roll, truncation,
// retention, segment swaps) run one at a time under a per-log lock; reads never take it
// and work on the segment list current when they start.

import { dirname, join } from 'node:path';
import { InvalidRecordBatchError, RecordBatch, validateBatchAt } from '../protocol/records/batch.ts';
import { NEVER, hasDeletePolicy } from './config.ts';
import type { LogConfig } from './config.ts';
import {
  type BackgroundErrorSink,
  CorruptRecordError,
  LogClosedError,
  OffsetOutOfRangeError,
  RecordTooLargeError,
  UnexpectedAppendOffsetError,
  isMissingFile,
  removeFile,
  toStorageIOError,
} from './errors.ts';
import type { TimerHandle } from './clock.ts';
import { FileHandlePool } from './file-pool.ts';
import type { FileSystem } from './file-system.ts';
import { LEADER_EPOCH_CHECKPOINT, LeaderEpochCache } from './leader-epoch-cache.ts';
import { ProducerStateManager } from './producer-state.ts';
import type {
  AppendOrigin,
  CompletedTxn,
  ProducerCheck,
  ProducerDescription,
  TransactionVerification,
  VerificationGuard,
} from './producer-state.ts';
import { type AbortedTxn, TXN_INDEX_SUFFIX } from './transaction-index.ts';
import { type BatchExtent, INDEX_SUFFIX, LOG_SUFFIX, LogSegment, TIME_INDEX_SUFFIX, extentOf, segmentFileName } from './segment.ts';
import { firstRecordAtOrAfter, offsetOfMaxTimestamp } from './records.ts';
import type { ReadBufferSource } from './read-buffers.ts';

export interface PartitionLogOptions {
  /** The partition directory, `<log dir>/<topic>-<partition>`. */
  dir: string;
  /** The topic's settings, whole: storage has no defaults of its own (the broker's are Kafka's). */
  config: LogConfig;
  /**
   * The handle cache, and with it whether this log fsyncs (FileHandlePool.unsafeBypassFsync),
   * the file system it is on (FileHandlePool.fileSystem) and the clock of its timestamps
   * (LogAppendTime, segment.ms, retention) and timers (flush.ms, file.delete.delay.ms).
   */
  pool?: FileHandlePool;
  /**
   * Offset below which the log is known to be fsynced (recovery-point-offset-checkpoint).
   * After a clean shutdown it is the log end, which spares reading the active segment.
   */
  recoveryPoint?: number;
  logStartOffset?: number;
  highWatermark?: number;
  /** False after an unclean stop: segments from the recovery point on are validated. */
  cleanShutdown?: boolean;
  /**
   * False only for a log whose owner validates all of it at every open (`cleanShutdown`
   * false, `recoveryPoint` 0: the Raft metadata log). Recovery rebuilds the leader epochs
   * from the batches each time, so they live in memory and no checkpoint file is written.
   */
  persistLeaderEpochs?: boolean;
  /**
   * Where failures nobody awaits are reported: a background flush (the next flush retries
   * it), a deferred file deletion, a producer snapshot skipped as unreadable.
   */
  onBackgroundError: BackgroundErrorSink;
}

export interface AppendOptions {
  /** The leader epoch written into each batch (leader appends). */
  leaderEpoch?: number;
  /**
   * true (leader): offsets are assigned from the log end and written into the batches;
   * false (follower/replication): the batches keep their offsets, which must start at or
   * after the log end.
   */
  assignOffsets?: boolean;
  /**
   * 'client' enforces producer id/epoch/sequence checks, 'coordinator' the epochs only (its
   * batches carry no sequence), 'replication' only records them.
   */
  origin?: AppendOrigin;
  /**
   * KIP-890 part 1, client appends: the first transactional batch of a producer's transaction
   * is appended only with the verification guard its producer state still holds.
   */
  verification?: TransactionVerification;
}

export interface LogAppendInfo {
  firstOffset: number;
  lastOffset: number;
  maxTimestampMs: number;
  offsetOfMaxTimestamp: number;
  /** The broker time written into the batches for LogAppendTime topics, else -1. */
  logAppendTimeMs: number;
  logStartOffset: number;
  /** Bytes appended (0 for a duplicate). */
  validBytes: number;
  batchCount: number;
  /** True when the batch is a retried duplicate: nothing was written, offsets are the original ones. */
  duplicate: boolean;
}

/**
 * Whole batches read from one segment, exactly as stored (never decoded). `records` is
 * empty (zero length, not null) when nothing is available. `segmentBaseOffset` and
 * `position` locate the bytes in the segment's `.log` file.
 */
export interface LogReadResult {
  records: Buffer;
  /** Base offset of the first batch returned (may be below the fetch offset), or -1. */
  firstOffset: number;
  /** The offset after the last batch returned (the fetch offset when empty). */
  nextOffset: number;
  segmentBaseOffset: number;
  position: number;
  highWatermark: number;
  logStartOffset: number;
  logEndOffset: number;
}

export interface TimestampAndOffset {
  readonly timestampMs: number;
  readonly offset: number;
  /** Leader epoch of the batch holding the offset, or -1. */
  readonly leaderEpoch: number;
}

export type AppendListener = (info: LogAppendInfo) => void;

/** Runs critical sections one at a time, in call order; an uncontended one starts at once. */
class Mutex {
  private locked = false;
  private readonly waiting: (() => void)[] = [];

  run<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.locked) {
      this.locked = true;
      return this.enter(fn);
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => this.enter(fn));
  }

  private enter<T>(fn: () => Promise<T>): Promise<T> {
    let result: Promise<T>;
    try {
      result = fn();
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then(this.leave, this.leave);
    return result;
  }

  private readonly leave = (): void => {
    const next = this.waiting.shift();
    if (next === undefined) this.locked = false;
    else next();
  };
}

export class PartitionLog {
  config: LogConfig;
  readonly dir: string;
  private segments: LogSegment[] = [];
  private nextOffsetMetadata = 0;
  private startOffset = 0;
  private hw = 0;
  private recoveryPointOffset = 0;
  private readonly lock = new Mutex();
  private flushChain: Promise<void> = Promise.resolve();
  private truncations = 0;
  private unflushedMessages = 0;
  private lastFlushMs: number;
  private flushTimer: TimerHandle | null = null;
  private producerStateLoad: Promise<void> | null = null;
  /** Whether `producerStateLoad` has completed (appends then skip waiting on it). */
  private producerStateLoaded = false;
  private readonly listeners = new Set<AppendListener>();
  private closed = false;
  /**
   * open() created the partition directory and no flush has fsynced the directory holding
   * it since: the directory's own name, and with it every file in it, may not be durable.
   */
  private dirNameUnsynced = false;
  /** Bytes cut off invalid tails when the log was opened after an unclean stop. */
  truncatedOnRecoveryBytes = 0;
  readonly epochCache: LeaderEpochCache;
  readonly producerState: ProducerStateManager;

  private constructor(
    dir: string,
    config: LogConfig,
    readonly pool: FileHandlePool,
    epochCache: LeaderEpochCache,
    private readonly onBackgroundError: BackgroundErrorSink,
  ) {
    this.dir = dir;
    this.config = config;
    this.epochCache = epochCache;
    this.producerState = new ProducerStateManager(pool, dir, onBackgroundError);
    this.lastFlushMs = this.time();
  }

  /** The wall clock (ms since epoch) of the log's timestamps and deadlines. */
  private time(): number {
    return this.pool.clock.now();
  }

  /** Opens (creating if needed) the log in `opts.dir`, recovering it after an unclean stop. */
  static async open(opts: PartitionLogOptions): Promise<PartitionLog> {
    const config = { ...opts.config };
    const persistEpochs = opts.persistLeaderEpochs ?? true;
    if (!persistEpochs && (opts.cleanShutdown !== false || (opts.recoveryPoint ?? 0) !== 0)) {
      throw new Error(`log ${opts.dir}: leader epochs kept in memory only need a full recovery at every open`);
    }
    const pool = opts.pool ?? new FileHandlePool({ onError: opts.onBackgroundError });
    const fs = pool.fileSystem;
    let names: string[];
    let newDir = false;
    try {
      names = await fs.readdir(opts.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw toStorageIOError(err, `listing ${opts.dir}`);
      try {
        await fs.mkdir(opts.dir, { recursive: true });
      } catch (mkdirErr) {
        throw toStorageIOError(mkdirErr, `creating ${opts.dir}`);
      }
      names = [];
      newDir = true;
    }
    const hasEpochCheckpoint = names.includes(LEADER_EPOCH_CHECKPOINT);
    // A checkpoint a persisting version left behind would go stale: the batches are the truth.
    if (!persistEpochs && hasEpochCheckpoint) await removeFile(fs, join(opts.dir, LEADER_EPOCH_CHECKPOINT), opts.onBackgroundError);
    const epochCache = await LeaderEpochCache.load(
      pool,
      opts.dir,
      persistEpochs && hasEpochCheckpoint,
      persistEpochs,
      !pool.unsafeBypassFsync,
    );
    const log = new PartitionLog(opts.dir, config, pool, epochCache, opts.onBackgroundError);
    await log.load(opts, names, newDir);
    return log;
  }

  get logEndOffset(): number {
    return this.nextOffsetMetadata;
  }
  get logStartOffset(): number {
    return this.startOffset;
  }
  get recoveryPoint(): number {
    return this.recoveryPointOffset;
  }
  get highWatermark(): number {
    return this.hw;
  }
  /** Set by the replica manager; kept within [logStartOffset, logEndOffset]. */
  set highWatermark(offset: number) {
    this.hw = Math.min(Math.max(offset, this.startOffset), this.nextOffsetMetadata);
    this.producerState.onHighWatermarkUpdated(this.hw);
  }
  /**
   * Kafka's UnifiedLog.lastStableOffset: the high watermark, or below it the first offset of
   * a transaction not yet decided (or whose marker is not yet replicated). Known once the
   * producer state is loaded (`loadProducerStateIfNeeded`); the high watermark until then.
   */
  get lastStableOffset(): number {
    const firstUnstable = this.producerStateLoaded ? this.producerState.firstUnstableOffset : null;
    return firstUnstable === null ? this.hw : Math.min(firstUnstable, this.hw);
  }
  /** Resolves once the producer state (and with it the last stable offset) is known; null when it is. */
  loadProducerStateIfNeeded(): Promise<void> | null {
    return this.producerStateLoaded ? null : this.ensureProducerState();
  }
  get segmentCount(): number {
    return this.segments.length;
  }
  /** The segment appends go to: the last one (a log always keeps at least one). */
  get activeSegment(): LogSegment {
    return lastOf(this.segments, this.dir);
  }
  /** Segments, oldest first (read-only view for the cleaner and tests). */
  get allSegments(): readonly LogSegment[] {
    return this.segments;
  }
  get sizeBytes(): number {
    let total = 0;
    for (const s of this.segments) total += s.sizeBytes;
    return total;
  }
  get latestEpoch(): number {
    return this.epochCache.latestEpoch;
  }
  get isClosed(): boolean {
    return this.closed;
  }

  /** Subscribes to appends (for waking delayed fetches). Returns the unsubscribe function. */
  onAppend(listener: AppendListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  updateConfig(config: Partial<LogConfig>): void {
    this.config = { ...this.config, ...config };
  }

  // ---- loading and recovery ----

  /** `newDir`: open() just created the directory, so nothing of the log exists on disk. */
  private async load(opts: PartitionLogOptions, listed: string[], newDir: boolean): Promise<void> {
    let names = listed;
    if (names.some((n) => n.endsWith('.swap')))
      names = await completeOrDiscardSwaps(this.pool.fileSystem, this.dir, names, this.onBackgroundError);
    const bases: number[] = [];
    for (const name of names) {
      if (name.endsWith('.deleted') || name.endsWith('.cleaned') || name.endsWith('.tmp')) {
        // Left by a crash: deleting it is tidying up; one that stays is reported, not fatal.
        await removeFile(this.pool.fileSystem, join(this.dir, name), this.onBackgroundError);
      } else if (name.endsWith(LOG_SUFFIX)) {
        const base = Number(name.slice(0, -LOG_SUFFIX.length));
        if (Number.isSafeInteger(base)) bases.push(base);
      }
    }
    bases.sort((a, b) => a - b);
    const txnIndexes = new Set(names.filter((n) => n.endsWith(TXN_INDEX_SUFFIX)));
    for (const base of bases) {
      const st = await this.pool.fileSystem.stat(join(this.dir, segmentFileName(base, LOG_SUFFIX)));
      const hasTxnIndex = txnIndexes.has(segmentFileName(base, TXN_INDEX_SUFFIX));
      this.segments.push(new LogSegment(this.dir, base, st.size, this.pool, st.mtimeMs, hasTxnIndex));
    }
    const requestedStart = opts.logStartOffset ?? 0;
    // A log without segment files gets a new empty one, which needs no fsync.
    const created = this.segments.length === 0;
    if (created) this.segments.push(await LogSegment.create(this.dir, requestedStart, this.pool, this.time()));
    // An unreadable leader-epoch checkpoint is rebuilt from the batches: recover everything.
    // A directory created just now holds nothing to recover.
    const cleanShutdown = newDir || ((opts.cleanShutdown ?? true) && !this.epochCache.damaged);
    if (cleanShutdown) {
      const active = this.activeSegment;
      const rp = opts.recoveryPoint;
      if (rp !== undefined && (rp > active.baseOffset || (rp === active.baseOffset && active.sizeBytes === 0))) {
        // A clean shutdown flushed everything, so the recovery point is the log end: the
        // active segment's indexes can wait for its first read or append.
        this.nextOffsetMetadata = rp;
      } else {
        await active.ensureLoaded(this.config.indexIntervalBytes);
        this.nextOffsetMetadata = active.nextOffset;
      }
      this.recoveryPointOffset = Math.min(rp ?? this.nextOffsetMetadata, this.nextOffsetMetadata);
    } else {
      await this.recover(this.epochCache.damaged ? 0 : (opts.recoveryPoint ?? 0), created);
    }
    this.startOffset = Math.min(Math.max(requestedStart, firstOf(this.segments, this.dir).baseOffset), this.nextOffsetMetadata);
    this.hw = Math.min(Math.max(opts.highWatermark ?? 0, this.startOffset), this.nextOffsetMetadata);
    if (newDir) {
      this.dirNameUnsynced = true;
      // No producer snapshot can exist in a directory created just now: the state is empty.
      this.producerState.reset(this.startOffset);
      this.producerState.mapEndOffset = this.nextOffsetMetadata;
      this.producerStateLoad = Promise.resolve();
      this.producerStateLoaded = true;
    }
    let epochsChanged = this.epochCache.truncateFromEnd(this.nextOffsetMetadata);
    epochsChanged = this.epochCache.truncateFromStart(this.startOffset) || epochsChanged;
    if (epochsChanged) await this.epochCache.persist();
  }

  /**
   * Validates every segment from the one holding `recoveryPoint` on; cuts at the first bad
   * byte. `created`: the only segment was created empty by this open, so has nothing to fsync.
   */
  private async recover(recoveryPoint: number, created: boolean): Promise<void> {
    let first = this.segmentIndexFor(recoveryPoint);
    if (first < 0) first = 0;
    // Recovery rewrites the tail, so the producer state is rebuilt from the last snapshot.
    for (const [i, seg] of this.segments.entries()) {
      if (i < first) continue;
      const truncatedBytes = await seg.recover(this.config.indexIntervalBytes, (b) => {
        if (b.partitionLeaderEpoch >= 0) this.epochCache.assign(b.partitionLeaderEpoch, b.baseOffset);
      });
      this.truncatedOnRecoveryBytes += truncatedBytes;
      if (truncatedBytes > 0) {
        // Everything after an invalid byte is unusable, including later segments.
        const dropped = this.segments.splice(i + 1);
        for (const d of dropped) await d.markDeleted(0, this.onBackgroundError);
        break;
      }
    }
    await this.activeSegment.ensureLoaded(this.config.indexIntervalBytes);
    this.nextOffsetMetadata = this.activeSegment.nextOffset;
    if (!created) for (const seg of this.segments.slice(first)) await seg.fsync();
    this.recoveryPointOffset = this.nextOffsetMetadata;
    // The producer state is replayed from the recovery point at the latest, so that the
    // aborted-transaction entries of the recovered batches are rebuilt (an entry written
    // after the last flush may not have survived).
    await this.producerState.deleteSnapshots((o) => o > Math.min(recoveryPoint, this.nextOffsetMetadata));
    await this.epochCache.persist();
  }

  /** Producer state is loaded on first use: latest snapshot, then the log after it. */
  private ensureProducerState(): Promise<void> {
    if (this.producerStateLoad === null) {
      const load = this.loadProducerState();
      this.producerStateLoad = load;
      load.then(
        () => {
          if (this.producerStateLoad === load) this.producerStateLoaded = true;
        },
        () => undefined,
      );
    }
    return this.producerStateLoad;
  }

  private async loadProducerState(): Promise<void> {
    const from = await this.producerState.loadLatestSnapshot(this.nextOffsetMetadata, this.startOffset);
    const completed: CompletedTxn[] = [];
    await this.forEachBatchHeader(Math.max(from, this.startOffset), (b) => {
      const txn = this.producerState.update(b, -1);
      if (txn?.isAborted) completed.push(txn);
    });
    this.producerState.mapEndOffset = this.nextOffsetMetadata;
    // The entries are there already unless a crash lost them; adding one is idempotent.
    for (const txn of completed) {
      const seg = this.segments[floorIndex(this.segments, txn.lastOffset)];
      if (seg !== undefined) await seg.txnIndex.append(abortedTxnOf(txn));
    }
    this.producerState.onHighWatermarkUpdated(this.hw);
  }

  /** Visits the header of every batch with lastOffset >= `fromOffset`, in order. */
  async forEachBatchHeader(fromOffset: number, visit: (b: RecordBatch) => void): Promise<void> {
    const segments = this.segments;
    for (const [i, seg] of segments.entries()) {
      const nextBase = segments[i + 1]?.baseOffset ?? Infinity;
      if (nextBase <= fromOffset) continue;
      await seg.ensureLoaded(this.config.indexIntervalBytes);
      await seg.scan(seg.lookupPosition(fromOffset), false, (extent, _pos, view) => {
        if (extent.lastOffset >= fromOffset) visit(view);
        return true;
      });
    }
  }

  // ---- append ----

  /**
   * Appends `batches` (whole v2 batches laid end to end). Framing, magic, CRC-32C and size
   * are checked first: if any batch is bad nothing is written (CorruptRecordError,
   * RecordTooLargeError). Producer checks for client appends may throw ProducerStateError
   * or return a duplicate.
   */
  async append(batches: Buffer, opts: AppendOptions = {}): Promise<LogAppendInfo> {
    const assignOffsets = opts.assignOffsets ?? true;
    const views = this.validateBatches(batches, assignOffsets);
    const info = await this.lock.run(() => this.appendLocked(batches, views, assignOffsets, opts));
    if (!info.duplicate && info.validBytes > 0) {
      for (const l of this.listeners) l(info);
      if (this.unflushedMessages >= this.config.flushMessages) await this.flush();
      else if (this.config.flushMs < NEVER && this.flushTimer === null) this.scheduleFlush();
    }
    return info;
  }

  /** Follower append: offsets and leader epochs are kept as the leader wrote them. */
  appendAsFollower(batches: Buffer): Promise<LogAppendInfo> {
    return this.append(batches, { assignOffsets: false, origin: 'replication' });
  }

  /**
   * A new leader's epoch starts at `startOffset` (Kafka's maybeAssignEpochStartOffset): the
   * cache answers for it before the first batch of the epoch is written, so a follower's
   * lastFetchedEpoch is checked against the epoch the leader is in.
   */
  assignEpochStartOffset(epoch: number, startOffset: number): Promise<void> {
    return this.lock.run(async () => {
      if (this.closed) throw new LogClosedError(`log ${this.dir} is closed`);
      if (startOffset > this.nextOffsetMetadata) {
        throw new RangeError(`epoch ${epoch} cannot start at ${startOffset}, past the log end ${this.nextOffsetMetadata}`);
      }
      if (this.epochCache.assign(epoch, startOffset)) await this.epochCache.persist();
    });
  }

  /** The broker's pre-append producer check (the same check `append` runs atomically). */
  async checkProducerBatches(batches: Buffer): Promise<ProducerCheck> {
    const views = this.validateBatches(batches, true);
    await this.ensureProducerState();
    return this.producerState.check(views);
  }

  /** Starts verifying the producer's transaction on this partition (ProducerStateManager.startVerification). */
  async startTransactionVerification(producerId: bigint, producerEpoch: number): Promise<VerificationGuard | null> {
    await this.ensureProducerState();
    return this.producerState.startVerification(producerId, producerEpoch);
  }

  /** The coordinator refused the verification (ProducerStateManager.abandonVerification). */
  abandonTransactionVerification(guard: VerificationGuard): void {
    this.producerState.abandonVerification(guard);
  }

  /** Producer state for DescribeProducers. */
  async activeProducers(): Promise<ProducerDescription[]> {
    await this.ensureProducerState();
    return this.producerState.describe();
  }

  private validateBatches(batches: Buffer, assignOffsets: boolean): RecordBatch[] {
    const views: RecordBatch[] = [];
    let pos = 0;
    let expectNext = -1;
    while (pos < batches.length) {
      let sizeBytes: number;
      try {
        sizeBytes = validateBatchAt(batches, pos, batches.length, true);
      } catch (err) {
        if (err instanceof InvalidRecordBatchError) throw new CorruptRecordError(`batch at byte ${pos}: ${err.message}`, err.kind);
        throw err;
      }
      // A follower keeps what its leader accepted (Kafka's appendAsFollower ignores the record
      // size): a lowered max.message.bytes must not stall replication of older batches.
      if (assignOffsets && sizeBytes > this.config.maxMessageBytes) {
        throw new RecordTooLargeError(`batch of ${sizeBytes} bytes exceeds max.message.bytes ${this.config.maxMessageBytes}`);
      }
      const view = new RecordBatch(batches, pos);
      if (assignOffsets) {
        if (view.recordCount !== view.lastOffsetDelta + 1) {
          throw new CorruptRecordError(
            `record count ${view.recordCount} does not match lastOffsetDelta ${view.lastOffsetDelta}`,
            'invalid',
          );
        }
      } else {
        if (view.baseOffset < expectNext) throw new CorruptRecordError('batch offsets are not increasing', 'invalid');
        expectNext = view.nextOffset;
      }
      views.push(view);
      pos += sizeBytes;
    }
    return views;
  }

  private async appendLocked(data: Buffer, views: RecordBatch[], assignOffsets: boolean, opts: AppendOptions): Promise<LogAppendInfo> {
    if (this.closed) throw new LogClosedError(`log ${this.dir} is closed`);
    const origin = opts.origin ?? (assignOffsets ? 'client' : 'replication');
    const first = views[0];
    const last = views[views.length - 1];
    if (first === undefined || last === undefined) {
      return {
        firstOffset: -1,
        lastOffset: -1,
        maxTimestampMs: -1,
        offsetOfMaxTimestamp: -1,
        logAppendTimeMs: -1,
        logStartOffset: this.startOffset,
        validBytes: 0,
        batchCount: 0,
        duplicate: false,
      };
    }
    if (!this.producerStateLoaded) await this.ensureProducerState();
    if (origin !== 'replication') {
      const check = this.producerState.checkOrThrow(views, origin, opts.verification);
      if (check.result === 'duplicate') {
        return {
          firstOffset: check.firstOffset,
          lastOffset: check.lastOffset,
          maxTimestampMs: -1,
          offsetOfMaxTimestamp: -1,
          logAppendTimeMs: -1,
          logStartOffset: this.startOffset,
          validBytes: 0,
          batchCount: 0,
          duplicate: true,
        };
      }
    }
    const nowMs = this.time();
    let logAppendTimeMs = -1;
    if (assignOffsets) {
      let next = this.nextOffsetMetadata;
      const epoch = opts.leaderEpoch ?? -1;
      const useAppendTime = this.config.messageTimestampType === 'LogAppendTime';
      if (useAppendTime) logAppendTimeMs = nowMs;
      for (const v of views) {
        v.setBaseOffset(next);
        v.setPartitionLeaderEpoch(epoch);
        if (useAppendTime) v.setLogAppendTime(nowMs);
        next = v.nextOffset;
      }
    } else if (first.baseOffset < this.nextOffsetMetadata) {
      throw new UnexpectedAppendOffsetError(`first offset ${first.baseOffset} is below the log end offset ${this.nextOffsetMetadata}`);
    }
    const firstOffset = first.baseOffset;
    const lastOffset = last.lastOffset;
    let maxTimestampMs = -1;
    let offsetOfMaxTimestamp = -1;
    const extents: BatchExtent[] = views.map((v) => {
      const e = extentOf(v);
      if (e.maxTimestampMs > maxTimestampMs) {
        maxTimestampMs = e.maxTimestampMs;
        offsetOfMaxTimestamp = e.lastOffset;
      }
      return e;
    });
    const active = this.activeSegment;
    if (!active.loaded) await active.ensureLoaded(this.config.indexIntervalBytes);
    if (this.shouldRoll(data.length, lastOffset, nowMs)) await this.rollLocked(firstOffset);
    const writing = this.activeSegment.append(data, extents, this.config.indexIntervalBytes);
    if (writing !== undefined) await writing;
    this.nextOffsetMetadata = lastOffset + 1;
    let epochsChanged = false;
    for (const v of views) {
      const epoch = v.partitionLeaderEpoch;
      if (epoch >= 0 && epoch > this.epochCache.latestEpoch) epochsChanged = this.epochCache.assign(epoch, v.baseOffset) || epochsChanged;
      const txn = this.producerState.update(v, logAppendTimeMs);
      if (txn?.isAborted) await this.activeSegment.txnIndex.append(abortedTxnOf(txn));
    }
    if (epochsChanged) await this.epochCache.persist();
    this.unflushedMessages += lastOffset - firstOffset + 1;
    return {
      firstOffset,
      lastOffset,
      maxTimestampMs,
      offsetOfMaxTimestamp,
      logAppendTimeMs,
      logStartOffset: this.startOffset,
      validBytes: data.length,
      batchCount: views.length,
      duplicate: false,
    };
  }

  /** Whether the active segment must roll before taking `bytes` ending at `lastOffset`; it must be loaded. */
  private shouldRoll(bytes: number, lastOffset: number, nowMs: number): boolean {
    const seg = this.activeSegment;
    const c = this.config;
    const waitedMs = nowMs - (seg.rollingBasedTimestampMs >= 0 ? seg.rollingBasedTimestampMs : seg.createdMs);
    return (
      (seg.sizeBytes > 0 && (seg.sizeBytes + bytes > c.segmentBytes || waitedMs > c.segmentMs - c.segmentJitterMs)) ||
      (seg.sizeBytes > 0 && seg.isIndexFull(c.segmentIndexBytes)) ||
      !seg.canHoldOffset(lastOffset)
    );
  }

  private scheduleFlush(): void {
    const delay = Math.max(0, this.config.flushMs - (this.time() - this.lastFlushMs));
    this.flushTimer = this.pool.clock.setTimeout(() => {
      this.flushTimer = null;
      // A failed background flush leaves the recovery point behind; the next flush retries.
      this.flush().catch((err: unknown) => this.onBackgroundError(err, `flushing ${this.dir}`));
    }, delay);
  }

  // ---- roll and flush ----

  /** Starts a new active segment at the log end (no-op if the active segment is empty there). */
  roll(): Promise<void> {
    return this.lock.run(() => this.rollLocked(this.nextOffsetMetadata));
  }

  private async rollLocked(newBase: number): Promise<void> {
    const active = this.activeSegment;
    const base = Math.max(newBase, this.nextOffsetMetadata);
    if (active.sizeBytes === 0 && active.baseOffset === base) return;
    if (active.sizeBytes === 0) {
      // An empty active segment at a lower base (a follower skipping a gap) is replaced.
      this.segments.pop();
      await active.markDeleted(0, this.onBackgroundError);
    } else {
      await active.onBecomeInactive();
    }
    this.segments.push(await LogSegment.create(this.dir, base, this.pool, this.time()));
    if (this.producerStateLoad !== null) {
      await this.producerStateLoad;
      this.producerState.mapEndOffset = this.nextOffsetMetadata;
      await this.producerState.takeSnapshot();
    }
    // Kafka flushes the rolled segment in the background (it advances the recovery point).
    this.flush(base).catch((err: unknown) => this.onBackgroundError(err, `flushing ${this.dir} after a roll`));
  }

  /** fsyncs segments up to `offset` (default: the log end) and advances the recovery point. */
  flush(offset?: number): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.closed) return;
      const upTo = Math.min(offset ?? this.nextOffsetMetadata, this.nextOffsetMetadata);
      if (upTo <= this.recoveryPointOffset) return;
      const truncationsBefore = this.truncations;
      let segmentsCreated = false;
      const segments = await this.lock.run(async () => {
        const recoveryPoint = this.recoveryPointOffset;
        const chosen = this.segments.filter((s, i) => {
          const end = this.segments[i + 1]?.baseOffset ?? Infinity;
          return end > recoveryPoint && s.baseOffset < upTo;
        });
        // Kafka's LocalLog.flush: a segment starting at or past the recovery point was
        // created since the last flush.
        segmentsCreated = chosen.some((s) => s.baseOffset >= recoveryPoint);
        for (const s of chosen) await s.flushIndexes();
        return chosen;
      });
      const messagesBefore = this.unflushedMessages;
      for (const s of segments) {
        try {
          await s.fsync();
        } catch (err) {
          // A segment retention or the cleaner removed meanwhile, or a log deleted meanwhile
          // (its topic was): nothing of it is left to make durable.
          if (!this.segments.includes(s)) continue;
          if (this.closed && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
          throw err;
        }
      }
      if (segmentsCreated) await this.syncDirNames();
      if (this.truncations === truncationsBefore && upTo > this.recoveryPointOffset) this.recoveryPointOffset = upTo;
      if (upTo >= this.nextOffsetMetadata) this.unflushedMessages = Math.max(0, this.unflushedMessages - messagesBefore);
      this.lastFlushMs = this.time();
    };
    const next = this.flushChain.then(run, run);
    this.flushChain = next.catch(() => undefined);
    return next;
  }

  /**
   * Makes the names of new segment files durable (Kafka's Utils.flushDirIfExists on the log's
   * directory): on a file system that journals names only when their directory is fsynced,
   * a fsynced segment whose name is not would vanish in a crash, records and all. The first
   * time after open() created the directory, the directory holding it is fsynced too, so the
   * partition's own name is as durable as the records flushed into it (Kafka leaves that to
   * the log dir's next checkpoint write, and a log that writes none, the Raft log, never
   * gets it). Only when a segment was created since the last flush: once per segment, not
   * per append. A directory renamed away meanwhile is being deleted, so not being there is
   * fine.
   */
  private async syncDirNames(): Promise<void> {
    const syncIfExists = async (dir: string): Promise<void> => {
      try {
        await this.pool.syncDir(dir);
      } catch (err) {
        if (!isMissingFile(err)) throw toStorageIOError(err, `fsync ${dir}`);
      }
    };
    await syncIfExists(this.dir);
    if (!this.dirNameUnsynced) return;
    await syncIfExists(dirname(this.dir));
    this.dirNameUnsynced = false;
  }

  // ---- read ----

  /**
   * Reads whole batches from the one holding `fetchOffset`, up to `maxBytes` (the first
   * batch may exceed it when `minOneBatch`), none reaching `maxOffset` (exclusive: pass the
   * high watermark or last stable offset). `fetchOffset` outside [logStartOffset,
   * logEndOffset] throws OffsetOutOfRangeError; at the log end the result is empty. The
   * bytes land in a buffer from `buffers` when given (see read-buffers.ts).
   */
  async read(
    fetchOffset: number,
    maxBytes: number,
    maxOffset = this.nextOffsetMetadata,
    minOneBatch = true,
    buffers?: ReadBufferSource,
  ): Promise<LogReadResult> {
    for (let attempt = 0; ; attempt++) {
      const segments = this.segments;
      try {
        return await this.readFrom(segments, fetchOffset, maxBytes, maxOffset, minOneBatch, buffers);
      } catch (err) {
        // Retention or a segment swap replaced the segment mid-read: retry on the new list.
        if (attempt < 2 && this.segments !== segments && !(err instanceof OffsetOutOfRangeError)) continue;
        throw err;
      }
    }
  }

  private async readFrom(
    segments: LogSegment[],
    fetchOffset: number,
    maxBytes: number,
    maxOffset: number,
    minOneBatch: boolean,
    buffers: ReadBufferSource | undefined,
  ): Promise<LogReadResult> {
    const leo = this.nextOffsetMetadata;
    const lso = this.startOffset;
    if (fetchOffset < lso || fetchOffset > leo) throw new OffsetOutOfRangeError(fetchOffset, lso, leo);
    const empty = (seg: LogSegment | undefined): LogReadResult => ({
      records: Buffer.alloc(0),
      firstOffset: -1,
      nextOffset: fetchOffset,
      segmentBaseOffset: seg?.baseOffset ?? -1,
      position: -1,
      highWatermark: this.hw,
      logStartOffset: lso,
      logEndOffset: leo,
    });
    if (fetchOffset === leo || fetchOffset >= maxOffset) return empty(undefined);
    for (let i = Math.max(0, floorIndex(segments, fetchOffset)); i < segments.length; i++) {
      const seg = segments[i];
      if (seg === undefined || seg.baseOffset >= maxOffset) break;
      const r = await seg.read(fetchOffset, maxBytes, maxOffset, minOneBatch, this.config.indexIntervalBytes, buffers);
      if (r === undefined) continue;
      if (r === null) return empty(seg);
      return {
        records: r.records,
        firstOffset: r.firstOffset,
        nextOffset: r.nextOffset,
        segmentBaseOffset: seg.baseOffset,
        position: r.position,
        highWatermark: this.hw,
        logStartOffset: lso,
        logEndOffset: leo,
      };
    }
    return empty(undefined);
  }

  /**
   * Kafka's UnifiedLog.collectAbortedTransactions: the aborted transactions overlapping
   * [fetchOffset, upperBoundOffset), from the segment holding `fetchOffset` on, until an
   * entry's last stable offset shows no later one can overlap.
   */
  async abortedTransactions(fetchOffset: number, upperBoundOffset: number): Promise<AbortedTxn[]> {
    const segments = this.segments;
    const aborted: AbortedTxn[] = [];
    for (let i = Math.max(0, floorIndex(segments, fetchOffset)); i < segments.length; i++) {
      const seg = segments[i];
      if (seg === undefined) break;
      if (seg.txnIndex.isEmpty) continue;
      const found = await seg.txnIndex.collect(fetchOffset, upperBoundOffset);
      aborted.push(...found.aborted);
      if (found.complete) break;
    }
    return aborted;
  }

  // ---- offsets by time ----

  /** The earliest offset whose record timestamp is >= `timestampMs` (ListOffsets), or null. */
  async offsetForTimestamp(timestampMs: number): Promise<TimestampAndOffset | null> {
    const segments = this.segments;
    const last = segments[segments.length - 1];
    for (const seg of segments) {
      const largest = await seg.largestTimestampCheap();
      if (largest.timestampMs < timestampMs && seg !== last) continue;
      await seg.ensureLoaded(this.config.indexIntervalBytes);
      if (seg.maxTimestampSoFarMs < timestampMs) continue;
      const from = Math.max(seg.lookupTimestamp(timestampMs), this.startOffset);
      let hit: { extent: BatchExtent; leaderEpoch: number } | null = null;
      await seg.scan(seg.lookupPosition(from), false, (b, _pos, view) => {
        if (b.lastOffset >= from && b.maxTimestampMs >= timestampMs) {
          hit = { extent: b, leaderEpoch: view.partitionLeaderEpoch };
          return false;
        }
        return true;
      });
      // The callback's assignment is invisible to the narrowing: re-read through a cast.
      const found = hit as { extent: BatchExtent; leaderEpoch: number } | null;
      if (found === null) continue;
      const batch = found.extent;
      const r = await seg.read(batch.baseOffset, batch.sizeBytes, Infinity, true, this.config.indexIntervalBytes);
      const record = r == null ? null : await firstRecordAtOrAfter(r.records, timestampMs);
      const offset = Math.max(record?.offset ?? batch.baseOffset, this.startOffset);
      return { offset, timestampMs: record?.timestampMs ?? batch.maxTimestampMs, leaderEpoch: found.leaderEpoch };
    }
    return null;
  }

  /** The offset holding the largest timestamp (ListOffsets -3, KIP-734), or null when empty. */
  async maxTimestampOffset(): Promise<TimestampAndOffset | null> {
    let best: { timestampMs: number; offset: number } | null = null;
    for (const seg of this.segments) {
      if (seg.sizeBytes === 0) continue;
      let t = await this.largestTimestampOf(seg);
      if (t.offset < 0) {
        await seg.ensureLoaded(this.config.indexIntervalBytes);
        t = { timestampMs: seg.maxTimestampSoFarMs, offset: seg.offsetOfMaxTimestampSoFar };
      }
      if (best === null || t.timestampMs > best.timestampMs) best = t;
    }
    if (best === null || best.offset < this.startOffset) return null;
    // The indexes know the batch; the record inside it is what ListOffsets reports.
    let offset = best.offset;
    try {
      const r = await this.read(best.offset, 1, Infinity, true);
      if (r.records.length > 0) offset = Math.max(await offsetOfMaxTimestamp(r.records), this.startOffset);
    } catch (err) {
      if (!(err instanceof OffsetOutOfRangeError)) throw err;
    }
    return { timestampMs: best.timestampMs, offset, leaderEpoch: this.epochCache.epochForOffset(offset) };
  }

  /** OffsetForLeaderEpoch: the end offset of `epoch` in this log. */
  endOffsetForEpoch(epoch: number): { epoch: number; endOffset: number } {
    return this.epochCache.endOffsetFor(epoch, this.nextOffsetMetadata);
  }

  // ---- start offset, truncation, retention ----

  /** DeleteRecords: moves the log start offset up to `offset` (<= high watermark). Returns the new log start. */
  deleteRecordsBefore(offset: number): Promise<number> {
    return this.lock.run(async () => {
      if (offset > this.hw) throw new OffsetOutOfRangeError(offset, this.startOffset, this.hw);
      if (offset > this.startOffset) {
        await this.advanceLogStartOffset(offset);
        await this.deleteSegmentsWhile((seg, next) => next !== undefined && next.baseOffset <= this.startOffset);
      }
      return this.startOffset;
    });
  }

  private async advanceLogStartOffset(offset: number): Promise<void> {
    this.startOffset = offset;
    if (this.hw < offset) this.hw = offset;
    if (this.recoveryPointOffset < offset) this.recoveryPointOffset = offset;
    if (this.epochCache.truncateFromStart(offset)) await this.epochCache.persist();
    if (this.producerStateLoad !== null) {
      await this.producerStateLoad;
      this.producerState.truncateHead(offset);
    }
  }

  /** Removes everything at and after `offset` (follower divergence). */
  truncateTo(offset: number): Promise<void> {
    return this.lock.run(async () => {
      if (offset < 0) throw new RangeError(`cannot truncate to negative offset ${offset}`);
      if (offset >= this.nextOffsetMetadata) {
        // As Kafka's UnifiedLog.truncateTo: the epoch cache may still end with an epoch this
        // replica began as leader and wrote nothing in. Kept, it is the last fetched epoch of
        // every fetch, and the new leader answers each with the same divergence, for ever.
        if (this.epochCache.truncateFromEnd(this.nextOffsetMetadata)) await this.epochCache.persist();
        return;
      }
      if (offset < firstOf(this.segments, this.dir).baseOffset) {
        await this.truncateFullyLocked(offset);
        return;
      }
      const doomed = this.segments.filter((s) => s.baseOffset > offset);
      this.segments = this.segments.filter((s) => s.baseOffset <= offset);
      for (const s of doomed) await s.markDeleted(0, this.onBackgroundError);
      const cutBase = await this.activeSegment.truncateTo(offset, this.config.indexIntervalBytes);
      // A cut inside a batch ends the log at that batch's base; a cut in a gap keeps `offset`.
      offset = Math.min(offset, cutBase ?? offset);
      this.nextOffsetMetadata = offset;
      // Counted once the log end moved: a flush that read the old log end before this point
      // (its run may start while the truncation awaits its files) sees a new count and keeps
      // the recovery point where the truncation put it.
      this.truncations++;
      this.startOffset = Math.min(this.startOffset, offset);
      this.hw = Math.min(this.hw, offset);
      this.recoveryPointOffset = Math.min(this.recoveryPointOffset, offset);
      if (this.epochCache.truncateFromEnd(offset)) await this.epochCache.persist();
      await this.producerState.deleteSnapshots((o) => o > offset);
      this.producerStateLoad = null;
      this.producerStateLoaded = false;
      this.producerState.reset(this.startOffset);
    });
  }

  /** Drops the whole log and restarts it empty at `offset`. */
  truncateFullyAndStartAt(offset: number): Promise<void> {
    return this.lock.run(() => this.truncateFullyLocked(offset));
  }

  private async truncateFullyLocked(offset: number): Promise<void> {
    const doomed = this.segments;
    this.segments = [];
    for (const s of doomed) await s.markDeleted(0, this.onBackgroundError);
    this.segments = [await LogSegment.create(this.dir, offset, this.pool, this.time())];
    this.nextOffsetMetadata = offset;
    this.truncations++;
    this.startOffset = offset;
    this.hw = offset;
    this.recoveryPointOffset = offset;
    this.epochCache.clear();
    await this.epochCache.persist();
    await this.producerState.deleteSnapshots(() => true);
    this.producerState.reset(offset);
    this.producerStateLoad = Promise.resolve();
    this.producerStateLoaded = true;
  }

  /**
   * Retention (Kafka's deleteOldSegments): with a delete policy, segments past retention.ms
   * (by their largest timestamp) or beyond retention.bytes; always, segments wholly below
   * the log start offset. Only segments wholly below the high watermark go. Returns the
   * number of segments deleted.
   */
  deleteOldSegments(): Promise<number> {
    return this.lock.run(async () => {
      let deleted = 0;
      const c = this.config;
      if (hasDeletePolicy(c)) {
        if (c.retentionMs >= 0) {
          const nowMs = this.time();
          deleted += await this.deleteSegmentsWhile(
            async (seg) => nowMs - (await this.largestTimestampOf(seg)).timestampMs > c.retentionMs,
          );
        }
        if (c.retentionBytes >= 0) {
          let excessBytes = this.sizeBytes - c.retentionBytes;
          deleted += await this.deleteSegmentsWhile((seg) => {
            if (excessBytes - seg.sizeBytes < 0) return false;
            excessBytes -= seg.sizeBytes;
            return true;
          });
        }
      }
      deleted += await this.deleteSegmentsWhile((seg, next) => next !== undefined && next.baseOffset <= this.startOffset);
      return deleted;
    });
  }

  private async deleteSegmentsWhile(
    predicate: (seg: LogSegment, next: LogSegment | undefined) => boolean | Promise<boolean>,
  ): Promise<number> {
    const deletable: LogSegment[] = [];
    for (const [i, seg] of this.segments.entries()) {
      const next = this.segments[i + 1];
      const upperBound = next?.baseOffset ?? this.nextOffsetMetadata;
      const lastAndEmpty = next === undefined && seg.sizeBytes === 0;
      if (this.hw >= upperBound && !lastAndEmpty && (await predicate(seg, next))) deletable.push(seg);
      else break;
    }
    if (deletable.length === 0) return 0;
    // A log always keeps one segment: roll first when every segment is going.
    if (deletable.length === this.segments.length) await this.rollLocked(this.nextOffsetMetadata);
    this.segments = this.segments.slice(deletable.length);
    for (const s of deletable) await s.markDeleted(this.config.fileDeleteDelayMs, this.onBackgroundError);
    const firstBase = firstOf(this.segments, this.dir).baseOffset;
    if (firstBase > this.startOffset) await this.advanceLogStartOffset(firstBase);
    await this.producerState.deleteSnapshots((o) => o < firstBase);
    return deletable.length;
  }

  // ---- compaction support ----

  /** Runs `fn` under the log lock, serialized with appends, truncation and retention (the cleaner's swap). */
  runLocked<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(fn);
  }

  /**
   * Replaces `old` (a contiguous run of inactive segments) by `replacement`, whose files are
   * already in place. Only from inside `runLocked`.
   */
  replaceSegmentsLocked(old: readonly LogSegment[], replacement: LogSegment): void {
    const at = this.segments.indexOf(firstOf(old, this.dir));
    this.segments = [...this.segments.slice(0, at), replacement, ...this.segments.slice(at + old.length)];
  }

  // ---- lifecycle ----

  /** Flushes everything, snapshots producer state and releases file handles. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.lock.run(async () => {
      if (this.flushTimer !== null) this.pool.clock.clearTimeout(this.flushTimer);
      await this.activeSegment.flushIndexes();
    });
    await this.flush();
    await this.flushChain;
    await this.lock.run(async () => {
      if (this.producerStateLoad !== null) {
        await this.producerStateLoad;
        this.producerState.mapEndOffset = this.nextOffsetMetadata;
        await this.producerState.takeSnapshot();
      }
      this.closed = true;
      for (const s of this.segments) s.closeHandles();
    });
  }

  /**
   * Kafka's closeHandlers: the log dir failed, so nothing is flushed or snapshotted (the disk
   * is not trusted); handles are released and every later append or read is refused. The next
   * start recovers the log from its files.
   */
  markOffline(): void {
    this.closed = true;
    if (this.flushTimer !== null) this.pool.clock.clearTimeout(this.flushTimer);
    for (const s of this.segments) s.closeHandles();
  }

  /** Closes and removes the partition directory. */
  async delete(): Promise<void> {
    await this.lock.run(async () => {
      this.closed = true;
      if (this.flushTimer !== null) this.pool.clock.clearTimeout(this.flushTimer);
      for (const s of this.segments) s.closeHandles();
      this.pool.invalidatePrefix(this.dir);
      const doomed = `${this.dir}.${this.pool.uniqueId()}-delete`;
      try {
        await this.pool.fileSystem.rename(this.dir, doomed);
        await this.pool.fileSystem.rm(doomed, { recursive: true, force: true });
      } catch (err) {
        throw toStorageIOError(err, `deleting ${this.dir}`);
      }
    });
  }

  /**
   * A segment's largest timestamp and its offset. Inactive segments answer from the last
   * time index entry; the active one has no closing entry yet, so it is loaded.
   */
  private async largestTimestampOf(seg: LogSegment): Promise<{ timestampMs: number; offset: number }> {
    if (seg === this.activeSegment) await seg.ensureLoaded(this.config.indexIntervalBytes);
    return seg.largestTimestampCheap();
  }

  private segmentIndexFor(offset: number): number {
    return floorIndex(this.segments, offset);
  }
}

function abortedTxnOf(txn: CompletedTxn): AbortedTxn {
  return { producerId: txn.producerId, firstOffset: txn.firstOffset, lastOffset: txn.lastOffset, lastStableOffset: txn.lastStableOffset };
}

/** The first of `segments`; a log (and a run of segments to replace) is never empty. */
function firstOf(segments: readonly LogSegment[], dir: string): LogSegment {
  const first = segments[0];
  if (first === undefined) throw new Error(`log ${dir} has no segment`);
  return first;
}

/** The last of `segments`: a log's active segment. */
function lastOf(segments: readonly LogSegment[], dir: string): LogSegment {
  const last = segments[segments.length - 1];
  if (last === undefined) throw new Error(`log ${dir} has no segment`);
  return last;
}

/** Index of the last segment with baseOffset <= offset, or -1. */
function floorIndex(segments: readonly LogSegment[], offset: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const seg = segments[mid];
    if (seg !== undefined && seg.baseOffset <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * Finishes or rolls back a compaction interrupted by a crash. A `.log.swap` is the commit
 * point: if present its index swaps (if any) and itself are renamed into place; without it
 * every `.swap`/`.cleaned` file is discarded.
 */
async function completeOrDiscardSwaps(fs: FileSystem, dir: string, names: string[], onError: BackgroundErrorSink): Promise<string[]> {
  const committed = new Set(names.filter((n) => n.endsWith(`${LOG_SUFFIX}.swap`)).map((n) => n.slice(0, -`${LOG_SUFFIX}.swap`.length)));
  for (const name of names.filter((n) => n.endsWith('.swap'))) {
    const finalName = name.slice(0, -'.swap'.length);
    const stem = finalName.slice(0, finalName.lastIndexOf('.'));
    if (committed.has(stem)) continue;
    await removeFile(fs, join(dir, name), onError);
  }
  for (const stem of committed) {
    for (const suffix of [INDEX_SUFFIX, TIME_INDEX_SUFFIX]) {
      const swap = join(dir, `${stem}${suffix}.swap`);
      const final = join(dir, `${stem}${suffix}`);
      try {
        await fs.rename(swap, final);
      } catch (err) {
        if (!isMissingFile(err)) onError(err, `completing the compaction swap ${swap}`);
        // Without a swapped index the old one is stale: remove it so it is rebuilt.
        await removeFile(fs, final, onError);
      }
    }
    await fs.rename(join(dir, `${stem}${LOG_SUFFIX}.swap`), join(dir, `${stem}${LOG_SUFFIX}`));
  }
  return fs.readdir(dir);
}
