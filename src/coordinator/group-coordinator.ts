// The group coordinator: Kafka's classic rebalance protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) and committed offsets, with its state kept as records in the
// `__consumer_offsets` partitions this broker leads. It follows Kafka's GroupCoordinator
// (core/src/main/scala/kafka/coordinator/group) rule for rule; error codes are Kafka's.

import { Errors, KafkaError } from '../../protocol/errors.ts';
import { classicMemberId } from './member-id.ts';
import { Group, GroupState, Member, uniqueProtocols } from './group.ts';
import type { JoinResult, Protocol, SyncResult } from './group.ts';
import type { Clock, TimerHandle } from '../runtime/clock.ts';
import { systemRandom, type Random } from '../runtime/random.ts';
import type { CoordinatorRecord, GroupSnapshot } from './records.ts';
import { OffsetStore } from './offset-store.ts';
import type { ReplayedBatch, TransactionalProducer, TransactionVerificationOutcome } from './runtime.ts';
import type { TransactionVerification } from '../replication/log.ts';
import { coordinatorPartitionFor } from './partitioning.ts';
import { NO_TIMESTAMP, retentionPassed } from './timestamps.ts';
import { guarded, runGuarded, schedulePeriodic, type FailureSink } from '../runtime/guard.ts';

export interface GroupCoordinatorConfig {
  offsetsTopicPartitions: number;
  initialRebalanceDelayMs: number;
  minSessionTimeoutMs: number;
  maxSessionTimeoutMs: number;
  maxGroupSize: number;
  offsetMetadataMaxBytes: number;
  offsetsRetentionMs: number;
  offsetsRetentionCheckIntervalMs: number;
}

/**
 * Where the coordinator's records go: the leader of a `__consumer_offsets` partition. Resolves
 * with the offset of the first record once committed; `producer`: the records belong to its
 * open transaction.
 */
export interface CoordinatorLog {
  append(
    partition: number,
    records: CoordinatorRecord[],
    producer?: TransactionalProducer,
    verification?: TransactionVerification,
  ): Promise<number>;
  /** KIP-890 part 1: the producer's transaction holds the partition (CoordinatorRuntime.verifyTransaction); absent: not verified. */
  verifyTransaction?(partition: number, transactionalId: string, producer: TransactionalProducer): Promise<TransactionVerificationOutcome>;
  /** Whether this broker still leads the partition at the leader epoch it loaded (CoordinatorRuntime.holdsLeadership). */
  holdsLeadership(partition: number): boolean;
}

export interface JoinGroupParams {
  groupId: string;
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string;
  protocols: Protocol[];
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  clientId: string;
  clientHost: string;
  /** JoinGroup v4+: an unknown member must first obtain a member id (KIP-394). */
  requireKnownMemberId: boolean;
  /** JoinGroup v9+ (KIP-814): a static leader rejoining a stable group is told to skip assignment. */
  supportsSkipAssignment: boolean;
}

export interface SyncGroupParams {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
  protocolType: string | null;
  protocolName: string | null;
  assignments: { memberId: string; assignment: Buffer }[];
}

export interface MemberIdentity {
  memberId: string;
  groupInstanceId: string | null;
}

export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface OffsetCommitEntry extends TopicPartition {
  offset: bigint;
  leaderEpoch: number;
  metadata: string | null;
  /** Old commit versions' explicit expiry; -1 otherwise. */
  expireTimestampMs: number;
}

export interface OffsetFetchEntry extends TopicPartition {
  offset: bigint;
  leaderEpoch: number;
  metadata: string | null;
  errorCode: number;
}

export interface GroupOverview {
  groupId: string;
  protocolType: string;
  state: GroupState;
}

export interface GroupDescription {
  errorCode: number;
  groupId: string;
  state: string;
  protocolType: string;
  protocolName: string;
  members: {
    memberId: string;
    groupInstanceId: string | null;
    clientId: string;
    clientHost: string;
    metadata: Buffer;
    assignment: Buffer;
  }[];
}

const NO_ERROR = Errors.NONE.code;

