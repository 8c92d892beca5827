/**
 * Consumer groups as an admin client sees them, over the wire only (so it works against any
 * Kafka-compatible cluster): every group with its state, and a group's members and lag per
 * partition in records and in time (the age of the oldest unconsumed record); deleting groups
 * and resetting a group's committed offsets. The CLI's `sluice groups` prints and drives them;
 * the broker's lag sampler and admin API serve them.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors, KafkaError } from '../../protocol/errors.ts';
import { Reader } from '../../protocol/primitives.ts';
import { makeListGroupsRequest, type ListGroupsResponse } from '../../protocol/messages/list-groups.ts';
import {
  makeDescribeGroupsRequest,
  type DescribeGroupsResponse,
  type DescribeGroupsResponseDescribedGroup,
} from '../../protocol/messages/describe-groups.ts';
import { makeOffsetFetchRequest, makeOffsetFetchRequestTopic, type OffsetFetchResponse } from '../../protocol/messages/offset-fetch.ts';
import { decodeConsumerProtocolAssignment } from '../../protocol/messages/consumer-protocol-assignment.ts';
import { makeDeleteGroupsRequest, type DeleteGroupsResponse } from '../../protocol/messages/delete-groups.ts';
import {
  makeOffsetCommitRequest,
  makeOffsetCommitRequestPartition,
  makeOffsetCommitRequestTopic,
  type OffsetCommitResponse,
} from '../../protocol/messages/offset-commit.ts';
import { type KafkaCluster, kafkaError, type BrokerAddress } from './cluster.ts';
import { UnknownTopicError, brokerError, withRetries } from './errors.ts';
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey, type TopicPartition } from './offsets.ts';
import { readPartition } from './records.ts';

/** OffsetFetch v8+ nests groups and v10+ names topics by id; v7 is enough for one group. */
const OFFSET_FETCH_MAX_VERSION = 7;
/** How long coordinator look-ups retry retriable errors (coordinator loading, not yet elected). */
const COORDINATOR_RETRY_MS = 10_000;

export interface GroupListing {
  groupId: string;
  state: string;
  protocolType: string;
  members: number;
}

export interface MemberDescription {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  host: string;
  assignment: TopicPartition[];
}

export interface PartitionLag {
  topic: string;
  partition: number;
  /** -1 when the group committed nothing for the partition. */
  committedOffset: number;
  logEndOffset: number;
  /** null when nothing is committed. */
  lag: number | null;
  /** Age of the oldest unconsumed record; null when the lag is 0 or unknown. */
  lagMs: number | null;
  /** Timestamp of the oldest unconsumed record; null when the lag is 0 or unknown. */
  oldestUnconsumedTimestampMs: number | null;
  memberId: string | null;
  host: string | null;
  clientId: string | null;
}

export interface GroupDescription {
  groupId: string;
  state: string;
  protocolType: string;
  protocol: string;
  coordinator: BrokerAddress;
  members: MemberDescription[];
  partitions: PartitionLag[];
}

export class GroupNotFoundError extends Error {
  constructor(readonly groupId: string) {
    super(`Consumer group '${groupId}' does not exist.`);
    this.name = 'GroupNotFoundError';
  }
}

/** Every group on every broker, with its state and member count from its coordinator. */
export async function listGroups(cluster: KafkaCluster): Promise<GroupListing[]> {
  const brokers = await cluster.listBrokers();
  const found = new Map<string, { protocolType: string; state: string }>();
  for (const b of brokers) {
    const conn = await cluster.connection(b.host, b.port);
    const res = await conn.send<ListGroupsResponse>(ApiKey.ListGroups, makeListGroupsRequest());
    if (res.errorCode !== Errors.NONE.code) throw kafkaError(res.errorCode, `ListGroups on broker ${b.nodeId}`);
    for (const g of res.groups) found.set(g.groupId, { protocolType: g.protocolType, state: g.groupState });
  }
  const listings: GroupListing[] = [];
  for (const [groupId, listed] of [...found].sort(([a], [b]) => a.localeCompare(b))) {
    const described = await describeGroupMetadata(cluster, groupId).catch((err: unknown) => {
      if (err instanceof GroupNotFoundError) return null;
      throw err;
    });
    if (described === null) continue;
    listings.push({
      groupId,
      state: described.group.groupState || listed.state,
      protocolType: described.group.protocolType || listed.protocolType,
      members: described.group.members.length,
    });
  }
  return listings;
}

