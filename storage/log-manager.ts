// All partition logs of one or more log directories (Kafka's LogManager): loads them at
// startup (recovering after an unclean stop), creates and deletes logs, runs retention
// every log.retention.check.interval.ms and the cleaner, and keeps the checkpoint files
// and the clean-shutdown marker.

import { join } from 'node:path';
import { isCompacted } from './config.ts';
import type { LogConfig } from './config.ts';
import {
  checkpointFileBytes,
  createDirectory,
  offsetCheckpointLines,
  parseTopicPartition,
  readOffsetCheckpoint,
  writeFilesAtomically,
} from './checkpoint.ts';
import { LogCleaner } from './cleaner.ts';
import { type Clock, repeat } from './clock.ts';
import type { CleanerOptions } from './cleaner.ts';
import { type BackgroundErrorSink, StorageIOError, removeFile, toStorageIOError } from './errors.ts';
import { FileHandlePool } from './file-pool.ts';
import type { FileSystem } from './file-system.ts';
import { LogDirFailureChannel, isLogDirFailure } from './log-dir-failure.ts';
import { PartitionLog } from './log.ts';

export const CLEAN_SHUTDOWN_FILE = '.kafka_cleanshutdown';
export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint';
export const LOG_START_OFFSET_CHECKPOINT = 'log-start-offset-checkpoint';
export const REPLICATION_OFFSET_CHECKPOINT = 'replication-offset-checkpoint';
export const CLEANER_OFFSET_CHECKPOINT = 'cleaner-offset-checkpoint';

/**
 * The periodic work of a LogManager, each interval a broker config (no defaults here: the
 * broker passes its effective values, Kafka's defaults unless set).
 */
export interface LogManagerTasks {
  /** log.retention.check.interval.ms */
  retentionCheckIntervalMs: number;
  /** log.flush.offset.checkpoint.interval.ms */
  flushOffsetCheckpointIntervalMs: number;
  /** log.flush.start.offset.checkpoint.interval.ms */
  flushStartOffsetCheckpointIntervalMs: number;
  /** replica.high.watermark.checkpoint.interval.ms */
  highWatermarkCheckpointIntervalMs: number;
  /** log.cleaner.enable */
  cleanerEnable: boolean;
  /** log.cleaner.backoff.ms */
  cleanerBackoffMs: number;
}

/** Sluice: partition logs opened (and closed) at once at start-up and shutdown, a file-system latency bound. */
export const DEFAULT_LOAD_CONCURRENCY = 8;

export interface LogManagerOptions {
  /** log.dirs */
  logDirs: string[];
  /** The broker-level topic config (log.retention.ms etc. already mapped): every log's base. */
  defaultConfig: LogConfig;
  /** A topic's own config over defaultConfig, consulted when a log is loaded or created. */
  topicConfig?: (topic: string) => Partial<LogConfig> | undefined;
  /** The periodic tasks to run; without them nothing runs in the background (tests drive it by hand). */
  tasks?: LogManagerTasks;
  cleaner?: Partial<Omit<CleanerOptions, 'onError' | 'clock'>>;
  /** Upper bound on open file descriptors held by the handle cache (DEFAULT_MAX_OPEN_FILES). */
  maxOpenFiles?: number;
  /**
   * unsafe.bypass.fsync: no fsync of any log, checkpoint or directory (FileHandlePool's
   * unsafeBypassFsync says what that gives up). Only for log dirs that do not outlive the process.
   */
  unsafeBypassFsync?: boolean;
  /** Where the log dirs are (nodeFileSystem, the real disk, by default). */
  fileSystem?: FileSystem;
  /** How many partition logs load at once at startup (DEFAULT_LOAD_CONCURRENCY). */
  loadConcurrency?: number;
  /**
   * Topics whose partition dirs in log.dirs belong to another owner and are never loaded,
   * retained or cleaned here (the Raft metadata log, as Kafka's LogManager skips
   * `__cluster_metadata`).
   */
  skipTopics?: readonly string[];
  /** The time and timers of the logs and of the periodic tasks (systemClock, the real ones, by default). */
  clock?: Clock;
  /**
   * Where a background task (retention, checkpoints, the cleaner, flushes, deferred
   * deletions) reports a failure; storage cannot reach the broker's logger, so the broker
   * passes its guard's sink. The task fails alone and runs again on its next tick.
   */
  onBackgroundError: BackgroundErrorSink;
  /**
   * Where a file-system failure in a log dir marks the dir offline (the broker's one channel,
   * shared with the replication layer); a channel of its own when absent.
   */
  logDirFailureChannel?: LogDirFailureChannel;
}

