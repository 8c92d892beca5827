// One member of the simulation's consumer group, speaking the classic group protocol as
// Kafka's consumer does: FindCoordinator, JoinGroup (sent again with the member id the
// coordinator hands out, KIP-394), the range assignment when the coordinator elects it leader,
// SyncGroup, a heartbeat every interval (one in flight at a time), OffsetCommit and
// OffsetFetch with its member id and generation, and LeaveGroup.
//
// It runs on the simulation's clock (src/client/group-member.ts keeps Node's timers, which a
// seed could not replay), and writes each step of its membership into the trace, so that a
// violation's trace shows which member held what in which generation. Every OffsetCommit and
// OffsetFetch is reported to the invariant checker as it is sent and answered.

import { Errors } from '../../protocol/errors.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  decodeConsumerProtocolSubscription,
  encodeConsumerProtocolSubscription,
  makeConsumerProtocolSubscription,
} from '../../protocol/messages/consumer-protocol-subscription.ts';
import {
  encodeConsumerProtocolAssignment,
  makeConsumerProtocolAssignment,
  makeConsumerProtocolAssignmentTopicPartition,
} from '../../protocol/messages/consumer-protocol-assignment.ts';
import { makeHeartbeatRequest, type HeartbeatResponse } from '../../protocol/messages/heartbeat.ts';
import { makeJoinGroupRequest, makeJoinGroupRequestProtocol, type JoinGroupResponse } from '../../protocol/messages/join-group.ts';
import {
  makeLeaveGroupRequest,
  makeLeaveGroupRequestMemberIdentity,
  type LeaveGroupResponse,
} from '../../protocol/messages/leave-group.ts';
import {
  makeOffsetCommitRequest,
  makeOffsetCommitRequestPartition,
  makeOffsetCommitRequestTopic,
  type OffsetCommitResponse,
} from '../../protocol/messages/offset-commit.ts';
import { makeOffsetFetchRequest, makeOffsetFetchRequestTopic, type OffsetFetchResponse } from '../../protocol/messages/offset-fetch.ts';
import { makeSyncGroupRequest, makeSyncGroupRequestAssignment, type SyncGroupResponse } from '../../protocol/messages/sync-group.ts';
import { Reader, Writer, toSafeNumber } from '../../protocol/primitives.ts';
import type { KafkaCluster } from '../../src/client/cluster.ts';
import type { KafkaConnection } from '../../src/client/connection.ts';
import { rangeAssignment } from '../../src/client/group-member.ts';
import { decodeAssignment } from '../../src/client/groups.ts';
import { repeat } from '../../src/runtime/clock.ts';
import { type ClientContext, errorName, note } from './clients.ts';
import type { InvariantChecker, OffsetCommitAttempt } from './invariants.ts';

const RANGE = 'range';
const JOIN_GROUP_MAX_VERSION = 9;
const OFFSET_COMMIT_MAX_VERSION = 8;
const OFFSET_FETCH_MAX_VERSION = 7;

/** group.min.session.timeout.ms is 6 s by default: the shortest session a member may ask for. */
export const SESSION_TIMEOUT_MS = 6000;
const REBALANCE_TIMEOUT_MS = 8000;
const HEARTBEAT_INTERVAL_MS = 500;

const COORDINATOR_ERRORS: ReadonlySet<number> = new Set([
  Errors.COORDINATOR_NOT_AVAILABLE.code,
  Errors.NOT_COORDINATOR.code,
  Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
]);

/** Answers with which the coordinator refuses a commit before writing it: the member must rejoin. */
const FENCED_COMMIT_ERRORS: ReadonlySet<number> = new Set([
  Errors.ILLEGAL_GENERATION.code,
  Errors.UNKNOWN_MEMBER_ID.code,
  Errors.REBALANCE_IN_PROGRESS.code,
]);

export class SimGroupMember {
  memberId = '';
  generationId = -1;
  /** This member's partitions of the topic in its current generation. */
  assignment: number[] = [];
  private conn: KafkaConnection | null = null;
  private stopHeartbeats: (() => void) | null = null;
  private heartbeatInFlight = false;
  private rejoin = false;

