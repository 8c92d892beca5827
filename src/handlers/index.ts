/**
 * The dispatch table: every API this broker serves, with its handler and where it differs from
 * the codec's defaults (listeners, version bounds). This file is the only place that registers
 * handlers; src/broker.ts calls registerHandlers once every component exists and before the
 * listeners open.
 *
 * Each handler family declares the narrow services it needs (`ProduceServices`,
 * `QuorumServices`, `GroupHandlerServices`, ...) and receives them here, in a closure: a
 * handler reaches nothing else, and the RequestContext carries only the connection and the
 * request. The request and response types of every registration follow from its api key
 * (`ApiMessages`, generated from the Kafka spec), so none is written out here.
 *
 * The admin APIs that change metadata or leadership are served per role, as in Kafka's KRaft
 * mode: on broker listeners they are forwarded to the active controller (forward.ts), on
 * controller listeners the controller-side handlers (topics.ts, configs.ts, controller-apis.ts)
 * serve them. The broker-to-controller RPCs (BrokerRegistration, BrokerHeartbeat,
 * AlterPartition, AllocateProducerIds) are served on controller listeners only.
 * `controllerSideHandlers` is the same table for the controller channel, which calls it
 * in-process when this node is the active controller.
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import type { ControllerHandler, ForwardedApiKey } from '../metadata/controller-channel.ts';
import { handleApiVersions } from './api-versions.ts';
import { handleDescribeCluster, handleDescribeTopicPartitions } from './cluster.ts';
import { handleAlterConfigs, handleDescribeConfigs, handleIncrementalAlterConfigs } from './configs.ts';
import {
  handleAllocateProducerIds,
  handleAlterPartition,
  handleAlterPartitionReassignments,
  handleBrokerHeartbeat,
  handleBrokerRegistration,
  handleElectLeaders,
  handleListPartitionReassignments,
  type ControllerApiServices,
} from './controller-apis.ts';
import { handleDeleteRecords, type DeleteRecordsServices } from './delete-records.ts';
import type { RequestContext } from '../server/session.ts';
import type { Logger } from '../observability/logger.ts';
import { STRICT_SINCE, withMutationQuota, type MutationQuotas } from './mutation-quota.ts';
import { handleEnvelope, handleLocalEnvelope, type EnvelopeServices } from './envelope.ts';
import { forwardingFor } from './envelope-forwarding.ts';
import { handleFetch, type FetchBandwidth, type FetchServices } from './fetch.ts';
import {
  forwardAlterConfigs,
  forwardCreatePartitions,
  forwardCreateTopics,
  forwardDeleteTopics,
  forwardIncrementalAlterConfigs,
  forwardToController,
  type ForwardingServices,
} from './forward.ts';
import {
  handleDeleteGroups,
  handleDescribeGroups,
  handleFindCoordinator,
  handleHeartbeat,
  handleJoinGroup,
  handleLeaveGroup,
  handleListGroups,
  handleOffsetCommit,
  handleOffsetDelete,
  handleOffsetFetch,
  handleTxnOffsetCommit,
  handleSyncGroup,
  type GroupHandlerServices,
} from './groups.ts';
import { handleListOffsets, type ListOffsetsServices } from './list-offsets.ts';
import { handleDescribeLogDirs, type DescribeLogDirsServices } from './log-dirs.ts';
import { handleMetadata, type MetadataHandlerServices, type MetadataRequestServices } from './metadata.ts';
import { handleOffsetForLeaderEpoch, type OffsetForLeaderEpochServices } from './offset-for-leader-epoch.ts';
import { handleProduce, type ProduceServices } from './produce.ts';
import { handleDescribeProducers, handleInitProducerId, type ProducerIdServices } from './producer-id.ts';
import {
  handleAddRaftVoter,
  handleBeginQuorumEpoch,
  handleDescribeQuorum,
  handleEndQuorumEpoch,
  handleFetchSnapshot,
  handleMetadataFetch,
  handleRemoveRaftVoter,
  handleUpdateRaftVoter,
  handleVote,
  type QuorumServices,
} from './quorum.ts';
import type { HandlerRegistry } from './registry.ts';
import { allowsClusterOperation, authorizing, authorizingClusterAction, type TopicLookup } from './authorization.ts';
import { AclOperation } from '../security/acl-types.ts';
import type { Authorizer } from '../security/acl-types.ts';
import { handleSaslAuthenticate, handleSaslHandshake } from './sasl.ts';
import { handleAlterUserScramCredentials, handleDescribeUserScramCredentials } from './scram.ts';
import { handleCreateAcls, handleDeleteAcls, handleDescribeAcls } from './acls.ts';
import { handleAlterClientQuotas, handleDescribeClientQuotas } from './client-quotas.ts';
import { handleWriteTxnMarkers, type TxnMarkerServices } from './txn-markers.ts';
import {
  handleAddOffsetsToTxn,
  handleAddPartitionsToTxn,
  handleDescribeTransactions,
  handleEndTxn,
  handleListTransactions,
  type TransactionHandlerServices,
} from './transactions.ts';
import type { TransactionCoordinatorLookup } from './groups.ts';
import { handleCreatePartitions, handleCreateTopics, handleDeleteTopics } from './topics.ts';

/** The data path's handlers: Produce, Fetch, offsets, log dirs, producer ids. */
export type DataPathHandlerServices = ProduceServices &
  FetchServices &
  ListOffsetsServices &
  DeleteRecordsServices &
  DescribeLogDirsServices &
  OffsetForLeaderEpochServices &
  ProducerIdServices &
  TxnMarkerServices;

