// Raft RPCs between voters over Kafka's own protocol: Vote, BeginQuorumEpoch,
// EndQuorumEpoch, Fetch of `__cluster_metadata-0`, FetchSnapshot and UpdateRaftVoter, sent to the addresses
// of controller.quorum.voters (or of controller.quorum.bootstrap.servers, for an observer that
// lists no voters) on one connection per destination (re-opened after a failure).

import { Errors } from '../../../protocol/errors.ts';
import {
  makeBeginQuorumEpochRequest,
  makeBeginQuorumEpochRequestPartitionData,
  makeBeginQuorumEpochRequestTopicData,
  type BeginQuorumEpochResponse,
} from '../../../protocol/messages/begin-quorum-epoch.ts';
import {
  makeEndQuorumEpochRequest,
  makeEndQuorumEpochRequestPartitionData,
  makeEndQuorumEpochRequestTopicData,
  type EndQuorumEpochResponse,
} from '../../../protocol/messages/end-quorum-epoch.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  makeFetchRequestReplicaState,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import {
  makeFetchSnapshotRequest,
  makeFetchSnapshotRequestPartitionSnapshot,
  makeFetchSnapshotRequestSnapshotId,
  makeFetchSnapshotRequestTopicSnapshot,
  type FetchSnapshotResponse as WireFetchSnapshotResponse,
} from '../../../protocol/messages/fetch-snapshot.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  makeVoteRequest,
  makeVoteRequestPartitionData,
  makeVoteRequestTopicData,
  type VoteResponse as WireVoteResponse,
} from '../../../protocol/messages/vote.ts';
import { METADATA_TOPIC, METADATA_TOPIC_ID } from '../../../protocol/internal-topics.ts';
import {
  makeUpdateRaftVoterRequest,
  makeUpdateRaftVoterRequestKRaftVersionFeature,
  makeUpdateRaftVoterRequestListener,
  type UpdateRaftVoterResponse,
} from '../../../protocol/messages/update-raft-voter.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { toSafeNumber } from '../../../protocol/primitives.ts';
import { KafkaConnection, type ConnectionOptions } from '../../client/connection.ts';
import { decodeRaftBatches } from './log.ts';
import type {
  FetchSnapshotResponse,
  QuorumEpochResponse,
  RaftFetchResponse,
  RaftRequest,
  RaftResponseOf,
  RaftTransport,
  UpdateVoterResponse,
  VoteResponse,
} from './types.ts';

/**
 * Fetch v17 carries the fetcher's directory id (KIP-853) and v16 the leader's endpoint;
 * from v13 the metadata topic is named by Kafka's fixed METADATA_TOPIC_ID.
 */
const MAX_FETCH_VERSION = 17;

export interface VoterAddress {
  nodeId: number;
  host: string;
  port: number;
}

/**
 * The destination id of controller.quorum.bootstrap.servers entry `index`: -2, -3, ... (as
 * Kafka numbers them), apart from every node id.
 */
export function bootstrapServerId(index: number): number {
  return -2 - index;
}

export class KafkaRaftTransport implements RaftTransport {
  private readonly addresses: Map<number, VoterAddress>;
  /** The nodes whose address is known from configuration or from the log's voter set. */
  private readonly voterIds: Set<number>;
  private readonly connections = new Map<number, Promise<KafkaConnection>>();
  private closed = false;

  /**
   * `bootstrapServers` are reached as bootstrapServerId(index). A node known only through them
   * (no controller.quorum.voters) gets the address of the bootstrap server that answered a
   * Fetch as the leader: only the leader answers one without NOT_LEADER_OR_FOLLOWER.
   */
  constructor(
    voters: readonly VoterAddress[],
    private readonly clusterId: () => string | null,
    private readonly options: { clientId: string; requestTimeoutMs: number } & Pick<
      ConnectionOptions,
      'network' | 'clock' | 'tls' | 'sasl'
    >,
    bootstrapServers: readonly { host: string; port: number }[] = [],
  ) {
    this.addresses = new Map(voters.map((v) => [v.nodeId, v]));
    this.voterIds = new Set(voters.map((v) => v.nodeId));
    bootstrapServers.forEach((b, i) => {
      const nodeId = bootstrapServerId(i);
      this.addresses.set(nodeId, { nodeId, host: b.host, port: b.port });
    });
  }

