/**
 * `sluice groups`: consumer groups as Kafka's kafka-consumer-groups tool shows and manages them,
 * over the wire only: list, describe (lag in records, plus the age of the oldest unconsumed
 * record of each partition: LAG-TIME), delete, and reset a group's committed offsets.
 *
 *   sluice groups list
 *   sluice groups describe GROUP
 *   sluice groups delete GROUP...
 *   sluice groups reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
 *     (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime ISO | --by-duration PnDTnHnMnS)
 *     [--dry-run | --execute]
 *
 * Every subcommand takes --bootstrap-server (default 127.0.0.1:9092), --command-config (the
 * client properties of a secured listener, see command-config.ts) and --output text|json.
 * reset-offsets only prints its plan unless --execute is given, as Kafka's tool does.
 * Exit codes: 0 ok, 1 on errors (an unknown group included), 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import type { KafkaCluster } from '../client/cluster.ts';
import type { TopicPartition } from '../client/offsets.ts';
import {
  OFFSET_RESET_CHUNK,
  commitOffsets,
  deleteGroups,
  describeGroup,
  listGroups,
  planOffsetReset,
  type GroupDescription,
  type GroupListing,
  type OffsetResetTarget,
  type PlannedOffset,
  type TopicPartitions,
} from '../client/groups.ts';
import {
  UsageError,
  clusterTarget,
  parseIntFlag,
  parseOrUsage,
  parseOutputFormat,
  stdio,
  withCluster,
  type Output,
  type OutputFormat,
} from './output.ts';

export type { Output };

export const GROUPS_USAGE = `usage:
  sluice groups list
  sluice groups describe GROUP
  sluice groups delete GROUP...
  sluice groups reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
      (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm]
       | --by-duration PnDTnHnMnS) [--dry-run | --execute]
  every subcommand: [--bootstrap-server HOST:PORT,...] [--command-config FILE] [--output text|json]`;

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

/** kafka-consumer-groups --reset-offsets's plan: one row per partition with its new offset. */
export function formatOffsetResetPlan(groupId: string, planned: readonly PlannedOffset[]): string {
  return table(
    ['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'],
    planned.map((p) => [groupId, p.topic, String(p.partition), String(p.newOffset)]),
  );
}

/** `--topic orders` or `--topic orders:0,2` as Kafka's tool reads it. */
export function parseTopicPartitions(text: string): TopicPartitions {
  const at = text.indexOf(':');
  const topic = at < 0 ? text : text.slice(0, at);
  if (topic === '') throw new UsageError(`--topic expects TOPIC or TOPIC:P,P, got '${text}'`);
  if (at < 0) return { topic, partitions: null };
  const partitions = text
    .slice(at + 1)
    .split(',')
    .map((p) => {
      if (!/^\d+$/.test(p.trim())) throw new UsageError(`--topic expects TOPIC or TOPIC:P,P, got '${text}'`);
      return parseIntFlag(p.trim(), '--topic partition');
    });
  return { topic, partitions: [...new Set(partitions)].sort((a, b) => a - b) };
}

/** Java's Duration format as --by-duration takes it (PnDTnHnMnS), in milliseconds. */
export function parseIsoDuration(text: string): number {
  const m = /^P(?:(\d+)D)?(?:T(?=\d)(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d{1,3})?)S)?)?$/i.exec(text);
  if (m === null || text.length < 3 || /T$/i.test(text)) throw new UsageError(`--by-duration expects PnDTnHnMnS, got '${text}'`);
  const [, days, hours, minutes, seconds] = m;
  const ms =
    Number(days ?? 0) * 86_400_000 +
    Number(hours ?? 0) * 3_600_000 +
    Number(minutes ?? 0) * 60_000 +
    Math.round(Number(seconds ?? 0) * 1000);
  if (!Number.isSafeInteger(ms)) throw new UsageError(`--by-duration is too long: '${text}'`);
  return ms;
}