/** What the controller-side handlers reach: the admin APIs' services and the broker-to-controller RPCs'. */
export interface ControllerSideServices {
  readonly metadata: MetadataHandlerServices;
  readonly controllerApis: ControllerApiServices;
  /** Where a forwarded request is served from its Envelope. */
  readonly envelope: EnvelopeServices;
  /** The controller_mutation_rate quota of CreateTopics, CreatePartitions and DeleteTopics; absent: none. */
  readonly mutationQuota?: MutationQuotas;
}

/** Everything the handlers reach, by family. */
export interface HandlerServices extends ControllerSideServices {
  /** Metadata and the admin APIs on controller listeners: the image, the controller, the broker's config. */
  readonly metadata: MetadataRequestServices;
  /** The KRaft RPCs: the node's Raft client. */
  readonly quorum: QuorumServices;
  readonly dataPath: DataPathHandlerServices;
  readonly groups: GroupHandlerServices;
  /** The transaction coordinator: FindCoordinator for transactional ids and the transaction APIs. */
  readonly transactions: TransactionHandlerServices & TransactionCoordinatorLookup;
  /** The admin APIs on broker listeners: the channel to the active controller, the local image. */
  readonly forwarding: ForwardingServices;
  readonly access: RequestAccess;
  /** Where a handler logs a request it refused in part (a client's mistake: info). */
  readonly logger: Pick<Logger, 'info'>;
  /** A consumer's byte-rate quota for one Fetch (src/server/quota-managers.ts); null or absent: none. */
  readonly fetchBandwidth?: (ctx: RequestContext, request: unknown) => FetchBandwidth | null;
}

/** Where the handlers are registered: the registry itself, or through Kafka's authorization of each API. */
type Registrar = Pick<HandlerRegistry, 'register'>;

/** Who may do what: the ACL authorizer (null: none configured, every request allowed) and what it needs to know of topics. */
export interface RequestAccess {
  readonly authorizer: Authorizer | null;
  readonly topics: TopicLookup;
}

/**
 * Every registration wrapped in the authorization Kafka's KafkaApis and ControllerApis apply
 * to its API (authorization.ts); without an authorizer the handlers are registered as they are.
 */
function authorizedRegistrar(registry: HandlerRegistry, access: RequestAccess): Registrar {
  const authorizer = access.authorizer;
  if (authorizer === null) return registry;
  return {
    register(apiKey, handler, options) {
      const wrapped =
        apiKey === ApiKey.Fetch && options?.listeners === 'controller'
          ? authorizingClusterAction(handler, () => authorizer)
          : authorizing(apiKey, handler, () => authorizer, access.topics);
      registry.register(apiKey, wrapped, options);
    },
  };
}