/** DescribeGroups at the group's coordinator. */
async function describeGroupMetadata(
  cluster: KafkaCluster,
  groupId: string,
): Promise<{ group: DescribeGroupsResponseDescribedGroup; coordinator: BrokerAddress }> {
  return withCoordinatorRetries(async () => {
    const coordinator = await cluster.findCoordinator(groupId);
    const conn = await cluster.connection(coordinator.host, coordinator.port);
    const res = await conn.send<DescribeGroupsResponse>(ApiKey.DescribeGroups, makeDescribeGroupsRequest({ groups: [groupId] }));
    const group = res.groups.find((g) => g.groupId === groupId);
    if (group === undefined || group.errorCode === Errors.GROUP_ID_NOT_FOUND.code || group.groupState === 'Dead') {
      throw new GroupNotFoundError(groupId);
    }
    if (group.errorCode !== Errors.NONE.code) throw kafkaError(group.errorCode, `DescribeGroups '${groupId}'`);
    return { group, coordinator };
  });
}

/**
 * The group's members and, per partition it committed to or has assigned, the committed
 * offset, log end offset, lag in records and the age of the oldest unconsumed record.
 */
export async function describeGroup(cluster: KafkaCluster, groupId: string, nowMs = Date.now()): Promise<GroupDescription> {
  const { group, coordinator } = await describeGroupMetadata(cluster, groupId);
  const members = group.members.map(
    (m): MemberDescription => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      host: m.clientHost,
      assignment: group.protocolType === 'consumer' ? decodeAssignment(m.memberAssignment) : [],
    }),
  );
  const committed = await fetchCommittedOffsets(cluster, groupId);
  if (committed.size === 0 && members.length === 0 && group.groupState === 'Empty' && group.protocolType === '') {
    // Kafka's coordinator answers Empty for ids it never saw; the tool calls those unknown.
    throw new GroupNotFoundError(groupId);
  }

  const owner = new Map<string, MemberDescription>();
  const partitions = new Map<string, TopicPartition>();
  for (const m of members) {
    for (const tp of m.assignment) {
      owner.set(tpKey(tp.topic, tp.partition), m);
      partitions.set(tpKey(tp.topic, tp.partition), tp);
    }
  }
  for (const tp of committed.values()) partitions.set(tpKey(tp.topic, tp.partition), tp);
  const sorted = [...partitions.values()].sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  const logEnd = sorted.length > 0 ? await listOffsets(cluster, sorted) : new Map<string, number>();

  const lags = await Promise.all(
    sorted.map(async (tp): Promise<PartitionLag> => {
      const key = tpKey(tp.topic, tp.partition);
      const committedOffset = committed.get(key)?.offset ?? -1;
      const logEndOffset = logEnd.get(key) ?? -1;
      const lag = committedOffset >= 0 ? Math.max(0, logEndOffset - committedOffset) : null;
      let oldest: number | null = null;
      if (lag !== null && lag > 0) {
        const first = await oldestUnconsumed(cluster, tp, committedOffset);
        if (first !== undefined && first.timestamp >= 0) oldest = first.timestamp;
      }
      const m = owner.get(key);
      return {
        topic: tp.topic,
        partition: tp.partition,
        committedOffset,
        logEndOffset,
        lag,
        lagMs: oldest === null ? null : Math.max(0, nowMs - oldest),
        oldestUnconsumedTimestampMs: oldest,
        memberId: m?.memberId ?? null,
        host: m?.host ?? null,
        clientId: m?.clientId ?? null,
      };
    }),
  );
  return {
    groupId,
    state: group.groupState,
    protocolType: group.protocolType,
    protocol: group.protocolData,
    coordinator,
    members,
    partitions: lags,
  };
}

/**
 * The first record a group would read next: at its committed offset, or at the log start when
 * retention removed what it committed to (its consumers would reset there).
 */
