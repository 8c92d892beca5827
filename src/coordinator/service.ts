/**
 * Binds the GroupCoordinator to the cluster through the coordinator runtime: `__consumer_offsets`
 * is created on first use (as Kafka does on the first FindCoordinator), the coordinator of a
 * group is the leader of its offsets partition, and this broker loads a partition's groups
 * when it becomes that leader and forgets them when it stops being it.
 */
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import { Reader } from '../../protocol/primitives.ts';
import { decodeConsumerProtocolSubscription } from '../../protocol/messages/consumer-protocol-subscription.ts';
import { GroupCoordinator, type CoordinatorLog, type GroupCoordinatorConfig } from './group-coordinator.ts';
import type { Group } from './group.ts';
import { decodeCoordinatorRecord, encodeCoordinatorRecord } from './offsets-topic-codec.ts';
import type { CoordinatorRecord } from './records.ts';
import { type CoordinatorEndpoint, CoordinatorRuntime, type CoordinatorTopicAccess, type PartitionLoadStatus } from './runtime.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../observability/logger.ts';
import type { Random } from '../runtime/random.ts';
import { DEFAULT_BROKER_CONFIG } from '../config/broker-config.ts';

export type { CoordinatorEndpoint, PartitionLoadStatus };

export interface GroupCoordinatorServiceOptions {
  readonly nodeId: number;
  readonly config: GroupCoordinatorConfig & { offsetsTopicPartitions: number };
  readonly clock: Clock;
  /** Member ids; defaults to the system's randomness. */
  readonly random?: Random;
  /** `__consumer_offsets` on this broker. */
  readonly access: CoordinatorTopicAccess;
  /**
   * Failures of background work (timers, loads) and records a load skipped, each with what
   * it concerns: the group, or the partition and offset.
   */
  readonly onError: (err: unknown, what: string) => void;
  /** Coordinator elections, loads and resignations go here at info level. */
  readonly logger?: Pick<Logger, 'info'>;
  /** Backoff between attempts to load a partition whose load failed; default 500 ms doubling to 30 s. */
  readonly loadRetryBackoffMs?: { initialMs: number; maxMs: number };
  /**
   * offsets.load.max.partitions: how many partitions load at once (its default when absent).
   * With the read chunk (offsets.load.buffer.size, the access's) it bounds the memory loads
   * hold beside the groups they build.
   */
  readonly maxConcurrentLoads?: number;
}

export class GroupCoordinatorService {
  readonly coordinator: GroupCoordinator;
  private readonly runtime: CoordinatorRuntime<CoordinatorRecord>;

  constructor(private readonly options: GroupCoordinatorServiceOptions) {
    const log: CoordinatorLog = {
      append: (partition, records, producer, verification) => this.runtime.append(partition, records, producer, verification),
      verifyTransaction: (partition, transactionalId, producer) => this.runtime.verifyTransaction(partition, transactionalId, producer),
      holdsLeadership: (partition) => this.runtime.holdsLeadership(partition),
    };
    const coordinator = new GroupCoordinator(options.config, options.clock, log, options.onError, options.random);
    this.coordinator = coordinator;
    this.runtime = new CoordinatorRuntime<CoordinatorRecord>({
      nodeId: options.nodeId,
      topic: OFFSETS_TOPIC,
      clock: options.clock,
      access: options.access,
      codec: { encode: encodeCoordinatorRecord, decode: decodeCoordinatorRecord },
      shard: {
        beginLoading: (partition) => coordinator.beginLoading(partition),
        replayLoading: (partition, records, onSkipped, batch) => coordinator.replayLoading(partition, records, onSkipped, batch),
        replayEndTransaction: (partition, producerId, commit) => coordinator.replayEndTransaction(partition, producerId, commit),
        completeLoading: (partition) => coordinator.completeLoading(partition, []),
        abandonLoading: (partition) => coordinator.abandonLoading(partition),
        unload: (partition) => coordinator.unload(partition),
      },
      onError: options.onError,
      logger: options.logger,
      loadRetryBackoffMs: options.loadRetryBackoffMs,
      maxConcurrentLoads: options.maxConcurrentLoads ?? DEFAULT_BROKER_CONFIG.getInt('offsets.load.max.partitions'),
    });
  }

  /** The clock of the coordinator's timers: commit timestamps come from it too. */
  get clock(): Clock {
    return this.options.clock;
  }

  get offsetsRetentionMs(): number {
    return this.options.config.offsetsRetentionMs;
  }

  start(): void {
    this.coordinator.start();
  }

  shutdown(): void {
    this.runtime.shutdown();
    this.coordinator.shutdown();
  }

  /** The load state of every offsets partition this broker leads, for metrics and tools. */
  partitionLoadStatuses(): PartitionLoadStatus[] {
    return this.runtime.partitionLoadStatuses();
  }

  /** The load state of one offsets partition; undefined when this broker does not lead it. */
  partitionLoadStatus(partition: number): PartitionLoadStatus | undefined {
    return this.runtime.partitionLoadStatus(partition);
  }

  partitionExists(topic: string, partition: number): boolean {
    return this.options.access.partitionExists(topic, partition);
  }

  /** Leadership of an offsets partition changed (see CoordinatorRuntime.onPartitionLeadership). */
  onOffsetsPartitionLeadership(partition: number, isLeader: boolean, leaderEpoch = -1): void {
    this.runtime.onPartitionLeadership(partition, isLeader, leaderEpoch);
  }

  /** Resolves once every load requested so far has finished (an attempt, failed or not). */
  whenLoaded(): Promise<void> {
    return this.runtime.whenLoaded();
  }

  /** FindCoordinator for a group: the leader of its offsets partition. */
  findCoordinator(groupId: string, listenerName: string): Promise<CoordinatorEndpoint> {
    return this.runtime.findCoordinator(this.coordinator.partitionFor(groupId), listenerName);
  }

  /**
   * Topics a consumer group's members subscribe to (from their ConsumerProtocolSubscription);
   * null when the group does not use the consumer protocol, so it cannot be known.
   */
  subscribedTopics(group: Group): Set<string> | null {
    if (group.protocolType !== 'consumer' || group.protocolName === null) return null;
    const topics = new Set<string>();
    for (const member of group.allMembers()) {
      try {
        const reader = new Reader(member.metadataFor(group.protocolName));
        const version = reader.int16();
        for (const topic of decodeConsumerProtocolSubscription(reader, Math.min(version, 3)).topics) topics.add(topic);
      } catch {
        return null;
      }
    }
    return topics;
  }
}