  constructor(
    private readonly ctx: ClientContext,
    private readonly cluster: KafkaCluster,
    private readonly checker: InvariantChecker,
    private readonly group: string,
    private readonly topic: string,
  ) {}

  /** The group is rebalancing or dropped this member: commit what was consumed, then join again. */
  get needsRejoin(): boolean {
    return this.rejoin;
  }

  /**
   * One round of JoinGroup and SyncGroup: true with an assignment, false when the round must
   * be run again (the coordinator handed out a member id, or the rebalance moved on). Throws
   * on a lost connection or a coordinator error, after which the coordinator is looked up again.
   */
  async join(): Promise<boolean> {
    this.halt();
    const conn = await this.coordinator();
    const joined = await this.joinGroup(conn);
    if (joined === null) return false;
    const assignment = await this.syncGroup(conn, joined);
    if (assignment === null) return false;
    this.assignment = assignment;
    this.rejoin = false;
    this.note(`generation ${this.generationId}: ${assignment.length === 0 ? 'no partitions' : assignment.map((p) => `p${p}`).join(' ')}`);
    this.checker.observeAssignment(
      this.group,
      this.generationId,
      this.memberId,
      assignment.map((p) => `${this.topic}-${p}`),
    );
    this.stopHeartbeats = repeat(this.ctx.clock, HEARTBEAT_INTERVAL_MS, () => void this.heartbeat());
    return true;
  }

  /** Commits `offsets` in this member's generation; a commit the coordinator fences makes the member rejoin. */
  async commit(offsets: ReadonlyMap<number, number>): Promise<void> {
    // Kafka's consumer fails the commit of a member that lost its membership (CommitFailedException).
    if (offsets.size === 0 || this.generationId < 0) return;
    const conn = await this.coordinator();
    const generationId = this.generationId;
    const attempts = new Map<number, OffsetCommitAttempt>();
    for (const [p, o] of offsets) attempts.set(p, this.checker.commitSent(this.group, `${this.topic}-${p}`, o));
    const res = await conn.send<OffsetCommitResponse>(
      ApiKey.OffsetCommit,
      makeOffsetCommitRequest({
        groupId: this.group,
        generationIdOrMemberEpoch: generationId,
        memberId: this.memberId,
        topics: [
          makeOffsetCommitRequestTopic({
            name: this.topic,
            partitions: [...offsets].map(([partitionIndex, o]) =>
              makeOffsetCommitRequestPartition({ partitionIndex, committedOffset: BigInt(o), committedLeaderEpoch: -1 }),
            ),
          }),
        ],
      }),
      conn.version(ApiKey.OffsetCommit, OFFSET_COMMIT_MAX_VERSION),
    );
    const done: string[] = [];
    for (const part of res.topics[0]?.partitions ?? []) {
      const attempt = attempts.get(part.partitionIndex);
      if (attempt === undefined) continue;
      if (part.errorCode === Errors.NONE.code) {
        this.checker.commitAcknowledged(attempt);
        done.push(`p${part.partitionIndex}@${attempt.offset}`);
        continue;
      }
      this.note(`commit p${part.partitionIndex}@${attempt.offset} in generation ${generationId}: ${errorName(part.errorCode)}`);
      if (FENCED_COMMIT_ERRORS.has(part.errorCode)) {
        this.checker.commitRejected(attempt);
        this.fenced(part.errorCode);
      } else if (COORDINATOR_ERRORS.has(part.errorCode)) {
        this.dropCoordinator();
      }
    }
    if (done.length > 0) this.note(`committed ${done.join(' ')} in generation ${generationId}`);
  }

  /** The group's committed offsets of `partitions` (absent: none), as the coordinator answers them. */
  async committed(partitions: readonly number[]): Promise<Map<number, number>> {
    try {
      return await committedOffsets(await this.coordinator(), this.checker, this.group, this.topic, partitions);
    } catch (err) {
      // Moved, loading or unreachable: the next request looks the coordinator up again.
      this.dropCoordinator();
      throw err;
    }
  }

