// The Raft log contract, the leader-epoch cache every implementation shares, and the
// in-memory log used by tests and by voters that keep nothing on disk.

import type { OffsetAndEpoch, RaftBatch, SnapshotId } from './types.ts';
import { lastOffsetOf } from './types.ts';

export interface RaftLog {
  /** First offset still in the log (the latest snapshot's end offset after cleaning). */
  readonly startOffset: number;
  /** Log end offset: the offset the next appended record gets. */
  readonly endOffset: number;
  /** Epoch of the last record, or of the latest snapshot when the log is empty. */
  lastFetchedEpoch(): number;
  appendAsLeader(records: Buffer[], epoch: number, control: boolean, appendTimeMs: number): RaftBatch;
  /** Batches fetched from the leader: offsets already assigned, contiguous with endOffset. */
  appendAsFollower(batches: RaftBatch[]): void;
  /** Whole batches whose last offset is >= fromOffset, at least one when any exists. */
  read(fromOffset: number, maxBytes: number): RaftBatch[];
  /** Drops every record at or above offset. */
  truncateTo(offset: number): void;
  /**
   * The largest epoch <= `epoch` present in the log and the offset where it ends (Kafka's
   * OffsetForLeaderEpoch answer), or epoch -1 / offset -1 when nothing qualifies.
   */
  endOffsetForEpoch(epoch: number): OffsetAndEpoch;
  epochOfOffset(offset: number): number;
  latestSnapshotId(): SnapshotId | null;
  readSnapshot(id: SnapshotId): Buffer | null;
  /** Stores a snapshot of the state below id.endOffset and drops records before it. */
  writeSnapshot(id: SnapshotId, content: Buffer): void;
  /** Replaces the whole log by a snapshot fetched from the leader. */
  installSnapshot(id: SnapshotId, content: Buffer): void;
  /** Resolves once every earlier change is written to the log files (page cache). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function batchSizeBytes(batch: RaftBatch): number {
  let size = 61;
  for (const r of batch.records) size += r.length + 8;
  return size;
}

interface EpochEntry {
  epoch: number;
  startOffset: number;
}

/** Epoch -> start offset, as Kafka's leader-epoch-checkpoint. */
export class EpochCache {
  private entries: EpochEntry[] = [];
  /** The snapshot the log starts after, which answers for epochs the log no longer holds. */
  base: SnapshotId | null = null;

  assign(epoch: number, startOffset: number): void {
    const last = this.entries[this.entries.length - 1];
    if (last !== undefined && last.epoch >= epoch) {
      if (last.epoch === epoch) return;
      throw new Error(`epoch ${epoch} at ${startOffset} after epoch ${last.epoch}`);
    }
    this.entries.push({ epoch, startOffset });
  }

  latestEpoch(): number {
    const last = this.entries[this.entries.length - 1];
    return last?.epoch ?? this.base?.epoch ?? 0;
  }

  truncateFromEnd(offset: number): void {
    this.entries = this.entries.filter((e) => e.startOffset < offset);
  }

  clear(base: SnapshotId): void {
    this.entries = [];
    this.base = base;
  }

  endOffsetFor(epoch: number, logEndOffset: number): OffsetAndEpoch {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const entry = this.entries[i]!;
      if (entry.epoch <= epoch) {
        const next = this.entries[i + 1];
        return { epoch: entry.epoch, offset: next ? next.startOffset : logEndOffset };
      }
    }
    if (this.base !== null && this.base.epoch <= epoch) {
      return { epoch: this.base.epoch, offset: this.base.endOffset };
    }
    return { epoch: -1, offset: -1 };
  }

  epochOf(offset: number): number {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      if (this.entries[i]!.startOffset <= offset) return this.entries[i]!.epoch;
    }
    return this.base?.epoch ?? 0;
  }
}

export class MemoryRaftLog implements RaftLog {
  private batches: RaftBatch[] = [];
  private readonly epochs = new EpochCache();
  private snapshot: { id: SnapshotId; content: Buffer } | null = null;
  private start = 0;
  private end = 0;

  get startOffset(): number {
    return this.start;
  }

  get endOffset(): number {
    return this.end;
  }

  lastFetchedEpoch(): number {
    return this.epochs.latestEpoch();
  }

  appendAsLeader(records: Buffer[], epoch: number, control: boolean, appendTimeMs: number): RaftBatch {
    const batch: RaftBatch = { baseOffset: this.end, epoch, appendTimeMs, control, records };
    this.push(batch);
    return batch;
  }

  appendAsFollower(batches: RaftBatch[]): void {
    for (const batch of batches) {
      if (batch.baseOffset !== this.end) {
        throw new Error(`follower append at ${batch.baseOffset}, log end ${this.end}`);
      }
      this.push(batch);
    }
  }

  private push(batch: RaftBatch): void {
    this.epochs.assign(batch.epoch, batch.baseOffset);
    this.batches.push(batch);
    this.end = lastOffsetOf(batch) + 1;
  }

  read(fromOffset: number, maxBytes: number): RaftBatch[] {
    const out: RaftBatch[] = [];
    let bytes = 0;
    for (let i = this.firstBatchEndingAtOrAfter(fromOffset); i < this.batches.length; i++) {
      const batch = this.batches[i]!;
      const size = batchSizeBytes(batch);
      if (out.length > 0 && bytes + size > maxBytes) break;
      out.push(batch);
      bytes += size;
    }
    return out;
  }

  /** Binary search: batches are sorted by offset and never overlap. */
  private firstBatchEndingAtOrAfter(offset: number): number {
    let lo = 0;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (lastOffsetOf(this.batches[mid]!) < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  truncateTo(offset: number): void {
    this.batches = this.batches.filter((b) => b.baseOffset < offset);
    const last = this.batches[this.batches.length - 1];
    if (last !== undefined && lastOffsetOf(last) >= offset) {
      throw new Error(`truncation to ${offset} splits the batch at ${last.baseOffset}`);
    }
    this.end = last ? lastOffsetOf(last) + 1 : this.start;
    this.epochs.truncateFromEnd(offset);
  }

  endOffsetForEpoch(epoch: number): OffsetAndEpoch {
    return this.epochs.endOffsetFor(epoch, this.end);
  }

  epochOfOffset(offset: number): number {
    return this.epochs.epochOf(offset);
  }

  latestSnapshotId(): SnapshotId | null {
    return this.snapshot?.id ?? null;
  }

  readSnapshot(id: SnapshotId): Buffer | null {
    const s = this.snapshot;
    return s !== null && s.id.endOffset === id.endOffset && s.id.epoch === id.epoch ? s.content : null;
  }

  writeSnapshot(id: SnapshotId, content: Buffer): void {
    this.snapshot = { id, content };
    this.batches = this.batches.filter((b) => lastOffsetOf(b) >= id.endOffset);
    this.start = this.batches[0]?.baseOffset ?? id.endOffset;
  }

  installSnapshot(id: SnapshotId, content: Buffer): void {
    this.snapshot = { id, content };
    this.batches = [];
    this.start = this.end = id.endOffset;
    this.epochs.clear(id);
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {}
}
