// fast-check arbitraries for every generated message, built from protocol/messages/schemas.ts:
// a value valid for one version (fields the version lacks hold their defaults, null only
// where the version allows it, tagged fields random or default).
import fc from 'fast-check';
import type { FieldSchema, MessageSchema, VersionRange } from '../../protocol/messages/schemas.ts';

export type Value = unknown;

export function inRange(range: VersionRange | null | undefined, version: number): boolean {
  return range != null && version >= range[0] && version <= range[1];
}

export function versionsOf(schema: MessageSchema): number[] {
  const out: number[] = [];
  for (let v = schema.validVersions[0]; v <= schema.validVersions[1]; v++) out.push(v);
  return out;
}

/** Kafka's default for a field (the value a version lacking the field decodes to). */
export function defaultValue(f: FieldSchema): Value {
  if (f.default !== undefined) return f.default;
  if (f.type.startsWith('[]')) return [];
  if (f.type === 'bytes' || f.type === 'records') return Buffer.alloc(0);
  if (f.type === 'struct') return defaultStruct(f.fields ?? []);
  throw new Error(`field ${f.name} (${f.type}) has no default`);
}

export function defaultStruct(fields: readonly FieldSchema[]): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const f of fields) out[f.name] = defaultValue(f);
  return out;
}

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'grapheme', maxLength: 4 }));

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function primitive(type: string): fc.Arbitrary<Value> {
  switch (type) {
    case 'int8':
      return fc.integer({ min: -128, max: 127 });
    case 'int16':
      return fc.integer({ min: -32768, max: 32767 });
    case 'uint16':
      return fc.integer({ min: 0, max: 65535 });
    case 'int32':
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case 'int64':
      return fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.constantFrom(-1n, 0n, INT64_MAX, INT64_MIN));
    case 'float64':
      return fc.double();
    case 'bool':
      return fc.boolean();
    case 'uuid':
      return fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => Buffer.from(b).toString('base64url'));
    case 'string':
      return text;
    case 'bytes':
    case 'records':
      return fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b));
    default:
      throw new Error(`unknown type ${type}`);
  }
}

function typeArbitrary(f: FieldSchema, type: string, version: number, depth: number): fc.Arbitrary<Value> {
  if (type.startsWith('[]')) {
    const element = typeArbitrary(f, type.slice(2), version, depth + 1);
    return fc.array(element, { maxLength: depth === 0 ? 3 : 2 });
  }
  if (type === 'struct') return structArbitrary(f.fields ?? [], version, depth + 1);
  return primitive(type);
}

function fieldArbitrary(f: FieldSchema, version: number, depth: number): fc.Arbitrary<Value> {
  if (!inRange(f.versions, version)) return fc.constant(defaultValue(f));
  let arb = typeArbitrary(f, f.type, version, depth);
  if (inRange(f.nullableVersions, version)) arb = fc.option(arb, { nil: null, freq: 4 });
  if (inRange(f.taggedVersions, version)) arb = fc.oneof(fc.constant(defaultValue(f)), arb);
  return arb;
}

export function structArbitrary(fields: readonly FieldSchema[], version: number, depth = 0): fc.Arbitrary<Record<string, Value>> {
  const model: Record<string, fc.Arbitrary<Value>> = {};
  for (const f of fields) model[f.name] = fieldArbitrary(f, version, depth);
  return fc.record(model, { noNullPrototype: true });
}

/** A random message valid for `version`. */
export function messageArbitrary(schema: MessageSchema, version: number): fc.Arbitrary<Record<string, Value>> {
  return structArbitrary(schema.fields, version);
}
