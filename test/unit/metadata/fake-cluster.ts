// An in-memory Raft cluster for tests: a fake clock that runs timers in order, and a
// transport whose links can be cut, so elections and failovers run without sleeping.

import { MemoryRaftLog, type RaftLog } from '../../../src/metadata/raft/log.ts';
import { RaftClient, defaultRaftConfig } from '../../../src/metadata/raft/client.ts';
import type { Clock, TimerHandle } from '../../../src/runtime/clock.ts';
import type {
  QuorumStateData,
  QuorumStateStore,
  RaftBatch,
  RaftListener,
  RaftRequest,
  RaftResponseOf,
  RaftTransport,
  SnapshotId,
} from '../../../src/metadata/raft/types.ts';

interface Timer {
  due: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  /** Extra work to let finish between timers (file writes of on-disk logs). */
  settleHook: () => Promise<void> = async () => {};
  private timeMs = 1_000_000;
  private seq = 0;
  private timers = new Set<Timer>();

  now(): number {
    return this.timeMs;
  }

  monotonicMs(): number {
    return this.timeMs;
  }

  /** Not a timer: runs on the real event loop, which `advance` lets settle between timers. */
  setImmediate(fn: () => void): void {
    setImmediate(fn);
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const timer: Timer = { due: this.timeMs + delayMs, seq: this.seq++, fn };
    this.timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as Timer);
  }

  /** Moves time forward, firing due timers in order and letting promises settle between. */
  async advance(ms: number): Promise<void> {
    const target = this.timeMs + ms;
    for (;;) {
      await this.settleFully();
      let next: Timer | undefined;
      for (const t of this.timers) {
        if (t.due <= target && (next === undefined || t.due < next.due || (t.due === next.due && t.seq < next.seq))) next = t;
      }
      if (next === undefined) break;
      this.timers.delete(next);
      this.timeMs = next.due;
      next.fn();
    }
    this.timeMs = target;
    await this.settleFully();
  }

  private async settleFully(): Promise<void> {
    await settle();
    await this.settleHook();
    await settle();
  }
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class MemoryQuorumStateStore implements QuorumStateStore {
  state: QuorumStateData | null = null;
  /** Every state written, in order. */
  readonly writes: QuorumStateData[] = [];
  read(): QuorumStateData | null {
    return this.state;
  }
  write(state: QuorumStateData): void {
    this.state = { ...state };
    this.writes.push({ ...state });
  }
}

export class RecordingListener implements RaftListener {
  committed: string[] = [];
  snapshots: SnapshotId[] = [];
  leaderChanges: { leaderId: number; epoch: number }[] = [];
  handleCommit(batches: RaftBatch[]): void {
    for (const b of batches) for (const r of b.records) this.committed.push(r.toString());
  }
  handleLoadSnapshot(id: SnapshotId, content: Buffer): void {
    this.snapshots.push(id);
    this.committed = content.length === 0 ? [] : content.toString().split(',');
  }
  handleLeaderChange(leaderId: number, epoch: number): void {
    this.leaderChanges.push({ leaderId, epoch });
  }
}

export interface FakeNode {
  id: number;
  client: RaftClient;
  log: RaftLog;
  store: MemoryQuorumStateStore;
  listener: RecordingListener;
}

/** How a node of the fake cluster is configured beyond its id. */
export interface FakeNodeOptions {
  /** Its controller.quorum.voters; the cluster's voters when absent (an observer: []). */
  voters?: number[];
  /** Its controller.quorum.bootstrap.servers, as the node ids they reach. */
  bootstrap?: number[];
  /** Its metadata log directory id. */
  directoryId?: string;
}

export interface FakeClusterOptions {
  /** The kraft.version the nodes bootstrap a new log with (KIP-853); 0 when absent. */
  kraftVersion?: 0 | 1;
  /** Give the initial voters directory ids (directoryIdOf). */
  directoryIds?: boolean;
}

/** A directory id per node id, for tests of voter changes. */
export function directoryIdOf(id: number): string {
  const bytes = Buffer.alloc(16);
  bytes.writeUInt32BE(0x5100_0000 + id, 0);
  bytes.writeUInt32BE(id, 12);
  return bytes.toString('base64url');
}

