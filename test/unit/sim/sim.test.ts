import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describe, it } from 'mocha';
import { SimClock } from '../../../scripts/sim/clock.ts';
import { runClusterSim } from '../../../scripts/sim/cluster-sim.ts';
import { InvariantChecker, type RaftEntry, type RaftNodeView, type ReplicaView } from '../../../scripts/sim/invariants.ts';
import { SimNetwork } from '../../../scripts/sim/network.ts';
import { runRaftSim } from '../../../scripts/sim/raft-sim.ts';
import { Prng } from '../../../scripts/sim/random.ts';
import { Owner, Scheduler } from '../../../scripts/sim/scheduler.ts';
import type { NetSocket } from '../../../src/runtime/network.ts';

async function drain(s: Scheduler, untilMs = Number.POSITIVE_INFINITY): Promise<void> {
  while (await s.step(untilMs)) {}
}

function raftNode(nodeId: number, epoch: number, isLeader: boolean, log: RaftEntry[], highWatermark = log.length): RaftNodeView {
  return {
    nodeId,
    incarnation: 0,
    epoch,
    isLeader,
    highWatermark,
    logStartOffset: 0,
    logEndOffset: log.length,
    entries: (from, to) => log.filter((e) => e.offset >= from && e.offset < to),
  };
}

function replica(brokerId: number, fields: Partial<ReplicaView>): ReplicaView {
  return {
    brokerId,
    incarnation: 0,
    topic: 't',
    partition: 0,
    isLeader: false,
    leaderEpoch: 0,
    highWatermark: 0,
    logStartOffset: 0,
    logEndOffset: 0,
    isr: [1, 2, 3],
    ...fields,
  };
}