async function oldestUnconsumed(cluster: KafkaCluster, tp: TopicPartition, committedOffset: number) {
  try {
    return (await readPartition(cluster, tp.topic, tp.partition, committedOffset, 1)).records[0];
  } catch (err) {
    if (!(err instanceof KafkaError) || err.code !== Errors.OFFSET_OUT_OF_RANGE.code) throw err;
    const start = (await listOffsets(cluster, [tp], EARLIEST_TIMESTAMP)).get(tpKey(tp.topic, tp.partition)) ?? committedOffset;
    return (await readPartition(cluster, tp.topic, tp.partition, start, 1)).records[0];
  }
}

/**
 * The group's committed offsets: of every partition it committed to (OffsetFetch with topics =
 * null), or of `only`'s partitions. Partitions without a commit are left out.
 */
export async function fetchCommittedOffsets(
  cluster: KafkaCluster,
  groupId: string,
  only?: { topic: string; partitions: readonly number[] },
): Promise<Map<string, TopicPartition & { offset: number }>> {
  const topics = only === undefined ? null : [makeOffsetFetchRequestTopic({ name: only.topic, partitionIndexes: [...only.partitions] })];
  const res = await withCoordinatorRetries(async () => {
    const conn = await cluster.coordinatorConnection(groupId);
    const version = conn.version(ApiKey.OffsetFetch, OFFSET_FETCH_MAX_VERSION);
    if (topics === null && version < 2) throw new Error(`the coordinator's OffsetFetch (v${version}) cannot list all partitions`);
    const r = await conn.send<OffsetFetchResponse>(ApiKey.OffsetFetch, makeOffsetFetchRequest({ groupId, topics }), version);
    if (r.errorCode !== Errors.NONE.code) throw kafkaError(r.errorCode, `OffsetFetch '${groupId}'`);
    return r;
  });
  const out = new Map<string, TopicPartition & { offset: number }>();
  for (const t of res.topics) {
    for (const p of t.partitions) {
      if (p.errorCode !== Errors.NONE.code) throw kafkaError(p.errorCode, `OffsetFetch ${t.name}-${p.partitionIndex}`);
      if (p.committedOffset < 0n) continue;
      out.set(tpKey(t.name, p.partitionIndex), { topic: t.name, partition: p.partitionIndex, offset: Number(p.committedOffset) });
    }
  }
  return out;
}

/**
 * A consumer-protocol assignment: an int16 version, then the fields of that version. Newer
 * versions only append fields, so a version above ours is read as our newest (as Kafka's
 * ConsumerProtocol does).
 */
export function decodeAssignment(bytes: Buffer): TopicPartition[] {
  if (bytes.length < 2) return [];
  const r = new Reader(bytes);
  const version = Math.min(r.int16(), 3);
  const assignment = decodeConsumerProtocolAssignment(r, Math.max(0, version));
  return assignment.assignedPartitions
    .flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition })))
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
}

const RETRIABLE_COORDINATOR_ERRORS: ReadonlySet<number> = new Set([
  Errors.COORDINATOR_LOAD_IN_PROGRESS.code,
  Errors.COORDINATOR_NOT_AVAILABLE.code,
  Errors.NOT_COORDINATOR.code,
]);

/** Retries what finding and reaching a group's coordinator can fail with, and nothing else. */
function withCoordinatorRetries<T>(attempt: () => Promise<T>): Promise<T> {
  return withRetries(COORDINATOR_RETRY_MS, attempt, (err) => RETRIABLE_COORDINATOR_ERRORS.has(err.code));
}

/** One group's outcome of DeleteGroups: null error when it was deleted. */
export interface GroupDeletion {
  groupId: string;
  error: KafkaError | null;
}

/**
 * DeleteGroups at each group's coordinator. A group the coordinator refuses (NON_EMPTY_GROUP,
 * GROUP_ID_NOT_FOUND, GROUP_AUTHORIZATION_FAILED) is reported in its result, not thrown, so
 * the others are still deleted, as Kafka's admin client does.
 */