/** Where failures go when the coordinator is built without a sink (unit tests). */
const stderrSink: FailureSink = (err, what) => {
  console.error(`group coordinator: ${what} failed:`, err);
};

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>();
  private readonly offsets = new OffsetStore();
  /**
   * Transactions whose marker reached a partition while it was loading, applied once it is
   * loaded: the load may have read the log before the marker was appended.
   */
  private readonly completedWhileLoading = new Map<number, { producerId: bigint; commit: boolean }[]>();
  private readonly loadedPartitions = new Set<number>();
  private readonly loadingPartitions = new Set<number>();
  private readonly heartbeatTimers = new Map<string, TimerHandle>();
  private readonly joinTimers = new Map<string, TimerHandle>();
  private readonly syncTimers = new Map<string, TimerHandle>();
  /** Groups whose first rebalance waits out group.initial.rebalance.delay.ms. */
  private readonly initialJoins = new Set<string>();
  private stopOffsetExpiration: (() => void) | null = null;

  /**
   * @param onError where a failure of a timer, a loader step or a request's state change is
   *   reported (with the group or partition it concerns); the failure then resets only that
   *   group (`failGroup`), never more.
   */
  constructor(
    private readonly config: GroupCoordinatorConfig,
    private readonly clock: Clock,
    private readonly log: CoordinatorLog,
    private readonly onError: FailureSink = stderrSink,
    private readonly random: Random = systemRandom,
  ) {}

  /**
   * Every timer of a group runs here: an exception in it is reported with the group id and
   * fails that group alone (`failGroup`), as Kafka's CoordinatorRuntime fails only the
   * event of a timer that throws.
   */
  private scheduleForGroup(group: Group, what: string, delayMs: number, task: () => void): TimerHandle {
    return this.clock.setTimeout(
      guarded(this.onError, `${what} of group ${group.groupId}`, task, (err) => this.failGroup(group, err)),
      Math.max(0, delayMs),
    );
  }

  /**
   * Runs a state change a request makes to a group; should it throw, the failure is reported,
   * the group is reset (`failGroup`) and `failed` is returned, so the request is answered
   * with an error and nothing is left half done.
   */
  private runForGroup<T>(group: Group, what: string, task: () => T, failed: T): T {
    try {
      return task();
    } catch (err) {
      runGuarded(
        this.onError,
        `${what} of group ${group.groupId}`,
        () => {
          throw err;
        },
        (e) => this.failGroup(group, e),
      );
      return failed;
    }
  }

  /**
   * A bug or an unexpected value broke the group's state machine: answer every member still
   * waiting on a join or a sync with UNKNOWN_SERVER_ERROR, drop the members and their timers,
   * and leave the group Empty in a new generation with its committed offsets intact. Members
   * learn from their next heartbeat or commit (UNKNOWN_MEMBER_ID) that they must rejoin. The
   * other groups of the partition are untouched.
   */
  failGroup(group: Group, _err?: unknown): void {
    if (this.groups.get(group.groupId) !== group) return;
    const code = Errors.UNKNOWN_SERVER_ERROR.code;
    this.cancelTimer(this.joinTimers, group.groupId);
    this.cancelTimer(this.syncTimers, group.groupId);
    for (const memberId of group.pendingMembers) this.cancelTimer(this.heartbeatTimers, this.memberKey(group, memberId));
    group.pendingMembers.clear();
    for (const member of group.allMembers()) {
      this.cancelTimer(this.heartbeatTimers, this.memberKey(group, member.memberId));
      const join = member.awaitingJoin;
      const sync = member.awaitingSync;
      member.awaitingJoin = null;
      member.awaitingSync = null;
      join?.(this.joinError(member.memberId, code));
      sync?.(this.syncError(code));
      group.remove(member.memberId);
    }
    group.pendingSyncMembers.clear();
    group.newMemberAdded = false;
    group.generationId++;
    group.protocolName = null;
    group.leaderId = null;
    // Not a transition of the state machine: whatever state it was in, it is Empty now.
    group.state = GroupState.Empty;
    group.stateTimestampMs = this.clock.now();
    runGuarded(this.onError, `storing the reset group ${group.groupId}`, () => this.storeGroup(group));
  }

  partitionFor(groupId: string): number {
    return coordinatorPartitionFor(groupId, this.config.offsetsTopicPartitions);
  }

  start(): void {
    this.stopOffsetExpiration = schedulePeriodic(
      this.clock,
      this.config.offsetsRetentionCheckIntervalMs,
      this.onError,
      'offset expiration',
      () => this.expireOffsets(),
    );
  }

  shutdown(): void {
    this.stopOffsetExpiration?.();
    for (const timers of [this.heartbeatTimers, this.joinTimers, this.syncTimers]) {
      for (const t of timers.values()) this.clock.clearTimeout(t);
      timers.clear();
    }
  }

  // ---- partition ownership --------------------------------------------------------------

  /** Error to answer for a group whose partition this coordinator does not serve yet. */
  private coordinatorError(groupId: string): number {
    const partition = this.partitionFor(groupId);
    if (this.loadingPartitions.has(partition)) return Errors.COORDINATOR_LOAD_IN_PROGRESS.code;
    if (!this.loadedPartitions.has(partition) || !this.log.holdsLeadership(partition)) return Errors.NOT_COORDINATOR.code;
    return NO_ERROR;
  }

  anyPartitionLoading(): boolean {
    return this.loadingPartitions.size > 0;
  }

  beginLoading(partition: number): void {
    this.loadingPartitions.add(partition);
    this.completedWhileLoading.delete(partition);
  }

  /**
   * Applies records read back from an offsets partition that is loading (its groups answer
   * COORDINATOR_LOAD_IN_PROGRESS until completeLoading). A loader calls it chunk by chunk,
   * in log order. A record that cannot be applied (its group snapshot is inconsistent, say)
   * is reported to `onSkipped` with its index in `records` and skipped; the rest loads.
   * Returns how many were skipped.
   */
  replayLoading(
    partition: number,
    records: Iterable<CoordinatorRecord>,
    onSkipped: (index: number, err: unknown) => void = (index, err) =>
      this.onError(err, `replaying record ${index} of offsets partition ${partition} (skipped)`),
    batch?: ReplayedBatch,
  ): number {
    let skipped = 0;
    let index = 0;
    for (const record of records) {
      try {
        this.replay(record, batch?.offsets[index] ?? -1, batch?.transactionalProducerId ?? null);
      } catch (err) {
        skipped++;
        onSkipped(index, err);
      }
      index++;
    }
    return skipped;
  }

  /**
   * Applies the last of the records read back (replayLoading), then serves the partition's
   * groups: their members' session timers start now. Returns how many records were skipped.
   */
  completeLoading(partition: number, records: Iterable<CoordinatorRecord>, onSkipped?: (index: number, err: unknown) => void): number {
    const skipped = this.replayLoading(partition, records, onSkipped);
    for (const { producerId, commit } of this.completedWhileLoading.get(partition) ?? []) {
      this.replayEndTransaction(partition, producerId, commit);
    }
    this.completedWhileLoading.delete(partition);
    const nowMs = this.clock.now();
    for (const group of this.groups.values()) {
      if (this.partitionFor(group.groupId) !== partition) continue;
      for (const member of group.members.values()) this.scheduleHeartbeatExpiration(group, member, nowMs);
    }
    this.loadingPartitions.delete(partition);
    this.loadedPartitions.add(partition);
    return skipped;
  }

  /**
   * A load of the partition failed part way: forget what it replayed so that the retry
   * starts clean, and keep answering COORDINATOR_LOAD_IN_PROGRESS for its groups.
   */
  abandonLoading(partition: number): void {
    this.forgetGroupsOf(partition);
    this.completedWhileLoading.delete(partition);
    this.loadedPartitions.delete(partition);
    this.loadingPartitions.add(partition);
  }

  /** Forgets the groups of a partition this broker no longer leads. */
  unload(partition: number): void {
    this.loadedPartitions.delete(partition);
    this.loadingPartitions.delete(partition);
    this.completedWhileLoading.delete(partition);
    this.forgetGroupsOf(partition);
  }

  private forgetGroupsOf(partition: number): void {
    for (const [groupId, group] of this.groups) {
      if (this.partitionFor(groupId) !== partition) continue;
      for (const member of group.members.values()) {
        this.cancelTimer(this.heartbeatTimers, this.memberKey(group, member.memberId));
        member.awaitingJoin?.(this.joinError(member.memberId, Errors.NOT_COORDINATOR.code));
        member.awaitingSync?.(this.syncError(Errors.NOT_COORDINATOR.code));
      }
      for (const memberId of group.pendingMembers) this.cancelTimer(this.heartbeatTimers, this.memberKey(group, memberId));
      this.cancelTimer(this.joinTimers, groupId);
      this.cancelTimer(this.syncTimers, groupId);
      this.groups.delete(groupId);
      this.offsets.forgetGroup(groupId);
    }
    // Offsets of groups that only exist as offsets (replay always creates a group, but a
    // failed replay may stop in between).
    for (const groupId of this.offsets.groupIds()) {
      if (this.partitionFor(groupId) === partition) this.offsets.forgetGroup(groupId);
    }
  }

  /**
   * A record of the log: `recordOffset` is where it is in `__consumer_offsets`, `producerId`
   * the transactional producer that wrote it (null outside a transaction).
   */
  private replay(record: CoordinatorRecord, recordOffset: number, producerId: bigint | null): void {
    if (record.type === 'offset') {
      this.offsets.replay(record.groupId, record.topic, record.partition, record.value, recordOffset, producerId);
      if (record.value !== null && !this.groups.has(record.groupId)) {
        this.groups.set(record.groupId, new Group(record.groupId, this.clock.now()));
      }
      return;
    }
    if (record.value === null) {
      this.groups.delete(record.groupId);
      return;
    }
    this.groups.set(record.groupId, this.groupFromSnapshot(record.groupId, record.value));
  }

  private groupFromSnapshot(groupId: string, snapshot: GroupSnapshot): Group {
    const group = new Group(groupId, snapshot.currentStateTimestampMs >= 0 ? snapshot.currentStateTimestampMs : this.clock.now());
    group.generationId = snapshot.generationId;
    group.protocolType = snapshot.protocolType.length > 0 ? snapshot.protocolType : null;
    group.protocolName = snapshot.protocolName;
    for (const m of snapshot.members) {
      const member = new Member(
        m.memberId,
        m.groupInstanceId,
        m.clientId,
        m.clientHost,
        m.rebalanceTimeoutMs,
        m.sessionTimeoutMs,
        snapshot.protocolType,
        [{ name: snapshot.protocolName ?? '', metadata: m.subscription }],
      );
      member.assignment = m.assignment;
      group.add(member);
    }
    group.leaderId = snapshot.leaderId;
    group.state = group.size > 0 ? GroupState.Stable : GroupState.Empty;
    return group;
  }

  // ---- JoinGroup -------------------------------------------------------------------------

  async joinGroup(request: JoinGroupParams): Promise<JoinResult> {
    const p: JoinGroupParams = { ...request, protocols: uniqueProtocols(request.protocols) };
    const error = this.validateGroupRequest(p.groupId);
    if (error !== NO_ERROR) return this.joinError(p.memberId, error);
    if (p.sessionTimeoutMs < this.config.minSessionTimeoutMs || p.sessionTimeoutMs > this.config.maxSessionTimeoutMs) {
      return this.joinError(p.memberId, Errors.INVALID_SESSION_TIMEOUT.code);
    }
    const isUnknownMember = p.memberId === '';
    let group = this.groups.get(p.groupId);
    if (!group) {
      if (!isUnknownMember) return this.joinError(p.memberId, Errors.UNKNOWN_MEMBER_ID.code);
      group = new Group(p.groupId, this.clock.now());
      this.groups.set(p.groupId, group);
    }
    if (
      group.size >= this.config.maxGroupSize &&
      !group.has(p.memberId) &&
      !group.pendingMembers.has(p.memberId) &&
      group.staticMemberId(p.groupInstanceId) === undefined
    ) {
      return this.joinError(p.memberId, Errors.GROUP_MAX_SIZE_REACHED.code);
    }
    return new Promise<JoinResult>((resolve) => {
      const done = this.runForGroup(
        group,
        `JoinGroup of member '${p.memberId}'`,
        () => {
          if (isUnknownMember) this.joinUnknownMember(group, p, resolve);
          else this.joinKnownMember(group, p, resolve);
          return true;
        },
        false,
      );
      // failGroup answered the member if it had got as far as the group; a promise settles
      // once, so this answers it otherwise.
      if (!done) resolve(this.joinError(p.memberId, Errors.UNKNOWN_SERVER_ERROR.code));
    });
  }

  private joinUnknownMember(group: Group, p: JoinGroupParams, respond: (r: JoinResult) => void): void {
    if (group.is(GroupState.Dead)) {
      respond(this.joinError(p.memberId, Errors.COORDINATOR_NOT_AVAILABLE.code));
      return;
    }
    if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      respond(this.joinError(p.memberId, Errors.INCONSISTENT_GROUP_PROTOCOL.code));
      return;
    }
    const newMemberId = classicMemberId(p.groupInstanceId ?? p.clientId, this.random.uuid());
    if (p.groupInstanceId !== null) {
      const existing = group.staticMemberId(p.groupInstanceId);
      if (existing !== undefined) {
        this.replaceStaticMember(group, p, p.groupInstanceId, existing, newMemberId, respond);
        return;
      }
      this.addMemberAndRebalance(group, p, newMemberId, respond);
      return;
    }
    if (p.requireKnownMemberId) {
      group.pendingMembers.add(newMemberId);
      this.scheduleHeartbeatExpirationForPending(group, newMemberId, p.sessionTimeoutMs);
      respond(this.joinError(newMemberId, Errors.MEMBER_ID_REQUIRED.code));
      return;
    }
    this.addMemberAndRebalance(group, p, newMemberId, respond);
  }

  private joinKnownMember(group: Group, p: JoinGroupParams, respond: (r: JoinResult) => void): void {
    if (group.is(GroupState.Dead)) {
      respond(this.joinError(p.memberId, Errors.COORDINATOR_NOT_AVAILABLE.code));
      return;
    }
    if (!group.supportsProtocols(p.protocolType, p.protocols)) {
      respond(this.joinError(p.memberId, Errors.INCONSISTENT_GROUP_PROTOCOL.code));
      return;
    }
    if (group.pendingMembers.has(p.memberId)) {
      this.addMemberAndRebalance(group, p, p.memberId, respond);
      return;
    }
    if (group.isStaticMemberFenced(p.groupInstanceId, p.memberId)) {
      respond(this.joinError(p.memberId, Errors.FENCED_INSTANCE_ID.code));
      return;
    }
    const member = group.members.get(p.memberId);
    if (!member) {
      respond(this.joinError(p.memberId, Errors.UNKNOWN_MEMBER_ID.code));
      return;
    }
    switch (group.state) {
      case GroupState.PreparingRebalance:
        this.updateMemberAndRebalance(group, member, p, respond);
        return;
      case GroupState.CompletingRebalance:
        if (member.matches(p.protocols)) {
          // The member missed its JoinGroup response: send it again.
          respond(this.joinResponse(group, member.memberId, false));
          return;
        }
        this.updateMemberAndRebalance(group, member, p, respond);
        return;
      case GroupState.Stable:
        if (group.isLeader(member.memberId) || !member.matches(p.protocols)) {
          this.updateMemberAndRebalance(group, member, p, respond);
        } else {
          respond(this.joinResponse(group, member.memberId, false, false));
        }
        return;
      default:
        respond(this.joinError(p.memberId, Errors.UNKNOWN_MEMBER_ID.code));
    }
  }

  private addMemberAndRebalance(group: Group, p: JoinGroupParams, memberId: string, respond: (r: JoinResult) => void): void {
    const member = new Member(
      memberId,
      p.groupInstanceId,
      p.clientId,
      p.clientHost,
      p.rebalanceTimeoutMs,
      p.sessionTimeoutMs,
      p.protocolType,
      p.protocols,
    );
    if (group.is(GroupState.PreparingRebalance) && group.generationId === 0) group.newMemberAdded = true;
    group.add(member);
    member.awaitingJoin = respond;
    this.maybePrepareRebalance(group, `add member ${memberId}`);
    this.scheduleHeartbeatExpiration(group, member, this.clock.now());
  }

  private updateMemberAndRebalance(group: Group, member: Member, p: JoinGroupParams, respond: (r: JoinResult) => void): void {
    member.protocols = p.protocols;
    member.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    member.sessionTimeoutMs = p.sessionTimeoutMs;
    if (member.awaitingJoin) member.awaitingJoin(this.joinError(member.memberId, Errors.REBALANCE_IN_PROGRESS.code));
    member.awaitingJoin = respond;
    this.maybePrepareRebalance(group, `update member ${member.memberId}`);
  }

  private replaceStaticMember(
    group: Group,
    p: JoinGroupParams,
    groupInstanceId: string,
    oldMemberId: string,
    newMemberId: string,
    respond: (r: JoinResult) => void,
  ): void {
    const old = group.memberOf(oldMemberId);
    old.awaitingJoin?.(this.joinError(oldMemberId, Errors.FENCED_INSTANCE_ID.code));
    old.awaitingJoin = null;
    old.awaitingSync?.(this.syncError(Errors.FENCED_INSTANCE_ID.code));
    old.awaitingSync = null;
    this.cancelTimer(this.heartbeatTimers, this.memberKey(group, oldMemberId));
    const previousLeader = group.leaderId;
    const member = group.replaceStaticMember(groupInstanceId, oldMemberId, newMemberId);
    this.scheduleHeartbeatExpiration(group, member, this.clock.now());
    const oldProtocols = member.protocols;
    member.protocols = p.protocols;
    member.rebalanceTimeoutMs = p.rebalanceTimeoutMs;
    member.sessionTimeoutMs = p.sessionTimeoutMs;
    switch (group.state) {
      case GroupState.Stable: {
        if (group.selectProtocol() !== group.protocolName) {
          member.awaitingJoin = respond;
          this.maybePrepareRebalance(group, `static member ${newMemberId} changed protocols`);
          return;
        }
        this.storeGroup(group).then((error) => {
          if (error !== NO_ERROR) {
            group.replaceStaticMember(groupInstanceId, newMemberId, oldMemberId);
            member.protocols = oldProtocols;
            respond(this.joinError('', error));
            return;
          }
          const isLeader = group.isLeader(newMemberId);
          const result = this.joinResponse(group, newMemberId, isLeader && p.supportsSkipAssignment, isLeader);
          // Returning the previous leader id to a non-leader keeps the group's assignment:
          // a stable group would not broadcast a new one anyway.
          if (!isLeader) result.leaderId = previousLeader ?? '';
          respond(result);
        });
        return;
      }
      case GroupState.CompletingRebalance:
        member.awaitingJoin = respond;
        this.maybePrepareRebalance(group, `static member ${newMemberId} rejoined during sync`);
        return;
      case GroupState.PreparingRebalance:
        member.awaitingJoin = respond;
        this.tryCompleteJoin(group);
        return;
      default:
        respond(this.joinError(p.memberId, Errors.UNKNOWN_MEMBER_ID.code));
    }
  }

  private maybePrepareRebalance(group: Group, reason: string): void {
    if (group.is(GroupState.Stable) || group.is(GroupState.CompletingRebalance) || group.is(GroupState.Empty)) {
      this.prepareRebalance(group, reason);
    } else if (group.is(GroupState.PreparingRebalance)) {
      this.tryCompleteJoin(group);
    }
  }

  private prepareRebalance(group: Group, _reason: string): void {
    if (group.is(GroupState.CompletingRebalance)) {
      for (const member of group.members.values()) {
        member.awaitingSync?.(this.syncError(Errors.REBALANCE_IN_PROGRESS.code));
        member.awaitingSync = null;
      }
      this.cancelTimer(this.syncTimers, group.groupId);
      group.pendingSyncMembers.clear();
    }
    const wasEmpty = group.is(GroupState.Empty);
    group.transitionTo(GroupState.PreparingRebalance, this.clock.now());
    this.cancelTimer(this.joinTimers, group.groupId);
    if (wasEmpty) {
      group.newMemberAdded = false;
      const delay = this.config.initialRebalanceDelayMs;
      this.scheduleInitialJoin(group, delay, Math.max(group.rebalanceTimeoutMs() - delay, 0));
    } else if (group.size === 0) {
      // The last member left: the rebalance timeout of no members is 0, so the group empties
      // now rather than waiting on members still pending (MEMBER_ID_REQUIRED).
      this.completeJoin(group);
    } else {
      this.joinTimers.set(
        group.groupId,
        this.scheduleForGroup(group, 'rebalance timeout', group.rebalanceTimeoutMs(), () => {
          this.joinTimers.delete(group.groupId);
          this.completeJoin(group);
        }),
      );
      this.tryCompleteJoin(group);
    }
  }

  /**
   * group.initial.rebalance.delay.ms: the first rebalance of an empty group waits so that
   * members starting together land in one generation; each new arrival extends the wait
   * (by at most the delay) until the rebalance timeout is used up.
   */
  private scheduleInitialJoin(group: Group, delayMs: number, remainingMs: number): void {
    this.initialJoins.add(group.groupId);
    this.joinTimers.set(
      group.groupId,
      this.scheduleForGroup(group, 'initial rebalance delay', delayMs, () => {
        this.joinTimers.delete(group.groupId);
        this.initialJoins.delete(group.groupId);
        if (!group.is(GroupState.PreparingRebalance)) return;
        if (group.newMemberAdded && remainingMs > 0) {
          group.newMemberAdded = false;
          const next = Math.min(this.config.initialRebalanceDelayMs, remainingMs);
          this.scheduleInitialJoin(group, next, Math.max(remainingMs - next, 0));
          return;
        }
        this.completeJoin(group);
      }),
    );
  }

  private tryCompleteJoin(group: Group): void {
    if (!group.is(GroupState.PreparingRebalance) || !group.hasAllMembersJoined()) return;
    // While the initial delay runs, arrivals extend it rather than completing the join.
    if (this.initialJoins.has(group.groupId)) return;
    this.cancelTimer(this.joinTimers, group.groupId);
    this.completeJoin(group);
  }

  private completeJoin(group: Group): void {
    if (!group.is(GroupState.PreparingRebalance)) return;
    const nowMs = this.clock.now();
    for (const member of group.allMembers()) {
      if (!member.awaitingJoin && member.groupInstanceId === null) this.removeMember(group, member);
    }
    // Pending members (MEMBER_ID_REQUIRED) outlive the generation, as in Kafka: one whose
    // rejoin arrives after this join completes becomes a member of the next generation;
    // only its own session timeout forgets it.
    group.initNextGeneration(nowMs);
    if (group.is(GroupState.Empty)) {
      void this.storeGroup(group);
      return;
    }
    for (const member of group.members.values()) {
      const respond = member.awaitingJoin;
      member.awaitingJoin = null;
      respond?.(this.joinResponse(group, member.memberId, false));
      this.scheduleHeartbeatExpiration(group, member, nowMs);
    }
    this.scheduleSyncExpiration(group);
  }

  /** Members that do not send SyncGroup within the rebalance timeout are removed. */
  private scheduleSyncExpiration(group: Group): void {
    const generation = group.generationId;
    this.cancelTimer(this.syncTimers, group.groupId);
    this.syncTimers.set(
      group.groupId,
      this.scheduleForGroup(group, 'sync timeout', group.rebalanceTimeoutMs(), () => {
        this.syncTimers.delete(group.groupId);
        if (group.generationId !== generation || group.pendingSyncMembers.size === 0) return;
        if (!group.is(GroupState.CompletingRebalance) && !group.is(GroupState.Stable)) return;
        for (const memberId of [...group.pendingSyncMembers]) {
          const member = group.members.get(memberId);
          if (member) this.removeMember(group, member);
        }
        group.pendingSyncMembers.clear();
        this.afterMemberRemoved(group, 'members failed to sync');
      }),
    );
  }

  private joinResponse(group: Group, memberId: string, skipAssignment: boolean, includeMembers = group.isLeader(memberId)): JoinResult {
    const protocolName = group.protocolName;
    return {
      errorCode: NO_ERROR,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName,
      leaderId: group.leaderId ?? '',
      memberId,
      skipAssignment,
      members:
        includeMembers && protocolName !== null
          ? group
              .allMembers()
              .map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: m.metadataFor(protocolName) }))
          : [],
    };
  }

  private joinError(memberId: string, errorCode: number): JoinResult {
    return {
      errorCode,
      generationId: -1,
      protocolType: null,
      protocolName: null,
      leaderId: '',
      memberId,
      skipAssignment: false,
      members: [],
    };
  }

  // ---- SyncGroup -------------------------------------------------------------------------

  async syncGroup(p: SyncGroupParams): Promise<SyncResult> {
    try {
      return await this.syncGroupUnguarded(p);
    } catch (err) {
      const group = this.groups.get(p.groupId);
      this.onError(err, `SyncGroup of member '${p.memberId}' of group ${p.groupId}`);
      if (group) runGuarded(this.onError, `resetting group ${p.groupId}`, () => this.failGroup(group, err));
      return this.syncError(Errors.UNKNOWN_SERVER_ERROR.code);
    }
  }

  private async syncGroupUnguarded(p: SyncGroupParams): Promise<SyncResult> {
    const error = this.validateGroupRequest(p.groupId);
    if (error !== NO_ERROR) return this.syncError(error);
    const group = this.groups.get(p.groupId);
    if (!group) return this.syncError(Errors.UNKNOWN_MEMBER_ID.code);
    if (group.is(GroupState.Dead)) return this.syncError(Errors.COORDINATOR_NOT_AVAILABLE.code);
    if (group.isStaticMemberFenced(p.groupInstanceId, p.memberId)) return this.syncError(Errors.FENCED_INSTANCE_ID.code);
    const member = group.members.get(p.memberId);
    if (!member) return this.syncError(Errors.UNKNOWN_MEMBER_ID.code);
    if (p.generationId !== group.generationId) return this.syncError(Errors.ILLEGAL_GENERATION.code);
    if (
      (p.protocolType !== null && p.protocolType !== group.protocolType) ||
      (p.protocolName !== null && p.protocolName !== group.protocolName)
    ) {
      return this.syncError(Errors.INCONSISTENT_GROUP_PROTOCOL.code);
    }
    switch (group.state) {
      case GroupState.Empty:
        return this.syncError(Errors.UNKNOWN_MEMBER_ID.code);
      case GroupState.PreparingRebalance:
        return this.syncError(Errors.REBALANCE_IN_PROGRESS.code);
      case GroupState.Stable:
        group.pendingSyncMembers.delete(member.memberId);
        this.scheduleHeartbeatExpiration(group, member, this.clock.now());
        return this.syncResponse(group, member.assignment);
      case GroupState.CompletingRebalance:
        break;
      default:
        return this.syncError(Errors.UNKNOWN_MEMBER_ID.code);
    }
    group.pendingSyncMembers.delete(member.memberId);
    this.scheduleHeartbeatExpiration(group, member, this.clock.now());
    const result = new Promise<SyncResult>((resolve) => {
      member.awaitingSync?.(this.syncError(Errors.REBALANCE_IN_PROGRESS.code));
      member.awaitingSync = resolve;
    });
    if (group.isLeader(member.memberId)) {
      const assignments = new Map(p.assignments.map((a) => [a.memberId, a.assignment]));
      const generation = group.generationId;
      // Members the leader left out get an empty assignment (apache/kafka#14017).
      const snapshotAssignments = new Map<string, Buffer>();
      for (const id of group.members.keys()) snapshotAssignments.set(id, assignments.get(id) ?? Buffer.alloc(0));
      const storeError = await this.storeGroup(group, snapshotAssignments);
      if (group.is(GroupState.CompletingRebalance) && group.generationId === generation) {
        if (storeError !== NO_ERROR) {
          for (const m of group.members.values()) {
            m.assignment = Buffer.alloc(0);
            m.awaitingSync?.(this.syncError(storeError));
            m.awaitingSync = null;
          }
          this.prepareRebalance(group, 'failed to store the group');
        } else {
          for (const m of group.members.values()) {
            m.assignment = snapshotAssignments.get(m.memberId) ?? Buffer.alloc(0);
            m.awaitingSync?.(this.syncResponse(group, m.assignment));
            m.awaitingSync = null;
          }
          group.transitionTo(GroupState.Stable, this.clock.now());
        }
      }
    }
    return result;
  }

  private syncResponse(group: Group, assignment: Buffer): SyncResult {
    return { errorCode: NO_ERROR, protocolType: group.protocolType, protocolName: group.protocolName, assignment };
  }

  private syncError(errorCode: number): SyncResult {
    return { errorCode, protocolType: null, protocolName: null, assignment: Buffer.alloc(0) };
  }

  // ---- Heartbeat and LeaveGroup ----------------------------------------------------------

  heartbeat(groupId: string, memberId: string, groupInstanceId: string | null, generationId: number): number {
    const error = this.validateGroupRequest(groupId);
    if (error !== NO_ERROR) return error;
    const group = this.groups.get(groupId);
    if (!group) return Errors.UNKNOWN_MEMBER_ID.code;
    if (group.is(GroupState.Dead)) return Errors.COORDINATOR_NOT_AVAILABLE.code;
    if (group.isStaticMemberFenced(groupInstanceId, memberId)) return Errors.FENCED_INSTANCE_ID.code;
    const member = group.members.get(memberId);
    if (!member) return Errors.UNKNOWN_MEMBER_ID.code;
    if (generationId !== group.generationId) return Errors.ILLEGAL_GENERATION.code;
    switch (group.state) {
      case GroupState.Empty:
        return Errors.UNKNOWN_MEMBER_ID.code;
      case GroupState.CompletingRebalance:
      case GroupState.Stable:
        this.scheduleHeartbeatExpiration(group, member, this.clock.now());
        return NO_ERROR;
      case GroupState.PreparingRebalance:
        this.scheduleHeartbeatExpiration(group, member, this.clock.now());
        return Errors.REBALANCE_IN_PROGRESS.code;
      default:
        return Errors.UNKNOWN_MEMBER_ID.code;
    }
  }

  /** Returns the group-level error and one error per leaving member. */
  leaveGroup(groupId: string, leaving: MemberIdentity[]): { errorCode: number; members: (MemberIdentity & { errorCode: number })[] } {
    const error = this.validateGroupRequest(groupId);
    if (error !== NO_ERROR) return { errorCode: error, members: [] };
    const group = this.groups.get(groupId);
    if (!group) return { errorCode: NO_ERROR, members: leaving.map((m) => ({ ...m, errorCode: Errors.UNKNOWN_MEMBER_ID.code })) };
    if (group.is(GroupState.Dead)) return { errorCode: Errors.COORDINATOR_NOT_AVAILABLE.code, members: [] };
    const results = leaving.map((m) => ({
      ...m,
      errorCode: this.runForGroup(
        group,
        `LeaveGroup of member '${m.memberId}'`,
        () => this.removeLeavingMember(group, m),
        Errors.UNKNOWN_SERVER_ERROR.code,
      ),
    }));
    return { errorCode: NO_ERROR, members: results };
  }

  private removeLeavingMember(group: Group, leaving: MemberIdentity): number {
    let memberId = leaving.memberId;
    if (leaving.groupInstanceId !== null) {
      const current = group.staticMemberId(leaving.groupInstanceId);
      if (current === undefined) return Errors.UNKNOWN_MEMBER_ID.code;
      if (memberId !== '' && current !== memberId) return Errors.FENCED_INSTANCE_ID.code;
      memberId = current;
    }
    if (group.pendingMembers.delete(memberId)) {
      this.cancelTimer(this.heartbeatTimers, this.memberKey(group, memberId));
      this.tryCompleteJoin(group);
      return NO_ERROR;
    }
    const member = group.members.get(memberId);
    if (!member) return Errors.UNKNOWN_MEMBER_ID.code;
    this.removeMember(group, member);
    this.afterMemberRemoved(group, `member ${memberId} left`);
    return NO_ERROR;
  }

  private removeMember(group: Group, member: Member): void {
    this.cancelTimer(this.heartbeatTimers, this.memberKey(group, member.memberId));
    member.awaitingJoin?.(this.joinError(member.memberId, Errors.UNKNOWN_MEMBER_ID.code));
    member.awaitingJoin = null;
    member.awaitingSync?.(this.syncError(Errors.UNKNOWN_MEMBER_ID.code));
    member.awaitingSync = null;
    group.remove(member.memberId);
  }

  private afterMemberRemoved(group: Group, reason: string): void {
    if (group.is(GroupState.Stable) || group.is(GroupState.CompletingRebalance)) {
      this.prepareRebalance(group, reason);
    } else if (group.is(GroupState.PreparingRebalance)) {
      this.tryCompleteJoin(group);
    }
  }

  private memberKey(group: Group, memberId: string): string {
    return `${group.groupId}\u0000${memberId}`;
  }

  private scheduleHeartbeatExpiration(group: Group, member: Member, nowMs: number): void {
    const key = this.memberKey(group, member.memberId);
    this.cancelTimer(this.heartbeatTimers, key);
    member.heartbeatDeadlineMs = nowMs + member.sessionTimeoutMs;
    this.heartbeatTimers.set(
      key,
      this.scheduleForGroup(group, `session timeout of member ${member.memberId}`, member.sessionTimeoutMs, () => {
        this.heartbeatTimers.delete(key);
        if (group.members.get(member.memberId) !== member) return;
        // A member waiting in a join or sync is alive: the rebalance timeout governs it.
        if (member.awaitingJoin || member.awaitingSync) {
          this.scheduleHeartbeatExpiration(group, member, this.clock.now());
          return;
        }
        this.removeMember(group, member);
        this.afterMemberRemoved(group, `member ${member.memberId} session expired`);
      }),
    );
  }

  private scheduleHeartbeatExpirationForPending(group: Group, memberId: string, sessionTimeoutMs: number): void {
    const key = this.memberKey(group, memberId);
    this.cancelTimer(this.heartbeatTimers, key);
    this.heartbeatTimers.set(
      key,
      this.scheduleForGroup(group, `session timeout of pending member ${memberId}`, sessionTimeoutMs, () => {
        this.heartbeatTimers.delete(key);
        if (group.pendingMembers.delete(memberId)) this.tryCompleteJoin(group);
      }),
    );
  }

  private cancelTimer(timers: Map<string, TimerHandle>, key: string): void {
    const timer = timers.get(key);
    if (timer !== undefined) this.clock.clearTimeout(timer);
    timers.delete(key);
    if (timers === this.joinTimers) this.initialJoins.delete(key);
  }

  // ---- offsets ---------------------------------------------------------------------------

  async commitOffsets(
    groupId: string,
    memberId: string,
    groupInstanceId: string | null,
    generationId: number,
    entries: OffsetCommitEntry[],
  ): Promise<number[]> {
    const all = (code: number) => entries.map(() => code);
    const error = this.validateGroupRequest(groupId);
    if (error !== NO_ERROR) return all(error);
    let group = this.groups.get(groupId);
    if (!group) {
      if (generationId >= 0) return all(Errors.ILLEGAL_GENERATION.code);
      // A group that only stores offsets (no group management), e.g. a simple consumer.
      group = new Group(groupId, this.clock.now());
      this.groups.set(groupId, group);
    }
    if (group.is(GroupState.Dead)) return all(Errors.COORDINATOR_NOT_AVAILABLE.code);
    if (group.isStaticMemberFenced(groupInstanceId, memberId)) return all(Errors.FENCED_INSTANCE_ID.code);
    if (!(generationId < 0 && group.is(GroupState.Empty))) {
      if (group.is(GroupState.CompletingRebalance)) return all(Errors.REBALANCE_IN_PROGRESS.code);
      const member = group.members.get(memberId);
      if (!member) return all(Errors.UNKNOWN_MEMBER_ID.code);
      if (generationId !== group.generationId) return all(Errors.ILLEGAL_GENERATION.code);
      this.scheduleHeartbeatExpiration(group, member, this.clock.now());
    }
    return this.storeOffsets(group, entries, null);
  }

  /**
   * TxnOffsetCommit (KIP-447): offsets a transactional producer commits for a group, held
   * pending until its transaction's marker reaches the group's `__consumer_offsets` partition.
   * A member (v3+: member id, generation, group instance id) must still be in the group's
   * current generation, so a zombie that lost its partitions in a rebalance cannot commit;
   * a producer without group metadata (generation -1) commits as a simple consumer would.
   * Kafka's ClassicGroup.validateOffsetCommit for a transactional commit.
   */
  async txnCommitOffsets(
    groupId: string,
    transaction: TransactionalProducer & { transactionalId: string; requestVersion: number },
    member: { memberId: string; groupInstanceId: string | null; generationId: number },
    entries: OffsetCommitEntry[],
  ): Promise<number[]> {
    const producer = { producerId: transaction.producerId, producerEpoch: transaction.producerEpoch };
    const all = (code: number) => entries.map(() => code);
    const error = this.validateGroupRequest(groupId);
    if (error !== NO_ERROR) return all(error);
    let group = this.groups.get(groupId);
    if (!group) {
      if (member.generationId >= 0) return all(Errors.ILLEGAL_GENERATION.code);
      group = new Group(groupId, this.clock.now());
      this.groups.set(groupId, group);
    }
    if (group.is(GroupState.Dead)) return all(Errors.COORDINATOR_NOT_AVAILABLE.code);
    if (!(member.generationId < 0 && group.is(GroupState.Empty))) {
      if (member.generationId >= 0 || member.memberId !== '' || member.groupInstanceId !== null) {
        if (group.isStaticMemberFenced(member.groupInstanceId, member.memberId)) return all(Errors.FENCED_INSTANCE_ID.code);
        if (!group.members.has(member.memberId)) return all(Errors.UNKNOWN_MEMBER_ID.code);
        if (member.generationId !== group.generationId) return all(Errors.ILLEGAL_GENERATION.code);
      }
    }
    // KIP-890 part 1: the offsets partition must be in the transaction (AddOffsetsToTxn), or
    // the offsets would wait for a marker that never comes and hold the group's stable reads.
    const verified = await (this.log.verifyTransaction?.(this.partitionFor(groupId), transaction.transactionalId, producer) ?? {
      verification: undefined,
    });
    if (!('verification' in verified)) return all(txnOffsetCommitVerificationError(verified, transaction.requestVersion));
    if (this.groups.get(groupId) !== group) return all(Errors.COORDINATOR_NOT_AVAILABLE.code);
    return this.storeOffsets(group, entries, producer, verified.verification);
  }

  private async storeOffsets(
    group: Group,
    entries: OffsetCommitEntry[],
    producer: TransactionalProducer | null,
    verification?: TransactionVerification,
  ): Promise<number[]> {
    const nowMs = this.clock.now();
    const codes: number[] = [];
    const records: CoordinatorRecord[] = [];
    for (const e of entries) {
      if (e.metadata !== null && Buffer.byteLength(e.metadata) > this.config.offsetMetadataMaxBytes) {
        codes.push(Errors.OFFSET_METADATA_TOO_LARGE.code);
        continue;
      }
      codes.push(NO_ERROR);
      records.push({
        type: 'offset',
        groupId: group.groupId,
        topic: e.topic,
        partition: e.partition,
        value: {
          offset: e.offset,
          leaderEpoch: e.leaderEpoch,
          metadata: e.metadata ?? '',
          commitTimestampMs: nowMs,
          expireTimestampMs: e.expireTimestampMs,
        },
      });
    }
    if (records.length === 0) return codes;
    const appended = await this.append(group.groupId, records, producer ?? undefined, verification);
    const errorCode =
      appended.errorCode === NO_ERROR && !this.replayAppended(group, records, appended.baseOffset, producer?.producerId ?? null)
        ? Errors.NOT_COORDINATOR.code
        : appended.errorCode;
    if (errorCode !== NO_ERROR) return codes.map((c) => (c === NO_ERROR ? errorCode : c));
    return codes;
  }

  /**
   * Applies records whose append completed; false when this coordinator no longer serves the
   * group as it did when it appended. If the partition was unloaded while the append waited
   * (and maybe loaded again), the records are in the log for whoever loads it: replayed into a
   * newer load they could overwrite a later commit it read, and a load that read the log before
   * they reached it does not have them. So the commit is answered NOT_COORDINATOR, as Kafka's
   * runtime fails the writes an unload leaves waiting, and the client commits again to the
   * coordinator it finds: acknowledged, a commit is always in the state that answers OffsetFetch.
   */
  private replayAppended(
    group: Group,
    records: readonly CoordinatorRecord[],
    baseOffset: number,
    producerId: bigint | null = null,
  ): boolean {
    const partition = this.partitionFor(group.groupId);
    if (this.groups.get(group.groupId) !== group || !this.loadedPartitions.has(partition) || !this.log.holdsLeadership(partition)) {
      return false;
    }
    records.forEach((r, i) => {
      this.replay(r, baseOffset < 0 ? -1 : baseOffset + i, producerId);
    });
    return true;
  }

  /**
   * A transaction's COMMIT or ABORT marker is committed in `__consumer_offsets` partition
   * `partition`: the offsets the producer committed in that partition's groups become
   * committed, or are dropped (Kafka's onTransactionCompleted).
   */
  completeTransaction(partition: number, producerId: bigint, commit: boolean): void {
    if (this.loadingPartitions.has(partition)) {
      const completed = this.completedWhileLoading.get(partition) ?? [];
      completed.push({ producerId, commit });
      this.completedWhileLoading.set(partition, completed);
      return;
    }
    if (this.loadedPartitions.has(partition)) this.replayEndTransaction(partition, producerId, commit);
  }

  /** Also what a load does for a marker it reads back. */
  replayEndTransaction(partition: number, producerId: bigint, commit: boolean): void {
    this.offsets.replayEndTransaction(producerId, commit, (groupId) => this.partitionFor(groupId) === partition);
  }

  /**
   * Committed offsets of a group: the given partitions, or all of them when null. With
   * `requireStable` (OffsetFetch v7+, read_committed consumers), a partition an open
   * transaction committed an offset of answers UNSTABLE_OFFSET_COMMIT, and the consumer asks
   * again once the transaction ends.
   */
  fetchOffsets(
    groupId: string,
    partitions: TopicPartition[] | null,
    requireStable = false,
  ): { errorCode: number; offsets: OffsetFetchEntry[] } {
    const error = this.validateGroupRequest(groupId);
    if (error !== NO_ERROR) return { errorCode: error, offsets: [] };
    const unstable = (topic: string, partition: number) => requireStable && this.offsets.hasPendingOffsets(groupId, topic, partition);
    const entry = (topic: string, partition: number): OffsetFetchEntry => {
      if (unstable(topic, partition)) {
        return { topic, partition, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: Errors.UNSTABLE_OFFSET_COMMIT.code };
      }
      const stored = this.offsets.get(groupId, topic, partition);
      return stored
        ? {
            topic,
            partition,
            offset: stored.value.offset,
            leaderEpoch: stored.value.leaderEpoch,
            metadata: stored.value.metadata,
            errorCode: NO_ERROR,
          }
        : { topic, partition, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: NO_ERROR };
    };
    if (partitions === null) {
      return { errorCode: NO_ERROR, offsets: this.offsets.committedOffsets(groupId).map((o) => entry(o.topic, o.partition)) };
    }
    return { errorCode: NO_ERROR, offsets: partitions.map(({ topic, partition }) => entry(topic, partition)) };
  }

  async deleteOffsets(
    groupId: string,
    partitions: TopicPartition[],
    subscribedTopics: (group: Group) => Set<string> | null,
  ): Promise<{ errorCode: number; partitions: (TopicPartition & { errorCode: number })[] }> {
    const error = this.validateGroupRequest(groupId);
    if (error !== NO_ERROR) return { errorCode: error, partitions: [] };
    const group = this.groups.get(groupId);
    if (!group || group.is(GroupState.Dead)) return { errorCode: Errors.GROUP_ID_NOT_FOUND.code, partitions: [] };
    const subscribed = group.is(GroupState.Empty) ? null : subscribedTopics(group);
    if (subscribed === null && !group.is(GroupState.Empty)) {
      return { errorCode: Errors.NON_EMPTY_GROUP.code, partitions: [] };
    }
    const results = partitions.map((tp) => ({
      ...tp,
      errorCode: subscribed?.has(tp.topic) ? Errors.GROUP_SUBSCRIBED_TO_TOPIC.code : NO_ERROR,
    }));
    const records: CoordinatorRecord[] = results
      .filter((r) => r.errorCode === NO_ERROR && this.offsets.get(groupId, r.topic, r.partition) !== undefined)
      .map((r) => ({ type: 'offset', groupId, topic: r.topic, partition: r.partition, value: null }));
    if (records.length > 0) {
      const appended = await this.append(groupId, records);
      if (appended.errorCode !== NO_ERROR) return { errorCode: appended.errorCode, partitions: [] };
      this.replayAppended(group, records, appended.baseOffset);
    }
    return { errorCode: NO_ERROR, partitions: results };
  }

  // ---- listing, describing, deleting -----------------------------------------------------

  listGroups(statesFilter: string[] | null): GroupOverview[] {
    const wanted = statesFilter && statesFilter.length > 0 ? new Set(statesFilter.map((s) => s.toLowerCase())) : null;
    const result: GroupOverview[] = [];
    for (const group of this.groups.values()) {
      if (!this.loadedPartitions.has(this.partitionFor(group.groupId))) continue;
      if (wanted && !wanted.has(group.state.toLowerCase())) continue;
      result.push({ groupId: group.groupId, protocolType: group.protocolType ?? '', state: group.state });
    }
    return result;
  }

  describeGroup(groupId: string): GroupDescription {
    const error = this.validateGroupRequest(groupId);
    const dead = { errorCode: error, groupId, state: GroupState.Dead as string, protocolType: '', protocolName: '', members: [] };
    if (error !== NO_ERROR) return dead;
    const group = this.groups.get(groupId);
    if (!group) return dead;
    const stable = group.is(GroupState.Stable);
    return {
      errorCode: NO_ERROR,
      groupId,
      state: group.state,
      protocolType: group.protocolType ?? '',
      protocolName: stable ? (group.protocolName ?? '') : '',
      members: group.allMembers().map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        metadata: stable && group.protocolName !== null ? m.metadataFor(group.protocolName) : Buffer.alloc(0),
        assignment: stable ? m.assignment : Buffer.alloc(0),
      })),
    };
  }

  /** The group's generation and state, for tools that report on groups. */
  group(groupId: string): Group | undefined {
    return this.groups.get(groupId);
  }

  async deleteGroups(groupIds: string[]): Promise<{ groupId: string; errorCode: number }[]> {
    const results: { groupId: string; errorCode: number }[] = [];
    for (const groupId of groupIds) {
      const error = this.validateGroupRequest(groupId);
      if (error !== NO_ERROR) {
        results.push({ groupId, errorCode: error });
        continue;
      }
      const group = this.groups.get(groupId);
      if (!group || group.is(GroupState.Dead)) {
        results.push({ groupId, errorCode: Errors.GROUP_ID_NOT_FOUND.code });
        continue;
      }
      if (!group.is(GroupState.Empty)) {
        results.push({ groupId, errorCode: Errors.NON_EMPTY_GROUP.code });
        continue;
      }
      results.push({ groupId, errorCode: await this.removeGroup(group) });
    }
    return results;
  }

  /** Writes tombstones for the group and its offsets (pending ones too, as Kafka does), then forgets it. */
  private async removeGroup(group: Group): Promise<number> {
    const records: CoordinatorRecord[] = [];
    const partitions = new Map<string, { topic: string; partition: number }>();
    for (const tp of [...this.offsets.committedOffsets(group.groupId), ...this.offsets.pendingPartitions(group.groupId)]) {
      partitions.set(`${tp.topic}\u0000${tp.partition}`, tp);
    }
    for (const { topic, partition } of partitions.values()) {
      records.push({ type: 'offset', groupId: group.groupId, topic, partition, value: null });
    }
    records.push({ type: 'group', groupId: group.groupId, value: null });
    const { errorCode } = await this.append(group.groupId, records);
    if (errorCode !== NO_ERROR) return errorCode;
    group.transitionTo(GroupState.Dead, this.clock.now());
    this.groups.delete(group.groupId);
    this.offsets.forgetGroup(group.groupId);
    return NO_ERROR;
  }

  // ---- offset expiration (offsets.retention.minutes, KIP-211) ----------------------------

  /**
   * A consumer group's offsets expire once it has been empty for the retention period; a
   * group that only stores offsets expires each offset by its commit time.
   */
  async expireOffsets(): Promise<void> {
    const nowMs = this.clock.now();
    for (const group of [...this.groups.values()]) {
      if (!group.is(GroupState.Empty) || !this.loadedPartitions.has(this.partitionFor(group.groupId))) continue;
      // One group's failure is reported with its id and does not stop the others.
      try {
        await this.expireGroupOffsets(group, nowMs);
      } catch (err) {
        this.onError(err, `offset expiration of group ${group.groupId}`);
      }
    }
  }

  private async expireGroupOffsets(group: Group, nowMs: number): Promise<void> {
    const records: CoordinatorRecord[] = [];
    for (const { topic, partition, value } of this.offsets.committedOffsets(group.groupId)) {
      // Kafka keeps an offset an open transaction may still replace.
      if (this.offsets.hasPendingOffsets(group.groupId, topic, partition)) continue;
      // Kafka's OffsetExpirationConditionImpl: an explicit expiry (OffsetCommit v1-v4) is
      // due at that instant; otherwise the retention counts from the base timestamp.
      const base = group.protocolType !== null ? group.stateTimestampMs : value.commitTimestampMs;
      const expired =
        value.expireTimestampMs !== NO_TIMESTAMP
          ? nowMs >= value.expireTimestampMs
          : retentionPassed(nowMs, base, this.config.offsetsRetentionMs);
      if (!expired) continue;
      records.push({ type: 'offset', groupId: group.groupId, topic, partition, value: null });
    }
    if (records.length > 0) {
      const appended = await this.append(group.groupId, records);
      if (appended.errorCode === NO_ERROR) this.replayAppended(group, records, appended.baseOffset);
    }
    if (
      !this.offsets.hasCommittedOffsets(group.groupId) &&
      !this.offsets.hasPendingOffsets(group.groupId) &&
      group.is(GroupState.Empty) &&
      group.generationId >= 0
    ) {
      await this.removeGroup(group);
    }
  }

  // ---- persistence -----------------------------------------------------------------------

  private validateGroupRequest(groupId: string): number {
    if (groupId === '') return Errors.INVALID_GROUP_ID.code;
    return this.coordinatorError(groupId);
  }

  private snapshot(group: Group, assignments?: Map<string, Buffer>): GroupSnapshot {
    const protocolName = group.protocolName;
    return {
      protocolType: group.protocolType ?? '',
      generationId: group.generationId,
      protocolName,
      leaderId: group.leaderId,
      currentStateTimestampMs: group.stateTimestampMs,
      members: group.allMembers().map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeoutMs: m.rebalanceTimeoutMs,
        sessionTimeoutMs: m.sessionTimeoutMs,
        subscription: protocolName !== null ? m.metadataFor(protocolName) : Buffer.alloc(0),
        assignment: assignments?.get(m.memberId) ?? m.assignment,
      })),
    };
  }

  private async storeGroup(group: Group, assignments?: Map<string, Buffer>): Promise<number> {
    const { errorCode } = await this.append(group.groupId, [
      { type: 'group', groupId: group.groupId, value: this.snapshot(group, assignments) },
    ]);
    return errorCode;
  }

  private async append(
    groupId: string,
    records: CoordinatorRecord[],
    producer?: TransactionalProducer,
    verification?: TransactionVerification,
  ): Promise<{ errorCode: number; baseOffset: number }> {
    try {
      return { errorCode: NO_ERROR, baseOffset: await this.log.append(this.partitionFor(groupId), records, producer, verification) };
    } catch (err) {
      const code = err instanceof KafkaError ? err.code : undefined;
      return { errorCode: appendErrorCode(code), baseOffset: -1 };
    }
  }
}

