import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { ControlRecordType } from '../../../protocol/records/index.ts';
import { MemoryRaftLog } from '../../../src/metadata/raft/log.ts';
import { SUPPORTED_KRAFT_VERSIONS, type RaftVoter, unframeSnapshot } from '../../../src/metadata/raft/voter-set.ts';
import { FakeCluster, type FakeNode, MemoryQuorumStateStore, directoryIdOf } from './fake-cluster.ts';

// Controller membership changes (KIP-853) on the in-memory Raft cluster: the voter set lives
// in the log, AddRaftVoter / RemoveRaftVoter change it one voter at a time.

const rec = (s: string) => Buffer.from(s);

const voter = (id: number): RaftVoter => ({ id, directoryId: directoryIdOf(id), endpoints: [], kraftVersion: SUPPORTED_KRAFT_VERSIONS });

function leaderOf(cluster: FakeCluster): FakeNode {
  const leaders = cluster.leaders();
  assert.equal(leaders.length, 1, 'exactly one leader');
  return leaders[0]!;
}

/** Appends on the leader and lets the cluster commit it. */
async function commit(cluster: FakeCluster, value: string): Promise<void> {
  await Promise.all([leaderOf(cluster).client.append([rec(value)]), cluster.clock.advance(50)]);
  await cluster.clock.advance(600);
}

/** A controller started with only bootstrap servers: an observer of the quorum. */
async function startObserver(cluster: FakeCluster, id: number, bootstrap: number[]): Promise<FakeNode> {
  const node = cluster.addNode(id, new MemoryRaftLog(), new MemoryQuorumStateStore(), {
    voters: [],
    bootstrap,
    directoryId: directoryIdOf(id),
  });
  node.client.start();
  await cluster.clock.advance(1000);
  return node;
}

async function singleVoter(): Promise<FakeCluster> {
  const cluster = new FakeCluster([1], undefined, { kraftVersion: 1, directoryIds: true });
  cluster.node(1).client.start();
  await cluster.clock.advance(10);
  return cluster;
}

async function threeVoters(): Promise<FakeCluster> {
  const cluster = new FakeCluster([1, 2, 3], undefined, { kraftVersion: 1, directoryIds: true });
  for (const n of cluster.nodes.values()) n.client.start();
  await cluster.clock.advance(5000);
  return cluster;
}

async function change(cluster: FakeCluster, result: Promise<{ errorCode: number; errorMessage: string | null }>): Promise<void> {
  const [answer] = await Promise.all([result, cluster.clock.advance(1000)]);
  assert.equal(answer.errorCode, Errors.NONE.code, answer.errorMessage ?? '');
}

const ids = (node: FakeNode) => node.client.voterSet().ids();

