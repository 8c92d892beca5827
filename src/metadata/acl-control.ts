/**
 * CreateAcls and DeleteAcls as Kafka's AclControlManager decides them: each new binding is
 * validated alone (a refusal fails that creation only) and stored as an AccessControlEntryRecord
 * under a fresh id, unless the same binding exists already or earlier in the request; each
 * delete filter is validated alone and removes every binding it matches, each once per request.
 */
import { Errors } from '../../protocol/errors.ts';
import type { CreateAclsRequestAclCreation } from '../../protocol/messages/create-acls.ts';
import type { DeleteAclsRequestDeleteAclsFilter } from '../../protocol/messages/delete-acls.ts';
import { createAclsRefusal, filterRefusal, matchesFilter } from '../security/acl-filter.ts';
import type { AclBinding, AclBindingFilter } from '../security/acl-types.ts';
import type { MetadataImage } from './image.ts';
import type { MetadataRecord } from './records.ts';

export interface AclCreationResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export interface AclDeletionResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly matching: readonly AclBinding[];
}

function sameBinding(a: AclBinding, b: AclBinding): boolean {
  return (
    a.resourceType === b.resourceType &&
    a.resourceName === b.resourceName &&
    a.patternType === b.patternType &&
    a.principal === b.principal &&
    a.host === b.host &&
    a.operation === b.operation &&
    a.permissionType === b.permissionType
  );
}

export function planAclCreations(
  image: MetadataImage,
  creations: readonly CreateAclsRequestAclCreation[],
  newId: () => string,
): { records: MetadataRecord[]; results: AclCreationResult[] } {
  const records: MetadataRecord[] = [];
  const results: AclCreationResult[] = [];
  const planned: AclBinding[] = [];
  const existing = [...image.acls.values()];
  for (const c of creations) {
    const binding: AclBinding = {
      resourceType: c.resourceType,
      resourceName: c.resourceName,
      patternType: c.resourcePatternType,
      principal: c.principal,
      host: c.host,
      operation: c.operation,
      permissionType: c.permissionType,
    };
    const refusal = createAclsRefusal(binding);
    if (refusal !== null) {
      results.push({ errorCode: refusal.errorCode, errorMessage: refusal.message });
      continue;
    }
    results.push({ errorCode: Errors.NONE.code, errorMessage: null });
    if (existing.some((b) => sameBinding(b, binding)) || planned.some((b) => sameBinding(b, binding))) continue;
    planned.push(binding);
    records.push({ type: 'AccessControlEntryRecord', data: { id: newId(), ...binding } });
  }
  return { records, results };
}

export function planAclDeletions(
  image: MetadataImage,
  filters: readonly DeleteAclsRequestDeleteAclsFilter[],
): { records: MetadataRecord[]; results: AclDeletionResult[] } {
  const records: MetadataRecord[] = [];
  const results: AclDeletionResult[] = [];
  const removed = new Set<string>();
  for (const f of filters) {
    const filter: AclBindingFilter = {
      resourceType: f.resourceTypeFilter,
      resourceName: f.resourceNameFilter,
      patternType: f.patternTypeFilter,
      principal: f.principalFilter,
      host: f.hostFilter,
      operation: f.operation,
      permissionType: f.permissionType,
    };
    const refusal = filterRefusal(filter);
    if (refusal !== null) {
      results.push({ errorCode: refusal.errorCode, errorMessage: refusal.message, matching: [] });
      continue;
    }
    const matching: AclBinding[] = [];
    for (const [id, binding] of image.acls) {
      if (!matchesFilter(binding, filter)) continue;
      matching.push(binding);
      if (removed.has(id)) continue;
      removed.add(id);
      records.push({ type: 'RemoveAccessControlEntryRecord', data: { id } });
    }
    results.push({ errorCode: Errors.NONE.code, errorMessage: null, matching });
  }
  return { records, results };
}
