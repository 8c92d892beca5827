/**
 * Binds the TransactionCoordinator to the cluster through the coordinator runtime:
 * `__transaction_state` is created on the first FindCoordinator for a transactional id, the
 * coordinator of an id is the leader of the partition it hashes to, and this broker loads a
 * partition's transactions when it becomes that leader (writing the markers of those a
 * previous leader prepared) and forgets them when it stops being it.
 */
import { TRANSACTION_STATE_TOPIC } from '../../protocol/internal-topics.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../observability/logger.ts';
import { type CoordinatorEndpoint, CoordinatorRuntime, type CoordinatorTopicAccess, type PartitionLoadStatus } from './runtime.ts';
import {
  type ProducerIdSource,
  TransactionCoordinator,
  type TransactionCoordinatorConfig,
  type TransactionLog,
  type TxnMarkerWriter,
} from './transaction-coordinator.ts';
import { decodeTxnLogRecord, encodeTxnLogRecord } from './transaction-log-codec.ts';
import type { TxnLogRecord } from './transaction-metadata.ts';

export interface TransactionCoordinatorServiceOptions {
  readonly nodeId: number;
  readonly config: TransactionCoordinatorConfig;
  readonly clock: Clock;
  /** `__transaction_state` on this broker. */
  readonly access: CoordinatorTopicAccess;
  readonly producerIds: ProducerIdSource;
  readonly markers: TxnMarkerWriter;
  /** Failures of background work (timers, loads, marker writes), with what they concern. */
  readonly onError: (err: unknown, what: string) => void;
  /** Coordinator elections, loads and resignations go here at info level. */
  readonly logger?: Pick<Logger, 'info'>;
  /** How many partitions load at once. */
  readonly maxConcurrentLoads: number;
  /** Backoff between attempts to load a partition whose load failed; default 500 ms doubling to 30 s. */
  readonly loadRetryBackoffMs?: { initialMs: number; maxMs: number };
}

export class TransactionCoordinatorService {
  readonly coordinator: TransactionCoordinator;
  private readonly runtime: CoordinatorRuntime<TxnLogRecord>;

  constructor(options: TransactionCoordinatorServiceOptions) {
    const log: TransactionLog = {
      append: async (partition, records) => {
        await this.runtime.append(partition, records);
      },
      holdsLeadership: (partition) => this.runtime.holdsLeadership(partition),
    };
    const coordinator = new TransactionCoordinator(
      options.config,
      options.clock,
      log,
      options.producerIds,
      options.markers,
      options.onError,
    );
    this.coordinator = coordinator;
    this.runtime = new CoordinatorRuntime<TxnLogRecord>({
      nodeId: options.nodeId,
      topic: TRANSACTION_STATE_TOPIC,
      clock: options.clock,
      access: options.access,
      codec: { encode: encodeTxnLogRecord, decode: decodeTxnLogRecord },
      shard: coordinator,
      onError: options.onError,
      logger: options.logger,
      loadRetryBackoffMs: options.loadRetryBackoffMs,
      maxConcurrentLoads: options.maxConcurrentLoads,
    });
  }

  start(): void {
    this.coordinator.start();
  }

  shutdown(): void {
    this.runtime.shutdown();
    this.coordinator.shutdown();
  }

  /** The load state of every `__transaction_state` partition this broker leads. */
  partitionLoadStatuses(): PartitionLoadStatus[] {
    return this.runtime.partitionLoadStatuses();
  }

  /** Leadership of a `__transaction_state` partition changed (see CoordinatorRuntime.onPartitionLeadership). */
  onPartitionLeadership(partition: number, isLeader: boolean, leaderEpoch = -1): void {
    this.runtime.onPartitionLeadership(partition, isLeader, leaderEpoch);
  }

  whenLoaded(): Promise<void> {
    return this.runtime.whenLoaded();
  }

  /** FindCoordinator for a transactional id: the leader of its `__transaction_state` partition. */
  findCoordinator(transactionalId: string, listenerName: string): Promise<CoordinatorEndpoint> {
    return this.runtime.findCoordinator(this.coordinator.partitionFor(transactionalId), listenerName);
  }
}