/**
 * Kafka maps storage failures of the offsets topic to errors clients retry elsewhere; a
 * transactional commit of a fenced producer epoch is answered as such.
 */
function appendErrorCode(code: number | undefined): number {
  switch (code) {
    case Errors.NOT_LEADER_OR_FOLLOWER.code:
    case Errors.UNKNOWN_TOPIC_OR_PARTITION.code:
      return Errors.NOT_COORDINATOR.code;
    case Errors.MESSAGE_TOO_LARGE.code:
    case Errors.RECORD_LIST_TOO_LARGE.code:
      return Errors.INVALID_COMMIT_OFFSET_SIZE.code;
    case Errors.INVALID_PRODUCER_EPOCH.code:
    case Errors.INVALID_TXN_STATE.code:
      return code;
    default:
      return Errors.COORDINATOR_NOT_AVAILABLE.code;
  }
}

/**
 * A TxnOffsetCommit whose transaction could not be verified, answered as Kafka's group
 * coordinator does: the transaction coordinator's errors as producers know them (v4+ knows
 * TRANSACTION_ABORTABLE), transient ones as COORDINATOR_NOT_AVAILABLE so that the producer
 * retries, the offsets partition's own as for an append.
 */
function txnOffsetCommitVerificationError(failure: { errorCode: number; fromCoordinator: boolean }, requestVersion: number): number {
  const code = failure.errorCode;
  if (!failure.fromCoordinator) return appendErrorCode(code);
  switch (code) {
    case Errors.PRODUCER_FENCED.code:
      return Errors.INVALID_PRODUCER_EPOCH.code;
    case Errors.TRANSACTION_ABORTABLE.code:
      return requestVersion >= 4 ? code : Errors.INVALID_TXN_STATE.code;
    case Errors.CONCURRENT_TRANSACTIONS.code:
    case Errors.NETWORK_EXCEPTION.code:
    case Errors.COORDINATOR_LOAD_IN_PROGRESS.code:
    case Errors.COORDINATOR_NOT_AVAILABLE.code:
    case Errors.NOT_COORDINATOR.code:
      return Errors.COORDINATOR_NOT_AVAILABLE.code;
    default:
      return code;
  }
}
