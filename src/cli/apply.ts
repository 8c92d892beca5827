/**
 * `sluice apply`: topics as code. Reads topic policies (src/tools/policy/policy.ts), compares
 * them with the cluster, prints the plan in the manner of `terraform plan` and applies it over
 * the Admin API, so it works against any Kafka-compatible cluster. A second run finds nothing
 * to do and exits 0.
 *
 *   sluice apply -f FILE [-f FILE ...] [--dry-run] [--allow-delete] [--allow-repartition] [--allow-reassign]
 *   sluice apply --export [--topic NAME ...]
 *
 * A policy the cluster cannot honour, or a change the flags do not allow, is refused with one
 * line per reason and exit 1, before anything is applied.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { KafkaCluster } from '../client/cluster.ts';
import { executePlan } from '../tools/policy/apply.ts';
import { exportPolicies, exportText } from '../tools/policy/export.ts';
import { type Plan, hasChanges, planApply } from '../tools/policy/plan.ts';
import { type PolicyError, type SourcedPolicy, duplicateNames, formatPolicyError, parsePolicyFile } from '../tools/policy/policy.ts';
import { renderPlan } from '../tools/policy/render.ts';
import { readClusterState } from '../tools/policy/state.ts';
import { POLICY_STORE_TOPIC } from '../tools/policy/store.ts';
import { UsageError, clusterTarget, parseOrUsage, stdio, withCluster, type Output } from './output.ts';

export const APPLY_USAGE = `usage:
  sluice apply -f FILE [-f FILE ...] [--dry-run] [--allow-delete] [--allow-repartition] [--allow-reassign]
  sluice apply --export [--topic NAME ...]
  both: [--bootstrap-server HOST:PORT,...] [--command-config FILE]
  FILE holds topic policies, YAML or JSON: {topic_policy: {...}}, {topic_policies: [...]}, a list, or several documents.
  --dry-run            print the plan, change nothing
  --allow-delete       delete topics apply manages (in ${POLICY_STORE_TOPIC}) that no FILE names any more
  --allow-repartition  add partitions (keyed records then map to other partitions)
  --allow-reassign     change replication factors by reassigning partitions
  --export             print the policies of existing topics (all but __*, or each --topic)`;

function parseApplyArgs(args: string[]) {
  const { values: v, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      file: { type: 'string', short: 'f', multiple: true },
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      'dry-run': { type: 'boolean' },
      'allow-delete': { type: 'boolean' },
      'allow-repartition': { type: 'boolean' },
      'allow-reassign': { type: 'boolean' },
      export: { type: 'boolean' },
      topic: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help === true) return { help: true as const };
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (policy files go after -f)`);
  const exporting = v.export === true;
  if (exporting) {
    for (const flag of ['file', 'dry-run', 'allow-delete', 'allow-repartition', 'allow-reassign'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} does not go with --export`);
    }
  } else {
    if (v.file === undefined) throw new UsageError('give the policy file with -f FILE (or --export)');
    if (v.topic !== undefined) throw new UsageError('--topic goes with --export');
  }
  return {
    help: false as const,
    exporting,
    files: v.file ?? [],
    topics: v.topic ?? [],
    ...clusterTarget(v),
    dryRun: v['dry-run'] === true,
    options: {
      allowDelete: v['allow-delete'] === true,
      allowRepartition: v['allow-repartition'] === true,
      allowReassign: v['allow-reassign'] === true,
    },
  };
}

type ApplyArgs = Exclude<ReturnType<typeof parseApplyArgs>, { help: true }>;

/** Every policy of every file, or every reason one of them is refused. */
async function readPolicies(files: readonly string[]): Promise<{ policies: SourcedPolicy[]; errors: PolicyError[] }> {
  const policies: SourcedPolicy[] = [];
  const errors: PolicyError[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      errors.push({ file, topic: 'file', reason: `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` });
      continue;
    }
    const parsed = parsePolicyFile(file, text);
    policies.push(...parsed.policies);
    errors.push(...parsed.errors);
  }
  errors.push(...duplicateNames(policies));
  return { policies, errors };
}

function printErrors(io: Output, errors: readonly PolicyError[]): number {
  for (const e of errors) io.err(formatPolicyError(e) + '\n');
  return 1;
}

async function plan(cluster: KafkaCluster, a: ApplyArgs, policies: SourcedPolicy[], io: Output): Promise<number> {
  const { state, store } = await readClusterState(
    cluster,
    policies.map((p) => p.policy.name),
  );
  if (store.skipped.length > 0) {
    io.err(
      `sluice apply: warning: ${POLICY_STORE_TOPIC} has records that are not policies (offsets ${store.skipped.join(', ')}): ignored\n`,
    );
  }
  const { errors, plan: planned } = planApply(policies, state, a.options);
  if (planned === null) return printErrors(io, errors);
  io.out(renderPlan(planned).join('\n') + '\n');
  if (planned.refusals.length > 0) {
    printErrors(io, planned.refusals);
    io.err('sluice apply: nothing was applied\n');
    return 1;
  }
  if (!hasChanges(planned)) return 0;
  if (a.dryRun) {
    io.out('Dry run: nothing was applied.\n');
    return 0;
  }
  return apply(cluster, planned, state.brokers.length, io);
}

async function apply(cluster: KafkaCluster, planned: Plan, brokerCount: number, io: Output): Promise<number> {
  io.out('\n');
  const done = await executePlan(cluster, planned, brokerCount, (line) => io.out(line + '\n'));
  io.out(`Apply complete: ${done.create} created, ${done.change} changed, ${done.delete} deleted.\n`);
  return 0;
}

/** Entry point of `sluice apply ...`; argv is what follows the word `apply`. */
export async function runApplyCommand(argv: string[], io: Output = stdio): Promise<number> {
  const parsed = parseOrUsage(io, 'apply', APPLY_USAGE, () => parseApplyArgs(argv));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(APPLY_USAGE + '\n');
    return 0;
  }
  if (parsed.exporting) {
    return withCluster(io, parsed, 'sluice-apply', async (cluster) => {
      io.out(exportText(await exportPolicies(cluster, parsed.topics)));
      return 0;
    });
  }
  const { policies, errors } = await readPolicies(parsed.files);
  if (errors.length > 0) return printErrors(io, errors);
  return withCluster(io, parsed, 'sluice-apply', (cluster) => plan(cluster, parsed, policies, io));
}
