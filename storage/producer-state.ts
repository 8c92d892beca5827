// Producer state for idempotence and transactions, following Kafka's ProducerStateManager
// and ProducerAppendInfo: per producer id the epoch and the metadata of its last five
// batches, used to reject out-of-order or fenced batches and to answer retried duplicates
// with their original offsets. Snapshotted to `%020d.snapshot` files at segment roll and
// close; after a crash the state is the latest snapshot plus a replay of the log after it.

import { join } from 'node:path';
import { InvalidRecordBatchError, type RecordBatch } from '../protocol/records/batch.ts';
import { endTxnMarkerOf, readControlRecordSync } from '../protocol/records/control.ts';
import { crc32c } from '../protocol/crc.ts';
import { type FileContext, writeFileAtomically } from './checkpoint.ts';
import { type BackgroundErrorSink, type ProducerErrorCode, ProducerStateError, isMissingFile, removeFile } from './errors.ts';

export const NUM_BATCHES_TO_RETAIN = 5;
const SNAPSHOT_SUFFIX = '.snapshot';
const SNAPSHOT_VERSION = 1;
const INT32_MAX = 0x7fffffff;

export interface BatchMetadata {
  firstSeq: number;
  lastSeq: number;
  firstOffset: number;
  lastOffset: number;
  timestampMs: number;
}

export interface ProducerStateEntry {
  producerId: bigint;
  producerEpoch: number;
  /** Oldest first, at most NUM_BATCHES_TO_RETAIN. */
  batches: BatchMetadata[];
  coordinatorEpoch: number;
  lastTimestampMs: number;
  /** First offset of the open transaction, or -1. */
  currentTxnFirstOffset: number;
}

/** What DescribeProducers reports per producer. */
export interface ProducerDescription {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly lastSequence: number;
  readonly lastTimestampMs: number;
  readonly coordinatorEpoch: number;
  /** First offset of the producer's open transaction, -1 when none. */
  readonly currentTxnStartOffset: number;
}

export type ProducerCheck =
  | { result: 'ok' }
  | { result: 'duplicate'; firstOffset: number; lastOffset: number; timestampMs: number }
  | { result: 'error'; code: ProducerErrorCode; message: string };

/** A transaction a COMMIT or ABORT marker closed (Kafka's CompletedTxn). */
export interface CompletedTxn {
  readonly producerId: bigint;
  /** The transaction's first offset (the marker's own when it had no batch here). */
  readonly firstOffset: number;
  /** The marker's offset. */
  readonly lastOffset: number;
  readonly isAborted: boolean;
  /** The last stable offset once the transaction is complete: the next open transaction's first offset, else after the marker. */
  readonly lastStableOffset: number;
}

/**
 * The commit/abort marker of a control batch; null for other control records and for one
 * that cannot be read (a log that holds it must still load: it closes no transaction).
 */
function markerOf(batch: RecordBatch): { commit: boolean; coordinatorEpoch: number } | null {
  try {
    const marker = endTxnMarkerOf(batch, readControlRecordSync(batch));
    return marker === null ? null : { commit: marker.commit, coordinatorEpoch: marker.coordinatorEpoch };
  } catch (err) {
    if (err instanceof InvalidRecordBatchError) return null;
    throw err;
  }
}

export type AppendOrigin = 'client' | 'replication' | 'coordinator';

/**
 * KIP-890 part 1: the token a broker holds while it asks the transaction coordinator whether a
 * partition is in a producer's transaction. The first transactional batch of a producer's
 * transaction on the partition is appended only with the guard the state still holds: a
 * marker written meanwhile (the transaction ended) drops it, so a late batch cannot open a
 * transaction that would never end (a hanging transaction).
 */
