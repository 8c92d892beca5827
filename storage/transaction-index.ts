// A segment's aborted-transaction index (Kafka's TransactionIndex, `<base>.txnindex`): one
// entry per ABORT marker written in the segment, so that a read_committed fetch can tell its
// consumer which producers' records in the range it reads to drop. Entries are 34 bytes, as
// Kafka lays them out: version int16 (0), producer id int64, first offset int64 (the
// transaction's first batch), last offset int64 (the marker's), last stable offset int64 (the
// LSO once the marker was written). The file exists only once a segment has an entry.

import type { FileHandlePool } from './file-pool.ts';
import { isMissingFile, toStorageIOError } from './errors.ts';

export const TXN_INDEX_SUFFIX = '.txnindex';
export const ABORTED_TXN_ENTRY_BYTES = 34;
const ENTRY_VERSION = 0;

export interface AbortedTxn {
  readonly producerId: bigint;
  readonly firstOffset: number;
  /** The offset of the ABORT marker. */
  readonly lastOffset: number;
  /** The last stable offset right after the marker: every transaction below it was complete. */
  readonly lastStableOffset: number;
}

export interface AbortedTxnSearch {
  readonly aborted: AbortedTxn[];
  /** True when an entry's LSO reached the upper bound: no later segment can hold an overlapping one. */
  readonly complete: boolean;
}

export function encodeAbortedTxn(e: AbortedTxn): Buffer {
  const buf = Buffer.allocUnsafe(ABORTED_TXN_ENTRY_BYTES);
  buf.writeInt16BE(ENTRY_VERSION, 0);
  buf.writeBigInt64BE(e.producerId, 2);
  buf.writeBigInt64BE(BigInt(e.firstOffset), 10);
  buf.writeBigInt64BE(BigInt(e.lastOffset), 18);
  buf.writeBigInt64BE(BigInt(e.lastStableOffset), 26);
  return buf;
}

/** The whole entries of an index file; a torn last entry (a crash mid-write) is left out. */
export function decodeAbortedTxns(buf: Buffer, path: string): AbortedTxn[] {
  const entries: AbortedTxn[] = [];
  for (let p = 0; p + ABORTED_TXN_ENTRY_BYTES <= buf.length; p += ABORTED_TXN_ENTRY_BYTES) {
    const version = buf.readInt16BE(p);
    if (version !== ENTRY_VERSION) throw new Error(`${path}: aborted transaction entry of unknown version ${version} at byte ${p}`);
    entries.push({
      producerId: buf.readBigInt64BE(p + 2),
      firstOffset: Number(buf.readBigInt64BE(p + 10)),
      lastOffset: Number(buf.readBigInt64BE(p + 18)),
      lastStableOffset: Number(buf.readBigInt64BE(p + 26)),
    });
  }
  return entries;
}

export class TransactionIndex {
  /** In memory once read (or once the first entry of a new index is added). */
  private entries: AbortedTxn[] | null;
  /** Whether the file may hold entries: false spares a segment without one any read. */
  private mayHaveEntries: boolean;

  /** `exists`: whether the file was found when the segment was opened (false for a new segment). */
  constructor(
    readonly path: string,
    private readonly pool: FileHandlePool,
    exists: boolean,
  ) {
    this.mayHaveEntries = exists;
    this.entries = exists ? null : [];
  }

  get isEmpty(): boolean {
    return !this.mayHaveEntries;
  }

  all(): Promise<readonly AbortedTxn[]> {
    return this.load();
  }

  private async load(): Promise<AbortedTxn[]> {
    if (this.entries !== null) return this.entries;
    let buf: Buffer;
    try {
      buf = await this.pool.fileSystem.readFile(this.path);
    } catch (err) {
      if (!isMissingFile(err)) throw toStorageIOError(err, `reading ${this.path}`);
      buf = Buffer.alloc(0);
    }
    // A concurrent reader may have loaded it meanwhile: the first load stands.
    this.entries ??= decodeAbortedTxns(buf, this.path);
    this.mayHaveEntries = this.entries.length > 0;
    return this.entries;
  }

  /**
   * Adds the entry of an ABORT marker unless the index holds one for that marker already
   * (a replay of the log after a restart meets markers it indexed before).
   */
  async append(entry: AbortedTxn): Promise<void> {
    const entries = await this.load();
    const last = entries[entries.length - 1];
    if (last !== undefined && last.lastOffset >= entry.lastOffset) {
      if (entries.some((e) => e.lastOffset === entry.lastOffset)) return;
      throw new Error(`${this.path}: aborted transaction ending at ${entry.lastOffset} is not after the last one (${last.lastOffset})`);
    }
    const position = entries.length * ABORTED_TXN_ENTRY_BYTES;
    try {
      if (entries.length === 0) await this.pool.create(this.path);
      const lease = await this.pool.acquire(this.path);
      try {
        await this.pool.write(lease.handle, encodeAbortedTxn(entry), position);
      } finally {
        lease.release();
      }
    } catch (err) {
      throw toStorageIOError(err, `writing ${this.path}`);
    }
    entries.push(entry);
    this.mayHaveEntries = true;
  }

  /** Kafka's TransactionIndex.collectAbortedTxns: the entries overlapping [fetchOffset, upperBoundOffset). */
  async collect(fetchOffset: number, upperBoundOffset: number): Promise<AbortedTxnSearch> {
    if (!this.mayHaveEntries) return { aborted: [], complete: false };
    const aborted: AbortedTxn[] = [];
    for (const e of await this.all()) {
      if (e.lastOffset >= fetchOffset && e.firstOffset < upperBoundOffset) aborted.push(e);
      if (e.lastStableOffset >= upperBoundOffset) return { aborted, complete: true };
    }
    return { aborted, complete: false };
  }

  /** Drops the entries of markers at or after `offset` (the log was cut there). */
  async truncateTo(offset: number): Promise<void> {
    if (!this.mayHaveEntries) return;
    const entries = await this.load();
    let keep = entries.length;
    while (keep > 0 && (entries[keep - 1]?.lastOffset ?? -1) >= offset) keep--;
    if (keep === entries.length) return;
    this.pool.invalidate(this.path);
    try {
      await this.pool.fileSystem.truncate(this.path, keep * ABORTED_TXN_ENTRY_BYTES);
    } catch (err) {
      throw toStorageIOError(err, `truncating ${this.path}`);
    }
    entries.length = keep;
    this.mayHaveEntries = keep > 0;
  }
}
