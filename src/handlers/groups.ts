/**
 * Consumer group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
 * OffsetCommit, TxnOffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete): thin
 * translations between each version's wire shape and the GroupCoordinator.
 */
import { Errors } from '../../protocol/errors.ts';
import type { FindCoordinatorRequest, FindCoordinatorResponse } from '../../protocol/messages/find-coordinator.ts';
import type { JoinGroupRequest, JoinGroupResponse } from '../../protocol/messages/join-group.ts';
import type { SyncGroupRequest, SyncGroupResponse } from '../../protocol/messages/sync-group.ts';
import type { HeartbeatRequest, HeartbeatResponse } from '../../protocol/messages/heartbeat.ts';
import type { LeaveGroupRequest, LeaveGroupResponse } from '../../protocol/messages/leave-group.ts';
import type { OffsetCommitRequest, OffsetCommitResponse } from '../../protocol/messages/offset-commit.ts';
import type { OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartitions } from '../../protocol/messages/offset-fetch.ts';
import type { TxnOffsetCommitRequest, TxnOffsetCommitResponse } from '../../protocol/messages/txn-offset-commit.ts';
import type { ListGroupsRequest, ListGroupsResponse } from '../../protocol/messages/list-groups.ts';
import type { DescribeGroupsRequest, DescribeGroupsResponse } from '../../protocol/messages/describe-groups.ts';
import type { DeleteGroupsRequest, DeleteGroupsResponse } from '../../protocol/messages/delete-groups.ts';
import type { OffsetDeleteRequest, OffsetDeleteResponse } from '../../protocol/messages/offset-delete.ts';
import type { CoordinatorEndpoint, GroupCoordinatorService } from '../coordinator/service.ts';
import type { OffsetCommitEntry, TopicPartition } from '../coordinator/group-coordinator.ts';
import { expireTimestampFromCommitTimestamp, expireTimestampFromRetention, NO_TIMESTAMP } from '../coordinator/timestamps.ts';
import type { RequestContext } from '../server/session.ts';
import { AUTHORIZED_OPERATIONS_OMITTED, GROUP_OPERATIONS } from '../metadata/describe.ts';

/** FindCoordinatorRequest key types. */
const KEY_TYPE_GROUP = 0;
const KEY_TYPE_TRANSACTION = 1;
const CLASSIC_GROUP_TYPE = 'classic';

/** Kafka reports the member's host as InetAddress.toString(): "/127.0.0.1". */
function clientHost(ctx: RequestContext): string {
  const address = ctx.session.clientAddress;
  const host = address.startsWith('[') ? address.slice(1, address.indexOf(']')) : address.slice(0, address.lastIndexOf(':'));
  return `/${host}`;
}

function groupByTopic<T extends { topic: string }>(items: T[]): Map<string, T[]> {
  const byTopic = new Map<string, T[]>();
  for (const item of items) {
    const list = byTopic.get(item.topic);
    if (list) list.push(item);
    else byTopic.set(item.topic, [item]);
  }
  return byTopic;
}

/** What the group APIs need: the group coordinator and the state of `__consumer_offsets`. */
export type GroupHandlerServices = Pick<
  GroupCoordinatorService,
  'coordinator' | 'findCoordinator' | 'partitionExists' | 'offsetsRetentionMs' | 'subscribedTopics' | 'clock'
>;

/** FindCoordinator serves both coordinators: the group's and the transactional id's. */
export interface TransactionCoordinatorLookup {
  findCoordinator(transactionalId: string, listenerName: string): Promise<CoordinatorEndpoint>;
}

