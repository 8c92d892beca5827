/**
 * A member of a classic consumer group (protocol type `consumer`), as Kafka's consumer
 * coordinator joins one: JoinGroup (retried with the member id the coordinator hands out,
 * KIP-394), the range assignment computed by whichever member the coordinator elects leader,
 * SyncGroup, heartbeats every heartbeat interval, and LeaveGroup on the way out. A heartbeat
 * answered REBALANCE_IN_PROGRESS (or a lost membership) asks the owner to commit what it
 * consumed and join again: `needsRejoin`.
 *
 * The member talks to its coordinator over a connection of its own: the broker answers a
 * connection's requests in order, and a JoinGroup waits for the whole rebalance, so sharing
 * one with fetches would hold either up.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors, KafkaError } from '../../protocol/errors.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { makeHeartbeatRequest, type HeartbeatResponse } from '../../protocol/messages/heartbeat.ts';
import { makeJoinGroupRequest, makeJoinGroupRequestProtocol, type JoinGroupResponse } from '../../protocol/messages/join-group.ts';
import { makeLeaveGroupRequest, makeLeaveGroupRequestMemberIdentity } from '../../protocol/messages/leave-group.ts';
import { makeSyncGroupRequest, makeSyncGroupRequestAssignment, type SyncGroupResponse } from '../../protocol/messages/sync-group.ts';
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
import { type KafkaCluster, kafkaError } from './cluster.ts';
import { ConnectionError, type KafkaConnection } from './connection.ts';
import { sleep } from './errors.ts';
import { decodeAssignment } from './groups.ts';
import type { TopicPartition } from './offsets.ts';

/** The assignor every member offers; Kafka's consumers all support it. */
const RANGE = 'range';
/** The consumer protocol versions written: v0 carries what the range assignor reads. */
const SUBSCRIPTION_VERSION = 0;
const ASSIGNMENT_VERSION = 0;
/** JoinGroup v9 is the newest the codec has; v4+ hands out member ids (KIP-394). */
const JOIN_GROUP_MAX_VERSION = 9;
const RETRY_BACKOFF_MS = 200;
/** How long join retries coordinator errors (a coordinator loading, moving, being elected). */
const JOIN_RETRY_MS = 60_000;

/** Errors after which the coordinator must be found again. */
const COORDINATOR_ERRORS: ReadonlySet<number> = new Set([
  Errors.COORDINATOR_NOT_AVAILABLE.code,
  Errors.NOT_COORDINATOR.code,
  Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
]);

export interface GroupMemberOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  readonly clientId?: string;
  /** The consumer's defaults (session.timeout.ms 45 s in Kafka 3+, heartbeat 3 s, rebalance 5 min) are shortened for a tool. */
  readonly sessionTimeoutMs?: number;
  readonly rebalanceTimeoutMs?: number;
  readonly heartbeatIntervalMs?: number;
}

/**
 * Kafka's RangeAssignor: per topic, the partitions in order over the members subscribed to it
 * (sorted by member id), the first `partitions % members` members one more.
 */
export function rangeAssignment(
  subscriptions: ReadonlyMap<string, readonly string[]>,
  partitionCounts: ReadonlyMap<string, number>,
): Map<string, TopicPartition[]> {
  const assignment = new Map<string, TopicPartition[]>([...subscriptions.keys()].map((m) => [m, []]));
  const topics = new Set([...subscriptions.values()].flat());
  for (const topic of [...topics].sort()) {
    const members = [...subscriptions].filter(([, ts]) => ts.includes(topic)).map(([m]) => m);
    members.sort();
    const count = partitionCounts.get(topic) ?? 0;
    const each = Math.floor(count / members.length);
    const extra = count % members.length;
    members.forEach((member, i) => {
      const start = i * each + Math.min(i, extra);
      const length = each + (i < extra ? 1 : 0);
      for (let p = start; p < start + length; p++) assignment.get(member)!.push({ topic, partition: p });
    });
  }
  return assignment;
}

