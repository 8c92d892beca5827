/**
 * Which dead letters `sluice dlq replay --filter` takes. A filter is FIELD=VALUE (the field is
 * exactly VALUE) or FIELD~=TEXT (the field contains TEXT), on one of:
 *
 *   error      the error class (sluice.error.class)
 *   message    the error message (sluice.error.message)
 *   source     the original topic (sluice.original.topic)
 *   partition  the original partition (sluice.original.partition); `=` only
 *   key        the record key, as UTF-8 text
 *
 * Filters on different fields must all match; filters on the same field match when any does
 * (`--filter error=A --filter error=B --filter source=orders`: A or B, from orders). A record
 * lacking the field matches no filter on it.
 */
import type { ConsumerRecord } from '../../client/records.ts';
import type { DeadLetter } from './dead-letter.ts';

export const FILTER_FIELDS = ['error', 'message', 'source', 'partition', 'key'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];

export interface Filter {
  field: FilterField;
  op: 'equals' | 'contains';
  value: string;
}

export class FilterSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FilterSyntaxError';
  }
}

const FILTER = /^([a-z]+)(~?=)([\s\S]*)$/;

export function parseFilter(text: string): Filter {
  const m = FILTER.exec(text);
  if (m === null) throw new FilterSyntaxError(`--filter expects FIELD=VALUE or FIELD~=TEXT, got '${text}'`);
  const [, name, operator, value] = m;
  const field = FILTER_FIELDS.find((f) => f === name);
  if (field === undefined) throw new FilterSyntaxError(`--filter: unknown field '${name}' (${FILTER_FIELDS.join(', ')})`);
  const op = operator === '~=' ? 'contains' : 'equals';
  if (field === 'partition' && (op === 'contains' || !/^\d{1,9}$/.test(value!))) {
    throw new FilterSyntaxError(`--filter partition=N expects a partition number, got '${text}'`);
  }
  return { field, op, value: value! };
}

function textMatches(f: Filter, actual: string | null): boolean {
  if (actual === null) return false;
  return f.op === 'equals' ? actual === f.value : actual.includes(f.value);
}

function keyMatches(f: Filter, key: Buffer | null): boolean {
  if (key === null) return false;
  const wanted = Buffer.from(f.value, 'utf8');
  return f.op === 'equals' ? key.equals(wanted) : key.includes(wanted);
}

function filterMatches(f: Filter, record: Pick<ConsumerRecord, 'key'>, d: DeadLetter): boolean {
  switch (f.field) {
    case 'error':
      return textMatches(f, d.errorClass);
    case 'message':
      return textMatches(f, d.errorMessage);
    case 'source':
      return textMatches(f, d.originalTopic);
    case 'partition':
      return d.originalPartition !== null && d.originalPartition === Number(f.value);
    case 'key':
      return keyMatches(f, record.key);
  }
}

/** Filters grouped by field: ANDed across fields, ORed within one. No filters take every record. */
export class RecordFilter {
  private readonly byField = new Map<FilterField, Filter[]>();

  constructor(filters: readonly Filter[]) {
    for (const f of filters) this.byField.set(f.field, [...(this.byField.get(f.field) ?? []), f]);
  }

  static parse(texts: readonly string[]): RecordFilter {
    return new RecordFilter(texts.map(parseFilter));
  }

  matches(record: Pick<ConsumerRecord, 'key'>, d: DeadLetter): boolean {
    for (const filters of this.byField.values()) {
      if (!filters.some((f) => filterMatches(f, record, d))) return false;
    }
    return true;
  }
}
