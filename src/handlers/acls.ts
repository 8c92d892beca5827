/**
 * CreateAcls and DeleteAcls are decided by the active controller (brokers forward them);
 * DescribeAcls is answered from the broker's metadata image, grouped by resource pattern as
 * Kafka's AclsResponse groups them.
 */
import { Errors } from '../../protocol/errors.ts';
import { makeCreateAclsResponse, type CreateAclsRequest, type CreateAclsResponse } from '../../protocol/messages/create-acls.ts';
import { makeDeleteAclsResponse, type DeleteAclsRequest, type DeleteAclsResponse } from '../../protocol/messages/delete-acls.ts';
import {
  makeDescribeAclsResponse,
  type DescribeAclsRequest,
  type DescribeAclsResponse,
  type DescribeAclsResponseDescribeAclsResource,
} from '../../protocol/messages/describe-acls.ts';
import type { QuorumController } from '../metadata/controller.ts';
import type { MetadataImage } from '../metadata/image.ts';
import { filterRefusal, matchesFilter } from '../security/acl-filter.ts';
import type { AclBindingFilter } from '../security/acl-types.ts';

export async function handleCreateAcls(controller: QuorumController, request: CreateAclsRequest): Promise<CreateAclsResponse> {
  const results = await controller.createAcls(request.creations);
  return makeCreateAclsResponse({ results: results.map((r) => ({ ...r })) });
}

export async function handleDeleteAcls(controller: QuorumController, request: DeleteAclsRequest): Promise<DeleteAclsResponse> {
  const results = await controller.deleteAcls(request.filters);
  return makeDeleteAclsResponse({
    filterResults: results.map((r) => ({
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      matchingAcls: r.matching.map((b) => ({ errorCode: Errors.NONE.code, errorMessage: null, ...b })),
    })),
  });
}

export function handleDescribeAcls(image: MetadataImage, request: DescribeAclsRequest): DescribeAclsResponse {
  const filter: AclBindingFilter = {
    resourceType: request.resourceTypeFilter,
    resourceName: request.resourceNameFilter,
    patternType: request.patternTypeFilter,
    principal: request.principalFilter,
    host: request.hostFilter,
    operation: request.operation,
    permissionType: request.permissionType,
  };
  const refusal = filterRefusal(filter);
  if (refusal !== null) return makeDescribeAclsResponse({ errorCode: refusal.errorCode, errorMessage: refusal.message, resources: [] });
  const resources = new Map<string, DescribeAclsResponseDescribeAclsResource>();
  for (const binding of image.acls.values()) {
    if (!matchesFilter(binding, filter)) continue;
    const key = `${binding.resourceType}\u0000${binding.patternType}\u0000${binding.resourceName}`;
    let resource = resources.get(key);
    if (resource === undefined) {
      resource = { resourceType: binding.resourceType, resourceName: binding.resourceName, patternType: binding.patternType, acls: [] };
      resources.set(key, resource);
    }
    resource.acls.push({
      principal: binding.principal,
      host: binding.host,
      operation: binding.operation,
      permissionType: binding.permissionType,
    });
  }
  return makeDescribeAclsResponse({ resources: [...resources.values()] });
}
