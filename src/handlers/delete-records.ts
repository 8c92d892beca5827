/** DeleteRecords: raises each partition's log start offset (its low watermark). */
import {
  makeDeleteRecordsResponse,
  makeDeleteRecordsResponseDeleteRecordsPartitionResult,
  makeDeleteRecordsResponseDeleteRecordsTopicResult,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
} from '../../protocol/messages/delete-records.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
import { OUTSIDE_EVERY_LOG, safeOrNull } from './wire-int64.ts';

/** What DeleteRecords needs: the partitions this broker leads. */
export interface DeleteRecordsServices {
  readonly replicaManager: Pick<ReplicaManager, 'deleteRecords'>;
}

export async function handleDeleteRecords(services: DeleteRecordsServices, request: DeleteRecordsRequest): Promise<DeleteRecordsResponse> {
  const rm = services.replicaManager;
  const topics = await Promise.all(
    request.topics.map(async (topic) =>
      makeDeleteRecordsResponseDeleteRecordsTopicResult({
        name: topic.name,
        partitions: await Promise.all(
          topic.partitions.map(async (p) => {
            // An offset beyond 2^53 lies past every high watermark: OFFSET_OUT_OF_RANGE once the
            // partition is checked, as for any offset outside [0, HW] other than -1.
            const r = await rm.deleteRecords(topic.name, p.partitionIndex, safeOrNull(p.offset) ?? OUTSIDE_EVERY_LOG);
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
