/**
 * One partition as this broker sees it (Kafka's Partition): its log, its role in the current
 * leader epoch, the replicas and ISR, and, while it leads, each follower's fetch state. The
 * high watermark lives in the log (as in Kafka's UnifiedLog); a leader moves it to the
 * smallest log end offset over the maximal ISR, a follower to min(leader's high watermark,
 * its own log end offset). A single broker is the one-replica case of the same rules: with
 * ISR = {self} the high watermark is the leader's log end offset.
 */
import { Errors } from '../../protocol/errors.ts';
import type { TopicConfigLookup } from '../config/topic-config.ts';
import { type FollowerAppendInfo, type LogSettings, type ReplicaLog, logSettings } from './log.ts';

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

/** Kafka's UnifiedLog.UnknownOffset: a follower that has not fetched in this leader epoch. */
export const UNKNOWN_OFFSET = -1;

/** The leader's view of one follower (Kafka's Replica.ReplicaState). */
export interface FollowerReplicaState {
  readonly logStartOffset: number;
  /** The follower's fetch offset: everything before it is on that replica. */
  readonly logEndOffset: number;
  /** The leader's log end offset when the follower last fetched. */
  readonly lastFetchLeaderLogEndOffset: number;
  readonly lastFetchTimeMs: number;
  /** When the follower last held everything the leader had (0: never in this leader epoch). */
  readonly lastCaughtUpTimeMs: number;
  /** The broker epoch its last fetch carried (-1n: none sent); undefined before any fetch. */
  readonly brokerEpoch: bigint | undefined;
}

function unknownReplicaState(lastCaughtUpTimeMs: number): FollowerReplicaState {
  return {
    logStartOffset: UNKNOWN_OFFSET,
    logEndOffset: UNKNOWN_OFFSET,
    lastFetchLeaderLogEndOffset: UNKNOWN_OFFSET,
    lastFetchTimeMs: 0,
    lastCaughtUpTimeMs,
    brokerEpoch: undefined,
  };
}

/** ReplicaState.isCaughtUp: at the leader's end, or caught up within the last `maxLagMs`. */
export function isCaughtUp(state: FollowerReplicaState, leaderEndOffset: number, nowMs: number, maxLagMs: number): boolean {
  return state.logEndOffset === leaderEndOffset || nowMs - state.lastCaughtUpTimeMs <= maxLagMs;
}

/** A broker as the metadata image registers it. */
export interface BrokerRegistrationView {
  readonly epoch: bigint;
  readonly fenced: boolean;
  readonly inControlledShutdown: boolean;
}

/** What a partition needs from the broker to judge its followers. */
export interface ReplicationSettings {
  /** replica.lag.time.max.ms */
  readonly replicaLagTimeMaxMs: number;
  /** This broker's epoch (from its registration), sent with ISR changes. */
  readonly localBrokerEpoch: () => bigint;
  /**
   * A broker's registration in the metadata image, undefined when unregistered. Absent: every
   * replica that fetched is eligible for the ISR (tests of the replication layer alone).
   */
  readonly brokerRegistration?: (brokerId: number) => BrokerRegistrationView | undefined;
}

/** An ISR member and the broker epoch it fetched with, as AlterPartition v3 carries them. */
export interface IsrMember {
  readonly brokerId: number;
  readonly brokerEpoch: bigint;
}

/**
 * An AlterPartition in flight (Kafka's PendingExpandIsr / PendingShrinkIsr). Until the
 * controller answers, the high watermark waits for the maximal ISR: the committed ISR plus
 * the replica being added (a shrink is not assumed to succeed).
 */
export interface PendingIsrChange {
  readonly kind: 'expand' | 'shrink';
  readonly proposedIsr: readonly IsrMember[];
  readonly maximalIsr: readonly number[];
  readonly lastCommittedIsr: readonly number[];
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
}

/** The partition state the controller answered an AlterPartition with, or its error. */
export interface AlterPartitionResult {
  readonly errorCode: number;
  readonly leaderId: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly isr: readonly number[];
}

/** Batches appended but not yet below the high watermark, for fetch byte accounting. */
interface UnreplicatedAppend {
  readonly nextOffset: number;
  readonly sizeInBytes: number;
}

