// The invariants a simulation checks after every event and at the end of a run. The checker
// is fed views of the nodes (what their public accessors show) and keeps the history it
// needs: leaders seen per epoch, the committed metadata log, high watermarks.

export interface Violation {
  invariant: string;
  detail: string;
  atMs: number;
}

/** One record of the metadata log, as compared between nodes. */
export interface RaftEntry {
  offset: number;
  epoch: number;
  /** The record's content, or a digest of it. */
  sig: string;
}

/** A voter or observer of the metadata quorum, as seen after an event. */
export interface RaftNodeView {
  nodeId: number;
  /** Counts the node's restarts: a new process starts its checks afresh. */
  incarnation: number;
  epoch: number;
  isLeader: boolean;
  highWatermark: number;
  logStartOffset: number;
  logEndOffset: number;
  /** Entries with from <= offset < to that the log holds (none below its start). */
  entries(from: number, to: number): RaftEntry[];
}

/** One broker's replica of a partition, as seen after an event. */
export interface ReplicaView {
  brokerId: number;
  incarnation: number;
  topic: string;
  partition: number;
  isLeader: boolean;
  leaderEpoch: number;
  highWatermark: number;
  logStartOffset: number;
  logEndOffset: number;
  isr: readonly number[];
}

/** A record a producer was told is written (acks=all), and where. */
export interface AckedRecord {
  topic: string;
  partition: number;
  offset: number;
  value: string;
}

/**
 * One OffsetCommit of one partition, as the member that sent it saw it. The checker orders
 * events by when the client code recorded them (JavaScript runs one thing at a time): a send
 * is recorded before its bytes leave and an answer after it arrives, so the order assumed is
 * never tighter than the real one.
 */
export interface OffsetCommitAttempt {
  readonly offset: number;
  readonly sentAt: number;
  readonly sentMs: number;
  /** Set when the coordinator answered NONE: the commit is applied. */
  ackedAt?: number;
  ackedMs?: number;
  /**
   * The coordinator refused it before writing anything (a stale generation, an unknown
   * member, a rebalance under way): it never takes effect. Any other failure (a lost answer,
   * a coordinator error after its append) may still take effect, at any later time.
   */
  rejected?: boolean;
}

