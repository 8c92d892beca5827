/**
 * Records as a consumer reads them, over the wire: the data records of a Fetch answer (control
 * batches skipped, a batch cut short at the size limit left for the next Fetch), and a bounded
 * read of one partition from an offset, for tools that browse a log.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import { InvalidRecordBatchError, RecordBatch, validateBatchAt } from '../../protocol/records/batch.ts';
import { type RecordHeader, readRecords } from '../../protocol/records/record.ts';
import type { KafkaCluster } from './cluster.ts';
import { brokerError } from './errors.ts';

/** Topic names travel in Fetch up to v12; v13+ carries topic ids only. */
export const FETCH_MAX_VERSION = 12;

/** A record read back, with where it was stored. */
export interface ConsumerRecord {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: readonly RecordHeader[];
}

/** The data records of a Fetch answer from `position` on (before `end` when set), and the next position. */
export async function recordsIn(
  topic: string,
  partition: number,
  data: Buffer,
  position: number,
  end: number | null,
): Promise<{ records: ConsumerRecord[]; next: number }> {
  const out: ConsumerRecord[] = [];
  let next = position;
  let at = 0;
  while (at < data.length) {
    let size: number;
    try {
      size = validateBatchAt(data, at, data.length, false);
    } catch (err) {
      // The broker may cut the last batch short at the size limit: the next Fetch gets it whole.
      if (err instanceof InvalidRecordBatchError && err.kind === 'truncated') break;
      throw err;
    }
    const batch = new RecordBatch(data, at);
    at += size;
    if (batch.nextOffset <= next) continue;
    if (!batch.isControl) {
      for (const r of await readRecords(batch)) {
        if (r.offset < next || (end !== null && r.offset >= end)) continue;
        out.push({ topic, partition, offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value, headers: r.headers });
      }
    }
    next = batch.nextOffset;
  }
  return { records: out, next };
}

/** How much one Fetch of a browse may bring. */
const BROWSE_FETCH_MAX_BYTES = 1024 * 1024;
/** Fetches of one browse before it gives up reaching `maxRecords` (a log of control batches, say). */
const BROWSE_MAX_FETCHES = 16;

/**
 * Up to `maxRecords` data records of one partition from `offset` on, below its high watermark
 * (the end of what read_uncommitted consumers see) as the first Fetch reports it.
 */
export async function readPartition(
  cluster: KafkaCluster,
  topic: string,
  partition: number,
  offset: number,
  maxRecords: number,
): Promise<{ records: ConsumerRecord[]; highWatermark: number; logStartOffset: number }> {
  const records: ConsumerRecord[] = [];
  let position = offset;
  let end = -1;
  let logStartOffset = -1;
  for (let fetches = 0; fetches < BROWSE_MAX_FETCHES && records.length < maxRecords; fetches++) {
    const conn = await cluster.leaderConnection(topic, partition);
    const res = await conn.send<FetchResponse>(
      ApiKey.Fetch,
      makeFetchRequest({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: BROWSE_FETCH_MAX_BYTES,
        isolationLevel: 0,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          makeFetchRequestFetchTopic({
            topic,
            partitions: [
              makeFetchRequestFetchPartition({ partition, fetchOffset: BigInt(position), partitionMaxBytes: BROWSE_FETCH_MAX_BYTES }),
            ],
          }),
        ],
      }),
      conn.version(ApiKey.Fetch, FETCH_MAX_VERSION),
    );
    if (res.errorCode !== Errors.NONE.code) throw brokerError(res.errorCode, null, `Fetch ${topic}-${partition}`);
    const data = res.responses.flatMap((t) => t.partitions).find((p) => p.partitionIndex === partition);
    if (data === undefined) throw new Error(`Fetch answered without ${topic}-${partition}`);
    if (data.errorCode !== Errors.NONE.code) throw brokerError(data.errorCode, null, `Fetch ${topic}-${partition} at offset ${position}`);
    if (end < 0) {
      end = Number(data.highWatermark);
      logStartOffset = Number(data.logStartOffset);
    }
    if (data.records === null || data.records.length === 0) break;
    const read = await recordsIn(topic, partition, data.records, position, end);
    records.push(...read.records.slice(0, maxRecords - records.length));
    if (read.next <= position || read.next >= end) break;
    position = read.next;
  }
  return { records, highWatermark: end, logStartOffset };
}
