// The metadata quorum alone in the simulation: three voters, each the production RaftClient
// over an in-memory log, talking through a transport that delays, duplicates and loses
// requests on the simulated links, with crashes, restarts, partitions and clock jumps. It
// runs many times faster than a whole-cluster seed, so it explores elections and log
// repair over many more interleavings.

import { RaftClient, defaultRaftConfig } from '../../src/metadata/raft/client.ts';
import { MemoryRaftLog } from '../../src/metadata/raft/log.ts';
import type {
  QuorumStateData,
  QuorumStateStore,
  RaftBatch,
  RaftListener,
  RaftRequest,
  RaftResponseOf,
  RaftTransport,
  SnapshotId,
} from '../../src/metadata/raft/types.ts';
import { SimClock } from './clock.ts';
import { raftEntries as entriesOf } from './inspect.ts';
import { InvariantChecker, type RaftNodeView } from './invariants.ts';
import { Prng } from './random.ts';
import { Owner, Scheduler, describe } from './scheduler.ts';
import type { SimResult } from './result.ts';

export interface RaftSimOptions {
  seed: number;
  /** Virtual run time before healing; default 20 s. */
  durationMs?: number;
  /** Most events to run; default 200 000. */
  maxSteps?: number;
}

class StateStore implements QuorumStateStore {
  state: QuorumStateData | null = null;
  read(): QuorumStateData | null {
    return this.state;
  }
  write(state: QuorumStateData): void {
    this.state = { ...state };
  }
}

class Applied implements RaftListener {
  handleCommit(_batches: RaftBatch[]): void {}
  handleLoadSnapshot(_id: SnapshotId, _content: Buffer): void {}
  handleLeaderChange(_leaderId: number, _epoch: number): void {}
}

interface Voter {
  id: number;
  owner: Owner;
  incarnation: number;
  clock: SimClock;
  client: RaftClient;
  /** The log and the quorum state survive a crash: what the disk kept. */
  readonly log: MemoryRaftLog;
  readonly store: StateStore;
}

const VOTERS = [1, 2, 3];
const CLUSTER_ID = 'sim-cluster';

