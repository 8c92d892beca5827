/**
 * `sluice groups`: consumer groups and their lag, as Kafka's kafka-consumer-groups tool shows
 * them, plus the age of the oldest unconsumed record of each partition (LAG-TIME).
 *
 *   sluice groups list [--bootstrap-server 127.0.0.1:9092]
 *   sluice groups describe GROUP [--bootstrap-server 127.0.0.1:9092]
 *
 * Exit codes: 0 ok, 1 on errors (an unknown group included), 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors, KafkaError } from '../../protocol/errors.ts';
import { Reader } from '../../protocol/primitives.ts';
import { makeListGroupsRequest, type ListGroupsResponse } from '../../protocol/messages/list-groups.ts';
import {
  makeDescribeGroupsRequest,
  type DescribeGroupsResponse,
  type DescribeGroupsResponseDescribedGroup,
} from '../../protocol/messages/describe-groups.ts';
import { makeOffsetFetchRequest, type OffsetFetchResponse } from '../../protocol/messages/offset-fetch.ts';
import { decodeConsumerProtocolAssignment } from '../../protocol/messages/consumer-protocol-assignment.ts';
import { KafkaCluster, kafkaError, type BrokerAddress } from '../client/cluster.ts';
import { firstRecordAtOrAfter, listOffsets, tpKey, type TopicPartition } from '../client/offsets.ts';

export const GROUPS_USAGE = `usage:
  sluice groups list [--bootstrap-server HOST:PORT]
  sluice groups describe GROUP [--bootstrap-server HOST:PORT]`;

const DEFAULT_BOOTSTRAP = '127.0.0.1:9092';
/** OffsetFetch v8+ nests groups and v10+ names topics by id; v7 is enough for one group. */
const OFFSET_FETCH_MAX_VERSION = 7;
/** How long coordinator look-ups retry retriable errors (coordinator loading, not yet elected). */
const COORDINATOR_RETRY_MS = 10_000;
const COORDINATOR_BACKOFF_MS = 200;

export interface Output {
  out(text: string): void;
  err(text: string): void;
}

const stdio: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

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
      let lagMs: number | null = null;
      if (lag !== null && lag > 0) {
        const first = await firstRecordAtOrAfter(cluster, tp.topic, tp.partition, committedOffset);
        if (first !== null && first.timestamp >= 0) lagMs = Math.max(0, nowMs - first.timestamp);
      }
      const m = owner.get(key);
      return {
        topic: tp.topic,
        partition: tp.partition,
        committedOffset,
        logEndOffset,
        lag,
        lagMs,
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

/** Committed offsets of every partition of the group (OffsetFetch with topics = null). */
async function fetchCommittedOffsets(cluster: KafkaCluster, groupId: string): Promise<Map<string, TopicPartition & { offset: number }>> {
  const res = await withCoordinatorRetries(async () => {
    const conn = await cluster.coordinatorConnection(groupId);
    const version = conn.version(ApiKey.OffsetFetch, OFFSET_FETCH_MAX_VERSION);
    if (version < 2) throw new Error(`the coordinator's OffsetFetch (v${version}) cannot list all partitions`);
    const r = await conn.send<OffsetFetchResponse>(ApiKey.OffsetFetch, makeOffsetFetchRequest({ groupId, topics: null }), version);
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

async function withCoordinatorRetries<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + COORDINATOR_RETRY_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      const retriable = err instanceof KafkaError && RETRIABLE_COORDINATOR_ERRORS.has(err.code);
      if (!retriable || Date.now() >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, COORDINATOR_BACKOFF_MS));
    }
  }
}

