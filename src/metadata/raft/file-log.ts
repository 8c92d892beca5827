// The Raft log on disk: `__cluster_metadata-0` is a PartitionLog of the storage engine (v2
// batches whose partitionLeaderEpoch is the Raft epoch) plus snapshot files
// `<endOffset:20>-<epoch:10>.checkpoint` beside it, as in Kafka's KafkaMetadataLog.
//
// Raft decisions need the log synchronously, so the batches since the latest snapshot are
// mirrored in memory (snapshots every metadata.log.max.record.bytes.between.snapshots
// bound that mirror); file writes are queued in order and `flush()` waits for them.

import { join } from 'node:path';
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { type BackgroundErrorSink, removeFile } from '../../../storage/errors.ts';
import { FileHandlePool } from '../../../storage/file-pool.ts';
import type { FileSystem } from '../../../storage/file-system.ts';
import { PartitionLog } from '../../../storage/log.ts';
import { writeFileAtomically } from '../../../storage/checkpoint.ts';
import type { ControlRecordType } from '../../../protocol/records/index.ts';
import { logConfigOf } from '../../config/topic-config.ts';
import type { Clock } from '../../runtime/clock.ts';
import { MemoryRaftLog, decodeRaftBatches, encodeRaftBatch, type RaftLog } from './log.ts';
import type { OffsetAndEpoch, RaftBatch, SnapshotId } from './types.ts';
import { lastOffsetOf } from './types.ts';

export const METADATA_PARTITION_DIR = `${METADATA_TOPIC}-0`;
const SNAPSHOT_SUFFIX = '.checkpoint';
const READ_CHUNK_BYTES = 4 * 1024 * 1024;

export function snapshotFileName(id: SnapshotId): string {
  return `${String(id.endOffset).padStart(20, '0')}-${String(id.epoch).padStart(10, '0')}${SNAPSHOT_SUFFIX}`;
}

function parseSnapshotFileName(name: string): SnapshotId | null {
  const m = /^(\d{20})-(\d{10})\.checkpoint$/.exec(name);
  return m === null ? null : { endOffset: Number(m[1]), epoch: Number(m[2]) };
}

export interface FileRaftLogOptions {
  /** The `__cluster_metadata-0` directory. */
  dir: string;
  /** metadata.log.segment.bytes (Kafka's segment.bytes default when absent) */
  segmentBytes?: number;
  /** Where failures of the storage engine's background work and of snapshot clean-up go. */
  onBackgroundError: BackgroundErrorSink;
  /** unsafe.bypass.fsync: the log, its snapshots and its directory are never fsynced (see FileHandlePool). */
  unsafeBypassFsync?: boolean;
  /** Where the directory is (nodeFileSystem, the real disk, by default). */
  fileSystem?: FileSystem;
  /** The time of the log's segment timestamps and deferred deletions (the system clock by default). */
  clock?: Clock;
}

export class FileRaftLog implements RaftLog {
  private readonly mem = new MemoryRaftLog();
  private writes: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  private snapshotFiles: SnapshotId[] = [];

  private constructor(
    private readonly dir: string,
    private readonly log: PartitionLog,
    private readonly onBackgroundError: BackgroundErrorSink,
  ) {}

  static async open(options: FileRaftLogOptions): Promise<FileRaftLog> {
    const { segmentBytes } = options;
    const log = await PartitionLog.open({
      dir: options.dir,
      pool: new FileHandlePool({
        onError: options.onBackgroundError,
        unsafeBypassFsync: options.unsafeBypassFsync,
        fileSystem: options.fileSystem,
        clock: options.clock,
      }),
      // A topic's defaults, but for the segment size metadata.log.segment.bytes sets.
      config: logConfigOf((name) => (name === 'segment.bytes' && segmentBytes !== undefined ? String(segmentBytes) : undefined)),
      // The metadata log is small: validate all of it at every start rather than trust a
      // recovery point nobody checkpoints for it. That rebuilds its leader epochs from the
      // batches each time, so they need no checkpoint file (the Raft client keeps its own).
      cleanShutdown: false,
      recoveryPoint: 0,
      persistLeaderEpochs: false,
      onBackgroundError: options.onBackgroundError,
    });
    const raftLog = new FileRaftLog(options.dir, log, options.onBackgroundError);
    await raftLog.load();
    return raftLog;
  }

  private async load(): Promise<void> {
    const fs = this.log.pool.fileSystem;
    const names = await fs.readdir(this.dir);
    for (const name of names) {
      const id = parseSnapshotFileName(name);
      if (id !== null) this.snapshotFiles.push(id);
      if (name.endsWith(`${SNAPSHOT_SUFFIX}.tmp`)) await removeFile(fs, join(this.dir, name), this.onBackgroundError);
    }
    this.snapshotFiles.sort((a, b) => a.endOffset - b.endOffset);
    const latest = this.snapshotFiles[this.snapshotFiles.length - 1];
    let from = this.log.logStartOffset;
    if (latest !== undefined) {
      this.mem.installSnapshot(latest, await fs.readFile(join(this.dir, snapshotFileName(latest))));
      if (this.log.logEndOffset < latest.endOffset || this.log.logStartOffset > latest.endOffset) {
        await this.log.truncateFullyAndStartAt(latest.endOffset);
      }
      from = latest.endOffset;
    } else if (this.log.logStartOffset > 0) {
      throw new Error(`metadata log starts at ${this.log.logStartOffset} but there is no snapshot`);
    } else {
      this.mem.installSnapshot({ endOffset: 0, epoch: 0 }, Buffer.alloc(0));
    }
    while (from < this.log.logEndOffset) {
      const read = await this.log.read(from, READ_CHUNK_BYTES);
      const batches = decodeRaftBatches(read.records).filter((b) => lastOffsetOf(b) >= from);
      if (batches.length === 0) break;
      this.mem.appendAsFollower(batches);
      from = this.mem.endOffset;
    }
    this.log.highWatermark = this.log.logEndOffset;
  }

