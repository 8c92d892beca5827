/**
 * Client quotas: AlterClientQuotas is decided by the active controller (brokers forward it),
 * DescribeClientQuotas is answered from the broker's metadata image as Kafka's
 * ClientQuotasImage.describe answers it: the filter is validated, then every entity with quotas
 * that it matches is listed. A component matches an entity that has its type with that name
 * (MATCH_TYPE_EXACT), with the default (MATCH_TYPE_DEFAULT) or with any name
 * (MATCH_TYPE_SPECIFIED); `strict` also requires the entity to have no other type. The default
 * is named null in answers.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAlterClientQuotasResponse,
  type AlterClientQuotasRequest,
  type AlterClientQuotasResponse,
} from '../../protocol/messages/alter-client-quotas.ts';
import {
  makeDescribeClientQuotasResponse,
  type DescribeClientQuotasRequest,
  type DescribeClientQuotasResponse,
  type DescribeClientQuotasResponseEntryData as DescribeEntry,
} from '../../protocol/messages/describe-client-quotas.ts';
import type { QuorumController } from '../metadata/controller.ts';
import type { ClientQuotaImage, MetadataImage } from '../metadata/image.ts';

const ENTITY_TYPES: ReadonlySet<string> = new Set(['user', 'client-id', 'ip']);
const MATCH_TYPE_EXACT = 0;
const MATCH_TYPE_DEFAULT = 1;
const MATCH_TYPE_SPECIFIED = 2;

export async function handleAlterClientQuotas(
  controller: QuorumController,
  request: AlterClientQuotasRequest,
): Promise<AlterClientQuotasResponse> {
  const results = await controller.alterClientQuotas(request);
  return makeAlterClientQuotasResponse({
    entries: results.map((r) => ({ errorCode: r.errorCode, errorMessage: r.errorMessage, entity: r.entity.map((e) => ({ ...e })) })),
  });
}

/** The filter as matching needs it: exact names (null for the default) and types that must be present. */
interface QuotaFilter {
  readonly exact: ReadonlyMap<string, string | null>;
  readonly specified: ReadonlySet<string>;
  readonly strict: boolean;
}

export function handleDescribeClientQuotas(image: MetadataImage, request: DescribeClientQuotasRequest): DescribeClientQuotasResponse {
  const filter = readFilter(request);
  if ('code' in filter) return makeDescribeClientQuotasResponse({ errorCode: filter.code, errorMessage: filter.message, entries: null });
  const entries = image
    .allClientQuotas()
    .filter((q) => matches(q, filter))
    .map(describeEntry);
  return makeDescribeClientQuotasResponse({ entries });
}

function matches({ entity }: ClientQuotaImage, filter: QuotaFilter): boolean {
  const names = new Map(Object.entries(entity));
  if (filter.strict && names.size !== filter.exact.size + filter.specified.size) return false;
  for (const [type, name] of filter.exact) if (!names.has(type) || names.get(type) !== name) return false;
  for (const type of filter.specified) if (!names.has(type)) return false;
  return true;
}

function describeEntry({ entity, quotas }: ClientQuotaImage): DescribeEntry {
  return {
    entity: Object.entries(entity).map(([entityType, entityName]) => ({ entityType, entityName: entityName ?? null })),
    values: [...quotas].map(([key, value]) => ({ key, value })),
  };
}

function readFilter(request: DescribeClientQuotasRequest): QuotaFilter | { code: number; message: string } {
  const exact = new Map<string, string | null>();
  const specified = new Set<string>();
  const invalid = (message: string) => ({ code: Errors.INVALID_REQUEST.code, message });
  for (const c of request.components) {
    if (c.entityType === '') return invalid('Invalid empty entity type.');
    if (exact.has(c.entityType) || specified.has(c.entityType)) {
      return invalid(`Entity type ${c.entityType} cannot appear more than once in the filter.`);
    }
    if (!ENTITY_TYPES.has(c.entityType))
      return { code: Errors.UNSUPPORTED_VERSION.code, message: `Unsupported entity type ${c.entityType}` };
    if (c.matchType === MATCH_TYPE_EXACT) {
      if (c.match === null) return invalid('Request specified MATCH_TYPE_EXACT, but set match string to null.');
      exact.set(c.entityType, c.match);
    } else if (c.matchType === MATCH_TYPE_DEFAULT) {
      if (c.match !== null) return invalid('Request specified MATCH_TYPE_DEFAULT, but also specified a match string.');
      exact.set(c.entityType, null);
    } else if (c.matchType === MATCH_TYPE_SPECIFIED) {
      if (c.match !== null) return invalid('Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.');
      specified.add(c.entityType);
    } else {
      return invalid(`Unknown match type ${c.matchType}`);
    }
  }
  const has = (type: string) => exact.has(type) || specified.has(type);
  if (has('ip') && (has('user') || has('client-id'))) {
    return invalid(
      'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.',
    );
  }
  return { exact, specified, strict: request.strict };
}
