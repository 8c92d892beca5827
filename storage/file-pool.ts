// A bounded cache of open file handles, so thousands of idle partitions do not each hold
// descriptors. Handles are leased: an evicted or invalidated handle is closed only once
// every lease on it has been released, so an in-flight read keeps reading the file it
// started on even if compaction swapped the path meanwhile.
//
// Segment appends write through the pool. A small write into the page cache costs the event
// loop less when made in place than when handed to libuv's thread pool (16 KiB: about 11 us
// in place against 25-30 us of event-loop time for the async write, whose completion also
// has to wake the loop), so writes up to `syncWriteMaxBytes` are made in place, as Kafka's
// request threads write their FileChannel. A large write holds the loop longer in place than
// the hand-over does (a 1 MiB copy into the page cache about 0.3 ms, longer once the kernel
// throttles dirty pages), and Kafka makes such writes on one of its several request threads
// while the others serve other connections; here the thread pool copies them beside the event
// loop. The default, 256 KiB, keeps the batches clients commonly send (up to a few hundred KiB)
// in place, and sends librdkafka's batches of up to 1 MB to the pool: under one partition
// saturated by librdkafka producers, the produce latency of the other partitions' clients fell
// from 4.8-5.5 ms p50 with a 1 MiB bound to 3.1-3.5 ms, while 64 KiB, which sent the 64 KiB
// batches of the broker bench to the pool, cost that bench 10-20 % of its throughput.
//
// Reads are made the same way, up to `syncReadMaxBytes` in place. A fetch reads each of its
// partitions with a read of its own, and handed to the thread pool each read costs a
// wake-up on both sides: 1,000 reads of a few hundred bytes queued at once (a fetch of
// 1,000 partitions) took 50 us of CPU each, mostly futex contention among libuv's threads
// on 2 cores, and 8 us in place. The bound, 64 KiB, keeps such reads in place (a
// consumer at the head of its log, a follower replicating many partitions, a fetch of many
// small partitions) and leaves the reads of consumers catching up, up to
// max.partition.fetch.bytes each, to the thread pool, as before. A read of a range that is
// not in the page cache blocks the event loop for one disk read of at most that size, as a
// Kafka network thread's sendfile blocks on one.
//
// The pool also carries the one durability switch of the files it serves: every fsync of
// the logs that share it goes through sync() / syncDir(), which unsafe.bypass.fsync turns
// into no-ops. And it is their file context: the FileSystem every file operation of those
// logs goes through, the Clock their timestamps and timers come from, and the atomic file
// replacements in flight (checkpoint.ts).

import { type FileContext, fsyncDir } from './checkpoint.ts';
import { type Clock, systemClock } from './clock.ts';
import type { BackgroundErrorSink } from './errors.ts';
import { type FileHandle, type FileSystem, nodeFileSystem } from './file-system.ts';
import type { ReadBufferSource } from './read-buffers.ts';

interface Entry {
  path: string;
  opening: Promise<FileHandle>;
  handle: FileHandle | null;
  leases: number;
  stale: boolean;
}

export interface HandleLease {
  readonly handle: FileHandle;
  release(): void;
}

export interface FileHandlePoolOptions {
  /** Open descriptors the cache keeps, at most (idle ones are closed first). */
  maxOpenFiles?: number;
  /** Writes up to this many bytes are made in place on the calling thread. */
  syncWriteMaxBytes?: number;
  /** Reads up to this many bytes are made in place on the calling thread. */
  syncReadMaxBytes?: number;
  /** Where a handle that fails to close is reported (nobody awaits the close). */
  onError: BackgroundErrorSink;
  /**
   * unsafe.bypass.fsync: sync() and syncDir() do nothing. Writes still reach the page cache
   * in the same order, so a crash of the process loses nothing; an OS crash or power loss
   * may lose or tear anything written since the kernel last wrote back (acknowledged
   * records, checkpoints, the clean-shutdown marker's meaning). For data that cannot outlive
   * the process (startBroker()'s own temp dir), never for a log dir that is kept.
   */
  unsafeBypassFsync?: boolean;
  /** Where the files are (nodeFileSystem: the real disk). */
  fileSystem?: FileSystem;
  /** The time and timers of the logs that share the pool (systemClock: the real ones). */
  clock?: Clock;
}

