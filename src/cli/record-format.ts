/**
 * Records as lines of text, the formats `sluice produce` reads and `sluice consume` writes:
 *
 *   text  the value as UTF-8; with a key separator, `key<SEP>value`
 *   hex   the same with key and value bytes in hex (for binary data)
 *   json  one object a line: {"key":..,"value":..,"headers":{..},"partition":..,"timestamp":..}
 *         keys, values and header values as UTF-8 strings or null; consume adds topic and offset.
 *         Headers are a list in Kafka: where an object cannot keep them (a key twice, or keys
 *         like "0" that a JSON object orders first) they are [[key, value], ..] pairs instead
 *
 * Pure functions: no I/O, so the parsers can be tested over arbitrary input.
 */
import type { RecordHeader } from '../../protocol/records/record.ts';
import type { ProducerRecord } from '../client/producer.ts';
import type { ConsumerRecord } from '../client/records.ts';
import { UsageError } from './output.ts';

export type RecordFormat = 'text' | 'json' | 'hex';

export function parseRecordFormat(value: string | undefined): RecordFormat {
  if (value === undefined || value === 'text' || value === 'json' || value === 'hex') return value ?? 'text';
  throw new UsageError(`--format expects text, json or hex, got '${value}'`);
}

export class RecordLineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordLineError';
  }
}

export interface LineOptions {
  format: RecordFormat;
  /** text and hex: split each line at its first separator into key and value. */
  keySeparator: string | null;
  /** text and hex: the key of every record (in the line format's encoding). */
  key: string | null;
  /** Added to every record before the line's own headers. */
  headers: readonly RecordHeader[];
  partition: number | null;
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

export function fromHex(text: string): Buffer {
  if (!HEX.test(text)) throw new RecordLineError(`'${text.length > 40 ? `${text.slice(0, 40)}...` : text}' is not hex`);
  return Buffer.from(text, 'hex');
}

function bytesOf(text: string, format: RecordFormat): Buffer {
  return format === 'hex' ? fromHex(text) : Buffer.from(text, 'utf8');
}

/** A JSON field that must be a string or null; undefined when absent. */
function nullableString(value: unknown, field: string): string | null | undefined {
  if (value === undefined || value === null || typeof value === 'string') return value;
  throw new RecordLineError(`"${field}" must be a string or null`);
}

const JSON_FIELDS = new Set(['key', 'value', 'headers', 'partition', 'timestamp']);

function parseJsonRecord(line: string, options: LineOptions): ProducerRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (err) {
    throw new RecordLineError(`not JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new RecordLineError('expected a JSON object');
  const o = parsed as Record<string, unknown>;
  for (const field of Object.keys(o)) {
    if (!JSON_FIELDS.has(field)) throw new RecordLineError(`unknown field "${field}" (key, value, headers, partition, timestamp)`);
  }
  const key = nullableString(o.key, 'key');
  const value = nullableString(o.value, 'value');
  const headers = [...options.headers];
  if (o.headers !== undefined && o.headers !== null) {
    for (const [k, v] of headerEntries(o.headers)) {
      const hv = nullableString(v, `headers.${k}`);
      headers.push({ key: k, value: hv == null ? null : Buffer.from(hv, 'utf8') });
    }
  }
  const partition = o.partition ?? options.partition;
  if (partition !== null && !(Number.isSafeInteger(partition) && (partition as number) >= 0)) {
    throw new RecordLineError('"partition" must be an integer >= 0');
  }
  const timestamp = o.timestamp ?? null;
  if (timestamp !== null && !(Number.isSafeInteger(timestamp) && (timestamp as number) >= 0)) {
    throw new RecordLineError('"timestamp" must be milliseconds since the epoch');
  }
  return {
    key: key == null ? (options.key === null ? null : Buffer.from(options.key, 'utf8')) : Buffer.from(key, 'utf8'),
    value: value == null ? null : Buffer.from(value, 'utf8'),
    headers,
    partition: partition as number | null,
    timestamp: timestamp as number | null,
  };
}

/** A line's headers, an object or [key, value] pairs, as the pairs they name. */
function headerEntries(headers: unknown): Array<[string, unknown]> {
  const refused = '"headers" must be an object or a list of [key, value] pairs';
  if (typeof headers !== 'object' || headers === null) throw new RecordLineError(refused);
  if (!Array.isArray(headers)) return Object.entries(headers);
  return headers.map((pair: unknown) => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') throw new RecordLineError(refused);
    return [pair[0], pair[1]];
  });
}

/**
 * The record one input line describes; null for a line that carries none (a blank line in
 * json). In text and hex every line is a record, an empty line an empty value, as
 * kafka-console-producer reads them.
 */
export function parseRecordLine(line: string, options: LineOptions): ProducerRecord | null {
  if (options.format === 'json') return line.trim() === '' ? null : parseJsonRecord(line, options);
  let key = options.key;
  let value = line;
  if (options.keySeparator !== null) {
    const at = line.indexOf(options.keySeparator);
    if (at < 0) throw new RecordLineError(`no key separator '${options.keySeparator}' in the line`);
    key = line.slice(0, at);
    value = line.slice(at + options.keySeparator.length);
  }
  return {
    key: key === null ? null : bytesOf(key, options.format),
    value: bytesOf(value, options.format),
    headers: [...options.headers],
    partition: options.partition,
    timestamp: null,
  };
}

export interface PrintOptions {
  format: RecordFormat;
  /** text and hex: print `key<SEP>value`; null prints the value alone. */
  keySeparator: string | null;
}

/** Kafka's console consumer prints a null key or value as `null`. */
function textOf(bytes: Buffer | null, format: RecordFormat): string {
  if (bytes === null) return 'null';
  return format === 'hex' ? bytes.toString('hex') : bytes.toString('utf8');
}

/** One output line (without its newline) for a consumed record. */
export function formatRecord(r: ConsumerRecord, options: PrintOptions): string {
  if (options.format === 'json') {
    const utf8 = (b: Buffer | null): string | null => (b === null ? null : b.toString('utf8'));
    return JSON.stringify({
      topic: r.topic,
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      key: utf8(r.key),
      value: utf8(r.value),
      headers: headersJson(r.headers.map((h) => [h.key, utf8(h.value)])),
    });
  }
  const value = textOf(r.value, options.format);
  return options.keySeparator === null ? value : `${textOf(r.key, options.format)}${options.keySeparator}${value}`;
}

/** Headers as an object where it keeps every pair in order, else as the pairs. */
function headersJson(pairs: Array<[string, string | null]>): Record<string, string | null> | Array<[string, string | null]> {
  const object = Object.fromEntries(pairs);
  const keys = Object.keys(object);
  const keepsOrder = keys.length === pairs.length && keys.every((k, i) => k === pairs[i]?.[0]);
  return keepsOrder ? object : pairs;
}
