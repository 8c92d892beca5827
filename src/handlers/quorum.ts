/**
 * The KRaft quorum RPCs (KIP-595): Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot and
 * DescribeQuorum, plus the Fetch of `__cluster_metadata-0` that the Fetch handler delegates
 * here; and the voter changes of KIP-853 (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter),
 * which the quorum leader serves. Each maps the wire message (one topic, one partition) onto
 * the Raft client.
 */
import { Errors } from '../../protocol/errors.ts';
import { makeAddRaftVoterResponse, type AddRaftVoterRequest, type AddRaftVoterResponse } from '../../protocol/messages/add-raft-voter.ts';
import {
  makeRemoveRaftVoterResponse,
  type RemoveRaftVoterRequest,
  type RemoveRaftVoterResponse,
} from '../../protocol/messages/remove-raft-voter.ts';
import {
  makeUpdateRaftVoterResponse,
  makeUpdateRaftVoterResponseCurrentLeader,
  type UpdateRaftVoterRequest,
  type UpdateRaftVoterResponse,
} from '../../protocol/messages/update-raft-voter.ts';
import {
  makeBeginQuorumEpochResponse,
  makeBeginQuorumEpochResponsePartitionData,
  makeBeginQuorumEpochResponseTopicData,
  type BeginQuorumEpochRequest,
  type BeginQuorumEpochResponse,
} from '../../protocol/messages/begin-quorum-epoch.ts';
import {
  makeDescribeQuorumResponse,
  makeDescribeQuorumResponseListener,
  makeDescribeQuorumResponseNode,
  makeDescribeQuorumResponsePartitionData,
  makeDescribeQuorumResponseReplicaState,
  makeDescribeQuorumResponseTopicData,
  type DescribeQuorumRequest,
  type DescribeQuorumResponse,
} from '../../protocol/messages/describe-quorum.ts';
import {
  makeEndQuorumEpochResponse,
  makeEndQuorumEpochResponsePartitionData,
  makeEndQuorumEpochResponseTopicData,
  type EndQuorumEpochRequest,
  type EndQuorumEpochResponse,
} from '../../protocol/messages/end-quorum-epoch.ts';
import {
  makeFetchResponse,
  makeFetchResponseEpochEndOffset,
  makeFetchResponseFetchableTopicResponse,
  makeFetchResponseLeaderIdAndEpoch,
  makeFetchResponseNodeEndpoint,
  makeFetchResponsePartitionData,
  makeFetchResponseSnapshotId,
  type FetchRequest,
  type FetchRequestFetchPartition,
  type FetchResponse,
  type FetchResponsePartitionData,
} from '../../protocol/messages/fetch.ts';
import {
  makeFetchSnapshotResponse,
  makeFetchSnapshotResponseLeaderIdAndEpoch,
  makeFetchSnapshotResponsePartitionSnapshot,
  makeFetchSnapshotResponseSnapshotId,
  makeFetchSnapshotResponseTopicSnapshot,
  type FetchSnapshotRequest,
  type FetchSnapshotResponse,
} from '../../protocol/messages/fetch-snapshot.ts';
import {
  makeVoteResponse,
  makeVoteResponsePartitionData,
  makeVoteResponseTopicData,
  type VoteRequest,
  type VoteResponse,
} from '../../protocol/messages/vote.ts';
import { METADATA_TOPIC, METADATA_TOPIC_ID } from '../../protocol/internal-topics.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import { encodeRaftBatch } from '../metadata/raft/log.ts';
import { SUPPORTED_KRAFT_VERSIONS } from '../metadata/raft/voter-set.ts';
import { safeOrRefuse } from './wire-int64.ts';
import { fetchReplicaId } from './fetch.ts';

/** What the quorum RPCs need: the node's Raft client and the cluster id it belongs to. */
export type QuorumServices = Pick<MetadataManager, 'clusterId' | 'raft'>;

export { METADATA_TOPIC_ID };