export const DEFAULT_SYNC_WRITE_MAX_BYTES = 256 * 1024;
export const DEFAULT_SYNC_READ_MAX_BYTES = 64 * 1024;
/** Sluice: the descriptors the handle cache holds by default (Kafka keeps every segment open). */
export const DEFAULT_MAX_OPEN_FILES = 4096;

export class FileHandlePool implements FileContext {
  private readonly entries = new Map<string, Entry>();
  readonly maxOpenFiles: number;
  readonly syncWriteMaxBytes: number;
  readonly syncReadMaxBytes: number;
  readonly unsafeBypassFsync: boolean;
  readonly fileSystem: FileSystem;
  readonly clock: Clock;
  readonly replacing = new Map<string, Promise<void>>();
  private readonly onError: BackgroundErrorSink;
  private uniqueIds = 0;

  constructor(options: FileHandlePoolOptions) {
    this.maxOpenFiles = options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES;
    this.syncWriteMaxBytes = options.syncWriteMaxBytes ?? DEFAULT_SYNC_WRITE_MAX_BYTES;
    this.syncReadMaxBytes = options.syncReadMaxBytes ?? DEFAULT_SYNC_READ_MAX_BYTES;
    this.unsafeBypassFsync = options.unsafeBypassFsync ?? false;
    this.fileSystem = options.fileSystem ?? nodeFileSystem;
    this.clock = options.clock ?? systemClock;
    this.onError = options.onError;
  }

  /**
   * 32 hex digits that no other call on this pool returns, for names that must not collide
   * (Kafka puts a random UUID in a `-delete` directory's name): the clock's time, then a
   * counter. Derived rather than random, so a simulated run names its files the same way
   * every time. A later pool (the next start) may repeat a name only if its clock went back,
   * and the names it is used for are gone by then: start-up removes `-delete` directories.
   */
  uniqueId(): string {
    const time = Math.max(0, Math.floor(this.clock.now())).toString(16).padStart(16, '0');
    return `${time}${(this.uniqueIds++).toString(16).padStart(16, '0')}`;
  }

  /** fsyncs a file through `handle` (leased, or the caller's own), unless fsync is bypassed. */
  async sync(handle: FileHandle): Promise<void> {
    if (!this.unsafeBypassFsync) await handle.sync();
  }

  /** fsyncs a directory (its entries: creations, renames, removals), unless fsync is bypassed. */
  async syncDir(dir: string): Promise<void> {
    if (!this.unsafeBypassFsync) await fsyncDir(this.fileSystem, dir);
  }

  /**
   * The already open handle of `path`, or null if it must be opened first. It is safe to
   * use only until the caller next yields to the event loop (no lease keeps it open).
   */
  openHandle(path: string): FileHandle | null {
    const entry = this.entries.get(path);
    if (entry === undefined || entry.stale || entry.handle === null) return null;
    this.entries.delete(path);
    this.entries.set(path, entry);
    return entry.handle;
  }

  /**
   * Reads `length` bytes at `position` (fewer at the end of the file) into a buffer from
   * `into` (a fresh one without it): in place up to syncReadMaxBytes, else on the thread
   * pool, where `handle` must be leased.
   */
  async read(handle: FileHandle, position: number, length: number, into?: ReadBufferSource): Promise<Buffer> {
    if (length > this.syncReadMaxBytes) return readAt(handle, position, length, into);
    const buf = into === undefined ? Buffer.allocUnsafe(length) : into.take(length);
    let filled = 0;
    while (filled < length) {
      const n = this.fileSystem.readSync(handle.fd, buf, filled, length - filled, position + filled);
      if (n === 0) break;
      filled += n;
    }
    return filled === length ? buf : buf.subarray(0, filled);
  }

  /** Writes all of `data` at `position`, in place (for writes up to syncWriteMaxBytes). */
  writeSync(handle: FileHandle, data: Buffer, position: number): void {
    let written = 0;
    while (written < data.length) written += this.fileSystem.writeSync(handle.fd, data, written, data.length - written, position + written);
  }

