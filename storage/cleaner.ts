// Log compaction (cleanup.policy=compact, compact,delete), after Kafka's LogCleaner:
//
// - The dirty part of a log runs from the cleaner's checkpoint (first dirty offset) to the
//   first uncleanable offset: the active segment, the high watermark, and segments younger
//   than min.compaction.lag.ms are never cleaned. A log is cleaned when dirty bytes /
//   total bytes reaches min.cleanable.dirty.ratio.
// - One pass maps every key in the dirty part to its latest offset, then rewrites each
//   segment below the first uncleanable offset keeping a record only if no later record has
//   its key. Offsets are kept (gaps are normal). Keyless records are dropped, as Kafka does.
// - Tombstones (null values) are removed once their segment is older than
//   delete.retention.ms, so consumers that read within that time still see the delete.
// - Transactions (Kafka's cleaner with the aborted-transaction index): nothing at or past the
//   last stable offset is cleaned, so every transaction cleaned is decided. A committed
//   transaction's records are compacted like any others; an aborted one's are removed and
//   never shadow an older value of their key. Control batches (the markers) are kept, so a
//   reader (or a coordinator loading its partition) still sees every surviving transactional
//   record's end. A batch left without records keeps its header when it carries a producer
//   id, so the producer state read back from the log stays the same.
// - A segment is rewritten into `<base>.log.cleaned`, renamed to `.log.swap` (the commit
//   point, completed on restart), then renamed over `<base>.log` under the log lock; its
//   indexes are rebuilt from the new file.
// - Work runs in slices: the cleaner yields to the event loop (the clock's setImmediate)
//   whenever it has computed for `sliceMs`, so it never stalls the broker for longer than a
//   few ms.

import { join } from 'node:path';
import { RECORD_BATCH_OVERHEAD, RecordBatch } from '../protocol/records/batch.ts';
import { type Clock, systemClock } from './clock.ts';
import { isCompacted } from './config.ts';
import { type BackgroundErrorSink, removeFile, toStorageIOError } from './errors.ts';
import type { PartitionLog } from './log.ts';
import { batchRecords, rebuildBatch } from './records.ts';
import { readAt } from './file-pool.ts';
import { LOG_SUFFIX, LogSegment, segmentFileName } from './segment.ts';

export interface CleanerOptions {
  /** Longest synchronous stretch before yielding to the event loop. */
  sliceMs: number;
  /** Bound on distinct keys mapped in one pass (log.cleaner.dedupe.buffer.size, as a key count). */
  maxMapKeys: number;
  /** The time of min.compaction.lag.ms and delete.retention.ms, the backoff and the slices. */
  clock: Clock;
  /**
   * Where a failed cleaning pass (the log stays as it was and is retried) and a leftover
   * file that could not be removed are reported.
   */
  onError: BackgroundErrorSink;
}

/** Sluice: the cleaner's synchronous work between two yields to the event loop. */
export const CLEANER_SLICE_MS = 4;
/**
 * Sluice: distinct keys one pass maps. Kafka bounds the map by bytes
 * (log.cleaner.dedupe.buffer.size, 128 MiB of 24-byte entries: about 5 million keys).
 */
export const CLEANER_MAX_MAP_KEYS = 4_000_000;

export interface CleanResult {
  segmentsCleaned: number;
  /** Bytes of the cleaned segments before the pass. */
  sizeBeforeBytes: number;
  /** Bytes of the same segments after it. */
  sizeAfterBytes: number;
  removedRecords: number;
  /** The new first dirty offset. */
  cleanedUpTo: number;
}

const READ_CHUNK_BYTES = 1024 * 1024;

export class LogCleaner {
  readonly options: CleanerOptions;
  private readonly logs = new Set<PartitionLog>();
  /** First dirty offset per log; the log manager persists it in cleaner-offset-checkpoint. */
  private readonly firstDirty = new WeakMap<PartitionLog, number>();
  private readonly busy = new Map<PartitionLog, Promise<unknown>>();
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;

  constructor(options: Partial<CleanerOptions> & Pick<CleanerOptions, 'onError'>) {
    this.options = {
      sliceMs: options.sliceMs ?? CLEANER_SLICE_MS,
      maxMapKeys: options.maxMapKeys ?? CLEANER_MAX_MAP_KEYS,
      clock: options.clock ?? systemClock,
      onError: options.onError,
    };
  }