/** --to-datetime as Kafka's tool reads it: local time unless a zone (Z, +hh:mm, +hhmm) is given. */
export function parseDateTime(text: string): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)(Z|[+-]\d{2}:?\d{2})?$/i.exec(text);
  const zone = m?.[2]?.replace(/^([+-]\d{2})(\d{2})$/, '$1:$2') ?? '';
  const ms = m === null ? Number.NaN : Date.parse(`${m[1]}${zone.toUpperCase()}`);
  if (Number.isNaN(ms)) throw new UsageError(`--to-datetime expects YYYY-MM-DDTHH:mm:SS.sss with an optional zone, got '${text}'`);
  return ms;
}

/**
 * node's parseArgs takes `--shift-by -2` for a missing value followed by a flag; Kafka's users
 * write it so, hence a negative number right after --shift-by is joined to it.
 */
function joinNegativeShift(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1];
    if (args[i] === '--shift-by' && next !== undefined && /^-\d+$/.test(next)) {
      out.push(`--shift-by=${next}`);
      i++;
    } else {
      out.push(args[i]!);
    }
  }
  return out;
}

const RESET_TARGET_FLAGS = ['to-earliest', 'to-latest', 'to-offset', 'shift-by', 'to-datetime', 'by-duration'] as const;

/** The flags each subcommand accepts, beyond --bootstrap-server, --command-config, --output and --help. */
const SUBCOMMAND_FLAGS: Readonly<Record<string, readonly string[]>> = {
  list: [],
  describe: [],
  delete: [],
  'reset-offsets': ['group', 'topic', 'all-topics', ...RESET_TARGET_FLAGS, 'dry-run', 'execute'],
};

function resetTarget(v: Record<string, string | boolean | string[] | undefined>, nowMs: number): OffsetResetTarget {
  const given = RESET_TARGET_FLAGS.filter((f) => v[f] !== undefined);
  if (given.length !== 1) {
    throw new UsageError(
      "'groups reset-offsets' needs one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime, --by-duration",
    );
  }
  const value = String(v[given[0]!]);
  switch (given[0]!) {
    case 'to-earliest':
      return { kind: 'earliest' };
    case 'to-latest':
      return { kind: 'latest' };
    case 'to-offset':
      return { kind: 'offset', offset: parseIntFlag(value, '--to-offset') };
    case 'shift-by': {
      const by = Number(value);
      if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(by)) throw new UsageError(`--shift-by expects an integer, got '${value}'`);
      return { kind: 'shift', by };
    }
    case 'to-datetime':
      return { kind: 'timestamp', timestampMs: parseDateTime(value) };
    default:
      return { kind: 'timestamp', timestampMs: nowMs - parseIsoDuration(value) };
  }
}

function parseGroupsArgs(args: string[], nowMs: number) {
  const parsed = parseArgs({
    args: joinNegativeShift(args),
    allowPositionals: true,
    options: {
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      output: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      group: { type: 'string' },
      topic: { type: 'string', multiple: true },
      'all-topics': { type: 'boolean' },
      'to-earliest': { type: 'boolean' },
      'to-latest': { type: 'boolean' },
      'to-offset': { type: 'string' },
      'shift-by': { type: 'string' },
      'to-datetime': { type: 'string' },
      'by-duration': { type: 'string' },
      'dry-run': { type: 'boolean' },
      execute: { type: 'boolean' },
    },
  });
  const [action, ...groups] = parsed.positionals;
  const v = parsed.values;
  if (v.help === true) return { help: true as const };
  const allowed = action === undefined ? undefined : SUBCOMMAND_FLAGS[action];
  if (allowed === undefined) throw new UsageError(action === undefined ? 'missing subcommand' : `unknown subcommand '${action}'`);
  const common = new Set(['bootstrap-server', 'command-config', 'output', 'help']);
  for (const flag of Object.keys(v)) {
    if (!common.has(flag) && !allowed.includes(flag)) throw new UsageError(`--${flag} does not apply to 'groups ${action}'`);
  }
  if (action === 'list' && groups.length > 0) throw new UsageError("'groups list' takes no group");
  if (action === 'describe' && groups.length !== 1) throw new UsageError("'groups describe' takes one group");
  if (action === 'delete' && groups.length === 0) throw new UsageError("'groups delete' takes at least one group");
  const base = { help: false as const, ...clusterTarget(v), output: parseOutputFormat(v.output) };
  if (action !== 'reset-offsets') return { ...base, action: action as 'list' | 'describe' | 'delete', groups };
  if (groups.length > 0) throw new UsageError("'groups reset-offsets' names its group with --group");
  if (v.group === undefined || v.group === '') throw new UsageError("'groups reset-offsets' needs --group");
  if ((v.topic === undefined) === (v['all-topics'] !== true)) throw new UsageError("'groups reset-offsets' needs --topic or --all-topics");
  if (v['dry-run'] === true && v.execute === true) throw new UsageError('--dry-run and --execute exclude each other');
  return {
    ...base,
    action: 'reset-offsets' as const,
    groupId: v.group,
    scope: v.topic === undefined ? ('all' as const) : v.topic.map(parseTopicPartitions),
    target: resetTarget(v, nowMs),
    execute: v.execute === true,
    dryRunAsked: v['dry-run'] === true,
  };
}

