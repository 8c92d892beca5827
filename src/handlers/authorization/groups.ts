/**
 * Authorization of the group APIs, as KafkaApis's handleFindCoordinatorRequest, the group
 * membership handlers, handleOffsetCommitRequest, handleTxnOffsetCommitRequest,
 * handleOffsetFetchRequest, handleDescribeGroupsRequest, handleListGroupsRequest,
 * handleDeleteGroupsRequest and handleOffsetDeleteRequest do it.
 */
import { Errors, type KafkaErrorCode } from '../../../protocol/errors.ts';
import { makeDeleteGroupsResponse, makeDeleteGroupsResponseDeletableGroupResult } from '../../../protocol/messages/delete-groups.ts';
import { makeDescribeGroupsResponse, makeDescribeGroupsResponseDescribedGroup } from '../../../protocol/messages/describe-groups.ts';
import { makeFindCoordinatorResponse, makeFindCoordinatorResponseCoordinator } from '../../../protocol/messages/find-coordinator.ts';
import { makeHeartbeatResponse } from '../../../protocol/messages/heartbeat.ts';
import type { ApiKey } from '../../../protocol/messages/index.ts';
import { makeJoinGroupResponse } from '../../../protocol/messages/join-group.ts';
import { makeLeaveGroupResponse } from '../../../protocol/messages/leave-group.ts';
import {
  makeOffsetCommitResponse,
  makeOffsetCommitResponsePartition,
  makeOffsetCommitResponseTopic,
} from '../../../protocol/messages/offset-commit.ts';
import {
  makeOffsetDeleteResponse,
  makeOffsetDeleteResponsePartition,
  makeOffsetDeleteResponseTopic,
} from '../../../protocol/messages/offset-delete.ts';
import {
  makeOffsetFetchResponse,
  makeOffsetFetchResponsePartition,
  makeOffsetFetchResponsePartitions,
  type OffsetFetchRequestTopic,
  type OffsetFetchRequestTopics,
  type OffsetFetchResponse,
  type OffsetFetchResponsePartitions,
} from '../../../protocol/messages/offset-fetch.ts';
import { makeSyncGroupResponse } from '../../../protocol/messages/sync-group.ts';
import {
  makeTxnOffsetCommitResponse,
  makeTxnOffsetCommitResponsePartition,
  makeTxnOffsetCommitResponseTopic,
} from '../../../protocol/messages/txn-offset-commit.ts';
import { AclOperation, ResourceType } from '../../security/acl-types.ts';
import { inRequestOrder, refuse, type Access, type Policy } from './policy.ts';

const KEY_TYPE_GROUP = 0;
const KEY_TYPE_TRANSACTION = 1;
const KEY_TYPE_SHARE = 2;

/** What FindCoordinator needs for a key of `keyType`, and the error when it is missing (null: no check here). */
function coordinatorKeyRefusal(access: Access, keyType: number, key: string): KafkaErrorCode | null {
  if (keyType === KEY_TYPE_GROUP) return access.allowsGroup(AclOperation.DESCRIBE, key) ? null : Errors.GROUP_AUTHORIZATION_FAILED;
  if (keyType === KEY_TYPE_TRANSACTION) {
    return access.allowsTransactionalId(AclOperation.DESCRIBE, key) ? null : Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  }
  return null;
}

/**
 * DESCRIBE on the group or on the transactional id of each key; share coordinators are for
 * brokers (CLUSTER_ACTION). v4+ answers each key, older versions the one key.
 */
