/**
 * `sluice topics`: Kafka's kafka-topics (and kafka-configs for topics) over the wire, so it
 * works against any Kafka-compatible cluster.
 *
 *   sluice topics list [--include-internal]
 *   sluice topics describe [TOPIC...]
 *   sluice topics create TOPIC [--partitions N] [--replication-factor R] [--config k=v ...] [--if-not-exists]
 *   sluice topics delete TOPIC... [--if-exists]
 *   sluice topics alter-config TOPIC [--set k=v ...] [--delete k ...] [--partitions N]
 *
 * Every subcommand takes --bootstrap-server (default 127.0.0.1:9092), --command-config (the
 * client properties of a secured listener, see command-config.ts) and --output text|json.
 * Describe also shows what `sluice apply` keeps for a topic (its key and value schemas and
 * delivery contract, from the policy store), as `policy` in JSON.
 * Create and delete wait (briefly) until the cluster's metadata shows the change, so that a
 * script can produce to a topic right after creating it.
 */
import { parseArgs } from 'node:util';
import type { KafkaCluster } from '../client/cluster.ts';
import {
  alterTopicConfigs,
  createTopic,
  deleteTopics,
  describeTopics,
  increasePartitions,
  listTopics,
  type TopicDescription,
} from '../client/topics.ts';
import type { StoredKey, TopicPolicy } from '../tools/policy/policy.ts';
import { readPolicyStore } from '../tools/policy/store.ts';
import {
  UsageError,
  clusterTarget,
  parseIntFlag,
  parseKeyValue,
  parseOrUsage,
  parseOutputFormat,
  stdio,
  withCluster,
  type Output,
  type OutputFormat,
} from './output.ts';

export const TOPICS_USAGE = `usage:
  sluice topics list [--include-internal] [--output text|json]
  sluice topics describe [TOPIC...] [--output text|json]
  sluice topics create TOPIC [--partitions N] [--replication-factor R] [--config name=value ...] [--if-not-exists]
  sluice topics delete TOPIC... [--if-exists]
  sluice topics alter-config TOPIC [--set name=value ...] [--delete name ...] [--partitions N]
  every subcommand: [--bootstrap-server HOST:PORT,...] [--command-config FILE] [--output text|json]`;

/** A policy's key and value schemas and delivery contract, as describe's header line names them. */
const POLICY_FIELDS: readonly (readonly [StoredKey, string])[] = [
  ['key_schema', 'KeySchema'],
  ['value_schema', 'ValueSchema'],
  ['delivery_contract', 'DeliveryContract'],
];

/**
 * kafka-topics --describe's layout (tab-separated fields), plus each partition's log start and
 * end offsets, and what `sluice apply` stored for the topic (schemas, delivery contract).
 */
export function formatTopicDescriptions(
  topics: readonly TopicDescription[],
  policies: ReadonlyMap<string, TopicPolicy> = new Map(),
): string {
  const ids = (nodes: readonly number[]): string => nodes.join(',');
  const elr = (nodes: readonly number[] | null): string => (nodes === null ? 'N/A' : ids(nodes));
  const offset = (n: number | null): string => (n === null ? '-' : String(n));
  let text = '';
  for (const t of topics) {
    const configs = Object.entries(t.configs)
      .map(([k, v]) => `${k}=${v ?? '<sensitive>'}`)
      .join(',');
    const policy = policies.get(t.name);
    const stored = POLICY_FIELDS.filter(([key]) => policy?.[key] !== undefined)
      .map(([key, label]) => `\t${label}: ${policy![key]}`)
      .join('');
    text += `Topic: ${t.name}\tTopicId: ${t.topicId}\tPartitionCount: ${t.partitionCount}\tReplicationFactor: ${t.replicationFactor}\tConfigs: ${configs}${stored}\n`;
    for (const p of t.partitions) {
      text +=
        `\tTopic: ${t.name}\tPartition: ${p.partition}\tLeader: ${p.leader ?? 'none'}\tReplicas: ${ids(p.replicas)}\tIsr: ${ids(p.isr)}` +
        `\tElr: ${elr(p.elr)}\tLastKnownElr: ${elr(p.lastKnownElr)}` +
        `\tOffline: ${ids(p.offline)}\tLogStartOffset: ${offset(p.logStartOffset)}\tLogEndOffset: ${offset(p.logEndOffset)}\n`;
    }
  }
  return text;
}

/** The flags each subcommand accepts, beyond --bootstrap-server, --command-config, --output and --help. */
const SUBCOMMAND_FLAGS: Readonly<Record<string, readonly string[]>> = {
  list: ['include-internal'],
  describe: [],
  create: ['partitions', 'replication-factor', 'config', 'if-not-exists'],
  delete: ['if-exists'],
  'alter-config': ['set', 'delete', 'partitions'],
};