export async function runRaftSim(options: RaftSimOptions): Promise<SimResult> {
  const prng = new Prng(options.seed);
  const scheduler = new Scheduler(prng.fork());
  const faults = prng.fork();
  const netRandom = prng.fork();
  const checker = new InvariantChecker(() => scheduler.nowMs);
  const durationMs = options.durationMs ?? 20_000;
  const maxSteps = options.maxSteps ?? 200_000;
  const voters = new Map<number, Voter>();
  const network = new Owner('net');
  const cut = new Set<string>();
  const isCut = (a: number, b: number) => cut.has(a < b ? `${a}-${b}` : `${b}-${a}`);
  const delay = () => 0.1 + netRandom.float() * 2 + (netRandom.chance(0.02) ? netRandom.float() * 40 : 0);
  const counts = { crashes: 0, partitions: 0, jumps: 0, duplicates: 0, acked: 0 };

  const transportOf = (from: number, owner: Owner): RaftTransport => ({
    send<R extends RaftRequest>(to: number, request: R): Promise<RaftResponseOf[R['api']]> {
      return new Promise((resolve, reject) => {
        const unreachable = (why: string) =>
          scheduler.schedule(owner, 'net', 200 + netRandom.float() * 800, `${request.api} ${from}>${to} fails: ${why}`, () =>
            reject(new Error(`${from}->${to}: ${why}`)),
          );
        const deliver = (copy: boolean) => {
          const target = voters.get(to);
          if (target === undefined || !target.owner.alive) return unreachable('refused');
          if (isCut(from, to)) return unreachable('timed out');
          void answer(target, request).then(
            (response) => {
              if (copy) return;
              scheduler.schedule(owner, 'net', delay(), `${request.api} reply ${to}>${from}`, () => {
                if (isCut(from, to)) reject(new Error(`${to}->${from}: reply lost`));
                else resolve(response as RaftResponseOf[R['api']]);
              });
            },
            (err: unknown) => {
              if (!copy) scheduler.schedule(owner, 'net', delay(), `${request.api} error ${to}>${from}`, () => reject(err));
            },
          );
        };
        scheduler.schedule(network, 'net', delay(), `${request.api} ${from}>${to}`, () => deliver(false));
        // A retransmitted request: the handler sees it twice, the sender one answer.
        if (netRandom.chance(0.02)) {
          counts.duplicates++;
          scheduler.schedule(network, 'net', delay() + 2, `${request.api} ${from}>${to} (duplicate)`, () => deliver(true));
        }
      });
    },
  });

  const start = (id: number, log: MemoryRaftLog, store: StateStore, incarnation: number): Voter => {
    const owner = new Owner(`n${id}`);
    const clock = new SimClock(scheduler, owner, faults.range(-200, 200), faults.range(0, 1_000_000));
    const client = new RaftClient(
      {
        ...defaultRaftConfig,
        electionTimeoutMs: 1000,
        electionBackoffMaxMs: 500,
        fetchTimeoutMs: 2000,
        retryBackoffMs: 50,
        fetchMaxWaitMs: 200,
        nodeId: id,
        voters: VOTERS,
        clusterId: CLUSTER_ID,
      },
      log,
      store,
      transportOf(id, owner),
      new Applied(),
      clock,
      () => faults.float(),
    );
    const voter = { id, owner, incarnation, clock, client, log, store };
    voters.set(id, voter);
    client.start();
    return voter;
  };
  for (const id of VOTERS) start(id, new MemoryRaftLog(), new StateStore(), 0);

  const views = (): RaftNodeView[] =>
    [...voters.values()]
      .filter((v) => v.owner.alive)
      .map((v) => ({
        nodeId: v.id,
        incarnation: v.incarnation,
        epoch: v.client.currentEpoch,
        isLeader: v.client.isLeader(),
        highWatermark: v.client.highWatermarkOffset,
        logStartOffset: v.log.startOffset,
        logEndOffset: v.log.endOffset,
        entries: (from, to) => entriesOf(v.log, from, to),
      }));

  // The workload: a writer appends a record to whichever node leads, now and then.
  const writer = new Owner('writer');
  const acked: { offset: number; value: string }[] = [];
  let written = 0;
  const write = () => {
    if (scheduler.nowMs > durationMs) return;
    const leader = [...voters.values()].find((v) => v.owner.alive && v.client.isLeader());
    if (leader !== undefined) {
      const value = `w${++written}`;
      leader.client.append([Buffer.from(value)]).then(
        (offset) => {
          acked.push({ offset, value });
          counts.acked++;
        },
        () => {},
      );
    }
    scheduler.schedule(writer, 'client', faults.range(5, 80), 'append', write);
  };
  scheduler.schedule(writer, 'client', 100, 'append', write);

  // The nemesis: one fault at a time, healed after a while.
  const nemesis = new Owner('nemesis');
  const fault = () => {
    if (scheduler.nowMs > durationMs) return;
    const kind = faults.pick(['crash', 'partition', 'cut-link', 'jump', 'none'] as const);
    const id = faults.pick(VOTERS);
    const voter = voters.get(id)!;
    if (kind === 'crash' && voter.owner.alive) {
      counts.crashes++;
      voter.owner.alive = false;
      scheduler.trace.add(scheduler.nowMs, 'nemesis', `crash n${id}`);
      scheduler.schedule(nemesis, 'fault', faults.range(100, 3000), `restart n${id}`, () =>
        start(id, voter.log, voter.store, voter.incarnation + 1),
      );
    } else if (kind === 'partition' || kind === 'cut-link') {
      counts.partitions++;
      const others = VOTERS.filter((o) => o !== id);
      const links = kind === 'partition' ? others : [faults.pick(others)];
      for (const o of links) cut.add(id < o ? `${id}-${o}` : `${o}-${id}`);
      scheduler.trace.add(scheduler.nowMs, 'nemesis', `cut ${links.map((o) => `n${id}-n${o}`).join(' ')}`);
      scheduler.schedule(nemesis, 'fault', faults.range(300, 5000), 'heal', () => cut.clear());
    } else if (kind === 'jump' && voter.owner.alive) {
      counts.jumps++;
      const delta = faults.range(-30_000, 30_000);
      voter.clock.jump(delta);
      scheduler.trace.add(scheduler.nowMs, 'nemesis', `clock n${id} jumps ${delta} ms`);
    }
    scheduler.schedule(nemesis, 'fault', faults.range(200, 2000), 'fault', fault);
  };
  scheduler.schedule(nemesis, 'fault', 1500, 'fault', fault);

  const check = () => checker.observeRaft(views());
  // A run stops at its first violation: the trace then ends with the events that led to it.
  while (scheduler.steps < maxSteps && scheduler.nowMs <= durationMs && checker.ok) {
    if (!(await scheduler.step(durationMs + 1))) break;
    check();
  }
  if (!checker.ok) {
    for (const v of voters.values()) {
      const c = v.client;
      scheduler.trace.add(
        scheduler.nowMs,
        `n${v.id}`,
        `state: ${v.owner.alive ? c.currentRole : 'down'} epoch ${c.currentEpoch} leader ${c.currentLeaderId} hw ${c.highWatermarkOffset} leo ${v.log.endOffset}`,
      );
    }
    return resultOf(options.seed, scheduler, checker, counts);
  }
  // Heal everything and let the quorum settle, then check that every acked write survived.
  cut.clear();
  for (const v of voters.values()) {
    if (!v.owner.alive) start(v.id, v.log, v.store, v.incarnation + 1);
  }
  const settleUntil = scheduler.nowMs + 10_000;
  while (checker.ok && scheduler.steps < maxSteps + 100_000 && (await scheduler.step(settleUntil))) check();
  const leader = [...voters.values()].find((v) => v.client.isLeader());
  if (leader === undefined)
    checker.violations.push({ invariant: 'liveness', detail: 'no Raft leader 10 s after healing', atMs: scheduler.nowMs });
  else {
    const log = new Map(entriesOf(leader.log, 0, leader.client.highWatermarkOffset).map((e) => [e.offset, e.sig]));
    for (const a of acked) {
      if (log.get(a.offset) !== Buffer.from(a.value).toString('base64')) {
        checker.violations.push({
          invariant: 'no acknowledged metadata record lost',
          detail: `append ${a.value} acked at offset ${a.offset}, leader ${leader.id} holds ${decoded(log.get(a.offset))}`,
          atMs: scheduler.nowMs,
        });
      }
    }
  }
  return resultOf(options.seed, scheduler, checker, counts);
}

