/**
 * The partition leader's side of KIP-890 part 1 (Kafka's AddPartitionsToTxnManager): before a
 * transaction's first batch is appended to a partition, the producer's transaction
 * coordinator is asked whether the partition is in its open transaction. A coordinator on this
 * broker is asked in process, another one with AddPartitionsToTxn v4+ and verifyOnly over the
 * inter-broker listener. A coordinator that does not speak v4 is not asked (as Kafka skips
 * verification on a version mismatch); one that cannot be reached answers NETWORK_EXCEPTION.
 */
import { Errors } from '../../protocol/errors.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeAddPartitionsToTxnRequest,
  makeAddPartitionsToTxnRequestAddPartitionsToTxnTransaction,
  type AddPartitionsToTxnResponse,
} from '../../protocol/messages/add-partitions-to-txn.ts';
import type { TopicPartitionRef } from './transaction-metadata.ts';

const FIRST_VERIFY_VERSION = 4;
const LATEST_VERIFY_VERSION = 5;

export interface TransactionVerifierOptions {
  readonly nodeId: number;
  /** The `__transaction_state` partition of a transactional id. */
  partitionFor(transactionalId: string): number;
  /** The leader of a `__transaction_state` partition: -1 while it has none, undefined when the topic does not exist. */
  coordinatorLeader(partition: number): number | undefined;
  /** This broker's coordinator (TransactionCoordinator.verifyPartitions). */
  verifyLocally(transactionalId: string, producerId: bigint, producerEpoch: number, partitions: readonly TopicPartitionRef[]): number[];
  /** Requests to other brokers. */
  readonly channel: {
    supportedVersion(brokerId: number, apiKey: number, minVersion: number, maxVersion: number): Promise<number | null>;
    send<Res>(brokerId: number, apiKey: number, request: unknown, version?: number): Promise<Res>;
  };
}

export class TransactionVerifier {
  constructor(private readonly options: TransactionVerifierOptions) {}

  /** The coordinator's error for the partition: NONE when it is in the producer's open transaction. */
  async verify(transactionalId: string, producerId: bigint, producerEpoch: number, topic: string, partition: number): Promise<number> {
    const leader = this.options.coordinatorLeader(this.options.partitionFor(transactionalId));
    if (leader === undefined || leader < 0) return Errors.COORDINATOR_NOT_AVAILABLE.code;
    if (leader === this.options.nodeId) {
      return this.options.verifyLocally(transactionalId, producerId, producerEpoch, [{ topic, partition }])[0]!;
    }
    try {
      const { channel } = this.options;
      const version = await channel.supportedVersion(leader, ApiKey.AddPartitionsToTxn, FIRST_VERIFY_VERSION, LATEST_VERIFY_VERSION);
      if (version === null) return Errors.NONE.code;
      const response = await channel.send<AddPartitionsToTxnResponse>(
        leader,
        ApiKey.AddPartitionsToTxn,
        makeAddPartitionsToTxnRequest({
          transactions: [
            makeAddPartitionsToTxnRequestAddPartitionsToTxnTransaction({
              transactionalId,
              producerId,
              producerEpoch,
              verifyOnly: true,
              topics: [{ name: topic, partitions: [partition] }],
            }),
          ],
        }),
        version,
      );
      if (response.errorCode !== Errors.NONE.code) {
        // Kafka: the producer is not told of the coordinator's authorization failure.
        return response.errorCode === Errors.CLUSTER_AUTHORIZATION_FAILED.code ? Errors.INVALID_TXN_STATE.code : response.errorCode;
      }
      const result = response.resultsByTransaction
        .find((t) => t.transactionalId === transactionalId)
        ?.topicResults.find((t) => t.name === topic)
        ?.resultsByPartition.find((p) => p.partitionIndex === partition);
      return result?.partitionErrorCode ?? Errors.UNKNOWN_SERVER_ERROR.code;
    } catch {
      return Errors.NETWORK_EXCEPTION.code;
    }
  }
}