describe('simulation', () => {
  describe('scheduler and clock', () => {
    it('runs timers in due order, equal due times in the order they were set, and never those of a dead owner', async () => {
      const s = new Scheduler(new Prng(1));
      const a = new Owner('a');
      const b = new Owner('b');
      const clock = new SimClock(s, a);
      const ran: string[] = [];
      clock.setTimeout(() => ran.push('a20'), 20);
      clock.setTimeout(() => ran.push('a10-first'), 10);
      clock.setTimeout(() => ran.push('a10-second'), 10);
      const cancelled = clock.setTimeout(() => ran.push('cancelled'), 5);
      clock.clearTimeout(cancelled);
      new SimClock(s, b).setTimeout(() => ran.push('b15'), 15);
      b.alive = false;
      await drain(s);
      assert.deepEqual(ran, ['a10-first', 'a10-second', 'a20']);
      assert.equal(s.nowMs, 20);
    });

    it('lets promise jobs settle after each event, before the next one runs', async () => {
      const s = new Scheduler(new Prng(1));
      const clock = new SimClock(s, new Owner('a'));
      const ran: string[] = [];
      clock.setTimeout(() => {
        void Promise.resolve()
          .then(() => Promise.resolve())
          .then(() => ran.push('job of first'));
      }, 1);
      clock.setTimeout(() => ran.push('second'), 1);
      await drain(s);
      assert.deepEqual(ran, ['job of first', 'second']);
    });

    it('jumps the wall clock of one node, forward and back, while monotonic time and timers keep going', async () => {
      const s = new Scheduler(new Prng(1));
      const clock = new SimClock(s, new Owner('a'), 0, 500);
      const before = clock.now();
      clock.jump(-10_000);
      assert.equal(clock.now(), before - 10_000);
      let fired = -1;
      clock.setTimeout(() => {
        fired = clock.monotonicMs();
      }, 100);
      await drain(s);
      assert.equal(fired, 600);
      assert.equal(clock.now(), before - 10_000 + 100);
    });
  });

  describe('network', () => {
    async function pair(seed = 3): Promise<{ s: Scheduler; net: SimNetwork; client: NetSocket; server: () => NetSocket }> {
      const s = new Scheduler(new Prng(seed));
      const net = new SimNetwork(s, new Prng(seed + 1));
      let accepted: NetSocket | null = null;
      await net
        .endpoint(new Owner('srv'), 'h1')
        .createServer((socket) => {
          accepted = socket;
        })
        .listen('h1', 9092);
      const client = net.endpoint(new Owner('cli'), 'h2').connect('h1', 9092);
      return { s, net, client, server: () => accepted! };
    }

    it('delivers the writes of one connection in order, and connects only to a listener', async () => {
      const { s, net, client, server } = await pair();
      let connected = false;
      client.on('connect', () => {
        connected = true;
      });
      for (let i = 0; i < 50; i++) client.write(Buffer.from(`${i},`));
      await drain(s);
      assert.ok(connected);
      let got = '';
      server().on('data', (d) => {
        got += d.toString();
      });
      for (let i = 50; i < 100; i++) client.write(Buffer.from(`${i},`));
      await drain(s);
      assert.equal(got, Array.from({ length: 50 }, (_, i) => `${i + 50},`).join(''));
      const refused = net.endpoint(new Owner('c2'), 'h2').connect('h1', 1);
      let error = '';
      refused.on('error', (e) => {
        error = (e as NodeJS.ErrnoException).code ?? '';
      });
      await drain(s);
      assert.equal(error, 'ECONNREFUSED');
    });

    it('stalls a connection across a cut link and resets it, losing the bytes in flight', async () => {
      const { s, net, client, server } = await pair();
      await drain(s);
      let got = '';
      server().on('data', (d) => {
        got += d.toString();
      });
      const errors: string[] = [];
      client.on('error', (e) => errors.push((e as NodeJS.ErrnoException).code ?? ''));
      net.cut('h1', 'h2');
      client.write(Buffer.from('lost'));
      await drain(s);
      assert.equal(got, '');
      assert.deepEqual(errors, ['ETIMEDOUT']);
      assert.ok(client.destroyed && server().destroyed);
    });

    it('lets stalled bytes flow on when the link heals before the stall ends', async () => {
      const { s, net, client, server } = await pair();
      await drain(s);
      let got = '';
      server().on('data', (d) => {
        got += d.toString();
      });
      net.cut('h1', 'h2');
      client.write(Buffer.from('late'));
      await drain(s, s.nowMs + 100);
      assert.equal(got, '');
      net.heal('h1', 'h2');
      await drain(s);
      assert.equal(got, 'late');
    });
  });

  describe('invariant checker', () => {
    it('reports two Raft leaders in one epoch', () => {
      const c = new InvariantChecker();
      c.observeRaft([raftNode(1, 3, true, []), raftNode(2, 3, false, [])]);
      assert.ok(c.ok);
      c.observeRaft([raftNode(1, 3, false, []), raftNode(2, 3, true, [])]);
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        ['one Raft leader per epoch'],
      );
    });

    it('reports a committed metadata record that changed, and a leader that lacks one', () => {
      const c = new InvariantChecker();
      const log = [
        { offset: 0, epoch: 1, sig: 'a' },
        { offset: 1, epoch: 1, sig: 'b' },
      ];
      c.observeRaft([raftNode(1, 1, true, log)]);
      c.observeRaft([raftNode(2, 2, false, [log[0]!, { offset: 1, epoch: 2, sig: 'x' }])]);
      c.observeRaft([raftNode(3, 3, true, [log[0]!])]);
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        ['committed metadata never reordered', 'committed metadata never lost'],
      );
    });

    it('reports two partition leaders in one leader epoch, HW above LEO, a leader HW going back and an ISR member behind it', () => {
      const c = new InvariantChecker();
      c.observeReplicas([
        replica(1, { isLeader: true, leaderEpoch: 4, highWatermark: 5, logEndOffset: 5 }),
        replica(2, { logEndOffset: 5 }),
      ]);
      assert.ok(c.ok);
      c.observeReplicas([replica(2, { isLeader: true, leaderEpoch: 4, highWatermark: 5, logEndOffset: 5 })]);
      c.observeReplicas([replica(3, { highWatermark: 9, logEndOffset: 7 })]);
      c.observeReplicas([replica(1, { isLeader: true, leaderEpoch: 4, highWatermark: 3, logEndOffset: 5, isr: [1] })]);
      c.observeReplicas([
        replica(1, { isLeader: true, leaderEpoch: 4, highWatermark: 5, logEndOffset: 5 }),
        replica(3, { logEndOffset: 2 }),
      ]);
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        ['one partition leader per leader epoch', 'HW <= LEO', 'leader HW never backwards', 'ISR holds every record below HW'],
      );
    });

    it('reports two members of one generation given the same partition, not a partition that moves between generations', () => {
      const c = new InvariantChecker();
      c.observeAssignment('g', 1, 'm1', ['t-0', 't-1']);
      c.observeAssignment('g', 2, 'm2', ['t-0']);
      c.observeAssignment('g', 2, 'm1', ['t-1']);
      assert.ok(c.ok);
      c.observeAssignment('g', 2, 'm3', ['t-1']);
      assert.deepEqual(
        c.violations.map((v) => v.detail),
        ['g generation 2: t-1 assigned to m1 and m3'],
      );
    });

    it('takes an OffsetFetch answer from the last acknowledged commit, a later one by another member, or one still in flight', () => {
      const c = new InvariantChecker();
      const fetch = (answer: number | undefined) => {
        const sentAt = c.offsetFetchSent();
        c.observeCommittedOffsets('g', sentAt, ['t-0'], new Map(answer === undefined ? [] : [['t-0', answer]]), 'n1');
      };
      fetch(undefined);
      const first = c.commitSent('g', 't-0', 10);
      const racing = c.offsetFetchSent();
      c.commitAcknowledged(first);
      c.observeCommittedOffsets('g', racing, ['t-0'], new Map(), 'n1');
      fetch(10);
      const lower = c.commitSent('g', 't-0', 5);
      c.commitAcknowledged(lower);
      fetch(5);
      c.commitSent('g', 't-0', 20);
      fetch(20);
      fetch(5);
      assert.deepEqual(c.violations, []);
    });

    it('reports an OffsetFetch below or older than an acknowledged commit, an offset nobody committed, and a refused commit', () => {
      const c = new InvariantChecker();
      const fetch = (tp: string, answer: number | undefined) => {
        const sentAt = c.offsetFetchSent();
        c.observeCommittedOffsets('g', sentAt, [tp], new Map(answer === undefined ? [] : [[tp, answer]]), 'n1');
      };
      c.commitAcknowledged(c.commitSent('g', 't-0', 10));
      fetch('t-0', undefined);
      c.commitAcknowledged(c.commitSent('g', 't-1', 10));
      c.commitAcknowledged(c.commitSent('g', 't-1', 4));
      fetch('t-1', 10);
      fetch('t-1', 7);
      c.commitRejected(c.commitSent('g', 't-2', 3));
      fetch('t-2', 3);
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        [
          'committed offsets never below an acknowledged commit',
          'committed offsets never replaced by an older commit',
          'committed offsets are ones committed',
          'committed offsets are ones committed',
        ],
      );
    });

    it('counts an older commit read from a node that may be a deposed coordinator, never an offset nobody committed', () => {
      const c = new InvariantChecker();
      c.mayAnswerStale = (host) => host === 'n2';
      c.commitAcknowledged(c.commitSent('g', 't-0', 4));
      c.commitAcknowledged(c.commitSent('g', 't-0', 10));
      c.observeCommittedOffsets('g', c.offsetFetchSent(), ['t-0'], new Map([['t-0', 4]]), 'n2');
      assert.equal(c.ok, true);
      assert.equal(c.staleOffsetFetches, 1);
      c.observeCommittedOffsets('g', c.offsetFetchSent(), ['t-0'], new Map([['t-0', 7]]), 'n2');
      c.observeCommittedOffsets('g', c.offsetFetchSent(), ['t-0'], new Map([['t-0', 4]]), 'n1');
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        ['committed offsets are ones committed', 'committed offsets never below an acknowledged commit'],
      );
    });

    it('accepts the latest of acknowledged commits made one after another, and no earlier one that differs from it', () => {
      fc.assert(
        fc.property(fc.array(fc.nat(1000), { minLength: 1, maxLength: 20 }), fc.nat(), (offsets, pick) => {
          const c = new InvariantChecker();
          for (const o of offsets) c.commitAcknowledged(c.commitSent('g', 't-0', o));
          const latest = offsets.at(-1)!;
          c.observeCommittedOffsets('g', c.offsetFetchSent(), ['t-0'], new Map([['t-0', latest]]), 'n1');
          assert.ok(c.ok);
          const older = offsets[pick % offsets.length]!;
          c.observeCommittedOffsets('g', c.offsetFetchSent(), ['t-0'], new Map([['t-0', older]]), 'n1');
          assert.equal(c.ok, older === latest);
        }),
      );
    });

    it('reports an acknowledged record missing from the final log, and a record stored twice', () => {
      const c = new InvariantChecker();
      const log = new Map([
        [0, 'v1'],
        [1, 'v2'],
        [2, 'v2'],
      ]);
      c.checkAcked(
        [
          { topic: 't', partition: 0, offset: 0, value: 'v1' },
          { topic: 't', partition: 0, offset: 3, value: 'v3' },
        ],
        () => log,
      );
      assert.deepEqual(
        c.violations.map((v) => v.invariant),
        ['no acknowledged record lost', 'no duplicates under idempotence'],
      );
    });
  });

  describe('metadata quorum simulation', () => {
    it('replays a seed exactly: the same trace hash twice', async () => {
      const a = await runRaftSim({ seed: 42 });
      const b = await runRaftSim({ seed: 42 });
      assert.equal(a.hash, b.hash);
      assert.equal(a.steps, b.steps);
      const other = await runRaftSim({ seed: 43 });
      assert.notEqual(other.hash, a.hash);
    });

    it('keeps every invariant through crashes, partitions, duplicates and clock jumps (a few seeds)', async () => {
      for (let seed = 1; seed <= 10; seed++) {
        const r = await runRaftSim({ seed });
        assert.deepEqual(r.violations, [], `seed ${seed}\n${r.trace}`);
      }
    });
  });

  describe('whole-cluster simulation', function () {
    this.timeout(180_000);

    it('replays a seed exactly: the same trace hash twice', async () => {
      const a = await runClusterSim({ seed: 4, durationMs: 5000, powerFailures: false });
      const b = await runClusterSim({ seed: 4, durationMs: 5000, powerFailures: false });
      assert.equal(a.hash, b.hash);
      assert.equal(a.steps, b.steps);
    });

    it('keeps every invariant through process kills, partitions, resets and clock jumps (a few seeds)', async () => {
      for (const seed of [1, 2, 3]) {
        const r = await runClusterSim({ seed, durationMs: 8000, powerFailures: false });
        assert.deepEqual(r.violations, [], `seed ${seed}\n${r.trace}`);
      }
    });
  });
});