export class GroupMember {
  memberId = '';
  generationId = -1;
  private assigned: TopicPartition[] = [];
  private conn: KafkaConnection | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private rejoin = false;
  private readonly sessionTimeoutMs: number;
  private readonly rebalanceTimeoutMs: number;
  private readonly heartbeatIntervalMs: number;

  constructor(
    private readonly cluster: KafkaCluster,
    private readonly options: GroupMemberOptions,
  ) {
    this.sessionTimeoutMs = options.sessionTimeoutMs ?? 10_000;
    this.rebalanceTimeoutMs = options.rebalanceTimeoutMs ?? 30_000;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 3_000;
  }

  /** This member's partitions in the current generation. */
  get assignment(): readonly TopicPartition[] {
    return this.assigned;
  }

  /** The group is rebalancing (or dropped this member): commit, then join() again. */
  get needsRejoin(): boolean {
    return this.rejoin;
  }

  /** Joins (or rejoins) the group; resolves with this member's partitions. */
  async join(): Promise<readonly TopicPartition[]> {
    this.stopHeartbeats();
    const deadline = Date.now() + JOIN_RETRY_MS;
    for (;;) {
      try {
        const conn = await this.coordinator();
        const joined = await this.joinGroup(conn);
        if (joined === null) continue;
        const assignment = await this.syncGroup(conn, joined);
        if (assignment === null) continue;
        this.assigned = assignment;
        this.rejoin = false;
        this.startHeartbeats();
        return assignment;
      } catch (err) {
        const retriable = (err instanceof KafkaError && COORDINATOR_ERRORS.has(err.code)) || err instanceof ConnectionError;
        if (!retriable || Date.now() >= deadline) throw err;
        this.dropCoordinator();
        await sleep(RETRY_BACKOFF_MS);
      }
    }
  }

  /** Leaves the group (its partitions go to the other members at once) and closes the connection. */
  async leave(): Promise<void> {
    this.stopHeartbeats();
    const conn = this.conn;
    if (conn !== null && this.memberId !== '') {
      const version = conn.version(ApiKey.LeaveGroup);
      const request =
        version >= 3
          ? makeLeaveGroupRequest({
              groupId: this.options.groupId,
              members: [makeLeaveGroupRequestMemberIdentity({ memberId: this.memberId })],
            })
          : makeLeaveGroupRequest({ groupId: this.options.groupId, memberId: this.memberId });
      // Leaving is a courtesy: a member that cannot say goodbye is dropped after its session timeout.
      await conn.send(ApiKey.LeaveGroup, request, version).catch(() => undefined);
    }
    this.dropCoordinator();
  }

  private async coordinator(): Promise<KafkaConnection> {
    if (this.conn !== null && !this.conn.closed) return this.conn;
    const address = await this.cluster.findCoordinator(this.options.groupId);
    this.conn = await this.cluster.open(address.host, address.port, {
      clientId: this.options.clientId ?? 'sluice-consumer',
      // A JoinGroup is answered once the rebalance completes, up to the rebalance timeout.
      requestTimeoutMs: this.rebalanceTimeoutMs + 5_000,
    });
    return this.conn;
  }

  private dropCoordinator(): void {
    this.conn?.close();
    this.conn = null;
  }

  /** One JoinGroup; null when it must be sent again (with the member id the coordinator gave). */
  private async joinGroup(conn: KafkaConnection): Promise<JoinGroupResponse | null> {
    const w = new Writer();
    w.int16(SUBSCRIPTION_VERSION);
    encodeConsumerProtocolSubscription(w, makeConsumerProtocolSubscription({ topics: [...this.options.topics] }), SUBSCRIPTION_VERSION);
    const res = await conn.send<JoinGroupResponse>(
      ApiKey.JoinGroup,
      makeJoinGroupRequest({
        groupId: this.options.groupId,
        sessionTimeoutMs: this.sessionTimeoutMs,
        rebalanceTimeoutMs: this.rebalanceTimeoutMs,
        memberId: this.memberId,
        protocolType: 'consumer',
        protocols: [makeJoinGroupRequestProtocol({ name: RANGE, metadata: w.toBuffer() })],
      }),
      conn.version(ApiKey.JoinGroup, JOIN_GROUP_MAX_VERSION),
    );
    switch (res.errorCode) {
      case Errors.NONE.code:
        this.memberId = res.memberId;
        this.generationId = res.generationId;
        return res;
      case Errors.MEMBER_ID_REQUIRED.code:
        this.memberId = res.memberId;
        return null;
      case Errors.UNKNOWN_MEMBER_ID.code:
        this.memberId = '';
        return null;
      case Errors.REBALANCE_IN_PROGRESS.code:
        return null;
      default:
        throw kafkaError(res.errorCode, `JoinGroup '${this.options.groupId}'`);
    }
  }

