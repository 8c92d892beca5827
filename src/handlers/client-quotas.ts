/**
 * DescribeClientQuotas, validated as Kafka's ClientQuotasImage.describe validates a filter.
 * Sluice does not enforce client quotas yet and does not serve AlterClientQuotas, so no quota
 * can exist: a valid filter matches nothing. Tools that read quotas beside other settings
 * (`kafka-configs --describe --entity-type users` reads SCRAM credentials and quotas) work.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeDescribeClientQuotasResponse,
  type DescribeClientQuotasRequest,
  type DescribeClientQuotasResponse,
} from '../../protocol/messages/describe-client-quotas.ts';

const ENTITY_TYPES: ReadonlySet<string> = new Set(['user', 'client-id', 'ip']);
const MATCH_TYPE_EXACT = 0;
const MATCH_TYPE_DEFAULT = 1;
const MATCH_TYPE_SPECIFIED = 2;

export function handleDescribeClientQuotas(request: DescribeClientQuotasRequest): DescribeClientQuotasResponse {
  const refusal = filterRefusal(request);
  if (refusal !== null) return makeDescribeClientQuotasResponse({ errorCode: refusal.code, errorMessage: refusal.message, entries: null });
  return makeDescribeClientQuotasResponse({ entries: [] });
}

function filterRefusal(request: DescribeClientQuotasRequest): { code: number; message: string } | null {
  const seen = new Set<string>();
  const invalid = (message: string) => ({ code: Errors.INVALID_REQUEST.code, message });
  for (const c of request.components) {
    if (c.entityType === '') return invalid('Invalid empty entity type.');
    if (seen.has(c.entityType)) return invalid(`Entity type ${c.entityType} cannot appear more than once in the filter.`);
    if (!ENTITY_TYPES.has(c.entityType))
      return { code: Errors.UNSUPPORTED_VERSION.code, message: `Unsupported entity type ${c.entityType}` };
    seen.add(c.entityType);
    if (c.matchType === MATCH_TYPE_EXACT) {
      if (c.match === null) return invalid('Request specified MATCH_TYPE_EXACT, but set match string to null.');
    } else if (c.matchType === MATCH_TYPE_DEFAULT) {
      if (c.match !== null) return invalid('Request specified MATCH_TYPE_DEFAULT, but also specified a match string.');
    } else if (c.matchType === MATCH_TYPE_SPECIFIED) {
      if (c.match !== null) return invalid('Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.');
    } else {
      return invalid(`Unknown match type ${c.matchType}`);
    }
  }
  if (seen.has('ip') && (seen.has('user') || seen.has('client-id'))) {
    return invalid(
      'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.',
    );
  }
  return null;
}
