/**
 * `sluice configs`: Kafka's kafka-configs for topics and brokers, over the wire only, so it
 * works against any Kafka-compatible cluster.
 *
 *   sluice configs describe --entity-type topics|brokers (--entity-name NAME | --entity-default) [--all]
 *   sluice configs alter --entity-type topics|brokers (--entity-name NAME | --entity-default)
 *                        [--add-config k=v,k2=[a,b]] [--delete-config k,k2]
 *
 * Brokers are named by id; --entity-default is the cluster-wide default every broker without
 * its own value takes. Without --all, describe shows only what is set on the entity itself.
 * Every subcommand takes --bootstrap-server (default 127.0.0.1:9092), --command-config (the
 * client properties of a secured listener, see command-config.ts) and --output text|json.
 */
import { parseArgs } from 'node:util';
import type { KafkaCluster } from '../client/cluster.ts';
import { alterConfigs, describeConfigs, type ConfigEntry, type ConfigResource } from '../client/configs.ts';
import { UsageError, clusterTarget, parseKeyValue, parseOrUsage, parseOutputFormat, stdio, withCluster, type Output } from './output.ts';

export const CONFIGS_USAGE = `usage:
  sluice configs describe --entity-type topics|brokers (--entity-name NAME | --entity-default) [--all]
  sluice configs alter --entity-type topics|brokers (--entity-name NAME | --entity-default)
                       [--add-config name=value,name=[v1,v2],...] [--delete-config name,...]
  every subcommand: [--bootstrap-server HOST:PORT,...] [--command-config FILE] [--output text|json]`;

/**
 * `--add-config 'a=1,b=[x,y],c=3'` as kafka-configs reads it: pairs split at commas outside
 * square brackets, a bracketed value being a list whose brackets are dropped.
 */
export function parseConfigsToAdd(text: string): [string, string][] {
  const pairs: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '[') depth++;
    else if (ch === ']') depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      pairs.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  pairs.push(current);
  return pairs
    .filter((p) => p.trim() !== '')
    .map((p) => {
      const [name, value] = parseKeyValue(p.trim(), '--add-config');
      return [name, /^\[.*\]$/s.test(value) ? value.slice(1, -1) : value];
    });
}

/** The header kafka-configs prints above an entity's configs. */
function describeHeader(resource: ConfigResource, all: boolean): string {
  if (resource.type === 'broker' && resource.name === '') return 'Default configs for brokers in the cluster are:';
  return `${all ? 'All' : 'Dynamic'} configs for ${resource.type} ${resource.name} are:`;
}

/** kafka-configs --describe's layout: one `name=value sensitive=... synonyms={...}` line per config. */
export function formatConfigs(resource: ConfigResource, all: boolean, entries: readonly ConfigEntry[]): string {
  const lines = entries.map((e) => {
    const synonyms = e.synonyms.map((s) => `${s.source}:${s.name}=${s.value}`).join(', ');
    return `  ${e.name}=${e.value} sensitive=${e.sensitive} synonyms={${synonyms}}\n`;
  });
  return `${describeHeader(resource, all)}\n${lines.join('')}`;
}

function parseConfigsArgs(args: string[]) {
  const parsed = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      output: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      'entity-type': { type: 'string' },
      'entity-name': { type: 'string' },
      'entity-default': { type: 'boolean' },
      all: { type: 'boolean' },
      'add-config': { type: 'string', multiple: true },
      'delete-config': { type: 'string', multiple: true },
    },
  });
  const [action, ...extra] = parsed.positionals;
  const v = parsed.values;
  if (v.help === true) return { help: true as const };
  if (action !== 'describe' && action !== 'alter') {
    throw new UsageError(action === undefined ? 'missing subcommand' : `unknown subcommand '${action}'`);
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const entityType = v['entity-type'];
  if (entityType !== 'topics' && entityType !== 'brokers') throw new UsageError('--entity-type must be topics or brokers');
  if ((v['entity-name'] === undefined) === (v['entity-default'] !== true)) {
    throw new UsageError('give one of --entity-name and --entity-default');
  }
  if (entityType === 'topics' && v['entity-default'] === true) throw new UsageError('--entity-default applies to brokers only');
  if (action === 'describe' && (v['add-config'] !== undefined || v['delete-config'] !== undefined)) {
    throw new UsageError("--add-config and --delete-config apply to 'configs alter'");
  }
  if (action === 'alter' && v.all === true) throw new UsageError("--all applies to 'configs describe'");
  const set = (v['add-config'] ?? []).flatMap(parseConfigsToAdd);
  const deleted = (v['delete-config'] ?? []).flatMap((d) => d.split(',').map((k) => k.trim())).filter((k) => k !== '');
  if (action === 'alter' && set.length === 0 && deleted.length === 0) {
    throw new UsageError("'configs alter' needs --add-config or --delete-config");
  }
  const resource: ConfigResource = { type: entityType === 'topics' ? 'topic' : 'broker', name: v['entity-name'] ?? '' };
  return {
    help: false as const,
    action,
    resource,
    all: v.all === true,
    set,
    deleted,
    ...clusterTarget(v),
    output: parseOutputFormat(v.output),
  };
}

type ConfigsArgs = Exclude<ReturnType<typeof parseConfigsArgs>, { help: true }>;

function json(value: unknown): string {
  return JSON.stringify(value) + '\n';
}

async function runAction(cluster: KafkaCluster, a: ConfigsArgs, io: Output): Promise<number> {
  const { resource } = a;
  if (a.action === 'describe') {
    const entries = await describeConfigs(cluster, resource, a.all);
    io.out(a.output === 'json' ? json(entries) : formatConfigs(resource, a.all, entries));
    return 0;
  }
  await alterConfigs(cluster, resource, { set: a.set, delete: a.deleted });
  if (a.output === 'json') {
    io.out(json({ entityType: resource.type, entityName: resource.name, set: Object.fromEntries(a.set), deleted: a.deleted }));
  } else if (resource.type === 'broker' && resource.name === '') {
    io.out('Completed updating default config for brokers in the cluster.\n');
  } else {
    io.out(`Completed updating config for ${resource.type} ${resource.name}.\n`);
  }
  return 0;
}

/** Entry point of `sluice configs ...`; argv may start with the word `configs`. */
export async function runConfigsCommand(argv: string[], io: Output = stdio): Promise<number> {
  const args = argv[0] === 'configs' ? argv.slice(1) : argv;
  const parsed = parseOrUsage(io, 'configs', CONFIGS_USAGE, () => parseConfigsArgs(args));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(CONFIGS_USAGE + '\n');
    return 0;
  }
  return withCluster(io, parsed, 'sluice-configs', (cluster) => runAction(cluster, parsed, io));
}