export interface VerificationGuard {
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/** An append's verification: required, with the guard obtained (null when there was none). */
export interface TransactionVerification {
  readonly guard: VerificationGuard | null;
}

/**
 * Sluice: verifications a partition holds at once. A verification the coordinator refuses is
 * dropped at once; one that never completes (a request that died) is dropped, oldest first,
 * beyond this many, so requests with made-up producer ids cannot grow the state without bound.
 */
const MAX_PENDING_VERIFICATIONS = 1000;

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === INT32_MAX);
}

function lastSeqOf(entry: ProducerStateEntry): number {
  const b = entry.batches[entry.batches.length - 1];
  return b === undefined ? -1 : b.lastSeq;
}

export class ProducerStateManager {
  private producers = new Map<bigint, ProducerStateEntry>();
  /** First offset of each producer's open transaction (Kafka's ongoingTxns). */
  private ongoingTxns = new Map<bigint, number>();
  /**
   * Transactions whose marker is not below the high watermark yet (Kafka's unreplicatedTxns):
   * until it is, a new leader may not have the marker, so they stay unstable.
   */
  private unreplicatedTxns: { firstOffset: number; lastOffset: number }[] = [];
  /** The state reflects the log up to (not including) this offset. */
  mapEndOffset = 0;
  private readonly verificationGuards = new Map<bigint, VerificationGuard>();

  /** `onError`: where unreadable snapshots (skipped) and failed snapshot deletions are reported. */
  constructor(
    private readonly files: FileContext,
    readonly dir: string,
    private readonly onError: BackgroundErrorSink,
  ) {}

  get(producerId: bigint): ProducerStateEntry | undefined {
    return this.producers.get(producerId);
  }

  get size(): number {
    return this.producers.size;
  }

  describe(): ProducerDescription[] {
    return [...this.producers.values()].map((e) => ({
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      lastSequence: lastSeqOf(e),
      lastTimestampMs: e.lastTimestampMs,
      coordinatorEpoch: e.coordinatorEpoch,
      currentTxnStartOffset: e.currentTxnFirstOffset,
    }));
  }

  /**
   * Checks the batches of one append from a client against the state, in order (a request
   * may hold several batches of the same producer). Returns the first duplicate or error.
   * A coordinator's batches (origin 'coordinator': transactional offset commits, markers) are
   * checked for their epoch only: they carry no sequence (Kafka's ProducerAppendInfo checks
   * sequences for client appends alone).
   */
  check(batches: readonly RecordBatch[], origin: AppendOrigin = 'client', verification?: TransactionVerification): ProducerCheck {
    const pending = new Map<bigint, { epoch: number; lastSeq: number }>();
    for (const batch of batches) {
      if (!batch.hasProducerId) continue;
      if (batch.isControl) {
        const fenced = this.checkMarker(batch);
        if (fenced !== null) return fenced;
        continue;
      }
      const pid = batch.producerId;
      const current = this.producers.get(pid);
      const firstSeq = batch.baseSequence;
      const epoch = batch.producerEpoch;
      const seen = pending.get(pid);
      if (origin === 'coordinator') {
        if (current !== undefined && epoch < current.producerEpoch) {
          return {
            result: 'error',
            code: 'INVALID_PRODUCER_EPOCH',
            message: `epoch ${epoch} of producer ${pid} is older than the current epoch ${current.producerEpoch}`,
          };
        }
        const unverified = seen === undefined ? this.missesVerification(batch, verification) : null;
        if (unverified !== null) return unverified;
        pending.set(pid, { epoch, lastSeq: batch.lastSequence });
        continue;
      }
      if (seen === undefined && current !== undefined && epoch === current.producerEpoch) {
        const dup = current.batches.find((b) => b.firstSeq === firstSeq && b.lastSeq === batch.lastSequence);
        if (dup !== undefined) {
          return { result: 'duplicate', firstOffset: dup.firstOffset, lastOffset: dup.lastOffset, timestampMs: dup.timestampMs };
        }
      }
      const currentEpoch = seen?.epoch ?? current?.producerEpoch ?? -1;
      if (current !== undefined && epoch < current.producerEpoch) {
        return {
          result: 'error',
          code: 'INVALID_PRODUCER_EPOCH',
          message: `epoch ${epoch} of producer ${pid} is older than the current epoch ${current.producerEpoch}`,
        };
      }
      if (epoch !== currentEpoch) {
        if (firstSeq !== 0 && currentEpoch !== -1) {
          return {
            result: 'error',
            code: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
            message: `producer ${pid} starts new epoch ${epoch} at sequence ${firstSeq}, expected 0`,
          };
        }
      } else {
        const lastSeq = seen !== undefined ? seen.lastSeq : current !== undefined ? lastSeqOf(current) : -1;
        // No recorded batches (all removed by retention or DeleteRecords): any sequence is accepted.
        const noHistory = seen === undefined && (current === undefined || current.batches.length === 0);
        if (!noHistory && !inSequence(lastSeq, firstSeq)) {
          return {
            result: 'error',
            code: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
            message: `out of order sequence for producer ${pid}: ${firstSeq} after ${lastSeq} (epoch ${epoch})`,
          };
        }
      }
      const unverified = seen === undefined ? this.missesVerification(batch, verification) : null;
      if (unverified !== null) return unverified;
      pending.set(pid, { epoch, lastSeq: batch.lastSequence });
    }
    return { result: 'ok' };
  }

