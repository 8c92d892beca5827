/** OffsetForLeaderEpoch (KIP-101/279): the end offset of a leader epoch, from the epoch cache. */
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeOffsetForLeaderEpochResponse,
  makeOffsetForLeaderEpochResponseEpochEndOffset,
  makeOffsetForLeaderEpochResponseOffsetForLeaderTopicResult,
  type OffsetForLeaderEpochRequest,
  type OffsetForLeaderEpochResponse,
} from '../../protocol/messages/offset-for-leader-epoch.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { HandlerRegistry } from './registry.ts';

export function handleOffsetForLeaderEpoch(services: DataPathServices, request: OffsetForLeaderEpochRequest): OffsetForLeaderEpochResponse {
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

export function registerOffsetForLeaderEpochHandler(registry: HandlerRegistry, services: DataPathServices): void {
  registry.register<OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse>(ApiKey.OffsetForLeaderEpoch, (_ctx, request) =>
    handleOffsetForLeaderEpoch(services, request),
  );
}