/** A quorum request for some other topic/partition or cluster is refused as Kafka does. */
function misdirected(metadata: QuorumServices, clusterId: string | null, topicName: string, partitionIndex: number): number | null {
  if (clusterId !== null && clusterId !== metadata.clusterId) return Errors.INCONSISTENT_CLUSTER_ID.code;
  if (topicName !== METADATA_TOPIC || partitionIndex !== 0) return Errors.UNKNOWN_TOPIC_OR_PARTITION.code;
  return null;
}

export function handleVote(metadata: QuorumServices, request: VoteRequest): VoteResponse {
  const topic = request.topics[0];
  const p = topic?.partitions[0];
  if (topic === undefined || p === undefined) return makeVoteResponse({ errorCode: Errors.INVALID_REQUEST.code });
  const refused = misdirected(metadata, request.clusterId, topic.topicName, p.partitionIndex);
  if (refused !== null) return makeVoteResponse({ errorCode: refused });
  const r = metadata.raft.handleVote({
    api: 'vote',
    clusterId: request.clusterId,
    candidateEpoch: p.candidateEpoch,
    candidateId: p.candidateId,
    lastOffsetEpoch: p.lastOffsetEpoch,
    lastOffset: safeOrRefuse(p.lastOffset, 'last offset'),
  });
  return makeVoteResponse({
    errorCode: Errors.NONE.code,
    topics: [
      makeVoteResponseTopicData({
        topicName: METADATA_TOPIC,
        partitions: [makeVoteResponsePartitionData({ partitionIndex: 0, ...r })],
      }),
    ],
  });
}

export function handleBeginQuorumEpoch(metadata: QuorumServices, request: BeginQuorumEpochRequest): BeginQuorumEpochResponse {
  const topic = request.topics[0];
  const p = topic?.partitions[0];
  if (topic === undefined || p === undefined) return makeBeginQuorumEpochResponse({ errorCode: Errors.INVALID_REQUEST.code });
  const refused = misdirected(metadata, request.clusterId, topic.topicName, p.partitionIndex);
  if (refused !== null) return makeBeginQuorumEpochResponse({ errorCode: refused });
  const r = metadata.raft.handleBeginQuorumEpoch({
    api: 'beginQuorumEpoch',
    clusterId: request.clusterId,
    leaderId: p.leaderId,
    leaderEpoch: p.leaderEpoch,
  });
  return makeBeginQuorumEpochResponse({
    errorCode: Errors.NONE.code,
    topics: [
      makeBeginQuorumEpochResponseTopicData({
        topicName: METADATA_TOPIC,
        partitions: [makeBeginQuorumEpochResponsePartitionData({ partitionIndex: 0, ...r })],
      }),
    ],
  });
}

export function handleEndQuorumEpoch(metadata: QuorumServices, request: EndQuorumEpochRequest): EndQuorumEpochResponse {
  const topic = request.topics[0];
  const p = topic?.partitions[0];
  if (topic === undefined || p === undefined) return makeEndQuorumEpochResponse({ errorCode: Errors.INVALID_REQUEST.code });
  const refused = misdirected(metadata, request.clusterId, topic.topicName, p.partitionIndex);
  if (refused !== null) return makeEndQuorumEpochResponse({ errorCode: refused });
  const successors = p.preferredSuccessors.length > 0 ? p.preferredSuccessors : p.preferredCandidates.map((c) => c.candidateId);
  const r = metadata.raft.handleEndQuorumEpoch({
    api: 'endQuorumEpoch',
    clusterId: request.clusterId,
    leaderId: p.leaderId,
    leaderEpoch: p.leaderEpoch,
    preferredSuccessors: successors,
  });
  return makeEndQuorumEpochResponse({
    errorCode: Errors.NONE.code,
    topics: [
      makeEndQuorumEpochResponseTopicData({
        topicName: METADATA_TOPIC,
        partitions: [makeEndQuorumEpochResponsePartitionData({ partitionIndex: 0, ...r })],
      }),
    ],
  });
}