/** Registers every API of a broker node (broker and controller listeners). */
export function registerHandlers(root: HandlerRegistry, services: HandlerServices): void {
  registerApiVersions(root);
  const registry = authorizedRegistrar(root, services.access);
  registerSaslApis(registry);
  registerMetadataApis(registry, services.metadata);
  registerForwardedApis(root, services.forwarding, services.access);
  registerControllerApis(registry, root, services);
  registerQuorumApis(registry, services.quorum);
  registerDataPathApis(registry, { ...services.dataPath, transactions: services.transactions.coordinator }, services.fetchBandwidth);
  registerGroupApis(registry, services.groups, services.transactions);
  registerTransactionApis(registry, services.transactions);
  registry.register(ApiKey.WriteTxnMarkers, (ctx, request) =>
    handleWriteTxnMarkers(services.dataPath, services.groups.coordinator, request, {
      client: ctx.session.clientAddress,
      logger: services.logger,
    }),
  );
}

/** What a controller-only node serves: no data path, no groups, no forwarding. */
export interface ControllerNodeServices extends ControllerSideServices {
  readonly metadata: MetadataRequestServices;
  readonly quorum: QuorumServices;
  readonly access: RequestAccess;
}

/**
 * Registers the APIs of a controller-only node (process.roles=controller), whose listeners are
 * all controller listeners (as Kafka's ControllerApis): ApiVersions, DescribeConfigs and
 * DescribeCluster, the controller-side admin and broker-to-controller APIs, and the KRaft RPCs.
 */
export function registerControllerNodeHandlers(root: HandlerRegistry, services: ControllerNodeServices): void {
  registerApiVersions(root);
  const registry = authorizedRegistrar(root, services.access);
  registerSaslApis(registry);
  registerMetadataApis(registry, services.metadata);
  registerControllerApis(registry, root, services);
  registerQuorumApis(registry, services.quorum);
}

/** The controller side of every request a broker sends to the active controller. */
export type ControllerSideHandlers = { readonly [K in ForwardedApiKey]: ControllerHandler<K> };

/**
 * The handlers that serve the controller channel's requests on this node: on its controller
 * listeners, and in-process (ControllerChannelOptions.local) when it is the active controller.
 */
export function controllerSideHandlers(services: ControllerSideServices): ControllerSideHandlers {
  const { metadata, controllerApis } = services;
  return {
    [ApiKey.CreateTopics]: (request, version) => handleCreateTopics(metadata, request, version),
    [ApiKey.DeleteTopics]: (request, version) => handleDeleteTopics(metadata, request, version),
    [ApiKey.CreatePartitions]: (request) => handleCreatePartitions(metadata, request),
    [ApiKey.AlterConfigs]: (request) => handleAlterConfigs(metadata, request),
    [ApiKey.IncrementalAlterConfigs]: (request) => handleIncrementalAlterConfigs(metadata, request),
    [ApiKey.ElectLeaders]: (request, version) => handleElectLeaders(controllerApis, request, version),
    [ApiKey.AlterPartitionReassignments]: (request, version) => handleAlterPartitionReassignments(controllerApis, request, version),
    [ApiKey.ListPartitionReassignments]: (request, version) => handleListPartitionReassignments(controllerApis, request, version),
    [ApiKey.BrokerRegistration]: (request, version) => handleBrokerRegistration(controllerApis, request, version),
    [ApiKey.BrokerHeartbeat]: (request, version) => handleBrokerHeartbeat(controllerApis, request, version),
    [ApiKey.AlterPartition]: (request, version) => handleAlterPartition(controllerApis, request, version),
    [ApiKey.AllocateProducerIds]: (request, version) => handleAllocateProducerIds(controllerApis, request, version),
    [ApiKey.AlterUserScramCredentials]: (request) => handleAlterUserScramCredentials(controllerApis.controller, request),
    [ApiKey.AlterClientQuotas]: (request) => handleAlterClientQuotas(controllerApis.controller, request),
    [ApiKey.CreateAcls]: (request) => handleCreateAcls(controllerApis.controller, request),
    [ApiKey.DeleteAcls]: (request) => handleDeleteAcls(controllerApis.controller, request),
    [ApiKey.Envelope]: (request) => handleLocalEnvelope(services.envelope, request),
  };
}

/** ApiVersions, on every listener: exactly what `registry` serves there (KIP-35, KIP-511). */
export function registerApiVersions(registry: HandlerRegistry): void {
  registry.register(ApiKey.ApiVersions, (ctx, request, version) => handleApiVersions(registry, ctx, request, version));
}

/** The SASL exchange, on every listener (answered ILLEGAL_SASL_STATE where no authentication is pending). */
function registerSaslApis(registry: Registrar): void {
  registry.register(ApiKey.SaslHandshake, (ctx, request, version) => handleSaslHandshake(ctx, request, version));
  registry.register(ApiKey.SaslAuthenticate, (ctx, request) => handleSaslAuthenticate(ctx, request));
}

