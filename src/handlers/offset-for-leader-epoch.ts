/** OffsetForLeaderEpoch (KIP-101/279): the end offset of a leader epoch, from the epoch cache. */
import {
  makeOffsetForLeaderEpochResponse,
  makeOffsetForLeaderEpochResponseEpochEndOffset,
  makeOffsetForLeaderEpochResponseOffsetForLeaderTopicResult,
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderEpochResponse,
} from '../../protocol/messages/offset-for-leader-epoch.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';

/** What OffsetForLeaderEpoch needs: the leader-epoch caches of the partitions this broker leads. */
export interface OffsetForLeaderEpochServices {
  readonly replicaManager: Pick<ReplicaManager, 'offsetForLeaderEpoch'>;
}

export function handleOffsetForLeaderEpoch(
  services: OffsetForLeaderEpochServices,
  request: OffsetForLeaderEpochRequest,
): OffsetForLeaderEpochResponse {
  const rm = services.replicaManager;
  return makeOffsetForLeaderEpochResponse({
    topics: request.topics.map((topic) =>
      makeOffsetForLeaderEpochResponseOffsetForLeaderTopicResult({
        topic: topic.topic,
        partitions: topic.partitions.map((p) => {
          const r = rm.offsetForLeaderEpoch(topic.topic, p.partition, p.leaderEpoch, p.currentLeaderEpoch);
          return makeOffsetForLeaderEpochResponseEpochEndOffset({
            errorCode: r.errorCode,
            partition: p.partition,
            leaderEpoch: r.leaderEpoch,
            endOffset: BigInt(r.endOffset),
          });
        }),
      }),
    ),
  });
}
