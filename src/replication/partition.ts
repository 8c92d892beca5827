/**
 * One partition as this broker sees it: its log, leader epoch, replicas, ISR and the high
 * watermark. A single broker is the one-replica case of the same rules: the high watermark
 * is the smallest log end offset over the ISR, and with ISR = {self} that is the leader's.
 */
import type { TopicConfigLookup } from '../config/topic-config.ts';
import { type LogSettings, type ReplicaLog, logSettings } from './log.ts';

export interface PartitionState {
  readonly topic: string;
  readonly topicId: string;
  readonly partition: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}-${partition}`;
}

/** Batches appended but not yet below the high watermark, for fetch byte accounting. */
interface UnreplicatedAppend {
  readonly nextOffset: number;
  readonly sizeInBytes: number;
}

export class Partition {
  readonly key: string;
  leaderId: number;
  leaderEpoch: number;
  partitionEpoch: number;
  replicas: readonly number[];
  isr: readonly number[];
  settings: LogSettings;
  private hw: number;
  /** Log end offsets followers reported with their fetches (replica id -> offset). */
  private readonly followerEndOffsets = new Map<number, number>();
  private readonly unreplicated: UnreplicatedAppend[] = [];
  /**
   * Bytes that became visible to consumers (moved below the high watermark) since this
   * broker took the partition: a delayed fetch compares it with its value when parked.
   */
  visibleBytes = 0;
  /** Bytes appended locally since this broker took the partition (what followers wait for). */
  appendedBytes = 0;

  constructor(
    readonly topic: string,
    readonly partition: number,
    public topicId: string,
    readonly localBrokerId: number,
    readonly log: ReplicaLog,
    config: TopicConfigLookup,
    state: PartitionState,
  ) {
    this.key = partitionKey(topic, partition);
    this.leaderId = state.leaderId;
    this.leaderEpoch = state.leaderEpoch;
    this.partitionEpoch = state.partitionEpoch;
    this.replicas = state.replicas;
    this.isr = state.isr;
    this.settings = logSettings(config);
    this.hw = Math.min(Math.max(log.checkpointedHighWatermark, log.logStartOffset), log.logEndOffset);
  }

  get isLeader(): boolean {
    return this.leaderId === this.localBrokerId;
  }

  get highWatermark(): number {
    return this.hw;
  }

  /** Equal to the high watermark until transactions keep open ranges below it. */
  get lastStableOffset(): number {
    return this.hw;
  }

  get logStartOffset(): number {
    return this.log.logStartOffset;
  }

  get logEndOffset(): number {
    return this.log.logEndOffset;
  }

  applyState(state: PartitionState): void {
    this.leaderId = state.leaderId;
    this.leaderEpoch = state.leaderEpoch;
    this.partitionEpoch = state.partitionEpoch;
    this.replicas = state.replicas;
    this.isr = state.isr;
    this.topicId = state.topicId;
    for (const id of this.followerEndOffsets.keys()) if (!state.replicas.includes(id)) this.followerEndOffsets.delete(id);
    this.maybeIncrementHighWatermark();
  }

  updateConfig(config: TopicConfigLookup): void {
    this.settings = logSettings(config);
    this.log.updateConfig(config);
  }

  /** Records a local append of `sizeInBytes` ending before `nextOffset`. */
  onLocalAppend(nextOffset: number, sizeInBytes: number): boolean {
    this.appendedBytes += sizeInBytes;
    this.unreplicated.push({ nextOffset, sizeInBytes });
    return this.maybeIncrementHighWatermark();
  }

  /** A follower fetched from `fetchOffset`: everything before it is on that replica. */
  updateFollowerEndOffset(replicaId: number, fetchOffset: number): boolean {
    this.followerEndOffsets.set(replicaId, fetchOffset);
    return this.maybeIncrementHighWatermark();
  }

  /** HW = min over the ISR of each replica's log end offset; it never moves back. */
  maybeIncrementHighWatermark(): boolean {
    if (!this.isLeader) return false;
    let candidate = this.log.logEndOffset;
    for (const replicaId of this.isr) {
      if (replicaId === this.localBrokerId) continue;
      candidate = Math.min(candidate, this.followerEndOffsets.get(replicaId) ?? this.hw);
    }
    if (candidate <= this.hw) return false;
    this.hw = candidate;
    for (let head = this.unreplicated[0]; head !== undefined && head.nextOffset <= candidate; head = this.unreplicated[0]) {
      this.unreplicated.shift();
      this.visibleBytes += head.sizeInBytes;
    }
    this.log.updateHighWatermark(candidate);
    return true;
  }

  /** logStartOffset <= HW <= LEO must hold after every change. */
  assertInvariants(): void {
    const start = this.log.logStartOffset;
    const end = this.log.logEndOffset;
    if (!(start <= this.hw && this.hw <= end)) {
      throw new Error(`partition ${this.key}: logStartOffset ${start} <= hw ${this.hw} <= leo ${end} violated`);
    }
  }
}
