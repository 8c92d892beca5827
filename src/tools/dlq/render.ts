/**
 * `sluice dlq` output as text for a person: the inspect report and the replay's lines. JSON
 * output is the report and result objects themselves.
 */
import { positionOf } from './dead-letter.ts';
import type { Count, DeadLetterReport, Sample, TimedPosition } from './inspect.ts';
import { formatPreview, previewBytes } from './preview.ts';
import type { PlannedReplay, ReplayResult, SkippedRecord } from './replay.ts';

/** ISO-8601 UTC, or the raw number for a timestamp no date can show. */
export function formatTimestamp(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms` : date.toISOString();
}

function table(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function countTable(title: string, counts: readonly Count[]): string[] {
  return table(
    [title, 'COUNT'],
    counts.map((c) => [c.name, String(c.count)]),
  );
}

function timed(label: string, what: string, at: TimedPosition | null): string[] {
  return at === null ? [] : [`${label}: partition ${at.partition} offset ${at.offset}, ${what} ${formatTimestamp(at.timestampMs)}`];
}

function sampleLines(s: Sample): string[] {
  return [
    `partition ${s.partition} offset ${s.offset}, ${formatTimestamp(s.timestampMs)}`,
    `  key: ${formatPreview(s.key)}`,
    `  value: ${formatPreview(s.value)}`,
    ...Object.entries(s.headers).map(([k, v]) => `  ${k}: ${v ?? 'null'}`),
  ];
}

export function renderInspectReport(r: DeadLetterReport): string {
  const lines = [`Topic ${r.topic}: ${r.records} records in ${r.partitions.length} partitions`, `Dead letters: ${r.deadLetters}`];
  const stray = r.notDeadLetters;
  if (stray.first !== null) {
    lines.push(
      `Not a dead letter (no sluice.original.topic header): ${stray.count}, the first at partition ${stray.first.partition} offset ${stray.first.offset}`,
    );
  }
  if (r.deadLetters > 0) {
    lines.push('', ...countTable('ERROR-CLASS', r.byErrorClass));
    if (r.bySourceTopic.length > 1) lines.push('', ...countTable('SOURCE-TOPIC', r.bySourceTopic));
    else lines.push('', `Source topic: ${r.bySourceTopic[0]!.name}`);
    lines.push(
      '',
      ...timed('Oldest', 'dead-lettered', r.oldest),
      ...timed('Newest', 'dead-lettered', r.newest),
      ...timed('Oldest original', 'first written', r.oldestOriginal),
      ...timed('Newest original', 'first written', r.newestOriginal),
    );
  }
  if (r.samples.length > 0) {
    lines.push('', `Samples (${r.samples.length} of ${r.deadLetters}):`);
    for (const s of r.samples) lines.push(...sampleLines(s));
  }
  return lines.join('\n') + '\n';
}

export function renderPlanned(topic: string, p: PlannedReplay): string {
  const error = p.errorClass === null ? '' : `, ${p.errorClass}`;
  return `would replay ${positionOf({ topic, ...p })} to ${p.to}: key ${formatPreview(previewBytes(p.key))}${error}\n`;
}

export function renderSkipped(topic: string, s: SkippedRecord): string {
  return `skipped ${positionOf({ topic, ...s })}: ${s.reason}\n`;
}

/** `replayed N of M dead letters to T`, naming each target's share when there are several. */
export function renderReplaySummary(r: ReplayResult): string {
  const taken = r.targets.reduce((n, t) => n + t.count, 0);
  const verb = r.dryRun ? 'would replay' : 'replayed';
  const to =
    r.targets.length === 0
      ? ''
      : r.targets.length === 1
        ? ` to ${r.targets[0]!.name}`
        : ` to ${r.targets.map((t) => `${t.name} (${t.count})`).join(', ')}`;
  const skipped = r.skipped > 0 ? `; ${r.skipped} skipped` : '';
  const dry = r.dryRun ? ' (dry run: nothing was written)' : '';
  return `${verb} ${r.dryRun ? taken : r.replayed} of ${r.read} dead letters${to}${skipped}${dry}\n`;
}