  register(log: PartitionLog): void {
    this.logs.add(log);
  }

  /** The offset cleaning resumes from (persisted by the log manager in cleaner-offset-checkpoint). */
  firstDirtyOffset(log: PartitionLog): number | undefined {
    return this.firstDirty.get(log);
  }

  setFirstDirtyOffset(log: PartitionLog, offset: number): void {
    this.firstDirty.set(log, offset);
  }

  unregister(log: PartitionLog): void {
    this.logs.delete(log);
  }

  /** Resolves when no pass is running on `log`. */
  async awaitIdle(log: PartitionLog): Promise<void> {
    await this.busy.get(log)?.catch(() => undefined);
  }

  /** Cleans logs in the background, pausing `backoffMs` (log.cleaner.backoff.ms) when none needs it. */
  start(backoffMs: number): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run(backoffMs);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    await Promise.all([...this.busy.values()].map((p) => p.catch(() => undefined)));
  }

  private async run(backoffMs: number): Promise<void> {
    while (this.running) {
      let cleaned = false;
      for (const log of [...this.logs]) {
        if (!this.running) break;
        if (log.isClosed) {
          this.logs.delete(log);
          continue;
        }
        try {
          const r = await this.clean(log);
          if (r !== null && r.segmentsCleaned > 0) cleaned = true;
        } catch (err) {
          // A failed pass leaves the log as it was (the swap never happened); retry later.
          this.options.onError(err, `cleaning ${log.dir}`);
        }
      }
      if (!cleaned && this.running) {
        await new Promise<void>((resolve) => {
          const t = this.options.clock.setTimeout(resolve, backoffMs);
          this.wake = () => {
            this.options.clock.clearTimeout(t);
            resolve();
          };
        });
        this.wake = null;
      }
    }
  }

  /** Dirty bytes / total bytes of the cleanable part, and its bounds. */
  async cleanableRange(
    log: PartitionLog,
  ): Promise<{ firstDirty: number; firstUncleanable: number; dirtyRatio: number; dirtyBytes: number }> {
    const segments = log.allSegments;
    const nowMs = this.options.clock.now();
    const firstDirty = Math.max(this.firstDirty.get(log) ?? log.logStartOffset, log.logStartOffset);
    // The last stable offset needs the producer state: an open transaction bounds the cleaning.
    await log.loadProducerStateIfNeeded();
    let firstUncleanable = Math.min(log.activeSegment.baseOffset, log.highWatermark, log.lastStableOffset);
    for (const seg of segments) {
      if (seg.baseOffset < firstDirty || seg.baseOffset >= firstUncleanable) continue;
      if (log.config.minCompactionLagMs > 0 && nowMs - (await seg.largestTimestampCheap()).timestampMs < log.config.minCompactionLagMs) {
        firstUncleanable = seg.baseOffset;
        break;
      }
    }
    let cleanBytes = 0;
    let dirtyBytes = 0;
    for (const [i, seg] of segments.entries()) {
      const end = segments[i + 1]?.baseOffset ?? Infinity;
      if (end > firstUncleanable) break;
      if (seg.baseOffset >= firstDirty) dirtyBytes += seg.sizeBytes;
      else cleanBytes += seg.sizeBytes;
    }
    const total = cleanBytes + dirtyBytes;
    return { firstDirty, firstUncleanable, dirtyRatio: total === 0 ? 0 : dirtyBytes / total, dirtyBytes };
  }

  /**
   * Cleans `log` once if it is compacted and dirty enough (or `force`). Returns null when
   * there was nothing to do.
   */
  clean(log: PartitionLog, force = false): Promise<CleanResult | null> {
    const previous = this.busy.get(log) ?? Promise.resolve();
    const pass = previous.catch(() => undefined).then(() => this.cleanPass(log, force));
    this.busy.set(log, pass);
    return pass.finally(() => {
      if (this.busy.get(log) === pass) this.busy.delete(log);
    });
  }

  private async cleanPass(log: PartitionLog, force: boolean): Promise<CleanResult | null> {
    if (log.isClosed || !isCompacted(log.config)) return null;
    const range = await this.cleanableRange(log);
    if (range.dirtyBytes === 0) return null;
    if (!force && range.dirtyRatio < log.config.minCleanableDirtyRatio) return null;
    const slicer = new Slicer(this.options.sliceMs, this.options.clock);
    const segments = log.allSegments.filter((s, i, all) => (all[i + 1]?.baseOffset ?? Infinity) <= range.firstUncleanable);
    const dirty = segments.filter((s) => s.baseOffset >= range.firstDirty);
    const aborted = await abortedRanges(log, range.firstUncleanable);
    const map = new Map<string, number>();
    let mapEnd = range.firstDirty;
    for (const seg of dirty) {
      let full = false;
      await forEachBatch(seg, slicer, async (batch) => {
        if (batch.isControl || aborted.has(batch)) return true;
        for (const r of await batchRecords(batch)) {
          if (r.key === null) continue;
          const k = r.key.toString('latin1');
          if (!map.has(k) && map.size >= this.options.maxMapKeys) {
            full = true;
            return false;
          }
          map.set(k, r.offset);
        }
        return true;
      });
      if (full) break;
      mapEnd = segments[segments.indexOf(seg) + 1]?.baseOffset ?? range.firstUncleanable;
    }
    if (mapEnd <= range.firstDirty) return null;
    const result: CleanResult = { segmentsCleaned: 0, sizeBeforeBytes: 0, sizeAfterBytes: 0, removedRecords: 0, cleanedUpTo: mapEnd };
    const deleteHorizonMs = this.options.clock.now() - log.config.deleteRetentionMs;
    for (const seg of segments) {
      if (seg.baseOffset >= mapEnd) break;
      const dropTombstones = (await seg.largestTimestampCheap()).timestampMs < deleteHorizonMs;
      const r = await this.cleanSegment(log, seg, map, aborted, dropTombstones, slicer);
      if (r === null) return null;
      result.segmentsCleaned++;
      result.sizeBeforeBytes += r.beforeBytes;
      result.sizeAfterBytes += r.afterBytes;
      result.removedRecords += r.removedRecords;
    }
    this.firstDirty.set(log, mapEnd);
    return result;
  }

  private async cleanSegment(
    log: PartitionLog,
    seg: LogSegment,
    map: Map<string, number>,
    aborted: AbortedRanges,
    dropTombstones: boolean,
    slicer: Slicer,
  ): Promise<{ beforeBytes: number; afterBytes: number; removedRecords: number } | null> {
    const beforeBytes = seg.sizeBytes;
    const cleanedPath = join(seg.dir, `${segmentFileName(seg.baseOffset, LOG_SUFFIX)}.cleaned`);
    const swapPath = join(seg.dir, `${segmentFileName(seg.baseOffset, LOG_SUFFIX)}.swap`);
    let removedRecords = 0;
    let afterBytes = 0;
    let changed = false;
    const fs = log.pool.fileSystem;
    try {
      const out = await fs.open(cleanedPath, 'w');
      try {
        const pending: Buffer[] = [];
        let pendingBytes = 0;
        const drain = async (): Promise<void> => {
          if (pendingBytes === 0) return;
          const data = Buffer.concat(pending, pendingBytes);
          await out.write(data, 0, data.length, afterBytes);
          afterBytes += data.length;
          pending.length = 0;
          pendingBytes = 0;
        };
        await forEachBatch(seg, slicer, async (batch) => {
          let bytes = batch.bytes();
          if (!batch.isControl) {
            const all = await batchRecords(batch);
            const discard = aborted.has(batch);
            const kept = all.filter((r) => {
              if (discard) return false;
              if (r.key === null) return false;
              const latest = map.get(r.key.toString('latin1'));
              if (latest !== undefined && r.offset < latest) return false;
              return !(r.value === null && dropTombstones);
            });
            if (kept.length !== all.length) {
              removedRecords += all.length - kept.length;
              changed = true;
              if (kept.length === 0 && !batch.hasProducerId) return true;
              bytes = await rebuildBatch(batch, kept);
            }
          }
          pending.push(Buffer.from(bytes));
          pendingBytes += bytes.length;
          if (pendingBytes >= READ_CHUNK_BYTES) await drain();
          return true;
        });
        await drain();
        if (changed) await log.pool.sync(out);
      } finally {
        await out.close();
      }
      if (!changed) {
        await fs.unlink(cleanedPath);
        return { beforeBytes, afterBytes: beforeBytes, removedRecords: 0 };
      }
      await fs.rename(cleanedPath, swapPath);
    } catch (err) {
      await removeFile(fs, cleanedPath, this.options.onError);
      throw toStorageIOError(err, `cleaning ${seg.logPath}`);
    }
    const swapped = await log.runLocked(async () => {
      // Truncation or retention may have changed the log meanwhile: then discard the work.
      if (log.isClosed || !log.allSegments.includes(seg) || seg.sizeBytes !== beforeBytes || seg === log.activeSegment) return false;
      seg.closeHandles();
      await removeFile(fs, seg.indexPath, this.options.onError);
      await removeFile(fs, seg.timeIndexPath, this.options.onError);
      await fs.rename(swapPath, seg.logPath);
      const replacement = new LogSegment(seg.dir, seg.baseOffset, afterBytes, log.pool, seg.createdMs, seg.txnIndex);
      await replacement.rebuildIndexes(log.config.indexIntervalBytes);
      log.replaceSegmentsLocked([seg], replacement);
      return true;
    });
    if (!swapped) {
      // A `.swap` left behind would be completed at the next start: its removal must be known.
      await removeFile(fs, swapPath, this.options.onError);
      return null;
    }
    return { beforeBytes, afterBytes, removedRecords };
  }
}

