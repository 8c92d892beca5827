/**
 * InitProducerId for idempotent producers (a fresh producer id at epoch 0, as Kafka's
 * TransactionCoordinator does for a null transactional id) and DescribeProducers.
 */
import {
  makeInitProducerIdResponse,
  type InitProducerIdRequest,
  type InitProducerIdResponse,
} from '../../protocol/messages/init-producer-id.ts';
import {
  makeDescribeProducersResponse,
  makeDescribeProducersResponsePartitionResponse,
  makeDescribeProducersResponseProducerState,
  makeDescribeProducersResponseTopicResponse,
  type DescribeProducersRequest,
  type DescribeProducersResponse,
} from '../../protocol/messages/describe-producers.ts';
import { Errors } from '../../protocol/errors.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
import type { TransactionCoordinator } from '../coordinator/transaction-coordinator.ts';
import { fencedForVersion } from './transactions.ts';

/** What InitProducerId and DescribeProducers need: producer ids, producer state, the transaction coordinator. */
export interface ProducerIdServices extends Pick<DataPathServices, 'producerIds'> {
  readonly replicaManager: Pick<ReplicaManager, 'describeProducers'>;
  /** InitProducerId with a transactional id belongs to it; absent, such a request is answered COORDINATOR_NOT_AVAILABLE. */
  readonly transactions?: Pick<TransactionCoordinator, 'initProducerId'>;
}

export async function handleInitProducerId(
  services: ProducerIdServices,
  request: InitProducerIdRequest,
  version: number,
): Promise<InitProducerIdResponse> {
  const fail = (errorCode: number): InitProducerIdResponse => makeInitProducerIdResponse({ errorCode, producerId: -1n, producerEpoch: -1 });
  // KafkaApis.handleInitProducerIdRequest: id and epoch are given together or not at all.
  if ((request.producerId === -1n) !== (request.producerEpoch === -1)) return fail(Errors.INVALID_REQUEST.code);
  if (request.transactionalId !== null) {
    if (request.transactionalId === '') return fail(Errors.INVALID_REQUEST.code);
    if (services.transactions === undefined) return fail(Errors.COORDINATOR_NOT_AVAILABLE.code);
    const expected = request.producerId === -1n ? null : { producerId: request.producerId, producerEpoch: request.producerEpoch };
    try {
      const r = await services.transactions.initProducerId(request.transactionalId, request.transactionTimeoutMs, expected);
      return makeInitProducerIdResponse({ ...r, errorCode: fencedForVersion(r.errorCode, version, 4) });
    } catch {
      // Producer ids come in blocks from the controller: none to hand out now, retry.
      return fail(Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
    }
  }
  // A non-transactional producer always gets a new id, whatever id/epoch it sent (KIP-360
  // epoch bumps are for transactional ids).
  try {
    const producerId = await services.producerIds.generateProducerId();
    return makeInitProducerIdResponse({ errorCode: Errors.NONE.code, producerId, producerEpoch: 0 });
  } catch {
    return fail(Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
  }
}

export async function handleDescribeProducers(
  services: ProducerIdServices,
  request: DescribeProducersRequest,
): Promise<DescribeProducersResponse> {
  const rm = services.replicaManager;
  return makeDescribeProducersResponse({
    topics: await Promise.all(
      request.topics.map(async (topic) =>
        makeDescribeProducersResponseTopicResponse({
          name: topic.name,
          partitions: await Promise.all(
            topic.partitionIndexes.map(async (partitionIndex) => {
              const r = await rm.describeProducers(topic.name, partitionIndex);
              return makeDescribeProducersResponsePartitionResponse({
                partitionIndex,
                errorCode: r.errorCode,
                activeProducers: r.producers.map((p) =>
                  makeDescribeProducersResponseProducerState({
                    producerId: p.producerId,
                    producerEpoch: p.producerEpoch,
                    lastSequence: p.lastSequence,
                    lastTimestamp: BigInt(p.lastTimestampMs),
                    coordinatorEpoch: p.coordinatorEpoch,
                    currentTxnStartOffset: BigInt(p.currentTxnStartOffset),
                  }),
                ),
              });
            }),
          ),
        }),
      ),
    ),
  });
}
