import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { FakeCluster, type FakeNode } from './fake-cluster.ts';

// A broker-only node is a Raft observer (KIP-595): it follows the leader's log, is counted
// in no majority, never votes and never stands, and finds the leader again on its own when
// the one it follows goes away (Kafka's fetch to any bootstrap server, KIP-853).

const rec = (s: string) => Buffer.from(s);

async function electedCluster(): Promise<FakeCluster> {
  const cluster = new FakeCluster([1, 2, 3]);
  for (const n of cluster.nodes.values()) n.client.start();
  await cluster.clock.advance(5000);
  return cluster;
}

function theLeader(cluster: FakeCluster, except?: number): FakeNode {
  const leaders = cluster.leaders().filter((n) => n.id !== except);
  assert.equal(leaders.length, 1, `one leader (${leaders.map((n) => n.id).join(', ')})`);
  return leaders[0]!;
}

describe('raft observers', () => {
  it('an observer listing the voters finds the leader and follows its log without being counted', async () => {
    const cluster = await electedCluster();
    const leader = theLeader(cluster);
    const observer = cluster.addNode(4);
    observer.client.start();
    await cluster.clock.advance(1000);
    assert.equal(observer.client.currentRole, 'follower');
    assert.equal(observer.client.currentLeaderId, leader.id);
    await leader.client.append([rec('a')]);
    await cluster.clock.advance(1000);
    assert.deepEqual(observer.listener.committed, ['a']);
    const quorum = leader.client.describeQuorum();
    assert.deepEqual(quorum.currentVoters.map((v) => v.replicaId).sort(), [1, 2, 3]);
    assert.deepEqual(
      quorum.observers.map((o) => o.replicaId),
      [4],
    );
  });

  it('an observer with only bootstrap servers finds the leader and never elects itself', async () => {
    const cluster = await electedCluster();
    const leader = theLeader(cluster);
    const observer = cluster.addNode(5, undefined, undefined, { voters: [], bootstrap: [2, 3, 1] });
    observer.client.start();
    await cluster.clock.advance(20_000);
    assert.equal(observer.client.isLeader(), false, 'no voters listed is not a quorum of one');
    assert.equal(observer.client.currentLeaderId, leader.id);
    await leader.client.append([rec('b')]);
    await cluster.clock.advance(1000);
    assert.deepEqual(observer.listener.committed, ['b']);
  });

  it('never votes, and keeps following through the loss of its leader without standing', async () => {
    const cluster = await electedCluster();
    const first = theLeader(cluster);
    const observer = cluster.addNode(4);
    observer.client.start();
    await cluster.clock.advance(1000);
    const vote = observer.client.handleVote({
      api: 'vote',
      clusterId: 'test-cluster',
      candidateEpoch: observer.client.currentEpoch + 1,
      candidateId: 2,
      lastOffsetEpoch: 99,
      lastOffset: 1000,
    });
    assert.equal(vote.voteGranted, false);
    assert.equal(vote.errorCode, Errors.INCONSISTENT_VOTER_SET.code);

    const epochs: number[] = [];
    const roles = new Set<string>();
    cluster.isolate(first.id);
    for (let i = 0; i < 100; i++) {
      await cluster.clock.advance(100);
      roles.add(observer.client.currentRole);
      epochs.push(observer.client.currentEpoch);
    }
    const next = theLeader(cluster, first.id);
    assert.ok(!roles.has('candidate') && !roles.has('leader'), `observer roles: ${[...roles].join(', ')}`);
    assert.equal(observer.client.currentLeaderId, next.id, 'the observer follows the new leader');
    assert.equal(observer.client.currentEpoch, next.client.currentEpoch);
    assert.ok(Math.max(...epochs) <= next.client.currentEpoch, 'it never raised an epoch of its own');
    await next.client.append([rec('after')]);
    await cluster.clock.advance(1000);
    assert.deepEqual(observer.listener.committed, ['after']);
  });

  it('a restarted observer whose persisted leader is gone finds the new leader', async () => {
    const cluster = await electedCluster();
    const first = theLeader(cluster);
    const observer = cluster.addNode(4);
    observer.client.start();
    await cluster.clock.advance(1000);
    await first.client.append([rec('before')]);
    await cluster.clock.advance(1000);
    assert.deepEqual(observer.listener.committed, ['before']);
    await observer.client.close();
    assert.equal(observer.store.state?.leaderId, first.id, 'the observer persisted the leader it followed');

    cluster.isolate(first.id);
    await cluster.clock.advance(10_000);
    const next = theLeader(cluster, first.id);
    await next.client.append([rec('while-away')]);

    const restarted = cluster.addNode(4, observer.log, observer.store);
    restarted.client.start();
    await cluster.clock.advance(10_000);
    assert.equal(restarted.client.currentLeaderId, next.id);
    assert.deepEqual(restarted.listener.committed, ['before', 'while-away']);
  });
});