function parseTopicsArgs(args: string[]) {
  const parsed = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      output: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      'include-internal': { type: 'boolean' },
      partitions: { type: 'string' },
      'replication-factor': { type: 'string' },
      config: { type: 'string', multiple: true },
      'if-not-exists': { type: 'boolean' },
      'if-exists': { type: 'boolean' },
      set: { type: 'string', multiple: true },
      delete: { type: 'string', multiple: true },
    },
  });
  const [action, ...topics] = parsed.positionals;
  const v = parsed.values;
  if (v.help === true) return { help: true as const };
  const allowed = action === undefined ? undefined : SUBCOMMAND_FLAGS[action];
  if (allowed === undefined) throw new UsageError(action === undefined ? 'missing subcommand' : `unknown subcommand '${action}'`);
  const common = new Set(['bootstrap-server', 'command-config', 'output', 'help']);
  for (const flag of Object.keys(v)) {
    if (!common.has(flag) && !allowed.includes(flag)) throw new UsageError(`--${flag} does not apply to 'topics ${action}'`);
  }
  const needsOne = action === 'create' || action === 'alter-config';
  if (needsOne && topics.length !== 1) throw new UsageError(`'topics ${action}' takes one topic`);
  if (action === 'delete' && topics.length === 0) throw new UsageError("'topics delete' takes at least one topic");
  if (action === 'list' && topics.length > 0) throw new UsageError("'topics list' takes no topic");
  const partitions = v.partitions === undefined ? undefined : parseIntFlag(v.partitions, '--partitions', 1);
  if (action === 'alter-config' && v.set === undefined && v.delete === undefined && partitions === undefined) {
    throw new UsageError("'topics alter-config' needs --set, --delete or --partitions");
  }
  return {
    help: false as const,
    action,
    topics,
    ...clusterTarget(v),
    output: parseOutputFormat(v.output),
    includeInternal: v['include-internal'] === true,
    partitions,
    replicationFactor: v['replication-factor'] === undefined ? undefined : parseIntFlag(v['replication-factor'], '--replication-factor', 1),
    configs: (v.config ?? []).map((c) => parseKeyValue(c, '--config')),
    set: (v.set ?? []).map((c) => parseKeyValue(c, '--set')),
    delete: v.delete ?? [],
    ifNotExists: v['if-not-exists'] === true,
    ifExists: v['if-exists'] === true,
  };
}

type TopicsArgs = Exclude<ReturnType<typeof parseTopicsArgs>, { help: true }>;

function json(value: unknown): string {
  return JSON.stringify(value) + '\n';
}

async function runAction(cluster: KafkaCluster, a: TopicsArgs, io: Output): Promise<number> {
  const format: OutputFormat = a.output;
  const [topic] = a.topics;
  switch (a.action) {
    case 'list': {
      const topics = await listTopics(cluster, a.includeInternal);
      io.out(format === 'json' ? json(topics) : topics.map((t) => `${t.name}\n`).join(''));
      return 0;
    }
    case 'describe': {
      const names = a.topics.length > 0 ? a.topics : (await listTopics(cluster, false)).map((t) => t.name);
      const topics = names.length > 0 ? await describeTopics(cluster, names) : [];
      const { policies } = await readPolicyStore(cluster);
      io.out(
        format === 'json'
          ? json(topics.map((t) => ({ ...t, policy: policies.get(t.name) ?? null })))
          : formatTopicDescriptions(topics, policies),
      );
      return 0;
    }
    case 'create': {
      const created = await createTopic(
        cluster,
        { name: topic!, numPartitions: a.partitions ?? -1, replicationFactor: a.replicationFactor ?? -1, configs: a.configs },
        a.ifNotExists,
      );
      if (format === 'json') io.out(json({ topic, created }));
      else if (created) io.out(`Created topic ${topic}.\n`);
      return 0;
    }
    case 'delete': {
      const deleted = await deleteTopics(cluster, a.topics, a.ifExists);
      io.out(format === 'json' ? json({ deleted }) : deleted.map((t) => `Deleted topic ${t}.\n`).join(''));
      return 0;
    }
    default: {
      if (a.set.length > 0 || a.delete.length > 0) await alterTopicConfigs(cluster, topic!, { set: a.set, delete: a.delete });
      if (a.partitions !== undefined) await increasePartitions(cluster, topic!, a.partitions);
      if (format === 'json') io.out(json({ topic, set: Object.fromEntries(a.set), deleted: a.delete, partitions: a.partitions ?? null }));
      else io.out(`Completed updating topic ${topic}.\n`);
      return 0;
    }
  }
}

/** Entry point of `sluice topics ...`; argv may start with the word `topics`. */
export async function runTopicsCommand(argv: string[], io: Output = stdio): Promise<number> {
  const args = argv[0] === 'topics' ? argv.slice(1) : argv;
  const parsed = parseOrUsage(io, 'topics', TOPICS_USAGE, () => parseTopicsArgs(args));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(TOPICS_USAGE + '\n');
    return 0;
  }
  return withCluster(io, parsed, 'sluice-topics', (cluster) => runAction(cluster, parsed, io));
}
