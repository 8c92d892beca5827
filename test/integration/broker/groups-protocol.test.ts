import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeFindCoordinatorRequest, type FindCoordinatorResponse } from '../../../protocol/messages/find-coordinator.ts';
import { makeJoinGroupRequest, type JoinGroupResponse } from '../../../protocol/messages/join-group.ts';
import { makeSyncGroupRequest, type SyncGroupResponse } from '../../../protocol/messages/sync-group.ts';
import { makeHeartbeatRequest, type HeartbeatResponse } from '../../../protocol/messages/heartbeat.ts';
import { makeOffsetCommitRequest, type OffsetCommitResponse } from '../../../protocol/messages/offset-commit.ts';
import { makeOffsetFetchRequest, type OffsetFetchResponse } from '../../../protocol/messages/offset-fetch.ts';
import { makeDescribeGroupsRequest, type DescribeGroupsResponse } from '../../../protocol/messages/describe-groups.ts';
import { makeLeaveGroupRequest, type LeaveGroupResponse } from '../../../protocol/messages/leave-group.ts';
import { makeListGroupsRequest, type ListGroupsResponse } from '../../../protocol/messages/list-groups.ts';
import { makeDeleteGroupsRequest, type DeleteGroupsResponse } from '../../../protocol/messages/delete-groups.ts';
import { makeCreateTopicsRequest, type CreateTopicsResponse } from '../../../protocol/messages/create-topics.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

const GROUP = 'static-group';
const PROTOCOLS = [{ name: 'range', metadata: Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) }];