function registerMetadataApis(registry: Registrar, metadata: MetadataRequestServices): void {
  registry.register(ApiKey.Metadata, (ctx, request, version) => handleMetadata(metadata, ctx, request, version));
  registry.register(ApiKey.DescribeConfigs, (_ctx, request, version) => handleDescribeConfigs(metadata, request, version));
  registry.register(ApiKey.DescribeCluster, (ctx, request, version) => handleDescribeCluster(metadata, ctx, request, version));
  registry.register(ApiKey.DescribeTopicPartitions, (_ctx, request) => handleDescribeTopicPartitions(metadata, request));
  registry.register(ApiKey.DescribeUserScramCredentials, (_ctx, request) =>
    handleDescribeUserScramCredentials(metadata.metadata.image(), request),
  );
  registry.register(ApiKey.DescribeAcls, (_ctx, request) => handleDescribeAcls(metadata.metadata.image(), request));
  registry.register(ApiKey.DescribeClientQuotas, (_ctx, request) => handleDescribeClientQuotas(metadata.metadata.image(), request), {
    listeners: 'broker',
  });
}

/**
 * The admin APIs that change metadata or partition leadership, on broker listeners: forwarded
 * to the active controller in an Envelope as the client's (envelope-forwarding.ts). The broker
 * authorizes none of them, as Kafka's forwarding broker does not: the controller does, with
 * its own, current ACLs. Only the resources a config request's preprocessing answers here are
 * authorized here (BROKER_LOGGER, as Kafka's ConfigAdminManager does).
 */
function registerForwardedApis(registry: Registrar, forwarding: ForwardingServices, access: RequestAccess): void {
  const broker = { listeners: 'broker' } as const;
  const as = (ctx: RequestContext): ForwardingServices => ({ ...forwarding, channel: forwardingFor(forwarding.channel, ctx) });
  registry.register(ApiKey.CreateTopics, (ctx, request, version) => forwardCreateTopics(as(ctx), request, version), broker);
  registry.register(ApiKey.DeleteTopics, (ctx, request, version) => forwardDeleteTopics(as(ctx), request, version), broker);
  registry.register(ApiKey.CreatePartitions, (ctx, request, version) => forwardCreatePartitions(as(ctx), request, version), broker);
  registry.register(ApiKey.AlterConfigs, (ctx, request, version) => forwardAlterConfigs(as(ctx), request, version), broker);
  registry.register(
    ApiKey.IncrementalAlterConfigs,
    (ctx, request, version) =>
      forwardIncrementalAlterConfigs(as(ctx), request, version, () =>
        allowsClusterOperation(access.authorizer, ctx, AclOperation.ALTER_CONFIGS),
      ),
    broker,
  );
  registry.register(
    ApiKey.ElectLeaders,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.ElectLeaders, request, version),
    broker,
  );
  registry.register(
    ApiKey.AlterUserScramCredentials,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.AlterUserScramCredentials, request, version),
    broker,
  );
  registry.register(
    ApiKey.AlterClientQuotas,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.AlterClientQuotas, request, version),
    broker,
  );
  registry.register(
    ApiKey.CreateAcls,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.CreateAcls, request, version),
    broker,
  );
  registry.register(
    ApiKey.DeleteAcls,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.DeleteAcls, request, version),
    broker,
  );
  registry.register(
    ApiKey.AlterPartitionReassignments,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.AlterPartitionReassignments, request, version),
    broker,
  );
  registry.register(
    ApiKey.ListPartitionReassignments,
    (ctx, request, version) => forwardToController(as(ctx), ApiKey.ListPartitionReassignments, request, version),
    broker,
  );
}

/**
 * The controller listeners' side of the controller channel (Kafka's ControllerApis), and the
 * Envelope, whose inner request is served by these same registrations (found in `root`). The
 * topic mutations are charged to the controller_mutation_rate quota of their client.
 */