function resultOf(seed: number, scheduler: Scheduler, checker: InvariantChecker, counts: Record<string, number>): SimResult {
  for (const f of scheduler.failures) {
    checker.violations.push({
      invariant: 'no uncaught exception',
      detail: `${f.owner}: ${f.label}: ${describe(f.error)}`,
      atMs: scheduler.nowMs,
    });
  }
  return {
    seed,
    level: 'raft',
    hash: scheduler.trace.digest(),
    steps: scheduler.steps,
    virtualMs: scheduler.nowMs,
    violations: checker.violations,
    trace: scheduler.trace.format(),
    summary: `crashes ${counts.crashes}, partitions ${counts.partitions}, clock jumps ${counts.jumps}, duplicated requests ${counts.duplicates}, acked appends ${counts.acked}`,
  };
}

async function answer(target: Voter, request: RaftRequest): Promise<unknown> {
  const c = target.client;
  switch (request.api) {
    case 'vote':
      return c.handleVote(request);
    case 'beginQuorumEpoch':
      return c.handleBeginQuorumEpoch(request);
    case 'endQuorumEpoch':
      return c.handleEndQuorumEpoch(request);
    case 'fetch':
      return c.handleFetch(request);
    case 'fetchSnapshot':
      return c.handleFetchSnapshot(request);
    case 'updateRaftVoter':
      return c.handleUpdateVoter(request);
  }
}

function decoded(sig: string | undefined): string {
  return sig === undefined ? 'nothing' : Buffer.from(sig, 'base64').toString();
}