  /**
   * KIP-890 part 1: a transactional batch that would open its producer's transaction here
   * needs the verification guard the state still holds (when the append asks for verification).
   */
  private missesVerification(batch: RecordBatch, verification: TransactionVerification | undefined): ProducerCheck | null {
    if (verification === undefined || !batch.isTransactional) return null;
    const pid = batch.producerId;
    if (this.hasOngoingTransaction(pid, batch.producerEpoch)) return null;
    if (verification.guard !== null && verification.guard === this.verificationGuards.get(pid)) return null;
    return { result: 'error', code: 'INVALID_TXN_STATE', message: `record of producer ${pid} was not part of an ongoing transaction` };
  }

  /** Whether the producer, at this epoch, has a transaction open on the partition. */
  hasOngoingTransaction(producerId: bigint, producerEpoch: number): boolean {
    const entry = this.producers.get(producerId);
    return entry !== undefined && entry.currentTxnFirstOffset >= 0 && entry.producerEpoch === producerEpoch;
  }

  /**
   * Starts (or joins) the verification of the producer's transaction on the partition; null
   * when its transaction is open here already and needs none (Kafka's maybeStartTransactionVerification).
   */
  startVerification(producerId: bigint, producerEpoch: number): VerificationGuard | null {
    if (this.hasOngoingTransaction(producerId, producerEpoch)) return null;
    const existing = this.verificationGuards.get(producerId);
    if (existing !== undefined && existing.producerEpoch >= producerEpoch) return existing;
    const guard: VerificationGuard = { producerId, producerEpoch };
    this.verificationGuards.delete(producerId);
    this.verificationGuards.set(producerId, guard);
    for (const oldest of this.verificationGuards.keys()) {
      if (this.verificationGuards.size <= MAX_PENDING_VERIFICATIONS) break;
      this.verificationGuards.delete(oldest);
    }
    return guard;
  }

  /** The coordinator refused the verification: the guard is of no use any more. */
  abandonVerification(guard: VerificationGuard): void {
    if (this.verificationGuards.get(guard.producerId) === guard) this.verificationGuards.delete(guard.producerId);
  }

  /** Verifications started and not yet used, refused or voided. */
  get pendingVerifications(): number {
    return this.verificationGuards.size;
  }

