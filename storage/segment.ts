// One segment: `<base>.log` holding whole v2 batches back to back, a sparse offset index
// `<base>.index` (relative offset int32, position int32 per entry: the last offset of the
// batch starting at that position) and a time index `<base>.timeindex` (timestamp int64,
// relative offset int32: the largest timestamp so far and the offset holding it), both in
// Kafka's layout. Indexes live in memory once loaded and are loaded only when needed; the
// files are brought up to date on flush, roll and close, and rebuilt from the log whenever
// they are missing or do not match it.

import { join } from 'node:path';
import { MAGIC, RECORD_BATCH_OVERHEAD, RecordBatch, validateBatchAt, InvalidRecordBatchError } from '../protocol/records/batch.ts';
import { type BackgroundErrorSink, removeFile, toStorageIOError } from './errors.ts';
import { type FileHandlePool, readAt } from './file-pool.ts';
import type { FileHandle } from './file-system.ts';
import type { ReadBufferSource } from './read-buffers.ts';
import { TXN_INDEX_SUFFIX, TransactionIndex } from './transaction-index.ts';

export const LOG_SUFFIX = '.log';
export const INDEX_SUFFIX = '.index';
export const TIME_INDEX_SUFFIX = '.timeindex';
export const OFFSET_ENTRY_BYTES = 8;
export const TIME_ENTRY_BYTES = 12;
const INT32_MAX = 0x7fffffff;
const SCAN_CHUNK_BYTES = 1024 * 1024;
const HEADER_PROBE_BYTES = 4 * 1024;
/** Header bytes needed to know a batch's extent: up to and including lastOffsetDelta. */
const HEADER_PREFIX = 27;
/** Extra bytes read past an index entry to reach the wanted batch in the same read. */
const READ_SLACK_BYTES = 16 * 1024;

export function segmentFileName(baseOffset: number, suffix: string): string {
  return `${String(baseOffset).padStart(20, '0')}${suffix}`;
}

/** Batch header fields the segment tracks while indexing. */
export interface BatchExtent {
  baseOffset: number;
  lastOffset: number;
  maxTimestampMs: number;
  sizeBytes: number;
}

/** The extent of the batch a header view shows. */
export function extentOf(view: RecordBatch): BatchExtent {
  return { baseOffset: view.baseOffset, lastOffset: view.lastOffset, maxTimestampMs: view.maxTimestamp, sizeBytes: view.sizeInBytes };
}

export interface SegmentReadResult {
  records: Buffer;
  position: number;
  firstOffset: number;
  nextOffset: number;
}

/** Growable array of fixed-size index entries, in file layout. */
class IndexBuffer {
  buf: Buffer;
  count = 0;
  persisted = 0;
  constructor(
    readonly entryBytes: number,
    initial?: Buffer,
  ) {
    if (initial !== undefined) {
      this.count = Math.floor(initial.length / entryBytes);
      this.persisted = this.count;
      this.buf = Buffer.alloc(Math.max(this.count * entryBytes, entryBytes * 16));
      initial.copy(this.buf, 0, 0, this.count * entryBytes);
    } else {
      this.buf = Buffer.alloc(entryBytes * 16);
    }
  }
  slot(): number {
    if ((this.count + 1) * this.entryBytes > this.buf.length) {
      const bigger = Buffer.alloc(this.buf.length * 2);
      this.buf.copy(bigger, 0, 0, this.count * this.entryBytes);
      this.buf = bigger;
    }
    return this.count++ * this.entryBytes;
  }
  truncate(count: number): void {
    this.count = Math.min(this.count, count);
    this.persisted = Math.min(this.persisted, this.count);
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.count * this.entryBytes);
  }
}

export class LogSegment {
  /** Bytes of whole batches written. */
  sizeBytes: number;
  /** True once indexes and tail state are in memory. */
  loaded = false;
  private offsetIndex: IndexBuffer | null = null;
  private timeIndex: IndexBuffer | null = null;
  private loading: Promise<void> | null = null;
  /** Bytes appended since the last offset index entry (index.interval.bytes). */
  unindexedBytes = 0;
  maxTimestampSoFarMs = -1;
  offsetOfMaxTimestampSoFar = -1;
  /** Max timestamp of the first batch: the clock segment.ms rolls by. */
  rollingBasedTimestampMs = -1;
  /** The offset after the last batch, known once loaded. */
  nextOffset: number;
  createdMs: number;