/** What start-up found and repaired in the log dirs, for the one line the broker prints. */
export interface RecoverySummary {
  /** Partition logs loaded. */
  partitions: number;
  /** Of those, logs validated from their recovery point because the last stop was unclean. */
  recoveredUnclean: number;
  /** Bytes cut off torn or invalid tails. */
  truncatedBytes: number;
  /** Directories removed: renamed for deletion (`-delete`) before a crash, or stray logs. */
  removedDirs: number;
  /** Temp files of interrupted checkpoint writes removed. */
  removedTmpFiles: number;
}

interface LoadedLog {
  topic: string;
  partition: number;
  logDir: string;
  log: PartitionLog;
}

export class LogManager {
  private readonly logs = new Map<string, LoadedLog>();
  /** Logs per topic, so a topic's config change touches its logs only. */
  private readonly logsByTopic = new Map<string, Set<LoadedLog>>();
  /** Logs per log dir, for placing new logs without scanning every log. */
  private readonly logCounts = new Map<string, number>();
  readonly recovery: RecoverySummary = { partitions: 0, recoveredUnclean: 0, truncatedBytes: 0, removedDirs: 0, removedTmpFiles: 0 };
  /** Stops each periodic task. */
  private readonly timers: (() => void)[] = [];
  private readonly creating = new Map<string, Promise<PartitionLog>>();
  readonly pool: FileHandlePool;
  readonly cleaner: LogCleaner;
  private shuttingDown = false;
  /** Whether the last stop was clean, per log dir (for tests and metrics). */
  readonly hadCleanShutdown = new Map<string, boolean>();
  /**
   * The broker epoch the clean-shutdown markers hold (Kafka's
   * readBrokerEpochFromCleanShutdownFiles): the highest of them, -1n when no dir has a
   * readable one. The broker sends it as BrokerRegistration's PreviousBrokerEpoch, by which the
   * controller tells a clean restart from an unclean one (KIP-966).
   */
  previousBrokerEpoch = -1n;
  /**
   * What each checkpoint file (by path) holds, as far as this manager knows: read at start-up
   * (a missing file holds no entries) or last written. Absent when unknown (unreadable, or a
   * write failed), which makes the next checkpoint write it.
   */
  private readonly checkpointsOnDisk = new Map<string, ReadonlyMap<string, number>>();
  /** Checkpoint passes run one at a time, so `checkpointsOnDisk` is what each pass compares against. */
  private checkpointing: Promise<void> = Promise.resolve();
  readonly logDirFailures: LogDirFailureChannel;

  private constructor(readonly options: LogManagerOptions) {
    this.pool = new FileHandlePool({
      maxOpenFiles: options.maxOpenFiles,
      onError: this.backgroundErrorSink,
      unsafeBypassFsync: options.unsafeBypassFsync,
      fileSystem: options.fileSystem,
      clock: options.clock,
    });
    this.cleaner = new LogCleaner({ ...options.cleaner, clock: this.pool.clock, onError: this.backgroundErrorSink });
    for (const dir of options.logDirs) this.logCounts.set(dir, 0);
    this.logDirFailures = options.logDirFailureChannel ?? new LogDirFailureChannel();
    this.logDirFailures.onOfflineLogDir((dir) => this.handleLogDirFailure(dir));
  }