  /** Leaves the group, so that its partitions go to the other members at once. */
  async leave(): Promise<void> {
    this.halt();
    const conn = this.conn;
    if (conn !== null && !conn.closed && this.memberId !== '') {
      try {
        const res = await conn.send<LeaveGroupResponse>(
          ApiKey.LeaveGroup,
          makeLeaveGroupRequest({ groupId: this.group, members: [makeLeaveGroupRequestMemberIdentity({ memberId: this.memberId })] }),
          conn.version(ApiKey.LeaveGroup, 4),
        );
        this.note(`left the group: ${errorName(res.members[0]?.errorCode ?? res.errorCode)}`);
      } catch (err) {
        // A member that cannot say goodbye is dropped after its session timeout.
        this.note(`LeaveGroup failed: ${(err as Error).message}`);
      }
    }
    this.dropCoordinator();
  }

  dropCoordinator(): void {
    this.conn?.close();
    this.conn = null;
  }

  private halt(): void {
    this.stopHeartbeats?.();
    this.stopHeartbeats = null;
  }

  private async coordinator(): Promise<KafkaConnection> {
    if (this.conn !== null && !this.conn.closed) return this.conn;
    const address = await this.cluster.findCoordinator(this.group);
    // A JoinGroup is answered once the rebalance completes, up to the rebalance timeout.
    this.conn = await this.cluster.open(address.host, address.port, { requestTimeoutMs: REBALANCE_TIMEOUT_MS + 5000 });
    return this.conn;
  }

  private async joinGroup(conn: KafkaConnection): Promise<JoinGroupResponse | null> {
    const w = new Writer();
    w.int16(0);
    encodeConsumerProtocolSubscription(w, makeConsumerProtocolSubscription({ topics: [this.topic] }), 0);
    const res = await conn.send<JoinGroupResponse>(
      ApiKey.JoinGroup,
      makeJoinGroupRequest({
        groupId: this.group,
        sessionTimeoutMs: SESSION_TIMEOUT_MS,
        rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
        memberId: this.memberId,
        protocolType: 'consumer',
        protocols: [makeJoinGroupRequestProtocol({ name: RANGE, metadata: w.toBuffer() })],
      }),
      conn.version(ApiKey.JoinGroup, JOIN_GROUP_MAX_VERSION),
    );
    if (res.errorCode === Errors.NONE.code) {
      this.memberId = res.memberId;
      this.generationId = res.generationId;
      this.note(
        `joined generation ${res.generationId} as ${res.memberId}${res.leader === res.memberId ? ` (leader of ${res.members.length})` : ''}`,
      );
      return res;
    }
    this.note(`JoinGroup: ${errorName(res.errorCode)}`);
    if (res.errorCode === Errors.MEMBER_ID_REQUIRED.code) this.memberId = res.memberId;
    else if (res.errorCode === Errors.UNKNOWN_MEMBER_ID.code) this.memberId = '';
    else if (COORDINATOR_ERRORS.has(res.errorCode)) throw new Error(`JoinGroup: ${errorName(res.errorCode)}`);
    return null;
  }

  private async syncGroup(conn: KafkaConnection, joined: JoinGroupResponse): Promise<number[] | null> {
    const assignments = joined.leader === this.memberId ? await this.assign(joined) : [];
    const res = await conn.send<SyncGroupResponse>(
      ApiKey.SyncGroup,
      makeSyncGroupRequest({
        groupId: this.group,
        generationId: joined.generationId,
        memberId: this.memberId,
        protocolType: 'consumer',
        protocolName: joined.protocolName ?? RANGE,
        assignments,
      }),
    );
    if (res.errorCode === Errors.NONE.code) {
      return decodeAssignment(res.assignment)
        .filter((tp) => tp.topic === this.topic)
        .map((tp) => tp.partition);
    }
    this.note(`SyncGroup in generation ${joined.generationId}: ${errorName(res.errorCode)}`);
    if (res.errorCode === Errors.UNKNOWN_MEMBER_ID.code) this.memberId = '';
    else if (COORDINATOR_ERRORS.has(res.errorCode)) throw new Error(`SyncGroup: ${errorName(res.errorCode)}`);
    return null;
  }