  /**
   * Kafka's ProducerAppendInfo.appendEndTxnMarker checks: a marker of an older producer epoch,
   * or from an older transaction coordinator, is refused.
   */
  private checkMarker(batch: RecordBatch): ProducerCheck | null {
    const current = this.producers.get(batch.producerId);
    if (current === undefined) return null;
    if (batch.producerEpoch < current.producerEpoch) {
      return {
        result: 'error',
        code: 'INVALID_PRODUCER_EPOCH',
        message: `marker of epoch ${batch.producerEpoch} for producer ${batch.producerId} is older than the current epoch ${current.producerEpoch}`,
      };
    }
    const marker = markerOf(batch);
    if (marker !== null && marker.coordinatorEpoch < current.coordinatorEpoch) {
      return {
        result: 'error',
        code: 'TRANSACTION_COORDINATOR_FENCED',
        message: `marker for producer ${batch.producerId} from coordinator epoch ${marker.coordinatorEpoch}, older than ${current.coordinatorEpoch}`,
      };
    }
    return null;
  }

  /** Like `check` but throws ProducerStateError; returns the duplicate if there is one. */
  checkOrThrow(
    batches: readonly RecordBatch[],
    origin: AppendOrigin = 'client',
    verification?: TransactionVerification,
  ): ProducerCheck & { result: 'ok' | 'duplicate' } {
    const r = this.check(batches, origin, verification);
    if (r.result === 'error') throw new ProducerStateError(r.code, r.message);
    return r;
  }

  /**
   * Records an appended batch (offsets already assigned); `logAppendTimeMs` -1 for CreateTime.
   * Returns the transaction a COMMIT or ABORT marker closed, else null.
   */
  update(batch: RecordBatch, logAppendTimeMs: number): CompletedTxn | null {
    const end = batch.nextOffset;
    if (end > this.mapEndOffset) this.mapEndOffset = end;
    if (!batch.hasProducerId) return null;
    const pid = batch.producerId;
    const epoch = batch.producerEpoch;
    let entry = this.producers.get(pid);
    if (entry === undefined) {
      entry = { producerId: pid, producerEpoch: epoch, batches: [], coordinatorEpoch: -1, lastTimestampMs: -1, currentTxnFirstOffset: -1 };
      this.producers.set(pid, entry);
    }
    if (epoch > entry.producerEpoch || (epoch !== entry.producerEpoch && !batch.isControl)) {
      entry.producerEpoch = epoch;
      entry.batches = [];
    }
    const timestampMs = logAppendTimeMs >= 0 ? logAppendTimeMs : batch.maxTimestamp;
    entry.lastTimestampMs = timestampMs;
    if (batch.isControl) {
      // The transaction ended: a verification begun before cannot open the next one.
      this.verificationGuards.delete(pid);
      return this.completeTxn(entry, batch);
    }
    if (batch.isTransactional && entry.currentTxnFirstOffset < 0) {
      this.verificationGuards.delete(pid);
      entry.currentTxnFirstOffset = batch.baseOffset;
      this.ongoingTxns.set(pid, batch.baseOffset);
    }
    if (batch.baseSequence >= 0) {
      entry.batches.push({
        firstSeq: batch.baseSequence,
        lastSeq: batch.lastSequence,
        firstOffset: batch.baseOffset,
        lastOffset: batch.lastOffset,
        timestampMs,
      });
      if (entry.batches.length > NUM_BATCHES_TO_RETAIN) entry.batches.shift();
    }
    return null;
  }

  /** A commit or abort marker closes the producer's open transaction. */
  private completeTxn(entry: ProducerStateEntry, batch: RecordBatch): CompletedTxn | null {
    const marker = markerOf(batch);
    if (marker === null) return null;
    entry.coordinatorEpoch = marker.coordinatorEpoch;
    const wasOpen = entry.currentTxnFirstOffset >= 0;
    const firstOffset = wasOpen ? entry.currentTxnFirstOffset : batch.baseOffset;
    entry.currentTxnFirstOffset = -1;
    this.ongoingTxns.delete(entry.producerId);
    let lastStableOffset = batch.baseOffset + 1;
    for (const first of this.ongoingTxns.values()) lastStableOffset = Math.min(lastStableOffset, first);
    if (wasOpen) this.unreplicatedTxns.push({ firstOffset, lastOffset: batch.baseOffset });
    return { producerId: entry.producerId, firstOffset, lastOffset: batch.baseOffset, isAborted: !marker.commit, lastStableOffset };
  }