  static async startup(options: LogManagerOptions): Promise<LogManager> {
    const manager = new LogManager(options);
    for (const dir of options.logDirs) await manager.loadLogDir(dir);
    // Only what start-up changed is written (recovery after an unclean stop, stray logs):
    // after a clean stop the files already hold these offsets.
    await manager.checkpointAll();
    if (options.tasks !== undefined) manager.scheduleTasks(options.tasks);
    return manager;
  }

  private async loadLogDir(logDir: string): Promise<void> {
    try {
      await createDirectory(this.pool.fileSystem, logDir, !this.pool.unsafeBypassFsync);
    } catch (err) {
      throw toStorageIOError(err, `creating log dir ${logDir}`);
    }
    const marker = join(logDir, CLEAN_SHUTDOWN_FILE);
    let damaged = false;
    const readOrEmpty = async (name: string): Promise<Map<string, number>> => {
      try {
        const offsets = await readOffsetCheckpoint(this.pool.fileSystem, join(logDir, name));
        this.checkpointsOnDisk.set(join(logDir, name), new Map(offsets));
        return offsets;
      } catch (err) {
        if ((err as { code?: string }).code !== 'EINVAL') throw err;
        // Unreadable: every log is recovered as after an unclean stop, from its start.
        damaged = true;
        this.reportBackgroundError(err, `reading ${name} in ${logDir} (every log is recovered from its start)`);
        return new Map();
      }
    };
    // Independent reads: issued at once.
    const [clean, recoveryPoints, startOffsets, highWatermarks, cleanerOffsets, names] = await Promise.all([
      this.pool.fileSystem.stat(marker).then(
        () => true,
        () => false,
      ),
      readOrEmpty(RECOVERY_POINT_CHECKPOINT),
      readOrEmpty(LOG_START_OFFSET_CHECKPOINT),
      readOrEmpty(REPLICATION_OFFSET_CHECKPOINT),
      readOrEmpty(CLEANER_OFFSET_CHECKPOINT),
      this.pool.fileSystem.readdir(logDir, { withFileTypes: true }),
    ]);
    this.hadCleanShutdown.set(logDir, clean);
    if (clean) {
      const epoch = await readCleanShutdownEpoch(this.pool.fileSystem, marker);
      if (epoch > this.previousBrokerEpoch) this.previousBrokerEpoch = epoch;
    }
    const loadClean = clean && !damaged;
    const toLoad: { name: string; topic: string; partition: number }[] = [];
    for (const entry of names) {
      if (entry.isFile() && entry.name.endsWith('.tmp')) {
        // A checkpoint write the crash interrupted; the previous file is intact.
        await removeFile(this.pool.fileSystem, join(logDir, entry.name), this.backgroundErrorSink);
        this.recovery.removedTmpFiles++;
        continue;
      }
      if (!entry.isDirectory()) continue;
      if (entry.name.endsWith('-delete')) {
        await this.pool.fileSystem.rm(join(logDir, entry.name), { recursive: true, force: true });
        this.recovery.removedDirs++;
        continue;
      }
      const tp = parseTopicPartition(entry.name);
      if (tp !== null && !this.options.skipTopics?.includes(tp.topic)) toLoad.push({ name: entry.name, ...tp });
    }
    await forEachConcurrently(toLoad, this.options.loadConcurrency ?? DEFAULT_LOAD_CONCURRENCY, async ({ name, topic, partition }) => {
      const log = await PartitionLog.open({
        dir: join(logDir, name),
        config: this.configFor(topic),
        pool: this.pool,
        // Without a checkpoint entry the whole log is suspect after an unclean stop.
        recoveryPoint: recoveryPoints.get(name),
        logStartOffset: startOffsets.get(name),
        highWatermark: highWatermarks.get(name),
        cleanShutdown: loadClean,
        onBackgroundError: this.logDirSink(logDir),
      });
      this.register(topic, partition, logDir, log);
      this.recovery.partitions++;
      if (!loadClean) this.recovery.recoveredUnclean++;
      this.recovery.truncatedBytes += log.truncatedOnRecoveryBytes;
      const firstDirty = cleanerOffsets.get(name);
      if (firstDirty !== undefined) this.cleaner.setFirstDirtyOffset(log, firstDirty);
    });
    // Left in place, the marker would make the next start after a crash trust it: reported.
    // Its removal is made durable before any append can follow: a marker that came back
    // after an OS crash would have the next start trust checkpoints older than the logs.
    if (clean) {
      await removeFile(this.pool.fileSystem, marker, this.backgroundErrorSink);
      try {
        await this.pool.syncDir(logDir);
      } catch (err) {
        throw toStorageIOError(err, `fsync ${logDir} after removing ${CLEAN_SHUTDOWN_FILE}`);
      }
    }
  }

