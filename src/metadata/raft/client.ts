// A KRaft-style Raft client (KIP-595): election by Vote, leadership announced by
// BeginQuorumEpoch, followers pull the log with Fetch (divergence found through the
// leader-epoch cache, lagging followers bootstrapped from a snapshot with FetchSnapshot),
// the high watermark is the offset a majority of voters holds. A quorum of one voter elects
// itself at start and commits on its own append: the single-node broker is this same code.

import { Errors, KafkaError } from '../../../protocol/errors.ts';
import {
  encodeLeaderChangeMessage,
  makeLeaderChangeMessage,
  makeLeaderChangeMessageVoter,
} from '../../../protocol/messages/leader-change-message.ts';
import { Writer } from '../../../protocol/primitives.ts';
import { type BrokerConfig, DEFAULT_BROKER_CONFIG } from '../../config/broker-config.ts';
import type { RaftLog } from './log.ts';
import type {
  BeginQuorumEpochRequest,
  Clock,
  EndQuorumEpochRequest,
  FetchSnapshotRequest,
  FetchSnapshotResponse,
  QuorumEpochResponse,
  QuorumStateStore,
  RaftBatch,
  RaftFetchRequest,
  RaftFetchResponse,
  RaftListener,
  RaftTransport,
  SnapshotId,
  TimerHandle,
  VoteRequest,
  VoteResponse,
} from './types.ts';
import { lastOffsetOf } from './types.ts';

export interface RaftConfig {
  nodeId: number;
  /** controller.quorum.voters ids; this node is an observer when it is not among them. */
  voters: number[];
  clusterId: string | null;
  /** controller.quorum.election.timeout.ms */
  electionTimeoutMs: number;
  /** controller.quorum.election.backoff.max.ms */
  electionBackoffMaxMs: number;
  /** controller.quorum.fetch.timeout.ms */
  fetchTimeoutMs: number;
  /** controller.quorum.retry.backoff.ms */
  retryBackoffMs: number;
  /** How long the leader parks a Fetch with nothing new (RAFT_FETCH_MAX_WAIT_MS). */
  fetchMaxWaitMs: number;
  fetchMaxBytes: number;
}

/** How long a leader parks a Fetch with nothing new (Kafka's KafkaRaftClient.FETCH_MAX_WAIT_MS). */
export const RAFT_FETCH_MAX_WAIT_MS = 500;
/** The most a Raft Fetch or FetchSnapshot asks for (Kafka's KafkaRaftClient.MAX_FETCH_SIZE_BYTES). */
export const RAFT_FETCH_MAX_BYTES = 8 * 1024 * 1024;

/** The Raft timing a broker config sets (controller.quorum.*), with Kafka's fixed fetch bounds. */
export function raftTimingOf(config: BrokerConfig): Omit<RaftConfig, 'nodeId' | 'voters' | 'clusterId'> {
  return {
    electionTimeoutMs: config.getInt('controller.quorum.election.timeout.ms'),
    electionBackoffMaxMs: config.getInt('controller.quorum.election.backoff.max.ms'),
    fetchTimeoutMs: config.getInt('controller.quorum.fetch.timeout.ms'),
    retryBackoffMs: config.getInt('controller.quorum.retry.backoff.ms'),
    fetchMaxWaitMs: RAFT_FETCH_MAX_WAIT_MS,
    fetchMaxBytes: RAFT_FETCH_MAX_BYTES,
  };
}

/** Kafka's defaults, read from the config definitions. */
export const defaultRaftConfig: Omit<RaftConfig, 'nodeId' | 'voters' | 'clusterId'> = raftTimingOf(DEFAULT_BROKER_CONFIG);

export type RaftRole = 'unattached' | 'voted' | 'candidate' | 'leader' | 'follower';

/** An append refused or abandoned because this node does not lead the quorum (Kafka's NotLeaderException). */
export class NotLeaderError extends KafkaError {
  override name = 'NotLeaderError';
  constructor(
    readonly leaderId: number,
    readonly epoch: number,
  ) {
    super(Errors.NOT_LEADER_OR_FOLLOWER, `not the quorum leader (leader ${leaderId}, epoch ${epoch})`);
  }
}

