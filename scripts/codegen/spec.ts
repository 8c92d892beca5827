// Reads Kafka's JSON message definitions into a typed model for the emitter.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Inclusive version range; `hi` is MAX_VERSION for an open range ("3+"). */
export interface Range {
  lo: number;
  hi: number;
}
export const MAX_VERSION = 32767;

export const PRIMITIVES = new Set(['int8', 'int16', 'uint16', 'int32', 'int64', 'float64', 'bool', 'uuid', 'string', 'bytes', 'records']);

export type FieldType = { kind: 'primitive'; name: string } | { kind: 'struct'; name: string } | { kind: 'array'; element: FieldType };

export interface Field {
  jsonName: string;
  name: string;
  type: FieldType;
  versions: Range | null;
  nullableVersions: Range | null;
  taggedVersions: Range | null;
  tag: number | null;
  ignorable: boolean;
  /** The spec's `default`, as written (a string, number, boolean or null), or undefined. */
  default: string | number | boolean | null | undefined;
  /** A field-level override of the message's flexibleVersions (only RequestHeader.ClientId). */
  flexibleVersions: Range | null | undefined;
}

export interface Struct {
  /** The spec name (e.g. TopicProduceData). */
  name: string;
  /** The TypeScript interface name (message name prefix for nested structs). */
  tsName: string;
  fields: Field[];
}

export interface Message {
  name: string;
  type: string;
  apiKey: number | null;
  validVersions: Range;
  flexibleVersions: Range | null;
  latestVersionUnstable: boolean;
  listeners: string[];
  root: Struct;
  /** Every struct of the message in definition order, root first. */
  structs: Struct[];
  /** The spec file the message came from, relative to the spec folder. */
  source: string;
}

/**
 * `release` names a group read from the Kafka 4.4.0 definitions beside the older snapshot
 * (`<spec>-4.4.0`): the metadata log's records only gain versions and types (ClearElrRecord of
 * KIP-966), while the older snapshot keeps the request versions Kafka 4.0 removed.
 */
export const SPEC_GROUPS = [
  { dir: 'messages', out: '' },
  { dir: 'metadata-records', out: 'metadata', release: '4.4.0' },
  { dir: 'group-coordinator-records', out: 'group-coordinator' },
  { dir: 'transaction-coordinator-records', out: 'transaction-coordinator' },
  { dir: 'raft-records', out: 'raft' },
] as const;

/**
 * Where the Kafka spec lives: KAFKA_SPEC_DIR if set, else the sibling folder
 * `shared/kafka-spec` of this checkout, else that of the repository this one was cloned from
 * (a clone made elsewhere, `git clone /work/main /tmp/x`, still finds the reference data
 * beside its origin). The first candidate is reported when none exists.
 */
export function specDir(): string {
  const fromEnv = process.env.KAFKA_SPEC_DIR;
  if (fromEnv !== undefined && fromEnv !== '') return resolve(fromEnv);
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
  const candidates = [resolve(repo, '../shared/kafka-spec')];
  const origin = originPath(repo);
  if (origin !== null) candidates.push(resolve(origin, '../shared/kafka-spec'));
  return candidates.find((dir) => specAvailable(dir)) ?? (candidates[0] as string);
}