/** `12s`, `3m05s`, `2h07m`, `4d03h`: the largest two units. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(s < 10 ? 1 : 0)}s`;
  const pad = (n: number): string => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86400)}d${pad(Math.floor(s / 3600) % 24)}h`;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

export function formatGroupList(groups: readonly GroupListing[]): string {
  return table(
    ['GROUP', 'STATE', 'PROTOCOL-TYPE', 'MEMBERS'],
    groups.map((g) => [g.groupId, g.state, g.protocolType || '-', String(g.members)]),
  );
}

export function formatGroupDescription(d: GroupDescription): string {
  const dash = (v: string | number | null): string => (v === null || v === -1 || v === '' ? '-' : String(v));
  let text =
    '\n' +
    table(
      ['GROUP', 'COORDINATOR (ID)', 'ASSIGNMENT-STRATEGY', 'STATE', '#MEMBERS'],
      [
        [
          d.groupId,
          `${d.coordinator.host}:${d.coordinator.port} (${d.coordinator.nodeId})`,
          dash(d.protocol),
          d.state,
          String(d.members.length),
        ],
      ],
    );
  if (d.members.length === 0) text += `\nConsumer group '${d.groupId}' has no active members.\n`;
  text +=
    '\n' +
    table(
      ['GROUP', 'TOPIC', 'PARTITION', 'CURRENT-OFFSET', 'LOG-END-OFFSET', 'LAG', 'LAG-TIME', 'CONSUMER-ID', 'HOST', 'CLIENT-ID'],
      d.partitions.map((p) => [
        d.groupId,
        p.topic,
        String(p.partition),
        dash(p.committedOffset),
        dash(p.logEndOffset),
        dash(p.lag),
        p.lagMs === null ? '-' : formatDuration(p.lagMs),
        dash(p.memberId),
        dash(p.host),
        dash(p.clientId),
      ]),
    );
  if (d.members.length > 0) {
    text +=
      '\n' +
      table(
        ['GROUP', 'CONSUMER-ID', 'GROUP-INSTANCE-ID', 'HOST', 'CLIENT-ID', '#PARTITIONS', 'ASSIGNMENT'],
        d.members.map((m) => [
          d.groupId,
          m.memberId,
          dash(m.groupInstanceId),
          m.host,
          m.clientId,
          String(m.assignment.length),
          formatAssignment(m.assignment),
        ]),
      );
  }
  return text;
}

/** Kafka's `topic(0,1,2)` notation. */
function formatAssignment(tps: readonly TopicPartition[]): string {
  if (tps.length === 0) return '-';
  const byTopic = new Map<string, number[]>();
  for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
  return [...byTopic].map(([t, ps]) => `${t}(${ps.join(',')})`).join(', ');
}

/** Entry point of `sluice groups ...`; argv may start with the word `groups`. */
function parseGroupsArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    options: { 'bootstrap-server': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
}

export async function runGroupsCommand(argv: string[], io: Output = stdio): Promise<number> {
  const args = argv[0] === 'groups' ? argv.slice(1) : argv;
  let parsed: ReturnType<typeof parseGroupsArgs>;
  try {
    parsed = parseGroupsArgs(args);
  } catch (err) {
    io.err(`sluice groups: ${(err as Error).message}\n${GROUPS_USAGE}\n`);
    return 2;
  }
  const [action, groupId, ...extra] = parsed.positionals;
  if (parsed.values.help === true) {
    io.out(GROUPS_USAGE + '\n');
    return 0;
  }
  const valid = (action === 'list' && groupId === undefined) || (action === 'describe' && groupId !== undefined && extra.length === 0);
  if (!valid) {
    io.err(`${GROUPS_USAGE}\n`);
    return 2;
  }
  const bootstrap = (parsed.values['bootstrap-server'] ?? DEFAULT_BOOTSTRAP)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  let cluster: KafkaCluster;
  try {
    cluster = new KafkaCluster(bootstrap, { clientId: 'sluice-groups' });
  } catch (err) {
    io.err(`Error: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    if (action === 'list') {
      io.out(formatGroupList(await listGroups(cluster)));
    } else {
      io.out(formatGroupDescription(await describeGroup(cluster, groupId!)));
    }
    return 0;
  } catch (err) {
    io.err(`Error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await cluster.close();
  }
}
