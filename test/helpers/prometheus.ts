/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), for tests that
 * scrape /metrics: it throws on any line a Prometheus server would refuse (a sample without a
 * TYPE, a malformed label set or value, a family split in two, histogram buckets that are not
 * cumulative or miss +Inf) and returns the samples for lookups.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  readonly types: ReadonlyMap<string, string>;
  /** The one sample of `name` with exactly these labels, or undefined. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** Every sample of `name` whose labels include `labels`. */
  all(name: string, labels?: Record<string, string>): Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** The family a sample belongs to: histograms and summaries add suffixes to their name. */
function familyOf(name: string, types: ReadonlyMap<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const type = types.get(base);
    if (type === 'histogram' || (type === 'summary' && suffix !== '_bucket')) return base;
  }
  return undefined;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`malformed labels in: ${line}`);
    const name = text.slice(i, eq).trim();
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name '${name}' in: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value in: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; ; j++) {
      const c = text[j];
      if (c === undefined) throw new Error(`unterminated label value in: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const next = text[++j];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape in: ${line}`);
      } else {
        value += c;
      }
    }
    if (name in labels) throw new Error(`label ${name} twice in: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (i < text.length) throw new Error(`expected , after a label in: ${line}`);
  }
  return labels;
}

/** As Prometheus reads values (Go's ParseFloat): NaN and Inf in any case. */
function parseValue(text: string, line: string): number {
  const special = text.toLowerCase();
  if (special === '+inf' || special === 'inf') return Number.POSITIVE_INFINITY;
  if (special === '-inf') return Number.NEGATIVE_INFINITY;
  if (special === 'nan') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value '${text}' in: ${line}`);
  return Number(text);
}

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const finished = new Set<string>();
  let current: string | undefined;
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (m === null) continue;
      const [, kind, name, rest] = m;
      if (!NAME.test(name!)) throw new Error(`bad metric name in: ${line}`);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest!)) throw new Error(`unknown type in: ${line}`);
        if (types.has(name!)) throw new Error(`second TYPE for ${name}`);
        types.set(name!, rest!);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (m === null) throw new Error(`malformed sample line: ${line}`);
    const [, name, labelText, valueText] = m;
    const family = familyOf(name!, types);
    if (family === undefined) throw new Error(`sample of ${name} without a TYPE before it`);
    if (family !== current) {
      if (finished.has(family)) throw new Error(`samples of ${family} are not together`);
      if (current !== undefined) finished.add(current);
      current = family;
    }
    samples.push({ name: name!, labels: labelText ? parseLabels(labelText, line) : {}, value: parseValue(valueText!, line) });
  }
  checkHistograms(samples, types);
  const matches = (s: Sample, labels: Record<string, string>) => Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = samples.filter(
        (s) => s.name === name && matches(s, labels) && Object.keys(s.labels).length === Object.keys(labels).length,
      );
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
    all(name, labels = {}) {
      return samples.filter((s) => s.name === name && matches(s, labels));
    },
  };
}

/** Buckets cumulative, ending with le="+Inf" equal to _count, per label set. */
function checkHistograms(samples: readonly Sample[], types: ReadonlyMap<string, string>): void {
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const series = new Map<string, { buckets: [number, number][]; count?: number }>();
    const keyOf = (labels: Readonly<Record<string, string>>) =>
      JSON.stringify(
        Object.entries(labels)
          .filter(([k]) => k !== 'le')
          .sort(([a], [b]) => a.localeCompare(b)),
      );
    for (const s of samples) {
      if (s.name !== `${family}_bucket` && s.name !== `${family}_count`) continue;
      const key = keyOf(s.labels);
      const entry = series.get(key) ?? { buckets: [] };
      series.set(key, entry);
      if (s.name.endsWith('_count')) entry.count = s.value;
      else {
        const le = s.labels.le;
        if (le === undefined) throw new Error(`${family} bucket without le`);
        entry.buckets.push([parseValue(le, le), s.value]);
      }
    }
    for (const [key, { buckets, count }] of series) {
      const last = buckets.at(-1);
      if (last === undefined || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`${family}${key}: no +Inf bucket`);
      for (let i = 1; i < buckets.length; i++) {
        if (buckets[i]![0] <= buckets[i - 1]![0]) throw new Error(`${family}${key}: buckets out of order`);
        if (buckets[i]![1] < buckets[i - 1]![1]) throw new Error(`${family}${key}: buckets not cumulative`);
      }
      if (last[1] !== count) throw new Error(`${family}${key}: +Inf bucket ${last[1]} but count ${count}`);
    }
  }
}
