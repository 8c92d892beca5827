/**
 * A topic policy: a topic described by its contract (partitions, replication, retention, the
 * schemas of its keys and values, the delivery guarantee its producers and consumers keep)
 * rather than by admin calls. This module reads policies from a file (YAML, which JSON is too)
 * and checks each one on its own; what needs the cluster (a partition decrease, a replication
 * factor above the broker count, a contract the effective settings cannot honour) is
 * plan.ts's to check.
 *
 *   topic_policy:
 *     name: order.events
 *     partitions: 24
 *     replication_factor: 3
 *     min_insync_replicas: 2
 *     cleanup_policy: delete
 *     retention_ms: 604800000
 *     key_schema: order_id
 *     value_schema: order_event_v2
 *     delivery_contract: at_least_once
 *
 * A file holds `{topic_policy: {...}}`, `{topic_policies: [...]}`, a list of either policies or
 * `{topic_policy: ...}` entries, or several such YAML documents. A key not given is not
 * managed: apply leaves it as the cluster has it.
 */
import { parseAllDocuments, type YAMLError } from 'yaml';

export type CleanupPolicy = 'delete' | 'compact' | 'compact,delete';
export type DeliveryContract = 'at_most_once' | 'at_least_once' | 'exactly_once' | 'latest_per_key';

export const CLEANUP_POLICIES: readonly CleanupPolicy[] = ['delete', 'compact', 'compact,delete'];
export const DELIVERY_CONTRACTS: readonly DeliveryContract[] = ['at_most_once', 'at_least_once', 'exactly_once', 'latest_per_key'];

/** A policy as written: snake_case keys, each optional but the name. */
export interface TopicPolicy {
  name: string;
  partitions?: number;
  replication_factor?: number;
  min_insync_replicas?: number;
  cleanup_policy?: CleanupPolicy;
  retention_ms?: number;
  retention_bytes?: number;
  max_message_bytes?: number;
  key_schema?: string;
  value_schema?: string;
  delivery_contract?: DeliveryContract;
  /** Any other topic config, by Kafka's name, its value as the broker takes it (text). */
  configs?: Record<string, string>;
}

/** The policy keys that are Kafka topic configs, and the configs' names. */
export const NAMED_CONFIGS = {
  min_insync_replicas: 'min.insync.replicas',
  cleanup_policy: 'cleanup.policy',
  retention_ms: 'retention.ms',
  retention_bytes: 'retention.bytes',
  max_message_bytes: 'max.message.bytes',
} as const;

export type NamedConfigKey = keyof typeof NAMED_CONFIGS;
export const NAMED_CONFIG_KEYS = Object.keys(NAMED_CONFIGS) as NamedConfigKey[];

/** What Kafka has no topic config for: kept in the policy store (store.ts). */
export const STORED_KEYS = ['key_schema', 'value_schema', 'delivery_contract'] as const;
export type StoredKey = (typeof STORED_KEYS)[number];

/** Every policy key, in the order an exported policy lists them. */
export const POLICY_KEYS: readonly string[] = ['name', 'partitions', 'replication_factor', ...NAMED_CONFIG_KEYS, ...STORED_KEYS, 'configs'];

/** Kafka's legal topic names (Topic.validate): at most 249 of [a-zA-Z0-9._-], not "." or "..". */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;

/** Topics whose names start so are Kafka's and Sluice's own (the policy store among them): never managed. */
export const INTERNAL_PREFIX = '__';

/** A policy and the file it came from. */
export interface SourcedPolicy {
  file: string;
  policy: TopicPolicy;
}

/** One reason a file is refused: `topic` names the policy (or where in the file, when it has no name). */
export interface PolicyError {
  file: string;
  topic: string;
  reason: string;
}

export function formatPolicyError(e: PolicyError): string {
  return `sluice apply: ${e.file}: ${e.topic}: ${e.reason}`;
}

