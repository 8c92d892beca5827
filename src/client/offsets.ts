/**
 * Offset look-ups the tools need: ListOffsets per partition leader, and the record at (or
 * first after) an offset through a single Fetch.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
  type ListOffsetsResponse,
} from '../../protocol/messages/list-offsets.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import { toSafeNumber } from '../../protocol/primitives.ts';
import { InvalidRecordBatchError, RecordBatch, validateBatchAt } from '../../protocol/records/batch.ts';
import { readRecords } from '../../protocol/records/record.ts';
import { kafkaError, type KafkaCluster } from './cluster.ts';

/** ListOffsets special timestamps. */
export const LATEST_TIMESTAMP = -1n;
export const EARLIEST_TIMESTAMP = -2n;

export interface TopicPartition {
  topic: string;
  partition: number;
}

export const tpKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** Topic names travel in Fetch up to v12; v13+ carries topic ids only. */
const FETCH_MAX_VERSION = 12;

/**
 * The offset for `timestamp` (LATEST_TIMESTAMP: the log end offset as a consumer sees it,
 * i.e. the high watermark) of every partition, asking each partition's leader. Keyed by tpKey.
 */
export async function listOffsets(
  cluster: KafkaCluster,
  partitions: readonly TopicPartition[],
  timestamp = LATEST_TIMESTAMP,
): Promise<Map<string, number>> {
  const topics = [...new Set(partitions.map((p) => p.topic))];
  const leaders = await cluster.leaders(topics);
  const byLeader = new Map<number, TopicPartition[]>();
  for (const tp of partitions) {
    const leader = leaders.get(tp.topic)?.get(tp.partition);
    if (leader === undefined) throw kafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION.code, `${tp.topic}-${tp.partition}`);
    if (leader < 0) throw kafkaError(Errors.LEADER_NOT_AVAILABLE.code, `${tp.topic}-${tp.partition}`);
    const list = byLeader.get(leader) ?? [];
    list.push(tp);
    byLeader.set(leader, list);
  }
  const out = new Map<string, number>();
  await Promise.all(
    [...byLeader].map(async ([leader, tps]) => {
      const conn = await cluster.brokerConnection(leader);
      const version = conn.version(ApiKey.ListOffsets);
      const byTopic = new Map<string, number[]>();
      for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
      const request = makeListOffsetsRequest({
        replicaId: -1,
        topics: [...byTopic].map(([name, ps]) =>
          makeListOffsetsRequestListOffsetsTopic({
            name,
            partitions: ps.map((partitionIndex) =>
              makeListOffsetsRequestListOffsetsPartition({
                partitionIndex,
                timestamp,
                maxNumOffsets: 1,
              }),
            ),
          }),
        ),
      });
      const res = await conn.send<ListOffsetsResponse>(ApiKey.ListOffsets, request, version);
      for (const t of res.topics) {
        for (const p of t.partitions) {
          if (p.errorCode !== Errors.NONE.code) throw kafkaError(p.errorCode, `ListOffsets ${t.name}-${p.partitionIndex}`);
          const offset = version === 0 ? (p.oldStyleOffsets[0] ?? -1n) : p.offset;
          out.set(tpKey(t.name, p.partitionIndex), toSafeNumber(offset));
        }
      }
    }),
  );
  return out;
}

export interface RecordPosition {
  offset: number;
  timestamp: number;
}

/**
 * The first data record at or after `offset` in one Fetch from the partition's leader
 * (null when the fetch returns none, e.g. at the log end). The broker returns whole batches
 * from the one containing `offset`, so earlier records of that batch are skipped here.
 */
export async function firstRecordAtOrAfter(
  cluster: KafkaCluster,
  topic: string,
  partition: number,
  offset: number,
  maxBytes = 1024 * 1024,
): Promise<RecordPosition | null> {
  const conn = await cluster.leaderConnection(topic, partition);
  const request = makeFetchRequest({
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
  });
  const res = await conn.send<FetchResponse>(ApiKey.Fetch, request, conn.version(ApiKey.Fetch, FETCH_MAX_VERSION));
  if (res.errorCode !== Errors.NONE.code) throw kafkaError(res.errorCode, `Fetch ${topic}-${partition}`);
  const data = res.responses.flatMap((t) => t.partitions).find((p) => p.partitionIndex === partition);
  if (data === undefined) return null;
  if (data.errorCode !== Errors.NONE.code) throw kafkaError(data.errorCode, `Fetch ${topic}-${partition}`);
  const records = data.records;
  if (records === null) return null;
  let at = 0;
  while (at < records.length) {
    let size: number;
    try {
      size = validateBatchAt(records, at, records.length, false);
    } catch (err) {
      // The broker may cut the last batch short at maxBytes: everything before it was whole.
      if (err instanceof InvalidRecordBatchError && err.kind === 'truncated') return null;
      throw err;
    }
    const batch = new RecordBatch(records, at);
    at += size;
    if (batch.isControl || batch.nextOffset <= offset) continue;
    for (const r of await readRecords(batch)) {
      if (r.offset >= offset) return { offset: r.offset, timestamp: r.timestamp };
    }
  }
  return null;
}