function registerControllerApis(registry: Registrar, root: HandlerRegistry, services: ControllerSideServices): void {
  const controller = { listeners: 'controller' } as const;
  const handlers = controllerSideHandlers(services);
  const { metadata, mutationQuota } = services;
  const envelope: EnvelopeServices = { ...services.envelope, registry: root };
  registry.register(ApiKey.Envelope, (ctx, request) => handleEnvelope(envelope, ctx, request), controller);
  registry.register(
    ApiKey.CreateTopics,
    (ctx, request, version) =>
      withMutationQuota(mutationQuota, ctx, version >= STRICT_SINCE.createTopics, (quota) =>
        handleCreateTopics(metadata, request, version, quota),
      ),
    controller,
  );
  registry.register(
    ApiKey.DeleteTopics,
    (ctx, request, version) =>
      withMutationQuota(mutationQuota, ctx, version >= STRICT_SINCE.deleteTopics, (quota) =>
        handleDeleteTopics(metadata, request, version, quota),
      ),
    controller,
  );
  registry.register(
    ApiKey.CreatePartitions,
    (ctx, request, version) =>
      withMutationQuota(mutationQuota, ctx, version >= STRICT_SINCE.createPartitions, (quota) =>
        handleCreatePartitions(metadata, request, quota),
      ),
    controller,
  );
  registry.register(ApiKey.AlterConfigs, (_ctx, request, version) => handlers[ApiKey.AlterConfigs](request, version), controller);
  registry.register(
    ApiKey.IncrementalAlterConfigs,
    (_ctx, request, version) => handlers[ApiKey.IncrementalAlterConfigs](request, version),
    controller,
  );
  registry.register(ApiKey.ElectLeaders, (_ctx, request, version) => handlers[ApiKey.ElectLeaders](request, version), controller);
  registry.register(
    ApiKey.AlterUserScramCredentials,
    (_ctx, request, version) => handlers[ApiKey.AlterUserScramCredentials](request, version),
    controller,
  );
  registry.register(ApiKey.AlterClientQuotas, (_ctx, request, version) => handlers[ApiKey.AlterClientQuotas](request, version), controller);
  registry.register(ApiKey.CreateAcls, (_ctx, request, version) => handlers[ApiKey.CreateAcls](request, version), controller);
  registry.register(ApiKey.DeleteAcls, (_ctx, request, version) => handlers[ApiKey.DeleteAcls](request, version), controller);
  registry.register(
    ApiKey.AlterPartitionReassignments,
    (_ctx, request, version) => handlers[ApiKey.AlterPartitionReassignments](request, version),
    controller,
  );
  registry.register(
    ApiKey.ListPartitionReassignments,
    (_ctx, request, version) => handlers[ApiKey.ListPartitionReassignments](request, version),
    controller,
  );
  registry.register(
    ApiKey.BrokerRegistration,
    (_ctx, request, version) => handlers[ApiKey.BrokerRegistration](request, version),
    controller,
  );
  registry.register(ApiKey.BrokerHeartbeat, (_ctx, request, version) => handlers[ApiKey.BrokerHeartbeat](request, version), controller);
  registry.register(ApiKey.AlterPartition, (_ctx, request, version) => handlers[ApiKey.AlterPartition](request, version), controller);
  registry.register(
    ApiKey.AllocateProducerIds,
    (_ctx, request, version) => handlers[ApiKey.AllocateProducerIds](request, version),
    controller,
  );
}

/**
 * The KRaft RPCs (KIP-595) on controller listeners, as Kafka's ControllerApis serve them; on a
 * controller listener Fetch is Raft's (`__cluster_metadata-0`), on a broker listener the data
 * path's. DescribeQuorum is served on both.
 */
export function registerQuorumApis(registry: Registrar, quorum: QuorumServices): void {
  const controller = { listeners: 'controller' } as const;
  registry.register(ApiKey.Vote, (_ctx, request) => handleVote(quorum, request), controller);
  registry.register(ApiKey.BeginQuorumEpoch, (_ctx, request) => handleBeginQuorumEpoch(quorum, request), controller);
  registry.register(ApiKey.EndQuorumEpoch, (_ctx, request) => handleEndQuorumEpoch(quorum, request), controller);
  registry.register(ApiKey.Fetch, (_ctx, request, version) => handleMetadataFetch(quorum, request, version), controller);
  registry.register(ApiKey.FetchSnapshot, (_ctx, request) => handleFetchSnapshot(quorum, request), controller);
  registry.register(ApiKey.DescribeQuorum, (_ctx, request, version) => handleDescribeQuorum(quorum, request, version), {
    listeners: 'both',
  });
  registry.register(ApiKey.AddRaftVoter, (_ctx, request) => handleAddRaftVoter(quorum, request), controller);
  registry.register(ApiKey.RemoveRaftVoter, (_ctx, request) => handleRemoveRaftVoter(quorum, request), controller);
  registry.register(ApiKey.UpdateRaftVoter, (_ctx, request) => handleUpdateRaftVoter(quorum, request), controller);
}

