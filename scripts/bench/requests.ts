// The requests the benches send with Sluice's own client (src/client): pre-encoded record
// batches and Produce bodies, so that the client costs both brokers the same and little, and
// the scan of fetched bytes. Shared by broker.ts, cluster.ts and growth.ts.
import { readFile } from 'node:fs/promises';
import { Errors } from '../../protocol/errors.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import { decodeProduceResponse, encodeProduceRequest } from '../../protocol/messages/produce.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { InvalidRecordBatchError, RecordBatch, validateBatchAt } from '../../protocol/records/batch.ts';
import { RecordBatchBuilder } from '../../protocol/records/builder.ts';
import type { KafkaConnection } from '../../src/client/connection.ts';

export const MIB = 1024 * 1024;
export const GIB = 1024 * MIB;

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A batch of `records` records of `valueBytes` each (a fixed pattern, or `value(i)`). */
export async function buildBatch(records: number, valueBytes: number, value?: (i: number) => Buffer): Promise<Buffer> {
  const b = new RecordBatchBuilder();
  const fill = Buffer.alloc(valueBytes);
  for (let i = 0; i < fill.length; i++) fill[i] = (i * 31 + 7) & 0xff;
  const now = Date.now();
  for (let i = 0; i < records; i++) b.add({ key: null, value: value?.(i) ?? fill, timestamp: now });
  return b.build();
}

export function produceBody(topic: string, partition: number, records: Buffer, version: number, acks = 1, timeoutMs = 30_000): Buffer {
  const w = new Writer(records.length + 128);
  encodeProduceRequest(
    w,
    {
      transactionalId: null,
      acks,
      timeoutMs,
      topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
    },
    version,
  );
  return w.toBuffer();
}

/** The first error code of a produce response (NONE when every partition succeeded). */
export function produceError(body: Buffer, version: number): number {
  const res = decodeProduceResponse(new Reader(body), version);
  for (const t of res.responses) for (const p of t.partitionResponses) if (p.errorCode !== 0) return p.errorCode;
  return Errors.NONE.code;
}

/** The offset after the last whole batch of fetched bytes, and the bytes of the whole batches. */
export function scanBatches(records: Buffer): { nextOffset: number; wholeBytes: number } {
  let at = 0;
  let nextOffset = -1;
  while (at < records.length) {
    try {
      const size = validateBatchAt(records, at, records.length, false);
      nextOffset = new RecordBatch(records, at).nextOffset;
      at += size;
    } catch (err) {
      if (err instanceof InvalidRecordBatchError && err.kind === 'truncated') break;
      throw err;
    }
  }
  return { nextOffset, wholeBytes: at };
}

/**
 * One Fetch of one partition from `offset`, up to `maxBytes`, answered at once: its records,
 * the bytes of their whole batches and the offset after them (-1 when none is whole).
 */
export async function fetchOnce(
  conn: KafkaConnection,
  topic: string,
  partition: number,
  offset: number,
  maxBytes: number,
): Promise<{ records: Buffer; nextOffset: number; wholeBytes: number }> {
  const res = await conn.send<FetchResponse>(
    ApiKey.Fetch,
    makeFetchRequest({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        makeFetchRequestFetchTopic({
          topic,
          partitions: [makeFetchRequestFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: maxBytes })],
        }),
      ],
    }),
    conn.version(ApiKey.Fetch, 12),
  );
  const data = res.responses[0]?.partitions[0];
  if (data === undefined || data.errorCode !== 0) throw new Error(`fetch ${topic}-${partition}@${offset}: error ${data?.errorCode}`);
  const records = data.records ?? Buffer.alloc(0);
  return { records, ...scanBatches(records) };
}

/** A process's resident memory (VmRSS of /proc/<pid>/status). */
export async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
}