  /** Writes all of `data` at `position` on the thread pool; `handle` must be leased. */
  async write(handle: FileHandle, data: Buffer, position: number): Promise<void> {
    let written = 0;
    while (written < data.length) {
      const { bytesWritten } = await handle.write(data, written, data.length - written, position + written);
      written += bytesWritten;
    }
  }

  /** Opens (or reuses) a read-write handle on an existing file. */
  async acquire(path: string): Promise<HandleLease> {
    let entry = this.entries.get(path);
    if (entry === undefined || entry.stale) {
      const fresh: Entry = { path, opening: this.fileSystem.open(path, 'r+'), handle: null, leases: 0, stale: false };
      entry = fresh;
      this.entries.set(path, fresh);
      fresh.opening.then(
        (h) => {
          fresh.handle = h;
        },
        () => {
          if (this.entries.get(path) === fresh) this.entries.delete(path);
        },
      );
    } else {
      // Re-insert to keep the Map ordered by last use (LRU first).
      this.entries.delete(path);
      this.entries.set(path, entry);
    }
    entry.leases++;
    let handle: FileHandle;
    try {
      handle = await entry.opening;
    } catch (err) {
      entry.leases--;
      throw err;
    }
    this.evict();
    const owner = entry;
    let released = false;
    return {
      handle,
      release: () => {
        if (released) return;
        released = true;
        owner.leases--;
        if (owner.leases === 0 && owner.stale) void this.close(owner);
      },
    };
  }

  /**
   * Creates `path` empty (truncating a file already there) and keeps the read-write handle,
   * so the first acquire() or openHandle() of the new file needs no second open.
   */
  async create(path: string): Promise<void> {
    this.invalidate(path);
    const fresh: Entry = { path, opening: this.fileSystem.open(path, 'w+'), handle: null, leases: 0, stale: false };
    this.entries.set(path, fresh);
    try {
      fresh.handle = await fresh.opening;
    } catch (err) {
      if (this.entries.get(path) === fresh) this.entries.delete(path);
      throw err;
    }
    this.evict();
  }

  /** Forgets the handle of `path` (renamed, replaced or deleted); it closes when unleased. */
  invalidate(path: string): void {
    const entry = this.entries.get(path);
    if (entry === undefined) return;
    this.entries.delete(path);
    entry.stale = true;
    if (entry.leases === 0) void this.close(entry);
  }

  /** Invalidates every handle under a directory prefix. */
  invalidatePrefix(prefix: string): void {
    for (const path of [...this.entries.keys()]) if (path.startsWith(prefix)) this.invalidate(path);
  }

  get openCount(): number {
    return this.entries.size;
  }

  async closeAll(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) e.stale = true;
    await Promise.all(all.filter((e) => e.leases === 0).map((e) => this.close(e)));
  }

  /** Closes an entry's handle; one that never opened has nothing to close. */
  private async close(entry: Entry): Promise<void> {
    let handle: FileHandle;
    try {
      handle = await entry.opening;
    } catch {
      // The open failed, and was reported to the caller that asked for it.
      return;
    }
    try {
      await handle.close();
    } catch (err) {
      this.onError(err, `closing ${entry.path}`);
    }
  }

  private evict(): void {
    if (this.entries.size <= this.maxOpenFiles) return;
    for (const entry of this.entries.values()) {
      if (this.entries.size <= this.maxOpenFiles) break;
      if (entry.leases > 0 || entry.handle === null) continue;
      this.entries.delete(entry.path);
      entry.stale = true;
      void this.close(entry);
    }
  }
}

/** Reads up to `lengthBytes` at `position` on the thread pool; shorter only at end of file. */
export async function readAt(handle: FileHandle, position: number, lengthBytes: number, into?: ReadBufferSource): Promise<Buffer> {
  const buf = into === undefined ? Buffer.allocUnsafe(lengthBytes) : into.take(lengthBytes);
  let filledBytes = 0;
  while (filledBytes < lengthBytes) {
    const { bytesRead } = await handle.read(buf, filledBytes, lengthBytes - filledBytes, position + filledBytes);
    if (bytesRead === 0) break;
    filledBytes += bytesRead;
  }
  return filledBytes === lengthBytes ? buf : buf.subarray(0, filledBytes);
}