interface VoterState {
  endOffset: number;
  lastFetchTimeMs: number;
  lastCaughtUpTimeMs: number;
}

interface ParkedFetch {
  request: RaftFetchRequest;
  resolve: (response: RaftFetchResponse) => void;
  timer: TimerHandle;
}

interface AppendWaiter {
  lastOffset: number;
  resolve: (offset: number) => void;
  reject: (err: Error) => void;
}

/** One voter or observer as DescribeQuorum reports it. */
export interface ReplicaDescription {
  replicaId: number;
  logEndOffset: number;
  lastFetchTimestampMs: number;
  lastCaughtUpTimestampMs: number;
}

export interface QuorumDescription {
  leaderId: number;
  leaderEpoch: number;
  highWatermark: number;
  currentVoters: ReplicaDescription[];
  observers: ReplicaDescription[];
}

/** The LeaderChangeMessage control record value (version 0) a new leader writes first. */
export function encodeLeaderChange(leaderId: number, voters: number[], granting: number[]): Buffer {
  const w = new Writer(64);
  w.int16(0);
  const voter = (voterId: number) => makeLeaderChangeMessageVoter({ voterId });
  encodeLeaderChangeMessage(w, makeLeaderChangeMessage({ leaderId, voters: voters.map(voter), grantingVoters: granting.map(voter) }), 0);
  return w.toBuffer();
}

export class RaftClient {
  private role: RaftRole = 'unattached';
  private epoch = 0;
  private leaderId = -1;
  private votedId = -1;
  private leaderResigned = false;
  private highWatermark = 0;
  /** Next offset to hand to the listener. */
  private deliveredOffset = 0;
  private epochStartOffset = 0;
  private votesGranted = new Set<number>();
  private voterStates = new Map<number, VoterState>();
  private observerStates = new Map<number, VoterState>();
  private parked: ParkedFetch[] = [];
  private appendWaiters: AppendWaiter[] = [];
  private electionTimer: TimerHandle | null = null;
  /** Follower: fetch timeout. Leader: the check-quorum deadline. */
  private fetchTimer: TimerHandle | null = null;
  /** Bumped to stop the running fetch loop or BeginQuorumEpoch retries. */
  private generation = 0;
  private closed = false;

  constructor(
    private readonly config: RaftConfig,
    private readonly log: RaftLog,
    private readonly stateStore: QuorumStateStore,
    private readonly transport: RaftTransport,
    private readonly listener: RaftListener,
    private readonly clock: Clock,
    private readonly random: () => number = Math.random,
  ) {}

  get nodeId(): number {
    return this.config.nodeId;
  }
  get currentRole(): RaftRole {
    return this.role;
  }
  get currentEpoch(): number {
    return this.epoch;
  }
  get currentLeaderId(): number {
    return this.leaderResigned ? -1 : this.leaderId;
  }
  get highWatermarkOffset(): number {
    return this.highWatermark;
  }
  get logEndOffset(): number {
    return this.log.endOffset;
  }
  get logStartOffset(): number {
    return this.log.startOffset;
  }
  isLeader(): boolean {
    return this.role === 'leader';
  }
  private isVoter(id = this.config.nodeId): boolean {
    return this.config.voters.includes(id);
  }
  private majority(): number {
    return Math.floor(this.config.voters.length / 2) + 1;
  }

  /** Loads the persisted quorum state and the latest snapshot, then joins the quorum. */
  start(): void {
    const snapshotId = this.log.latestSnapshotId();
    if (snapshotId !== null) {
      const content = this.log.readSnapshot(snapshotId);
      if (content !== null) {
        this.listener.handleLoadSnapshot(snapshotId, content);
        this.deliveredOffset = snapshotId.endOffset;
        this.highWatermark = snapshotId.endOffset;
      }
    }
    const state = this.stateStore.read();
    if (state !== null) {
      this.epoch = state.leaderEpoch;
      this.votedId = state.votedId;
      this.leaderId = state.leaderId === this.config.nodeId ? -1 : state.leaderId;
    }
    if (!this.isVoter()) {
      if (this.leaderId >= 0) this.becomeFollower(this.epoch, this.leaderId);
      return;
    }
    if (this.config.voters.length === 1) {
      this.becomeCandidate();
      return;
    }
    if (this.leaderId >= 0) {
      this.becomeFollower(this.epoch, this.leaderId);
    } else {
      this.role = this.votedId >= 0 ? 'voted' : 'unattached';
      this.resetElectionTimer(this.randomElectionTimeoutMs());
    }
  }

