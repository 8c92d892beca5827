/**
 * `sluice dlq`: dead-letter topics as the retry library (src/tools/retry) writes them, over
 * the wire only, so it works against any Kafka-compatible cluster.
 *
 *   sluice dlq inspect TOPIC [--samples N]
 *   sluice dlq replay TOPIC [--to TOPIC] [--filter FIELD=VALUE | FIELD~=TEXT ...]
 *                           [--partition P [--from-offset O] [--to-offset O]] [--dry-run]
 *
 * Both read the topic as it was when they began. Exit codes: 0 ok, 1 on errors (an unknown
 * topic, or a replay that skipped records it could not place), 2 on usage errors.
 */
import { parseArgs } from 'node:util';
import type { KafkaCluster } from '../client/cluster.ts';
import { FilterSyntaxError, RecordFilter } from '../tools/dlq/filter.ts';
import { DEFAULT_SAMPLES, inspectDeadLetters } from '../tools/dlq/inspect.ts';
import { previewBytes } from '../tools/dlq/preview.ts';
import { WHOLE_TOPIC, type ReadScope } from '../tools/dlq/read.ts';
import { renderInspectReport, renderPlanned, renderReplaySummary, renderSkipped } from '../tools/dlq/render.ts';
import { type ReplayOptions, type SkippedRecord, replayDeadLetters } from '../tools/dlq/replay.ts';
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

export const DLQ_USAGE = `usage:
  sluice dlq inspect TOPIC [--samples N]
  sluice dlq replay TOPIC [--to TOPIC] [--filter FIELD=VALUE | --filter FIELD~=TEXT ...]
                          [--partition P [--from-offset O] [--to-offset O]] [--dry-run]
  both: [--bootstrap-server HOST:PORT,...] [--command-config FILE] [--output text|json]
  inspect  counts by error class and source topic, the oldest and newest dead letters, and
           --samples N (default ${DEFAULT_SAMPLES}) samples.
  replay   re-publishes the matching dead letters, in partition/offset order, to their
           sluice.original.topic (or --to TOPIC, which records without that header need)
           with their key, value and own headers, plus sluice.replay.count and
           sluice.replayed.from; the key chooses the partition; acks=all.
           --filter fields: error (class), message, source (original topic), partition
           (original partition), key. FIELD=VALUE matches exactly, FIELD~=TEXT when the field
           contains TEXT. Different fields must all match; repeats of a field match any.
           --partition P with --from-offset/--to-offset (inclusive) limits what is read.
           Dead letters are neither deleted nor marked: replaying again publishes them again.`;

const ACTIONS = ['inspect', 'replay'] as const;
const REPLAY_FLAGS = ['to', 'filter', 'partition', 'from-offset', 'to-offset', 'dry-run'] as const;

function readScope(partition?: string, fromOffset?: string, toOffset?: string): ReadScope {
  if (partition === undefined) {
    if (fromOffset !== undefined || toOffset !== undefined) throw new UsageError('--from-offset and --to-offset need --partition');
    return WHOLE_TOPIC;
  }
  const scope = {
    partition: parseIntFlag(partition, '--partition'),
    fromOffset: fromOffset === undefined ? null : parseIntFlag(fromOffset, '--from-offset'),
    toOffset: toOffset === undefined ? null : parseIntFlag(toOffset, '--to-offset'),
  };
  if (scope.fromOffset !== null && scope.toOffset !== null && scope.fromOffset > scope.toOffset) {
    throw new UsageError('--from-offset is past --to-offset');
  }
  return scope;
}

function recordFilter(texts: readonly string[]): RecordFilter {
  try {
    return RecordFilter.parse(texts);
  } catch (err) {
    if (err instanceof FilterSyntaxError) throw new UsageError(err.message);
    throw err;
  }
}

function parseDlqArgs(args: string[]) {
  const { values: v, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      output: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      samples: { type: 'string' },
      to: { type: 'string' },
      filter: { type: 'string', multiple: true },
      partition: { type: 'string' },
      'from-offset': { type: 'string' },
      'to-offset': { type: 'string' },
      'dry-run': { type: 'boolean' },
    },
  });
  if (v.help === true) return { help: true as const };
  const [action, topic, ...extra] = positionals;
  const known = ACTIONS.find((a) => a === action);
  if (known === undefined) throw new UsageError(action === undefined ? 'missing subcommand' : `unknown subcommand '${action}'`);
  if (topic === undefined || topic === '' || extra.length > 0) throw new UsageError(`'dlq ${known}' takes one topic`);
  const base = { help: false as const, topic, ...clusterTarget(v), output: parseOutputFormat(v.output) };
  if (known === 'inspect') {
    for (const flag of REPLAY_FLAGS) if (v[flag] !== undefined) throw new UsageError(`--${flag} does not apply to 'dlq inspect'`);
    return { ...base, action: known, samples: v.samples === undefined ? DEFAULT_SAMPLES : parseIntFlag(v.samples, '--samples') };
  }
  if (v.samples !== undefined) throw new UsageError("--samples does not apply to 'dlq replay'");
  if (v.to === '') throw new UsageError('--to names no topic');
  return {
    ...base,
    action: known,
    replay: {
      topic,
      to: v.to ?? null,
      filter: recordFilter(v.filter ?? []),
      scope: readScope(v.partition, v['from-offset'], v['to-offset']),
      dryRun: v['dry-run'] === true,
    } satisfies ReplayOptions,
  };
}

type DlqArgs = Exclude<ReturnType<typeof parseDlqArgs>, { help: true }>;

function json(value: unknown): string {
  return JSON.stringify(value) + '\n';
}

async function replay(cluster: KafkaCluster, o: ReplayOptions, output: OutputFormat, io: Output): Promise<number> {
  const planned: unknown[] = [];
  const skipped: SkippedRecord[] = [];
  const result = await replayDeadLetters(cluster, o, {
    planned: (p) => {
      if (!o.dryRun) return;
      if (output === 'json')
        planned.push({ partition: p.partition, offset: p.offset, key: previewBytes(p.key), errorClass: p.errorClass, to: p.to });
      else io.out(renderPlanned(o.topic, p));
    },
    skipped: (s) => {
      if (output === 'json') skipped.push(s);
      else io.err(renderSkipped(o.topic, s));
    },
  });
  if (output === 'json') io.out(json({ ...result, ...(o.dryRun ? { records: planned } : {}), skippedRecords: skipped }));
  else io.out(renderReplaySummary(result));
  return result.skipped > 0 ? 1 : 0;
}

async function runAction(cluster: KafkaCluster, a: DlqArgs, io: Output): Promise<number> {
  if (a.action === 'replay') return replay(cluster, a.replay, a.output, io);
  const report = await inspectDeadLetters(cluster, a.topic, a.samples);
  io.out(a.output === 'json' ? json(report) : renderInspectReport(report));
  return 0;
}

/** Entry point of `sluice dlq ...`: argv after the word `dlq` (a leading `dlq` is taken off too). */
export async function runDlqCommand(argv: string[], io: Output = stdio): Promise<number> {
  const args = argv[0] === 'dlq' ? argv.slice(1) : argv;
  const parsed = parseOrUsage(io, 'dlq', DLQ_USAGE, () => parseDlqArgs(args));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(DLQ_USAGE + '\n');
    return 0;
  }
  return withCluster(io, parsed, 'sluice-dlq', (cluster) => runAction(cluster, parsed, io));
}
