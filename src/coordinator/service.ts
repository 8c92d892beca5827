/**
 * Binds the GroupCoordinator to the cluster: `__consumer_offsets` is created on first use
 * (as Kafka does on the first FindCoordinator), the coordinator of a group is the leader of
 * its offsets partition, and this broker loads a partition's groups when it becomes that
 * leader and forgets them when it stops being it.
 */
import { Errors } from '../../protocol/errors.ts';
import { Reader } from '../../protocol/primitives.ts';
import { buildRecordBatch, iterateRecords, decompressedRecords, type RecordBatch } from '../../protocol/records/index.ts';
import { decodeConsumerProtocolSubscription } from '../../protocol/messages/consumer-protocol-subscription.ts';
import { GroupCoordinator, type CoordinatorLog, type GroupCoordinatorConfig } from './group-coordinator.ts';
import type { Group } from './group.ts';
import { decodeCoordinatorRecord, encodeCoordinatorRecord } from './offsets-topic-codec.ts';
import type { CoordinatorRecord } from './records.ts';
import type { Scheduler } from './scheduler.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { CreatableTopic } from '../metadata/controller.ts';

export const OFFSETS_TOPIC = '__consumer_offsets';

/**
 * `__consumer_offsets` with Kafka's settings (GroupCoordinator.offsetsTopicConfigs), whether
 * FindCoordinator or a Metadata auto-create brings it into being.
 */
export function offsetsTopicCreatable(config: BrokerConfig): CreatableTopic {
  return {
    name: OFFSETS_TOPIC,
    numPartitions: config.getInt('offsets.topic.num.partitions'),
    replicationFactor: config.getInt('offsets.topic.replication.factor'),
    assignments: [],
    configs: [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'compression.type', value: 'producer' },
      { name: 'segment.bytes', value: String(config.getInt('offsets.topic.segment.bytes')) },
    ],
  };
}

export interface CoordinatorEndpoint {
  errorCode: number;
  errorMessage: string | null;
  nodeId: number;
  host: string;
  port: number;
}

/** What the coordinator needs from the broker around it. */
export interface OffsetsTopicAccess {
  /** Leader and endpoint (on `listenerName`) of an offsets partition; null when the topic does not exist. */
  partitionLeader(partition: number, listenerName: string): { leaderId: number; host: string; port: number } | null | 'no-leader';
  /** Creates `__consumer_offsets`; resolves with a Kafka error code (0 when created or already there). */
  createOffsetsTopic(): Promise<number>;
  partitionExists(topic: string, partition: number): boolean;
  /** Appends one batch as leader with acks=all; throws an error carrying `errorCode` on failure. */
  append(partition: number, batch: Buffer): Promise<void>;
  /** The partition's batches from its log start to its high watermark, in order. */
  readBatches(partition: number): AsyncIterable<RecordBatch>;
}

export interface GroupCoordinatorServiceOptions {
  readonly nodeId: number;
  readonly config: GroupCoordinatorConfig & { offsetsTopicPartitions: number };
  readonly scheduler: Scheduler;
  readonly access: OffsetsTopicAccess;
  readonly onError: (err: unknown, what: string) => void;
}

export class GroupCoordinatorService {
  readonly coordinator: GroupCoordinator;
  private readonly led = new Set<number>();
  private creating: Promise<number> | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly options: GroupCoordinatorServiceOptions) {
    const log: CoordinatorLog = { append: (partition, records) => this.appendRecords(partition, records) };
    this.coordinator = new GroupCoordinator(options.config, options.scheduler, log);
  }

  get offsetsRetentionMs(): number {
    return this.options.config.offsetsRetentionMs;
  }

  start(): void {
    this.coordinator.start();
  }

  shutdown(): void {
    this.coordinator.shutdown();
  }

  partitionExists(topic: string, partition: number): boolean {
    return this.options.access.partitionExists(topic, partition);
  }

  /**
   * Leadership of offsets partitions changed: load the ones this broker now leads, unload
   * the ones it no longer leads. Loads run one after another in the order changes arrive.
   */
  onOffsetsPartitionLeadership(partition: number, isLeader: boolean): void {
    if (isLeader && !this.led.has(partition)) {
      this.led.add(partition);
      this.coordinator.beginLoading(partition);
      this.chain = this.chain.then(() => this.load(partition)).catch((err) => this.options.onError(err, `loading ${OFFSETS_TOPIC}-${partition}`));
    } else if (!isLeader && this.led.has(partition)) {
      this.led.delete(partition);
      this.chain = this.chain.then(() => this.coordinator.unload(partition));
    }
  }

  /** Resolves once every load requested so far has finished. */
  whenLoaded(): Promise<void> {
    return this.chain;
  }

  private async load(partition: number): Promise<void> {
    if (!this.led.has(partition)) return;
    const records: CoordinatorRecord[] = [];
    for await (const batch of this.options.access.readBatches(partition)) {
      if (batch.isControl) continue;
      const payload = await decompressedRecords(batch);
      for (const record of iterateRecords(batch, payload)) {
        if (record.key === null) continue;
        const decoded = decodeCoordinatorRecord(record.key, record.value);
        if (decoded !== null) records.push(decoded);
      }
    }
    if (this.led.has(partition)) this.coordinator.completeLoading(partition, records);
  }

  private async appendRecords(partition: number, records: CoordinatorRecord[]): Promise<void> {
    const now = Date.now();
    const batch = await buildRecordBatch({}, records.map((r) => ({ ...encodeCoordinatorRecord(r), timestamp: now })));
    await this.options.access.append(partition, batch);
  }

  /**
   * FindCoordinator for a group: the leader of its offsets partition. As in Kafka, the
   * request that finds `__consumer_offsets` missing creates it and answers
   * COORDINATOR_NOT_AVAILABLE; so does this broker for a partition it leads but has not
   * started to load, and the client asks again.
   */
  async findCoordinator(groupId: string, listenerName: string): Promise<CoordinatorEndpoint> {
    const partition = this.coordinator.partitionFor(groupId);
    const leader = this.options.access.partitionLeader(partition, listenerName);
    if (leader === null) {
      this.creating ??= this.options.access.createOffsetsTopic().finally(() => { this.creating = null; });
      await this.creating;
      return this.unavailable();
    }
    if (leader === 'no-leader') return this.unavailable();
    if (leader.leaderId === this.options.nodeId && !this.led.has(partition)) return this.unavailable();
    return { errorCode: 0, errorMessage: null, nodeId: leader.leaderId, host: leader.host, port: leader.port };
  }

  private unavailable(): CoordinatorEndpoint {
    const e = Errors.COORDINATOR_NOT_AVAILABLE;
    return { errorCode: e.code, errorMessage: e.message, nodeId: -1, host: '', port: -1 };
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
