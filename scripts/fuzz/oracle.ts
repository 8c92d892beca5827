// What must hold after every batch of frames: the broker is alive, answers ApiVersions on
// a fresh connection within a bound, printed no unhandled error, and still serves every
// record it acknowledged at the offset it acknowledged.
import { ApiKey } from '../../protocol/messages/index.ts';
import type { ApiVersionsResponse } from '../../protocol/messages/api-versions.ts';
import type { FetchResponse } from '../../protocol/messages/fetch.ts';
import type { ProduceResponse } from '../../protocol/messages/produce.ts';
import { makeFetchRequest } from '../../protocol/messages/fetch.ts';
import { batchesIn, readRecords, RecordBatch, validateBatchAt } from '../../protocol/records/index.ts';
import { LEDGER_TOPICS, type ProducedBatch, type RecordKV } from './generator.ts';
import type { Prng } from './prng.ts';
import { FuzzConnection, roundTrip } from './wire.ts';

const MAX_CHECK_DECOMPRESSED_BYTES = 16 * 1024 * 1024;

/**
 * Whether the broker must refuse this batch; returns the reason, or null with the records
 * the batch really holds (which may differ from what was built when it was tampered with).
 */
type BatchVerdict = { invalid: string } | { invalid: null; records: RecordKV[] };

/** Verdicts by batch bytes: pooled requests send the same batch many times; judge it once. */
const verdicts = new WeakMap<Buffer, BatchVerdict>();

export async function judgeBatch(b: ProducedBatch): Promise<BatchVerdict> {
  if (b.knownInvalid) return { invalid: b.knownInvalid };
  const cached = verdicts.get(b.batch);
  if (cached) return cached;
  const verdict = await judgeBatchUncached(b);
  verdicts.set(b.batch, verdict);
  return verdict;
}

async function judgeBatchUncached(b: ProducedBatch): Promise<BatchVerdict> {
  try {
    const size = validateBatchAt(b.batch, 0, b.batch.length, true);
    if (size !== b.batch.length) return { invalid: `batch of ${size} bytes in ${b.batch.length}` };
    const batch = new RecordBatch(b.batch, 0);
    if (batch.isTransactional && !batch.hasProducerId) return { invalid: 'transactional batch with producer id -1' };
    if (batch.isControl) return { invalid: 'control batch from a client' };
    if (batch.recordCount !== batch.lastOffsetDelta + 1)
      return { invalid: `record count ${batch.recordCount} vs lastOffsetDelta ${batch.lastOffsetDelta}` };
    const records = await readRecords(batch, { maxDecompressedBytes: MAX_CHECK_DECOMPRESSED_BYTES });
    for (let i = 0; i < records.length; i++) {
      if (records[i]!.offsetDelta !== i) return { invalid: `record ${i} has offset delta ${records[i]!.offsetDelta}` };
    }
    return { invalid: null, records: records.map((r) => ({ key: r.key ?? Buffer.alloc(0), value: r.value ?? Buffer.alloc(0) })) };
  } catch (err) {
    return { invalid: `undecodable: ${(err as Error).message}` };
  }
}

export interface LedgerEntry {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer;
  value: Buffer;
  ackedBy: string;
}

/** Every acknowledged record, by where the broker said it is. */
export class Ledger {
  readonly entries: LedgerEntry[] = [];

  add(e: LedgerEntry): void {
    this.entries.push(e);
  }
  clear(): void {
    this.entries.length = 0;
  }
  get size(): number {
    return this.entries.length;
  }

  sample(rng: Prng, n: number): LedgerEntry[] {
    if (this.entries.length <= n) return [...this.entries];
    const out: LedgerEntry[] = [];
    for (let i = 0; i < n; i++) out.push(this.entries[rng.int(this.entries.length)]!);
    return out;
  }
}

export interface ProduceVerdict {
  acked: LedgerEntry[];
  /** Batches the broker acknowledged although they are invalid. */
  acceptedInvalid: { batch: ProducedBatch; reason: string }[];
}

/** Reads a Produce response against what was sent. */
export async function judgeProduce(res: ProduceResponse, produced: readonly ProducedBatch[], label: string): Promise<ProduceVerdict> {
  const verdict: ProduceVerdict = { acked: [], acceptedInvalid: [] };
  for (const b of produced) {
    const t = res.responses.find((r) => r.name === b.topic);
    const p = t?.partitionResponses.find((x) => x.index === b.partition);
    if (p?.errorCode !== 0) continue;
    const judged = await judgeBatch(b);
    if (judged.invalid !== null) {
      verdict.acceptedInvalid.push({ batch: b, reason: judged.invalid });
      continue;
    }
    // Only the ledger topics are safe from the fuzzer's own DeleteRecords and configs.
    if (!LEDGER_TOPICS.includes(b.topic) || b.duplicate) continue;
    const base = Number(p.baseOffset);
    if (!Number.isSafeInteger(base) || base < 0) continue;
    judged.records.forEach((r, i) => {
      verdict.acked.push({ topic: b.topic, partition: b.partition, offset: base + i, key: r.key, value: r.value, ackedBy: label });
    });
  }
  return verdict;
}

