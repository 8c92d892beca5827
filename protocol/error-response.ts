/**
 * The response a broker sends when it cannot serve a request it decoded: Kafka's
 * `AbstractRequest.getErrorResponse`, derived from the message schemas instead of written
 * once per API. Every error code of the response carries the error, and the request's own
 * collections are mirrored (each topic and partition it named comes back, with its name,
 * id and index copied), so a client learns the error for each thing it asked about rather
 * than seeing its connection drop.
 */
import { ZERO_UUID } from './primitives.ts';
import { schemas, type FieldSchema, type MessageSchema } from './messages/schemas.ts';

const responseSchemas = new Map<number, MessageSchema>();
const requestSchemas = new Map<number, MessageSchema>();
for (const s of schemas) {
  if (s.group !== 'messages' || s.apiKey === null) continue;
  if (s.type === 'response') responseSchemas.set(s.apiKey, s);
  else if (s.type === 'request') requestSchemas.set(s.apiKey, s);
}

/**
 * Where a response's field has another name in its request, per api key: response field
 * name -> request field names, the first that holds something wins.
 */
const REQUEST_FIELD_ALIASES: ReadonlyMap<number, Readonly<Record<string, readonly string[]>>> = new Map<
  number,
  Readonly<Record<string, readonly string[]>>
>([
  [0, { responses: ['topicData'], partitionResponses: ['partitionData'] }],
  [1, { responses: ['topics'], partitionIndex: ['partition'] }],
  [10, { coordinators: ['coordinatorKeys'] }],
  [20, { responses: ['topicNames', 'topics'] }],
  [42, { results: ['groupsNames'] }],
]);

/**
 * Values an error response carries where the schema's default would read as data: Kafka's
 * error partitions say -1 (no offset, no high watermark) rather than 0.
 */
const ERROR_VALUES: ReadonlyMap<number, Readonly<Record<string, unknown>>> = new Map<number, Readonly<Record<string, unknown>>>([
  [0, { baseOffset: -1n }],
  [1, { highWatermark: -1n }],
]);

/** Fields of the request that identify what a response element answers for. */
const IDENTITY_FIELDS = new Set([
  'name',
  'topic',
  'topicName',
  'topicId',
  'partitionIndex',
  'partition',
  'index',
  'groupId',
  'transactionalId',
  'resourceType',
  'resourceName',
  'key',
  'keyType',
  'memberId',
  'groupInstanceId',
]);

/**
 * Builds the error response of `apiKey` at `version` for `request` (as decoded), with
 * `errorCode` in every error code field and `errorMessage` where the schema has one. Returns
 * undefined for an api key the codec does not know.
 */
export function errorResponseFor(
  apiKey: number,
  version: number,
  request: unknown,
  errorCode: number,
  errorMessage: string | null,
): unknown {
  const response = responseSchemas.get(apiKey);
  if (response === undefined) return undefined;
  const error = { errorCode, errorMessage, aliases: REQUEST_FIELD_ALIASES.get(apiKey) ?? {}, values: ERROR_VALUES.get(apiKey) ?? {} };
  return buildStruct(response.fields, asRecord(request), version, error);
}

interface ErrorFill {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly aliases: Readonly<Record<string, readonly string[]>>;
  readonly values: Readonly<Record<string, unknown>>;
}

function buildStruct(
  fields: readonly FieldSchema[],
  source: Record<string, unknown> | null,
  version: number,
  error: ErrorFill,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) out[field.name] = fieldValue(field, source, version, error);
  return out;
}

function fieldValue(field: FieldSchema, source: Record<string, unknown> | null, version: number, error: ErrorFill): unknown {
  // A field absent at this version keeps its default: the encoder refuses anything else.
  if (!inVersion(field.versions, version)) return defaultValue(field);
  if (field.type === 'int16' && field.name === 'errorCode') return error.errorCode;
  if (field.type === 'string' && field.name === 'errorMessage') {
    return error.errorMessage !== null || isNullable(field, version) ? (error.errorMessage ?? null) : '';
  }
  if (field.name in error.values) return error.values[field.name];
  const sourceValue = sourceField(source, field.name, error.aliases);
  if (field.type === '[]struct' && field.fields !== undefined) {
    if (!Array.isArray(sourceValue)) return isNullable(field, version) && field.default === null ? null : [];
    return sourceValue.map((element) => buildStruct(field.fields!, elementSource(field.fields!, element), version, error));
  }
  if (field.type === 'struct' && field.fields !== undefined) {
    return buildStruct(field.fields, asRecord(sourceValue), version, error);
  }
  if ((IDENTITY_FIELDS.has(field.name) || field.name in error.aliases) && sourceValue !== undefined && sameKind(field, sourceValue)) {
    if (sourceValue !== null || isNullable(field, version)) return sourceValue;
  }
  return defaultValue(field);
}

function sourceField(source: Record<string, unknown> | null, name: string, aliases: ErrorFill['aliases']): unknown {
  if (source === null) return undefined;
  const candidates = aliases[name];
  if (candidates === undefined) return source[name];
  const values = candidates.map((c) => source[c]).filter((v) => v !== undefined);
  return values.find((v) => !Array.isArray(v) || v.length > 0) ?? values[0];
}

/**
 * A request element as the source of a response struct. A bare name or index (DescribeGroups'
 * group ids, DeleteTopics v0-v5's names) stands for the response struct's identity field.
 */
function elementSource(fields: readonly FieldSchema[], element: unknown): Record<string, unknown> | null {
  if (typeof element !== 'string' && typeof element !== 'number') return asRecord(element);
  const identity = fields.find((f) => IDENTITY_FIELDS.has(f.name) && sameKind(f, element));
  return identity === undefined ? null : { [identity.name]: element };
}

function defaultValue(field: FieldSchema): unknown {
  // An empty record set is zero bytes, never null: clients choke on a null one.
  if (field.type === 'records') return Buffer.alloc(0);
  if (field.default !== undefined) return field.default;
  if (field.type.startsWith('[]')) return [];
  if (field.type === 'struct') return Object.fromEntries((field.fields ?? []).map((f) => [f.name, defaultValue(f)]));
  switch (field.type) {
    case 'int64':
      return 0n;
    case 'bool':
      return false;
    case 'string':
      return '';
    case 'uuid':
      return ZERO_UUID;
    case 'bytes':
      return Buffer.alloc(0);
    default:
      return 0;
  }
}

function sameKind(field: FieldSchema, value: unknown): boolean {
  if (value === null) return true;
  switch (field.type) {
    case 'int64':
      return typeof value === 'bigint';
    case 'bool':
      return typeof value === 'boolean';
    case 'string':
    case 'uuid':
      return typeof value === 'string';
    case 'int8':
    case 'int16':
    case 'int32':
    case 'uint16':
    case 'float64':
      return typeof value === 'number';
    default:
      return false;
  }
}

function isNullable(field: FieldSchema, version: number): boolean {
  return field.nullableVersions !== undefined && inVersion(field.nullableVersions, version);
}

function inVersion(range: readonly [number, number] | null, version: number): boolean {
  return range !== null && version >= range[0] && version <= range[1];
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Buffer.isBuffer(value) ? (value as Record<string, unknown>) : null;
}