describe('raft voter changes (KIP-853)', () => {
  it('writes the static voters into a new kraft.version 1 log behind the first LeaderChange', async () => {
    const cluster = await singleVoter();
    const leader = cluster.node(1);
    const batches = leader.log.read(0, Number.MAX_SAFE_INTEGER);
    assert.deepEqual(
      batches.map((b) => b.controlType ?? ControlRecordType.LeaderChange),
      [ControlRecordType.LeaderChange, ControlRecordType.KRaftVersion, ControlRecordType.KRaftVoters],
    );
    assert.equal(leader.client.kraftVersion, 1);
    assert.deepEqual(leader.client.voterSet().voters(), [voter(1)]);
    assert.equal(await leader.client.append([rec('a')]), 3);
  });

  it('keeps the static voters out of the log with kraft.version 0 and refuses changes', async () => {
    const cluster = new FakeCluster([1]);
    const leader = cluster.node(1);
    leader.client.start();
    await cluster.clock.advance(10);
    assert.equal(leader.log.endOffset, 1);
    const answer = await leader.client.addVoter(voter(2));
    assert.equal(answer.errorCode, Errors.UNSUPPORTED_VERSION.code);
  });

  it('grows a live quorum from one voter to three without losing a committed entry', async () => {
    const cluster = await singleVoter();
    const first = cluster.node(1);
    await commit(cluster, 'a');
    const second = await startObserver(cluster, 2, [1]);
    assert.equal(second.client.currentLeaderId, 1, 'the observer found the leader through its bootstrap server');
    assert.deepEqual(ids(second), [1], 'and learned the voters from the log');
    assert.deepEqual(second.listener.committed, ['a']);

    const added = first.client.addVoter(voter(2));
    const during = first.client.append([rec('b')]);
    await change(cluster, added);
    await during;
    assert.deepEqual(ids(first), [1, 2]);
    assert.deepEqual(ids(second), [1, 2]);

    const third = await startObserver(cluster, 3, [1, 2]);
    await commit(cluster, 'c');
    await change(cluster, first.client.addVoter(voter(3)));
    await commit(cluster, 'd');
    for (const n of [first, second, third]) {
      assert.deepEqual(ids(n), [1, 2, 3]);
      assert.deepEqual(n.listener.committed, ['a', 'b', 'c', 'd']);
    }
    const described = first.client.describeQuorum();
    assert.deepEqual(
      described.currentVoters.map((v) => [v.replicaId, v.replicaDirectoryId]),
      [1, 2, 3].map((id) => [id, directoryIdOf(id)]),
    );
    assert.deepEqual(described.observers, []);

    // The grown quorum survives the loss of its first voter.
    cluster.isolate(1);
    await cluster.clock.advance(10_000);
    const next = leaderOf(cluster);
    assert.notEqual(next.id, 1);
    await Promise.all([next.client.append([rec('e')]), cluster.clock.advance(50)]);
    await cluster.clock.advance(600);
    for (const n of [second, third]) assert.deepEqual(n.listener.committed, ['a', 'b', 'c', 'd', 'e']);
  });

  it('refuses a second voter change while the first is uncommitted', async () => {
    const cluster = await singleVoter();
    const leader = cluster.node(1);
    await startObserver(cluster, 2, [1]);
    await startObserver(cluster, 3, [1]);
    const first = leader.client.addVoter(voter(2));
    const second = await leader.client.addVoter(voter(3));
    assert.equal(second.errorCode, Errors.REQUEST_TIMED_OUT.code);
    assert.match(second.errorMessage ?? '', /previous voter change/);
    await change(cluster, first);
    assert.deepEqual(ids(leader), [1, 2]);
    await change(cluster, leader.client.addVoter(voter(3)));
    assert.deepEqual(ids(leader), [1, 2, 3]);
  });

  it('refuses to add a replica that is not fetching or not caught up, or is a voter already', async () => {
    const cluster = await singleVoter();
    const leader = cluster.node(1);
    const never = await leader.client.addVoter(voter(2));
    assert.equal(never.errorCode, Errors.REQUEST_TIMED_OUT.code);
    assert.match(never.errorMessage ?? '', /not caught up/);

    const lagging = await startObserver(cluster, 2, [1]);
    cluster.isolate(lagging.id);
    await commit(cluster, 'while-cut-off');
    await cluster.clock.advance(5000);
    const behind = await leader.client.addVoter(voter(2));
    assert.equal(behind.errorCode, Errors.REQUEST_TIMED_OUT.code);
    assert.deepEqual(ids(leader), [1]);

    const otherDisk = await leader.client.addVoter({ ...voter(2), directoryId: directoryIdOf(22) });
    assert.equal(otherDisk.errorCode, Errors.REQUEST_TIMED_OUT.code, 'the replica fetching as 2 has another directory');
    const duplicate = await leader.client.addVoter(voter(1));
    assert.equal(duplicate.errorCode, Errors.DUPLICATE_VOTER.code);
    const noDirectory = await leader.client.addVoter({ ...voter(3), directoryId: ZERO_UUID });
    assert.equal(noDirectory.errorCode, Errors.INVALID_REQUEST.code);

    cluster.heal();
    await cluster.clock.advance(2000);
    await change(cluster, leader.client.addVoter(voter(2)));
  });

  it('fills in the directory ids of statically configured voters (UpdateRaftVoter)', async () => {
    const cluster = await threeVoters();
    await cluster.clock.advance(5000);
    for (const n of cluster.nodes.values()) {
      assert.deepEqual(
        n.client
          .voterSet()
          .voters()
          .map((v) => v.directoryId),
        [1, 2, 3].map(directoryIdOf),
      );
    }
  });

  it('removes a follower voter: the others commit without it and it stays on as an observer', async () => {
    const cluster = await threeVoters();
    await cluster.clock.advance(5000);
    const leader = leaderOf(cluster);
    const removed = [...cluster.nodes.values()].find((n) => n !== leader)!;
    const wrongDisk = await leader.client.removeVoter(removed.id, directoryIdOf(99));
    assert.equal(wrongDisk.errorCode, Errors.VOTER_NOT_FOUND.code);
    await change(cluster, leader.client.removeVoter(removed.id, directoryIdOf(removed.id)));
    const remaining = [1, 2, 3].filter((id) => id !== removed.id);
    for (const n of cluster.nodes.values()) assert.deepEqual(ids(n), remaining);

    cluster.isolate(removed.id);
    await commit(cluster, 'two-of-two');
    for (const id of remaining) assert.deepEqual(cluster.node(id).listener.committed, ['two-of-two']);
    cluster.heal();
    await cluster.clock.advance(2000);
    assert.equal(removed.client.currentRole, 'follower');
    assert.deepEqual(removed.listener.committed, ['two-of-two'], 'a removed voter keeps following as an observer');
    assert.ok(leader.client.describeQuorum().observers.some((o) => o.replicaId === removed.id));
  });

  it('removing the leader: it leads until the change commits, then resigns and a remaining voter takes over', async () => {
    const cluster = await threeVoters();
    await cluster.clock.advance(5000);
    await commit(cluster, 'before');
    const old = leaderOf(cluster);
    const epoch = old.client.currentEpoch;
    await change(cluster, old.client.removeVoter(old.id, directoryIdOf(old.id)));
    await cluster.clock.advance(5000);
    assert.equal(old.client.isLeader(), false);
    const next = leaderOf(cluster);
    assert.notEqual(next.id, old.id);
    assert.ok(next.client.currentEpoch > epoch);
    assert.deepEqual(
      ids(next),
      [1, 2, 3].filter((id) => id !== old.id),
    );
    await commit(cluster, 'after');
    for (const n of cluster.nodes.values()) assert.deepEqual(n.listener.committed, ['before', 'after']);
    assert.equal(old.client.currentLeaderId, next.id, 'the old leader follows the new one as an observer');
  });

  it('a replica that truncates an uncommitted VotersRecord falls back to the voter set before it', async () => {
    const cluster = await threeVoters();
    await cluster.clock.advance(5000);
    await commit(cluster, 'committed');
    const old = leaderOf(cluster);
    const follower = [...cluster.nodes.values()].find((n) => n !== old)!;
    cluster.isolate(old.id);
    const orphan = old.client.removeVoter(follower.id, directoryIdOf(follower.id));
    assert.deepEqual(
      ids(old),
      [1, 2, 3].filter((id) => id !== follower.id),
      'the leader acts on the appended set at once',
    );
    await cluster.clock.advance(10_000);
    assert.equal((await orphan).errorCode, Errors.REQUEST_TIMED_OUT.code);
    const next = leaderOf(cluster);
    assert.notEqual(next.id, old.id);
    await commit(cluster, 'winner');
    cluster.heal();
    await cluster.clock.advance(10_000);
    assert.deepEqual(ids(old), [1, 2, 3]);
    assert.equal(old.client.currentLeaderId, next.id);
    assert.deepEqual(old.listener.committed, ['committed', 'winner']);
  });

  it('carries the voter set in snapshots, to a replica that installs one and across a restart', async () => {
    const cluster = await singleVoter();
    const leader = cluster.node(1);
    await startObserver(cluster, 2, [1]);
    await change(cluster, leader.client.addVoter(voter(2)));
    await commit(cluster, 'a');
    const hw = leader.client.highWatermarkOffset;
    const id = leader.client.createSnapshot(hw, Buffer.from(leader.listener.committed.join(',')));
    const stored = unframeSnapshot(leader.log.readSnapshot(id)!);
    assert.deepEqual(stored.voters?.ids(), [1, 2]);
    assert.equal(stored.kraftVersion, 1);
    assert.equal(stored.content.toString(), 'a');

    const late = await startObserver(cluster, 3, [1]);
    assert.equal(late.listener.snapshots.length, 1);
    assert.deepEqual(late.listener.committed, ['a'], 'the listener gets its own content');
    assert.deepEqual(ids(late), [1, 2]);

    await leader.client.close();
    const restarted = cluster.addNode(1, leader.log, leader.store, { voters: [1], directoryId: directoryIdOf(1) });
    restarted.client.start();
    assert.deepEqual(ids(restarted), [1, 2], 'the log, not controller.quorum.voters, names the voters');
    assert.equal(restarted.client.isLeader(), false, 'one voter of two does not elect itself');
  });
});