export function handleFetchSnapshot(metadata: QuorumServices, request: FetchSnapshotRequest): FetchSnapshotResponse {
  const topic = request.topics[0];
  const p = topic?.partitions[0];
  if (topic === undefined || p === undefined) return makeFetchSnapshotResponse({ errorCode: Errors.INVALID_REQUEST.code });
  const refused = misdirected(metadata, request.clusterId, topic.name, p.partition);
  if (refused !== null) return makeFetchSnapshotResponse({ errorCode: refused });
  const r = metadata.raft.handleFetchSnapshot({
    api: 'fetchSnapshot',
    clusterId: request.clusterId,
    replicaId: request.replicaId,
    currentLeaderEpoch: p.currentLeaderEpoch,
    snapshotId: { endOffset: safeOrRefuse(p.snapshotId.endOffset, 'snapshot end offset'), epoch: p.snapshotId.epoch },
    position: safeOrRefuse(p.position, 'snapshot position'),
    maxBytes: request.maxBytes,
  });
  return makeFetchSnapshotResponse({
    throttleTimeMs: 0,
    errorCode: Errors.NONE.code,
    topics: [
      makeFetchSnapshotResponseTopicSnapshot({
        name: METADATA_TOPIC,
        partitions: [
          makeFetchSnapshotResponsePartitionSnapshot({
            index: 0,
            errorCode: r.errorCode,
            snapshotId: makeFetchSnapshotResponseSnapshotId({ endOffset: BigInt(r.snapshotId.endOffset), epoch: r.snapshotId.epoch }),
            currentLeader: makeFetchSnapshotResponseLeaderIdAndEpoch({ leaderId: r.leaderId, leaderEpoch: r.leaderEpoch }),
            size: BigInt(r.size),
            position: BigInt(r.position),
            unalignedRecords: r.unalignedRecords,
          }),
        ],
      }),
    ],
  });
}

/** v2 (KIP-853) adds the replicas' directory ids and the voters' listeners. */
export function handleDescribeQuorum(metadata: QuorumServices, request: DescribeQuorumRequest, version = 0): DescribeQuorumResponse {
  const topic = request.topics[0];
  const p = topic?.partitions[0];
  if (topic === undefined || p === undefined) return makeDescribeQuorumResponse({ errorCode: Errors.INVALID_REQUEST.code });
  if (topic.topicName !== METADATA_TOPIC || p.partitionIndex !== 0) {
    return makeDescribeQuorumResponse({ errorCode: Errors.UNKNOWN_TOPIC_OR_PARTITION.code });
  }
  const raft = metadata.raft;
  const partitionError = raft.isLeader() ? Errors.NONE : Errors.NOT_LEADER_OR_FOLLOWER;
  const q = raft.describeQuorum();
  const replica = (s: (typeof q.currentVoters)[number]) =>
    makeDescribeQuorumResponseReplicaState({
      replicaId: s.replicaId,
      ...(version >= 2 ? { replicaDirectoryId: s.replicaDirectoryId } : {}),
      logEndOffset: BigInt(s.logEndOffset),
      lastFetchTimestamp: BigInt(s.lastFetchTimestampMs),
      lastCaughtUpTimestamp: BigInt(s.lastCaughtUpTimestampMs),
    });
  return makeDescribeQuorumResponse({
    errorCode: Errors.NONE.code,
    errorMessage: null,
    topics: [
      makeDescribeQuorumResponseTopicData({
        topicName: METADATA_TOPIC,
        partitions: [
          makeDescribeQuorumResponsePartitionData({
            partitionIndex: 0,
            errorCode: partitionError.code,
            errorMessage: partitionError === Errors.NONE ? null : partitionError.message,
            leaderId: q.leaderId,
            leaderEpoch: q.leaderEpoch,
            highWatermark: BigInt(q.highWatermark),
            currentVoters: q.currentVoters.map(replica),
            observers: q.observers.map(replica),
          }),
        ],
      }),
    ],
    nodes: (version >= 2 ? q.nodes : []).map((n) =>
      makeDescribeQuorumResponseNode({ nodeId: n.nodeId, listeners: n.listeners.map((l) => makeDescribeQuorumResponseListener(l)) }),
    ),
  });
}

