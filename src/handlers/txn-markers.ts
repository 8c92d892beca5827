/**
 * WriteTxnMarkers: the transaction coordinator asks each partition leader to write the COMMIT
 * or ABORT marker that ends a producer's transaction there (Kafka's
 * KafkaApis.handleWriteTxnMarkersRequest). Each marker is written as a control batch with
 * acks=all and answered per partition once committed; a marker in `__consumer_offsets` also
 * settles the transaction's offsets in the group coordinator. A marker that cannot be a
 * transaction's end is refused at the door, for its partitions only.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeWriteTxnMarkersResponse,
  makeWriteTxnMarkersResponseWritableTxnMarkerPartitionResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerTopicResult,
  type WriteTxnMarkersRequest,
  type WriteTxnMarkersResponse,
} from '../../protocol/messages/write-txn-markers.ts';
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import { NO_PRODUCER_EPOCH, NO_PRODUCER_ID } from '../../protocol/records/batch.ts';
import type { Logger } from '../observability/logger.ts';
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

type TxnMarkerEntry = WriteTxnMarkersRequest['markers'][number];

/** Who sent the request and where a refused marker is logged (a sender's mistake: info). */
export interface TxnMarkerRequestLog {
  readonly client: string;
  readonly logger: Pick<Logger, 'info'>;
}

/**
 * Why a marker cannot end a transaction, or null. A marker is a transactional control batch:
 * it needs a producer id, and a producer id needs an epoch (Kafka's MemoryRecordsBuilder
 * refuses both as it builds the marker, which fails Kafka's whole request with
 * UNKNOWN_SERVER_ERROR). The marker's partitions are answered INVALID_REQUEST instead, the
 * code InitProducerId answers for a producer id without an epoch; the other markers of the
 * request are written.
 */
export function invalidTxnMarkerReason(marker: Pick<TxnMarkerEntry, 'producerId' | 'producerEpoch'>): string | null {
  if (marker.producerId === NO_PRODUCER_ID) return `a transaction marker needs a producer id, not ${NO_PRODUCER_ID}`;
  if (marker.producerEpoch === NO_PRODUCER_EPOCH) {
    return `producer ${marker.producerId}: a transaction marker needs a producer epoch, not ${NO_PRODUCER_EPOCH}`;
  }
  return null;
}

export async function handleWriteTxnMarkers(
  services: TxnMarkerServices,
  groups: GroupTransactionCompletion,
  request: WriteTxnMarkersRequest,
  log: TxnMarkerRequestLog,
): Promise<WriteTxnMarkersResponse> {
  const timeoutMs = services.requestTimeoutMs();
  const refusals = new Map<TxnMarkerEntry, string>();
  for (const marker of request.markers) {
    const reason = invalidTxnMarkerReason(marker);
    if (reason !== null) refusals.set(marker, reason);
  }
  // One line per request: a request may carry any number of markers.
  const [firstReason] = refusals.values();
  if (firstReason !== undefined) {
    log.logger.info(
      { client: log.client, error: Errors.INVALID_REQUEST.name, refusedMarkers: refusals.size, reason: firstReason },
      'transaction markers refused',
    );
  }
  const write = async (topic: string, partition: number, marker: TxnMarkerEntry): Promise<number> => {
    if (refusals.has(marker)) return Errors.INVALID_REQUEST.code;
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