  private configFor(topic: string, overrides?: Partial<LogConfig>): LogConfig {
    // A caller that passes the topic's config spares the lookup (one per partition created).
    return { ...this.options.defaultConfig, ...(overrides ?? this.options.topicConfig?.(topic)) };
  }

  private register(topic: string, partition: number, logDir: string, log: PartitionLog): void {
    const loaded: LoadedLog = { topic, partition, logDir, log };
    this.logs.set(`${topic}-${partition}`, loaded);
    let ofTopic = this.logsByTopic.get(topic);
    if (ofTopic === undefined) {
      ofTopic = new Set();
      this.logsByTopic.set(topic, ofTopic);
    }
    ofTopic.add(loaded);
    this.logCounts.set(logDir, (this.logCounts.get(logDir) ?? 0) + 1);
    if (isCompacted(log.config)) this.cleaner.register(log);
  }

  private unregister(key: string, loaded: LoadedLog): void {
    this.logs.delete(key);
    const ofTopic = this.logsByTopic.get(loaded.topic);
    ofTopic?.delete(loaded);
    if (ofTopic?.size === 0) this.logsByTopic.delete(loaded.topic);
    this.logCounts.set(loaded.logDir, (this.logCounts.get(loaded.logDir) ?? 1) - 1);
  }

  getLog(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(`${topic}-${partition}`)?.log;
  }

  /** The log dir (as configured) holding the partition's log; undefined when none is loaded. */
  logDirOf(topic: string, partition: number): string | undefined {
    return this.logs.get(`${topic}-${partition}`)?.logDir;
  }

  /** All loaded logs with their topic and partition. */
  allLogs(): { topic: string; partition: number; log: PartitionLog }[] {
    return [...this.logs.values()].map(({ topic, partition, log }) => ({ topic, partition, log }));
  }

  /** Returns the log, creating an empty one (in the log dir with the fewest logs) if needed. */
  getOrCreateLog(topic: string, partition: number, config?: Partial<LogConfig>): Promise<PartitionLog> {
    const key = `${topic}-${partition}`;
    const existing = this.logs.get(key);
    if (existing !== undefined) return Promise.resolve(existing.log);
    const pending = this.creating.get(key);
    if (pending !== undefined) return pending;
    const created = (async () => {
      const logDir = this.leastLoadedDir(topic, partition);
      let log: PartitionLog;
      try {
        log = await PartitionLog.open({
          dir: join(logDir, key),
          config: this.configFor(topic, config),
          pool: this.pool,
          onBackgroundError: this.logDirSink(logDir),
        });
      } catch (err) {
        this.maybeFailLogDir(logDir, err, `creating the log of ${key}`);
        throw err;
      }
      if (this.logDirFailures.isOffline(logDir)) {
        // The dir failed while the log was being created.
        log.markOffline();
        throw new StorageIOError(`cannot create the log of ${key}: log dir ${logDir} is offline`, 'EIO');
      }
      this.register(topic, partition, logDir, log);
      return log;
    })().finally(() => this.creating.delete(key));
    this.creating.set(key, created);
    return created;
  }