/** The longest a voter change request waits for its commit (its TimeoutMs is range-checked to this). */
const MAX_VOTER_CHANGE_TIMEOUT_MS = 5 * 60_000;

/**
 * AddRaftVoter (KIP-853), served by the quorum leader: the new voter must already fetch as a
 * caught-up observer; answered once its VotersRecord commits, or at TimeoutMs.
 */
export async function handleAddRaftVoter(metadata: QuorumServices, request: AddRaftVoterRequest): Promise<AddRaftVoterResponse> {
  if (request.clusterId !== null && request.clusterId !== metadata.clusterId) {
    return makeAddRaftVoterResponse({ errorCode: Errors.INCONSISTENT_CLUSTER_ID.code, errorMessage: null });
  }
  const timeoutMs = request.timeoutMs > 0 ? Math.min(request.timeoutMs, MAX_VOTER_CHANGE_TIMEOUT_MS) : undefined;
  const r = await metadata.raft.addVoter(
    {
      id: request.voterId,
      directoryId: request.voterDirectoryId,
      endpoints: request.listeners.map((l) => ({ name: l.name, host: l.host, port: l.port })),
      kraftVersion: SUPPORTED_KRAFT_VERSIONS,
    },
    timeoutMs,
  );
  return makeAddRaftVoterResponse({ errorCode: r.errorCode, errorMessage: r.errorMessage });
}

/** RemoveRaftVoter (KIP-853), served by the quorum leader; answered once the change commits. */
export async function handleRemoveRaftVoter(metadata: QuorumServices, request: RemoveRaftVoterRequest): Promise<RemoveRaftVoterResponse> {
  if (request.clusterId !== null && request.clusterId !== metadata.clusterId) {
    return makeRemoveRaftVoterResponse({ errorCode: Errors.INCONSISTENT_CLUSTER_ID.code, errorMessage: null });
  }
  const r = await metadata.raft.removeVoter(request.voterId, request.voterDirectoryId);
  return makeRemoveRaftVoterResponse({ errorCode: r.errorCode, errorMessage: r.errorMessage });
}

/** UpdateRaftVoter (KIP-853): a voter's directory id and listeners, sent by the voter itself to the leader. */
export function handleUpdateRaftVoter(metadata: QuorumServices, request: UpdateRaftVoterRequest): UpdateRaftVoterResponse {
  if (request.clusterId !== null && request.clusterId !== metadata.clusterId) {
    return makeUpdateRaftVoterResponse({ errorCode: Errors.INCONSISTENT_CLUSTER_ID.code });
  }
  const raft = metadata.raft;
  const r = raft.handleUpdateVoter({
    api: 'updateRaftVoter',
    clusterId: request.clusterId,
    currentLeaderEpoch: request.currentLeaderEpoch,
    voterId: request.voterId,
    voterDirectoryId: request.voterDirectoryId,
    endpoints: request.listeners.map((l) => ({ name: l.name, host: l.host, port: l.port })),
    kraftVersion: { min: request.kRaftVersionFeature.minSupportedVersion, max: request.kRaftVersionFeature.maxSupportedVersion },
  });
  const leader = raft.leaderEndpoint();
  return makeUpdateRaftVoterResponse({
    errorCode: r.errorCode,
    currentLeader: makeUpdateRaftVoterResponseCurrentLeader({
      leaderId: r.leaderId,
      leaderEpoch: r.leaderEpoch,
      host: leader?.host ?? '',
      port: leader?.port ?? 0,
    }),
  });
}

/**
 * Fetch on a controller listener, as KafkaRaftClient answers it: the request must name exactly
 * `__cluster_metadata` partition 0 (by name up to v12, by topic id from v13), else the whole
 * request gets INVALID_REQUEST; a foreign cluster id gets INCONSISTENT_CLUSTER_ID.
 */
