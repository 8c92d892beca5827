/** ListOffsets: earliest (-2), latest (-1), max timestamp (-3) and by timestamp, per partition. */
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeListOffsetsResponse,
  makeListOffsetsResponseListOffsetsPartitionResponse,
  makeListOffsetsResponseListOffsetsTopicResponse,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
} from '../../protocol/messages/list-offsets.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { HandlerRegistry } from './registry.ts';

export async function handleListOffsets(
  services: DataPathServices,
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
            // Timestamps are milliseconds: a JS number holds them exactly.
            const timestamp = Number(p.timestamp);
            const r = await rm.listOffset(
              topic.name,
              p.partitionIndex,
              timestamp,
              version >= 2 ? request.isolationLevel : 0,
              p.currentLeaderEpoch,
              request.replicaId,
            );
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
              timestamp: BigInt(r.timestamp),
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

export function registerListOffsetsHandler(registry: HandlerRegistry, services: DataPathServices): void {
  registry.register<ListOffsetsRequest, ListOffsetsResponse>(ApiKey.ListOffsets, (_ctx, request, version) =>
    handleListOffsets(services, request, version),
  );
}