  /**
   * The voters' addresses as the log's voter set names them (KIP-853): a voter added later,
   * or one whose listener moved. A connection to a moved address is dropped.
   */
  updateAddresses(addresses: ReadonlyMap<number, { host: string; port: number }>): void {
    for (const [nodeId, address] of addresses) {
      this.voterIds.add(nodeId);
      this.setAddress(nodeId, address);
    }
  }

  private setAddress(nodeId: number, address: { host: string; port: number }): void {
    const known = this.addresses.get(nodeId);
    if (known?.host === address.host && known.port === address.port) return;
    this.addresses.set(nodeId, { nodeId, host: address.host, port: address.port });
    this.connections.get(nodeId)?.then(
      (c) => c.close(),
      () => {},
    );
    this.connections.delete(nodeId);
  }

  /** The leader's endpoint a Fetch answer names (NodeEndpoints, v16+), for a leader the log has not named yet. */
  private learnLeaderEndpoint(leaderId: number, endpoints: readonly { nodeId: number; host: string; port: number }[]): void {
    const endpoint = endpoints.find((e) => e.nodeId === leaderId);
    if (leaderId < 0 || endpoint === undefined || endpoint.host === '' || this.voterIds.has(leaderId)) return;
    this.setAddress(leaderId, endpoint);
  }

  /** Learns the leader's address from a bootstrap server's answer (see the constructor). */
  private learnLeader(destinationId: number, response: RaftFetchResponse): void {
    const answeredAsLeader = response.errorCode === Errors.NONE.code || response.errorCode === Errors.FENCED_LEADER_EPOCH.code;
    const address = this.addresses.get(destinationId);
    if (destinationId >= 0 || !answeredAsLeader || response.leaderId < 0 || this.voterIds.has(response.leaderId) || address === undefined) {
      return;
    }
    const known = this.addresses.get(response.leaderId);
    if (known?.host === address.host && known.port === address.port) return;
    this.addresses.set(response.leaderId, { nodeId: response.leaderId, host: address.host, port: address.port });
    this.connections.get(response.leaderId)?.then(
      (c) => c.close(),
      () => {},
    );
    this.connections.delete(response.leaderId);
  }

  private connection(nodeId: number): Promise<KafkaConnection> {
    let conn = this.connections.get(nodeId);
    if (conn === undefined) {
      const address = this.addresses.get(nodeId);
      if (address === undefined) return Promise.reject(new Error(`voter ${nodeId} has no address`));
      conn = KafkaConnection.connect(address.host, address.port, {
        clientId: this.options.clientId,
        connectTimeoutMs: this.options.requestTimeoutMs,
        requestTimeoutMs: this.options.requestTimeoutMs,
        network: this.options.network,
        clock: this.options.clock,
        tls: this.options.tls,
        sasl: this.options.sasl,
      });
      this.connections.set(nodeId, conn);
      conn.catch(() => this.connections.delete(nodeId));
    }
    return conn;
  }

  async send<R extends RaftRequest>(destinationId: number, request: R): Promise<RaftResponseOf[R['api']]> {
    if (this.closed) throw new Error('transport closed');
    const conn = await this.connection(destinationId);
    if (conn.closed) {
      this.connections.delete(destinationId);
      throw new Error(`connection to voter ${destinationId} closed`);
    }
    try {
      const response = await this.exchange(conn, destinationId, request);
      if (request.api === 'fetch') this.learnLeader(destinationId, response as RaftFetchResponse);
      return response as RaftResponseOf[R['api']];
    } catch (err) {
      if (conn.closed) this.connections.delete(destinationId);
      throw err;
    }
  }

