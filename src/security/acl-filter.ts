/**
 * Which ACL bindings a DescribeAcls or DeleteAcls filter selects (Kafka's AclBindingFilter,
 * ResourcePatternFilter and AccessControlEntryFilter), and why CreateAcls, DeleteAcls or
 * DescribeAcls refuses a binding or filter, with Kafka's messages (AclApis, AclControlManager).
 */
import { Errors } from '../../protocol/errors.ts';
import {
  type AclBinding,
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  CLUSTER_RESOURCE_NAME,
  PatternType,
  ResourceType,
  WILDCARD,
} from './acl-types.ts';

export interface AclRefusal {
  readonly errorCode: number;
  readonly message: string;
}

function namesByCode(values: Readonly<Record<string, number>>): ReadonlyMap<number, string> {
  return new Map(Object.entries(values).map(([name, code]) => [code, name]));
}

const RESOURCE_TYPE_NAMES = namesByCode(ResourceType);
const PATTERN_TYPE_NAMES = namesByCode(PatternType);
const OPERATION_NAMES = namesByCode(AclOperation);
const PERMISSION_TYPE_NAMES = namesByCode(AclPermissionType);

/** A code's name as Kafka's fromCode reads it: a code Kafka does not define is UNKNOWN. */
function nameOf(names: ReadonlyMap<number, string>, code: number): string {
  return names.get(code) ?? 'UNKNOWN';
}

function resourcePatternMatches(binding: AclBinding, filter: AclBindingFilter): boolean {
  if (filter.resourceType !== ResourceType.ANY && filter.resourceType !== binding.resourceType) return false;
  const anyPattern = filter.patternType === PatternType.ANY || filter.patternType === PatternType.MATCH;
  if (!anyPattern && filter.patternType !== binding.patternType) return false;
  const name = filter.resourceName;
  if (name === null) return true;
  if (filter.patternType !== PatternType.MATCH) return name === binding.resourceName;
  // MATCH selects every binding that would apply to a resource with this literal name.
  switch (binding.patternType) {
    case PatternType.LITERAL:
      return name === binding.resourceName || binding.resourceName === WILDCARD;
    case PatternType.PREFIXED:
      return name.startsWith(binding.resourceName);
    default:
      return false;
  }
}

function entryMatches(binding: AclBinding, filter: AclBindingFilter): boolean {
  if (filter.principal !== null && filter.principal !== binding.principal) return false;
  if (filter.host !== null && filter.host !== binding.host) return false;
  if (filter.operation !== AclOperation.ANY && filter.operation !== binding.operation) return false;
  return filter.permissionType === AclPermissionType.ANY || filter.permissionType === binding.permissionType;
}

/** Kafka's AclBindingFilter.matches (resource pattern filter incl. PatternType.MATCH semantics: literal name, wildcard '*', and every PREFIXED pattern the name starts with; ANY; null = any). */
export function matchesFilter(binding: AclBinding, filter: AclBindingFilter): boolean {
  return resourcePatternMatches(binding, filter) && entryMatches(binding, filter);
}

function invalidRequest(message: string): AclRefusal {
  return { errorCode: Errors.INVALID_REQUEST.code, message };
}

function codeRefusal(binding: AclBinding): AclRefusal | null {
  const resourceType = nameOf(RESOURCE_TYPE_NAMES, binding.resourceType);
  if (resourceType === 'UNKNOWN' || resourceType === 'ANY') return invalidRequest(`Invalid resourceType ${resourceType}`);
  const patternType = nameOf(PATTERN_TYPE_NAMES, binding.patternType);
  if (patternType !== 'LITERAL' && patternType !== 'PREFIXED') return invalidRequest(`Invalid patternType ${patternType}`);
  const operation = nameOf(OPERATION_NAMES, binding.operation);
  if (operation === 'UNKNOWN' || operation === 'ANY') return invalidRequest(`Invalid operation ${operation}`);
  const permissionType = nameOf(PERMISSION_TYPE_NAMES, binding.permissionType);
  if (permissionType !== 'DENY' && permissionType !== 'ALLOW') return invalidRequest(`Invalid permissionType ${permissionType}`);
  return null;
}

/**
 * Why CreateAcls refuses a binding, or null. The codes are checked first (Kafka refuses them
 * while reading the request), then the names as AclApis does, then the principal as
 * AclControlManager does since KAFKA-18051: an ACL whose principal has no type would match no
 * one and break the authorizer that parses it.
 */
export function createAclsRefusal(binding: AclBinding): AclRefusal | null {
  const codes = codeRefusal(binding);
  if (codes !== null) return codes;
  if (binding.resourceType === ResourceType.CLUSTER && binding.resourceName !== CLUSTER_RESOURCE_NAME) {
    return invalidRequest(`The only valid name for the CLUSTER resource is ${CLUSTER_RESOURCE_NAME}`);
  }
  if (binding.resourceName === '') return invalidRequest('Invalid empty resource name');
  if (!binding.principal.includes(':')) {
    return invalidRequest(
      `Could not parse principal from \`${binding.principal}\` (no colon is present separating the principal type from the principal name)`,
    );
  }
  return null;
}

/** Why DeleteAcls or DescribeAcls refuses a filter (Kafka's AclControlManager.validateFilter), or null. */
export function filterRefusal(filter: AclBindingFilter): AclRefusal | null {
  if (nameOf(RESOURCE_TYPE_NAMES, filter.resourceType) === 'UNKNOWN' || nameOf(PATTERN_TYPE_NAMES, filter.patternType) === 'UNKNOWN') {
    return invalidRequest('Unknown patternFilter.');
  }
  if (nameOf(OPERATION_NAMES, filter.operation) === 'UNKNOWN' || nameOf(PERMISSION_TYPE_NAMES, filter.permissionType) === 'UNKNOWN') {
    return invalidRequest('Unknown entryFilter.');
  }
  return null;
}
