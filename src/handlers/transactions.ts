/**
 * The transaction coordinator's APIs (AddPartitionsToTxn up to v3, AddOffsetsToTxn, EndTxn,
 * DescribeTransactions, ListTransactions; InitProducerId with a transactional id reaches it through the data path's
 * hook): thin translations between each version's wire shape and the TransactionCoordinator,
 * with the checks KafkaApis makes before it (partitions that do not exist).
 */
import { Errors } from '../../protocol/errors.ts';
import type { AddOffsetsToTxnRequest, AddOffsetsToTxnResponse } from '../../protocol/messages/add-offsets-to-txn.ts';
import type { AddPartitionsToTxnRequest, AddPartitionsToTxnResponse } from '../../protocol/messages/add-partitions-to-txn.ts';
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import type { DescribeTransactionsRequest, DescribeTransactionsResponse } from '../../protocol/messages/describe-transactions.ts';
import type { EndTxnRequest, EndTxnResponse } from '../../protocol/messages/end-txn.ts';
import type { ListTransactionsRequest, ListTransactionsResponse } from '../../protocol/messages/list-transactions.ts';
import type { TransactionCoordinator } from '../coordinator/transaction-coordinator.ts';
import { TRANSACTION_STATE_NAMES, type TopicPartitionRef } from '../coordinator/transaction-metadata.ts';

/** What the transaction APIs need: the coordinator, which partitions exist, where a group's offsets go. */
export interface TransactionHandlerServices {
  readonly coordinator: Pick<
    TransactionCoordinator,
    'initProducerId' | 'addPartitions' | 'verifyPartitions' | 'endTransaction' | 'describe' | 'list'
  >;
  partitionExists(topic: string, partition: number): boolean;
  /** The `__consumer_offsets` partition of a group. */
  offsetsPartitionFor(groupId: string): number;
}

const KNOWN_STATES = new Set(Object.values(TRANSACTION_STATE_NAMES));

/**
 * KafkaApis: clients of the versions before PRODUCER_FENCED (KIP-588) know it as
 * INVALID_PRODUCER_EPOCH, which they handle the same way.
 */
export function fencedForVersion(errorCode: number, version: number, firstVersionWithFenced: number): number {
  return errorCode === Errors.PRODUCER_FENCED.code && version < firstVersionWithFenced ? Errors.INVALID_PRODUCER_EPOCH.code : errorCode;
}

/**
 * AddPartitionsToTxn. v0-v3 (clients): one producer's partitions, each answered with the
 * transaction's error. v4+ (brokers, KIP-890): several transactions, each added to or, with
 * verifyOnly, checked for its partitions (a partition leader asks before it appends a
 * transaction's first batch).
 */
export async function handleAddPartitionsToTxn(
  services: TransactionHandlerServices,
  request: AddPartitionsToTxnRequest,
  version: number,
): Promise<AddPartitionsToTxnResponse> {
  if (version >= 4) return handleBrokerAddPartitionsToTxn(services, request, version);
  const { byPartition } = await addPartitions(
    services,
    request.v3AndBelowTransactionalId,
    request.v3AndBelowProducerId,
    request.v3AndBelowProducerEpoch,
    request.v3AndBelowTopics,
  );
  return {
    throttleTimeMs: 0,
    errorCode: Errors.NONE.code,
    resultsByTransaction: [],
    resultsByTopicV3AndBelow: request.v3AndBelowTopics.map((t) => ({
      name: t.name,
      resultsByPartition: t.partitions.map((partitionIndex) => ({
        partitionIndex,
        partitionErrorCode: fencedForVersion(byPartition({ topic: t.name, partition: partitionIndex }), version, 2),
      })),
    })),
  };
}

async function handleBrokerAddPartitionsToTxn(
  services: TransactionHandlerServices,
  request: AddPartitionsToTxnRequest,
  version: number,
): Promise<AddPartitionsToTxnResponse> {
  const resultsByTransaction = await Promise.all(
    request.transactions.map(async (txn) => {
      let errorOf: (tp: TopicPartitionRef) => number;
      if (txn.verifyOnly) {
        const partitions = txn.topics.flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
        const codes = services.coordinator.verifyPartitions(txn.transactionalId, txn.producerId, txn.producerEpoch, partitions);
        const byKey = new Map(partitions.map((tp, i) => [`${tp.topic}\u0000${tp.partition}`, codes[i]!]));
        errorOf = (tp) => byKey.get(`${tp.topic}\u0000${tp.partition}`)!;
      } else {
        errorOf = (await addPartitions(services, txn.transactionalId, txn.producerId, txn.producerEpoch, txn.topics)).byPartition;
      }
      return {
        transactionalId: txn.transactionalId,
        topicResults: txn.topics.map((t) => ({
          name: t.name,
          resultsByPartition: t.partitions.map((partitionIndex) => {
            const code = errorOf({ topic: t.name, partition: partitionIndex });
            // TRANSACTION_ABORTABLE is known from v5 on (KIP-890); before, a partition outside the transaction is INVALID_TXN_STATE.
            const known = code === Errors.TRANSACTION_ABORTABLE.code && version < 5 ? Errors.INVALID_TXN_STATE.code : code;
            return { partitionIndex, partitionErrorCode: known };
          }),
        })),
      };
    }),
  );
  return { throttleTimeMs: 0, errorCode: Errors.NONE.code, resultsByTransaction, resultsByTopicV3AndBelow: [] };
}

