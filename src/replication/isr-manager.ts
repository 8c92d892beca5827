/**
 * ISR changes of the partitions this broker leads, as Kafka makes them: the isr-expiration
 * task (every replica.lag.time.max.ms / 2) shrinks the ISR of followers that have not caught
 * up for replica.lag.time.max.ms; a follower's fetch that brings it to the high watermark
 * and into the current leader epoch expands it. Changes go to the controller in AlterPartition
 * requests (Kafka's AlterPartitionManager): one request in flight at a time carrying every
 * change not yet sent, at most one change in flight per partition, the controller's answer
 * applied to the partition (its leader epoch, partition epoch and ISR).
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAlterPartitionRequest,
  makeAlterPartitionRequestBrokerState,
  makeAlterPartitionRequestPartitionData,
  makeAlterPartitionRequestTopicData,
} from '../../protocol/messages/alter-partition.ts';
import type { ApiKey, ApiRequest, ApiResponse } from '../../protocol/messages/index.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import type { AlterPartitionResult, Partition, PendingIsrChange } from './partition.ts';
import { schedule, type Clock } from '../runtime/clock.ts';

export type AlterPartitionRequest = ApiRequest<ApiKey.AlterPartition>;
export type AlterPartitionResponse = ApiResponse<ApiKey.AlterPartition>;

/**
 * Requests are built for AlterPartition v3 (KIP-903: topic ids and newIsrWithEpochs; the
 * topic name is filled in too), the version Kafka brokers send to a KRaft controller.
 */
export const ALTER_PARTITION_VERSION = 3;

/** Kafka's AlterPartitionManager retries a request the controller failed after 50 ms. */
const DEFAULT_RETRY_BACKOFF_MS = 50;

export interface IsrManagerOptions {
  readonly brokerId: number;
  readonly brokerEpoch: () => bigint;
  /** To the active controller; rejects only when it cannot be reached in time. */
  readonly alterPartition: (request: AlterPartitionRequest) => Promise<AlterPartitionResponse>;
  /** replica.lag.time.max.ms */
  readonly replicaLagTimeMaxMs: number;
  readonly clock: Clock;
  readonly retryBackoffMs?: number;
  readonly onError?: (err: unknown, what: string) => void;
}

/** What the ISR manager reaches of the ReplicaManager. */
export interface IsrHost {
  /** Every hosted partition; the ones this broker leads are checked. */
  partitions(): Iterable<Partition>;
  /** The high watermark moved: waiting produces and fetches of the partition are checked. */
  onHighWatermarkIncremented(partition: Partition): void;
}

interface AlterPartitionItem {
  readonly partition: Partition;
  readonly pending: PendingIsrChange;
}

function itemKey(topicId: string, topic: string, partition: number): string {
  return `${topicId === ZERO_UUID ? topic : topicId}:${partition}`;
}

export class IsrManager {
  /** Changes not yet answered, one per partition (Kafka's unsentIsrUpdates). */
  private readonly unsent = new Map<string, AlterPartitionItem>();
  private inflight = false;
  private cancelExpiration: (() => void) | null = null;
  private cancelRetry: (() => void) | null = null;
  private closed = false;
  private readonly retryBackoffMs: number;

  constructor(
    private readonly host: IsrHost,
    private readonly options: IsrManagerOptions,
  ) {
    this.retryBackoffMs = options.retryBackoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
  }

  /** Starts the isr-expiration task. */
  start(): void {
    if (this.closed || this.cancelExpiration !== null) return;
    const periodMs = Math.max(1, Math.floor(this.options.replicaLagTimeMaxMs / 2));
    const tick = (): void => {
      this.cancelExpiration = schedule(this.options.clock, periodMs, () => {
        try {
          this.maybeShrinkIsr();
        } catch (err) {
          this.options.onError?.(err, 'checking ISRs for lagging followers');
        }
        if (!this.closed) tick();
      });
    };
    tick();
  }

  /** Proposes to drop the followers that have not caught up for replica.lag.time.max.ms. */
  maybeShrinkIsr(): void {
    const nowMs = this.options.clock.now();
    for (const partition of this.host.partitions()) {
      const outOfSync = partition.outOfSyncReplicas(nowMs);
      if (outOfSync.length > 0) this.submit(partition, partition.prepareIsrShrink(outOfSync));
    }
  }

