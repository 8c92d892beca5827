/**
 * Reads a whole topic over the wire, every partition from its log start offset to the end
 * offset it had when the read began, so a topic written to meanwhile (a replay into the topic
 * being read, a consumer still dead-lettering) still ends. Records come in partition order,
 * offset order within a partition, a bounded chunk at a time.
 */
import { Errors } from '../../../protocol/errors.ts';
import type { KafkaCluster } from '../../client/cluster.ts';
import { brokerError, withRetries } from '../../client/errors.ts';
import { topicPartitions } from '../../client/topics.ts';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey } from '../../client/offsets.ts';
import { type ConsumerRecord, readPartition } from '../../client/records.ts';

/** Records of one chunk: what is held in memory at once. */
const CHUNK_RECORDS = 2000;
/** How long leader look-ups and fetches retry retriable errors (a leader election, say). */
const RETRY_TIMEOUT_MS = 30_000;

/** Offsets `start` (inclusive) to `end` (exclusive) of one partition. */
export interface PartitionRange {
  partition: number;
  start: number;
  end: number;
}

/** Which part of the topic to read: one partition and an inclusive offset range within it, or all. */
export interface ReadScope {
  partition: number | null;
  fromOffset: number | null;
  toOffset: number | null;
}

export const WHOLE_TOPIC: ReadScope = { partition: null, fromOffset: null, toOffset: null };

/** The offsets to read of each partition in scope: from the log start (or --from-offset) to the end now (or past --to-offset). */
export async function partitionRanges(cluster: KafkaCluster, topic: string, scope: ReadScope): Promise<PartitionRange[]> {
  const all = await topicPartitions(cluster, topic);
  if (scope.partition !== null && !all.includes(scope.partition)) {
    throw brokerError(
      Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
      `topic '${topic}' has ${all.length} partitions`,
      `${topic}-${scope.partition}`,
    );
  }
  const partitions = scope.partition === null ? all : [scope.partition];
  const tps = partitions.map((partition) => ({ topic, partition }));
  const starts = await withRetries(RETRY_TIMEOUT_MS, () => listOffsets(cluster, tps, EARLIEST_TIMESTAMP));
  const ends = await withRetries(RETRY_TIMEOUT_MS, () => listOffsets(cluster, tps, LATEST_TIMESTAMP));
  return partitions.map((partition) => {
    const end = Math.min(ends.get(tpKey(topic, partition))!, scope.toOffset === null ? Number.POSITIVE_INFINITY : scope.toOffset + 1);
    const start = Math.max(starts.get(tpKey(topic, partition))!, scope.fromOffset ?? 0);
    return { partition, start: Math.min(start, end), end };
  });
}

/**
 * The data records of each range, in chunks. Each chunk moves the position forward, so a
 * partition takes at most (end - start) chunks; a range whose rest holds no data record
 * (transaction markers only, offsets compacted away) ends there.
 */
export async function* readRanges(
  cluster: KafkaCluster,
  topic: string,
  ranges: readonly PartitionRange[],
): AsyncGenerator<ConsumerRecord[], void, undefined> {
  for (const range of ranges) {
    let position = range.start;
    while (position < range.end) {
      const { records } = await withRetries(RETRY_TIMEOUT_MS, () =>
        readPartition(cluster, topic, range.partition, position, CHUNK_RECORDS),
      );
      const inRange = records.filter((r) => r.offset >= position && r.offset < range.end);
      if (inRange.length === 0) break;
      yield inRange;
      position = inRange[inRange.length - 1]!.offset + 1;
    }
  }
}