export async function handleFindCoordinator(
  groups: GroupHandlerServices,
  transactions: TransactionCoordinatorLookup,
  ctx: RequestContext,
  request: FindCoordinatorRequest,
  version: number,
): Promise<FindCoordinatorResponse> {
  const find = async (key: string) => {
    if (request.keyType === KEY_TYPE_GROUP) return { key, ...(await groups.findCoordinator(key, ctx.session.listenerName)) };
    if (request.keyType === KEY_TYPE_TRANSACTION) {
      // Kafka: an empty transactional id is an invalid request, not a key.
      if (key === '')
        return {
          key,
          errorCode: Errors.INVALID_REQUEST.code,
          errorMessage: Errors.INVALID_REQUEST.message,
          nodeId: -1,
          host: '',
          port: -1,
        };
      return { key, ...(await transactions.findCoordinator(key, ctx.session.listenerName)) };
    }
    return { key, errorCode: Errors.INVALID_REQUEST.code, errorMessage: Errors.INVALID_REQUEST.message, nodeId: -1, host: '', port: -1 };
  };
  if (version >= 4) {
    const coordinators = await Promise.all(request.coordinatorKeys.map(find));
    return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, nodeId: 0, host: '', port: 0, coordinators };
  }
  const only = await find(request.key);
  return {
    throttleTimeMs: 0,
    errorCode: only.errorCode,
    errorMessage: only.errorMessage,
    nodeId: only.nodeId,
    host: only.host,
    port: only.port,
    coordinators: [],
  };
}

export async function handleJoinGroup(
  groups: GroupHandlerServices,
  ctx: RequestContext,
  request: JoinGroupRequest,
  version: number,
): Promise<JoinGroupResponse> {
  const result = await groups.coordinator.joinGroup({
    groupId: request.groupId,
    memberId: request.memberId,
    groupInstanceId: request.groupInstanceId,
    protocolType: request.protocolType,
    protocols: request.protocols.map((p) => ({ name: p.name, metadata: p.metadata })),
    sessionTimeoutMs: request.sessionTimeoutMs,
    // v0 has no rebalance timeout: Kafka uses the session timeout.
    rebalanceTimeoutMs: version >= 1 ? request.rebalanceTimeoutMs : request.sessionTimeoutMs,
    clientId: ctx.clientId ?? '',
    clientHost: clientHost(ctx),
    requireKnownMemberId: version >= 4,
    supportsSkipAssignment: version >= 9,
  });
  return {
    throttleTimeMs: 0,
    errorCode: result.errorCode,
    generationId: result.generationId,
    protocolType: result.protocolType,
    // Before v7 the protocol name is not nullable: Kafka sends "" instead of null.
    protocolName: version < 7 ? (result.protocolName ?? '') : result.protocolName,
    leader: result.leaderId,
    skipAssignment: version >= 9 && result.skipAssignment,
    memberId: result.memberId,
    members: result.members,
  };
}

export async function handleSyncGroup(groups: GroupHandlerServices, request: SyncGroupRequest): Promise<SyncGroupResponse> {
  const result = await groups.coordinator.syncGroup({
    groupId: request.groupId,
    generationId: request.generationId,
    memberId: request.memberId,
    groupInstanceId: request.groupInstanceId,
    protocolType: request.protocolType,
    protocolName: request.protocolName,
    assignments: request.assignments,
  });
  return { throttleTimeMs: 0, ...result };
}

export function handleHeartbeat(groups: GroupHandlerServices, request: HeartbeatRequest): HeartbeatResponse {
  return {
    throttleTimeMs: 0,
    errorCode: groups.coordinator.heartbeat(request.groupId, request.memberId, request.groupInstanceId, request.generationId),
  };
}

export function handleLeaveGroup(groups: GroupHandlerServices, request: LeaveGroupRequest, version: number): LeaveGroupResponse {
  const leaving =
    version >= 3
      ? request.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId }))
      : [{ memberId: request.memberId, groupInstanceId: null }];
  const result = groups.coordinator.leaveGroup(request.groupId, leaving);
  if (version >= 3) return { throttleTimeMs: 0, errorCode: result.errorCode, members: result.members };
  const memberError = result.members[0]?.errorCode ?? 0;
  return { throttleTimeMs: 0, errorCode: result.errorCode !== 0 ? result.errorCode : memberError, members: [] };
}

export async function handleOffsetCommit(
  groups: GroupHandlerServices,
  request: OffsetCommitRequest,
  version: number,
): Promise<OffsetCommitResponse> {
  const nowMs = groups.clock.now();
  const topics = await commitExistingPartitions(
    groups,
    request.topics,
    (p) => explicitExpiry(version, p.commitTimestamp, request.retentionTimeMs, nowMs, groups.offsetsRetentionMs),
    (entries) =>
      groups.coordinator.commitOffsets(
        request.groupId,
        request.memberId,
        request.groupInstanceId,
        request.generationIdOrMemberEpoch,
        entries,
      ),
  );
  return { throttleTimeMs: 0, topics };
}