  /** The leader's work: Kafka's range assignment over every member's subscription. */
  private async assign(joined: JoinGroupResponse) {
    const subscriptions = new Map<string, string[]>();
    for (const m of joined.members) {
      const r = new Reader(m.metadata);
      const version = Math.max(0, Math.min(r.int16(), 3));
      subscriptions.set(m.memberId, decodeConsumerProtocolSubscription(r, version).topics);
    }
    const topic = (await this.cluster.metadata([this.topic])).topics.find((t) => t.name === this.topic);
    const counts = new Map(topic !== undefined && topic.errorCode === Errors.NONE.code ? [[this.topic, topic.partitions.length]] : []);
    return [...rangeAssignment(subscriptions, counts)].map(([memberId, partitions]) => {
      const w = new Writer();
      w.int16(0);
      const owned = partitions.map((tp) => tp.partition);
      encodeConsumerProtocolAssignment(
        w,
        makeConsumerProtocolAssignment({
          assignedPartitions:
            owned.length === 0 ? [] : [makeConsumerProtocolAssignmentTopicPartition({ topic: this.topic, partitions: owned })],
        }),
        0,
      );
      return makeSyncGroupRequestAssignment({ memberId, assignment: w.toBuffer() });
    });
  }

  /**
   * A coordinator that moved is looked up again and the heartbeats go on there: the member
   * keeps its generation if the new coordinator loaded the group, and rejoins only when told to.
   */
  private async heartbeat(): Promise<void> {
    if (this.heartbeatInFlight || this.rejoin) return;
    this.heartbeatInFlight = true;
    try {
      const conn = await this.coordinator();
      const res = await conn.send<HeartbeatResponse>(
        ApiKey.Heartbeat,
        makeHeartbeatRequest({ groupId: this.group, generationId: this.generationId, memberId: this.memberId }),
      );
      if (res.errorCode === Errors.NONE.code) return;
      this.note(`heartbeat in generation ${this.generationId}: ${errorName(res.errorCode)}`);
      if (COORDINATOR_ERRORS.has(res.errorCode)) this.dropCoordinator();
      else this.fenced(res.errorCode);
    } catch (err) {
      this.note(`heartbeat failed: ${(err as Error).message}`);
      this.dropCoordinator();
    } finally {
      this.heartbeatInFlight = false;
    }
  }

  private fenced(code: number): void {
    if (code === Errors.UNKNOWN_MEMBER_ID.code) {
      this.memberId = '';
      this.generationId = -1;
    }
    this.rejoin = true;
    this.halt();
  }

  private note(what: string): void {
    note(this.ctx, what);
  }
}

/** One OffsetFetch of the group's committed offsets, checked against the commits sent so far. */
export async function committedOffsets(
  conn: KafkaConnection,
  checker: InvariantChecker,
  group: string,
  topic: string,
  partitions: readonly number[],
): Promise<Map<number, number>> {
  const sentAt = checker.offsetFetchSent();
  const res = await conn.send<OffsetFetchResponse>(
    ApiKey.OffsetFetch,
    makeOffsetFetchRequest({ groupId: group, topics: [makeOffsetFetchRequestTopic({ name: topic, partitionIndexes: [...partitions] })] }),
    conn.version(ApiKey.OffsetFetch, OFFSET_FETCH_MAX_VERSION),
  );
  if (res.errorCode !== Errors.NONE.code) throw new Error(`OffsetFetch: ${errorName(res.errorCode)}`);
  const out = new Map<number, number>();
  const answered: number[] = [];
  for (const part of res.topics[0]?.partitions ?? []) {
    if (part.errorCode !== Errors.NONE.code) throw new Error(`OffsetFetch p${part.partitionIndex}: ${errorName(part.errorCode)}`);
    answered.push(part.partitionIndex);
    if (part.committedOffset >= 0n) out.set(part.partitionIndex, toSafeNumber(part.committedOffset));
  }
  checker.observeCommittedOffsets(
    group,
    sentAt,
    answered.map((p) => `${topic}-${p}`),
    new Map([...out].map(([p, o]) => [`${topic}-${p}`, o])),
    conn.host,
  );
  return out;
}