type GroupsArgs = Exclude<ReturnType<typeof parseGroupsArgs>, { help: true }>;
type ResetArgs = Extract<GroupsArgs, { action: 'reset-offsets' }>;

function json(value: unknown): string {
  return JSON.stringify(value) + '\n';
}

async function deleteAction(cluster: KafkaCluster, groups: readonly string[], format: OutputFormat, io: Output): Promise<number> {
  const deletions = await deleteGroups(cluster, groups);
  const deleted = deletions.filter((d) => d.error === null).map((d) => d.groupId);
  if (format === 'json') {
    io.out(json(deletions.map((d) => ({ groupId: d.groupId, error: d.error?.error.name ?? null }))));
  } else if (deleted.length > 0) {
    io.out(`Deletion of requested consumer groups (${deleted.map((g) => `'${g}'`).join(', ')}) was successful.\n`);
  }
  for (const d of deletions) {
    if (d.error !== null) {
      io.err(
        `Error: Group '${d.groupId}' could not be deleted due to: ${d.error.error.name} (${d.error.error.message ?? d.error.message})\n`,
      );
    }
  }
  return deleted.length === deletions.length ? 0 : 1;
}

async function resetAction(cluster: KafkaCluster, a: ResetArgs, io: Output): Promise<number> {
  if (!a.execute && !a.dryRunAsked) {
    io.err('WARN: No action will be performed as the --execute option is missing. Add --dry-run to plan without this warning.\n');
  }
  const planned = await planOffsetReset(cluster, a.groupId, { scope: a.scope, target: a.target }, (done, total) => {
    if (total > OFFSET_RESET_CHUNK) io.err(`Planned ${done} of ${total} partitions\n`);
  });
  if (a.execute) {
    await commitOffsets(
      cluster,
      a.groupId,
      planned.map((p) => ({ topic: p.topic, partition: p.partition, offset: p.newOffset })),
    );
  }
  io.out(
    a.output === 'json' ? json({ groupId: a.groupId, executed: a.execute, offsets: planned }) : formatOffsetResetPlan(a.groupId, planned),
  );
  return 0;
}

async function runAction(cluster: KafkaCluster, a: GroupsArgs, io: Output): Promise<number> {
  switch (a.action) {
    case 'list': {
      const groups = await listGroups(cluster);
      io.out(a.output === 'json' ? json(groups) : formatGroupList(groups));
      return 0;
    }
    case 'describe': {
      const described = await describeGroup(cluster, a.groups[0]!);
      io.out(a.output === 'json' ? json(described) : formatGroupDescription(described));
      return 0;
    }
    case 'delete':
      return deleteAction(cluster, a.groups, a.output, io);
    default:
      return resetAction(cluster, a, io);
  }
}

/** Entry point of `sluice groups ...`; argv may start with the word `groups`. */
export async function runGroupsCommand(argv: string[], io: Output = stdio): Promise<number> {
  const args = argv[0] === 'groups' ? argv.slice(1) : argv;
  const parsed = parseOrUsage(io, 'groups', GROUPS_USAGE, () => parseGroupsArgs(args, Date.now()));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(GROUPS_USAGE + '\n');
    return 0;
  }
  return withCluster(io, parsed, 'sluice-groups', (cluster) => runAction(cluster, parsed, io));
}