/** The aborted transactions below an offset, by producer: which transactional batches to discard. */
class AbortedRanges {
  constructor(private readonly byProducer: Map<bigint, { firstOffset: number; lastOffset: number }[]>) {}

  /** Whether the batch is data of an aborted transaction. */
  has(batch: RecordBatch): boolean {
    if (!batch.isTransactional || batch.isControl) return false;
    const ranges = this.byProducer.get(batch.producerId);
    return ranges?.some((r) => r.firstOffset <= batch.baseOffset && batch.baseOffset <= r.lastOffset) === true;
  }
}

async function abortedRanges(log: PartitionLog, upperBoundOffset: number): Promise<AbortedRanges> {
  const byProducer = new Map<bigint, { firstOffset: number; lastOffset: number }[]>();
  for (const txn of await log.abortedTransactions(log.logStartOffset, upperBoundOffset)) {
    const ranges = byProducer.get(txn.producerId) ?? [];
    ranges.push({ firstOffset: txn.firstOffset, lastOffset: txn.lastOffset });
    byProducer.set(txn.producerId, ranges);
  }
  return new AbortedRanges(byProducer);
}

/** Yields to the event loop once `sliceMs` of synchronous work has passed. */
class Slicer {
  private sliceStartMs: number;
  constructor(
    private readonly sliceMs: number,
    private readonly clock: Clock,
  ) {
    this.sliceStartMs = clock.monotonicMs();
  }
  async maybeYield(): Promise<void> {
    if (this.clock.monotonicMs() - this.sliceStartMs < this.sliceMs) return;
    await new Promise<void>((resolve) => this.clock.setImmediate(resolve));
    this.sliceStartMs = this.clock.monotonicMs();
  }
}