  // The log path is built on first use and kept: appends need it every time, while
  // thousands of idle segments never need it.
  private logPathMemo: string | undefined;

  /** The ABORT markers written in this segment (read_committed fetches list them). */
  readonly txnIndex: TransactionIndex;

  /**
   * `txnIndex`: the index of the segment this one replaces (same base offset), or whether its
   * `.txnindex` file exists.
   */
  constructor(
    readonly dir: string,
    readonly baseOffset: number,
    sizeBytes: number,
    private readonly pool: FileHandlePool,
    createdMs: number,
    txnIndex: TransactionIndex | boolean = false,
  ) {
    this.sizeBytes = sizeBytes;
    this.nextOffset = baseOffset;
    this.createdMs = createdMs;
    this.txnIndex =
      typeof txnIndex === 'boolean'
        ? new TransactionIndex(join(dir, segmentFileName(baseOffset, TXN_INDEX_SUFFIX)), pool, txnIndex)
        : txnIndex;
  }

  get logPath(): string {
    this.logPathMemo ??= join(this.dir, segmentFileName(this.baseOffset, LOG_SUFFIX));
    return this.logPathMemo;
  }
  get indexPath(): string {
    return join(this.dir, segmentFileName(this.baseOffset, INDEX_SUFFIX));
  }
  get timeIndexPath(): string {
    return join(this.dir, segmentFileName(this.baseOffset, TIME_INDEX_SUFFIX));
  }

  /** Creates empty files for a new segment (at once), their handles kept in the pool for the first writes. */
  static async create(dir: string, baseOffset: number, pool: FileHandlePool, nowMs: number): Promise<LogSegment> {
    const seg = new LogSegment(dir, baseOffset, 0, pool, nowMs);
    const paths = [seg.logPath, seg.indexPath, seg.timeIndexPath];
    const created = await Promise.allSettled(paths.map((p) => pool.create(p)));
    const failed = created.find((r) => r.status === 'rejected');
    if (failed !== undefined) {
      // No handle of a segment that does not exist stays in the pool.
      for (const p of paths) pool.invalidate(p);
      throw toStorageIOError(failed.reason, `creating segment ${seg.logPath}`);
    }
    seg.offsetIndex = new IndexBuffer(OFFSET_ENTRY_BYTES);
    seg.timeIndex = new IndexBuffer(TIME_ENTRY_BYTES);
    seg.loaded = true;
    return seg;
  }

  /** The offset index; only once loaded (a segment's readers and writers load it first). */
  private offsets(): IndexBuffer {
    if (this.offsetIndex === null) throw new Error(`${this.logPath}: offset index used before the segment was loaded`);
    return this.offsetIndex;
  }

  /** The time index; only once loaded. */
  private times(): IndexBuffer {
    if (this.timeIndex === null) throw new Error(`${this.logPath}: time index used before the segment was loaded`);
    return this.timeIndex;
  }

  get offsetIndexEntries(): number {
    return this.offsetIndex?.count ?? 0;
  }

  /** Whether one more offset index entry would exceed segment.index.bytes. */
  isIndexFull(segmentIndexBytes: number): boolean {
    return (
      (this.offsetIndexEntries + 1) * OFFSET_ENTRY_BYTES > segmentIndexBytes ||
      ((this.timeIndex?.count ?? 0) + 1) * TIME_ENTRY_BYTES > segmentIndexBytes
    );
  }

  canHoldOffset(offset: number): boolean {
    return offset - this.baseOffset <= INT32_MAX && offset >= this.baseOffset;
  }

  /** The largest record timestamp, or the file's modification time when it has none (Kafka). */
  async largestTimestampMs(): Promise<number> {
    if (this.loaded && this.maxTimestampSoFarMs >= 0) return this.maxTimestampSoFarMs;
    try {
      return (await this.pool.fileSystem.stat(this.logPath)).mtimeMs;
    } catch {
      return this.createdMs;
    }
  }

  async lease(): Promise<{ handle: FileHandle; release(): void }> {
    try {
      return await this.pool.acquire(this.logPath);
    } catch (err) {
      throw toStorageIOError(err, `opening ${this.logPath}`);
    }
  }

