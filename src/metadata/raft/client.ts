// A KRaft-style Raft client (KIP-595): election by Vote, leadership announced by
// BeginQuorumEpoch, followers pull the log with Fetch (divergence found through the
// leader-epoch cache, lagging followers bootstrapped from a snapshot with FetchSnapshot),
// the high watermark is the offset a majority of voters holds. A quorum of one voter elects
// itself at start and commits on its own append: the single-node broker is this same code.
//
// The voter set (KIP-853): with kraft.version 1 it lives in the log as VotersRecord control
// records, the first leader of a new log writing the static voters there. Every replica acts
// on the latest voter set in its log, committed or not; the leader changes it one voter at a
// time (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter), only once the previous change and an
// entry of its own epoch are committed, and adds only a replica that fetches and is caught
// up. A leader that removes itself leads until that change commits, then resigns.

import { Errors, KafkaError } from '../../../protocol/errors.ts';
import {
  encodeLeaderChangeMessage,
  makeLeaderChangeMessage,
  makeLeaderChangeMessageVoter,
} from '../../../protocol/messages/leader-change-message.ts';
import { Writer, ZERO_UUID } from '../../../protocol/primitives.ts';
import { ControlRecordType } from '../../../protocol/records/index.ts';
import { type BrokerConfig, DEFAULT_BROKER_CONFIG } from '../../config/broker-config.ts';
import type { RaftLog } from './log.ts';
import {
  LogHistory,
  type RaftEndpoint,
  type RaftVoter,
  SUPPORTED_KRAFT_VERSIONS,
  VoterSet,
  encodeKRaftVersionValue,
  encodeVotersValue,
  frameSnapshot,
  kraftControlRecordsOf,
  sameEndpoints,
  unframeSnapshot,
} from './voter-set.ts';
import type {
  BeginQuorumEpochRequest,
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
  UpdateVoterRequest,
  UpdateVoterResponse,
  VoteRequest,
  VoteResponse,
  VoterChangeResult,
} from './types.ts';
import { lastOffsetOf } from './types.ts';
import type { Clock, TimerHandle } from '../../runtime/clock.ts';
import { systemRandom } from '../../runtime/random.ts';

export interface RaftConfig {
  nodeId: number;
  /**
   * controller.quorum.voters ids: the voter set until the log holds one (KIP-853); this node is
   * an observer when it is not in the voter set.
   */
  voters: number[];
  /** The static voters' listeners and directory ids (controller.quorum.voters names no directory: ZERO_UUID). */
  voterDetails?: readonly RaftVoter[];
  /** This node's metadata log directory id (meta.properties directory.id); ZERO_UUID when unknown. */
  directoryId?: string;
  /** This node's controller listeners, as the voter set names them. */
  localEndpoints?: readonly RaftEndpoint[];
  /** The controller listener the quorum talks on: which of a voter's endpoints to use. */
  listenerName?: string;
  /**
   * The kraft.version this node brings a log to: 1 makes it, when it leads a log without a
   * KRaftVersionRecord (a new log, or one kept with kraft.version 0), write the voters it was
   * elected by (the static ones) into the log, which lets them change; 0 (the default) keeps
   * the static voters.
   */
  kraftVersion?: 0 | 1;
  /** How long AddRaftVoter and RemoveRaftVoter wait for their change to commit (controller.quorum.request.timeout.ms). */
  requestTimeoutMs?: number;
  /**
   * Where an observer without a leader asks for one (Kafka's fetch to any bootstrap server,
   * KIP-853): transport destinations, the voters when unset.
   */
  bootstrapIds?: number[];
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
    requestTimeoutMs: config.getInt('controller.quorum.request.timeout.ms'),
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
  /** The directory id the replica fetched with (Fetch v17), when it sent one. */
  directoryId?: string;
}

const freshState = (): VoterState => ({ endOffset: -1, lastFetchTimeMs: -1, lastCaughtUpTimeMs: -1 });

/** A VotersRecord the leader appended and waits to see committed. */
interface PendingVoterChange {
  offset: number;
  /** AddRaftVoter and RemoveRaftVoter requests answered at commit (or at their timeout). */
  waiters: ((result: VoterChangeResult) => void)[];
}