  /**
   * The first offset a read_committed consumer may not read yet: the start of the oldest open
   * transaction, or of a completed one whose marker the high watermark has not passed; null
   * when there is none.
   */
  get firstUnstableOffset(): number | null {
    let first: number | null = null;
    for (const offset of this.ongoingTxns.values()) if (first === null || offset < first) first = offset;
    for (const t of this.unreplicatedTxns) if (first === null || t.firstOffset < first) first = t.firstOffset;
    return first;
  }

  /** The high watermark moved: completed transactions whose marker is below it are stable. */
  onHighWatermarkUpdated(highWatermark: number): void {
    if (this.unreplicatedTxns.length === 0) return;
    this.unreplicatedTxns = this.unreplicatedTxns.filter((t) => t.lastOffset >= highWatermark);
  }

  /** The log start moved: forget batches below it and producers with nothing left. */
  truncateHead(logStartOffset: number): void {
    for (const [pid, entry] of this.producers) {
      entry.batches = entry.batches.filter((b) => b.lastOffset >= logStartOffset);
      if (entry.batches.length === 0 && entry.currentTxnFirstOffset < 0) this.producers.delete(pid);
    }
  }

  reset(offset: number): void {
    this.verificationGuards.clear();
    this.producers.clear();
    this.ongoingTxns.clear();
    this.unreplicatedTxns = [];
    this.mapEndOffset = offset;
  }

  /** Offsets of the snapshot files present, ascending. */
  async snapshotOffsets(): Promise<number[]> {
    let names: string[];
    try {
      names = await this.files.fileSystem.readdir(this.dir);
    } catch (err) {
      // A partition directory deleted meanwhile has no snapshots; anything else is reported.
      if (!isMissingFile(err)) this.onError(err, `listing the producer snapshots of ${this.dir}`);
      return [];
    }
    return names
      .filter((n) => n.endsWith(SNAPSHOT_SUFFIX))
      .map((n) => Number(n.slice(0, -SNAPSHOT_SUFFIX.length)))
      .filter((n) => Number.isSafeInteger(n))
      .sort((a, b) => a - b);
  }

  snapshotPath(offset: number): string {
    return join(this.dir, `${String(offset).padStart(20, '0')}${SNAPSHOT_SUFFIX}`);
  }

  /**
   * Writes `<mapEndOffset>.snapshot` without fsync: a torn snapshot fails its CRC on load and
   * the previous snapshot plus a replay of the log take its place.
   */
  async takeSnapshot(): Promise<void> {
    await writeFileAtomically(this.files, this.snapshotPath(this.mapEndOffset), this.encode(), false);
  }

  /**
   * Loads the latest readable snapshot at or below `maxOffset` (corrupt ones are deleted).
   * Returns the offset the state now reflects; the caller replays the log from there.
   */
  async loadLatestSnapshot(maxOffset: number, floorOffset: number): Promise<number> {
    const offsets = (await this.snapshotOffsets()).filter((o) => o <= maxOffset).reverse();
    for (const offset of offsets) {
      const path = this.snapshotPath(offset);
      try {
        this.decode(await this.files.fileSystem.readFile(path));
        this.mapEndOffset = offset;
        return offset;
      } catch (err) {
        // The previous snapshot and a longer replay of the log take its place.
        this.onError(err, `reading the producer snapshot ${path} (skipped and deleted)`);
        await removeFile(this.files.fileSystem, path, this.onError);
      }
    }
    this.reset(floorOffset);
    return floorOffset;
  }

