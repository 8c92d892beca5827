/**
 * The cluster-level APIs whose refusal Kafka answers per element of the request (each
 * election, reassignment, credential, ACL or quota entry carries CLUSTER_AUTHORIZATION_FAILED),
 * as their requests' getErrorResponse build it; the other cluster-level APIs answer the generic
 * error response (policy.ts).
 */
import { Errors } from '../../../protocol/errors.ts';
import { makeAlterClientQuotasResponse } from '../../../protocol/messages/alter-client-quotas.ts';
import { makeAlterPartitionReassignmentsResponse } from '../../../protocol/messages/alter-partition-reassignments.ts';
import { makeAlterUserScramCredentialsResponse } from '../../../protocol/messages/alter-user-scram-credentials.ts';
import { makeCreateAclsResponse } from '../../../protocol/messages/create-acls.ts';
import { makeDeleteAclsResponse } from '../../../protocol/messages/delete-acls.ts';
import { makeElectLeadersResponse } from '../../../protocol/messages/elect-leaders.ts';
import type { ApiKey } from '../../../protocol/messages/index.ts';
import { AclOperation } from '../../security/acl-types.ts';
import { clusterOperation, type Policy } from './policy.ts';

const errorCode = Errors.CLUSTER_AUTHORIZATION_FAILED.code;
const errorMessage = Errors.CLUSTER_AUTHORIZATION_FAILED.message;

/** ALTER on the cluster; refused, every named partition carries the error. */
export const electLeaders: Policy<ApiKey.ElectLeaders> = clusterOperation(AclOperation.ALTER, ({ request }) =>
  makeElectLeadersResponse({
    errorCode,
    replicaElectionResults: (request.topicPartitions ?? []).map((t) => ({
      topic: t.topic,
      partitionResult: t.partitions.map((partitionId) => ({ partitionId, errorCode, errorMessage })),
    })),
  }),
);

/** ALTER on the cluster; refused, the top-level error and every partition's. */
export const alterPartitionReassignments: Policy<ApiKey.AlterPartitionReassignments> = clusterOperation(AclOperation.ALTER, ({ request }) =>
  makeAlterPartitionReassignmentsResponse({
    errorCode,
    errorMessage,
    responses: request.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode, errorMessage })),
    })),
  }),
);

/** ALTER on the cluster; refused, every deletion then every upsertion answers for its user. */
export const alterUserScramCredentials: Policy<ApiKey.AlterUserScramCredentials> = clusterOperation(AclOperation.ALTER, ({ request }) =>
  makeAlterUserScramCredentialsResponse({
    results: [...request.deletions, ...request.upsertions].map((c) => ({ user: c.name, errorCode, errorMessage })),
  }),
);

/** ALTER on the cluster; refused, one result per creation. */
export const createAcls: Policy<ApiKey.CreateAcls> = clusterOperation(AclOperation.ALTER, ({ request }) =>
  makeCreateAclsResponse({ results: request.creations.map(() => ({ errorCode, errorMessage })) }),
);

/** ALTER on the cluster; refused, one result per filter, matching nothing. */
export const deleteAcls: Policy<ApiKey.DeleteAcls> = clusterOperation(AclOperation.ALTER, ({ request }) =>
  makeDeleteAclsResponse({ filterResults: request.filters.map(() => ({ errorCode, errorMessage, matchingAcls: [] })) }),
);

/** ALTER_CONFIGS on the cluster; refused, every entry answers for its entity. */
export const alterClientQuotas: Policy<ApiKey.AlterClientQuotas> = clusterOperation(AclOperation.ALTER_CONFIGS, ({ request }) =>
  makeAlterClientQuotasResponse({
    entries: request.entries.map((e) => ({
      errorCode,
      errorMessage,
      entity: e.entity.map((d) => ({ entityType: d.entityType, entityName: d.entityName })),
    })),
  }),
);