export async function handleMetadataFetch(metadata: QuorumServices, request: FetchRequest, version: number): Promise<FetchResponse> {
  if (request.clusterId !== null && request.clusterId !== metadata.clusterId) {
    return makeFetchResponse({ errorCode: Errors.INCONSISTENT_CLUSTER_ID.code });
  }
  const usesTopicIds = version >= 13;
  const topic = request.topics.length === 1 ? request.topics[0] : undefined;
  const partition = topic?.partitions.length === 1 ? topic.partitions[0] : undefined;
  const named = topic !== undefined && (usesTopicIds ? topic.topicId === METADATA_TOPIC_ID : topic.topic === METADATA_TOPIC);
  if (!named || partition === undefined || partition.partition !== 0) {
    return makeFetchResponse({ errorCode: Errors.INVALID_REQUEST.code });
  }
  const replicaId = fetchReplicaId(request, version);
  const data = await fetchMetadataPartition(metadata, request.clusterId, replicaId, partition, request.maxWaitMs);
  // v16+: where the leader listens, so that a replica that knows only its id can reach it (KIP-853).
  const leader = metadata.raft.leaderEndpoint();
  return makeFetchResponse({
    errorCode: Errors.NONE.code,
    responses: [
      makeFetchResponseFetchableTopicResponse({
        topic: METADATA_TOPIC,
        topicId: METADATA_TOPIC_ID,
        partitions: [data],
      }),
    ],
    nodeEndpoints: leader === null || version < 16 ? [] : [makeFetchResponseNodeEndpoint({ ...leader, rack: null })],
  });
}

/**
 * Fetch of `__cluster_metadata-0` (a follower voter or an observer replicating the metadata
 * log): served by the Raft leader, long-polled up to maxWaitMs, with diverging-epoch and
 * snapshot hints as KIP-595 defines them.
 */
export async function fetchMetadataPartition(
  metadata: QuorumServices,
  clusterId: string | null,
  replicaId: number,
  partition: FetchRequestFetchPartition,
  maxWaitMs: number,
): Promise<FetchResponsePartitionData> {
  if (clusterId !== null && clusterId !== metadata.clusterId) {
    return makeFetchResponsePartitionData({
      partitionIndex: partition.partition,
      errorCode: Errors.INCONSISTENT_CLUSTER_ID.code,
      records: Buffer.alloc(0),
    });
  }
  const r = await metadata.raft.handleFetch({
    api: 'fetch',
    clusterId,
    replicaId,
    replicaDirectoryId: partition.replicaDirectoryId,
    currentLeaderEpoch: partition.currentLeaderEpoch,
    fetchOffset: safeOrRefuse(partition.fetchOffset, 'fetch offset'),
    lastFetchedEpoch: partition.lastFetchedEpoch,
    maxWaitMs,
    maxBytes: partition.partitionMaxBytes,
  });
  return makeFetchResponsePartitionData({
    partitionIndex: partition.partition,
    errorCode: r.errorCode,
    highWatermark: BigInt(r.highWatermark),
    lastStableOffset: BigInt(r.highWatermark),
    logStartOffset: BigInt(r.logStartOffset),
    divergingEpoch: makeFetchResponseEpochEndOffset(
      r.divergingEpoch === null ? {} : { epoch: r.divergingEpoch.epoch, endOffset: BigInt(r.divergingEpoch.endOffset) },
    ),
    currentLeader: makeFetchResponseLeaderIdAndEpoch({ leaderId: r.leaderId, leaderEpoch: r.leaderEpoch }),
    snapshotId: makeFetchResponseSnapshotId(
      r.snapshotId === null ? {} : { endOffset: BigInt(r.snapshotId.endOffset), epoch: r.snapshotId.epoch },
    ),
    abortedTransactions: null,
    preferredReadReplica: -1,
    records: Buffer.concat(r.batches.map((b) => encodeRaftBatch(b))),
  });
}