export class Partition {
  readonly key: string;
  leaderId = -1;
  leaderEpoch = -1;
  partitionEpoch = -1;
  replicas: readonly number[] = [];
  settings: LogSettings;
  /**
   * The log end offset when this broker became leader in its current epoch (Kafka's
   * leaderEpochStartOffsetOpt); -1 when it does not lead. A follower joins the ISR only once
   * it holds everything before it.
   */
  leaderEpochStartOffset = -1;
  private committedIsr: readonly number[] = [];
  private pendingIsr: PendingIsrChange | null = null;
  /** While leading: each other replica's fetch state. */
  private readonly followers = new Map<number, FollowerReplicaState>();
  private unreplicated: UnreplicatedAppend[] = [];
  /**
   * Bytes that became visible to consumers (moved below the high watermark) since this
   * broker took the partition: a delayed fetch compares it with its value when parked.
   */
  visibleBytes = 0;
  /** Bytes appended locally since this broker took the partition (what followers wait for). */
  appendedBytes = 0;
  /** Its log dir failed: the ReplicaManager no longer hosts it, and what still holds it answers KAFKA_STORAGE_ERROR. */
  private isOffline = false;

  constructor(
    readonly topic: string,
    readonly partition: number,
    public topicId: string,
    readonly localBrokerId: number,
    readonly log: ReplicaLog,
    config: TopicConfigLookup,
    private readonly replication: ReplicationSettings,
  ) {
    this.key = partitionKey(topic, partition);
    this.settings = logSettings(config);
    this.assertInvariants();
  }

  get isLeader(): boolean {
    return this.leaderId === this.localBrokerId;
  }

  get offline(): boolean {
    return this.isOffline;
  }

  /** Kafka's Partition.markOffline: it neither leads nor follows any more (until a restart). */
  markOffline(): void {
    this.isOffline = true;
    this.leaderId = -1;
    this.leaderEpochStartOffset = -1;
    this.followers.clear();
  }

  get highWatermark(): number {
    return this.log.highWatermark;
  }

  /** The log's last stable offset: known once its producer state is loaded (ReplicaLog.loadProducerState). */
  get lastStableOffset(): number {
    return this.log.lastStableOffset;
  }

  get logStartOffset(): number {
    return this.log.logStartOffset;
  }

  get logEndOffset(): number {
    return this.log.logEndOffset;
  }

  /** The ISR the controller last committed. */
  get isr(): readonly number[] {
    return this.committedIsr;
  }

  /**
   * Kafka's Partition.effectiveMinIsr: min.insync.replicas capped by the number of replicas,
   * so a partition with fewer replicas than the setting asks for still takes acks=all writes
   * and moves its high watermark once every replica it has is in sync.
   */
  get effectiveMinIsr(): number {
    return Math.min(this.settings.minInsyncReplicas, this.replicas.length);
  }

  /** Kafka's isUnderMinIsr: this broker leads and the committed ISR is below the effective min ISR. */
  get isUnderMinIsr(): boolean {
    return this.isLeader && this.committedIsr.length < this.effectiveMinIsr;
  }

  /** The ISR the high watermark waits for: the committed one plus a replica being added. */
  get maximalIsr(): readonly number[] {
    return this.pendingIsr?.maximalIsr ?? this.committedIsr;
  }

  /** The AlterPartition in flight, null when none. */
  get pendingIsrChange(): PendingIsrChange | null {
    return this.pendingIsr;
  }

  followerState(replicaId: number): FollowerReplicaState | undefined {
    return this.followers.get(replicaId);
  }

  /** Metadata older than what this broker applied (a lower partition epoch) changes nothing. */
  isStale(state: PartitionState): boolean {
    return state.partitionEpoch < this.partitionEpoch;
  }

  /**
   * Kafka's Partition.makeLeader (the caller checked isStale). A new leader epoch starts at the
   * log end; the followers' positions become unknown (they were learned under another leader)
   * and ISR members count as caught up now, so they have replica.lag.time.max.ms to fetch.
   * Returns whether the leader epoch is new (the caller records its start in the log).
   */
  makeLeader(state: PartitionState, nowMs: number): boolean {
    const isNewLeader = !this.isLeader;
    const isNewLeaderEpoch = state.leaderEpoch > this.leaderEpoch;
    this.leaderId = this.localBrokerId;
    this.updateAssignmentAndIsr(state, true);
    if (isNewLeaderEpoch) {
      const leaderEndOffset = this.log.logEndOffset;
      for (const [id, current] of this.followers) {
        const lastCaughtUpTimeMs = state.isr.includes(id) ? nowMs : 0;
        this.followers.set(
          id,
          isNewLeader
            ? unknownReplicaState(lastCaughtUpTimeMs)
            : { ...current, lastFetchLeaderLogEndOffset: leaderEndOffset, lastCaughtUpTimeMs },
        );
      }
      this.leaderEpoch = state.leaderEpoch;
      this.leaderEpochStartOffset = leaderEndOffset;
    }
    this.partitionEpoch = state.partitionEpoch;
    return isNewLeaderEpoch;
  }

