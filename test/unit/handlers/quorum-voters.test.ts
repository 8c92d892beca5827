import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { makeAddRaftVoterRequest, makeAddRaftVoterRequestListener } from '../../../protocol/messages/add-raft-voter.ts';
import {
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
} from '../../../protocol/messages/describe-quorum.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { makeRemoveRaftVoterRequest } from '../../../protocol/messages/remove-raft-voter.ts';
import {
  makeUpdateRaftVoterRequest,
  makeUpdateRaftVoterRequestKRaftVersionFeature,
  makeUpdateRaftVoterRequestListener,
} from '../../../protocol/messages/update-raft-voter.ts';
import { Writer, ZERO_UUID } from '../../../protocol/primitives.ts';
import { handleAddRaftVoter, handleDescribeQuorum, handleRemoveRaftVoter, handleUpdateRaftVoter } from '../../../src/handlers/quorum.ts';
import { MemoryRaftLog } from '../../../src/metadata/raft/log.ts';
import { FakeCluster, type FakeNode, MemoryQuorumStateStore, directoryIdOf } from '../metadata/fake-cluster.ts';

// The KIP-853 RPCs on the handlers' side: AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter and
// DescribeQuorum v2, against the in-memory Raft cluster.

const services = (node: FakeNode) => ({ clusterId: 'test-cluster', raft: node.client });

const describeRequest = makeDescribeQuorumRequest({
  topics: [makeDescribeQuorumRequestTopicData({ topicName: '__cluster_metadata', partitions: [makeDescribeQuorumRequestPartitionData()] })],
});

function encodesAt(apiKey: number, response: unknown, version: number): void {
  const api = apis.get(apiKey)!;
  assert.doesNotThrow(() => api.encodeResponse(new Writer(), response, version), `${api.name} v${version}`);
}

describe('quorum voter-change handlers (KIP-853)', () => {
  let cluster: FakeCluster;
  let leader: FakeNode;

  beforeEach(async () => {
    cluster = new FakeCluster([1], undefined, { kraftVersion: 1, directoryIds: true });
    leader = cluster.node(1);
    leader.client.start();
    const observer = cluster.addNode(2, new MemoryRaftLog(), new MemoryQuorumStateStore(), {
      voters: [],
      bootstrap: [1],
      directoryId: directoryIdOf(2),
    });
    observer.client.start();
    await cluster.clock.advance(1000);
  });

  it('adds a caught-up observer once the change commits, and refuses another cluster or a follower', async () => {
    const request = makeAddRaftVoterRequest({
      clusterId: 'test-cluster',
      timeoutMs: 5000,
      voterId: 2,
      voterDirectoryId: directoryIdOf(2),
      listeners: [makeAddRaftVoterRequestListener({ name: 'CONTROLLER', host: '127.0.0.1', port: 19093 })],
    });
    const foreign = await handleAddRaftVoter(services(leader), { ...request, clusterId: 'other' });
    assert.equal(foreign.errorCode, Errors.INCONSISTENT_CLUSTER_ID.code);
    const notLeader = await handleAddRaftVoter(services(cluster.node(2)), request);
    assert.equal(notLeader.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);
    const [added] = await Promise.all([handleAddRaftVoter(services(leader), request), cluster.clock.advance(1000)]);
    assert.equal(added.errorCode, Errors.NONE.code, added.errorMessage ?? '');
    encodesAt(ApiKey.AddRaftVoter, added, 0);
    assert.deepEqual(leader.client.voterSet().get(2)?.endpoints, [{ name: 'CONTROLLER', host: '127.0.0.1', port: 19093 }]);

    const described = handleDescribeQuorum(services(leader), describeRequest, 2);
    const p = described.topics[0]!.partitions[0]!;
    assert.deepEqual(
      p.currentVoters.map((v) => [v.replicaId, v.replicaDirectoryId]),
      [
        [1, directoryIdOf(1)],
        [2, directoryIdOf(2)],
      ],
    );
    assert.deepEqual(
      described.nodes.map((n) => [n.nodeId, n.listeners]),
      [
        [1, []],
        [2, [{ name: 'CONTROLLER', host: '127.0.0.1', port: 19093 }]],
      ],
    );
    for (const version of [0, 1, 2])
      encodesAt(ApiKey.DescribeQuorum, handleDescribeQuorum(services(leader), describeRequest, version), version);
    assert.equal(
      handleDescribeQuorum(services(leader), describeRequest, 1).topics[0]!.partitions[0]!.currentVoters[1]!.replicaDirectoryId,
      ZERO_UUID,
    );
  });

  it('removes a voter by id and directory id, and answers VOTER_NOT_FOUND for another directory', async () => {
    const add = makeAddRaftVoterRequest({ clusterId: null, timeoutMs: 5000, voterId: 2, voterDirectoryId: directoryIdOf(2) });
    await Promise.all([handleAddRaftVoter(services(leader), add), cluster.clock.advance(1000)]);
    const wrong = await handleRemoveRaftVoter(
      services(leader),
      makeRemoveRaftVoterRequest({ clusterId: null, voterId: 2, voterDirectoryId: directoryIdOf(9) }),
    );
    assert.equal(wrong.errorCode, Errors.VOTER_NOT_FOUND.code);
    assert.match(wrong.errorMessage ?? '', /Cannot remove voter 2/);
    const [removed] = await Promise.all([
      handleRemoveRaftVoter(
        services(leader),
        makeRemoveRaftVoterRequest({ clusterId: null, voterId: 2, voterDirectoryId: directoryIdOf(2) }),
      ),
      cluster.clock.advance(1000),
    ]);
    assert.equal(removed.errorCode, Errors.NONE.code, removed.errorMessage ?? '');
    encodesAt(ApiKey.RemoveRaftVoter, removed, 0);
    assert.deepEqual(leader.client.voterSet().ids(), [1]);
  });

  it('updates a voter’s listeners with UpdateRaftVoter, in the leader’s epoch only', async () => {
    const update = makeUpdateRaftVoterRequest({
      clusterId: 'test-cluster',
      currentLeaderEpoch: leader.client.currentEpoch,
      voterId: 1,
      voterDirectoryId: directoryIdOf(1),
      listeners: [makeUpdateRaftVoterRequestListener({ name: 'CONTROLLER', host: 'controller-1', port: 9093 })],
      kRaftVersionFeature: makeUpdateRaftVoterRequestKRaftVersionFeature({ minSupportedVersion: 0, maxSupportedVersion: 1 }),
    });
    const stale = handleUpdateRaftVoter(services(leader), { ...update, currentLeaderEpoch: leader.client.currentEpoch - 1 });
    assert.equal(stale.errorCode, Errors.FENCED_LEADER_EPOCH.code);
    const unknown = handleUpdateRaftVoter(services(leader), { ...update, voterId: 7 });
    assert.equal(unknown.errorCode, Errors.VOTER_NOT_FOUND.code);
    const updated = handleUpdateRaftVoter(services(leader), update);
    assert.equal(updated.errorCode, Errors.NONE.code);
    assert.equal(updated.currentLeader.leaderId, 1);
    encodesAt(ApiKey.UpdateRaftVoter, updated, 0);
    assert.deepEqual(leader.client.voterSet().get(1)?.endpoints, [{ name: 'CONTROLLER', host: 'controller-1', port: 9093 }]);
  });
});