  /**
   * Appends records as the leader; resolves with the last offset once a majority holds it
   * and the listener has applied it.
   */
  append(records: Buffer[]): Promise<number> {
    if (this.role !== 'leader' || this.closed) {
      return Promise.reject(new NotLeaderError(this.currentLeaderId, this.epoch));
    }
    const batch = this.log.appendAsLeader(records, this.epoch, false, this.clock.now());
    const lastOffset = lastOffsetOf(batch);
    const done = new Promise<number>((resolve, reject) => {
      this.appendWaiters.push({ lastOffset, resolve, reject });
    });
    this.afterLeaderWrite();
    return done;
  }

  /** Writes a snapshot of the state below endOffset (which must be committed). */
  createSnapshot(endOffset: number, content: Buffer): SnapshotId {
    if (endOffset > this.highWatermark) throw new Error(`snapshot at ${endOffset} above high watermark ${this.highWatermark}`);
    const id: SnapshotId = { endOffset, epoch: this.log.epochOfOffset(endOffset - 1) };
    this.log.writeSnapshot(id, content);
    return id;
  }

  /** Graceful shutdown: a leader hands over with EndQuorumEpoch (KIP-595 "resign"). */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.role === 'leader' && this.config.voters.length > 1) {
      const successors = [...this.voterStates.entries()]
        .filter(([id]) => id !== this.config.nodeId)
        .sort((a, b) => b[1].endOffset - a[1].endOffset)
        .map(([id]) => id);
      const request: EndQuorumEpochRequest = {
        api: 'endQuorumEpoch',
        clusterId: this.config.clusterId,
        leaderId: this.config.nodeId,
        leaderEpoch: this.epoch,
        preferredSuccessors: successors,
      };
      await Promise.allSettled(successors.map((id) => this.transport.send(id, request)));
    }
    this.closed = true;
    this.generation++;
    this.clearTimers();
    this.failParked();
    this.failWaiters();
  }

  describeQuorum(): QuorumDescription {
    const describe = (id: number, s: VoterState | undefined) => ({
      replicaId: id,
      logEndOffset: id === this.config.nodeId ? this.log.endOffset : (s?.endOffset ?? -1),
      lastFetchTimestampMs: id === this.config.nodeId ? this.clock.now() : (s?.lastFetchTimeMs ?? -1),
      lastCaughtUpTimestampMs: id === this.config.nodeId ? this.clock.now() : (s?.lastCaughtUpTimeMs ?? -1),
    });
    return {
      leaderId: this.currentLeaderId,
      leaderEpoch: this.epoch,
      highWatermark: this.highWatermark,
      currentVoters: this.config.voters.map((id) => describe(id, this.voterStates.get(id))),
      observers: [...this.observerStates.entries()].map(([id, s]) => describe(id, s)),
    };
  }

  // ---- state transitions -------------------------------------------------------------

  private persist(): void {
    this.stateStore.write({
      leaderId: this.leaderId,
      leaderEpoch: this.epoch,
      votedId: this.votedId,
      votedDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA',
    });
  }

  private clearTimers(): void {
    if (this.electionTimer !== null) this.clock.clearTimeout(this.electionTimer);
    if (this.fetchTimer !== null) this.clock.clearTimeout(this.fetchTimer);
    this.electionTimer = this.fetchTimer = null;
  }

  private randomElectionTimeoutMs(): number {
    return this.config.electionTimeoutMs + Math.floor(this.random() * this.config.electionTimeoutMs);
  }

  private resetElectionTimer(delayMs: number): void {
    if (this.electionTimer !== null) this.clock.clearTimeout(this.electionTimer);
    this.electionTimer = this.clock.setTimeout(() => {
      this.electionTimer = null;
      if (!this.closed && this.role !== 'leader') this.becomeCandidate();
    }, delayMs);
  }

  private resetFetchTimer(): void {
    if (this.fetchTimer !== null) this.clock.clearTimeout(this.fetchTimer);
    if (!this.isVoter()) return;
    this.fetchTimer = this.clock.setTimeout(() => {
      this.fetchTimer = null;
      if (!this.closed && this.role === 'follower') this.becomeCandidate();
    }, this.config.fetchTimeoutMs);
  }

  /** Leaves the current role: stops loops and timers, fails what waited on leadership. */
  private leaveRole(): void {
    this.generation++;
    this.clearTimers();
    if (this.role === 'leader') {
      this.failParked();
      this.failWaiters();
    }
    this.leaderResigned = false;
  }

  private failParked(): void {
    for (const p of this.parked.splice(0)) {
      this.clock.clearTimeout(p.timer);
      p.resolve(this.fetchError(Errors.NOT_LEADER_OR_FOLLOWER.code));
    }
  }

  private failWaiters(): void {
    for (const w of this.appendWaiters.splice(0)) w.reject(new NotLeaderError(this.currentLeaderId, this.epoch));
  }

  /** A higher epoch seen anywhere: forget the old epoch's leader and vote. */
  private becomeUnattached(epoch: number): void {
    this.leaveRole();
    this.role = 'unattached';
    this.epoch = epoch;
    this.leaderId = -1;
    this.votedId = -1;
    this.persist();
    if (this.isVoter()) this.resetElectionTimer(this.randomElectionTimeoutMs());
  }

  private becomeCandidate(): void {
    if (!this.isVoter()) return;
    this.leaveRole();
    this.role = 'candidate';
    this.epoch += 1;
    this.leaderId = -1;
    this.votedId = this.config.nodeId;
    this.votesGranted = new Set([this.config.nodeId]);
    if (this.votesGranted.size >= this.majority()) {
      // The only voter wins at once: the leader state it persists next (this epoch, its own
      // vote, itself as leader) covers the candidate state, and nothing happened in between.
      this.becomeLeader();
      return;
    }
    this.persist();
    this.resetElectionTimer(this.randomElectionTimeoutMs() + Math.floor(this.random() * this.config.electionBackoffMaxMs));
    const request: VoteRequest = {
      api: 'vote',
      clusterId: this.config.clusterId,
      candidateEpoch: this.epoch,
      candidateId: this.config.nodeId,
      lastOffsetEpoch: this.log.lastFetchedEpoch(),
      lastOffset: this.log.endOffset,
    };
    const generation = this.generation;
    for (const voter of this.config.voters) {
      if (voter === this.config.nodeId) continue;
      this.transport.send(voter, request).then(
        (response) => this.handleVoteResponse(voter, response, generation),
        () => {},
      );
    }
  }

  private handleVoteResponse(voter: number, response: VoteResponse, generation: number): void {
    if (this.closed) return;
    if (response.leaderEpoch > this.epoch) {
      this.observeEpoch(response.leaderEpoch, response.leaderId);
      return;
    }
    if (generation !== this.generation || this.role !== 'candidate') return;
    if (response.errorCode === Errors.NONE.code && response.voteGranted) {
      this.votesGranted.add(voter);
      if (this.votesGranted.size >= this.majority()) this.becomeLeader();
    }
  }

  private becomeLeader(): void {
    this.leaveRole();
    this.role = 'leader';
    this.leaderId = this.config.nodeId;
    this.persist();
    this.voterStates = new Map(this.config.voters.map((id) => [id, { endOffset: -1, lastFetchTimeMs: -1, lastCaughtUpTimeMs: -1 }]));
    this.epochStartOffset = this.log.endOffset;
    const granting = [...this.votesGranted];
    this.log.appendAsLeader([encodeLeaderChange(this.config.nodeId, this.config.voters, granting)], this.epoch, true, this.clock.now());
    this.listener.handleLeaderChange(this.config.nodeId, this.epoch);
    const generation = this.generation;
    for (const voter of this.config.voters) {
      if (voter !== this.config.nodeId) void this.announceLeadership(voter, generation);
    }
    this.afterLeaderWrite();
    this.scheduleCheckQuorum(this.clock.now());
  }

  /**
   * Check quorum (as Kafka's leader does): a leader no majority has fetched from within
   * 1.5 x fetch timeout is cut off; it stops serving, as appends there could never commit.
   * Its vote in the current epoch stays cast, so it cannot help a second leader into this
   * epoch. It does not campaign itself: a cut-off node raising epochs would depose the
   * majority's leader when the network heals. It votes for, or follows, whoever the
   * others elect.
   */
  private scheduleCheckQuorum(sinceMs: number): void {
    if (this.config.voters.length === 1) return;
    const windowMs = Math.floor(this.config.fetchTimeoutMs * 1.5);
    this.fetchTimer = this.clock.setTimeout(() => {
      this.fetchTimer = null;
      if (this.role !== 'leader' || this.closed) return;
      const nowMs = this.clock.now();
      const windowStartMs = Math.max(sinceMs, nowMs - windowMs);
      let reached = 1;
      for (const [id, state] of this.voterStates) {
        if (id !== this.config.nodeId && state.lastFetchTimeMs >= windowStartMs) reached++;
      }
      if (reached >= this.majority()) {
        this.scheduleCheckQuorum(nowMs - windowMs);
        return;
      }
      this.leaveRole();
      this.role = 'voted';
      this.leaderId = -1;
      this.persist();
    }, windowMs);
  }

  /** The leader counts its own copy toward the majority only once it is written. */
  private afterLeaderWrite(): void {
    const generation = this.generation;
    const writtenEndOffset = this.log.endOffset;
    this.completeParked();
    this.log.flush().then(
      () => {
        if (generation === this.generation && this.role === 'leader') this.onLeaderLogWritten(writtenEndOffset);
      },
      () => {},
    );
  }

  /** Sends BeginQuorumEpoch until the voter answers or starts fetching from us. */
  private async announceLeadership(voter: number, generation: number): Promise<void> {
    const request: BeginQuorumEpochRequest = {
      api: 'beginQuorumEpoch',
      clusterId: this.config.clusterId,
      leaderId: this.config.nodeId,
      leaderEpoch: this.epoch,
    };
    while (generation === this.generation && (this.voterStates.get(voter)?.lastFetchTimeMs ?? -1) < 0) {
      try {
        const response = await this.transport.send(voter, request);
        if (response.leaderEpoch > this.epoch) this.observeEpoch(response.leaderEpoch, response.leaderId);
        return;
      } catch {
        await this.sleep(this.config.retryBackoffMs);
      }
    }
  }

  private becomeFollower(epoch: number, leaderId: number): void {
    this.leaveRole();
    this.role = 'follower';
    this.epoch = epoch;
    this.leaderId = leaderId;
    this.persist();
    this.listener.handleLeaderChange(leaderId, epoch);
    this.resetFetchTimer();
    void this.fetchLoop(this.generation);
  }

  /** Reacts to an epoch/leader learned from any message. */
  private observeEpoch(epoch: number, leaderId: number): void {
    if (epoch < this.epoch) return;
    if (epoch > this.epoch) {
      if (leaderId >= 0 && leaderId !== this.config.nodeId) this.becomeFollower(epoch, leaderId);
      else this.becomeUnattached(epoch);
    } else if (leaderId >= 0 && leaderId !== this.config.nodeId && this.role !== 'follower' && this.role !== 'leader') {
      this.becomeFollower(epoch, leaderId);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.clock.setTimeout(resolve, ms));
  }

  // ---- follower ----------------------------------------------------------------------

  private async fetchLoop(generation: number): Promise<void> {
    while (generation === this.generation && !this.closed) {
      const request: RaftFetchRequest = {
        api: 'fetch',
        clusterId: this.config.clusterId,
        replicaId: this.config.nodeId,
        currentLeaderEpoch: this.epoch,
        fetchOffset: this.log.endOffset,
        lastFetchedEpoch: this.log.lastFetchedEpoch(),
        maxWaitMs: this.config.fetchMaxWaitMs,
        maxBytes: this.config.fetchMaxBytes,
      };
      let response: RaftFetchResponse;
      try {
        response = await this.transport.send(this.leaderId, request);
      } catch {
        await this.sleep(this.config.retryBackoffMs);
        continue;
      }
      if (generation !== this.generation || this.closed) return;
      if (response.leaderEpoch > this.epoch) {
        this.observeEpoch(response.leaderEpoch, response.leaderId);
        return;
      }
      if (response.errorCode !== Errors.NONE.code) {
        await this.sleep(this.config.retryBackoffMs);
        continue;
      }
      this.resetFetchTimer();
      if (response.divergingEpoch !== null) {
        const truncateOffset = Math.min(response.divergingEpoch.endOffset, this.log.endOffset);
        if (truncateOffset < this.highWatermark) throw new Error(`divergence below the high watermark at ${truncateOffset}`);
        this.log.truncateTo(truncateOffset);
        continue;
      }
      if (response.snapshotId !== null) {
        if (!(await this.fetchSnapshot(response.snapshotId, generation))) continue;
      } else if (response.batches.length > 0) {
        this.log.appendAsFollower(response.batches);
        // The next fetch offset acknowledges these records: they must be written first.
        await this.log.flush();
        if (generation !== this.generation || this.closed) return;
      }
      this.advanceHighWatermark(Math.min(response.highWatermark, this.log.endOffset));
    }
  }

  private async fetchSnapshot(id: SnapshotId, generation: number): Promise<boolean> {
    const chunks: Buffer[] = [];
    let position = 0;
    for (;;) {
      const request: FetchSnapshotRequest = {
        api: 'fetchSnapshot',
        clusterId: this.config.clusterId,
        replicaId: this.config.nodeId,
        currentLeaderEpoch: this.epoch,
        snapshotId: id,
        position,
        maxBytes: this.config.fetchMaxBytes,
      };
      let response: FetchSnapshotResponse;
      try {
        response = await this.transport.send(this.leaderId, request);
      } catch {
        return false;
      }
      if (generation !== this.generation || response.errorCode !== Errors.NONE.code) return false;
      chunks.push(response.unalignedRecords);
      position += response.unalignedRecords.length;
      if (position >= response.size) break;
    }
    const content = Buffer.concat(chunks);
    this.log.installSnapshot(id, content);
    this.listener.handleLoadSnapshot(id, content);
    this.deliveredOffset = id.endOffset;
    this.highWatermark = Math.max(this.highWatermark, id.endOffset);
    return true;
  }

  // ---- leader ------------------------------------------------------------------------

  private onLeaderLogWritten(endOffset: number): void {
    const self = this.voterStates.get(this.config.nodeId);
    if (self !== undefined && endOffset > self.endOffset) {
      self.endOffset = endOffset;
      self.lastFetchTimeMs = self.lastCaughtUpTimeMs = this.clock.now();
    }
    this.maybeAdvanceLeaderHighWatermark();
  }

  private maybeAdvanceLeaderHighWatermark(): void {
    const offsets = [...this.voterStates.values()].map((s) => s.endOffset).sort((a, b) => b - a);
    const majorityOffset = offsets[this.majority() - 1] ?? -1;
    // Only an entry of the leader's own epoch commits earlier ones (Raft §5.4.2).
    if (majorityOffset > this.epochStartOffset && majorityOffset > this.highWatermark) {
      this.advanceHighWatermark(majorityOffset);
      this.completeParked();
    }
  }

  private advanceHighWatermark(offset: number): void {
    if (offset <= this.highWatermark) return;
    this.highWatermark = offset;
    this.deliverCommitted();
  }

  private deliverCommitted(): void {
    while (this.deliveredOffset < this.highWatermark) {
      const batches = this.log.read(this.deliveredOffset, Number.MAX_SAFE_INTEGER);
      const committed: RaftBatch[] = [];
      for (const b of batches) {
        if (lastOffsetOf(b) >= this.highWatermark) break;
        if (!b.control) committed.push(b);
        this.deliveredOffset = lastOffsetOf(b) + 1;
      }
      if (committed.length > 0) this.listener.handleCommit(committed);
      const [first] = batches;
      if (first === undefined || lastOffsetOf(first) >= this.highWatermark) break;
    }
    for (let w = this.appendWaiters[0]; w !== undefined && w.lastOffset < this.deliveredOffset; w = this.appendWaiters[0]) {
      this.appendWaiters.shift();
      w.resolve(w.lastOffset);
    }
  }

  private completeParked(): void {
    const parked = this.parked.splice(0);
    for (const p of parked) {
      this.clock.clearTimeout(p.timer);
      p.resolve(this.answerFetch(p.request));
    }
  }

  private fetchError(errorCode: number): RaftFetchResponse {
    return {
      errorCode,
      leaderId: this.currentLeaderId,
      leaderEpoch: this.epoch,
      highWatermark: this.highWatermark,
      logStartOffset: this.log.startOffset,
      divergingEpoch: null,
      snapshotId: null,
      batches: [],
    };
  }

  private answerFetch(request: RaftFetchRequest): RaftFetchResponse {
    return { ...this.fetchError(Errors.NONE.code), batches: this.log.read(request.fetchOffset, request.maxBytes) };
  }

  // ---- inbound RPCs ------------------------------------------------------------------

  handleVote(request: VoteRequest): VoteResponse {
    const reject = (errorCode: number): VoteResponse => ({
      errorCode,
      leaderId: this.currentLeaderId,
      leaderEpoch: this.epoch,
      voteGranted: false,
    });
    if (this.closed) return reject(Errors.BROKER_NOT_AVAILABLE.code);
    if (!this.isVoter()) return reject(Errors.INCONSISTENT_VOTER_SET.code);
    if (request.candidateEpoch < this.epoch) return reject(Errors.FENCED_LEADER_EPOCH.code);
    if (request.candidateEpoch > this.epoch) this.becomeUnattached(request.candidateEpoch);
    const alreadyDecided =
      this.role === 'leader' ||
      this.role === 'follower' ||
      this.role === 'candidate' ||
      (this.role === 'voted' && this.votedId !== request.candidateId);
    if (alreadyDecided) return reject(Errors.NONE.code);
    const myEpoch = this.log.lastFetchedEpoch();
    const upToDate = request.lastOffsetEpoch > myEpoch || (request.lastOffsetEpoch === myEpoch && request.lastOffset >= this.log.endOffset);
    if (!upToDate) return reject(Errors.NONE.code);
    if (this.role !== 'voted') {
      this.role = 'voted';
      this.votedId = request.candidateId;
      this.persist();
    }
    this.resetElectionTimer(this.randomElectionTimeoutMs());
    return { errorCode: Errors.NONE.code, leaderId: -1, leaderEpoch: this.epoch, voteGranted: true };
  }

  handleBeginQuorumEpoch(request: BeginQuorumEpochRequest): QuorumEpochResponse {
    if (request.leaderEpoch < this.epoch) {
      return { errorCode: Errors.FENCED_LEADER_EPOCH.code, leaderId: this.currentLeaderId, leaderEpoch: this.epoch };
    }
    const sameLeader = request.leaderEpoch === this.epoch && this.role === 'follower' && this.leaderId === request.leaderId;
    if (!sameLeader && request.leaderId !== this.config.nodeId) this.becomeFollower(request.leaderEpoch, request.leaderId);
    return { errorCode: Errors.NONE.code, leaderId: this.currentLeaderId, leaderEpoch: this.epoch };
  }

  handleEndQuorumEpoch(request: EndQuorumEpochRequest): QuorumEpochResponse {
    if (request.leaderEpoch < this.epoch) {
      return { errorCode: Errors.FENCED_LEADER_EPOCH.code, leaderId: this.currentLeaderId, leaderEpoch: this.epoch };
    }
    if (request.leaderEpoch > this.epoch) this.becomeUnattached(request.leaderEpoch);
    if (this.role === 'follower' && this.leaderId === request.leaderId && this.isVoter()) {
      // Stay in the epoch (our vote in it stands) but stop fetching; the most caught-up
      // successor stands first (KIP-595 EndQuorumEpoch backoff by position).
      this.generation++;
      if (this.fetchTimer !== null) this.clock.clearTimeout(this.fetchTimer);
      this.fetchTimer = null;
      this.leaderResigned = true;
      const position = request.preferredSuccessors.indexOf(this.config.nodeId);
      const backoffMs =
        position < 0
          ? this.randomElectionTimeoutMs()
          : Math.floor((position * this.config.electionBackoffMaxMs) / Math.max(1, request.preferredSuccessors.length));
      this.resetElectionTimer(backoffMs);
    }
    return { errorCode: Errors.NONE.code, leaderId: this.currentLeaderId, leaderEpoch: this.epoch };
  }

  handleFetch(request: RaftFetchRequest): Promise<RaftFetchResponse> {
    if (request.currentLeaderEpoch > this.epoch) this.observeEpoch(request.currentLeaderEpoch, -1);
    if (this.role !== 'leader') return Promise.resolve(this.fetchError(Errors.NOT_LEADER_OR_FOLLOWER.code));
    if (request.currentLeaderEpoch < this.epoch) return Promise.resolve(this.fetchError(Errors.FENCED_LEADER_EPOCH.code));
    const snapshotId = this.log.latestSnapshotId();
    if (request.fetchOffset < this.log.startOffset && snapshotId !== null) {
      return Promise.resolve({ ...this.fetchError(Errors.NONE.code), snapshotId });
    }
    if (request.fetchOffset > 0 || request.lastFetchedEpoch > 0) {
      const end = this.log.endOffsetForEpoch(request.lastFetchedEpoch);
      if (end.epoch < request.lastFetchedEpoch || end.offset < request.fetchOffset) {
        return Promise.resolve({
          ...this.fetchError(Errors.NONE.code),
          divergingEpoch: { epoch: end.epoch, endOffset: Math.max(0, end.offset) },
        });
      }
    }
    this.recordReplicaFetch(request.replicaId, request.fetchOffset);
    if (request.fetchOffset < this.log.endOffset || request.maxWaitMs <= 0) {
      return Promise.resolve(this.answerFetch(request));
    }
    return new Promise((resolve) => {
      const parked: ParkedFetch = {
        request,
        resolve,
        timer: this.clock.setTimeout(() => {
          this.parked = this.parked.filter((p) => p !== parked);
          resolve(this.answerFetch(request));
        }, request.maxWaitMs),
      };
      this.parked.push(parked);
    });
  }

  private recordReplicaFetch(replicaId: number, fetchOffset: number): void {
    const nowMs = this.clock.now();
    let state = this.voterStates.get(replicaId);
    if (state === undefined) {
      state = this.observerStates.get(replicaId) ?? { endOffset: -1, lastFetchTimeMs: -1, lastCaughtUpTimeMs: -1 };
      this.observerStates.set(replicaId, state);
    }
    state.endOffset = fetchOffset;
    state.lastFetchTimeMs = nowMs;
    if (fetchOffset >= this.log.endOffset) state.lastCaughtUpTimeMs = nowMs;
    if (this.voterStates.has(replicaId)) this.maybeAdvanceLeaderHighWatermark();
  }

  handleFetchSnapshot(request: FetchSnapshotRequest): FetchSnapshotResponse {
    const base = {
      leaderId: this.currentLeaderId,
      leaderEpoch: this.epoch,
      snapshotId: request.snapshotId,
      size: 0,
      position: request.position,
      unalignedRecords: Buffer.alloc(0),
    };
    if (this.role !== 'leader') return { ...base, errorCode: Errors.NOT_LEADER_OR_FOLLOWER.code };
    if (request.currentLeaderEpoch < this.epoch) return { ...base, errorCode: Errors.FENCED_LEADER_EPOCH.code };
    const content = this.log.readSnapshot(request.snapshotId);
    if (content === null) return { ...base, errorCode: Errors.SNAPSHOT_NOT_FOUND.code };
    if (request.position < 0 || request.position > content.length) {
      return { ...base, size: content.length, errorCode: Errors.POSITION_OUT_OF_RANGE.code };
    }
    const chunk = content.subarray(request.position, request.position + Math.max(1, request.maxBytes));
    return { ...base, errorCode: Errors.NONE.code, size: content.length, unalignedRecords: chunk };
  }
}