export class FakeCluster implements RaftTransport {
  readonly clock = new FakeClock();
  readonly nodes = new Map<number, FakeNode>();
  /** Cut links, both directions, as "a-b" with a < b. */
  private cut = new Set<string>();
  private seed = 1;
  /** Per node, the node ids its bootstrap destinations (-2, -3, ...) reach. */
  private readonly bootstrapOf = new Map<number, number[]>();

  constructor(
    readonly voters: number[],
    logs?: Map<number, RaftLog>,
    readonly options: FakeClusterOptions = {},
  ) {
    for (const id of voters) this.addNode(id, logs?.get(id), undefined, options.directoryIds ? { directoryId: directoryIdOf(id) } : {});
    this.clock.settleHook = async () => {
      for (let i = 0; i < 3; i++) {
        await Promise.all([...this.nodes.values()].map((n) => n.log.flush().catch(() => {})));
        await settle();
      }
    };
  }

  /** Deterministic pseudo-random numbers so each run elects the same way. */
  private random = (): number => {
    this.seed = (this.seed * 16807) % 2147483647;
    return (this.seed - 1) / 2147483646;
  };

  addNode(id: number, log: RaftLog = new MemoryRaftLog(), store = new MemoryQuorumStateStore(), options: FakeNodeOptions = {}): FakeNode {
    const listener = new RecordingListener();
    const transport: RaftTransport = { send: (to, request) => this.deliver(id, to, request) };
    const bootstrap = options.bootstrap ?? [];
    this.bootstrapOf.set(id, bootstrap);
    const client = new RaftClient(
      {
        ...defaultRaftConfig,
        nodeId: id,
        voters: options.voters ?? this.voters,
        clusterId: 'test-cluster',
        ...(bootstrap.length > 0 ? { bootstrapIds: bootstrap.map((_, i) => -2 - i) } : {}),
        ...(options.directoryId !== undefined ? { directoryId: options.directoryId } : {}),
        ...(this.options.kraftVersion !== undefined ? { kraftVersion: this.options.kraftVersion } : {}),
      },
      log,
      store,
      transport,
      listener,
      this.clock,
      this.random,
    );
    const node = { id, client, log, store, listener };
    this.nodes.set(id, node);
    return node;
  }

  node(id: number): FakeNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  isolate(id: number): void {
    for (const other of new Set([...this.voters, ...this.nodes.keys()])) if (other !== id) this.cut.add(linkKey(id, other));
  }

  heal(): void {
    this.cut.clear();
  }

  leaders(): FakeNode[] {
    return [...this.nodes.values()].filter((n) => n.client.isLeader());
  }

  send<R extends RaftRequest>(): Promise<RaftResponseOf[R['api']]> {
    throw new Error('use the per-node transport');
  }

  private async deliver<R extends RaftRequest>(from: number, destination: number, request: R): Promise<RaftResponseOf[R['api']]> {
    await Promise.resolve();
    const to = destination < 0 ? (this.bootstrapOf.get(from)?.[-2 - destination] ?? destination) : destination;
    const target = this.nodes.get(to);
    if (target === undefined || this.cut.has(linkKey(from, to))) throw new Error(`link ${from}->${to} down`);
    const client = target.client;
    let response: unknown;
    switch (request.api) {
      case 'vote':
        response = client.handleVote(request);
        break;
      case 'beginQuorumEpoch':
        response = client.handleBeginQuorumEpoch(request);
        break;
      case 'endQuorumEpoch':
        response = client.handleEndQuorumEpoch(request);
        break;
      case 'fetch':
        response = await client.handleFetch(request);
        break;
      case 'fetchSnapshot':
        response = client.handleFetchSnapshot(request);
        break;
      case 'updateRaftVoter':
        response = client.handleUpdateVoter(request);
        break;
    }
    // A response crossing a link cut meanwhile is lost, as on a real network.
    if (this.cut.has(linkKey(from, to))) throw new Error(`link ${to}->${from} down`);
    return response as RaftResponseOf[R['api']];
  }
}

function linkKey(a: number, b: number): string {
  return a < b ? `${a}-${b}` : `${b}-${a}`;
}