/** The known key closest to an unknown one, when close enough to be a likely typo. */
function nearestKey(key: string, known: readonly string[]): string | null {
  const asSnake = key.replaceAll('.', '_').replaceAll('-', '_').toLowerCase();
  if (known.includes(asSnake)) return asSnake;
  const extended = known.find((k) => asSnake.length >= 4 && k.startsWith(asSnake));
  if (extended !== undefined) return extended;
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  for (const k of known) {
    const d = editDistance(asSnake, k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `${typeof v} ${JSON.stringify(v)}`;
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An integer policy value in `[min, Number.MAX_SAFE_INTEGER]`, or the reason it is not one. */
function integerIn(key: string, v: unknown, min: number, why: string): string | null {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) return `${key} must be an integer, not ${describeValue(v)}`;
  if (v < min) return `${key} must be >= ${min}${why}, not ${v}`;
  return null;
}

const INTEGER_KEYS: Readonly<Record<string, { min: number; why: string }>> = {
  partitions: { min: 1, why: '' },
  replication_factor: { min: 1, why: '' },
  min_insync_replicas: { min: 1, why: '' },
  retention_ms: { min: -1, why: ' (-1: no time limit)' },
  retention_bytes: { min: -1, why: ' (-1: no size limit)' },
  max_message_bytes: { min: 0, why: '' },
};

/** The reasons `value` is not a valid `configs` mapping; fills `out` with its values as text. */
function checkConfigs(value: unknown, out: Record<string, string>): string[] {
  if (!isMapping(value)) return [`configs must be a mapping of Kafka config names to values, not ${describeValue(value)}`];
  const reasons: string[] = [];
  const named = new Map<string, string>(Object.entries(NAMED_CONFIGS).map(([k, config]) => [config, k]));
  for (const [name, v] of Object.entries(value)) {
    const key = named.get(name);
    if (key !== undefined) reasons.push(`configs.${name}: set it with ${key}, not in configs`);
    else if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) out[name] = String(v);
    else reasons.push(`configs.${name} must be a string, number or boolean, not ${describeValue(v)}`);
  }
  return reasons;
}

/**
 * Checks one policy on its own: known keys, types and ranges. Returns the policy (configs as
 * text) when it has no fault, and every reason it has.
 */
export function checkPolicy(value: unknown): { policy: TopicPolicy | null; reasons: string[] } {
  if (!isMapping(value)) return { policy: null, reasons: [`a policy must be a mapping, not ${describeValue(value)}`] };
  const reasons: string[] = [];
  for (const key of Object.keys(value)) {
    if (POLICY_KEYS.includes(key)) continue;
    const near = nearestKey(key, POLICY_KEYS);
    const hint = near !== null ? ` (did you mean ${near}?)` : key.includes('.') ? ' (Kafka configs go under configs)' : '';
    reasons.push(`unknown key '${key}'${hint}`);
  }
  const name = value.name;
  if (name === undefined) reasons.push('name is required');
  else if (typeof name !== 'string') reasons.push(`name must be a string, not ${describeValue(name)}`);
  else if (!TOPIC_NAME.test(name) || name === '.' || name === '..') {
    reasons.push(`'${name}' is not a legal topic name (at most 249 of a-z A-Z 0-9 . _ -, not . or ..)`);
  } else if (name.startsWith(INTERNAL_PREFIX)) {
    reasons.push(`topics named ${INTERNAL_PREFIX}* are internal: apply does not manage them`);
  }
  for (const [key, range] of Object.entries(INTEGER_KEYS)) {
    if (value[key] === undefined) continue;
    const reason = integerIn(key, value[key], range.min, range.why);
    if (reason !== null) reasons.push(reason);
  }
  const cleanup = value.cleanup_policy;
  if (cleanup !== undefined && !(CLEANUP_POLICIES as readonly unknown[]).includes(cleanup)) {
    reasons.push(`cleanup_policy must be one of ${CLEANUP_POLICIES.join(' | ')}, not ${describeValue(cleanup)}`);
  }
  const contract = value.delivery_contract;
  if (contract !== undefined && !(DELIVERY_CONTRACTS as readonly unknown[]).includes(contract)) {
    reasons.push(`delivery_contract must be one of ${DELIVERY_CONTRACTS.join(' | ')}, not ${describeValue(contract)}`);
  }
  for (const key of ['key_schema', 'value_schema']) {
    const v = value[key];
    if (v !== undefined && (typeof v !== 'string' || v === '')) reasons.push(`${key} must be a non-empty string, not ${describeValue(v)}`);
  }
  const configs: Record<string, string> = {};
  if (value.configs !== undefined) reasons.push(...checkConfigs(value.configs, configs));
  if (reasons.length > 0) return { policy: null, reasons };
  const policy = { ...value } as unknown as TopicPolicy;
  if (value.configs !== undefined) policy.configs = configs;
  return { policy, reasons };
}

/** The policy values a document holds, by the forms the module comment lists. */
function policiesOf(doc: unknown): { values: unknown[]; reason: string | null } {
  const entry = (v: unknown): unknown => (isMapping(v) && Object.keys(v).length === 1 && 'topic_policy' in v ? v.topic_policy : v);
  if (doc === null || doc === undefined) return { values: [], reason: null };
  if (Array.isArray(doc)) return { values: doc.map(entry), reason: null };
  if (isMapping(doc)) {
    const keys = Object.keys(doc);
    if (keys.length === 1 && keys[0] === 'topic_policy') return { values: [doc.topic_policy], reason: null };
    if (keys.length === 1 && keys[0] === 'topic_policies') {
      if (Array.isArray(doc.topic_policies)) return { values: doc.topic_policies.map(entry), reason: null };
      return { values: [], reason: `topic_policies must be a list, not ${describeValue(doc.topic_policies)}` };
    }
  }
  return { values: [], reason: 'a document is {topic_policy: {...}}, {topic_policies: [...]} or a list of policies' };
}

/** `text` without JSON.parse's echo of the input, with a line and column when it gave a position. */
function jsonSyntaxError(text: string, err: Error): string {
  const message = err.message.replace(/, "[\s\S]*" is not valid JSON$/, '');
  const at = /^(.*) in JSON at position (\d+)/.exec(message);
  if (at === null) return `invalid JSON: ${message}`;
  const before = text.slice(0, Number(at[2]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `invalid JSON at line ${line}, column ${column}: ${at[1]}`;
}

function yamlSyntaxError(e: YAMLError): string {
  const where = e.linePos?.[0];
  const first = e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  return where === undefined ? `invalid YAML: ${first}` : `invalid YAML at line ${where.line}, column ${where.col}: ${first}`;
}

/** The documents of a file: JSON for *.json (and for text that looks like JSON and parses as it), YAML otherwise. */
function documentsOf(file: string, text: string): { docs: unknown[]; syntax: string | null } {
  const looksJson = /^\s*[[{]/.test(text);
  if (file.endsWith('.json') || looksJson) {
    try {
      return { docs: [JSON.parse(text)], syntax: null };
    } catch (err) {
      // A YAML flow mapping ({name: x}) starts like JSON without being JSON.
      if (file.endsWith('.json')) return { docs: [], syntax: jsonSyntaxError(text, err as Error) };
      const yaml = parseAllDocuments(text);
      const docs = Array.isArray(yaml) ? yaml : [yaml];
      if (docs.every((d) => d.errors.length === 0)) return { docs: docs.map((d) => d.toJS()), syntax: null };
      return { docs: [], syntax: jsonSyntaxError(text, err as Error) };
    }
  }
  const parsed = parseAllDocuments(text);
  const docs = Array.isArray(parsed) ? parsed : [parsed];
  const error = docs.flatMap((d) => d.errors)[0];
  if (error !== undefined) return { docs: [], syntax: yamlSyntaxError(error) };
  return { docs: docs.map((d) => d.toJS()), syntax: null };
}

/** Every policy in a file, or every reason it is refused (a policy without a name is named by its place). */
export function parsePolicyFile(file: string, text: string): { policies: SourcedPolicy[]; errors: PolicyError[] } {
  const { docs, syntax } = documentsOf(file, text);
  if (syntax !== null) return { policies: [], errors: [{ file, topic: 'syntax', reason: syntax }] };
  const policies: SourcedPolicy[] = [];
  const errors: PolicyError[] = [];
  let index = 0;
  for (const [d, doc] of docs.entries()) {
    const { values, reason } = policiesOf(doc);
    if (reason !== null) errors.push({ file, topic: `document ${d + 1}`, reason });
    for (const value of values) {
      index++;
      const { policy, reasons } = checkPolicy(value);
      const label = isMapping(value) && typeof value.name === 'string' ? value.name : `policy ${index}`;
      for (const r of reasons) errors.push({ file, topic: label, reason: r });
      if (policy !== null) policies.push({ file, policy });
    }
  }
  if (errors.length === 0 && policies.length === 0) errors.push({ file, topic: 'file', reason: 'holds no policy' });
  return { policies, errors };
}

/** A policy named twice, across all files, is refused: which one should win is not for apply to guess. */
export function duplicateNames(policies: readonly SourcedPolicy[]): PolicyError[] {
  const first = new Map<string, SourcedPolicy>();
  const errors: PolicyError[] = [];
  for (const p of policies) {
    const seen = first.get(p.policy.name);
    if (seen === undefined) first.set(p.policy.name, p);
    else errors.push({ file: p.file, topic: p.policy.name, reason: `a second policy for this topic (the first is in ${seen.file})` });
  }
  return errors;
}

/** The Kafka configs a policy sets, by Kafka's names, values as text. */
export function policyConfigs(policy: TopicPolicy): [string, string][] {
  const out: [string, string][] = [];
  for (const key of NAMED_CONFIG_KEYS) {
    const v = policy[key];
    if (v !== undefined) out.push([NAMED_CONFIGS[key], String(v)]);
  }
  for (const [name, v] of Object.entries(policy.configs ?? {})) out.push([name, v]);
  return out;
}

/** Kafka takes cleanup.policy in either order ("delete,compact"); policies spell it one way. */
export function normalizeCleanupPolicy(value: string): CleanupPolicy | null {
  const parts = [
    ...new Set(
      value
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ].sort();
  const joined = parts.join(',');
  return (CLEANUP_POLICIES as readonly string[]).includes(joined) ? (joined as CleanupPolicy) : null;
}
