/**
 * Kafka's per-request authorization (KafkaApis, ControllerApis and the coordinators' handlers
 * they call), applied around the handlers: `authorizing(apiKey, handler, authorizer)` is the
 * handler as Kafka would serve it with that authorizer. Whole-request refusals answer the API's
 * error response without calling the handler; per-resource refusals call it with a copy of the
 * request holding only the authorized part, and merge the refused parts back into its response
 * in request order with Kafka's error codes. Where Kafka leaves out what the principal may not
 * DESCRIBE (all-topics Metadata, ListGroups, ListTransactions), the response is filtered.
 *
 * The policy of every API, by family: data-path.ts, groups.ts, transactions.ts, metadata.ts,
 * admin.ts; the cluster-level APIs are in the table below.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import type { Authorizer } from '../security/acl-types.ts';
import { AclOperation } from '../security/acl-types.ts';
import type { RequestContext } from '../server/session.ts';
import {
  alterConfigs,
  createPartitions,
  createTopics,
  deleteTopics,
  describeConfigs,
  incrementalAlterConfigs,
} from './authorization/admin.ts';
import {
  alterClientQuotas,
  alterPartitionReassignments,
  alterUserScramCredentials,
  createAcls,
  deleteAcls,
  electLeaders,
} from './authorization/cluster.ts';
import {
  deleteRecords,
  describeLogDirs,
  describeProducers,
  fetch,
  initProducerId,
  listOffsets,
  offsetForLeaderEpoch,
  produce,
  writeTxnMarkers,
} from './authorization/data-path.ts';
import {
  deleteGroups,
  describeGroups,
  findCoordinator,
  heartbeat,
  joinGroup,
  leaveGroup,
  listGroups,
  offsetCommit,
  offsetDelete,
  offsetFetch,
  syncGroup,
  txnOffsetCommit,
} from './authorization/groups.ts';
import { describeCluster, describeTopicPartitions, metadata } from './authorization/metadata.ts';
import { Access, clusterOperation, type Policy, type TopicLookup } from './authorization/policy.ts';
import { addOffsetsToTxn, addPartitionsToTxn, describeTransactions, endTxn, listTransactions } from './authorization/transactions.ts';
import type { ApiHandler } from './registry.ts';

export type { TopicLookup } from './authorization/policy.ts';

type Policies = { readonly [K in ApiKey]?: Policy<K> };

const POLICIES: Policies = {
  [ApiKey.Produce]: produce,
  [ApiKey.Fetch]: fetch,
  [ApiKey.ListOffsets]: listOffsets,
  [ApiKey.Metadata]: metadata,
  [ApiKey.OffsetCommit]: offsetCommit,
  [ApiKey.OffsetFetch]: offsetFetch,
  [ApiKey.FindCoordinator]: findCoordinator,
  [ApiKey.JoinGroup]: joinGroup,
  [ApiKey.Heartbeat]: heartbeat,
  [ApiKey.LeaveGroup]: leaveGroup,
  [ApiKey.SyncGroup]: syncGroup,
  [ApiKey.DescribeGroups]: describeGroups,
  [ApiKey.ListGroups]: listGroups,
  [ApiKey.CreateTopics]: createTopics,
  [ApiKey.DeleteTopics]: deleteTopics,
  [ApiKey.DeleteRecords]: deleteRecords,
  [ApiKey.InitProducerId]: initProducerId,
  [ApiKey.OffsetForLeaderEpoch]: offsetForLeaderEpoch,
  [ApiKey.AddPartitionsToTxn]: addPartitionsToTxn,
  [ApiKey.AddOffsetsToTxn]: addOffsetsToTxn,
  [ApiKey.EndTxn]: endTxn,
  [ApiKey.WriteTxnMarkers]: writeTxnMarkers,
  [ApiKey.TxnOffsetCommit]: txnOffsetCommit,
  [ApiKey.DescribeAcls]: clusterOperation(AclOperation.DESCRIBE),
  [ApiKey.CreateAcls]: createAcls,
  [ApiKey.DeleteAcls]: deleteAcls,
  [ApiKey.DescribeConfigs]: describeConfigs,
  [ApiKey.AlterConfigs]: alterConfigs,
  [ApiKey.DescribeLogDirs]: describeLogDirs,
  [ApiKey.CreatePartitions]: createPartitions,
  [ApiKey.DeleteGroups]: deleteGroups,
  [ApiKey.ElectLeaders]: electLeaders,
  [ApiKey.IncrementalAlterConfigs]: incrementalAlterConfigs,
  [ApiKey.AlterPartitionReassignments]: alterPartitionReassignments,
  [ApiKey.ListPartitionReassignments]: clusterOperation(AclOperation.DESCRIBE),
  [ApiKey.OffsetDelete]: offsetDelete,
  [ApiKey.DescribeClientQuotas]: clusterOperation(AclOperation.DESCRIBE_CONFIGS),
  [ApiKey.AlterClientQuotas]: alterClientQuotas,
  [ApiKey.DescribeUserScramCredentials]: clusterOperation(AclOperation.DESCRIBE),
  [ApiKey.AlterUserScramCredentials]: alterUserScramCredentials,
  [ApiKey.Vote]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.BeginQuorumEpoch]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.EndQuorumEpoch]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.DescribeQuorum]: clusterOperation(AclOperation.DESCRIBE),
  [ApiKey.AlterPartition]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.FetchSnapshot]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.DescribeCluster]: describeCluster,
  [ApiKey.DescribeProducers]: describeProducers,
  [ApiKey.BrokerRegistration]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.BrokerHeartbeat]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.DescribeTransactions]: describeTransactions,
  [ApiKey.ListTransactions]: listTransactions,
  [ApiKey.AllocateProducerIds]: clusterOperation(AclOperation.CLUSTER_ACTION),
  // Only a broker may speak for its clients (ControllerApis.handleEnvelopeRequest).
  [ApiKey.Envelope]: clusterOperation(AclOperation.CLUSTER_ACTION),
  [ApiKey.DescribeTopicPartitions]: describeTopicPartitions,
  [ApiKey.AddRaftVoter]: clusterOperation(AclOperation.ALTER),
  [ApiKey.RemoveRaftVoter]: clusterOperation(AclOperation.ALTER),
  [ApiKey.UpdateRaftVoter]: clusterOperation(AclOperation.CLUSTER_ACTION),
};

/** The APIs whose policy reads topic facts before the handler runs: topic ids, existence, auto-creation. */
const NEEDS_TOPIC_LOOKUP: ReadonlySet<ApiKey> = new Set([ApiKey.Metadata, ApiKey.Fetch, ApiKey.DeleteTopics, ApiKey.AddPartitionsToTxn]);

