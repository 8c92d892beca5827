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
import type { Scheduler, Timer } from './scheduler.ts';
import { guarded } from '../runtime/guard.ts';
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
  /**
   * Failures of background work (timers, loads) and records a load skipped, each with what
   * it concerns: the group, or the partition and offset.
   */
  readonly onError: (err: unknown, what: string) => void;
  /** Backoff between attempts to load a partition whose load failed; default 500 ms doubling to 30 s. */
  readonly loadRetryBackoffMs?: { initial: number; max: number };
}

/** Where the load of one `__consumer_offsets` partition this broker leads stands. */
export interface PartitionLoadStatus {
  partition: number;
  /** loading: an attempt runs; loaded: its groups are served; failed: waiting to retry. */
  state: 'loading' | 'loaded' | 'failed';
  /** Why the last attempt failed; null unless failed (or loading again after a failure). */
  reason: string | null;
  /** Attempts made since this broker became the partition's leader. */
  attempts: number;
  /** Records of the last completed load that could not be decoded or applied, and were skipped. */
  skippedRecords: number;
  /** When the next attempt starts (failed only). */
  nextAttemptAtMs: number | null;
}

const DEFAULT_LOAD_RETRY_BACKOFF_MS = { initial: 500, max: 30_000 };

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export class GroupCoordinatorService {
  readonly coordinator: GroupCoordinator;
  private readonly led = new Set<number>();
  private creating: Promise<number> | null = null;
  private chain: Promise<void> = Promise.resolve();
  /** Bumped each time this broker becomes a partition's leader: a stale retry sees it changed. */
  private readonly leadEpochs = new Map<number, number>();
  private readonly loadStatuses = new Map<number, PartitionLoadStatus>();
  private readonly retryTimers = new Map<number, Timer>();

  constructor(private readonly options: GroupCoordinatorServiceOptions) {
    const log: CoordinatorLog = { append: (partition, records) => this.appendRecords(partition, records) };
    this.coordinator = new GroupCoordinator(options.config, options.scheduler, log, options.onError);
  }

  get offsetsRetentionMs(): number {
    return this.options.config.offsetsRetentionMs;
  }

  start(): void {
    this.coordinator.start();
  }

  shutdown(): void {
    for (const timer of this.retryTimers.values()) timer.cancel();
    this.retryTimers.clear();
    this.coordinator.shutdown();
  }

  /** The load state of every offsets partition this broker leads, for metrics and tools. */
  partitionLoadStatuses(): PartitionLoadStatus[] {
    return [...this.loadStatuses.values()].map((s) => ({ ...s })).sort((a, b) => a.partition - b.partition);
  }

  /** The load state of one offsets partition; undefined when this broker does not lead it. */
  partitionLoadStatus(partition: number): PartitionLoadStatus | undefined {
    const status = this.loadStatuses.get(partition);
    return status === undefined ? undefined : { ...status };
  }

  partitionExists(topic: string, partition: number): boolean {
    return this.options.access.partitionExists(topic, partition);
  }

  /**
   * Leadership of offsets partitions changed: load the ones this broker now leads, unload
   * the ones it no longer leads. Loads run one after another in the order changes arrive; a
   * load that fails is retried with a backoff while the partition's groups answer
   * COORDINATOR_LOAD_IN_PROGRESS.
   */
  onOffsetsPartitionLeadership(partition: number, isLeader: boolean): void {
    if (isLeader && !this.led.has(partition)) {
      this.led.add(partition);
      const epoch = (this.leadEpochs.get(partition) ?? 0) + 1;
      this.leadEpochs.set(partition, epoch);
      this.loadStatuses.set(partition, {
        partition,
        state: 'loading',
        reason: null,
        attempts: 0,
        skippedRecords: 0,
        nextAttemptAtMs: null,
      });
      this.coordinator.beginLoading(partition);
      this.enqueue(`loading ${OFFSETS_TOPIC}-${partition}`, () => this.load(partition, epoch));
    } else if (!isLeader && this.led.has(partition)) {
      this.led.delete(partition);
      this.loadStatuses.delete(partition);
      this.retryTimers.get(partition)?.cancel();
      this.retryTimers.delete(partition);
      this.enqueue(`unloading ${OFFSETS_TOPIC}-${partition}`, () => this.coordinator.unload(partition));
    }
  }

  /** Resolves once every load requested so far has finished (an attempt, failed or not). */
  whenLoaded(): Promise<void> {
    return this.chain;
  }

  /** Chains a step of loading or unloading; a step that fails is reported and the chain goes on. */
  private enqueue(what: string, step: () => void | Promise<void>): void {
    this.chain = this.chain.then(step).catch((err) => this.options.onError(err, what));
  }

  private isCurrent(partition: number, epoch: number): boolean {
    return this.led.has(partition) && this.leadEpochs.get(partition) === epoch;
  }

  /**
   * Reads the partition back and applies it. A record that cannot be decoded (or a batch
   * whose records cannot be read) is logged with its partition and offset, counted and
   * skipped: it never keeps the other groups of the partition from loading. A failure of
   * the read itself (storage) fails the attempt, which is retried with a backoff.
   */
  private async load(partition: number, epoch: number): Promise<void> {
    if (!this.isCurrent(partition, epoch)) return;
    const status = this.loadStatuses.get(partition)!;
    status.state = 'loading';
    status.nextAttemptAtMs = null;
    status.attempts++;
    const where = `${OFFSETS_TOPIC}-${partition}`;
    let skipped = 0;
    const skip = (offset: number | string, err: unknown): void => {
      skipped++;
      this.options.onError(err, `decoding the record at offset ${offset} of ${where} (skipped)`);
    };
    const records: CoordinatorRecord[] = [];
    const offsets: number[] = [];
    try {
      for await (const batch of this.options.access.readBatches(partition)) {
        if (batch.isControl) continue;
        let read = 0;
        try {
          const payload = await decompressedRecords(batch);
          for (const record of iterateRecords(batch, payload)) {
            read++;
            if (record.key === null) {
              skip(record.offset, new Error('record without a key'));
              continue;
            }
            let decoded: CoordinatorRecord | null;
            try {
              decoded = decodeCoordinatorRecord(record.key, record.value);
            } catch (err) {
              skip(record.offset, err);
              continue;
            }
            if (decoded === null) continue;
            records.push(decoded);
            offsets.push(record.offset);
          }
        } catch (err) {
          // The batch's records cannot be read (corrupt compression or framing): all of
          // them from the first unread one are skipped.
          const unread = Math.max(batch.recordCount - read, 1);
          skipped += unread - 1;
          skip(`${batch.baseOffset + read}..${batch.lastOffset}`, err);
        }
      }
      if (!this.isCurrent(partition, epoch)) return;
      skipped += this.coordinator.completeLoading(partition, records, (index, err) => {
        this.options.onError(err, `replaying the record at offset ${offsets[index]} of ${where} (skipped)`);
      });
    } catch (err) {
      this.loadFailed(partition, epoch, err);
      return;
    }
    status.state = 'loaded';
    status.reason = null;
    status.skippedRecords = skipped;
    if (skipped > 0) {
      this.options.onError(new Error(`${skipped} record(s) could not be loaded and were skipped`), `loading ${where} (completed)`);
    }
  }

  private loadFailed(partition: number, epoch: number, err: unknown): void {
    const where = `${OFFSETS_TOPIC}-${partition}`;
    this.options.onError(err, `loading ${where}`);
    if (!this.isCurrent(partition, epoch)) return;
    this.coordinator.abandonLoading(partition);
    const status = this.loadStatuses.get(partition)!;
    const backoff = this.options.loadRetryBackoffMs ?? DEFAULT_LOAD_RETRY_BACKOFF_MS;
    const delay = Math.min(backoff.initial * 2 ** Math.min(status.attempts - 1, 30), backoff.max);
    status.state = 'failed';
    status.reason = reasonOf(err);
    status.nextAttemptAtMs = this.options.scheduler.now() + delay;
    this.retryTimers.get(partition)?.cancel();
    this.retryTimers.set(
      partition,
      this.options.scheduler.schedule(
        delay,
        guarded(this.options.onError, `retrying the load of ${where}`, () => {
          this.retryTimers.delete(partition);
          if (this.isCurrent(partition, epoch)) this.enqueue(`loading ${where}`, () => this.load(partition, epoch));
        }),
      ),
    );
  }

  private async appendRecords(partition: number, records: CoordinatorRecord[]): Promise<void> {
    const now = Date.now();
    const batch = await buildRecordBatch(
      {},
      records.map((r) => ({ ...encodeCoordinatorRecord(r), timestamp: now })),
    );
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
      this.creating ??= this.options.access.createOffsetsTopic().finally(() => {
        this.creating = null;
      });
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