const changeResult = (error: { code: number }, errorMessage: string | null = null): VoterChangeResult => ({
  errorCode: error.code,
  errorMessage,
});

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
  /** ZERO_UUID when unknown. */
  replicaDirectoryId: string;
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
  /** The voters' listeners (DescribeQuorum v2 Nodes). */
  nodes: { nodeId: number; listeners: RaftEndpoint[] }[];
  kraftVersion: number;
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
  /** The high watermark this leader last answered each replica's Fetch with. */
  private readonly highWatermarkSent = new Map<number, number>();
  private parked: ParkedFetch[] = [];
  /** The voter sets of the log by offset; the base is the static voters or the snapshot's. */
  private readonly voterHistory: LogHistory<VoterSet>;
  /** kraft.version by offset: 0 until a KRaftVersionRecord says otherwise. */
  private readonly kraftHistory = new LogHistory<number>(0);
  /** Leader: the voter change waiting for its commit; another one is refused meanwhile. */
  private pendingChange: PendingVoterChange | null = null;
  /** Follower: when it may next send UpdateRaftVoter for its own entry. */
  private nextUpdateVoterMs = 0;
  private appendWaiters: AppendWaiter[] = [];
  private electionTimer: TimerHandle | null = null;
  /** Follower: fetch timeout. Leader: the check-quorum deadline. */
  private fetchTimer: TimerHandle | null = null;
  /** Bumped to stop the running fetch loop or BeginQuorumEpoch retries. */
  private generation = 0;
  /** The bootstrap destination an observer asks next for the leader. */
  private nextBootstrap = 0;
  private closed = false;

  constructor(
    private readonly config: RaftConfig,
    private readonly log: RaftLog,
    private readonly stateStore: QuorumStateStore,
    private readonly transport: RaftTransport,
    private readonly listener: RaftListener,
    private readonly clock: Clock,
    private readonly random: () => number = systemRandom.next,
  ) {
    this.voterHistory = new LogHistory(this.staticVoters());
  }

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
  /** The voter set this node acts on: the latest in its log, committed or not (KIP-853). */
  voterSet(): VoterSet {
    return this.voterHistory.latest();
  }
  /** kraft.version of the log: 1 once its KRaftVersionRecord says so. */
  get kraftVersion(): number {
    return this.kraftHistory.latest();
  }
  private get directoryId(): string {
    return this.config.directoryId ?? ZERO_UUID;
  }
  /** A voter entry for this node's id names this node unless it names another directory. */
  private isVoter(id = this.config.nodeId): boolean {
    const voters = this.voterSet();
    if (id !== this.config.nodeId || this.directoryId === ZERO_UUID) return voters.has(id);
    return voters.isVoter(id, this.directoryId);
  }
  private majority(): number {
    return this.voterSet().majority();
  }

  /** Loads the persisted quorum state and the latest snapshot, then joins the quorum. */
  start(): void {
    const snapshotId = this.log.latestSnapshotId();
    if (snapshotId !== null) {
      const content = this.log.readSnapshot(snapshotId);
      if (content !== null) {
        this.listener.handleLoadSnapshot(snapshotId, this.loadSnapshotControlRecords(content));
        this.deliveredOffset = snapshotId.endOffset;
        this.highWatermark = snapshotId.endOffset;
      }
    }
    this.applyControlRecords(this.log.read(this.log.startOffset, Number.MAX_SAFE_INTEGER));
    this.publishAddresses();
    const state = this.stateStore.read();
    if (state !== null) {
      this.epoch = state.leaderEpoch;
      this.votedId = state.votedId;
      this.leaderId = state.leaderId === this.config.nodeId ? -1 : state.leaderId;
    }
    if (!this.isVoter()) {
      if (this.leaderId >= 0) this.becomeFollower(this.epoch, this.leaderId);
      else void this.findLeader(this.generation);
      return;
    }
    if (this.voterSet().size === 1) {
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

  /**
   * Writes a snapshot of the state below endOffset (which must be committed). With kraft.version
   * 1 it carries the voter set and kraft.version in force there ahead of `content`.
   */
  createSnapshot(endOffset: number, content: Buffer): SnapshotId {
    if (endOffset > this.highWatermark) throw new Error(`snapshot at ${endOffset} above high watermark ${this.highWatermark}`);
    const id: SnapshotId = { endOffset, epoch: this.log.epochOfOffset(endOffset - 1) };
    const kraftVersion = this.kraftHistory.valueBefore(endOffset);
    const framed =
      kraftVersion >= 1
        ? frameSnapshot(kraftVersion, this.voterHistory.valueBefore(endOffset), id.epoch, this.clock.now(), content)
        : content;
    this.log.writeSnapshot(id, framed);
    return id;
  }

  /** Graceful shutdown: a leader hands over with EndQuorumEpoch (KIP-595 "resign"). */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.role === 'leader' && this.voterSet().size > 1) await Promise.allSettled(this.handOver());
    this.closed = true;
    this.generation++;
    this.clearTimers();
    this.failParked();
    this.failWaiters();
  }

  describeQuorum(): QuorumDescription {
    const voters = this.voterSet();
    const describe = (id: number, s: VoterState | undefined) => ({
      replicaId: id,
      replicaDirectoryId: id === this.config.nodeId ? this.directoryId : (voters.get(id)?.directoryId ?? s?.directoryId ?? ZERO_UUID),
      logEndOffset: id === this.config.nodeId ? this.log.endOffset : (s?.endOffset ?? -1),
      lastFetchTimestampMs: id === this.config.nodeId ? this.clock.now() : (s?.lastFetchTimeMs ?? -1),
      lastCaughtUpTimestampMs: id === this.config.nodeId ? this.clock.now() : (s?.lastCaughtUpTimeMs ?? -1),
    });
    return {
      leaderId: this.currentLeaderId,
      leaderEpoch: this.epoch,
      highWatermark: this.highWatermark,
      currentVoters: voters.ids().map((id) => describe(id, this.voterStates.get(id))),
      observers: [...this.observerStates.entries()].map(([id, s]) => describe(id, s)),
      nodes: voters.voters().map((v) => ({ nodeId: v.id, listeners: v.endpoints })),
      kraftVersion: this.kraftVersion,
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

  /** A follower that hears nothing from its leader: a voter stands for election, an observer looks for the leader again. */
  private resetFetchTimer(): void {
    if (this.fetchTimer !== null) this.clock.clearTimeout(this.fetchTimer);
    this.fetchTimer = this.clock.setTimeout(() => {
      this.fetchTimer = null;
      if (this.closed || this.role !== 'follower') return;
      if (this.isVoter()) this.becomeCandidate();
      else this.becomeUnattached(this.epoch);
    }, this.config.fetchTimeoutMs);
  }

  /** Leaves the current role: stops loops and timers, fails what waited on leadership. */
  private leaveRole(): void {
    this.generation++;
    this.clearTimers();
    if (this.role === 'leader') {
      this.failParked();
      this.failWaiters();
      this.failVoterChange();
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
    else void this.findLeader(this.generation);
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
    for (const voter of this.voterSet().ids()) {
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
    const voters = this.voterSet().ids();
    this.voterStates = new Map(voters.map((id) => [id, freshState()]));
    this.highWatermarkSent.clear();
    this.epochStartOffset = this.log.endOffset;
    const granting = [...this.votesGranted];
    this.log.appendAsLeader([encodeLeaderChange(this.config.nodeId, voters, granting)], this.epoch, true, this.clock.now());
    this.appendBootstrapVoters();
    this.listener.handleLeaderChange(this.config.nodeId, this.epoch);
    const generation = this.generation;
    for (const voter of voters) {
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
    // A sole static voter has nobody to hear from; with kraft.version 1 voters may join it later.
    const reconfigurable = this.kraftVersion >= 1 || (this.config.kraftVersion ?? 0) >= 1;
    if (this.voterSet().size === 1 && !reconfigurable) return;
    const windowMs = Math.floor(this.config.fetchTimeoutMs * 1.5);
    this.fetchTimer = this.clock.setTimeout(() => {
      this.fetchTimer = null;
      if (this.role !== 'leader' || this.closed) return;
      const nowMs = this.clock.now();
      const windowStartMs = Math.max(sinceMs, nowMs - windowMs);
      // A leader removing itself leads without a vote of its own until that change commits.
      let reached = this.isVoter() ? 1 : 0;
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

  /**
   * An observer without a leader fetches from the bootstrap destinations in turn (Kafka's
   * fetch to any bootstrap server) until an answer names the leader of an epoch at least its
   * own, then follows it; it never votes or stands. A round that finds none backs off.
   */
  private async findLeader(generation: number): Promise<void> {
    for (let asked = 0; ; asked++) {
      const targets = this.leaderSearchTargets();
      if (targets.length === 0) return;
      if (asked > 0 && asked % targets.length === 0) await this.sleep(this.config.retryBackoffMs);
      if (generation !== this.generation || this.closed) return;
      const target = targets[this.nextBootstrap++ % targets.length]!;
      const request: RaftFetchRequest = {
        api: 'fetch',
        clusterId: this.config.clusterId,
        replicaId: this.config.nodeId,
        replicaDirectoryId: this.directoryId,
        currentLeaderEpoch: this.epoch,
        fetchOffset: this.log.endOffset,
        lastFetchedEpoch: this.log.lastFetchedEpoch(),
        maxWaitMs: 0,
        maxBytes: 0,
      };
      let response: RaftFetchResponse;
      try {
        response = await this.transport.send(target, request);
      } catch {
        continue;
      }
      if (generation !== this.generation || this.closed) return;
      if (response.leaderId >= 0 && response.leaderId !== this.config.nodeId && response.leaderEpoch >= this.epoch) {
        this.becomeFollower(response.leaderEpoch, response.leaderId);
        return;
      }
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
        replicaDirectoryId: this.directoryId,
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
        const truncateOffset = this.divergenceTruncationOffset(response.divergingEpoch);
        if (truncateOffset < this.highWatermark) throw new Error(`divergence below the high watermark at ${truncateOffset}`);
        this.log.truncateTo(truncateOffset);
        this.truncateControlRecords(truncateOffset);
        continue;
      }
      if (response.snapshotId !== null) {
        if (!(await this.fetchSnapshot(response.snapshotId, generation))) continue;
      } else if (response.batches.length > 0) {
        this.log.appendAsFollower(response.batches);
        // A voter set takes effect as soon as it is in the log (KIP-853).
        this.applyControlRecords(response.batches);
        // The next fetch offset acknowledges these records: they must be written first.
        await this.log.flush();
        if (generation !== this.generation || this.closed) return;
      }
      this.advanceHighWatermark(Math.min(response.highWatermark, this.log.endOffset));
      this.maybeUpdateOwnVoterEntry();
    }
  }

  /**
   * Kafka's RaftLog.truncateToEndOffset. The leader's epoch may end after this log's own
   * records of that epoch do, where a later epoch of ours begins (a leader of ours that
   * no majority followed): cutting only at the leader's offset would keep those records, and
   * the next fetch would be told the same divergence, forever.
   */
  private divergenceTruncationOffset(diverging: { epoch: number; endOffset: number }): number {
    if (diverging.epoch === 0) return Math.min(diverging.endOffset, this.log.endOffset);
    const local = this.log.endOffsetForEpoch(diverging.epoch);
    if (local.epoch === diverging.epoch) return Math.min(local.offset, diverging.endOffset);
    // Past the end of our last epoch below it, our records are of later epochs than the leader's there (-1: none is below it).
    return Math.max(local.offset, this.log.startOffset);
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
    this.listener.handleLoadSnapshot(id, this.loadSnapshotControlRecords(content));
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
      this.onLeaderCommit();
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
    this.highWatermarkSent.set(request.replicaId, this.highWatermark);
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
    this.recordReplicaFetch(request.replicaId, request.fetchOffset, request.replicaDirectoryId);
    // The fetch may have committed this leader's own removal: it resigned.
    if (this.role !== 'leader') return Promise.resolve(this.fetchError(Errors.NOT_LEADER_OR_FOLLOWER.code));
    // A replica that has not been told the current high watermark is answered at once: parked,
    // it would learn of a commit (often the one its own fetch just made) only when the wait ran
    // out, and every broker applies metadata only up to the high watermark it knows.
    const highWatermarkUnknown = (this.highWatermarkSent.get(request.replicaId) ?? -1) < this.highWatermark;
    if (request.fetchOffset < this.log.endOffset || request.maxWaitMs <= 0 || highWatermarkUnknown) {
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

  private recordReplicaFetch(replicaId: number, fetchOffset: number, directoryId: string | undefined): void {
    const nowMs = this.clock.now();
    let state = this.voterStates.get(replicaId);
    if (state === undefined) {
      state = this.observerStates.get(replicaId) ?? freshState();
      this.observerStates.set(replicaId, state);
    }
    if (directoryId !== undefined && directoryId !== ZERO_UUID) state.directoryId = directoryId;
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

  // ---- the voter set (KIP-853) -------------------------------------------------------

  /** controller.quorum.voters, with what is known of each (this node's own directory id and listeners). */
  private staticVoters(): VoterSet {
    const details = new Map((this.config.voterDetails ?? []).map((v) => [v.id, v]));
    const local = this.config.localEndpoints ?? [];
    return new VoterSet(
      this.config.voters.map((id): RaftVoter => {
        const known = details.get(id);
        if (id !== this.config.nodeId) {
          return known ?? { id, directoryId: ZERO_UUID, endpoints: [], kraftVersion: SUPPORTED_KRAFT_VERSIONS };
        }
        const endpoints = local.length > 0 ? [...local] : (known?.endpoints ?? []);
        return { id, directoryId: this.directoryId, endpoints, kraftVersion: SUPPORTED_KRAFT_VERSIONS };
      }),
    );
  }

  /** Takes the voter set and kraft.version out of a snapshot; returns the listener's part. */
  private loadSnapshotControlRecords(snapshot: Buffer): Buffer {
    const { kraftVersion, voters, content } = unframeSnapshot(snapshot);
    this.kraftHistory.reset(kraftVersion ?? 0);
    this.voterHistory.reset(voters ?? this.staticVoters());
    this.onVotersChanged();
    return content;
  }

  private applyControlRecords(batches: readonly RaftBatch[]): void {
    const records = kraftControlRecordsOf(batches);
    if (records.length === 0) return;
    for (const record of records) {
      if ('voters' in record) this.voterHistory.add(record.offset, record.voters);
      else this.kraftHistory.add(record.offset, record.kraftVersion);
    }
    this.onVotersChanged();
  }

  /** A truncated log falls back to the voter set in force before the truncated records. */
  private truncateControlRecords(offset: number): void {
    this.voterHistory.truncateFrom(offset);
    this.kraftHistory.truncateFrom(offset);
    this.onVotersChanged();
  }

  /** The leader counts the new voters at once: their states move between voters and observers. */
  private onVotersChanged(): void {
    this.publishAddresses();
    if (this.role !== 'leader') return;
    const states = new Map<number, VoterState>();
    for (const id of this.voterSet().ids()) {
      states.set(id, this.voterStates.get(id) ?? this.observerStates.get(id) ?? freshState());
      this.observerStates.delete(id);
    }
    for (const [id, state] of this.voterStates) {
      if (!states.has(id) && id !== this.config.nodeId) this.observerStates.set(id, state);
    }
    this.voterStates = states;
    this.maybeAdvanceLeaderHighWatermark();
  }

  /** Tells the transport where every voter the log names listens (later sets win). */
  private publishAddresses(): void {
    if (this.transport.updateAddresses === undefined) return;
    const addresses = new Map<number, { host: string; port: number }>();
    for (const voters of this.voterHistory.values()) {
      for (const id of voters.ids()) {
        const endpoint = voters.endpointOf(id, this.config.listenerName);
        if (endpoint !== undefined && endpoint.host !== '' && id !== this.config.nodeId) {
          addresses.set(id, { host: endpoint.host, port: endpoint.port });
        }
      }
    }
    this.transport.updateAddresses(addresses);
  }

  /** Where an observer asks for the leader: the bootstrap servers and every voter it knows of. */
  private leaderSearchTargets(): number[] {
    const targets = new Set(this.config.bootstrapIds ?? []);
    for (const id of this.voterSet().ids()) if (id !== this.config.nodeId) targets.add(id);
    return [...targets];
  }

  /**
   * A leader configured for kraft.version 1 whose log has none yet (a new log, or one of
   * kraft.version 0) writes the voters it was elected by (the static ones) into it, as Kafka's
   * leader does when its voter set came from the bootstrap checkpoint: from then on the log
   * alone says who votes. The records are appended with the epoch's LeaderChange, so they
   * commit with it.
   */
  private appendBootstrapVoters(): void {
    if ((this.config.kraftVersion ?? 0) < 1 || this.kraftVersion >= 1) return;
    const nowMs = this.clock.now();
    const voters = this.voterSet();
    const version = this.log.appendAsLeader([encodeKRaftVersionValue(1)], this.epoch, true, nowMs, ControlRecordType.KRaftVersion);
    const set = this.log.appendAsLeader([encodeVotersValue(voters)], this.epoch, true, nowMs, ControlRecordType.KRaftVoters);
    this.kraftHistory.add(version.baseOffset, 1);
    this.voterHistory.add(set.baseOffset, voters);
  }

  /** After the leader's high watermark moved: answers a committed voter change, resigns if voted out. */
  private onLeaderCommit(): void {
    const change = this.pendingChange;
    if (change !== null && this.highWatermark > change.offset) {
      this.pendingChange = null;
      for (const done of change.waiters.splice(0)) done(changeResult(Errors.NONE));
    }
    if (this.role !== 'leader') return;
    if (!this.isVoter() && this.voterHistory.latestOffset() < this.highWatermark) {
      this.resign();
      return;
    }
    if (this.voterChangeRefusal() !== null) return;
    const updated = this.ownUpdatedEntry();
    if (updated !== null) this.appendVoterSet(this.voterSet().with(updated));
  }

  /** EndQuorumEpoch to the other voters, most caught up first, each named a preferred successor. */
  private handOver(): Promise<unknown>[] {
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
    return successors.map((id) => this.transport.send(id, request));
  }

  /**
   * A leader the committed voter set leaves out hands over (EndQuorumEpoch to the voters, most
   * caught up first) and goes on as an observer of whoever they elect.
   */
  private resign(): void {
    for (const sent of this.handOver()) sent.catch(() => {});
    this.leaveRole();
    this.role = 'unattached';
    this.leaderId = -1;
    this.persist();
    this.listener.handleLeaderChange(-1, this.epoch);
    void this.findLeader(this.generation);
  }

  private failVoterChange(): void {
    const change = this.pendingChange;
    this.pendingChange = null;
    for (const done of change?.waiters.splice(0) ?? []) done(changeResult(Errors.NOT_LEADER_OR_FOLLOWER));
  }

  /** Why the leader cannot change the voter set now (Kafka's checks, in its order), or null. */
  private voterChangeRefusal(): VoterChangeResult | null {
    if (this.role !== 'leader' || this.closed) return changeResult(Errors.NOT_LEADER_OR_FOLLOWER);
    if (this.pendingChange !== null) {
      return changeResult(Errors.REQUEST_TIMED_OUT, 'Request timed out waiting for leader to handle previous voter change request');
    }
    if (this.highWatermark <= this.epochStartOffset) {
      return changeResult(
        Errors.REQUEST_TIMED_OUT,
        'Request timed out waiting for leader to establish HWM and fence previous voter changes',
      );
    }
    if (this.kraftVersion < 1) {
      return changeResult(
        Errors.UNSUPPORTED_VERSION,
        `Cluster doesn't support changing voters because the kraft.version feature is ${this.kraftVersion}`,
      );
    }
    const offset = this.voterHistory.latestOffset();
    if (offset >= this.highWatermark) {
      return changeResult(
        Errors.REQUEST_TIMED_OUT,
        `Request timed out waiting for voters to commit the latest voter change at ${offset} with HWM ${this.highWatermark}`,
      );
    }
    return null;
  }

  /** The endpoints of a new or updated voter must include the listener the quorum talks on. */
  private listenerRefusal(endpoints: readonly RaftEndpoint[]): VoterChangeResult | null {
    const name = this.config.listenerName;
    if (name === undefined || endpoints.some((e) => e.name === name)) return null;
    return changeResult(Errors.INVALID_REQUEST, `The endpoints must include one for the listener ${name}`);
  }

  /**
   * AddRaftVoter: adds a replica that fetches from this leader as an observer and is caught
   * up (fetched to the log end within the fetch timeout); answers once the change commits.
   */
  addVoter(voter: RaftVoter, timeoutMs = this.config.requestTimeoutMs ?? 2000): Promise<VoterChangeResult> {
    const refused = this.voterChangeRefusal() ?? this.listenerRefusal(voter.endpoints);
    if (refused !== null) return Promise.resolve(refused);
    if (voter.directoryId === ZERO_UUID) {
      return Promise.resolve(changeResult(Errors.INVALID_REQUEST, "Add voter request didn't include a valid directory id"));
    }
    const voters = this.voterSet();
    if (voters.has(voter.id)) {
      return Promise.resolve(
        changeResult(Errors.DUPLICATE_VOTER, `The voter id for ${voter.id} is already part of the set of voters ${voters}.`),
      );
    }
    const state = this.observerStates.get(voter.id);
    const sameReplica = state?.directoryId === undefined || state.directoryId === voter.directoryId;
    if (state === undefined || !sameReplica || state.lastCaughtUpTimeMs < this.clock.now() - this.config.fetchTimeoutMs) {
      return Promise.resolve(
        changeResult(
          Errors.REQUEST_TIMED_OUT,
          `The voter ${voter.id} (directory ${voter.directoryId}) is not caught up to the leader: it must fetch as an observer first`,
        ),
      );
    }
    return this.awaitVoterChange(this.appendVoterSet(voters.with(voter)), timeoutMs);
  }

  /** RemoveRaftVoter: answers once the change commits; a leader removing itself then resigns. */
  removeVoter(voterId: number, directoryId: string, timeoutMs = this.config.requestTimeoutMs ?? 2000): Promise<VoterChangeResult> {
    const refused = this.voterChangeRefusal();
    if (refused !== null) return Promise.resolve(refused);
    const voters = this.voterSet();
    if (!voters.isVoter(voterId, directoryId)) {
      return Promise.resolve(
        changeResult(Errors.VOTER_NOT_FOUND, `Cannot remove voter ${voterId} (directory ${directoryId}) from the set of voters ${voters}`),
      );
    }
    if (voters.size === 1) return Promise.resolve(changeResult(Errors.INVALID_REQUEST, `Cannot remove the last voter ${voterId}`));
    return this.awaitVoterChange(this.appendVoterSet(voters.without(voterId)), timeoutMs);
  }

  /** UpdateRaftVoter: a voter's directory id, listeners or kraft.version range; answered once appended. */
  handleUpdateVoter(request: UpdateVoterRequest): UpdateVoterResponse {
    const answer = (error: { code: number }): UpdateVoterResponse => ({
      errorCode: error.code,
      leaderId: this.currentLeaderId,
      leaderEpoch: this.epoch,
    });
    if (this.role !== 'leader' || this.closed) return answer(Errors.NOT_LEADER_OR_FOLLOWER);
    if (request.currentLeaderEpoch < this.epoch) return answer(Errors.FENCED_LEADER_EPOCH);
    if (request.currentLeaderEpoch > this.epoch) return answer(Errors.UNKNOWN_LEADER_EPOCH);
    const refused = this.voterChangeRefusal() ?? this.listenerRefusal(request.endpoints);
    if (refused !== null) return answer({ code: refused.errorCode });
    const voters = this.voterSet();
    const current = voters.get(request.voterId);
    if (current === undefined || !voters.isVoter(request.voterId, request.voterDirectoryId)) return answer(Errors.VOTER_NOT_FOUND);
    const kraftVersion = this.kraftVersion;
    if (request.kraftVersion.min > kraftVersion || request.kraftVersion.max < kraftVersion) return answer(Errors.INVALID_REQUEST);
    const updated: RaftVoter = {
      id: request.voterId,
      directoryId: request.voterDirectoryId === ZERO_UUID ? current.directoryId : request.voterDirectoryId,
      endpoints: request.endpoints.map((e) => ({ ...e })),
      kraftVersion: { ...request.kraftVersion },
    };
    const unchanged =
      updated.directoryId === current.directoryId &&
      sameEndpoints(updated.endpoints, current.endpoints) &&
      updated.kraftVersion.min === current.kraftVersion.min &&
      updated.kraftVersion.max === current.kraftVersion.max;
    if (!unchanged) this.appendVoterSet(voters.with(updated));
    return answer(Errors.NONE);
  }

  private appendVoterSet(voters: VoterSet): PendingVoterChange {
    const batch = this.log.appendAsLeader([encodeVotersValue(voters)], this.epoch, true, this.clock.now(), ControlRecordType.KRaftVoters);
    const change: PendingVoterChange = { offset: batch.baseOffset, waiters: [] };
    this.pendingChange = change;
    this.voterHistory.add(batch.baseOffset, voters);
    this.onVotersChanged();
    this.afterLeaderWrite();
    return change;
  }

  private awaitVoterChange(change: PendingVoterChange, timeoutMs: number): Promise<VoterChangeResult> {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: VoterChangeResult): void => {
        if (settled) return;
        settled = true;
        this.clock.clearTimeout(timer);
        resolve(result);
      };
      const timer = this.clock.setTimeout(
        () =>
          finish(
            changeResult(Errors.REQUEST_TIMED_OUT, `The voter change at offset ${change.offset} did not commit within ${timeoutMs} ms`),
          ),
        Math.max(0, timeoutMs),
      );
      change.waiters.push(finish);
    });
  }

  /**
   * This node's entry as it should read: its directory id where the set has none (a voter
   * configured statically), its own listeners. Null when the entry is right (or it votes not).
   */
  private ownUpdatedEntry(): RaftVoter | null {
    if (this.kraftVersion < 1 || !this.isVoter()) return null;
    const current = this.voterSet().get(this.config.nodeId);
    if (current === undefined) return null;
    const local = this.config.localEndpoints ?? [];
    const directoryId = current.directoryId === ZERO_UUID ? this.directoryId : current.directoryId;
    const endpointsStale = local.length > 0 && !sameEndpoints(current.endpoints, local);
    if (directoryId === current.directoryId && !endpointsStale) return null;
    return {
      id: this.config.nodeId,
      directoryId,
      endpoints: endpointsStale ? [...local] : current.endpoints,
      kraftVersion: SUPPORTED_KRAFT_VERSIONS,
    };
  }

  /** A follower voter whose entry is stale asks its leader to update it (KIP-853 UpdateRaftVoter), at most once a fetch timeout. */
  private maybeUpdateOwnVoterEntry(): void {
    if (this.role !== 'follower') return;
    const updated = this.ownUpdatedEntry();
    const nowMs = this.clock.now();
    if (updated === null || nowMs < this.nextUpdateVoterMs) return;
    this.nextUpdateVoterMs = nowMs + this.config.fetchTimeoutMs;
    const request: UpdateVoterRequest = {
      api: 'updateRaftVoter',
      clusterId: this.config.clusterId,
      currentLeaderEpoch: this.epoch,
      voterId: updated.id,
      voterDirectoryId: updated.directoryId,
      endpoints: updated.endpoints,
      kraftVersion: updated.kraftVersion,
    };
    this.transport.send(this.leaderId, request).catch(() => {});
  }

  /** The leader's listener for the quorum, as the voter set names it (Fetch's NodeEndpoints), if known. */
  leaderEndpoint(): { nodeId: number; host: string; port: number } | null {
    const leaderId = this.currentLeaderId;
    if (leaderId < 0) return null;
    const endpoint = this.voterSet().endpointOf(leaderId, this.config.listenerName);
    return endpoint === undefined || endpoint.host === '' ? null : { nodeId: leaderId, host: endpoint.host, port: endpoint.port };
  }
}