/** One producer's partitions join its transaction; answers each partition's error. */
async function addPartitions(
  services: TransactionHandlerServices,
  transactionalId: string,
  producerId: bigint,
  producerEpoch: number,
  topics: readonly { name: string; partitions: number[] }[],
): Promise<{ byPartition: (tp: TopicPartitionRef) => number }> {
  const partitions: TopicPartitionRef[] = topics.flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })));
  // KafkaApis: partitions that do not exist fail alone; the others are not attempted.
  const missing = new Set(
    partitions.filter((tp) => !services.partitionExists(tp.topic, tp.partition)).map((tp) => `${tp.topic}\u0000${tp.partition}`),
  );
  const errorOf =
    missing.size > 0
      ? (tp: TopicPartitionRef) =>
          missing.has(`${tp.topic}\u0000${tp.partition}`) ? Errors.UNKNOWN_TOPIC_OR_PARTITION.code : Errors.OPERATION_NOT_ATTEMPTED.code
      : await (async () => {
          const code = await services.coordinator.addPartitions(transactionalId, producerId, producerEpoch, partitions);
          return () => code;
        })();
  return { byPartition: errorOf };
}

/**
 * AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction, so that
 * its marker makes the offsets TxnOffsetCommit stores there committed or dropped.
 */
export async function handleAddOffsetsToTxn(
  services: TransactionHandlerServices,
  request: AddOffsetsToTxnRequest,
  version: number,
): Promise<AddOffsetsToTxnResponse> {
  const partition = { topic: OFFSETS_TOPIC, partition: services.offsetsPartitionFor(request.groupId) };
  const errorCode = await services.coordinator.addPartitions(request.transactionalId, request.producerId, request.producerEpoch, [
    partition,
  ]);
  return { throttleTimeMs: 0, errorCode: fencedForVersion(errorCode, version, 2) };
}

export async function handleEndTxn(services: TransactionHandlerServices, request: EndTxnRequest, version: number): Promise<EndTxnResponse> {
  const errorCode = fencedForVersion(
    await services.coordinator.endTransaction(request.transactionalId, request.producerId, request.producerEpoch, request.committed),
    version,
    2,
  );
  return { throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 };
}

export function handleDescribeTransactions(
  services: TransactionHandlerServices,
  request: DescribeTransactionsRequest,
): DescribeTransactionsResponse {
  return {
    throttleTimeMs: 0,
    transactionStates: request.transactionalIds.map((id) => {
      const d = services.coordinator.describe(id);
      const byTopic = new Map<string, number[]>();
      for (const tp of d.partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
      return {
        errorCode: d.errorCode,
        transactionalId: id,
        transactionState: d.state,
        transactionTimeoutMs: d.timeoutMs,
        transactionStartTimeMs: BigInt(d.startTimestampMs),
        producerId: d.producerId,
        producerEpoch: d.producerEpoch,
        topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
      };
    }),
  };
}

export function handleListTransactions(
  services: TransactionHandlerServices,
  request: ListTransactionsRequest,
  version: number,
): ListTransactionsResponse {
  const durationFilterMs = version >= 1 ? Number(request.durationFilter) : -1;
  // Kafka filters by the states it knows and reports the others.
  const states = request.stateFilters.filter((s) => KNOWN_STATES.has(s));
  const { errorCode, transactions } = services.coordinator.list(states, request.producerIdFilters, durationFilterMs);
  return {
    throttleTimeMs: 0,
    errorCode,
    unknownStateFilters: request.stateFilters.filter((s) => !KNOWN_STATES.has(s)),
    transactionStates: transactions.map((t) => ({
      transactionalId: t.transactionalId,
      producerId: t.producerId,
      transactionState: t.state,
    })),
  };
}