export const findCoordinator: Policy<ApiKey.FindCoordinator> = async (call) => {
  const { request, version, access } = call;
  if (request.keyType === KEY_TYPE_SHARE && !access.allowsCluster(AclOperation.CLUSTER_ACTION)) {
    const error = Errors.CLUSTER_AUTHORIZATION_FAILED;
    return makeFindCoordinatorResponse({
      coordinators: request.coordinatorKeys.map((key) =>
        makeFindCoordinatorResponseCoordinator({ key, errorCode: error.code, errorMessage: error.message, nodeId: -1, host: '', port: -1 }),
      ),
    });
  }
  if (version < 4) {
    const error = coordinatorKeyRefusal(access, request.keyType, request.key);
    if (error === null) return call.next(request);
    return makeFindCoordinatorResponse({ errorCode: error.code, errorMessage: error.message, nodeId: -1, host: '', port: -1 });
  }
  const refusal = (key: string) => {
    const error = coordinatorKeyRefusal(access, request.keyType, key);
    return error === null ? null : makeFindCoordinatorResponseCoordinator({ key, errorCode: error.code, nodeId: -1, host: '', port: -1 });
  };
  const authorized = request.coordinatorKeys.filter((key) => refusal(key) === null);
  if (authorized.length === request.coordinatorKeys.length) return call.next(request);
  const base =
    (authorized.length > 0 ? await call.next({ ...request, coordinatorKeys: authorized }) : null) ?? makeFindCoordinatorResponse();
  return { ...base, coordinators: inRequestOrder(request.coordinatorKeys, refusal, base.coordinators, (key, c) => key === c.key) };
};

const GROUP_AUTHORIZATION_FAILED = Errors.GROUP_AUTHORIZATION_FAILED.code;

/** READ on the group, else Kafka's JoinGroupRequest.getErrorResponse: no member id, no generation. */
export const joinGroup: Policy<ApiKey.JoinGroup> = async (call) =>
  call.access.allowsGroup(AclOperation.READ, call.request.groupId)
    ? call.next(call.request)
    : makeJoinGroupResponse({
        errorCode: GROUP_AUTHORIZATION_FAILED,
        generationId: -1,
        protocolName: call.version >= 7 ? null : '',
        leader: '',
        memberId: '',
        members: [],
      });

export const syncGroup: Policy<ApiKey.SyncGroup> = async (call) =>
  call.access.allowsGroup(AclOperation.READ, call.request.groupId)
    ? call.next(call.request)
    : makeSyncGroupResponse({ errorCode: GROUP_AUTHORIZATION_FAILED, assignment: Buffer.alloc(0) });

export const heartbeat: Policy<ApiKey.Heartbeat> = async (call) =>
  call.access.allowsGroup(AclOperation.READ, call.request.groupId)
    ? call.next(call.request)
    : makeHeartbeatResponse({ errorCode: GROUP_AUTHORIZATION_FAILED });

/** READ on the group; refused, the top-level error only (no member results), as LeaveGroupRequest.getErrorResponse. */
export const leaveGroup: Policy<ApiKey.LeaveGroup> = async (call) =>
  call.access.allowsGroup(AclOperation.READ, call.request.groupId)
    ? call.next(call.request)
    : makeLeaveGroupResponse({ errorCode: GROUP_AUTHORIZATION_FAILED });

const TOPIC_AUTHORIZATION_FAILED = Errors.TOPIC_AUTHORIZATION_FAILED.code;

/** READ on the group (the whole request), then READ on each topic; with no topic authorized the handler is not called. */
export const offsetCommit: Policy<ApiKey.OffsetCommit> = async (call) => {
  const { request, access } = call;
  if (!access.allowsGroup(AclOperation.READ, request.groupId)) return refuse(call, Errors.GROUP_AUTHORIZATION_FAILED);
  const readable = access.topicFilter(AclOperation.READ);
  const authorized = request.topics.filter((t) => readable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeOffsetCommitResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    readable(t.name)
      ? null
      : makeOffsetCommitResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) =>
            makeOffsetCommitResponsePartition({ partitionIndex: p.partitionIndex, errorCode: TOPIC_AUTHORIZATION_FAILED }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name) };
};

