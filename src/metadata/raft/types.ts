// Shapes shared by the Raft client, its log, its transport and its tests.
//
// The request/response types mirror the fields of Kafka's KRaft RPCs (Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch of `__cluster_metadata-0`, FetchSnapshot) without
// the topic/partition nesting: a quorum has exactly one partition. src/handlers/quorum.ts
// maps the wire messages onto these, so a network transport and the in-memory transport
// of the tests drive the same code.

import type { ControlRecordType } from '../../../protocol/records/index.ts';
import type { KRaftVersionRange, RaftEndpoint } from './voter-set.ts';

/** One batch of the Raft log: every record of a batch carries the same leader epoch. */
export interface RaftBatch {
  baseOffset: number;
  epoch: number;
  appendTimeMs: number;
  /** Control batches hold KRaft control records: LeaderChange, KRaftVersion or KRaftVoters (KIP-853). */
  control: boolean;
  /** The type of every record of a control batch (absent: LeaderChange); unset on data batches. */
  controlType?: ControlRecordType;
  records: Buffer[];
}

export function lastOffsetOf(batch: RaftBatch): number {
  return batch.baseOffset + batch.records.length - 1;
}

export interface OffsetAndEpoch {
  offset: number;
  epoch: number;
}

export interface SnapshotId {
  /** Offset of the first record not in the snapshot (Kafka's snapshot "end offset"). */
  endOffset: number;
  epoch: number;
}

export interface VoteRequest {
  api: 'vote';
  clusterId: string | null;
  candidateEpoch: number;
  candidateId: number;
  lastOffsetEpoch: number;
  lastOffset: number;
}

export interface VoteResponse {
  errorCode: number;
  leaderId: number;
  leaderEpoch: number;
  voteGranted: boolean;
}

export interface BeginQuorumEpochRequest {
  api: 'beginQuorumEpoch';
  clusterId: string | null;
  leaderId: number;
  leaderEpoch: number;
}

export interface EndQuorumEpochRequest {
  api: 'endQuorumEpoch';
  clusterId: string | null;
  leaderId: number;
  leaderEpoch: number;
  preferredSuccessors: number[];
}

/** Answer of BeginQuorumEpoch and EndQuorumEpoch. */
export interface QuorumEpochResponse {
  errorCode: number;
  leaderId: number;
  leaderEpoch: number;
}

export interface RaftFetchRequest {
  api: 'fetch';
  clusterId: string | null;
  replicaId: number;
  /** The fetcher's metadata log directory id (Fetch v17, KIP-853); absent or ZERO_UUID when unknown. */
  replicaDirectoryId?: string;
  currentLeaderEpoch: number;
  fetchOffset: number;
  lastFetchedEpoch: number;
  maxWaitMs: number;
  maxBytes: number;
}

export interface RaftFetchResponse {
  errorCode: number;
  leaderId: number;
  leaderEpoch: number;
  highWatermark: number;
  logStartOffset: number;
  /** Set when the follower's log diverges: truncate to at most endOffset and refetch. */
  divergingEpoch: { epoch: number; endOffset: number } | null;
  /** Set when the fetch offset is below the log start: fetch this snapshot first. */
  snapshotId: SnapshotId | null;
  batches: RaftBatch[];
}

export interface FetchSnapshotRequest {
  api: 'fetchSnapshot';
  clusterId: string | null;
  replicaId: number;
  currentLeaderEpoch: number;
  snapshotId: SnapshotId;
  position: number;
  maxBytes: number;
}

export interface FetchSnapshotResponse {
  errorCode: number;
  leaderId: number;
  leaderEpoch: number;
  snapshotId: SnapshotId;
  size: number;
  position: number;
  unalignedRecords: Buffer;
}

/** UpdateRaftVoter (KIP-853): a voter tells the leader its directory id and listeners. */
export interface UpdateVoterRequest {
  api: 'updateRaftVoter';
  clusterId: string | null;
  currentLeaderEpoch: number;
  voterId: number;
  voterDirectoryId: string;
  endpoints: RaftEndpoint[];
  kraftVersion: KRaftVersionRange;
}

export interface UpdateVoterResponse {
  errorCode: number;
  leaderId: number;
  leaderEpoch: number;
}

/** The answer to AddRaftVoter and RemoveRaftVoter. */
export interface VoterChangeResult {
  errorCode: number;
  errorMessage: string | null;
}

export type RaftRequest =
  | VoteRequest
  | BeginQuorumEpochRequest
  | EndQuorumEpochRequest
  | RaftFetchRequest
  | FetchSnapshotRequest
  | UpdateVoterRequest;

export interface RaftResponseOf {
  vote: VoteResponse;
  beginQuorumEpoch: QuorumEpochResponse;
  endQuorumEpoch: QuorumEpochResponse;
  fetch: RaftFetchResponse;
  fetchSnapshot: FetchSnapshotResponse;
  updateRaftVoter: UpdateVoterResponse;
}

/**
 * Carries requests to other voters. A rejected promise means the peer could not be
 * reached; the client retries after controller.quorum.retry.backoff.ms.
 */
export interface RaftTransport {
  send<R extends RaftRequest>(destinationId: number, request: R): Promise<RaftResponseOf[R['api']]>;
  /**
   * The addresses of the voters as the log names them (KIP-853: a voter added later, or one
   * whose listeners changed), merged over what the transport knew.
   */
  updateAddresses?(addresses: ReadonlyMap<number, { host: string; port: number }>): void;
}

/** The state machine fed by the Raft client (the metadata loader). */
export interface RaftListener {
  /** Batches below the high watermark, in order, each delivered once per process. */
  handleCommit(batches: RaftBatch[]): void;
  /** A snapshot replaces everything applied so far (follower install or restart). */
  handleLoadSnapshot(id: SnapshotId, content: Buffer): void;
  handleLeaderChange(leaderId: number, epoch: number): void;
}

/** Kafka's QuorumStateData (raft-records), persisted before any vote or epoch change. */
export interface QuorumStateData {
  leaderId: number;
  leaderEpoch: number;
  votedId: number;
  votedDirectoryId: string;
}

export interface QuorumStateStore {
  read(): QuorumStateData | null;
  write(state: QuorumStateData): void;
}
