/** ListOffsets: earliest (-2), latest (-1), max timestamp (-3) and by timestamp, per partition. */
import { Errors } from '../../protocol/errors.ts';
import {
  makeListOffsetsResponse,
  makeListOffsetsResponseListOffsetsPartitionResponse,
  makeListOffsetsResponseListOffsetsTopicResponse,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
} from '../../protocol/messages/list-offsets.ts';
import { LATEST_TIMESTAMP, type ListOffsetsResult, type ReplicaManager } from '../replication/replica-manager.ts';
import { safeOrNull } from './wire-int64.ts';

/** What ListOffsets needs: the logs of the partitions this broker leads. */
export interface ListOffsetsServices {
  readonly replicaManager: Pick<ReplicaManager, 'listOffset'>;
}

export async function handleListOffsets(
  services: ListOffsetsServices,
  request: ListOffsetsRequest,
  version: number,
): Promise<ListOffsetsResponse> {
  const rm = services.replicaManager;
  const topics = await Promise.all(
    request.topics.map(async (topic) =>
      makeListOffsetsResponseListOffsetsTopicResponse({
        name: topic.name,
        partitions: await Promise.all(
          topic.partitions.map(async (p) => {
            const listed = await listOffset(
              rm,
              topic.name,
              p.partitionIndex,
              p.timestamp,
              version >= 2 ? request.isolationLevel : 0,
              p.currentLeaderEpoch,
              request.replicaId,
            );
            // KafkaApis: OFFSET_NOT_AVAILABLE is only for v5+; older clients retry LEADER_NOT_AVAILABLE.
            const r =
              listed.errorCode === Errors.OFFSET_NOT_AVAILABLE.code && version < 5
                ? { ...listed, errorCode: Errors.LEADER_NOT_AVAILABLE.code }
                : listed;
            if (version === 0) {
              // v0 answers a list (at most max_num_offsets) instead of one offset.
              return makeListOffsetsResponseListOffsetsPartitionResponse({
                partitionIndex: p.partitionIndex,
                errorCode: r.errorCode,
                oldStyleOffsets: r.offset >= 0 && p.maxNumOffsets > 0 ? [BigInt(r.offset)] : [],
              });
            }
            return makeListOffsetsResponseListOffsetsPartitionResponse({
              partitionIndex: p.partitionIndex,
              errorCode: r.errorCode,
              timestamp: BigInt(r.timestampMs),
              offset: BigInt(r.offset),
              leaderEpoch: version >= 4 ? r.leaderEpoch : -1,
            });
          }),
        ),
      }),
    ),
  );
  return makeListOffsetsResponse({ topics });
}

/**
 * One partition's lookup. Timestamps are milliseconds, exact in a JS number up to 2^53; one
 * beyond that is answered as Kafka answers a timestamp no record reaches (positive: no offset,
 * -1/-1) or a negative one that is no special value (INVALID_REQUEST), after the partition's
 * leadership and epoch are checked as for any timestamp.
 */
async function listOffset(
  rm: ListOffsetsServices['replicaManager'],
  topic: string,
  partition: number,
  timestampMs: bigint,
  isolationLevel: number,
  currentLeaderEpoch: number,
  replicaId: number,
): Promise<ListOffsetsResult> {
  const safe = safeOrNull(timestampMs);
  if (safe !== null) return rm.listOffset(topic, partition, safe, isolationLevel, currentLeaderEpoch, replicaId);
  const checked = await rm.listOffset(topic, partition, LATEST_TIMESTAMP, isolationLevel, currentLeaderEpoch, replicaId);
  if (checked.errorCode !== Errors.NONE.code) return checked;
  const errorCode = timestampMs > 0n ? Errors.NONE.code : Errors.INVALID_REQUEST.code;
  return { errorCode, timestampMs: -1, offset: -1, leaderEpoch: -1 };
}