  /** Loads the indexes, rebuilding them from the log if they are missing or inconsistent. */
  ensureLoaded(indexIntervalBytes: number): Promise<void> {
    if (this.loaded) return Promise.resolve();
    this.loading ??= this.load(indexIntervalBytes).finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(indexIntervalBytes: number): Promise<void> {
    // A segment no larger than one index interval cannot have offset index entries, and a
    // scan from its start yields all of its state: skip reading its index files.
    const small = this.sizeBytes <= indexIntervalBytes;
    const offsets = small ? Buffer.alloc(0) : await this.pool.fileSystem.readFile(this.indexPath).catch(() => null);
    const times = small ? Buffer.alloc(0) : await this.pool.fileSystem.readFile(this.timeIndexPath).catch(() => null);
    this.offsetIndex = new IndexBuffer(OFFSET_ENTRY_BYTES, offsets ?? Buffer.alloc(0));
    this.timeIndex = new IndexBuffer(TIME_ENTRY_BYTES, times ?? Buffer.alloc(0));
    this.maxTimestampSoFarMs = -1;
    this.offsetOfMaxTimestampSoFar = -1;
    this.rollingBasedTimestampMs = -1;
    this.nextOffset = this.baseOffset;
    if (offsets === null || times === null || !this.indexesLookSane()) {
      await this.rebuildIndexes(indexIntervalBytes);
      return;
    }
    // Tail state: everything after the last indexed batch.
    const lastEntry = this.offsetIndex.count - 1;
    const startPos = lastEntry >= 0 ? this.offsetIndex.buf.readInt32BE(lastEntry * OFFSET_ENTRY_BYTES + 4) : 0;
    const lastTimeEntry = this.timeIndex.count - 1;
    if (lastTimeEntry >= 0) {
      this.maxTimestampSoFarMs = Number(this.timeIndex.buf.readBigInt64BE(lastTimeEntry * TIME_ENTRY_BYTES));
      this.offsetOfMaxTimestampSoFar = this.baseOffset + this.timeIndex.buf.readInt32BE(lastTimeEntry * TIME_ENTRY_BYTES + 8);
    }
    this.unindexedBytes = 0;
    let first = true;
    const ok = await this.scan(startPos, false, (b, pos) => {
      if (first && pos === 0) this.rollingBasedTimestampMs = b.maxTimestampMs;
      first = false;
      this.trackBatch(b, pos, 0, false);
      this.unindexedBytes += b.sizeBytes;
      return true;
    });
    if (ok.validBytes !== this.sizeBytes) {
      // The log disagrees with its index; trust only a full rescan.
      await this.rebuildIndexes(indexIntervalBytes);
      return;
    }
    if (startPos > 0 && this.sizeBytes > 0) {
      const head = await this.readHeader(0);
      if (head !== null) this.rollingBasedTimestampMs = head.maxTimestampMs;
    }
    this.loaded = true;
  }

  private indexesLookSane(): boolean {
    const oi = this.offsets();
    let prevRel = -1;
    let prevPos = -1;
    for (let i = 0; i < oi.count; i++) {
      const rel = oi.buf.readInt32BE(i * OFFSET_ENTRY_BYTES);
      const pos = oi.buf.readInt32BE(i * OFFSET_ENTRY_BYTES + 4);
      if (rel < prevRel || pos <= prevPos || pos >= this.sizeBytes) return false;
      prevRel = rel;
      prevPos = pos;
    }
    const ti = this.times();
    let prevTs = -Infinity;
    for (let i = 0; i < ti.count; i++) {
      const ts = Number(ti.buf.readBigInt64BE(i * TIME_ENTRY_BYTES));
      if (ts < prevTs || ti.buf.readInt32BE(i * TIME_ENTRY_BYTES + 8) < 0) return false;
      prevTs = ts;
    }
    return true;
  }

  /**
   * Rescans the whole segment (headers only) and rewrites both index files, closing the time
   * index with the segment's largest timestamp (what retention reads of inactive segments).
   */
  async rebuildIndexes(indexIntervalBytes: number): Promise<void> {
    this.resetIndexState();
    const r = await this.scan(0, false, (b, pos) => {
      this.onBatchAppended(b, pos, indexIntervalBytes);
      return true;
    });
    if (r.validBytes < this.sizeBytes) await this.truncateFileTo(r.validBytes);
    this.maybeAppendTimeEntry();
    await this.rewriteIndexFiles();
    this.loaded = true;
  }

  /**
   * Crash recovery: validates every batch (framing, magic, CRC-32C, offsets increasing),
   * truncates at the first invalid byte and rebuilds the indexes. `onBatch` sees each valid batch.
   */
  async recover(indexIntervalBytes: number, onBatch: (b: RecordBatch) => void): Promise<number> {
    this.resetIndexState();
    const size = await this.pool.fileSystem.stat(this.logPath).then(
      (s) => s.size,
      () => 0,
    );
    this.sizeBytes = size;
    let expectNext = this.baseOffset;
    const r = await this.scan(0, true, (b, pos, view) => {
      if (b.baseOffset < expectNext || !this.canHoldOffset(b.lastOffset)) return false;
      expectNext = b.lastOffset + 1;
      this.onBatchAppended(b, pos, indexIntervalBytes);
      onBatch(view);
      return true;
    });
    const truncated = size - r.validBytes;
    if (truncated > 0) await this.truncateFileTo(r.validBytes);
    await this.txnIndex.truncateTo(expectNext);
    // The closing time index entry an inactive segment carries; harmless on the active one.
    this.maybeAppendTimeEntry();
    await this.rewriteIndexFiles();
    this.loaded = true;
    return truncated;
  }

  private resetIndexState(): void {
    this.offsetIndex = new IndexBuffer(OFFSET_ENTRY_BYTES);
    this.timeIndex = new IndexBuffer(TIME_ENTRY_BYTES);
    this.unindexedBytes = 0;
    this.maxTimestampSoFarMs = -1;
    this.offsetOfMaxTimestampSoFar = -1;
    this.rollingBasedTimestampMs = -1;
    this.nextOffset = this.baseOffset;
  }

  /**
   * Walks the batches from `startPos` to `this.sizeBytes`. With `validate`, whole batches are read
   * and checked (CRC-32C included) and passed as views; otherwise only headers are read, and
   * control batches whole (the producer state needs their marker).
   * Stops at the first invalid or truncated batch or when `visit` returns false.
   */
  async scan(
    startPos: number,
    validate: boolean,
    visit: (b: BatchExtent, pos: number, view: RecordBatch) => boolean,
  ): Promise<{ validBytes: number }> {
    const lease = await this.lease();
    try {
      let pos = startPos;
      let chunk: Buffer = Buffer.alloc(0);
      let chunkPos = pos;
      const chunkBytes = validate ? SCAN_CHUNK_BYTES : HEADER_PROBE_BYTES;
      while (pos < this.sizeBytes) {
        let rel = pos - chunkPos;
        if (chunk.length - rel < RECORD_BATCH_OVERHEAD) {
          chunk = await readAt(lease.handle, pos, Math.min(this.sizeBytes - pos, chunkBytes));
          chunkPos = pos;
          rel = 0;
          if (chunk.length < RECORD_BATCH_OVERHEAD) break;
        }
        let view = new RecordBatch(chunk, rel);
        const size = view.sizeInBytes;
        if (size < RECORD_BATCH_OVERHEAD || pos + size > this.sizeBytes || chunk.readInt8(rel + MAGIC) !== 2) break;
        if (validate) {
          if (chunk.length - rel < size) {
            chunk = await readAt(lease.handle, pos, Math.min(this.sizeBytes - pos, Math.max(size, chunkBytes)));
            chunkPos = pos;
            rel = 0;
            if (chunk.length < size) break;
          }
          try {
            validateBatchAt(chunk, rel, rel + size, true);
          } catch (err) {
            if (err instanceof InvalidRecordBatchError) break;
            throw err;
          }
          view = new RecordBatch(chunk, rel);
        } else if (view.isControl && chunk.length - rel < size) {
          chunk = await readAt(lease.handle, pos, size);
          chunkPos = pos;
          rel = 0;
          if (chunk.length < size) break;
          view = new RecordBatch(chunk, 0);
        }
        const extent = extentOf(view);
        if (!visit(extent, pos, view)) break;
        pos += size;
      }
      return { validBytes: pos };
    } catch (err) {
      throw toStorageIOError(err, `reading ${this.logPath}`);
    } finally {
      lease.release();
    }
  }

  /** Updates index and timestamp state for a batch now at `position` (size not yet added). */
  onBatchAppended(b: BatchExtent, position: number, indexIntervalBytes: number): void {
    if (position === 0 || (this.rollingBasedTimestampMs < 0 && this.sizeBytes === 0)) this.rollingBasedTimestampMs = b.maxTimestampMs;
    this.trackBatch(b, position, indexIntervalBytes, true);
    this.unindexedBytes += b.sizeBytes;
  }

  private trackBatch(b: BatchExtent, position: number, indexIntervalBytes: number, mayIndex: boolean): void {
    if (b.maxTimestampMs > this.maxTimestampSoFarMs) {
      this.maxTimestampSoFarMs = b.maxTimestampMs;
      this.offsetOfMaxTimestampSoFar = b.lastOffset;
    }
    if (mayIndex && this.unindexedBytes > indexIntervalBytes) {
      this.appendOffsetEntry(b.lastOffset, position);
      this.maybeAppendTimeEntry();
      this.unindexedBytes = 0;
    }
    if (b.lastOffset + 1 > this.nextOffset) this.nextOffset = b.lastOffset + 1;
  }

  private appendOffsetEntry(offset: number, position: number): void {
    const oi = this.offsets();
    const at = oi.slot();
    oi.buf.writeInt32BE(offset - this.baseOffset, at);
    oi.buf.writeInt32BE(position, at + 4);
  }

  /** Adds (maxTimestampSoFar, its offset) to the time index if it moved forward. */
  maybeAppendTimeEntry(): void {
    const ti = this.times();
    if (this.maxTimestampSoFarMs < 0) return;
    if (ti.count > 0) {
      const last = (ti.count - 1) * TIME_ENTRY_BYTES;
      const lastTs = Number(ti.buf.readBigInt64BE(last));
      if (this.maxTimestampSoFarMs <= lastTs) return;
    }
    const at = ti.slot();
    ti.buf.writeBigInt64BE(BigInt(this.maxTimestampSoFarMs), at);
    ti.buf.writeInt32BE(this.offsetOfMaxTimestampSoFar - this.baseOffset, at + 4 + 4);
  }

  /** Position of the batch holding the largest indexed offset <= `offset` (0 if none). */
  lookupPosition(offset: number): number {
    const oi = this.offsets();
    const rel = offset - this.baseOffset;
    let lo = 0;
    let hi = oi.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (oi.buf.readInt32BE(mid * OFFSET_ENTRY_BYTES) <= rel) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? 0 : oi.buf.readInt32BE(found * OFFSET_ENTRY_BYTES + 4);
  }

  /** Offset of the largest time index entry with a timestamp strictly below `timestampMs`, or the base offset. */
  lookupTimestamp(timestampMs: number): number {
    const ti = this.times();
    let lo = 0;
    let hi = ti.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (Number(ti.buf.readBigInt64BE(mid * TIME_ENTRY_BYTES)) < timestampMs) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found < 0 ? this.baseOffset : this.baseOffset + ti.buf.readInt32BE(found * TIME_ENTRY_BYTES + 8);
  }

  /** Position and extent of the first batch with lastOffset >= `offset`, or null. */
  async findBatch(offset: number, indexIntervalBytes: number): Promise<{ position: number; extent: BatchExtent } | null> {
    await this.ensureLoaded(indexIntervalBytes);
    let found: { position: number; extent: BatchExtent } | null = null;
    await this.scan(this.lookupPosition(offset), false, (b, pos) => {
      if (b.lastOffset >= offset) {
        found = { position: pos, extent: b };
        return false;
      }
      return true;
    });
    return found;
  }

  /**
   * Reads whole batches starting with the one holding `offset`: at most `maxBytes` unless
   * `minOneBatch` lets a larger first batch through, none with lastOffset >= `maxOffset`.
   * Returns undefined when no batch of this segment reaches `offset`, null when the first
   * such batch may not be returned. Usually one read: from the index entry, enough bytes to
   * cover the gap to the wanted batch and then `maxBytes`.
   */
  async read(
    offset: number,
    maxBytes: number,
    maxOffset: number,
    minOneBatch: boolean,
    indexIntervalBytes: number,
    buffers?: ReadBufferSource,
  ): Promise<SegmentReadResult | null | undefined> {
    await this.ensureLoaded(indexIntervalBytes);
    const start = this.lookupPosition(offset);
    if (start >= this.sizeBytes) return undefined;
    const want = Math.min(this.sizeBytes - start, Math.max(maxBytes, 0) + indexIntervalBytes + READ_SLACK_BYTES);
    const lease = await this.lease();
    let data: Buffer;
    try {
      data = await this.pool.read(lease.handle, start, want, buffers);
      let p = 0;
      let first: RecordBatch | null = null;
      while (data.length - p >= HEADER_PREFIX) {
        const view = new RecordBatch(data, p);
        const size = view.sizeInBytes;
        if (size < RECORD_BATCH_OVERHEAD) return undefined;
        if (view.lastOffset >= offset) {
          first = view;
          break;
        }
        p += size;
      }
      if (first === null) {
        if (start + p >= this.sizeBytes) return undefined;
        // The wanted batch lies beyond what was read (very large batches in between).
        const found = await this.findBatch(offset, indexIntervalBytes);
        if (found === null) return undefined;
        data = await this.pool.read(
          lease.handle,
          found.position,
          Math.min(this.sizeBytes - found.position, Math.max(maxBytes, found.extent.sizeBytes)),
          buffers,
        );
        return await this.collect(data, found.position, 0, offset, maxBytes, maxOffset, minOneBatch, lease.handle, buffers);
      }
      return await this.collect(data, start, p, offset, maxBytes, maxOffset, minOneBatch, lease.handle, buffers);
    } catch (err) {
      throw toStorageIOError(err, `reading ${this.logPath}`);
    } finally {
      lease.release();
    }
  }

  private async collect(
    data: Buffer,
    dataPos: number,
    p: number,
    offset: number,
    maxBytes: number,
    maxOffset: number,
    minOneBatch: boolean,
    handle: FileHandle,
    buffers: ReadBufferSource | undefined,
  ): Promise<SegmentReadResult | null> {
    const first = new RecordBatch(data, p);
    if (first.lastOffset >= maxOffset) return null;
    let end = p;
    let nextOffset = offset;
    while (data.length - end >= HEADER_PREFIX) {
      const view = new RecordBatch(data, end);
      const size = view.sizeInBytes;
      if (size < RECORD_BATCH_OVERHEAD || end + size > data.length || end + size - p > maxBytes || view.lastOffset >= maxOffset) break;
      nextOffset = view.nextOffset;
      end += size;
    }
    if (end === p) {
      const size = first.sizeInBytes;
      if (size > maxBytes && !minOneBatch) return null;
      const whole = data.length - p >= size ? data.subarray(p, p + size) : await this.pool.read(handle, dataPos + p, size, buffers);
      if (whole.length < size) return null;
      return { records: whole, position: dataPos + p, firstOffset: first.baseOffset, nextOffset: new RecordBatch(whole, 0).nextOffset };
    }
    return { records: data.subarray(p, end), position: dataPos + p, firstOffset: first.baseOffset, nextOffset };
  }

  /**
   * Appends whole batches at the end; on failure the partial write is cut off again. Returns
   * a promise only when the append has to wait (indexes to load, a file to open, or a write
   * large enough for the thread pool); otherwise it is done on return.
   */
  append(data: Buffer, extents: readonly BatchExtent[], indexIntervalBytes: number): Promise<void> | undefined {
    const inPlace = data.length <= this.pool.syncWriteMaxBytes;
    const handle = inPlace && this.loaded ? this.pool.openHandle(this.logPath) : null;
    if (handle === null) return this.appendWaiting(data, extents, indexIntervalBytes, inPlace);
    const start = this.sizeBytes;
    try {
      this.pool.writeSync(handle, data, start);
    } catch (err) {
      return this.cutFailedAppend(err, start);
    }
    this.appended(extents, start, data.length, indexIntervalBytes);
    return undefined;
  }

  private async appendWaiting(data: Buffer, extents: readonly BatchExtent[], indexIntervalBytes: number, inPlace: boolean): Promise<void> {
    if (!this.loaded) await this.ensureLoaded(indexIntervalBytes);
    const start = this.sizeBytes;
    try {
      const lease = await this.lease();
      try {
        if (inPlace) this.pool.writeSync(lease.handle, data, start);
        else await this.pool.write(lease.handle, data, start);
      } finally {
        lease.release();
      }
    } catch (err) {
      await this.cutFailedAppend(err, start);
    }
    this.appended(extents, start, data.length, indexIntervalBytes);
  }

  /**
   * Cuts a failed append's partial write off again. Should the cut fail too, the error says
   * so: the log then ends in a partial batch, which recovery truncates at the next start.
   */
  private async cutFailedAppend(err: unknown, start: number): Promise<never> {
    try {
      await this.pool.fileSystem.truncate(this.logPath, start);
    } catch (cutErr) {
      const reason = cutErr instanceof Error ? cutErr.message : String(cutErr);
      throw toStorageIOError(err, `appending to ${this.logPath} (and cutting the partial write failed: ${reason})`);
    }
    throw toStorageIOError(err, `appending to ${this.logPath}`);
  }

  private appended(extents: readonly BatchExtent[], start: number, bytes: number, indexIntervalBytes: number): void {
    let pos = start;
    for (const e of extents) {
      this.onBatchAppended(e, pos, indexIntervalBytes);
      pos += e.sizeBytes;
    }
    this.sizeBytes = start + bytes;
  }

  /**
   * Cuts the segment so that it ends before the batch holding `offset`. Returns the base
   * offset of the first batch removed (null if none was).
   */
  async truncateTo(offset: number, indexIntervalBytes: number): Promise<number | null> {
    await this.ensureLoaded(indexIntervalBytes);
    const found = await this.findBatch(offset, indexIntervalBytes);
    if (found === null) return null;
    const position = found.position;
    await this.truncateFileTo(position);
    await this.txnIndex.truncateTo(found.extent.baseOffset);
    // Drop index entries at or past the cut, then recompute the tail state by rescanning.
    const oi = this.offsets();
    let keep = 0;
    while (keep < oi.count && oi.buf.readInt32BE(keep * OFFSET_ENTRY_BYTES + 4) < position) keep++;
    oi.truncate(keep);
    const ti = this.times();
    let keepT = 0;
    while (keepT < ti.count && this.baseOffset + ti.buf.readInt32BE(keepT * TIME_ENTRY_BYTES + 8) < offset) keepT++;
    ti.truncate(keepT);
    await this.rewriteIndexFiles();
    this.loaded = false;
    await this.ensureLoaded(indexIntervalBytes);
    return found.extent.baseOffset;
  }

  private async truncateFileTo(position: number): Promise<void> {
    const lease = await this.lease();
    try {
      await lease.handle.truncate(position);
    } catch (err) {
      throw toStorageIOError(err, `truncating ${this.logPath}`);
    } finally {
      lease.release();
    }
    this.sizeBytes = position;
  }

  /** Writes index entries not yet in the files. */
  async flushIndexes(): Promise<void> {
    if (!this.loaded) return;
    await this.writeIndexTail(this.indexPath, this.offsets());
    await this.writeIndexTail(this.timeIndexPath, this.times());
  }

  private async writeIndexTail(path: string, idx: IndexBuffer): Promise<void> {
    if (idx.persisted === idx.count) return;
    try {
      const lease = await this.acquireCreating(path);
      const count = idx.count;
      try {
        const from = idx.persisted * idx.entryBytes;
        const to = count * idx.entryBytes;
        // Copy: appends may grow (reallocate) the buffer while the write is in flight.
        const data = Buffer.from(idx.buf.subarray(from, to));
        await lease.handle.truncate(from);
        await lease.handle.write(data, 0, data.length, from);
      } finally {
        lease.release();
      }
      idx.persisted = count;
    } catch (err) {
      throw toStorageIOError(err, `writing ${path}`);
    }
  }

  /** A lease on an index file, creating it if it went missing (removed to force a rebuild). */
  private async acquireCreating(path: string): Promise<{ handle: FileHandle; release(): void }> {
    try {
      return await this.pool.acquire(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      const fh = await this.pool.fileSystem.open(path, 'a');
      await fh.close();
      return this.pool.acquire(path);
    }
  }

  async rewriteIndexFiles(): Promise<void> {
    for (const [path, idx] of [
      [this.indexPath, this.offsets()],
      [this.timeIndexPath, this.times()],
    ] as const) {
      try {
        this.pool.invalidate(path);
        const fs = this.pool.fileSystem;
        await fs.truncate(path, 0).catch(async (err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
          const fh = await fs.open(path, 'w');
          await fh.close();
        });
        idx.persisted = 0;
      } catch (err) {
        throw toStorageIOError(err, `writing ${path}`);
      }
      await this.writeIndexTail(path, idx);
    }
  }

  /** Makes the segment read-only: final time index entry, index files up to date. */
  async onBecomeInactive(): Promise<void> {
    if (!this.loaded) return;
    this.maybeAppendTimeEntry();
    await this.flushIndexes();
  }

  /** fsyncs the log and its index files (at once: they are independent files). */
  async fsync(): Promise<void> {
    const paths = [this.logPath, this.indexPath, this.timeIndexPath];
    if (!this.txnIndex.isEmpty) paths.push(this.txnIndex.path);
    const results = await Promise.allSettled(paths.map((path) => this.fsyncFile(path)));
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  }

  private async fsyncFile(path: string): Promise<void> {
    try {
      const lease = await this.pool.acquire(path);
      try {
        await this.pool.sync(lease.handle);
      } finally {
        lease.release();
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && path !== this.logPath) return;
      throw toStorageIOError(err, `fsync ${path}`);
    }
  }

  /**
   * The largest timestamp without loading the indexes: the last time index entry of an
   * inactive segment is its maximum (written when it became inactive).
   */
  async largestTimestampCheap(): Promise<{ timestampMs: number; offset: number }> {
    if (this.loaded) {
      if (this.maxTimestampSoFarMs >= 0) return { timestampMs: this.maxTimestampSoFarMs, offset: this.offsetOfMaxTimestampSoFar };
    } else {
      try {
        const lease = await this.pool.acquire(this.timeIndexPath);
        try {
          const { size } = await lease.handle.stat();
          const entries = Math.floor(size / TIME_ENTRY_BYTES);
          if (entries > 0) {
            const buf = await readAt(lease.handle, (entries - 1) * TIME_ENTRY_BYTES, TIME_ENTRY_BYTES);
            if (buf.length === TIME_ENTRY_BYTES) {
              return { timestampMs: Number(buf.readBigInt64BE(0)), offset: this.baseOffset + buf.readInt32BE(8) };
            }
          }
        } finally {
          lease.release();
        }
      } catch {
        // No time index: fall back to the modification time below.
      }
    }
    return { timestampMs: await this.largestTimestampMs(), offset: -1 };
  }

  closeHandles(): void {
    for (const p of [this.logPath, this.indexPath, this.timeIndexPath, this.txnIndex.path]) this.pool.invalidate(p);
  }

  /**
   * Renames the files to `.deleted` and removes them after `delayMs` (readers may still hold
   * them); a removal that fails then is reported to `onError` (restart removes the file).
   */
  async markDeleted(delayMs: number, onError: BackgroundErrorSink): Promise<void> {
    this.closeHandles();
    const paths = [this.logPath, this.indexPath, this.timeIndexPath, this.txnIndex.path];
    const renamed: string[] = [];
    for (const p of paths) {
      try {
        await this.pool.fileSystem.rename(p, `${p}.deleted`);
        renamed.push(`${p}.deleted`);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw toStorageIOError(err, `deleting ${p}`);
      }
    }
    const remove = (): void => {
      for (const p of renamed) void removeFile(this.pool.fileSystem, p, onError);
    };
    if (delayMs <= 0) remove();
    // A deferred removal (file.delete.delay.ms, a minute by default) does not keep the process
    // alive (no Clock timer does): a .deleted file still there at exit is removed when its log
    // next loads.
    else this.pool.clock.setTimeout(remove, delayMs);
  }

  async readHeader(position: number): Promise<BatchExtent | null> {
    const lease = await this.lease();
    try {
      const buf = await readAt(lease.handle, position, 43);
      if (buf.length < 43) return null;
      return extentOf(new RecordBatch(buf, 0));
    } finally {
      lease.release();
    }
  }
}