/** A fresh connection gets an ApiVersions answer within `timeoutMs`; returns the advertised versions or null. */
export async function probeApiVersions(host: string, port: number, timeoutMs: number): Promise<Map<number, [number, number]> | null> {
  const deadline = Date.now() + timeoutMs;
  let conn: FuzzConnection | null = null;
  try {
    conn = await FuzzConnection.open(host, port, timeoutMs);
    const res = await roundTrip<ApiVersionsResponse>(
      conn,
      ApiKey.ApiVersions,
      3,
      1,
      { clientSoftwareName: 'sluice-fuzz', clientSoftwareVersion: '0.1.0' },
      Math.max(1, deadline - Date.now()),
    );
    if (res?.errorCode !== 0) return null;
    return new Map(res.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]));
  } catch {
    return null;
  } finally {
    conn?.close();
  }
}

export interface ReadProblem {
  kind: 'lost-record' | 'changed-record';
  entry: LedgerEntry;
  detail: string;
}

/**
 * Fetches every entry back (grouped per partition, walking forward from the lowest
 * offset). Returns problems, or null when the check could not run (broker unreachable).
 */
export async function checkReadable(
  host: string,
  port: number,
  entries: readonly LedgerEntry[],
  fetchVersion: number,
  timeoutMs: number,
  /** Per fetch; a sample's sparse offsets need only the batch at each (a broker returns at least one). */
  maxBytes = 4 << 20,
): Promise<ReadProblem[] | null> {
  if (entries.length === 0) return [];
  let conn: FuzzConnection;
  try {
    conn = await FuzzConnection.open(host, port, timeoutMs);
  } catch {
    return null;
  }
  const problems: ReadProblem[] = [];
  let correlationId = 100;
  try {
    const groups = new Map<string, LedgerEntry[]>();
    for (const e of entries) {
      const id = `${e.topic}/${e.partition}`;
      (groups.get(id) ?? groups.set(id, []).get(id)!).push(e);
    }
    for (const group of groups.values()) {
      group.sort((a, b) => a.offset - b.offset);
      const want = new Map(group.map((e) => [e.offset, e]));
      const found = new Map<number, RecordKV>();
      let next = group[0]!.offset;
      const last = group[group.length - 1]!.offset;
      let lastError = 0;
      let scan = 0;
      // Bounded by progress (every round moves `next` forward), not by a round count: a
      // long run's ledger partitions hold far more than one fetch returns.
      for (let round = 0; round < 1_000_000 && next <= last; round++) {
        const req = makeFetchRequest({
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes,
          isolationLevel: 0,
          topics: [
            {
              topic: group[0]!.topic,
              topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
              partitions: [
                {
                  partition: group[0]!.partition,
                  currentLeaderEpoch: -1,
                  fetchOffset: BigInt(next),
                  lastFetchedEpoch: -1,
                  logStartOffset: -1n,
                  partitionMaxBytes: maxBytes,
                  replicaDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA',
                },
              ],
            },
          ],
        });
        const res = await roundTrip<FetchResponse>(conn, ApiKey.Fetch, fetchVersion, correlationId++, req, timeoutMs);
        if (!res) return null;
        const p = res.responses[0]?.partitions[0];
        if (!p) break;
        lastError = p.errorCode;
        if (p.errorCode !== 0 || !p.records || p.records.length === 0) break;
        let progressed = false;
        for (const batch of batchesIn(p.records)) {
          let records: Awaited<ReturnType<typeof readRecords>>;
          try {
            records = await readRecords(batch, { maxDecompressedBytes: 64 << 20 });
          } catch {
            continue;
          }
          for (const r of records) {
            if (want.has(r.offset)) found.set(r.offset, { key: r.key ?? Buffer.alloc(0), value: r.value ?? Buffer.alloc(0) });
            if (r.offset >= next) {
              next = r.offset + 1;
              progressed = true;
            }
          }
          if (batch.nextOffset > next) {
            next = batch.nextOffset;
            progressed = true;
          }
        }
        // Skip to the next wanted offset: the ledger may be sparse.
        while (scan < group.length && (group[scan]!.offset < next || found.has(group[scan]!.offset))) scan++;
        const pending = group[scan];
        if (!pending) break;
        if (pending.offset > next) next = pending.offset;
        if (!progressed) break;
      }
      for (const e of group) {
        const got = found.get(e.offset);
        if (!got) {
          problems.push({
            kind: 'lost-record',
            entry: e,
            detail: `offset ${e.offset} of ${e.topic}/${e.partition} not returned (fetch error ${lastError})`,
          });
        } else if (!got.key.equals(e.key) || !got.value.equals(e.value)) {
          problems.push({
            kind: 'changed-record',
            entry: e,
            detail: `offset ${e.offset} of ${e.topic}/${e.partition}: key ${got.key.toString('hex').slice(0, 40)} expected ${e.key.toString('hex').slice(0, 40)}`,
          });
        }
      }
    }
    return problems;
  } finally {
    conn.close();
  }
}

/** New lines of the broker's stderr that report an unhandled error. */
export function unhandledLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => /unhandled|uncaught/i.test(l));
}
