/**
 * AlterClientQuotas as Kafka's ClientQuotaControlManager decides it, entry by entry: the entity
 * (user, client-id or ip; ip alone, and a literal address or the default), then each key and
 * value against the keys of that entity's kind. An entry is applied whole or not at all; a value
 * equal to the current one and the removal of an absent key write nothing. validateOnly decides
 * every entry and writes nothing.
 *
 * Kafka reads each entry's entity and ops into java.util.HashMaps, so a type or key named twice
 * keeps its last value, the first failing type or key is found in HashMap order, and entities
 * print as `ClientQuotaEntity(entries={...})` in that order: `javaHashMapOrder` reproduces it,
 * so the messages and the order of the answers are Kafka's.
 */
import { isIP } from 'node:net';
import { Errors } from '../../protocol/errors.ts';
import type { AlterClientQuotasRequest, AlterClientQuotasRequestEntryData } from '../../protocol/messages/alter-client-quotas.ts';
import type { ClientQuotaRecordEntityData } from '../../protocol/messages/metadata/client-quota-record.ts';
import { clientQuotaEntityKey, clientQuotaEntityOf, type MetadataImage } from './image.ts';
import type { MetadataRecord } from './records.ts';

export interface ClientQuotaAlterResult {
  /** The entity's types and names (null: the default), in Kafka's order. */
  readonly entity: readonly ClientQuotaRecordEntityData[];
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

/** How a quota value is read (QuotaConfig's ConfigDef types). */
type QuotaValueType = 'LONG' | 'INT' | 'DOUBLE';

/** QuotaConfig.userAndClientQuotaConfigs: the keys of a user, a client id, or both. */
const USER_AND_CLIENT_KEYS: ReadonlyMap<string, QuotaValueType> = new Map([
  ['producer_byte_rate', 'LONG'],
  ['consumer_byte_rate', 'LONG'],
  ['request_percentage', 'DOUBLE'],
  ['controller_mutation_rate', 'DOUBLE'],
]);

/** QuotaConfig.ipConfigs. */
const IP_KEYS: ReadonlyMap<string, QuotaValueType> = new Map([['connection_creation_rate', 'INT']]);

const INT_MAX = 2_147_483_647;
/** Long.MAX_VALUE as Java compares a double with it: 2^63. */
const LONG_MAX_AS_DOUBLE = 2 ** 63;

interface Refusal {
  readonly errorCode: number;
  readonly errorMessage: string;
}

const invalid = (errorMessage: string): Refusal => ({ errorCode: Errors.INVALID_REQUEST.code, errorMessage });

/** An entry's entity and ops as Kafka's AlterClientQuotasRequest.entries() reads them. */
interface Alteration {
  /** [type, name] in HashMap order; a type named twice keeps its last name. */
  readonly entity: readonly (readonly [string, string | null])[];
  /** key -> value, null removing it, in HashMap order; undefined when a key is named twice. */
  readonly ops: ReadonlyMap<string, number | null> | undefined;
}

export function planClientQuotaAlterations(
  image: MetadataImage,
  request: AlterClientQuotasRequest,
): { records: MetadataRecord[]; results: ClientQuotaAlterResult[] } {
  const records: MetadataRecord[] = [];
  const outcomes = new Map<string, { entity: Alteration['entity']; refusal: Refusal | null }>();
  for (const entry of request.entries) {
    const alteration = readAlteration(entry);
    const key = clientQuotaEntityKey(Object.fromEntries(alteration.entity));
    // Kafka records a duplicate key's refusal under the entity and then finds the entity
    // already answered: either way the answer is "Ignoring duplicate entity".
    if (alteration.ops === undefined || outcomes.has(key)) {
      outcomes.set(key, {
        entity: outcomes.get(key)?.entity ?? alteration.entity,
        refusal: invalid(`Ignoring duplicate entity ${entityToString(alteration.entity)}`),
      });
      continue;
    }
    const planned = planEntity(image, alteration.entity, alteration.ops);
    if ('records' in planned) records.push(...planned.records);
    outcomes.set(key, { entity: alteration.entity, refusal: 'records' in planned ? null : planned });
  }
  const results = javaHashMapOrder([...outcomes.values()], (o) => entityHashCode(o.entity), 16).map(({ entity, refusal }) => ({
    entity: entity.map(([entityType, entityName]) => ({ entityType, entityName })),
    errorCode: refusal?.errorCode ?? Errors.NONE.code,
    errorMessage: refusal?.errorMessage ?? null,
  }));
  return { records: request.validateOnly ? [] : records, results };
}

function readAlteration(entry: AlterClientQuotasRequestEntryData): Alteration {
  const names = new Map<string, string | null>();
  for (const { entityType, entityName } of entry.entity) names.set(entityType, entityName);
  const entity = javaHashMapOrder([...names], ([type]) => javaStringHash(type), entry.entity.length);
  const values = new Map<string, number | null>();
  let duplicateKey = false;
  for (const op of entry.ops) {
    if (values.has(op.key)) duplicateKey = true;
    else values.set(op.key, op.remove ? null : op.value);
  }
  if (duplicateKey) return { entity, ops: undefined };
  const ops = new Map(javaHashMapOrder([...values], ([key]) => javaStringHash(key), entry.ops.length));
  return { entity, ops };
}

function planEntity(
  image: MetadataImage,
  entity: Alteration['entity'],
  ops: ReadonlyMap<string, number | null>,
): { records: MetadataRecord[] } | Refusal {
  const refusal = entityRefusal(entity);
  if (refusal !== null) return refusal;
  const types = new Set(entity.map(([type]) => type));
  const ip = entity.find(([type]) => type === 'ip');
  let validKeys: ReadonlyMap<string, QuotaValueType>;
  if (ip !== undefined) {
    if (types.has('user') || types.has('client-id')) {
      // Kafka's message lacks the space between "should" and "not".
      return invalid('Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId');
    }
    if (!isValidIpEntity(ip[1])) return invalid(`${ip[1]} is not a valid IP or resolvable host.`);
    validKeys = IP_KEYS;
  } else {
    validKeys = USER_AND_CLIENT_KEYS;
  }
  const recordEntity = clientQuotaEntityOf(entity.map(([entityType, entityName]) => ({ entityType, entityName })));
  const current = image.clientQuotas(recordEntity);
  const entityData = Object.entries(recordEntity).map(([entityType, entityName]) => ({ entityType, entityName: entityName ?? null }));
  const records: MetadataRecord[] = [];
  const record = (key: string, value: number, remove: boolean): MetadataRecord => ({
    type: 'ClientQuotaRecord',
    data: { entity: entityData, key, value, remove },
  });
  for (const [key, value] of ops) {
    if (value === null) {
      if (current?.has(key)) records.push(record(key, 0, true));
      continue;
    }
    const valueRefusal = quotaValueRefusal(validKeys, key, value);
    if (valueRefusal !== null) return valueRefusal;
    // Double.equals: NaN equals itself, -0 differs from 0.
    if (!Object.is(current?.get(key), value)) records.push(record(key, value, false));
  }
  return { records };
}

/** Kafka's validateEntity: known types only, no empty name, and not no type at all. */
function entityRefusal(entity: Alteration['entity']): Refusal | null {
  if (entity.length === 0) return invalid('Invalid empty client quota entity');
  for (const [type, name] of entity) {
    if (type !== 'user' && type !== 'client-id' && type !== 'ip') return invalid(`Unhandled client quota entity type: ${type}`);
    if (name === '') return invalid(`Empty ${type} not supported`);
  }
  return null;
}

/**
 * Kafka asks InetAddress.getByName, which also resolves host names; the controller does not
 * look names up, so only an address literal (IPv6 optionally in brackets) or the default passes.
 */
function isValidIpEntity(ip: string | null): boolean {
  if (ip === null) return true;
  const literal = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  return isIP(literal) !== 0;
}

/** Kafka's validateQuotaKeyValue. */
function quotaValueRefusal(validKeys: ReadonlyMap<string, QuotaValueType>, key: string, value: number): Refusal | null {
  const type = validKeys.get(key);
  if (type === undefined) return invalid(`Invalid configuration key ${key}`);
  if (value <= 0) return invalid(`Quota ${key} must be greater than 0`);
  if (type === 'DOUBLE') return null;
  if (type === 'INT' && value > INT_MAX) return invalid(`Proposed value for ${key} is too large for an INT.`);
  if (type === 'LONG' && value > LONG_MAX_AS_DOUBLE) return invalid(`Proposed value for ${key} is too large for a LONG.`);
  return Math.abs(value % 1) > 1e-6 ? invalid(`${key} cannot be a fractional value.`) : null;
}

/** ClientQuotaEntity.toString: `ClientQuotaEntity(entries={user=alice, client-id=null})`. */
function entityToString(entity: Alteration['entity']): string {
  return `ClientQuotaEntity(entries={${entity.map(([type, name]) => `${type}=${name}`).join(', ')}})`;
}

/** java.lang.String.hashCode over UTF-16 code units. */
function javaStringHash(s: string | null): number {
  if (s === null) return 0;
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

/** ClientQuotaEntity.hashCode: Objects.hash(entries), a Map's hash being the sum of key ^ value. */
function entityHashCode(entity: Alteration['entity']): number {
  let h = 0;
  for (const [type, name] of entity) h = (h + (javaStringHash(type) ^ javaStringHash(name))) | 0;
  return (31 + h) | 0;
}

/**
 * The iteration order of a java.util.HashMap made with `new HashMap<>(initialCapacity)` into
 * which `items` (distinct keys) were put in turn: by bucket of the spread hash in the final
 * table, then by insertion (a resize splits each bucket keeping its order).
 */
export function javaHashMapOrder<T>(items: readonly T[], hash: (item: T) => number, initialCapacity: number): T[] {
  let capacity = 1;
  while (capacity < initialCapacity) capacity *= 2;
  for (let size = 1; size <= items.length; size++) if (size > Math.floor(capacity * 0.75)) capacity *= 2;
  const bucket = (item: T) => {
    const h = hash(item);
    return (h ^ (h >>> 16)) & (capacity - 1);
  };
  return items
    .map((item, index) => ({ item, index, bucket: bucket(item) }))
    .sort((a, b) => a.bucket - b.bucket || a.index - b.index)
    .map((e) => e.item);
}