  private async exchange(conn: KafkaConnection, destinationId: number, request: RaftRequest): Promise<unknown> {
    const clusterId = this.clusterId();
    switch (request.api) {
      case 'vote': {
        const res = await conn.send<WireVoteResponse>(
          ApiKey.Vote,
          makeVoteRequest({
            clusterId,
            voterId: destinationId,
            topics: [
              makeVoteRequestTopicData({
                topicName: METADATA_TOPIC,
                partitions: [
                  makeVoteRequestPartitionData({
                    partitionIndex: 0,
                    candidateEpoch: request.candidateEpoch,
                    candidateId: request.candidateId,
                    lastOffsetEpoch: request.lastOffsetEpoch,
                    lastOffset: BigInt(request.lastOffset),
                  }),
                ],
              }),
            ],
          }),
        );
        const p = res.topics[0]?.partitions[0];
        const out: VoteResponse =
          p === undefined
            ? { errorCode: res.errorCode || Errors.UNKNOWN_SERVER_ERROR.code, leaderId: -1, leaderEpoch: -1, voteGranted: false }
            : { errorCode: p.errorCode, leaderId: p.leaderId, leaderEpoch: p.leaderEpoch, voteGranted: p.voteGranted };
        return out;
      }
      case 'beginQuorumEpoch': {
        const res = await conn.send<BeginQuorumEpochResponse>(
          ApiKey.BeginQuorumEpoch,
          makeBeginQuorumEpochRequest({
            clusterId,
            voterId: destinationId,
            topics: [
              makeBeginQuorumEpochRequestTopicData({
                topicName: METADATA_TOPIC,
                partitions: [
                  makeBeginQuorumEpochRequestPartitionData({
                    partitionIndex: 0,
                    leaderId: request.leaderId,
                    leaderEpoch: request.leaderEpoch,
                  }),
                ],
              }),
            ],
          }),
        );
        return quorumEpochResponse(res.errorCode, res.topics[0]?.partitions[0]);
      }
      case 'endQuorumEpoch': {
        const res = await conn.send<EndQuorumEpochResponse>(
          ApiKey.EndQuorumEpoch,
          makeEndQuorumEpochRequest({
            clusterId,
            topics: [
              makeEndQuorumEpochRequestTopicData({
                topicName: METADATA_TOPIC,
                partitions: [
                  makeEndQuorumEpochRequestPartitionData({
                    partitionIndex: 0,
                    leaderId: request.leaderId,
                    leaderEpoch: request.leaderEpoch,
                    preferredSuccessors: request.preferredSuccessors,
                  }),
                ],
              }),
            ],
          }),
        );
        return quorumEpochResponse(res.errorCode, res.topics[0]?.partitions[0]);
      }
      case 'fetch': {
        const version = conn.version(ApiKey.Fetch, MAX_FETCH_VERSION);
        const res = await conn.send<FetchResponse>(
          ApiKey.Fetch,
          makeFetchRequest({
            clusterId,
            // v15 moved the replica id into ReplicaState.
            ...(version >= 15
              ? { replicaState: makeFetchRequestReplicaState({ replicaId: request.replicaId }) }
              : { replicaId: request.replicaId }),
            maxWaitMs: request.maxWaitMs,
            minBytes: 0,
            maxBytes: request.maxBytes,
            topics: [
              makeFetchRequestFetchTopic({
                ...(version >= 13 ? { topicId: METADATA_TOPIC_ID } : { topic: METADATA_TOPIC }),
                partitions: [
                  makeFetchRequestFetchPartition({
                    partition: 0,
                    currentLeaderEpoch: request.currentLeaderEpoch,
                    fetchOffset: BigInt(request.fetchOffset),
                    lastFetchedEpoch: request.lastFetchedEpoch,
                    partitionMaxBytes: request.maxBytes,
                    replicaDirectoryId: request.replicaDirectoryId ?? ZERO_UUID,
                  }),
                ],
              }),
            ],
          }),
          version,
        );
        const p = res.responses[0]?.partitions[0];
        if (p !== undefined) this.learnLeaderEndpoint(p.currentLeader.leaderId, res.nodeEndpoints);
        const out: RaftFetchResponse =
          p === undefined
            ? {
                errorCode: res.errorCode || Errors.UNKNOWN_SERVER_ERROR.code,
                leaderId: -1,
                leaderEpoch: -1,
                highWatermark: 0,
                logStartOffset: 0,
                divergingEpoch: null,
                snapshotId: null,
                batches: [],
              }
            : {
                errorCode: p.errorCode,
                leaderId: p.currentLeader.leaderId,
                leaderEpoch: p.currentLeader.leaderEpoch,
                highWatermark: toSafeNumber(p.highWatermark),
                logStartOffset: toSafeNumber(p.logStartOffset),
                divergingEpoch:
                  p.divergingEpoch.epoch < 0
                    ? null
                    : { epoch: p.divergingEpoch.epoch, endOffset: toSafeNumber(p.divergingEpoch.endOffset) },
                snapshotId:
                  p.snapshotId.endOffset < 0n ? null : { endOffset: toSafeNumber(p.snapshotId.endOffset), epoch: p.snapshotId.epoch },
                batches: p.records === null || p.records.length === 0 ? [] : decodeRaftBatches(p.records),
              };
        return out;
      }
      case 'fetchSnapshot': {
        const res = await conn.send<WireFetchSnapshotResponse>(
          ApiKey.FetchSnapshot,
          makeFetchSnapshotRequest({
            clusterId,
            replicaId: request.replicaId,
            maxBytes: request.maxBytes,
            topics: [
              makeFetchSnapshotRequestTopicSnapshot({
                name: METADATA_TOPIC,
                partitions: [
                  makeFetchSnapshotRequestPartitionSnapshot({
                    partition: 0,
                    currentLeaderEpoch: request.currentLeaderEpoch,
                    snapshotId: makeFetchSnapshotRequestSnapshotId({
                      endOffset: BigInt(request.snapshotId.endOffset),
                      epoch: request.snapshotId.epoch,
                    }),
                    position: BigInt(request.position),
                  }),
                ],
              }),
            ],
          }),
        );
        const p = res.topics[0]?.partitions[0];
        const out: FetchSnapshotResponse =
          p === undefined
            ? {
                errorCode: res.errorCode || Errors.UNKNOWN_SERVER_ERROR.code,
                leaderId: -1,
                leaderEpoch: -1,
                snapshotId: request.snapshotId,
                size: 0,
                position: request.position,
                unalignedRecords: Buffer.alloc(0),
              }
            : {
                errorCode: p.errorCode,
                leaderId: p.currentLeader.leaderId,
                leaderEpoch: p.currentLeader.leaderEpoch,
                snapshotId: { endOffset: toSafeNumber(p.snapshotId.endOffset), epoch: p.snapshotId.epoch },
                size: toSafeNumber(p.size),
                position: toSafeNumber(p.position),
                unalignedRecords: p.unalignedRecords,
              };
        return out;
      }
      case 'updateRaftVoter': {
        const res = await conn.send<UpdateRaftVoterResponse>(
          ApiKey.UpdateRaftVoter,
          makeUpdateRaftVoterRequest({
            clusterId,
            currentLeaderEpoch: request.currentLeaderEpoch,
            voterId: request.voterId,
            voterDirectoryId: request.voterDirectoryId,
            listeners: request.endpoints.map((e) => makeUpdateRaftVoterRequestListener(e)),
            kRaftVersionFeature: makeUpdateRaftVoterRequestKRaftVersionFeature({
              minSupportedVersion: request.kraftVersion.min,
              maxSupportedVersion: request.kraftVersion.max,
            }),
          }),
        );
        const out: UpdateVoterResponse = {
          errorCode: res.errorCode,
          leaderId: res.currentLeader.leaderId,
          leaderEpoch: res.currentLeader.leaderEpoch,
        };
        return out;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const conn of this.connections.values())
      conn.then(
        (c) => c.close(),
        () => {},
      );
    this.connections.clear();
  }
}

function quorumEpochResponse(
  topLevelError: number,
  p: { errorCode: number; leaderId: number; leaderEpoch: number } | undefined,
): QuorumEpochResponse {
  if (p === undefined) return { errorCode: topLevelError || Errors.UNKNOWN_SERVER_ERROR.code, leaderId: -1, leaderEpoch: -1 };
  return { errorCode: p.errorCode, leaderId: p.leaderId, leaderEpoch: p.leaderEpoch };
}