/** WRITE on the transactional id, READ on the group (each the whole request), then READ on each topic. */
export const txnOffsetCommit: Policy<ApiKey.TxnOffsetCommit> = async (call) => {
  const { request, access } = call;
  if (!access.allowsTransactionalId(AclOperation.WRITE, request.transactionalId)) {
    return refuse(call, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  }
  if (!access.allowsGroup(AclOperation.READ, request.groupId)) return refuse(call, Errors.GROUP_AUTHORIZATION_FAILED);
  const readable = access.topicFilter(AclOperation.READ);
  const authorized = request.topics.filter((t) => readable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeTxnOffsetCommitResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    readable(t.name)
      ? null
      : makeTxnOffsetCommitResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) =>
            makeTxnOffsetCommitResponsePartition({ partitionIndex: p.partitionIndex, errorCode: TOPIC_AUTHORIZATION_FAILED }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name) };
};

/**
 * DELETE on the group (the whole request; the coordinator is asked even with no topic left,
 * for the group's own errors), then READ on each topic.
 */
export const offsetDelete: Policy<ApiKey.OffsetDelete> = async (call) => {
  const { request, access } = call;
  if (!access.allowsGroup(AclOperation.DELETE, request.groupId)) return makeOffsetDeleteResponse({ errorCode: GROUP_AUTHORIZATION_FAILED });
  const readable = access.topicFilter(AclOperation.READ);
  const authorized = request.topics.filter((t) => readable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (await call.next({ ...request, topics: authorized })) ?? makeOffsetDeleteResponse();
  if (base.errorCode !== Errors.NONE.code) return base;
  const refused = (t: (typeof request.topics)[number]) =>
    readable(t.name)
      ? null
      : makeOffsetDeleteResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) =>
            makeOffsetDeleteResponsePartition({ partitionIndex: p.partitionIndex, errorCode: TOPIC_AUTHORIZATION_FAILED }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name) };
};

interface GroupOffsets {
  errorCode: number;
  topics: { name: string; partitions: OffsetFetchResponsePartitions[] }[];
}

/**
 * One group's offsets as Kafka answers them: a group error stands alone; all topics asked for
 * keeps the describable ones; named topics the principal may not DESCRIBE answer
 * TOPIC_AUTHORIZATION_FAILED per partition.
 */
function groupOffsets(
  requested: readonly OffsetFetchRequestTopics[] | null,
  answer: GroupOffsets,
  describable: (name: string) => boolean,
): GroupOffsets {
  if (answer.errorCode !== Errors.NONE.code) return answer;
  if (requested === null) return { ...answer, topics: answer.topics.filter((t) => describable(t.name)) };
  const refused = (t: OffsetFetchRequestTopics) =>
    describable(t.name)
      ? null
      : {
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) =>
            makeOffsetFetchResponsePartitions({ partitionIndex, committedOffset: -1n, errorCode: TOPIC_AUTHORIZATION_FAILED }),
          ),
        };
  return { ...answer, topics: inRequestOrder(requested, refused, answer.topics, (t, r) => t.name === r.name) };
}

function describableTopics(topics: readonly OffsetFetchRequestTopics[] | null, describable: (name: string) => boolean) {
  return topics === null ? null : topics.filter((t) => describable(t.name));
}

/**
 * OffsetFetchRequest.getErrorResponse of v0-v7 for GROUP_AUTHORIZATION_FAILED: v2+ carries it
 * at the top level alone, v0-v1 on each requested partition.
 */
function refusedSingleGroup(topics: readonly OffsetFetchRequestTopic[], version: number): OffsetFetchResponse {
  if (version >= 2) return makeOffsetFetchResponse({ errorCode: GROUP_AUTHORIZATION_FAILED });
  return makeOffsetFetchResponse({
    topics: topics.map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) =>
        makeOffsetFetchResponsePartition({ partitionIndex, committedOffset: -1n, metadata: '', errorCode: GROUP_AUTHORIZATION_FAILED }),
      ),
    })),
  });
}