/** Visits every whole batch of an inactive segment, reading it in chunks. */
async function forEachBatch(seg: LogSegment, slicer: Slicer, visit: (b: RecordBatch) => Promise<boolean>): Promise<void> {
  const lease = await seg.lease();
  try {
    let pos = 0;
    while (pos < seg.sizeBytes) {
      const chunk = await readAt(lease.handle, pos, Math.min(seg.sizeBytes - pos, READ_CHUNK_BYTES));
      let rel = 0;
      while (chunk.length - rel >= RECORD_BATCH_OVERHEAD) {
        const batch = new RecordBatch(chunk, rel);
        const size = batch.sizeInBytes;
        if (size < RECORD_BATCH_OVERHEAD) return;
        if (rel + size > chunk.length) break;
        if (!(await visit(batch))) return;
        await slicer.maybeYield();
        rel += size;
      }
      if (rel === 0) {
        // One batch larger than the chunk: read it whole.
        const head = new RecordBatch(chunk, 0);
        const whole = await readAt(lease.handle, pos, head.sizeInBytes);
        if (whole.length < head.sizeInBytes) return;
        if (!(await visit(new RecordBatch(whole, 0)))) return;
        rel = whole.length;
      }
      pos += rel;
    }
  } finally {
    lease.release();
  }
}