  /**
   * Kafka's Partition.makeFollower (the caller checked isStale). A follower tracks no
   * follower state. Returns whether the leader epoch is new (the fetcher restarts then).
   */
  makeFollower(state: PartitionState): boolean {
    const isNewLeaderEpoch = state.leaderEpoch > this.leaderEpoch;
    this.leaderId = state.leaderId;
    this.leaderEpoch = state.leaderEpoch;
    this.leaderEpochStartOffset = -1;
    this.partitionEpoch = state.partitionEpoch;
    this.updateAssignmentAndIsr(state, false);
    return isNewLeaderEpoch;
  }

  private updateAssignmentAndIsr(state: PartitionState, isLeader: boolean): void {
    this.replicas = state.replicas;
    this.topicId = state.topicId;
    this.committedIsr = state.isr;
    this.pendingIsr = null;
    if (!isLeader) {
      this.followers.clear();
      return;
    }
    for (const id of this.followers.keys()) if (!state.replicas.includes(id)) this.followers.delete(id);
    for (const id of state.replicas) {
      if (id !== this.localBrokerId && !this.followers.has(id)) this.followers.set(id, unknownReplicaState(0));
    }
  }

  updateConfig(config: TopicConfigLookup): void {
    this.settings = logSettings(config);
    this.log.updateConfig(config);
  }

  // ---- leader ----

  /** Records a local append of `sizeInBytes` ending before `nextOffset`; true when the high watermark moved. */
  onLocalAppend(nextOffset: number, sizeInBytes: number, nowMs: number): boolean {
    this.appendedBytes += sizeInBytes;
    this.unreplicated.push({ nextOffset, sizeInBytes });
    return this.maybeIncrementHighWatermark(nowMs);
  }

  /**
   * The error a follower's fetch gets before any read: UNKNOWN_LEADER_EPOCH (or
   * NOT_LEADER_OR_FOLLOWER without an epoch) for a broker that is no replica, as Kafka's
   * followerReplicaOrThrow; NOT_LEADER_OR_FOLLOWER for a fetch with a broker epoch older than
   * the one the metadata registers (a previous incarnation of that broker).
   */
  followerFetchError(replicaId: number, currentLeaderEpoch: number, brokerEpoch: bigint): number {
    if (!this.followers.has(replicaId)) {
      return currentLeaderEpoch >= 0 ? Errors.UNKNOWN_LEADER_EPOCH.code : Errors.NOT_LEADER_OR_FOLLOWER.code;
    }
    const registered = this.replication.brokerRegistration?.(replicaId);
    const aliveEpoch = registered === undefined || registered.fenced ? undefined : registered.epoch;
    if (brokerEpoch !== -1n && aliveEpoch !== undefined && aliveEpoch > brokerEpoch) return Errors.NOT_LEADER_OR_FOLLOWER.code;
    return Errors.NONE.code;
  }

  /**
   * Kafka's updateFollowerFetchState: the follower holds everything before `fetchOffset`.
   * It counts as caught up when it reached the leader's end offset at this fetch or at its
   * previous one. Returns true when the high watermark moved.
   */
  updateFollowerFetchState(
    replicaId: number,
    fetchOffset: number,
    followerStartOffset: number,
    nowMs: number,
    leaderEndOffset: number,
    brokerEpoch: bigint,
  ): boolean {
    const current = this.followers.get(replicaId);
    if (current === undefined) return false;
    let lastCaughtUpTimeMs = current.lastCaughtUpTimeMs;
    if (fetchOffset >= leaderEndOffset) lastCaughtUpTimeMs = Math.max(lastCaughtUpTimeMs, nowMs);
    else if (fetchOffset >= current.lastFetchLeaderLogEndOffset) lastCaughtUpTimeMs = Math.max(lastCaughtUpTimeMs, current.lastFetchTimeMs);
    this.followers.set(replicaId, {
      logStartOffset: followerStartOffset,
      logEndOffset: fetchOffset,
      lastFetchLeaderLogEndOffset: Math.max(leaderEndOffset, current.lastFetchLeaderLogEndOffset),
      lastFetchTimeMs: nowMs,
      lastCaughtUpTimeMs,
      brokerEpoch,
    });
    return current.logEndOffset !== fetchOffset && this.maybeIncrementHighWatermark(nowMs);
  }