/**
 * TxnOffsetCommit: a transactional producer commits a group's offsets within its transaction
 * (they become visible when it commits). v0-v2 carry no member, and commit as a producer
 * outside the group would.
 */
export async function handleTxnOffsetCommit(
  groups: GroupHandlerServices,
  request: TxnOffsetCommitRequest,
  version: number,
): Promise<TxnOffsetCommitResponse> {
  const topics = await commitExistingPartitions(
    groups,
    request.topics,
    () => NO_TIMESTAMP,
    (entries) =>
      groups.coordinator.txnCommitOffsets(
        request.groupId,
        {
          transactionalId: request.transactionalId,
          producerId: request.producerId,
          producerEpoch: request.producerEpoch,
          requestVersion: version,
        },
        { memberId: request.memberId, groupInstanceId: request.groupInstanceId, generationId: request.generationId },
        entries,
      ),
  );
  return { throttleTimeMs: 0, topics };
}

/**
 * An offset commit's partitions, as KafkaApis takes them: those that do not exist fail alone
 * with UNKNOWN_TOPIC_OR_PARTITION, the others are committed together (`commit` answers one
 * code per entry, in order); each partition is answered in the request's order.
 */
async function commitExistingPartitions<
  P extends { partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number; committedMetadata: string | null },
>(
  groups: GroupHandlerServices,
  topics: readonly { name: string; partitions: readonly P[] }[],
  expireTimestampMs: (partition: P) => number,
  commit: (entries: OffsetCommitEntry[]) => Promise<number[]>,
): Promise<{ name: string; partitions: { partitionIndex: number; errorCode: number }[] }[]> {
  const entries: OffsetCommitEntry[] = [];
  const unknown = new Set<string>();
  for (const topic of topics) {
    for (const p of topic.partitions) {
      if (!groups.partitionExists(topic.name, p.partitionIndex)) {
        unknown.add(`${topic.name}:${p.partitionIndex}`);
        continue;
      }
      entries.push({
        topic: topic.name,
        partition: p.partitionIndex,
        offset: p.committedOffset,
        leaderEpoch: p.committedLeaderEpoch,
        metadata: p.committedMetadata,
        expireTimestampMs: expireTimestampMs(p),
      });
    }
  }
  const codes = entries.length > 0 ? await commit(entries) : [];
  const byPartition = new Map(entries.map((e, i) => [`${e.topic}:${e.partition}`, codes[i]!]));
  return topics.map((topic) => ({
    name: topic.name,
    partitions: topic.partitions.map((p) => {
      const key = `${topic.name}:${p.partitionIndex}`;
      return {
        partitionIndex: p.partitionIndex,
        errorCode: unknown.has(key) ? Errors.UNKNOWN_TOPIC_OR_PARTITION.code : byPartition.get(key)!,
      };
    }),
  }));
}

export function handleOffsetFetch(groups: GroupHandlerServices, request: OffsetFetchRequest, version: number): OffsetFetchResponse {
  // v7+: a read_committed consumer asks not to be answered an offset an open transaction may replace.
  const requireStable = version >= 7 && request.requireStable;
  const fetchGroup = (groupId: string, topics: { name: string; partitionIndexes: number[] }[] | null) => {
    const partitions: TopicPartition[] | null =
      topics === null ? null : topics.flatMap((t) => t.partitionIndexes.map((partition) => ({ topic: t.name, partition })));
    const result = groups.coordinator.fetchOffsets(groupId, partitions, requireStable);
    const entries =
      result.errorCode === 0
        ? result.offsets
        : (partitions ?? []).map((tp) => ({ ...tp, offset: -1n, leaderEpoch: -1, metadata: '', errorCode: result.errorCode }));
    const topicsOut = [...groupByTopic(entries)].map(([name, list]) => ({
      name,
      partitions: list.map(
        (o): OffsetFetchResponsePartitions => ({
          partitionIndex: o.partition,
          committedOffset: o.offset,
          committedLeaderEpoch: o.leaderEpoch,
          metadata: o.metadata,
          // v0-v1 carry group errors per partition: they have no top-level error.
          errorCode: version <= 1 && result.errorCode !== 0 ? result.errorCode : o.errorCode,
        }),
      ),
    }));
    return { errorCode: result.errorCode, topics: topicsOut };
  };
  if (version >= 8) {
    return {
      throttleTimeMs: 0,
      topics: [],
      errorCode: 0,
      groups: request.groups.map((g) => ({ groupId: g.groupId, ...fetchGroup(g.groupId, g.topics) })),
    };
  }
  const single = fetchGroup(request.groupId, version <= 1 ? (request.topics ?? []) : request.topics);
  return { throttleTimeMs: 0, topics: single.topics, errorCode: single.errorCode, groups: [] };
}

