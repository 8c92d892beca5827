// Leader epoch -> start offset (KIP-101/279), persisted as `leader-epoch-checkpoint` in the
// partition directory in Kafka's text format. Mirrors Kafka's LeaderEpochFileCache.

import { join } from 'node:path';
import { type FileContext, readCheckpointLines, writeCheckpointLines } from './checkpoint.ts';

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint';
export const UNDEFINED_EPOCH = -1;
export const UNDEFINED_EPOCH_OFFSET = -1;

export interface EpochEntry {
  epoch: number;
  startOffset: number;
}

export class LeaderEpochCache {
  private entries: EpochEntry[] = [];
  private persisting: Promise<void> = Promise.resolve();
  /**
   * The entry lines the file holds, as far as this cache knows (a missing file reads as no
   * entries); null when unknown (unreadable, or a write failed): the next persist writes.
   */
  private persistedLines: string | null = null;

  private constructor(
    private readonly files: FileContext,
    private readonly path: string,
    private readonly persistent: boolean,
    private readonly sync: boolean,
  ) {}

  /**
   * `exists: false` skips the read when the caller already listed the directory. A file that
   * cannot be parsed (torn by a crash on a file system without atomic rename) loads empty
   * with `damaged` set: the caller rebuilds the epochs from the batches of the log.
   * `persistent: false` keeps the entries in memory only (persist() writes nothing), for a
   * log whose owner validates all of it at every open, which rebuilds them from the batches.
   * `sync: false` (unsafe.bypass.fsync only) writes the checkpoint without fsync.
   */
  static async load(files: FileContext, dir: string, exists = true, persistent = true, sync = true): Promise<LeaderEpochCache> {
    const cache = new LeaderEpochCache(files, join(dir, LEADER_EPOCH_CHECKPOINT), persistent, sync);
    let lines: string[][] | null = null;
    try {
      lines = exists ? await readCheckpointLines(files.fileSystem, cache.path) : null;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EINVAL') throw err;
      cache.damaged = true;
    }
    if (lines !== null) {
      const entries = lines.map(([e, o]) => ({ epoch: Number(e), startOffset: Number(o) }));
      if (
        entries.every((e) => Number.isSafeInteger(e.epoch) && e.epoch >= 0 && Number.isSafeInteger(e.startOffset) && e.startOffset >= 0)
      ) {
        cache.entries = entries;
      } else {
        cache.damaged = true;
      }
    }
    if (!cache.damaged) cache.persistedLines = entryLines(cache.entries).join('\n');
    return cache;
  }

  /** True when the checkpoint on disk was unreadable and the entries must be rebuilt from the log. */
  damaged = false;

  all(): readonly EpochEntry[] {
    return this.entries;
  }

  get latestEpoch(): number {
    return this.entries[this.entries.length - 1]?.epoch ?? UNDEFINED_EPOCH;
  }

  /** Records that `epoch` starts at `startOffset`; entries it supersedes are dropped. Returns true if changed. */
  assign(epoch: number, startOffset: number): boolean {
    if (epoch < 0) return false;
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && last.epoch === epoch && last.startOffset <= startOffset) return false;
    this.entries = this.entries.filter((e) => e.epoch < epoch && e.startOffset < startOffset);
    this.entries.push({ epoch, startOffset });
    return true;
  }

  /**
   * Kafka's endOffsetFor: the end offset of `requestedEpoch` as seen by this log, i.e. the
   * start offset of the next higher epoch, or the log end for the latest epoch.
   */
  endOffsetFor(requestedEpoch: number, logEndOffset: number): { epoch: number; endOffset: number } {
    if (requestedEpoch === UNDEFINED_EPOCH) return { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    if (requestedEpoch === this.latestEpoch) return { epoch: requestedEpoch, endOffset: logEndOffset };
    const higher = this.entries.find((e) => e.epoch > requestedEpoch);
    if (higher === undefined) return { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    let floor: EpochEntry | undefined;
    for (const e of this.entries) if (e.epoch <= requestedEpoch) floor = e;
    if (floor === undefined) return { epoch: requestedEpoch, endOffset: higher.startOffset };
    return { epoch: floor.epoch, endOffset: higher.startOffset };
  }

  /** The epoch of the batch holding `offset` (ListOffsets leader epoch), or -1. */
  epochForOffset(offset: number): number {
    let epoch = UNDEFINED_EPOCH;
    for (const e of this.entries) {
      if (e.startOffset > offset) break;
      epoch = e.epoch;
    }
    return epoch;
  }

  /** Drops entries starting at or after `endOffset` (log truncated to it). */
  truncateFromEnd(endOffset: number): boolean {
    const kept = this.entries.filter((e) => e.startOffset < endOffset);
    if (kept.length === this.entries.length) return false;
    this.entries = kept;
    return true;
  }

  /** Log start moved to `startOffset`: the epoch covering it now starts there. */
  truncateFromStart(startOffset: number): boolean {
    // The last entry starting at or before the new start covers it; earlier ones go.
    let firstKept = 0;
    for (let next = this.entries[1]; next !== undefined && next.startOffset <= startOffset; next = this.entries[firstKept + 1]) {
      firstKept++;
    }
    const kept = this.entries.slice(firstKept);
    const first = kept[0];
    if (first === undefined || (firstKept === 0 && first.startOffset >= startOffset)) return false;
    if (first.startOffset < startOffset) kept[0] = { epoch: first.epoch, startOffset };
    this.entries = kept;
    return true;
  }

  clear(): void {
    this.entries = [];
  }

  /**
   * Writes the checkpoint; calls are serialized so the latest state wins. A partition
   * directory deleted meanwhile (its topic deleted) makes this a no-op: the log is gone. So
   * is a state the file already holds: rewriting (and fsyncing) identical entries buys nothing.
   */
  persist(): Promise<void> {
    if (!this.persistent) return Promise.resolve();
    const snapshot = entryLines(this.entries);
    const text = snapshot.join('\n');
    this.persisting = this.persisting
      .catch(() => undefined)
      .then(async () => {
        if (text === this.persistedLines) return;
        this.persistedLines = null;
        if (await writeCheckpointLines(this.files, this.path, snapshot, true, this.sync)) this.persistedLines = text;
      });
    return this.persisting;
  }
}

function entryLines(entries: readonly EpochEntry[]): string[] {
  return entries.map((e) => `${e.epoch} ${e.startOffset}`);
}