export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** Raft epoch -> the node that led it. */
  private readonly raftLeaders = new Map<number, number>();
  /** The committed metadata log as first seen: offset -> entry. */
  private readonly committed = new Map<number, RaftEntry>();
  private committedEnd = 0;
  /** Per node incarnation: entries below this offset were compared already. */
  private readonly raftChecked = new Map<string, number>();
  /** "topic-partition@epoch" -> the broker that led it. */
  private readonly partitionLeaders = new Map<string, number>();
  /** "topic-partition@epoch#broker.incarnation" -> the leader's last high watermark. */
  private readonly leaderHw = new Map<string, number>();
  /** Per partition: the highest high watermark a leader reached (what is committed). */
  private readonly partitionCommitted = new Map<string, number>();
  /** Per partition: the highest leader epoch a leader was seen in. */
  private readonly latestLeaderEpoch = new Map<string, number>();
  /** Per partition: brokers that crashed while in its ISR or on their way in, by the incarnation that crashed. */
  private readonly tainted = new Map<string, Map<number, number>>();
  private readonly seen = new Set<string>();
  /** "group@generation" -> partition -> the member its SyncGroup gave it to. */
  private readonly owners = new Map<string, Map<string, string>>();
  /** "group partition" -> every OffsetCommit sent for it. */
  private readonly commits = new Map<string, OffsetCommitAttempt[]>();
  /** Orders commits and OffsetFetches as the clients saw them. */
  private order = 0;
  private offsetFetches = 0;

  constructor(private readonly now: () => number = () => 0) {}

  get ok(): boolean {
    return this.violations.length === 0;
  }

  private fail(invariant: string, detail: string): void {
    // One report per distinct fact: the same broken state seen after every later event is noise.
    const key = `${invariant}|${detail}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.violations.push({ invariant, detail, atMs: this.now() });
  }

  /** Raft: one leader per epoch; committed entries never change, move or vanish. */
  observeRaft(nodes: readonly RaftNodeView[]): void {
    for (const n of nodes) {
      if (n.isLeader) {
        const prior = this.raftLeaders.get(n.epoch);
        if (prior === undefined) this.raftLeaders.set(n.epoch, n.nodeId);
        else if (prior !== n.nodeId) this.fail('one Raft leader per epoch', `epoch ${n.epoch} led by node ${prior} and node ${n.nodeId}`);
      }
      if (n.highWatermark > n.logEndOffset) {
        this.fail('Raft HW <= LEO', `node ${n.nodeId}: high watermark ${n.highWatermark} > log end ${n.logEndOffset}`);
      }
    }
    // Entries below any node's high watermark are committed: record them and compare every
    // node's committed prefix with what was recorded.
    for (const n of nodes) this.compareCommitted(n, Math.min(n.highWatermark, n.logEndOffset));
    // The leader of the latest epoch holds every committed entry (Raft's leader completeness);
    // a deposed leader that has not heard of the new epoch yet need not.
    const latestEpoch = Math.max(-1, ...nodes.map((n) => n.epoch));
    for (const n of nodes) {
      if (!n.isLeader || n.epoch !== latestEpoch) continue;
      if (n.logEndOffset < this.committedEnd) {
        this.fail(
          'committed metadata never lost',
          `leader ${n.nodeId} (epoch ${n.epoch}) ends at ${n.logEndOffset}, below committed offset ${this.committedEnd}`,
        );
      } else {
        this.compareRange(n, Math.max(n.logStartOffset, this.committedEnd - 64), this.committedEnd, 'leader');
      }
    }
  }

  private compareCommitted(n: RaftNodeView, hw: number): void {
    const key = `${n.nodeId}#${n.incarnation}`;
    const from = Math.max(this.raftChecked.get(key) ?? 0, n.logStartOffset);
    if (hw <= from) return;
    this.compareRange(n, from, hw, 'committed');
    this.raftChecked.set(key, hw);
  }

  private compareRange(n: RaftNodeView, from: number, to: number, what: string): void {
    let expected = from;
    for (const e of n.entries(from, to)) {
      if (e.offset !== expected && e.offset > expected) {
        this.fail('committed metadata never lost', `node ${n.nodeId}: ${what} log skips from offset ${expected} to ${e.offset}`);
      }
      expected = e.offset + 1;
      const known = this.committed.get(e.offset);
      if (known === undefined) {
        if (what === 'committed') {
          this.committed.set(e.offset, e);
          this.committedEnd = Math.max(this.committedEnd, e.offset + 1);
        }
      } else if (known.epoch !== e.epoch || known.sig !== e.sig) {
        this.fail(
          'committed metadata never reordered',
          `node ${n.nodeId}: offset ${e.offset} holds epoch ${e.epoch} ${short(e.sig)}, committed was epoch ${known.epoch} ${short(known.sig)}`,
        );
      }
    }
    if (expected < to && what === 'committed') {
      this.fail('committed metadata never lost', `node ${n.nodeId}: committed log ends at ${expected}, its high watermark is ${to}`);
    }
  }

  /**
   * Incarnation `incarnation` of a broker crashed: where it was in an ISR, it may lack records
   * until it leaves it. An AlterPartition it earned before the crash may still add it after
   * (the controller accepts its broker epoch until the restart registers anew, and Kafka's does
   * too), so it is excused until a leader's ISR leaves out a later incarnation of it.
   */
  brokerRestarted(brokerId: number, incarnation: number): void {
    for (const crashed of this.tainted.values()) crashed.set(brokerId, Math.max(incarnation, crashed.get(brokerId) ?? -1));
  }

  /** Partitions: one leader per leader epoch, HW <= LEO, the leader's HW never backwards, ISR holds the HW. */
  observeReplicas(replicas: readonly ReplicaView[]): void {
    const byTp = new Map<string, ReplicaView[]>();
    for (const r of replicas) {
      const tp = `${r.topic}-${r.partition}`;
      const list = byTp.get(tp) ?? [];
      list.push(r);
      byTp.set(tp, list);
      if (r.highWatermark > r.logEndOffset) {
        this.fail('HW <= LEO', `${tp} on broker ${r.brokerId}: high watermark ${r.highWatermark} > log end ${r.logEndOffset}`);
      }
      if (!r.isLeader) continue;
      const epochKey = `${tp}@${r.leaderEpoch}`;
      const prior = this.partitionLeaders.get(epochKey);
      if (prior === undefined) this.partitionLeaders.set(epochKey, r.brokerId);
      else if (prior !== r.brokerId)
        this.fail('one partition leader per leader epoch', `${tp} epoch ${r.leaderEpoch} led by brokers ${prior} and ${r.brokerId}`);
      const hwKey = `${epochKey}#${r.brokerId}.${r.incarnation}`;
      const last = this.leaderHw.get(hwKey);
      if (last !== undefined && r.highWatermark < last) {
        this.fail(
          'leader HW never backwards',
          `${tp} epoch ${r.leaderEpoch} on broker ${r.brokerId}: high watermark ${last} -> ${r.highWatermark}`,
        );
      }
      this.leaderHw.set(hwKey, r.highWatermark);
      // A broker replaying old metadata after a restart may believe for a while that it
      // still leads an earlier epoch; only a leader of the latest epoch must hold the log.
      const latestEpoch = Math.max(r.leaderEpoch, this.latestLeaderEpoch.get(tp) ?? -1);
      this.latestLeaderEpoch.set(tp, latestEpoch);
      if (r.leaderEpoch < latestEpoch) continue;
      const committed = this.partitionCommitted.get(tp) ?? 0;
      if (r.logEndOffset < committed) {
        this.fail(
          'committed records kept across leaders',
          `${tp}: leader ${r.brokerId} (epoch ${r.leaderEpoch}) ends at ${r.logEndOffset}, below the committed ${committed}`,
        );
      }
      this.partitionCommitted.set(tp, Math.max(committed, r.highWatermark));
    }
    for (const [tp, list] of byTp) this.checkIsr(tp, list);
  }

  private checkIsr(tp: string, list: readonly ReplicaView[]): void {
    let tainted = this.tainted.get(tp);
    if (tainted === undefined) {
      tainted = new Map();
      this.tainted.set(tp, tainted);
    }
    const leader = list.find((r) => r.isLeader);
    if (leader === undefined) return;
    for (const [b, crashed] of [...tainted]) {
      if (!leader.isr.includes(b) && list.some((r) => r.brokerId === b && r.incarnation > crashed)) tainted.delete(b);
    }
    for (const member of leader.isr) {
      if (member === leader.brokerId || tainted.has(member)) continue;
      const replica = list.find((r) => r.brokerId === member);
      if (replica === undefined) continue;
      if (replica.logEndOffset < leader.highWatermark) {
        this.fail(
          'ISR holds every record below HW',
          `${tp}: ISR member ${member} ends at ${replica.logEndOffset}, leader ${leader.brokerId} high watermark ${leader.highWatermark}`,
        );
      }
    }
  }

  /**
   * End of run, after healing: every acknowledged record is at its offset with its value, and
   * (idempotent producers) no value is stored twice. `read` gives the final log of a partition.
   */
  checkAcked(acked: readonly AckedRecord[], read: (topic: string, partition: number) => ReadonlyMap<number, string> | undefined): void {
    const logs = new Map<string, ReadonlyMap<number, string> | undefined>();
    for (const a of acked) {
      const tp = `${a.topic}-${a.partition}`;
      if (!logs.has(tp)) logs.set(tp, read(a.topic, a.partition));
      const log = logs.get(tp);
      if (log === undefined) {
        this.fail(
          'no acknowledged record lost',
          `${tp}: no leader served the final log up to its acknowledged records within 30 s of healing`,
        );
        continue;
      }
      const v = log.get(a.offset);
      if (v !== a.value)
        this.fail('no acknowledged record lost', `${tp} offset ${a.offset}: acked ${a.value}, log holds ${v ?? 'nothing'}`);
    }
    for (const [tp, log] of logs) {
      if (log === undefined) continue;
      const at = new Map<string, number>();
      for (const [offset, value] of log) {
        const first = at.get(value);
        if (first !== undefined) this.fail('no duplicates under idempotence', `${tp}: ${value} at offsets ${first} and ${offset}`);
        else at.set(value, offset);
      }
    }
  }

  /** A member's SyncGroup answered: its partitions in `generationId`, which no other member of that generation may hold. */
  observeAssignment(group: string, generationId: number, memberId: string, partitions: readonly string[]): void {
    const key = `${group}@${generationId}`;
    let owners = this.owners.get(key);
    if (owners === undefined) {
      owners = new Map();
      this.owners.set(key, owners);
    }
    for (const tp of partitions) {
      const prior = owners.get(tp);
      if (prior !== undefined && prior !== memberId) {
        this.fail(
          'one owner per partition in a generation',
          `${group} generation ${generationId}: ${tp} assigned to ${prior} and ${memberId}`,
        );
      } else {
        owners.set(tp, memberId);
      }
    }
  }

  /** An OffsetCommit of `offset` for `tp` is about to be sent; its answer is reported through the attempt. */
  commitSent(group: string, tp: string, offset: number): OffsetCommitAttempt {
    const attempt: OffsetCommitAttempt = { offset, sentAt: ++this.order, sentMs: this.now() };
    const key = `${group} ${tp}`;
    const list = this.commits.get(key) ?? [];
    list.push(attempt);
    this.commits.set(key, list);
    return attempt;
  }

  commitAcknowledged(attempt: OffsetCommitAttempt): void {
    attempt.ackedAt = ++this.order;
    attempt.ackedMs = this.now();
  }

  commitRejected(attempt: OffsetCommitAttempt): void {
    attempt.rejected = true;
  }

  /** An OffsetFetch is about to be sent: the mark to hand to observeCommittedOffsets with its answer. */
  offsetFetchSent(): number {
    return ++this.order;
  }

  /**
   * Whether a node's answers about the group may be stale: it is, or lately was, cut off from
   * some of its peers, so it may still believe it coordinates a group whose offsets partition
   * the controller has moved. Kafka allows such a deposed coordinator to answer OffsetFetch
   * from its state until its metadata catches up (OffsetFetch carries no epoch to fence it),
   * so a committed offset read back lower from such a node is counted, not a violation.
   * Set by the cluster simulation, which knows the network faults.
   */
  mayAnswerStale: (host: string) => boolean = () => false;

  /** OffsetFetch answers from a node that may be deposed (mayAnswerStale) that read an older commit. */
  staleOffsetFetches = 0;

  /** What the group invariants were checked on: generations handed out, commits acknowledged, OffsetFetches answered. */
  get groupActivity(): { generations: number; commitsAcked: number; offsetFetches: number } {
    let commitsAcked = 0;
    for (const list of this.commits.values()) commitsAcked += list.filter((a) => a.ackedAt !== undefined).length;
    return { generations: this.owners.size, commitsAcked, offsetFetches: this.offsetFetches };
  }

  /**
   * An OffsetFetch sent at `sentAt` answered `committed` (a partition absent: nothing
   * committed). The group's offsets are a register written by OffsetCommit: each answer must
   * be the offset of a commit that was sent before the answer came and that no acknowledged
   * commit sent after its own acknowledgement had replaced by the time the fetch was sent.
   * In particular it is never below an acknowledged commit that no later commit replaced,
   * and never an offset nobody committed. A node that may be a deposed coordinator
   * (mayAnswerStale) may answer an older commit, never one nobody committed. The workload never deletes the group, and its
   * offsets never expire within a run (offsets.retention.minutes), so every answer counts.
   */
  observeCommittedOffsets(
    group: string,
    sentAt: number,
    partitions: readonly string[],
    committed: ReadonlyMap<string, number>,
    answeredBy: string,
  ): void {
    const answeredAt = ++this.order;
    this.offsetFetches++;
    for (const tp of partitions) {
      const offset = committed.get(tp) ?? -1;
      const attempts = this.commits.get(`${group} ${tp}`) ?? [];
      const acked = attempts.filter((a) => a.ackedAt !== undefined && a.ackedAt < sentAt);
      const replaced = (a: OffsetCommitAttempt) => a.ackedAt !== undefined && acked.some((b) => b.sentAt > a.ackedAt!);
      const candidates = attempts.filter((a) => a.offset === offset && a.rejected !== true && a.sentAt < answeredAt);
      if (offset >= 0 && candidates.length === 0) {
        this.fail('committed offsets are ones committed', `${group} ${tp}: OffsetFetch answered ${offset}, which no member committed`);
        continue;
      }
      const explained = offset < 0 ? acked.length === 0 : candidates.some((a) => !replaced(a));
      if (explained) continue;
      if (this.mayAnswerStale(answeredBy)) {
        this.staleOffsetFetches++;
        continue;
      }
      const latest = acked.reduce((x, y) => (y.sentAt > x.sentAt ? y : x));
      this.fail(
        offset < latest.offset
          ? 'committed offsets never below an acknowledged commit'
          : 'committed offsets never replaced by an older commit',
        `${group} ${tp}: OffsetFetch answered ${offset < 0 ? 'no offset' : offset}, after the commit of ${latest.offset} ` +
          `(sent at ${latest.sentMs.toFixed(1)} ms) was acknowledged at ${latest.ackedMs!.toFixed(1)} ms`,
      );
    }
  }

  format(): string {
    return this.violations.map((v) => `  VIOLATION at ${v.atMs.toFixed(1)} ms: ${v.invariant}: ${v.detail}`).join('\n');
  }
}

function short(sig: string): string {
  return sig.length > 24 ? `${sig.slice(0, 24)}...` : sig;
}
