/**
 * The two delayed operations of the data path: a produce with acks=all waiting for the high
 * watermark to pass its batches, and a fetch waiting for min.bytes of new data.
 */
import { Errors } from '../../protocol/errors.ts';
import { DelayedOperation } from './purgatory.ts';
import type { Partition } from './partition.ts';

export interface ProducePartitionStatus {
  readonly partition: Partition;
  /** The offset after the appended batches: done when the high watermark reaches it. */
  readonly requiredOffset: number;
  /** NONE while waiting; the final error code once decided. */
  errorCode: number;
  pending: boolean;
}

export class DelayedProduce extends DelayedOperation {
  constructor(
    delayMs: number,
    readonly statuses: readonly ProducePartitionStatus[],
    private readonly isCurrent: (partition: Partition) => boolean,
    private readonly respond: () => void,
  ) {
    super(delayMs);
  }

  tryComplete(): boolean {
    for (const status of this.statuses) if (status.pending) this.decide(status, false);
    if (this.statuses.some((s) => s.pending)) return false;
    return this.forceComplete();
  }

  /** Settles `status` if its outcome is known; with `final`, waiting turns into REQUEST_TIMED_OUT. */
  private decide(status: ProducePartitionStatus, final: boolean): void {
    const { partition } = status;
    if (partition.offline) {
      // Whatever the high watermark says: the leader's own copy may not be on its disk.
      status.errorCode = Errors.KAFKA_STORAGE_ERROR.code;
    } else if (!this.isCurrent(partition) || !partition.isLeader) {
      status.errorCode = Errors.NOT_LEADER_OR_FOLLOWER.code;
    } else if (partition.highWatermark >= status.requiredOffset) {
      // Partition.checkEnoughReplicasReachOffset: replicated, but the (maximal) ISR may have shrunk meanwhile.
      status.errorCode =
        partition.maximalIsr.length < partition.effectiveMinIsr ? Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.code : Errors.NONE.code;
    } else if (final) {
      status.errorCode = Errors.REQUEST_TIMED_OUT.code;
    } else {
      return;
    }
    status.pending = false;
  }

  /** Runs however the operation ends: expiry, completion, or a forced completion at shutdown or removal. */
  protected onComplete(): void {
    for (const status of this.statuses) if (status.pending) this.decide(status, true);
    this.respond();
  }
}

export interface FetchPartitionWatch {
  readonly partition: Partition;
  readonly fetchOffset: number;
  readonly leaderEpoch: number;
  /** The partition's visible (or, for followers, appended) byte counter when parked. */
  readonly counterAtParkBytes: number;
}

/**
 * Completes when enough new bytes became fetchable across the watched partitions, when a
 * partition changed leadership or was truncated below the fetch offset, or on timeout.
 */
export class DelayedFetch extends DelayedOperation {
  constructor(
    delayMs: number,
    private readonly watches: readonly FetchPartitionWatch[],
    private readonly minBytes: number,
    private readonly alreadyReadBytes: number,
    private readonly fromFollower: boolean,
    private readonly isCurrent: (partition: Partition) => boolean,
    private readonly respond: () => void,
  ) {
    super(delayMs);
  }

  tryComplete(): boolean {
    let accumulatedBytes = this.alreadyReadBytes;
    for (const watch of this.watches) {
      const { partition } = watch;
      if (!this.isCurrent(partition) || !partition.isLeader || partition.leaderEpoch !== watch.leaderEpoch) {
        return this.forceComplete();
      }
      if (watch.fetchOffset > partition.logEndOffset || watch.fetchOffset < partition.logStartOffset) {
        return this.forceComplete();
      }
      const counterBytes = this.fromFollower ? partition.appendedBytes : partition.visibleBytes;
      accumulatedBytes += counterBytes - watch.counterAtParkBytes;
    }
    if (accumulatedBytes >= this.minBytes) return this.forceComplete();
    return false;
  }

  protected onComplete(): void {
    this.respond();
  }
}