export async function deleteGroups(cluster: KafkaCluster, groupIds: readonly string[]): Promise<GroupDeletion[]> {
  const deletions: GroupDeletion[] = [];
  for (const groupId of groupIds) {
    try {
      await withCoordinatorRetries(async () => {
        const conn = await cluster.coordinatorConnection(groupId);
        const res = await conn.send<DeleteGroupsResponse>(ApiKey.DeleteGroups, makeDeleteGroupsRequest({ groupsNames: [groupId] }));
        const result = res.results.find((r) => r.groupId === groupId);
        if (result === undefined) throw new Error(`DeleteGroups answered without group '${groupId}'`);
        if (result.errorCode !== Errors.NONE.code) throw kafkaError(result.errorCode, `DeleteGroups '${groupId}'`);
      });
      deletions.push({ groupId, error: null });
    } catch (err) {
      if (!(err instanceof KafkaError) || RETRIABLE_COORDINATOR_ERRORS.has(err.code)) throw err;
      deletions.push({ groupId, error: err });
    }
  }
  return deletions;
}

/** Where `planOffsetReset` moves each partition (Kafka's --to-* and --shift-by options). */
export type OffsetResetTarget =
  | { kind: 'earliest' }
  | { kind: 'latest' }
  | { kind: 'offset'; offset: number }
  | { kind: 'shift'; by: number }
  /** The first record at or after the timestamp; the log end when there is none. */
  | { kind: 'timestamp'; timestampMs: number };

/** A topic's partitions to reset; null: all of them. */
export interface TopicPartitions {
  topic: string;
  partitions: number[] | null;
}

export interface OffsetResetSpec {
  /** 'all': every partition the group has committed offsets for (--all-topics). */
  scope: readonly TopicPartitions[] | 'all';
  target: OffsetResetTarget;
}

export interface PlannedOffset {
  topic: string;
  partition: number;
  /** -1 when the group committed nothing for the partition. */
  currentOffset: number;
  newOffset: number;
}

/** Refusal to reset a group with members, worded as Kafka's kafka-consumer-groups words it. */
export class ActiveGroupError extends Error {
  constructor(
    readonly groupId: string,
    readonly state: string,
  ) {
    super(`Assignments can only be reset if the group '${groupId}' is inactive, but the current state is ${state}.`);
    this.name = 'ActiveGroupError';
  }
}

/** Partitions per round of ListOffsets while planning, and between progress reports. */
export const OFFSET_RESET_CHUNK = 1000;
/** How long planning retries retriable ListOffsets errors (a leader moving or just elected). */
const LIST_OFFSETS_RETRY_MS = 10_000;

export function clampOffset(offset: number, logStartOffset: number, logEndOffset: number): number {
  return Math.min(Math.max(offset, logStartOffset), logEndOffset);
}

/**
 * The offset a partition is reset to, given its committed offset (-1: none), log start and
 * end, and for a timestamp target the offset ListOffsets found for it (-1: no record at or
 * after it). Like Kafka's tool, every target except earliest/latest lands in [log start, log end].
 */
export function resolveNewOffset(
  target: OffsetResetTarget,
  tp: TopicPartition,
  currentOffset: number,
  logStartOffset: number,
  logEndOffset: number,
  offsetForTimestamp: number,
): number {
  switch (target.kind) {
    case 'earliest':
      return logStartOffset;
    case 'latest':
      return logEndOffset;
    case 'offset':
      return clampOffset(target.offset, logStartOffset, logEndOffset);
    case 'shift':
      if (currentOffset < 0) {
        throw new Error(`Cannot shift offset for partition ${tp.topic}-${tp.partition} since there is no current committed offset`);
      }
      return clampOffset(currentOffset + target.by, logStartOffset, logEndOffset);
    case 'timestamp':
      return offsetForTimestamp < 0 ? logEndOffset : clampOffset(offsetForTimestamp, logStartOffset, logEndOffset);
  }
}

/** The partitions named by `scope`, checked against the cluster's metadata. */
async function partitionsToReset(cluster: KafkaCluster, scope: readonly TopicPartitions[]): Promise<TopicPartition[]> {
  const metadata = await cluster.metadata(scope.map((s) => s.topic));
  const out = new Map<string, TopicPartition>();
  for (const s of scope) {
    const t = metadata.topics.find((x) => x.name === s.topic);
    if (t === undefined || t.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code) throw new UnknownTopicError(s.topic);
    if (t.errorCode !== Errors.NONE.code) throw brokerError(t.errorCode, null, `topic '${s.topic}'`);
    const existing = new Set(t.partitions.map((p) => p.partitionIndex));
    for (const partition of s.partitions ?? [...existing]) {
      if (!existing.has(partition)) throw kafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION.code, `${s.topic}-${partition}`);
      out.set(tpKey(s.topic, partition), { topic: s.topic, partition });
    }
  }
  return [...out.values()];
}

