// Fuzzer findings against the real broker process, as regression tests: a JoinGroup naming
// a protocol twice used to kill the process when its rebalance timer fired; an OffsetCommit
// with a huge retention_time_ms used to leave its __consumer_offsets partition unloadable
// after a restart; a corrupt record in __consumer_offsets must not keep the other groups of
// its partition from loading.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { makeCreateTopicsRequest, type CreateTopicsResponse } from '../../../protocol/messages/create-topics.ts';
import { makeFindCoordinatorRequest, type FindCoordinatorResponse } from '../../../protocol/messages/find-coordinator.ts';
import { makeJoinGroupRequest, type JoinGroupResponse } from '../../../protocol/messages/join-group.ts';
import {
  makeOffsetCommitRequest,
  makeOffsetCommitRequestPartition,
  makeOffsetCommitRequestTopic,
  type OffsetCommitResponse,
} from '../../../protocol/messages/offset-commit.ts';
import { makeOffsetFetchRequest, type OffsetFetchResponse } from '../../../protocol/messages/offset-fetch.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../../protocol/messages/produce.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { encodeCoordinatorRecord } from '../../../src/coordinator/offsets-topic-codec.ts';
import { eventually } from '../../helpers/wait.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

const TOPIC = 'events';
const SUBSCRIPTION = Buffer.from([0, 0, 0, 0, 0, 1, 0, 6, 0x65, 0x76, 0x65, 0x6e, 0x74, 0x73, 0xff, 0xff, 0xff, 0xff]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('group coordinator hardening against the broker (raw requests)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;
  const connections: KafkaConnection[] = [];

  async function connect(clientId = 'hardening'): Promise<KafkaConnection> {
    const conn = await KafkaConnection.connect(broker.host, broker.port, { clientId });
    connections.push(conn);
    return conn;
  }

  function closeAll(): void {
    for (const c of connections.splice(0)) c.close();
  }

  /** FindCoordinator until the group's partition is served (created and led). */
  async function findCoordinator(conn: KafkaConnection, groupId: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const found = await conn.send<FindCoordinatorResponse>(
        ApiKey.FindCoordinator,
        makeFindCoordinatorRequest({ key: groupId, keyType: 0 }),
        3,
      );
      if (found.errorCode === 0) return;
      assert.ok(attempt < 100, `coordinator of ${groupId} found (last error ${found.errorCode})`);
      await sleep(100);
    }
  }

  /** OffsetFetch v5 until the partition has loaded; fails on a COORDINATOR_LOAD_IN_PROGRESS loop. */
  async function fetchOffset(conn: KafkaConnection, groupId: string, partition: number): Promise<bigint> {
    for (let attempt = 0; ; attempt++) {
      const response = await conn.send<OffsetFetchResponse>(
        ApiKey.OffsetFetch,
        makeOffsetFetchRequest({
          groupId,
          topics: [{ name: TOPIC, partitionIndexes: [partition] }],
        }),
        5,
      );
      if (response.errorCode === 0) return response.topics[0]!.partitions[0]!.committedOffset;
      assert.equal(response.errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
      assert.ok(attempt < 100, `offsets of ${groupId} loaded`);
      await sleep(100);
    }
  }

  async function commit(
    conn: KafkaConnection,
    groupId: string,
    partition: number,
    offset: bigint,
    retentionTimeMs: bigint,
    version = 2,
  ): Promise<number> {
    const response = await conn.send<OffsetCommitResponse>(
      ApiKey.OffsetCommit,
      makeOffsetCommitRequest({
        groupId,
        generationIdOrMemberEpoch: -1,
        memberId: '',
        retentionTimeMs,
        topics: [
          makeOffsetCommitRequestTopic({
            name: TOPIC,
            partitions: [makeOffsetCommitRequestPartition({ partitionIndex: partition, committedOffset: offset })],
          }),
        ],
      }),
      version,
    );
    return response.topics[0]!.partitions[0]!.errorCode;
  }

  async function assertAlive(): Promise<void> {
    assert.equal(broker.child.exitCode, null, `broker exited\nstderr:\n${broker.stderr()}`);
    const conn = await connect();
    const versions = await conn.send<ApiVersionsResponse>(
      ApiKey.ApiVersions,
      makeApiVersionsRequest({
        clientSoftwareName: 'hardening',
        clientSoftwareVersion: '1',
      }),
      3,
    );
    assert.equal(versions.errorCode, 0);
  }

  before(async () => {
    // One offsets partition: every group shares it, so one bad record would block them all.
    // The default group.initial.rebalance.delay.ms (3000) is kept: its timer is what died.
    broker = await spawnBroker({ overrides: { 'offsets.topic.num.partitions': 1 } });
    const conn = await connect();
    const created = await conn.send<CreateTopicsResponse>(
      ApiKey.CreateTopics,
      makeCreateTopicsRequest({
        topics: [{ name: TOPIC, numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] }],
        timeoutMs: 10_000,
      }),
    );
    assert.equal(created.topics[0]!.errorCode, 0);
    await findCoordinator(conn, 'any-group');
  });

  after(async () => {
    closeAll();
    await broker?.cleanup();
  });

  it('completes the join of a new group whose member names its protocol twice (JoinGroup v3 and v5) and stays up', async () => {
    const started = Date.now();
    const protocols = [
      { name: 'range', metadata: SUBSCRIPTION },
      { name: 'range', metadata: SUBSCRIPTION },
    ];
    const request = (groupId: string, memberId: string) =>
      makeJoinGroupRequest({
        groupId,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        memberId,
        groupInstanceId: null,
        protocolType: 'consumer',
        protocols,
      });
    const v3 = (async () => (await connect()).send<JoinGroupResponse>(ApiKey.JoinGroup, request('dup-v3', ''), 3))();
    const v5 = (async () => {
      const conn = await connect();
      const first = await conn.send<JoinGroupResponse>(ApiKey.JoinGroup, request('dup-v5', ''), 5);
      assert.equal(first.errorCode, Errors.MEMBER_ID_REQUIRED.code);
      return conn.send<JoinGroupResponse>(ApiKey.JoinGroup, request('dup-v5', first.memberId), 5);
    })();
    for (const response of await Promise.all([v3, v5])) {
      assert.equal(response.errorCode, 0);
      assert.equal(response.leader, response.memberId);
      assert.equal(response.protocolName, 'range');
      assert.equal(response.members.length, 1);
      assert.deepEqual(response.members[0]!.metadata, SUBSCRIPTION);
    }
    // The rebalance timer fired ~3 s after the join; the process used to exit then.
    await sleep(Math.max(0, started + 5000 - Date.now()));
    await assertAlive();
  });

  it('answers OffsetCommit v2 with huge or negative retention_time_ms as Kafka does, and loads those offsets after a restart', async () => {
    const conn = await connect();
    // Kafka accepts any retention (OffsetMetadataManager.expireTimestampMs: now + retention as a long).
    assert.equal(await commit(conn, 'retention-2p60', 0, 60n, 2n ** 60n), Errors.NONE.code);
    assert.equal(await commit(conn, 'retention-max', 1, 63n, 2n ** 63n - 1n), Errors.NONE.code);
    assert.equal(await commit(conn, 'retention-minus-2', 2, 2n, -2n), Errors.NONE.code);
    // A neighbour on the same partition with an ordinary commit.
    assert.equal(await commit(conn, 'retention-default', 0, 7n, -1n, 8), Errors.NONE.code);

    closeAll();
    broker = await broker.restart();
    const after = await connect();
    await findCoordinator(after, 'retention-2p60');
    assert.equal(await fetchOffset(after, 'retention-2p60', 0), 60n);
    assert.equal(await fetchOffset(after, 'retention-max', 1), 63n);
    assert.equal(await fetchOffset(after, 'retention-default', 0), 7n);
    // Due at once (now - 2), it goes at the next expiration pass (offsets.retention.check.interval.ms);
    // until then it reads back, as in Kafka.
    assert.ok([2n, -1n].includes(await fetchOffset(after, 'retention-minus-2', 2)));
    assert.doesNotMatch(broker.stdout() + broker.stderr(), /outside the safe integer range/);
  });

  it('skips a corrupt record of __consumer_offsets with a log line and loads the other groups of its partition', async () => {
    const conn = await connect();
    assert.equal(await commit(conn, 'neighbour-before', 0, 11n, -1n, 8), Errors.NONE.code);
    // Bytes no coordinator can read, produced straight into the partition as the admin client may.
    const validKey = encodeCoordinatorRecord({ type: 'offset', groupId: 'corrupt', topic: TOPIC, partition: 0, value: null }).key;
    const records = await buildRecordBatch({}, [
      { key: validKey, value: Buffer.from([0, 1, 0xde, 0xad]), timestamp: Date.now() },
      { key: Buffer.from([0, 1, 0xff]), value: Buffer.from([1, 2, 3]), timestamp: Date.now() },
      { key: Buffer.from([0, 2, 0x7f, 0xff]), value: Buffer.from([0, 3]), timestamp: Date.now() },
    ]);
    const admin = await connect('__admin_client');
    const produced = await admin.send<ProduceResponse>(
      ApiKey.Produce,
      makeProduceRequest({
        acks: -1,
        timeoutMs: 5000,
        topicData: [
          makeProduceRequestTopicProduceData({
            name: '__consumer_offsets',
            partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records })],
          }),
        ],
      }),
      9,
    );
    assert.equal(produced.responses[0]!.partitionResponses[0]!.errorCode, Errors.NONE.code);
    assert.equal(await commit(conn, 'neighbour-after', 1, 12n, -1n, 8), Errors.NONE.code);

    closeAll();
    broker = await broker.restart();
    const after = await connect();
    await findCoordinator(after, 'neighbour-before');
    assert.equal(await fetchOffset(after, 'neighbour-before', 0), 11n);
    assert.equal(await fetchOffset(after, 'neighbour-after', 1), 12n);
    assert.equal(await fetchOffset(after, 'retention-2p60', 0), 60n);
    assert.equal(await fetchOffset(after, 'corrupt', 0), -1n);
    const restarted = broker;
    const skipped = /3 record\(s\) could not be loaded and were skipped/;
    // Log lines are written asynchronously: wait for them rather than read them at once.
    await eventually('the skipped-records line', () => skipped.test(restarted.stderr()), 10_000).catch(() => undefined);
    const logs = broker.stdout() + broker.stderr();
    assert.match(logs, /decoding the record at offset \d+ of __consumer_offsets-0 \(skipped\)/);
    assert.match(logs, skipped);
    await assertAlive();
  });
});
