/**
 * WriteTxnMarkers: the transaction coordinator asks each partition leader to write the COMMIT
 * or ABORT marker that ends a producer's transaction there (Kafka's
 * KafkaApis.handleWriteTxnMarkersRequest). Each marker is written as a control batch with
 * acks=all and answered per partition once committed.
 */
import {
  makeWriteTxnMarkersResponse,
  makeWriteTxnMarkersResponseWritableTxnMarkerPartitionResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerTopicResult,
  type WriteTxnMarkersRequest,
  type WriteTxnMarkersResponse,
} from '../../protocol/messages/write-txn-markers.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';

/** What WriteTxnMarkers needs: the partitions this broker leads and how long a write may wait. */
export interface TxnMarkerServices extends Pick<DataPathServices, 'requestTimeoutMs'> {
  readonly replicaManager: Pick<ReplicaManager, 'writeTxnMarker'>;
}

export async function handleWriteTxnMarkers(
  services: TxnMarkerServices,
  request: WriteTxnMarkersRequest,
): Promise<WriteTxnMarkersResponse> {
  const timeoutMs = services.requestTimeoutMs();
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
                    errorCode: await services.replicaManager.writeTxnMarker(
                      topic.name,
                      partitionIndex,
                      {
                        producerId: marker.producerId,
                        producerEpoch: marker.producerEpoch,
                        commit: marker.transactionResult,
                        coordinatorEpoch: marker.coordinatorEpoch,
                      },
                      timeoutMs,
                    ),
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