/**
 * The new committed offset of each partition `spec` names, as kafka-consumer-groups
 * --reset-offsets plans it; nothing is committed. Refuses (ActiveGroupError) while the group
 * has members, since they would overwrite the reset with their next commit. A group the
 * coordinator does not know may be planned for: committing creates it, as with Kafka's tool.
 * `onProgress` hears after every OFFSET_RESET_CHUNK partitions.
 */
export async function planOffsetReset(
  cluster: KafkaCluster,
  groupId: string,
  spec: OffsetResetSpec,
  onProgress: (planned: number, total: number) => void = () => undefined,
): Promise<PlannedOffset[]> {
  const state = await describeGroupMetadata(cluster, groupId).then(
    (d) => d.group.groupState,
    (err: unknown) => {
      if (err instanceof GroupNotFoundError) return 'Dead';
      throw err;
    },
  );
  if (state !== 'Empty' && state !== 'Dead') throw new ActiveGroupError(groupId, state);
  const committed = await fetchCommittedOffsets(cluster, groupId);
  const partitions = (spec.scope === 'all' ? [...committed.values()] : await partitionsToReset(cluster, spec.scope))
    .map((tp) => ({ topic: tp.topic, partition: tp.partition }))
    .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  const planned: PlannedOffset[] = [];
  for (let at = 0; at < partitions.length; at += OFFSET_RESET_CHUNK) {
    const chunk = partitions.slice(at, at + OFFSET_RESET_CHUNK);
    const target = spec.target;
    // A leader just elected (a topic just created) answers NOT_LEADER_OR_FOLLOWER for a moment.
    const offsetsFor = (timestamp: bigint) => withRetries(LIST_OFFSETS_RETRY_MS, () => listOffsets(cluster, chunk, timestamp));
    const [starts, ends, byTimestamp] = await Promise.all([
      offsetsFor(EARLIEST_TIMESTAMP),
      offsetsFor(LATEST_TIMESTAMP),
      target.kind === 'timestamp' ? offsetsFor(BigInt(target.timestampMs)) : new Map<string, number>(),
    ]);
    for (const tp of chunk) {
      const key = tpKey(tp.topic, tp.partition);
      const currentOffset = committed.get(key)?.offset ?? -1;
      const start = starts.get(key) ?? 0;
      const end = ends.get(key) ?? start;
      planned.push({
        ...tp,
        currentOffset,
        newOffset: resolveNewOffset(target, tp, currentOffset, start, end, byTimestamp.get(key) ?? -1),
      });
    }
    onProgress(planned.length, partitions.length);
  }
  return planned;
}

/**
 * OffsetCommit at the group's coordinator: as an admin (generation -1, no member id), which
 * the coordinator accepts only while the group has no members, or as `member` of the current
 * generation. One request for all partitions, so that the coordinator writes them as one
 * batch.
 */
export async function commitOffsets(
  cluster: KafkaCluster,
  groupId: string,
  offsets: readonly (TopicPartition & { offset: number })[],
  member: { generationId: number; memberId: string } = { generationId: -1, memberId: '' },
): Promise<void> {
  if (offsets.length === 0) return;
  const byTopic = new Map<string, { partition: number; offset: number }[]>();
  for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), { partition: o.partition, offset: o.offset }]);
  const request = makeOffsetCommitRequest({
    groupId,
    generationIdOrMemberEpoch: member.generationId,
    memberId: member.memberId,
    topics: [...byTopic].map(([name, ps]) =>
      makeOffsetCommitRequestTopic({
        name,
        partitions: ps.map((p) => makeOffsetCommitRequestPartition({ partitionIndex: p.partition, committedOffset: BigInt(p.offset) })),
      }),
    ),
  });
  await withCoordinatorRetries(async () => {
    const conn = await cluster.coordinatorConnection(groupId);
    const res = await conn.send<OffsetCommitResponse>(ApiKey.OffsetCommit, request);
    for (const t of res.topics) {
      for (const p of t.partitions) {
        if (p.errorCode !== Errors.NONE.code) throw kafkaError(p.errorCode, `OffsetCommit '${groupId}' ${t.name}-${p.partitionIndex}`);
      }
    }
  });
}