function registerDataPathApis(
  registry: Registrar,
  dataPath: DataPathHandlerServices,
  fetchBandwidth: HandlerServices['fetchBandwidth'],
): void {
  registry.register(ApiKey.Produce, (ctx, request, version) =>
    handleProduce(dataPath, request, version, ctx.clientId, (reason) => ctx.closeConnection(reason), ctx.session.listenerName),
  );
  registry.register(
    ApiKey.Fetch,
    (ctx, request, version) =>
      handleFetch(dataPath, request, version, ctx.session.listenerName, ctx.readBuffers, fetchBandwidth?.(ctx, request) ?? null),
    {
      listeners: 'broker',
    },
  );
  registry.register(ApiKey.ListOffsets, (_ctx, request, version) => handleListOffsets(dataPath, request, version));
  registry.register(ApiKey.DeleteRecords, (_ctx, request) => handleDeleteRecords(dataPath, request));
  registry.register(ApiKey.DescribeLogDirs, (_ctx, request) => handleDescribeLogDirs(dataPath, request));
  registry.register(ApiKey.OffsetForLeaderEpoch, (_ctx, request) => handleOffsetForLeaderEpoch(dataPath, request));
  registry.register(ApiKey.InitProducerId, (_ctx, request, version) => handleInitProducerId(dataPath, request, version));
  registry.register(ApiKey.DescribeProducers, (_ctx, request) => handleDescribeProducers(dataPath, request));
}

function registerGroupApis(registry: Registrar, groups: GroupHandlerServices, transactions: TransactionCoordinatorLookup): void {
  registry.register(ApiKey.FindCoordinator, (ctx, request, version) => handleFindCoordinator(groups, transactions, ctx, request, version));
  registry.register(ApiKey.JoinGroup, (ctx, request, version) => handleJoinGroup(groups, ctx, request, version));
  registry.register(ApiKey.SyncGroup, (_ctx, request) => handleSyncGroup(groups, request));
  registry.register(ApiKey.Heartbeat, (_ctx, request) => handleHeartbeat(groups, request));
  registry.register(ApiKey.LeaveGroup, (_ctx, request, version) => handleLeaveGroup(groups, request, version));
  registry.register(ApiKey.OffsetCommit, (_ctx, request, version) => handleOffsetCommit(groups, request, version));
  registry.register(ApiKey.TxnOffsetCommit, (_ctx, request, version) => handleTxnOffsetCommit(groups, request, version));
  registry.register(ApiKey.OffsetFetch, (_ctx, request, version) => handleOffsetFetch(groups, request, version));
  registry.register(ApiKey.ListGroups, (_ctx, request, version) => handleListGroups(groups, request, version));
  registry.register(ApiKey.DescribeGroups, (_ctx, request) => handleDescribeGroups(groups, request));
  registry.register(ApiKey.DeleteGroups, (_ctx, request) => handleDeleteGroups(groups, request));
  registry.register(ApiKey.OffsetDelete, (_ctx, request) => handleOffsetDelete(groups, request));
}

/**
 * The transaction coordinator's APIs at the versions of transaction version 1: AddPartitionsToTxn
 * v4+ is the broker-to-coordinator verification of KIP-890 and EndTxn v5 bumps the epoch per
 * transaction (transaction version 2), neither of which this coordinator does yet.
 */
function registerTransactionApis(registry: Registrar, transactions: TransactionHandlerServices): void {
  registry.register(ApiKey.AddPartitionsToTxn, (_ctx, request, version) => handleAddPartitionsToTxn(transactions, request, version));
  registry.register(ApiKey.AddOffsetsToTxn, (_ctx, request, version) => handleAddOffsetsToTxn(transactions, request, version));
  registry.register(ApiKey.EndTxn, (_ctx, request, version) => handleEndTxn(transactions, request, version), { maxVersion: 4 });
  registry.register(ApiKey.DescribeTransactions, (_ctx, request) => handleDescribeTransactions(transactions, request));
  registry.register(ApiKey.ListTransactions, (_ctx, request, version) => handleListTransactions(transactions, request, version));
}
