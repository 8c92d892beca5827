// Our message values <-> Kafka's JSON form (what Kafka's generated *DataJsonConverter
// classes read and write), driven by protocol/messages/schemas.ts.
//
// Kafka's JSON form, as its converters read it: fields by camelCase name (the same names
// as ours); int64 as JSON numbers, read exactly by Jackson, so they are written here as
// raw numeric literals; float64 must look like a floating point literal (1.0, not 1);
// bytes and records as base64; uuid as Kafka's Uuid.toString (our string form already).
// The oracle sends int64 values back as decimal strings (see Oracle.java).
import type { FieldSchema, MessageSchema } from '../../../protocol/messages/schemas.ts';
import { inRange } from '../../helpers/arbitraries.ts';
import type { Value } from '../../helpers/arbitraries.ts';

function elementType(type: string): string {
  return type.slice(2);
}

function scalarJson(type: string, v: Value): string {
  switch (type) {
    case 'int64':
      return (v as bigint).toString();
    case 'float64': {
      const n = v as number;
      if (Number.isNaN(n)) return 'NaN';
      if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
      if (Object.is(n, -0)) return '-0.0';
      const s = String(n);
      return /[.eE]/.test(s) ? s : `${s}.0`;
    }
    case 'bytes':
    case 'records':
      return JSON.stringify((v as Buffer).toString('base64'));
    default:
      return JSON.stringify(v);
  }
}

/**
 * Kafka's JSON reader parses a struct at the message's version even where the version lacks
 * the field, and then fails ("Can't read version N of X"): with `all`, such fields keep
 * their defaults and stay out of the JSON, so Kafka takes its own default; scalar fields
 * the version lacks are written.
 */
function randomAt(f: FieldSchema, version: number, all: boolean): boolean {
  if (inRange(f.versions, version)) return true;
  return all && f.type !== 'struct' && f.type !== '[]struct';
}

function valueJson(field: FieldSchema, type: string, v: Value, version: number, all: boolean): string {
  if (v === null) return 'null';
  if (type.startsWith('[]')) {
    const inner = elementType(type);
    return `[${(v as Value[]).map((e) => valueJson(field, inner, e, version, all)).join(',')}]`;
  }
  if (type === 'struct') return structJson(field.fields ?? [], v as Record<string, Value>, version, all);
  return scalarJson(type, v);
}

function structJson(fields: readonly FieldSchema[], value: Record<string, Value>, version: number, all: boolean): string {
  const parts: string[] = [];
  for (const f of fields) {
    if (!randomAt(f, version, all)) continue;
    parts.push(`${JSON.stringify(f.name)}:${valueJson(f, f.type, value[f.name], version, all)}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * Kafka's JSON text for a value at a version: the fields that version has, or with
 * `allFields` every scalar field too, so Kafka itself decides what a version cannot carry.
 */
export function toKafkaJson(schema: MessageSchema, value: Value, version: number, allFields = false): string {
  return structJson(schema.fields, value as Record<string, Value>, version, allFields);
}

function fromScalar(type: string, v: Value): Value {
  switch (type) {
    case 'int64':
      return BigInt(v as string | number);
    case 'float64':
      return typeof v === 'string' ? Number(v) : v;
    case 'bytes':
    case 'records':
      // Kafka's converters write records as their size when told not to serialize them.
      return typeof v === 'number' ? v : Buffer.from(v as string, 'base64');
    default:
      return v;
  }
}

function fromValue(field: FieldSchema, type: string, v: Value): Value {
  if (v === null || v === undefined) return v;
  if (type.startsWith('[]')) return (v as Value[]).map((e) => fromValue(field, elementType(type), e));
  if (type === 'struct') return fromKafkaStruct(field.fields ?? [], v as Record<string, Value>);
  return fromScalar(type, v);
}

function fromKafkaStruct(fields: readonly FieldSchema[], json: Record<string, Value>): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const f of fields) {
    if (f.name in json) out[f.name] = fromValue(f, f.type, json[f.name]);
  }
  for (const k of Object.keys(json)) if (!(k in out)) out[k] = json[k];
  return out;
}

/** Kafka's JSON (as the oracle returns it) in our value shapes: bigint, Buffer. */
export function fromKafkaJson(schema: MessageSchema, json: Record<string, Value>): Record<string, Value> {
  return fromKafkaStruct(schema.fields, json);
}

function viewOf(field: FieldSchema, type: string, v: Value, version: number): Value {
  if (v === null) return v;
  if (type.startsWith('[]')) return (v as Value[]).map((e) => viewOf(field, elementType(type), e, version));
  if (type === 'struct') return structView(field.fields ?? [], v as Record<string, Value>, version);
  return v;
}

function structView(fields: readonly FieldSchema[], value: Record<string, Value>, version: number): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const f of fields) if (inRange(f.versions, version)) out[f.name] = viewOf(f, f.type, value[f.name], version);
  return out;
}

/** The value as a version carries it: only the fields that version has, as in Kafka's JSON. */
export function versionView(schema: MessageSchema, value: Value, version: number): Record<string, Value> {
  return structView(schema.fields, value as Record<string, Value>, version);
}

// ---------------------------------------------------------------- every field at once

/**
 * The message's fields as if `version` had every scalar field: random values drawn from
 * these (with test/helpers/arbitraries.ts) set fields the version lacks, to see whether
 * the version can carry them. Struct fields the version lacks keep their defaults and stay
 * out of the JSON (see randomAt).
 */
export function withEveryScalarField(fields: readonly FieldSchema[], version: number): FieldSchema[] {
  return fields.map((f) => {
    const nested = f.fields ? { fields: withEveryScalarField(f.fields, version) } : {};
    if (!randomAt(f, version, true) || inRange(f.versions, version)) return { ...f, ...nested };
    return {
      ...f,
      ...nested,
      versions: [version, version] as const,
      ...(f.nullableVersions ? { nullableVersions: [version, version] as const } : {}),
      ...(f.taggedVersions ? { taggedVersions: [version, version] as const } : {}),
    };
  });
}
