import assert from 'node:assert/strict';
import { FakeCluster, settle } from './fake-cluster.ts';
import { NotLeaderError } from '../../../src/metadata/raft/client.ts';
import { MemoryRaftLog } from '../../../src/metadata/raft/log.ts';

const rec = (s: string) => Buffer.from(s);

async function electedCluster(voters = [1, 2, 3]): Promise<FakeCluster> {
  const cluster = new FakeCluster(voters);
  for (const n of cluster.nodes.values()) n.client.start();
  await cluster.clock.advance(5000);
  return cluster;
}

describe('raft client', () => {
  it('a single voter elects itself at start and commits on its own append', async () => {
    const cluster = new FakeCluster([1]);
    const node = cluster.node(1);
    node.client.start();
    assert.equal(node.client.isLeader(), true);
    assert.equal(node.client.currentEpoch, 1);
    const offset = await node.client.append([rec('a'), rec('b')]);
    // offset 0 is the LeaderChange control record
    assert.equal(offset, 2);
    assert.deepEqual(node.listener.committed, ['a', 'b']);
    assert.equal(node.client.highWatermarkOffset, 3);
    assert.equal(node.store.state?.leaderId, 1);
  });

  it('a single voter persists its epoch, vote and leadership in one quorum-state write, at every start', async () => {
    const cluster = new FakeCluster([1]);
    const node = cluster.node(1);
    node.client.start();
    const leader = { leaderId: 1, leaderEpoch: 1, votedId: 1, votedDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA' };
    assert.deepEqual(node.store.writes, [leader]);
    await node.client.append([rec('a')]);
    await node.client.close();
    const restarted = cluster.addNode(1, node.log, node.store);
    restarted.client.start();
    assert.equal(restarted.client.currentEpoch, 2);
    assert.deepEqual(node.store.writes, [leader, { ...leader, leaderEpoch: 2 }]);
    assert.deepEqual(restarted.listener.committed, []);
    await restarted.client.append([rec('b')]);
    assert.deepEqual(restarted.listener.committed, ['a', 'b']);
  });

  it('three voters elect exactly one leader and the others follow it', async () => {
    const cluster = await electedCluster();
    const leaders = cluster.leaders();
    assert.equal(leaders.length, 1);
    const leader = leaders[0]!;
    for (const n of cluster.nodes.values()) {
      assert.equal(n.client.currentEpoch, leader.client.currentEpoch);
      assert.equal(n.client.currentLeaderId, leader.id);
      if (n !== leader) assert.equal(n.client.currentRole, 'follower');
    }
  });

  it('commits once a majority holds the records and every voter applies them', async () => {
    const cluster = await electedCluster();
    const leader = cluster.leaders()[0]!;
    const committed = leader.client.append([rec('x')]);
    await cluster.clock.advance(10);
    await committed;
    await cluster.clock.advance(600);
    for (const n of cluster.nodes.values()) assert.deepEqual(n.listener.committed, ['x']);
    const described = leader.client.describeQuorum();
    assert.equal(described.leaderId, leader.id);
    assert.equal(described.highWatermark, leader.client.logEndOffset);
    assert.deepEqual(
      described.currentVoters.map((v) => v.logEndOffset),
      [1, 2, 3].map(() => leader.client.logEndOffset),
    );
  });

  it('tells every voter of a commit at once, not when its parked fetch times out', async () => {
    const cluster = await electedCluster();
    const leader = cluster.leaders()[0]!;
    await cluster.clock.advance(1000);
    const committed = leader.client.append([rec('now')]);
    // Well inside the leader's fetch wait (500 ms): only round trips, no timeouts, may pass.
    await cluster.clock.advance(20);
    await committed;
    for (const n of cluster.nodes.values()) assert.deepEqual(n.listener.committed, ['now'], `voter ${n.id} applied the commit`);
  });

  it('does not commit without a majority', async () => {
    const cluster = await electedCluster();
    const leader = cluster.leaders()[0]!;
    cluster.isolate(leader.id);
    let settled = false;
    leader.client.append([rec('lost')]).then(
      () => (settled = true),
      () => (settled = true),
    );
    await cluster.clock.advance(100);
    assert.equal(settled, false);
    assert.deepEqual(leader.listener.committed, []);
  });

  it('elects a new leader in a higher epoch when the leader is cut off, and keeps committing', async () => {
    const cluster = await electedCluster();
    const old = cluster.leaders()[0]!;
    await old.client.append([rec('before')]);
    cluster.isolate(old.id);
    await cluster.clock.advance(10_000);
    const others = [...cluster.nodes.values()].filter((n) => n !== old);
    const newLeader = others.find((n) => n.client.isLeader());
    assert.ok(newLeader, 'a remaining voter leads');
    assert.ok(newLeader.client.currentEpoch > old.client.currentEpoch || old.client.currentRole !== 'leader');
    await Promise.all([newLeader.client.append([rec('after')]), cluster.clock.advance(50)]);
    await cluster.clock.advance(600);
    for (const n of others) assert.deepEqual(n.listener.committed, ['before', 'after']);
  });

  it('truncates a deposed leader’s uncommitted suffix when it rejoins', async () => {
    const cluster = await electedCluster();
    const old = cluster.leaders()[0]!;
    await old.client.append([rec('committed')]);
    await cluster.clock.advance(600);
    cluster.isolate(old.id);
    const orphan = old.client.append([rec('orphan-1'), rec('orphan-2')]);
    orphan.catch(() => {});
    await cluster.clock.advance(10_000);
    const newLeader = [...cluster.nodes.values()].find((n) => n !== old && n.client.isLeader())!;
    await Promise.all([newLeader.client.append([rec('winner')]), cluster.clock.advance(50)]);
    cluster.heal();
    await cluster.clock.advance(10_000);
    await assert.rejects(orphan, NotLeaderError);
    assert.equal(old.client.currentRole, 'follower');
    assert.equal(old.client.currentLeaderId, newLeader.id);
    assert.equal(old.client.logEndOffset, newLeader.client.logEndOffset);
    const contents = (id: number) =>
      cluster
        .node(id)
        .log.read(0, Infinity)
        .flatMap((b) => (b.control ? [] : b.records.map(String)));
    assert.deepEqual(contents(old.id), contents(newLeader.id));
    assert.deepEqual(old.listener.committed, ['committed', 'winner']);
  });

  it('a leader no majority fetches from steps down (check quorum) and fails its pending appends', async () => {
    const cluster = await electedCluster();
    const leader = cluster.leaders()[0]!;
    const epoch = leader.client.currentEpoch;
    cluster.isolate(leader.id);
    const pending = leader.client.append([rec('never')]);
    pending.catch(() => {});
    await cluster.clock.advance(6100);
    assert.equal(leader.client.isLeader(), false);
    await assert.rejects(pending, NotLeaderError);
    assert.equal(leader.store.state?.votedId, leader.id, 'its vote in the old epoch stands');
    assert.equal(leader.store.state?.leaderEpoch, epoch, 'a cut-off node does not raise epochs');
    cluster.heal();
    await cluster.clock.advance(5000);
    assert.equal(leader.client.currentRole, 'follower', 'it follows the leader the others elected');
  });

  it('rejects a vote from a candidate whose log is behind', async () => {
    const cluster = await electedCluster();
    const leader = cluster.leaders()[0]!;
    await Promise.all([leader.client.append([rec('a')]), cluster.clock.advance(20)]);
    const response = leader.client.handleVote({
      api: 'vote',
      clusterId: 'test-cluster',
      candidateEpoch: leader.client.currentEpoch + 1,
      candidateId: 9,
      lastOffsetEpoch: 0,
      lastOffset: 0,
    });
    assert.equal(response.voteGranted, false);
    assert.equal(leader.client.isLeader(), false, 'a higher epoch still deposes the leader');
  });

  it('brings a follower whose log was cleaned away up to date with FetchSnapshot', async () => {
    const cluster = new FakeCluster([1, 2, 3]);
    for (const id of [1, 2]) cluster.node(id).client.start();
    cluster.isolate(3);
    await cluster.clock.advance(5000);
    const leader = cluster.leaders()[0]!;
    await Promise.all([leader.client.append([rec('a'), rec('b')]), cluster.clock.advance(50)]);
    await cluster.clock.advance(600);
    const hw = leader.client.highWatermarkOffset;
    leader.client.createSnapshot(hw, Buffer.from(leader.listener.committed.join(',')));
    assert.equal(leader.client.logStartOffset, hw);
    cluster.node(3).client.start();
    cluster.heal();
    await cluster.clock.advance(5000);
    const late = cluster.node(3);
    assert.equal(late.listener.snapshots.length, 1);
    assert.deepEqual(late.listener.committed, ['a', 'b']);
    await Promise.all([cluster.leaders()[0]!.client.append([rec('c')]), cluster.clock.advance(50)]);
    await cluster.clock.advance(600);
    assert.deepEqual(late.listener.committed, ['a', 'b', 'c']);
  });

  it('a resigning leader hands over with EndQuorumEpoch before its election timeout would', async () => {
    const cluster = await electedCluster();
    const old = cluster.leaders()[0]!;
    await Promise.all([old.client.append([rec('a')]), cluster.clock.advance(20)]);
    await cluster.clock.advance(600);
    await Promise.all([old.client.close(), settle()]);
    cluster.isolate(old.id);
    await cluster.clock.advance(1000);
    const next = [...cluster.nodes.values()].filter((n) => n !== old && n.client.isLeader());
    assert.equal(next.length, 1);
  });

  it('persists votes and epochs so a restarted voter keeps them', async () => {
    const cluster = await electedCluster();
    const leader = cluster.leaders()[0]!;
    const follower = [...cluster.nodes.values()].find((n) => n !== leader)!;
    assert.equal(follower.store.state?.leaderEpoch, leader.client.currentEpoch);
    assert.equal(follower.store.state?.leaderId, leader.id);
    await follower.client.close();
    const restarted = cluster.addNode(follower.id, follower.log, follower.store);
    restarted.client.start();
    assert.equal(restarted.client.currentEpoch, leader.client.currentEpoch);
    await cluster.clock.advance(600);
    assert.equal(restarted.client.currentRole, 'follower');
    assert.equal(cluster.leaders().length, 1);
  });

  it('a follower whose later epoch sits where the leader’s log has an earlier one truncates back to its own end of that epoch', async () => {
    // Voters 1 and 2 hold c at offset 2 in epoch 2; voter 3 led epoch 3 alone and wrote x
    // there. The leader the others elect answers voter 3's fetch (offset 3, last epoch 3)
    // with "epoch 2 ends at 3", past where voter 3's own epoch 2 ends.
    const logOf = (third: [string, number]) => {
      const log = new MemoryRaftLog();
      for (const [value, epoch] of [['a', 1], ['b', 2], third] as const) log.appendAsLeader([rec(value)], epoch, false, 0);
      return log;
    };
    const logs = new Map([
      [1, logOf(['c', 2])],
      [2, logOf(['c', 2])],
      [3, logOf(['x', 3])],
    ]);
    const cluster = new FakeCluster([1, 2, 3], logs);
    for (const n of cluster.nodes.values()) n.store.write({ leaderId: -1, leaderEpoch: 3, votedId: -1, votedDirectoryId: '' });
    for (const id of [1, 2]) cluster.node(id).client.start();
    cluster.isolate(3);
    await cluster.clock.advance(5000);
    const leader = cluster.leaders()[0]!;
    assert.notEqual(leader.id, 3);
    // Without the truncation voter 3 refetches the same divergence at once, for ever: cut it
    // off after far more fetches than catching up takes, so that the test fails instead of spinning.
    let fetchesFrom3 = 0;
    const handleFetch = leader.client.handleFetch.bind(leader.client);
    leader.client.handleFetch = (request) => {
      if (request.replicaId === 3 && ++fetchesFrom3 > 1000) cluster.isolate(3);
      return handleFetch(request);
    };
    cluster.heal();
    cluster.node(3).client.start();
    await cluster.clock.advance(5000);
    const late = cluster.node(3);
    assert.ok(fetchesFrom3 <= 1000, `voter 3 fetched ${fetchesFrom3} times`);
    assert.equal(late.client.currentLeaderId, leader.id);
    assert.equal(late.client.logEndOffset, leader.client.logEndOffset);
    const contents = (id: number) =>
      cluster
        .node(id)
        .log.read(0, Infinity)
        .flatMap((b) => (b.control ? [] : b.records.map(String)));
    assert.deepEqual(contents(3), ['a', 'b', 'c']);
    assert.equal(late.client.highWatermarkOffset, leader.client.highWatermarkOffset);
  });
});
