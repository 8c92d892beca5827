// Raft RPCs between voters over Kafka's own protocol: Vote, BeginQuorumEpoch,
// EndQuorumEpoch, Fetch of `__cluster_metadata-0` and FetchSnapshot, sent to the addresses
// of controller.quorum.voters on one connection per voter (re-opened after a failure).

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
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { toSafeNumber } from '../../../protocol/primitives.ts';
import { KafkaConnection } from '../../client/connection.ts';
import { decodeRaftBatches } from './log.ts';
import type {
  FetchSnapshotResponse,
  QuorumEpochResponse,
  RaftFetchResponse,
  RaftRequest,
  RaftResponseOf,
  RaftTransport,
  VoteResponse,
} from './types.ts';

/**
 * Fetch up to v12 names the topic; later versions use topic ids, and the metadata topic
 * has none in the MetadataImage, so names keep the quorum independent of that mapping.
 */
const MAX_FETCH_VERSION = 12;

export interface VoterAddress {
  nodeId: number;
  host: string;
  port: number;
}

export class KafkaRaftTransport implements RaftTransport {
  private readonly addresses: Map<number, VoterAddress>;
  private readonly connections = new Map<number, Promise<KafkaConnection>>();
  private closed = false;

  constructor(
    voters: readonly VoterAddress[],
    private readonly clusterId: () => string | null,
    private readonly options: { clientId: string; requestTimeoutMs: number },
  ) {
    this.addresses = new Map(voters.map((v) => [v.nodeId, v]));
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
      return (await this.exchange(conn, destinationId, request)) as RaftResponseOf[R['api']];
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
            replicaId: request.replicaId,
            maxWaitMs: request.maxWaitMs,
            minBytes: 0,
            maxBytes: request.maxBytes,
            topics: [
              makeFetchRequestFetchTopic({
                topic: METADATA_TOPIC,
                partitions: [
                  makeFetchRequestFetchPartition({
                    partition: 0,
                    currentLeaderEpoch: request.currentLeaderEpoch,
                    fetchOffset: BigInt(request.fetchOffset),
                    lastFetchedEpoch: request.lastFetchedEpoch,
                    partitionMaxBytes: request.maxBytes,
                  }),
                ],
              }),
            ],
          }),
          version,
        );
        const p = res.responses[0]?.partitions[0];
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
