/** DeleteRecords: raises each partition's log start offset (its low watermark). */
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeDeleteRecordsResponse,
  makeDeleteRecordsResponseDeleteRecordsPartitionResult,
  makeDeleteRecordsResponseDeleteRecordsTopicResult,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
} from '../../protocol/messages/delete-records.ts';
import { Errors } from '../../protocol/errors.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { HandlerRegistry } from './registry.ts';

export async function handleDeleteRecords(services: DataPathServices, request: DeleteRecordsRequest): Promise<DeleteRecordsResponse> {
  const rm = services.replicaManager;
  const topics = await Promise.all(
    request.topics.map(async (topic) =>
      makeDeleteRecordsResponseDeleteRecordsTopicResult({
        name: topic.name,
        partitions: await Promise.all(
          topic.partitions.map(async (p) => {
            if (p.offset > BigInt(Number.MAX_SAFE_INTEGER) || p.offset < -1n) {
              return makeDeleteRecordsResponseDeleteRecordsPartitionResult({
                partitionIndex: p.partitionIndex,
                lowWatermark: -1n,
                errorCode: Errors.OFFSET_OUT_OF_RANGE.code,
              });
            }
            const r = await rm.deleteRecords(topic.name, p.partitionIndex, Number(p.offset));
            return makeDeleteRecordsResponseDeleteRecordsPartitionResult({
              partitionIndex: p.partitionIndex,
              lowWatermark: BigInt(r.lowWatermark),
              errorCode: r.errorCode,
            });
          }),
        ),
      }),
    ),
  );
  return makeDeleteRecordsResponse({ topics });
}

export function registerDeleteRecordsHandler(registry: HandlerRegistry, services: DataPathServices): void {
  registry.register<DeleteRecordsRequest, DeleteRecordsResponse>(ApiKey.DeleteRecords, (_ctx, request) =>
    handleDeleteRecords(services, request),
  );
}