  /** After a follower's fetch: proposes to add it when it has caught up. */
  maybeExpandIsr(partition: Partition, replicaId: number): void {
    if (this.closed || !partition.needsExpandIsr(replicaId)) return;
    this.submit(partition, partition.prepareIsrExpand(replicaId));
  }

  /** Stops the expiration task; an answer still in flight is ignored. */
  shutdown(): void {
    this.closed = true;
    this.cancelExpiration?.();
    this.cancelExpiration = null;
    this.cancelRetry?.();
    this.cancelRetry = null;
    this.unsent.clear();
  }

  private submit(partition: Partition, pending: PendingIsrChange): void {
    this.unsent.set(itemKey(partition.topicId, partition.topic, partition.partition), { partition, pending });
    this.maybePropagateIsrChanges();
  }

  private maybePropagateIsrChanges(): void {
    if (this.closed || this.inflight || this.cancelRetry !== null) return;
    // A change the metadata superseded while it waited (new leader or partition epoch) is moot.
    for (const [key, item] of this.unsent) if (item.partition.pendingIsrChange !== item.pending) this.unsent.delete(key);
    if (this.unsent.size === 0) return;
    this.inflight = true;
    const items = [...this.unsent.values()];
    const brokerEpoch = this.options.brokerEpoch();
    this.options.alterPartition(buildRequest(this.options.brokerId, brokerEpoch, items)).then(
      (response) => {
        this.inflight = false;
        if (this.closed) return;
        if (response.errorCode !== Errors.NONE.code) {
          // STALE_BROKER_EPOCH (a re-registration is under way) and the like: all is resent.
          this.retryLater();
          return;
        }
        if (this.handleResponse(items, response)) this.retryLater();
        else this.maybePropagateIsrChanges();
      },
      (err: unknown) => {
        this.inflight = false;
        if (this.closed) return;
        this.options.onError?.(err, 'sending AlterPartition to the controller');
        this.retryLater();
      },
    );
  }

  private retryLater(): void {
    this.cancelRetry = schedule(this.options.clock, this.retryBackoffMs, () => {
      this.cancelRetry = null;
      this.maybePropagateIsrChanges();
    });
  }

  /**
   * Every item sent is answered from the response; one the response leaves out stays unsent
   * and goes again with the next request. Returns whether a change is to be retried.
   */
  private handleResponse(items: readonly AlterPartitionItem[], response: AlterPartitionResponse): boolean {
    const results = new Map<string, AlterPartitionResult>();
    for (const topic of response.topics) {
      for (const p of topic.partitions) {
        results.set(itemKey(topic.topicId, topic.topicName, p.partitionIndex), {
          errorCode: p.errorCode,
          leaderId: p.leaderId,
          leaderEpoch: p.leaderEpoch,
          partitionEpoch: p.partitionEpoch,
          isr: p.isr,
        });
      }
    }
    const nowMs = this.options.clock.now();
    let retry = false;
    for (const item of items) {
      const { partition } = item;
      const key = itemKey(partition.topicId, partition.topic, partition.partition);
      const result = results.get(key) ?? results.get(itemKey(ZERO_UUID, partition.topic, partition.partition));
      if (result === undefined) continue;
      if (this.unsent.get(key) === item) this.unsent.delete(key);
      const outcome = partition.completeIsrChange(item.pending, result, nowMs);
      if (outcome.highWatermarkIncremented) this.host.onHighWatermarkIncremented(partition);
      if (outcome.retry) {
        this.unsent.set(key, item);
        retry = true;
      }
    }
    return retry;
  }
}

function buildRequest(brokerId: number, brokerEpoch: bigint, items: readonly AlterPartitionItem[]): AlterPartitionRequest {
  const topics = new Map<string, ReturnType<typeof makeAlterPartitionRequestTopicData>>();
  for (const { partition, pending } of items) {
    let topic = topics.get(partition.topicId);
    if (topic === undefined) {
      topic = makeAlterPartitionRequestTopicData({ topicName: partition.topic, topicId: partition.topicId });
      topics.set(partition.topicId, topic);
    }
    topic.partitions.push(
      makeAlterPartitionRequestPartitionData({
        partitionIndex: partition.partition,
        leaderEpoch: pending.leaderEpoch,
        newIsrWithEpochs: pending.proposedIsr.map((m) => makeAlterPartitionRequestBrokerState(m)),
        leaderRecoveryState: 0,
        partitionEpoch: pending.partitionEpoch,
      }),
    );
  }
  return makeAlterPartitionRequest({ brokerId, brokerEpoch, topics: [...topics.values()] });
}