  /**
   * Queues a file write. The first that fails stops the ones after it (the files would no
   * longer match the log in memory); flush() throws it from then on, and it is reported
   * here, as the Raft client waits on flushes without a logger of its own.
   */
  private enqueue(op: () => Promise<unknown>): void {
    this.writes = this.writes.then(async () => {
      if (this.failure !== null) return;
      try {
        await op();
      } catch (err) {
        this.failure = err instanceof Error ? err : new Error(String(err));
        this.onBackgroundError(err, `writing the metadata log in ${this.dir} (later writes are held back)`);
      }
    });
  }

  get startOffset(): number {
    return this.mem.startOffset;
  }

  get endOffset(): number {
    return this.mem.endOffset;
  }

  lastFetchedEpoch(): number {
    return this.mem.lastFetchedEpoch();
  }

  appendAsLeader(records: Buffer[], epoch: number, control: boolean, appendTimeMs: number, controlType?: ControlRecordType): RaftBatch {
    const batch = this.mem.appendAsLeader(records, epoch, control, appendTimeMs, controlType);
    const bytes = encodeRaftBatch(batch);
    this.enqueue(() => this.log.appendAsFollower(bytes));
    return batch;
  }

  appendAsFollower(batches: RaftBatch[]): void {
    this.mem.appendAsFollower(batches);
    const bytes = Buffer.concat(batches.map((b) => encodeRaftBatch(b)));
    this.enqueue(() => this.log.appendAsFollower(bytes));
  }

  read(fromOffset: number, maxBytes: number): RaftBatch[] {
    return this.mem.read(fromOffset, maxBytes);
  }

  truncateTo(offset: number): void {
    this.mem.truncateTo(offset);
    this.enqueue(() => this.log.truncateTo(offset));
  }

  endOffsetForEpoch(epoch: number): OffsetAndEpoch {
    return this.mem.endOffsetForEpoch(epoch);
  }

  epochOfOffset(offset: number): number {
    return this.mem.epochOfOffset(offset);
  }

  latestSnapshotId(): SnapshotId | null {
    const id = this.mem.latestSnapshotId();
    return id !== null && id.endOffset > 0 ? id : null;
  }

  readSnapshot(id: SnapshotId): Buffer | null {
    return this.mem.readSnapshot(id);
  }

  writeSnapshot(id: SnapshotId, content: Buffer): void {
    this.mem.writeSnapshot(id, content);
    this.enqueue(async () => {
      await writeFileAtomically(this.log.pool, join(this.dir, snapshotFileName(id)), content, !this.log.pool.unsafeBypassFsync);
      await this.dropOlderSnapshots(id);
      // Segments wholly below the snapshot are no longer needed for replay.
      this.log.highWatermark = Math.max(this.log.highWatermark, Math.min(id.endOffset, this.log.logEndOffset));
      if (id.endOffset <= this.log.logEndOffset) await this.log.deleteRecordsBefore(id.endOffset);
    });
  }

  installSnapshot(id: SnapshotId, content: Buffer): void {
    this.mem.installSnapshot(id, content);
    this.enqueue(async () => {
      await writeFileAtomically(this.log.pool, join(this.dir, snapshotFileName(id)), content, !this.log.pool.unsafeBypassFsync);
      await this.dropOlderSnapshots(id);
      await this.log.truncateFullyAndStartAt(id.endOffset);
    });
  }

  private async dropOlderSnapshots(keep: SnapshotId): Promise<void> {
    for (const old of this.snapshotFiles) {
      if (old.endOffset !== keep.endOffset || old.epoch !== keep.epoch) {
        await removeFile(this.log.pool.fileSystem, join(this.dir, snapshotFileName(old)), this.onBackgroundError);
      }
    }
    this.snapshotFiles = [keep];
  }

  async flush(): Promise<void> {
    await this.writes;
    if (this.failure !== null) throw this.failure;
    // A flushed record is one Raft may count toward a majority (the leader's own copy, a
    // follower's next fetch offset): it must survive an OS crash, so it is fsynced, as
    // Kafka's KafkaRaftClient does after every append. Page cache alone would let a crashed
    // voter forget a committed record and a shorter log win the next election.
    if (!this.log.pool.unsafeBypassFsync) await this.log.flush();
  }

  async close(): Promise<void> {
    await this.writes;
    await this.log.close();
  }
}