/** DESCRIBE on each group, then DESCRIBE on each topic: only describable topics reach the handler. */
export const offsetFetch: Policy<ApiKey.OffsetFetch> = async (call) => {
  const { request, version, access } = call;
  const describable = access.topicFilter(AclOperation.DESCRIBE);
  if (version < 8) {
    if (!access.allowsGroup(AclOperation.DESCRIBE, request.groupId)) return refusedSingleGroup(request.topics ?? [], version);
    const requested = version <= 1 ? (request.topics ?? []) : request.topics;
    const response = await call.next({ ...request, topics: describableTopics(requested, describable) });
    return response === null ? null : { ...response, topics: groupOffsets(requested, response, describable).topics };
  }
  const allowed = (groupId: string) => access.allowsGroup(AclOperation.DESCRIBE, groupId);
  const asked = request.groups.filter((g) => allowed(g.groupId)).map((g) => ({ ...g, topics: describableTopics(g.topics, describable) }));
  const response = asked.length > 0 ? await call.next({ ...request, groups: asked }) : null;
  const groups = request.groups.map((g) => {
    if (!allowed(g.groupId)) return { groupId: g.groupId, topics: [], errorCode: GROUP_AUTHORIZATION_FAILED };
    const answer = response?.groups.find((r) => r.groupId === g.groupId) ?? { errorCode: Errors.NONE.code, topics: [] };
    return { groupId: g.groupId, ...groupOffsets(g.topics, answer, describable) };
  });
  return { ...(response ?? { throttleTimeMs: 0, topics: [], errorCode: Errors.NONE.code }), groups };
};

/** DESCRIBE on each group; authorized operations for the groups described without error (v3+, when asked). */
export const describeGroups: Policy<ApiKey.DescribeGroups> = async (call) => {
  const { request, version, access } = call;
  const authorized = request.groups.filter((g) => access.allowsGroup(AclOperation.DESCRIBE, g));
  const base =
    (authorized.length === request.groups.length
      ? await call.next(request)
      : authorized.length > 0
        ? await call.next({ ...request, groups: authorized })
        : null) ?? makeDescribeGroupsResponse();
  const allowed = new Set(authorized);
  const refused = (groupId: string) =>
    allowed.has(groupId) ? null : makeDescribeGroupsResponseDescribedGroup({ groupId, errorCode: GROUP_AUTHORIZATION_FAILED });
  const groups = inRequestOrder(request.groups, refused, base.groups, (groupId, g) => g.groupId === groupId);
  const withOperations = version >= 3 && request.includeAuthorizedOperations;
  return {
    ...base,
    groups: groups.map((g) =>
      withOperations && g.errorCode === Errors.NONE.code
        ? { ...g, authorizedOperations: access.operations(ResourceType.GROUP, g.groupId) }
        : g,
    ),
  };
};

/** Every group for DESCRIBE on the cluster, else only the groups the principal may DESCRIBE. */
export const listGroups: Policy<ApiKey.ListGroups> = async (call) => {
  const { access } = call;
  const all = access.allowsCluster(AclOperation.DESCRIBE);
  const response = await call.next(call.request);
  if (all || response === null) return response;
  return { ...response, groups: response.groups.filter((g) => access.allowsGroup(AclOperation.DESCRIBE, g.groupId)) };
};

/** DELETE on each group. */
export const deleteGroups: Policy<ApiKey.DeleteGroups> = async (call) => {
  const { request, access } = call;
  const authorized = request.groupsNames.filter((g) => access.allowsGroup(AclOperation.DELETE, g));
  if (authorized.length === request.groupsNames.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, groupsNames: authorized }) : null) ?? makeDeleteGroupsResponse();
  const allowed = new Set(authorized);
  const refused = (groupId: string) =>
    allowed.has(groupId) ? null : makeDeleteGroupsResponseDeletableGroupResult({ groupId, errorCode: GROUP_AUTHORIZATION_FAILED });
  return { ...base, results: inRequestOrder(request.groupsNames, refused, base.results, (groupId, r) => r.groupId === groupId) };
};