  /**
   * Kafka's maybeIncrementLeaderHW: the smallest log end offset over the maximal ISR, and over
   * replicas about to join it (caught up and eligible), so the high watermark does not run
   * ahead of a follower that is joining. It never moves back; an ISR member whose position is
   * unknown (no fetch yet in this leader epoch) holds it. Under the effective min ISR it stays
   * where it is (KAFKA-15583): a record is committed only once min ISR replicas hold it.
   */
  maybeIncrementHighWatermark(nowMs: number): boolean {
    if (!this.isLeader || this.isUnderMinIsr) return false;
    const leaderEndOffset = this.log.logEndOffset;
    const maximalIsr = this.maximalIsr;
    let candidate = leaderEndOffset;
    for (const [id, state] of this.followers) {
      if (state.logEndOffset >= candidate) continue;
      const joining =
        isCaughtUp(state, leaderEndOffset, nowMs, this.replication.replicaLagTimeMaxMs) && this.isReplicaIsrEligible(id, state);
      if (maximalIsr.includes(id) || joining) candidate = state.logEndOffset;
    }
    if (candidate <= this.log.highWatermark) return false;
    this.setHighWatermark(candidate);
    return true;
  }

  /**
   * KRaft's isReplicaIsrEligible: registered, not fenced, not in controlled shutdown, and
   * fetching with the broker epoch the metadata registers (or with none, -1).
   */
  private isReplicaIsrEligible(replicaId: number, state: FollowerReplicaState): boolean {
    if (state.brokerEpoch === undefined) return false;
    const lookup = this.replication.brokerRegistration;
    if (lookup === undefined) return true;
    const registered = lookup(replicaId);
    if (registered === undefined || registered.fenced || registered.inControlledShutdown) return false;
    return state.brokerEpoch === -1n || state.brokerEpoch === registered.epoch;
  }

  /**
   * Kafka's needsExpandIsr: no change in flight, an eligible follower outside the ISR that
   * holds the high watermark and everything since this leader epoch began.
   */
  needsExpandIsr(replicaId: number): boolean {
    if (!this.isLeader || this.pendingIsr !== null || this.committedIsr.includes(replicaId)) return false;
    const state = this.followers.get(replicaId);
    if (state === undefined || !this.isReplicaIsrEligible(replicaId, state)) return false;
    return (
      state.logEndOffset >= this.log.highWatermark && this.leaderEpochStartOffset >= 0 && state.logEndOffset >= this.leaderEpochStartOffset
    );
  }

  /** ISR members (the leader excepted) not caught up within replica.lag.time.max.ms; none while a change is in flight. */
  outOfSyncReplicas(nowMs: number): number[] {
    if (!this.isLeader || this.pendingIsr !== null) return [];
    const leaderEndOffset = this.log.logEndOffset;
    const maxLagMs = this.replication.replicaLagTimeMaxMs;
    return this.committedIsr.filter((id) => {
      if (id === this.localBrokerId) return false;
      const state = this.followers.get(id);
      return state === undefined || !isCaughtUp(state, leaderEndOffset, nowMs, maxLagMs);
    });
  }

  prepareIsrExpand(replicaId: number): PendingIsrChange {
    const isr = [...this.committedIsr, replicaId];
    return this.propose('expand', isr, isr);
  }

  prepareIsrShrink(outOfSync: readonly number[]): PendingIsrChange {
    const isr = this.committedIsr.filter((id) => !outOfSync.includes(id));
    return this.propose('shrink', isr, this.committedIsr);
  }

  private propose(kind: PendingIsrChange['kind'], isr: readonly number[], maximalIsr: readonly number[]): PendingIsrChange {
    const pending: PendingIsrChange = {
      kind,
      proposedIsr: isr.map((brokerId) => ({
        brokerId,
        brokerEpoch:
          brokerId === this.localBrokerId ? this.replication.localBrokerEpoch() : (this.followers.get(brokerId)?.brokerEpoch ?? -1n),
      })),
      maximalIsr,
      lastCommittedIsr: this.committedIsr,
      leaderEpoch: this.leaderEpoch,
      partitionEpoch: this.partitionEpoch,
    };
    this.pendingIsr = pending;
    return pending;
  }