describe('consumer group protocol against the broker (raw requests)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  const connections: KafkaConnection[] = [];

  async function connect(): Promise<KafkaConnection> {
    const conn = await KafkaConnection.connect(broker.host, broker.port, { clientId: 'raw-member' });
    connections.push(conn);
    return conn;
  }

  function join(conn: KafkaConnection, memberId: string, groupInstanceId: string | null, version = 5): Promise<JoinGroupResponse> {
    return conn.send<JoinGroupResponse>(
      ApiKey.JoinGroup,
      makeJoinGroupRequest({
        groupId: GROUP,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        memberId,
        groupInstanceId,
        protocolType: 'consumer',
        protocols: PROTOCOLS,
      }),
      version,
    );
  }

  function heartbeat(
    conn: KafkaConnection,
    memberId: string,
    groupInstanceId: string | null,
    generationId: number,
  ): Promise<HeartbeatResponse> {
    return conn.send<HeartbeatResponse>(
      ApiKey.Heartbeat,
      makeHeartbeatRequest({ groupId: GROUP, memberId, groupInstanceId, generationId }),
      3,
    );
  }

  before(async () => {
    broker = await spawnBroker({ overrides: { 'group.initial.rebalance.delay.ms': 0, 'offsets.topic.num.partitions': 3 } });
    const conn = await connect();
    const created = await conn.send<CreateTopicsResponse>(
      ApiKey.CreateTopics,
      makeCreateTopicsRequest({
        topics: [{ name: 'events', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
        timeoutMs: 10_000,
      }),
    );
    assert.equal(created.topics[0]!.errorCode, 0);
    for (let attempt = 0; ; attempt++) {
      const found = await conn.send<FindCoordinatorResponse>(
        ApiKey.FindCoordinator,
        makeFindCoordinatorRequest({ key: GROUP, keyType: 0 }),
        3,
      );
      if (found.errorCode === 0) {
        assert.equal(found.nodeId, 1);
        assert.equal(found.port, broker.port);
        break;
      }
      assert.ok(attempt < 50, 'coordinator found');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  after(async () => {
    for (const c of connections) c.close();
    await broker?.cleanup();
  });

  it('requires a member id from JoinGroup v4 for dynamic members', async () => {
    const conn = await connect();
    const response = await join(conn, '', null, 4);
    assert.equal(response.errorCode, Errors.MEMBER_ID_REQUIRED.code);
    assert.match(response.memberId, /^raw-member-/);
  });

  it('keeps a static member across a restart without a rebalance, fences the old id, and refuses stale generations', async () => {
    const first = await join(await connect(), '', 'instance-1');
    assert.equal(first.errorCode, 0);
    assert.equal(first.leader, first.memberId);
    const conn = await connect();
    const sync = await conn.send<SyncGroupResponse>(
      ApiKey.SyncGroup,
      makeSyncGroupRequest({
        groupId: GROUP,
        generationId: first.generationId,
        memberId: first.memberId,
        groupInstanceId: 'instance-1',
        assignments: [{ memberId: first.memberId, assignment: Buffer.from('assigned') }],
      }),
      3,
    );
    assert.equal(sync.errorCode, 0);
    assert.equal(sync.assignment.toString(), 'assigned');

    const restarted = await join(await connect(), '', 'instance-1');
    assert.equal(restarted.errorCode, 0);
    assert.notEqual(restarted.memberId, first.memberId);
    assert.equal(restarted.generationId, first.generationId, 'no new generation');
    assert.equal((await heartbeat(conn, first.memberId, 'instance-1', first.generationId)).errorCode, Errors.FENCED_INSTANCE_ID.code);
    assert.equal((await heartbeat(conn, restarted.memberId, 'instance-1', restarted.generationId)).errorCode, 0);

    const commit = (generationId: number) =>
      conn.send<OffsetCommitResponse>(
        ApiKey.OffsetCommit,
        makeOffsetCommitRequest({
          groupId: GROUP,
          generationIdOrMemberEpoch: generationId,
          memberId: restarted.memberId,
          groupInstanceId: 'instance-1',
          topics: [
            {
              name: 'events',
              partitions: [
                { partitionIndex: 0, committedOffset: 7n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: 'meta' },
              ],
            },
          ],
        }),
        8,
      );
    assert.equal((await commit(restarted.generationId - 1)).topics[0]!.partitions[0]!.errorCode, Errors.ILLEGAL_GENERATION.code);
    assert.equal((await commit(restarted.generationId)).topics[0]!.partitions[0]!.errorCode, 0);

    const fetched = await conn.send<OffsetFetchResponse>(
      ApiKey.OffsetFetch,
      makeOffsetFetchRequest({
        groupId: GROUP,
        topics: [{ name: 'events', partitionIndexes: [0, 1] }],
      }),
      5,
    );
    assert.deepEqual(
      fetched.topics[0]!.partitions.map((p) => [p.committedOffset, p.metadata]),
      [
        [7n, 'meta'],
        [-1n, ''],
      ],
    );

    const described = await conn.send<DescribeGroupsResponse>(ApiKey.DescribeGroups, makeDescribeGroupsRequest({ groups: [GROUP] }), 5);
    const group = described.groups[0]!;
    assert.equal(group.groupState, 'Stable');
    assert.deepEqual(
      group.members.map((m) => m.groupInstanceId),
      ['instance-1'],
    );
    assert.equal(group.members[0]!.memberAssignment.toString(), 'assigned');

    const listed = await conn.send<ListGroupsResponse>(ApiKey.ListGroups, makeListGroupsRequest({ statesFilter: ['Stable'] }), 4);
    assert.ok(listed.groups.some((g) => g.groupId === GROUP && g.groupState === 'Stable'));

    const deleteBusy = await conn.send<DeleteGroupsResponse>(ApiKey.DeleteGroups, makeDeleteGroupsRequest({ groupsNames: [GROUP] }), 2);
    assert.equal(deleteBusy.results[0]!.errorCode, Errors.NON_EMPTY_GROUP.code);
    const left = await conn.send<LeaveGroupResponse>(
      ApiKey.LeaveGroup,
      makeLeaveGroupRequest({
        groupId: GROUP,
        members: [{ memberId: restarted.memberId, groupInstanceId: 'instance-1', reason: null }],
      }),
      4,
    );
    assert.deepEqual(
      left.members.map((m) => m.errorCode),
      [0],
    );
    const deleted = await conn.send<DeleteGroupsResponse>(ApiKey.DeleteGroups, makeDeleteGroupsRequest({ groupsNames: [GROUP] }), 2);
    assert.equal(deleted.results[0]!.errorCode, 0);
  });

  it('answers the group APIs at their oldest versions too', async () => {
    const conn = await connect();
    const joinV0 = await conn.send<JoinGroupResponse>(
      ApiKey.JoinGroup,
      makeJoinGroupRequest({
        groupId: 'old-client',
        sessionTimeoutMs: 10_000,
        memberId: '',
        protocolType: 'consumer',
        protocols: PROTOCOLS,
      }),
      0,
    );
    assert.equal(joinV0.errorCode, 0);
    assert.equal(joinV0.protocolName, 'range');
    const commitV0 = await conn.send<OffsetCommitResponse>(
      ApiKey.OffsetCommit,
      makeOffsetCommitRequest({
        groupId: 'simple-v0',
        topics: [
          {
            name: 'events',
            partitions: [{ partitionIndex: 1, committedOffset: 3n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: '' }],
          },
        ],
      }),
      0,
    );
    assert.equal(commitV0.topics[0]!.partitions[0]!.errorCode, 0);
    const fetchV1 = await conn.send<OffsetFetchResponse>(
      ApiKey.OffsetFetch,
      makeOffsetFetchRequest({
        groupId: 'simple-v0',
        topics: [{ name: 'events', partitionIndexes: [1] }],
      }),
      1,
    );
    assert.equal(fetchV1.topics[0]!.partitions[0]!.committedOffset, 3n);
    const unknownTopic = await conn.send<OffsetCommitResponse>(
      ApiKey.OffsetCommit,
      makeOffsetCommitRequest({
        groupId: 'simple-v0',
        generationIdOrMemberEpoch: -1,
        topics: [
          {
            name: 'no-such-topic',
            partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: '' }],
          },
        ],
      }),
      7,
    );
    assert.equal(unknownTopic.topics[0]!.partitions[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });
});