/** The local path this checkout was cloned from (its .git/config), if origin is a local repository. */
function originPath(repo: string): string | null {
  let config: string;
  try {
    config = readFileSync(join(repo, '.git', 'config'), 'utf8');
  } catch {
    return null;
  }
  const origin = /\[remote "origin"\][^[]*?^\s*url\s*=\s*(.+)$/m.exec(config)?.[1]?.trim() ?? '';
  if (origin.startsWith('file://')) return fileURLToPath(origin);
  return isAbsolute(origin) && existsSync(origin) ? origin : null;
}

export function specAvailable(dir = specDir()): boolean {
  return existsSync(join(dir, 'messages')) && SPEC_GROUPS.every((g) => !('release' in g) || existsSync(join(`${dir}-${g.release}`, g.dir)));
}

export function parseVersions(text: string | undefined): Range | null {
  if (text === undefined || text === 'none') return null;
  const open = /^(\d+)\+$/.exec(text);
  if (open) return { lo: Number(open[1]), hi: MAX_VERSION };
  const closed = /^(\d+)-(\d+)$/.exec(text);
  if (closed) return { lo: Number(closed[1]), hi: Number(closed[2]) };
  if (/^\d+$/.test(text)) return { lo: Number(text), hi: Number(text) };
  throw new Error(`bad version range ${text}`);
}

export function camelCase(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

function parseType(text: string): FieldType {
  if (text.startsWith('[]')) return { kind: 'array', element: parseType(text.slice(2)) };
  if (PRIMITIVES.has(text)) return { kind: 'primitive', name: text };
  return { kind: 'struct', name: text };
}

export function structNameOf(type: FieldType): string | null {
  if (type.kind === 'struct') return type.name;
  if (type.kind === 'array') return structNameOf(type.element);
  return null;
}

interface JsonField {
  name: string;
  type: string;
  versions?: string;
  nullableVersions?: string;
  taggedVersions?: string;
  tag?: number;
  ignorable?: boolean;
  default?: string | number | boolean | null;
  flexibleVersions?: string;
  fields?: JsonField[];
}

interface JsonMessage {
  name: string;
  type: string;
  apiKey?: number;
  validVersions: string;
  flexibleVersions?: string;
  latestVersionUnstable?: boolean;
  listeners?: string[];
  fields: JsonField[];
  commonStructs?: { name: string; versions?: string; fields: JsonField[] }[];
}

export function readJson(path: string): JsonMessage {
  const text = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*\/\//.test(line))
    .join('\n');
  return JSON.parse(text) as JsonMessage;
}

export function parseMessage(json: JsonMessage, source: string): Message {
  const structs: Struct[] = [];
  const byName = new Map<string, Struct>();
  // Nested struct names carry the message name once: MetadataResponseBroker stays as is,
  // TopicProduceData becomes ProduceRequestTopicProduceData.
  const tsNames = new Set<string>([json.name]);
  const tsName = (name: string) => {
    const full = name.startsWith(json.name) ? name : json.name + name;
    if (tsNames.has(full)) throw new Error(`${source}: struct name ${full} is not unique`);
    tsNames.add(full);
    return full;
  };

  const convertFields = (fields: JsonField[]): Field[] =>
    fields.map((f) => {
      const type = parseType(f.type);
      const structName = structNameOf(type);
      if (structName !== null && f.fields) {
        if (byName.has(structName)) throw new Error(`${source}: struct ${structName} defined twice`);
        const struct: Struct = { name: structName, tsName: tsName(structName), fields: [] };
        byName.set(structName, struct);
        structs.push(struct);
        struct.fields = convertFields(f.fields);
      }
      const tagged = parseVersions(f.taggedVersions);
      return {
        jsonName: f.name,
        name: camelCase(f.name),
        type,
        versions: f.versions === undefined ? tagged : parseVersions(f.versions),
        nullableVersions: parseVersions(f.nullableVersions),
        taggedVersions: tagged,
        tag: f.tag ?? null,
        ignorable: f.ignorable === true,
        // Kafka's generator reads `default` as a string and treats a JSON null as no default
        // (unlike the string "null"); ConsumerGroupMemberMetadataValue relies on that.
        default: f.default === null ? undefined : f.default,
        flexibleVersions: f.flexibleVersions === undefined ? undefined : parseVersions(f.flexibleVersions),
      };
    });

  const root: Struct = { name: json.name, tsName: json.name, fields: [] };
  structs.push(root);
  // Common structs are registered first so inline fields can refer to them by name.
  const common = (json.commonStructs ?? []).map((c) => {
    const struct: Struct = { name: c.name, tsName: tsName(c.name), fields: [] };
    byName.set(c.name, struct);
    return { struct, fields: c.fields };
  });
  root.fields = convertFields(json.fields);
  for (const c of common) {
    c.struct.fields = convertFields(c.fields);
    structs.push(c.struct);
  }
  const check = (fields: Field[]) => {
    for (const f of fields) {
      const s = structNameOf(f.type);
      if (s !== null && !byName.has(s)) throw new Error(`${source}: unknown struct ${s}`);
    }
  };
  for (const s of structs) check(s.fields);

  const validVersions = parseVersions(json.validVersions);
  if (validVersions === null) throw new Error(`${source}: no valid versions`);
  return {
    name: json.name,
    type: json.type,
    apiKey: json.apiKey ?? null,
    validVersions,
    flexibleVersions: parseVersions(json.flexibleVersions),
    latestVersionUnstable: json.latestVersionUnstable === true,
    listeners: json.listeners ?? [],
    root,
    structs,
    source,
  };
}

export interface SpecGroup {
  dir: string;
  out: string;
  messages: Message[];
}

export function readSpec(dir = specDir()): SpecGroup[] {
  return SPEC_GROUPS.map((g) => {
    const from = 'release' in g ? `${dir}-${g.release}` : dir;
    const files = readdirSync(join(from, g.dir))
      .filter((f) => f.endsWith('.json'))
      .sort();
    return {
      dir: g.dir,
      out: g.out,
      messages: files.map((f) => parseMessage(readJson(join(from, g.dir, f)), `${g.dir}/${f}`)),
    };
  });
}
