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
import { toSafeNumber } from '../../protocol/primitives.ts';
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
const _FETCH_MAX_VERSION = 12;

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