  /** Deletes snapshots above `offset` (log truncation) or below it (log start moved). */
  async deleteSnapshots(predicate: (offset: number) => boolean): Promise<void> {
    for (const o of await this.snapshotOffsets()) {
      if (predicate(o)) await removeFile(this.files.fileSystem, this.snapshotPath(o), this.onError);
    }
  }

  private encode(): Buffer {
    const entries = [...this.producers.values()];
    let size = 2 + 4 + 4;
    for (const e of entries) size += 8 + 2 + 4 + 8 + 8 + 8 + 4 + e.batches.length * 32;
    const buf = Buffer.alloc(size);
    let p = 0;
    buf.writeInt16BE(SNAPSHOT_VERSION, p);
    p += 2;
    p += 4; // CRC-32C of the rest, written last
    buf.writeInt32BE(entries.length, p);
    p += 4;
    for (const e of entries) {
      buf.writeBigInt64BE(e.producerId, p);
      p += 8;
      buf.writeInt16BE(e.producerEpoch, p);
      p += 2;
      buf.writeInt32BE(e.coordinatorEpoch, p);
      p += 4;
      buf.writeBigInt64BE(BigInt(e.lastTimestampMs), p);
      p += 8;
      buf.writeBigInt64BE(BigInt(e.currentTxnFirstOffset), p);
      p += 8;
      buf.writeBigInt64BE(0n, p);
      p += 8;
      buf.writeInt32BE(e.batches.length, p);
      p += 4;
      for (const b of e.batches) {
        buf.writeInt32BE(b.firstSeq, p);
        p += 4;
        buf.writeInt32BE(b.lastSeq, p);
        p += 4;
        buf.writeBigInt64BE(BigInt(b.firstOffset), p);
        p += 8;
        buf.writeBigInt64BE(BigInt(b.lastOffset), p);
        p += 8;
        buf.writeBigInt64BE(BigInt(b.timestampMs), p);
        p += 8;
      }
    }
    buf.writeUInt32BE(crc32c(buf.subarray(6)), 2);
    return buf;
  }

  private decode(buf: Buffer): void {
    if (buf.length < 10 || buf.readInt16BE(0) !== SNAPSHOT_VERSION) throw new Error('unknown snapshot version');
    if (buf.readUInt32BE(2) !== crc32c(buf.subarray(6))) throw new Error('snapshot CRC mismatch');
    const producers = new Map<bigint, ProducerStateEntry>();
    let p = 6;
    const count = buf.readInt32BE(p);
    p += 4;
    for (let i = 0; i < count; i++) {
      const producerId = buf.readBigInt64BE(p);
      p += 8;
      const producerEpoch = buf.readInt16BE(p);
      p += 2;
      const coordinatorEpoch = buf.readInt32BE(p);
      p += 4;
      const lastTimestampMs = Number(buf.readBigInt64BE(p));
      p += 8;
      const currentTxnFirstOffset = Number(buf.readBigInt64BE(p));
      p += 8;
      p += 8;
      const n = buf.readInt32BE(p);
      p += 4;
      const batches: BatchMetadata[] = [];
      for (let j = 0; j < n; j++) {
        const firstSeq = buf.readInt32BE(p);
        p += 4;
        const lastSeq = buf.readInt32BE(p);
        p += 4;
        const firstOffset = Number(buf.readBigInt64BE(p));
        p += 8;
        const lastOffset = Number(buf.readBigInt64BE(p));
        p += 8;
        const timestampMs = Number(buf.readBigInt64BE(p));
        p += 8;
        batches.push({ firstSeq, lastSeq, firstOffset, lastOffset, timestampMs });
      }
      producers.set(producerId, { producerId, producerEpoch, batches, coordinatorEpoch, lastTimestampMs, currentTxnFirstOffset });
    }
    this.producers = producers;
    this.ongoingTxns = new Map();
    for (const e of producers.values()) if (e.currentTxnFirstOffset >= 0) this.ongoingTxns.set(e.producerId, e.currentTxnFirstOffset);
    this.unreplicatedTxns = [];
  }
}