  /** Applies a changed config to one log (and its cleaner registration). */
  updateLogConfig(topic: string, partition: number, config: Partial<LogConfig>): void {
    const l = this.logs.get(`${topic}-${partition}`);
    if (l === undefined) return;
    l.log.updateConfig(config);
    if (isCompacted(l.log.config)) this.cleaner.register(l.log);
    else this.cleaner.unregister(l.log);
  }

  /** Applies changed topic configs to the topic's open logs. */
  updateTopicConfig(topic: string, config: Partial<LogConfig>): void {
    for (const l of this.logsByTopic.get(topic) ?? []) {
      l.log.updateConfig(config);
      if (isCompacted(l.log.config)) this.cleaner.register(l.log);
      else this.cleaner.unregister(l.log);
    }
  }

  async deleteLog(topic: string, partition: number): Promise<boolean> {
    const key = `${topic}-${partition}`;
    const entry = this.logs.get(key);
    if (entry === undefined) return false;
    this.unregister(key, entry);
    this.cleaner.unregister(entry.log);
    await this.cleaner.awaitIdle(entry.log);
    await entry.log.delete();
    return true;
  }

  private leastLoadedDir(topic: string, partition: number): string {
    let best: string | undefined;
    let bestCount = Infinity;
    for (const dir of this.options.logDirs) {
      if (this.logDirFailures.isOffline(dir)) continue;
      const count = this.logCounts.get(dir) ?? 0;
      if (count < bestCount) {
        best = dir;
        bestCount = count;
      }
    }
    if (best === undefined) {
      if (this.options.logDirs.length === 0) throw new Error('no log dirs configured');
      // Kafka's message when every log dir has failed.
      throw new StorageIOError(
        `Can not create log for ${topic}-${partition} because log directories ${this.options.logDirs.join(',')} are offline`,
        'EIO',
      );
    }
    return best;
  }

  /**
   * One retention pass over every log. Returns the number of segments deleted. A log whose
   * retention fails is reported and skipped: the others still get theirs.
   */
  async runRetention(): Promise<number> {
    let deleted = 0;
    for (const { topic, partition, logDir, log } of [...this.logs.values()]) {
      if (log.isClosed) continue;
      try {
        deleted += await log.deleteOldSegments();
      } catch (err) {
        if (log.isClosed) continue;
        this.reportBackgroundError(err, `retention of ${topic}-${partition}`);
        this.maybeFailLogDir(logDir, err, `retention of ${topic}-${partition}`);
      }
    }
    return deleted;
  }

  private readonly backgroundErrorSink = (err: unknown, what: string): void => this.reportBackgroundError(err, what);

  private reportBackgroundError(err: unknown, what: string): void {
    try {
      this.options.onBackgroundError(err, what);
    } catch {
      // A sink that throws has nowhere left to report to.
    }
  }

  /** The background sink of the logs in `logDir`: a file-system failure also takes the dir offline. */
  private logDirSink(logDir: string): BackgroundErrorSink {
    return (err, what) => {
      this.reportBackgroundError(err, what);
      this.maybeFailLogDir(logDir, err, what);
    };
  }

  /** Marks `logDir` offline when `err` is a file-system failure; returns whether it was one. */
  private maybeFailLogDir(logDir: string, err: unknown, what: string): boolean {
    if (!isLogDirFailure(err)) return false;
    this.logDirFailures.maybeAddOfflineLogDir(logDir, err, what);
    return true;
  }

  /**
   * A failure met by an operation on a partition's log (an append, a read, a truncation):
   * when it is the file system's, the log's dir goes offline (Kafka's maybeHandleIOException).
   */
  handleLogError(topic: string, partition: number, err: unknown, what: string): void {
    const loaded = this.logs.get(`${topic}-${partition}`);
    if (loaded !== undefined) this.maybeFailLogDir(loaded.logDir, err, what);
  }

