/**
 * WriteTxnMarkers: the transaction coordinator asks each partition leader to write the COMMIT
 * or ABORT marker that ends a producer's transaction there (Kafka's
 * KafkaApis.handleWriteTxnMarkersRequest). Each marker is written as a control batch with
 * acks=all and answered per partition once committed; a marker in `__consumer_offsets` also
 * settles the transaction's offsets in the group coordinator.
 */
import {
  makeWriteTxnMarkersResponse,
  makeWriteTxnMarkersResponseWritableTxnMarkerPartitionResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerTopicResult,
  type WriteTxnMarkersRequest,
  type WriteTxnMarkersResponse,
} from '../../protocol/messages/write-txn-markers.ts';
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';

/** What WriteTxnMarkers needs: the partitions this broker leads and how long a write may wait. */
export interface TxnMarkerServices extends Pick<DataPathServices, 'requestTimeoutMs'> {
  readonly replicaManager: Pick<ReplicaManager, 'writeTxnMarker'>;
}

/**
 * The group coordinator, told of each marker committed to a `__consumer_offsets` partition:
 * the offsets the transaction committed there become visible or are dropped.
 */
export interface GroupTransactionCompletion {
  completeTransaction(offsetsPartition: number, producerId: bigint, commit: boolean): void;
}

export async function handleWriteTxnMarkers(
  services: TxnMarkerServices,
  groups: GroupTransactionCompletion,
  request: WriteTxnMarkersRequest,
): Promise<WriteTxnMarkersResponse> {
  const timeoutMs = services.requestTimeoutMs();
  const write = async (topic: string, partition: number, marker: WriteTxnMarkersRequest['markers'][number]): Promise<number> => {
    const errorCode = await services.replicaManager.writeTxnMarker(
      topic,
      partition,
      {
        producerId: marker.producerId,
        producerEpoch: marker.producerEpoch,
        commit: marker.transactionResult,
        coordinatorEpoch: marker.coordinatorEpoch,
      },
      timeoutMs,
    );
    if (errorCode === 0 && topic === OFFSETS_TOPIC) groups.completeTransaction(partition, marker.producerId, marker.transactionResult);
    return errorCode;
  };
  const markers = await Promise.all(
    request.markers.map(async (marker) =>
      makeWriteTxnMarkersResponseWritableTxnMarkerResult({
        producerId: marker.producerId,
        topics: await Promise.all(
          marker.topics.map(async (topic) =>
            makeWriteTxnMarkersResponseWritableTxnMarkerTopicResult({
              name: topic.name,
              partitions: await Promise.all(
                topic.partitionIndexes.map(async (partitionIndex) =>
                  makeWriteTxnMarkersResponseWritableTxnMarkerPartitionResult({
                    partitionIndex,
                    errorCode: await write(topic.name, partitionIndex, marker),
                  }),
                ),
              ),
            }),
          ),
        ),
      }),
    ),
  );
  return makeWriteTxnMarkersResponse({ markers });
}