  /** SyncGroup, with the assignment of every member when this one leads; null to join again. */
  private async syncGroup(conn: KafkaConnection, joined: JoinGroupResponse): Promise<TopicPartition[] | null> {
    const assignments = joined.leader === this.memberId ? await this.assign(joined) : [];
    const res = await conn.send<SyncGroupResponse>(
      ApiKey.SyncGroup,
      makeSyncGroupRequest({
        groupId: this.options.groupId,
        generationId: joined.generationId,
        memberId: this.memberId,
        protocolType: 'consumer',
        protocolName: joined.protocolName ?? RANGE,
        assignments,
      }),
    );
    switch (res.errorCode) {
      case Errors.NONE.code:
        return decodeAssignment(res.assignment);
      case Errors.UNKNOWN_MEMBER_ID.code:
        this.memberId = '';
        return null;
      case Errors.REBALANCE_IN_PROGRESS.code:
      case Errors.ILLEGAL_GENERATION.code:
        return null;
      default:
        throw kafkaError(res.errorCode, `SyncGroup '${this.options.groupId}'`);
    }
  }

  /** The leader's work: the range assignment over every member's subscription. */
  private async assign(joined: JoinGroupResponse) {
    const subscriptions = new Map<string, string[]>();
    for (const m of joined.members) {
      const r = new Reader(m.metadata);
      const version = Math.min(r.int16(), 3);
      subscriptions.set(m.memberId, decodeConsumerProtocolSubscription(r, Math.max(0, version)).topics);
    }
    const topics = [...new Set([...subscriptions.values()].flat())];
    const metadata = await this.cluster.metadata(topics);
    const counts = new Map(metadata.topics.filter((t) => t.errorCode === Errors.NONE.code).map((t) => [t.name!, t.partitions.length]));
    return [...rangeAssignment(subscriptions, counts)].map(([memberId, partitions]) => {
      const byTopic = new Map<string, number[]>();
      for (const tp of partitions) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
      const w = new Writer();
      w.int16(ASSIGNMENT_VERSION);
      encodeConsumerProtocolAssignment(
        w,
        makeConsumerProtocolAssignment({
          assignedPartitions: [...byTopic].map(([topic, ps]) => makeConsumerProtocolAssignmentTopicPartition({ topic, partitions: ps })),
        }),
        ASSIGNMENT_VERSION,
      );
      return makeSyncGroupRequestAssignment({ memberId, assignment: w.toBuffer() });
    });
  }

  private startHeartbeats(): void {
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), this.heartbeatIntervalMs);
  }

  private stopHeartbeats(): void {
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = null;
  }

  private async heartbeat(): Promise<void> {
    const conn = this.conn;
    if (conn === null || this.rejoin) return;
    try {
      const res = await conn.send<HeartbeatResponse>(
        ApiKey.Heartbeat,
        makeHeartbeatRequest({ groupId: this.options.groupId, generationId: this.generationId, memberId: this.memberId }),
      );
      if (res.errorCode === Errors.NONE.code) return;
      if (res.errorCode === Errors.UNKNOWN_MEMBER_ID.code) this.memberId = '';
      if (COORDINATOR_ERRORS.has(res.errorCode)) this.dropCoordinator();
      this.rejoin = true;
    } catch {
      // The coordinator went away: find it again and rejoin.
      this.dropCoordinator();
      this.rejoin = true;
    }
  }
}