  /**
   * The controller's answer to `pending` (Kafka's handleAlterPartitionUpdate and
   * handleAlterPartitionError). A change superseded meanwhile (metadata, a role change) is
   * ignored. OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA were not applied: back to the
   * committed ISR, a later check proposes again. A newer leader or partition epoch on the
   * controller keeps the change pending until the metadata brings the new state. Anything
   * else unexpected is retried.
   */
  completeIsrChange(
    pending: PendingIsrChange,
    result: AlterPartitionResult,
    nowMs: number,
  ): { highWatermarkIncremented: boolean; retry: boolean } {
    const none = { highWatermarkIncremented: false, retry: false };
    if (this.pendingIsr !== pending) return none;
    switch (result.errorCode) {
      case Errors.NONE.code:
        break;
      case Errors.OPERATION_NOT_ATTEMPTED.code:
      case Errors.INELIGIBLE_REPLICA.code:
        this.pendingIsr = null;
        return none;
      case Errors.UNKNOWN_TOPIC_OR_PARTITION.code:
      case Errors.UNKNOWN_TOPIC_ID.code:
      case Errors.FENCED_LEADER_EPOCH.code:
      case Errors.INVALID_UPDATE_VERSION.code:
      case Errors.INVALID_REQUEST.code:
      case Errors.NEW_LEADER_ELECTED.code:
        return none;
      default:
        return { highWatermarkIncremented: false, retry: true };
    }
    if (result.leaderEpoch !== this.leaderEpoch || result.partitionEpoch < this.partitionEpoch) return none;
    this.committedIsr = result.isr;
    this.pendingIsr = null;
    this.partitionEpoch = result.partitionEpoch;
    return { highWatermarkIncremented: this.maybeIncrementHighWatermark(nowMs), retry: false };
  }

  // ---- follower ----

  /** Appends batches fetched from the leader. */
  async appendRecordsToFollower(records: Buffer): Promise<FollowerAppendInfo> {
    const info = await this.log.appendAsFollower(records);
    if (info.validBytes > 0) {
      this.appendedBytes += info.validBytes;
      this.unreplicated.push({ nextOffset: info.lastOffset + 1, sizeInBytes: info.validBytes });
    }
    this.assertInvariants();
    return info;
  }

  /**
   * A follower's high watermark is the leader's, as far as its own log reaches (it may move
   * back: a new leader's high watermark can be behind the old one's). Returns true when it changed.
   */
  updateFollowerHighWatermark(leaderHighWatermark: number): boolean {
    const hw = Math.max(this.log.logStartOffset, Math.min(leaderHighWatermark, this.log.logEndOffset));
    if (hw === this.log.highWatermark) return false;
    this.setHighWatermark(hw);
    return true;
  }

  /** The leader's log start moved (retention or DeleteRecords there): follow it. */
  async maybeIncrementLogStartOffset(leaderLogStartOffset: number): Promise<void> {
    if (leaderLogStartOffset <= this.log.logStartOffset || leaderLogStartOffset > this.log.highWatermark) return;
    await this.log.deleteRecordsBefore(leaderLogStartOffset);
    this.assertInvariants();
  }

  async truncateTo(offset: number): Promise<void> {
    await this.log.truncateTo(offset);
    this.unreplicated = this.unreplicated.filter((u) => u.nextOffset <= this.log.logEndOffset);
    this.assertInvariants();
  }

  async truncateFullyAndStartAt(offset: number): Promise<void> {
    await this.log.truncateFullyAndStartAt(offset);
    this.unreplicated = [];
    this.assertInvariants();
  }

  // ---- invariants ----

  private setHighWatermark(offset: number): void {
    // The log would clamp a bad value; asserting first makes the bug visible instead.
    if (!(this.log.logStartOffset <= offset && offset <= this.log.logEndOffset)) {
      throw new Error(`partition ${this.key}: high watermark ${offset} outside [${this.log.logStartOffset}, ${this.log.logEndOffset}]`);
    }
    this.log.updateHighWatermark(offset);
    for (let head = this.unreplicated[0]; head !== undefined && head.nextOffset <= offset; head = this.unreplicated[0]) {
      this.unreplicated.shift();
      this.visibleBytes += head.sizeInBytes;
    }
    this.assertInvariants();
  }

  /** logStartOffset <= HW <= LEO must hold after every change. */
  assertInvariants(): void {
    const start = this.log.logStartOffset;
    const end = this.log.logEndOffset;
    const hw = this.log.highWatermark;
    if (!(start <= hw && hw <= end)) {
      throw new Error(`partition ${this.key}: logStartOffset ${start} <= hw ${hw} <= leo ${end} violated`);
    }
  }
}