  isLogDirOnline(logDir: string): boolean {
    return !this.logDirFailures.isOffline(logDir);
  }

  /**
   * Kafka's LogManager.handleLogDirFailure: the dir's logs stop being served, checkpointed,
   * retained and cleaned; their file handles are closed without writing anything. Kafka halts
   * the broker when no log dir is left; here the node stays up (serving what the failed dirs
   * do not hold: groups on other nodes' partitions, metadata, the controller) and the
   * controller moves leadership away from it.
   */
  private handleLogDirFailure(logDir: string): void {
    for (const [key, loaded] of [...this.logs]) {
      if (loaded.logDir !== logDir) continue;
      this.unregister(key, loaded);
      this.cleaner.unregister(loaded.log);
      loaded.log.markOffline();
    }
  }

  /**
   * Deletes the logs `keep` rejects (Kafka's stray logs: partitions of topics deleted while
   * this node was down, or reassigned away). Returns how many were removed.
   */
  async removeStrayLogs(keep: (topic: string, partition: number) => boolean): Promise<number> {
    let removed = 0;
    for (const { topic, partition } of [...this.logs.values()]) {
      if (keep(topic, partition)) continue;
      if (await this.deleteLog(topic, partition)) removed++;
    }
    this.recovery.removedDirs += removed;
    return removed;
  }

  /**
   * Writes the recovery point, log start offset, high watermark and cleaner checkpoints that
   * changed since they were last written (or read at start-up).
   */
  checkpointAll(): Promise<void> {
    const run = async (): Promise<void> => {
      let failure: unknown;
      for (const dir of this.options.logDirs) {
        if (this.logDirFailures.isOffline(dir)) continue;
        try {
          await this.checkpointDir(dir);
        } catch (err) {
          // A dir that failed takes itself offline; the other dirs still get their checkpoints.
          if (!this.maybeFailLogDir(dir, err, `writing the checkpoints in ${dir}`)) failure ??= err;
        }
      }
      if (failure !== undefined) throw failure;
    };
    const pass = this.checkpointing.then(run, run);
    this.checkpointing = pass.catch(() => undefined);
    return pass;
  }

  /** Only from inside checkpointAll (one pass at a time). */
  private async checkpointDir(logDir: string): Promise<void> {
    const recovery = new Map<string, number>();
    const start = new Map<string, number>();
    const hw = new Map<string, number>();
    const cleaned = new Map<string, number>();
    for (const [key, l] of this.logs) {
      if (l.logDir !== logDir) continue;
      recovery.set(key, l.log.recoveryPoint);
      // As Kafka: only a log start past the first segment's base needs remembering; without
      // an entry a log starts at its first segment when it loads.
      if (l.log.logStartOffset > (l.log.allSegments[0]?.baseOffset ?? 0)) start.set(key, l.log.logStartOffset);
      hw.set(key, l.log.highWatermark);
      const firstDirty = this.cleaner.firstDirtyOffset(l.log);
      if (firstDirty !== undefined) cleaned.set(key, firstDirty);
    }
    const changed = (
      [
        [RECOVERY_POINT_CHECKPOINT, recovery],
        [LOG_START_OFFSET_CHECKPOINT, start],
        [REPLICATION_OFFSET_CHECKPOINT, hw],
        [CLEANER_OFFSET_CHECKPOINT, cleaned],
      ] as const
    )
      .map(([name, offsets]) => ({ path: join(logDir, name), offsets }))
      .filter(({ path, offsets }) => !sameOffsets(this.checkpointsOnDisk.get(path), offsets));
    if (changed.length === 0) return;
    for (const { path } of changed) this.checkpointsOnDisk.delete(path);
    await writeFilesAtomically(
      this.pool,
      logDir,
      changed.map(({ path, offsets }) => ({ path, data: checkpointFileBytes(offsetCheckpointLines(offsets)) })),
      !this.pool.unsafeBypassFsync,
    );
    for (const { path, offsets } of changed) this.checkpointsOnDisk.set(path, offsets);
  }

