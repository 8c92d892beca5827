// The Raft log contract, the byte form of its batches, the leader-epoch cache every
// implementation shares, and the in-memory log used by tests and by voters that keep
// nothing on disk.

import { DecodeError } from '../../../protocol/primitives.ts';
import {
  CompressionType,
  ControlRecordType,
  batchesIn,
  buildUncompressedRecordBatch,
  decodeControlRecordKey,
  encodeControlRecordKey,
  iterateRecords,
} from '../../../protocol/records/index.ts';
import type { OffsetAndEpoch, RaftBatch, SnapshotId } from './types.ts';
import { lastOffsetOf } from './types.ts';

export interface RaftLog {
  /** First offset still in the log (the latest snapshot's end offset after cleaning). */
  readonly startOffset: number;
  /** Log end offset: the offset the next appended record gets. */
  readonly endOffset: number;
  /** Epoch of the last record, or of the latest snapshot when the log is empty. */
  lastFetchedEpoch(): number;
  /** `controlType` names the records of a control batch (LeaderChange when absent). */
  appendAsLeader(records: Buffer[], epoch: number, control: boolean, appendTimeMs: number, controlType?: ControlRecordType): RaftBatch;
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

/**
 * A Raft batch as Kafka stores it in `__cluster_metadata-0` and in snapshots: an
 * uncompressed v2 record batch whose partitionLeaderEpoch is the Raft epoch, every record
 * stamped with the append time. Data records have null keys; the records of a control batch
 * carry the control key of the batch's controlType, else of `controlType` (LeaderChange
 * unless a snapshot header or footer).
 */
export function encodeRaftBatch(batch: RaftBatch, controlType: ControlRecordType = ControlRecordType.LeaderChange): Buffer {
  const key = batch.control ? encodeControlRecordKey(batch.controlType ?? controlType) : null;
  return buildUncompressedRecordBatch(
    { baseOffset: batch.baseOffset, partitionLeaderEpoch: batch.epoch, isControl: batch.control },
    batch.records.map((value) => ({ key, value, timestamp: batch.appendTimeMs })),
  );
}

/**
 * Every batch in `buf`, framing and CRC-32C checked; values are copied out of `buf`. A control
 * batch takes the type of its first record's key: Sluice writes one type per control batch.
 */
export function decodeRaftBatches(buf: Buffer): RaftBatch[] {
  const out: RaftBatch[] = [];
  for (const batch of batchesIn(buf, true)) {
    if (batch.compression !== CompressionType.None) throw new DecodeError('compressed metadata batches are not supported');
    const records: Buffer[] = [];
    let controlType: ControlRecordType | undefined;
    for (const record of iterateRecords(batch, batch.recordsPayload())) {
      if (batch.isControl && controlType === undefined) controlType = decodeControlRecordKey(record.key).type;
      records.push(record.value === null ? Buffer.alloc(0) : Buffer.from(record.value));
    }
    const decoded: RaftBatch = {
      baseOffset: batch.baseOffset,
      epoch: batch.partitionLeaderEpoch,
      appendTimeMs: batch.maxTimestamp,
      control: batch.isControl,
      records,
    };
    if (controlType !== undefined) decoded.controlType = controlType;
    out.push(decoded);
  }
  return out;
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
    // Epochs increase along the entries: the floor is the last at or below `epoch`.
    let floor: EpochEntry | undefined;
    let next: EpochEntry | undefined;
    for (const entry of this.entries) {
      if (entry.epoch > epoch) {
        next = entry;
        break;
      }
      floor = entry;
    }
    if (floor !== undefined) return { epoch: floor.epoch, offset: next ? next.startOffset : logEndOffset };
    if (this.base !== null && this.base.epoch <= epoch) {
      return { epoch: this.base.epoch, offset: this.base.endOffset };
    }
    return { epoch: -1, offset: -1 };
  }

  epochOf(offset: number): number {
    // Start offsets increase along the entries: the epoch is the last one starting at or before `offset`.
    let epoch = this.base?.epoch ?? 0;
    for (const entry of this.entries) {
      if (entry.startOffset > offset) break;
      epoch = entry.epoch;
    }
    return epoch;
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

  appendAsLeader(records: Buffer[], epoch: number, control: boolean, appendTimeMs: number, controlType?: ControlRecordType): RaftBatch {
    const batch: RaftBatch = { baseOffset: this.end, epoch, appendTimeMs, control, records };
    if (control && controlType !== undefined) batch.controlType = controlType;
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
      const batch = this.batches[i];
      if (batch === undefined) break;
      const sizeBytes = batchSizeBytes(batch);
      if (out.length > 0 && bytes + sizeBytes > maxBytes) break;
      out.push(batch);
      bytes += sizeBytes;
    }
    return out;
  }

  /** Binary search: batches are sorted by offset and never overlap. */
  private firstBatchEndingAtOrAfter(offset: number): number {
    let lo = 0;
    let hi = this.batches.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const batch = this.batches[mid];
      if (batch !== undefined && lastOffsetOf(batch) < offset) lo = mid + 1;
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