export function handleListGroups(groups: GroupHandlerServices, request: ListGroupsRequest, version: number): ListGroupsResponse {
  const coordinator = groups.coordinator;
  const types = version >= 5 ? request.typesFilter.map((t) => t.toLowerCase()) : [];
  const listed =
    types.length > 0 && !types.includes(CLASSIC_GROUP_TYPE) ? [] : coordinator.listGroups(version >= 4 ? request.statesFilter : null);
  return {
    throttleTimeMs: 0,
    errorCode: coordinator.anyPartitionLoading() ? Errors.COORDINATOR_LOAD_IN_PROGRESS.code : 0,
    groups: listed.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType, groupState: g.state, groupType: CLASSIC_GROUP_TYPE })),
  };
}

export function handleDescribeGroups(groups: GroupHandlerServices, request: DescribeGroupsRequest): DescribeGroupsResponse {
  return {
    throttleTimeMs: 0,
    groups: request.groups.map((groupId) => {
      const d = groups.coordinator.describeGroup(groupId);
      return {
        errorCode: d.errorCode,
        groupId,
        groupState: d.state,
        protocolType: d.protocolType,
        protocolData: d.protocolName,
        members: d.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          memberMetadata: m.metadata,
          memberAssignment: m.assignment,
        })),
        authorizedOperations: request.includeAuthorizedOperations ? GROUP_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
      };
    }),
  };
}

export async function handleDeleteGroups(groups: GroupHandlerServices, request: DeleteGroupsRequest): Promise<DeleteGroupsResponse> {
  return { throttleTimeMs: 0, results: await groups.coordinator.deleteGroups(request.groupsNames) };
}

export async function handleOffsetDelete(groups: GroupHandlerServices, request: OffsetDeleteRequest): Promise<OffsetDeleteResponse> {
  const partitions = request.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex })));
  const result = await groups.coordinator.deleteOffsets(request.groupId, partitions, (group) => groups.subscribedTopics(group));
  return {
    errorCode: result.errorCode,
    throttleTimeMs: 0,
    topics:
      result.errorCode !== 0
        ? []
        : [...groupByTopic(result.partitions)].map(([name, list]) => ({
            name,
            partitions: list.map((p) => ({ partitionIndex: p.partition, errorCode: p.errorCode })),
          })),
  };
}

/**
 * The explicit expiry old OffsetCommit versions ask for: v1 by a commit timestamp, v2-v4 by
 * a retention time; -1 means the broker's offsets.retention.minutes applies (KIP-211). The
 * int64s from the wire are added as bigints and saturated into the range of timestamps the
 * coordinator represents (coordinator/timestamps.ts), so no value a client sends can
 * produce a timestamp that cannot be written and read back.
 */
function explicitExpiry(
  version: number,
  commitTimestampMs: bigint,
  retentionTimeMs: bigint,
  nowMs: number,
  defaultRetentionMs: number,
): number {
  if (version === 1) return expireTimestampFromCommitTimestamp(commitTimestampMs, defaultRetentionMs);
  if (version >= 2 && version <= 4) return expireTimestampFromRetention(nowMs, retentionTimeMs);
  return NO_TIMESTAMP;
}