/** Served before and during authentication, to anyone, as Kafka does. */
const UNAUTHORIZED_APIS: ReadonlySet<ApiKey> = new Set([ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate]);

/**
 * `handler` wrapped with Kafka's authorization of api `apiKey`; `authorizer()` null means no
 * authorizer is configured: the handler runs as it is. Metadata, Fetch, DeleteTopics and
 * AddPartitionsToTxn need `topics`; wrapping them without it, or wrapping an API with no known
 * policy, is a programming error and throws.
 */
export function authorizing<K extends ApiKey>(
  apiKey: K,
  handler: ApiHandler<K>,
  authorizer: () => Authorizer | null,
  topics?: TopicLookup,
): ApiHandler<K> {
  if (UNAUTHORIZED_APIS.has(apiKey)) return handler;
  const policy = (POLICIES as { readonly [key: number]: Policy<K> | undefined })[apiKey];
  if (policy === undefined) throw new Error(`api key ${apiKey} has no authorization policy`);
  if (NEEDS_TOPIC_LOOKUP.has(apiKey) && topics === undefined) throw new Error(`api key ${apiKey}: authorization needs a TopicLookup`);
  return guarded(apiKey, policy, handler, authorizer, topics);
}

/**
 * `handler` for a controller-listener registration of a Raft or broker-to-controller API
 * (ControllerApis's Fetch, FetchSnapshot, ...): the whole request needs CLUSTER_ACTION on the
 * cluster.
 */
export function authorizingClusterAction<K extends ApiKey>(handler: ApiHandler<K>, authorizer: () => Authorizer | null): ApiHandler<K> {
  return (ctx, request, version) =>
    guarded(ctx.apiKey as K, clusterOperation<K>(AclOperation.CLUSTER_ACTION), handler, authorizer, undefined)(ctx, request, version);
}

function guarded<K extends ApiKey>(
  apiKey: K,
  policy: Policy<K>,
  handler: ApiHandler<K>,
  authorizer: () => Authorizer | null,
  topics: TopicLookup | undefined,
): ApiHandler<K> {
  return async (ctx, request, version) => {
    const current = authorizer();
    if (current === null) return handler(ctx, request, version);
    return policy({
      apiKey,
      ctx,
      request,
      version,
      access: new Access(current, identityOf(ctx)),
      topics,
      next: async (authorized) => handler(ctx, authorized, version),
    });
  };
}

/** Whether `ctx`'s principal may do `operation` on the cluster; anyone may without an authorizer. */
export function allowsClusterOperation(authorizer: Authorizer | null, ctx: RequestContext, operation: number): boolean {
  return authorizer === null || new Access(authorizer, identityOf(ctx)).allowsCluster(operation);
}

/** Who asks: the connection's principal and the client's address without its port. */
function identityOf(ctx: RequestContext): { principal: string; host: string } {
  return { principal: ctx.session.principal, host: hostOf(ctx.session.clientAddress) };
}

/** `host:port`, `[v6]:port` or a bare host, as the authorizer's host (IPv6 without brackets). */
function hostOf(address: string): string {
  if (address.startsWith('[')) {
    const end = address.indexOf(']');
    return end === -1 ? address : address.slice(1, end);
  }
  const colon = address.lastIndexOf(':');
  // More than one colon and no brackets: a bare IPv6 address.
  if (colon === -1 || address.indexOf(':') !== colon) return address;
  return address.slice(0, colon);
}