  private scheduleTasks(tasks: LogManagerTasks): void {
    const every = (ms: number, what: string, task: () => Promise<unknown>): void => {
      let running = false;
      const stop = repeat(this.pool.clock, ms, () => {
        if (running || this.shuttingDown) return;
        running = true;
        let run: Promise<unknown>;
        try {
          run = task();
        } catch (err) {
          run = Promise.reject(err);
        }
        run
          .catch((err: unknown) => this.reportBackgroundError(err, what))
          .finally(() => {
            running = false;
          });
      });
      this.timers.push(stop);
    };
    every(tasks.retentionCheckIntervalMs, 'log retention', () => this.runRetention());
    const checkpointMs = Math.min(
      tasks.flushOffsetCheckpointIntervalMs,
      tasks.flushStartOffsetCheckpointIntervalMs,
      tasks.highWatermarkCheckpointIntervalMs,
    );
    every(checkpointMs, 'offset checkpoints', () => this.checkpointAll());
    if (tasks.cleanerEnable) this.cleaner.start(tasks.cleanerBackoffMs);
  }

  /**
   * Stops tasks, closes every log (flush + producer snapshot), checkpoints, marks a clean
   * shutdown with the broker epoch of the registration that ends (-1n: none), as Kafka's
   * CleanShutdownFileHandler writes it.
   */
  async shutdown(brokerEpoch = -1n): Promise<void> {
    this.shuttingDown = true;
    for (const stop of this.timers) stop();
    await this.cleaner.stop();
    await forEachConcurrently([...this.logs.values()], this.options.loadConcurrency ?? DEFAULT_LOAD_CONCURRENCY, (l) => l.log.close());
    // The checkpoints are durable before the marker that makes the next start trust them.
    await this.checkpointAll();
    for (const dir of this.options.logDirs) {
      // An offline dir is recovered at the next start as after a crash: it gets no marker.
      if (this.logDirFailures.isOffline(dir)) continue;
      try {
        await this.pool.fileSystem.writeFile(join(dir, CLEAN_SHUTDOWN_FILE), cleanShutdownContent(brokerEpoch));
        await this.pool.syncDir(dir);
      } catch (err) {
        throw toStorageIOError(err, `writing ${CLEAN_SHUTDOWN_FILE} in ${dir}`);
      }
    }
    await this.pool.closeAll();
  }
}

/** Kafka's clean-shutdown file: JSON with its format version and the broker epoch. */
function cleanShutdownContent(brokerEpoch: bigint): string {
  return `{"version":0,"brokerEpoch":${brokerEpoch}}`;
}

/** The broker epoch of a clean-shutdown file; -1n for an empty, unreadable or unknown one, as Kafka reads it. */
async function readCleanShutdownEpoch(fileSystem: FileSystem, path: string): Promise<bigint> {
  try {
    const match = /^\{"version":0,"brokerEpoch":(-?\d{1,19})\}$/.exec((await fileSystem.readFile(path, 'utf8')).trim());
    return match === null ? -1n : BigInt(match[1]!);
  } catch {
    return -1n;
  }
}

/** Whether a checkpoint file known to hold `onDisk` already holds `offsets`. */
function sameOffsets(onDisk: ReadonlyMap<string, number> | undefined, offsets: ReadonlyMap<string, number>): boolean {
  if (onDisk === undefined || onDisk.size !== offsets.size) return false;
  for (const [key, offset] of offsets) if (onDisk.get(key) !== offset) return false;
  return true;
}

/** Runs `task` over `items` with at most `concurrency` in flight (file system latency bound). */
async function forEachConcurrently<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = items[Symbol.iterator]();
  const worker = async (): Promise<void> => {
    // One shared iterator: each item goes to exactly one worker.
    for (let next = queue.next(); !next.done; next = queue.next()) await task(next.value);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
