/**
 * Three real Sluice node processes (broker and controller each) started from Kafka-style
 * properties files, driven by kafkajs: replicas placed on three brokers, acks=all against
 * min.insync.replicas, a leader SIGKILLed under an idempotent acks=all producer, the ISR
 * shrinking and growing back, the active controller SIGKILLed, a group's offsets surviving
 * the loss of its coordinator, and a rolling restart.
 */
import assert from 'node:assert/strict';
import kafkajs, { type Admin, type ITopicConfig, type Kafka as KafkaClient } from 'kafkajs';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
  type DescribeQuorumResponse,
} from '../../../protocol/messages/describe-quorum.ts';
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { startCluster, type ClusterProcesses, type ClusterNode } from '../../helpers/cluster.ts';
import { byOffset, readRecords } from '../../helpers/read-records.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

/** Short failure detection so that each failover takes seconds, as a test can afford. */
const FAST_FAILOVER = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
};

/** kafkajs retries long enough to ride through a failover (session timeout + election). */
const RETRY = { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 };

interface PartitionView {
  partitionId: number;
  leader: number;
  replicas: number[];
  isr: number[];
}

/**
 * The topic's partitions as the broker kafkajs asks sees them. Each broker learns of a new
 * topic as it applies the metadata log, a moment after the controller answered CreateTopics,
 * so an unknown topic is asked again (as Kafka's own brokers, they are eventually consistent).
 */
async function partitions(admin: Admin, topic: string): Promise<PartitionView[]> {
  let view: PartitionView[] = [];
  await eventually(`metadata of ${topic}`, async () => {
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
      view = topics[0]!.partitions
        .map((p) => ({ partitionId: p.partitionId, leader: p.leader, replicas: [...p.replicas].sort(), isr: [...p.isr].sort() }))
        .sort((a, b) => a.partitionId - b.partitionId);
      return true;
    } catch (err) {
      if ((err as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION') return false;
      throw err;
    }
  });
  return view;
}

async function activeController(bootstrap: string): Promise<number> {
  const client = new KafkaCluster(bootstrap.split(','));
  try {
    const conn = await client.anyConnection();
    const res = await conn.send<DescribeQuorumResponse>(
      ApiKey.DescribeQuorum,
      makeDescribeQuorumRequest({
        topics: [
          makeDescribeQuorumRequestTopicData({
            topicName: METADATA_TOPIC,
            partitions: [makeDescribeQuorumRequestPartitionData({ partitionIndex: 0 })],
          }),
        ],
      }),
    );
    return res.topics[0]?.partitions[0]?.leaderId ?? -1;
  } finally {
    await client.close();
  }
}

/** Creates topics and waits until every running node serves their metadata with a leader per partition. */
async function createTopics(admin: Admin, cluster: ClusterProcesses, topics: ITopicConfig[]): Promise<void> {
  await admin.createTopics({ topics });
  for (const node of cluster.nodes.filter((n) => n.running)) {
    const probe = new KafkaCluster([`${node.host}:${node.port}`]);
    try {
      await eventually(`node ${node.nodeId} knows ${topics.map((t) => t.topic).join(', ')}`, async () => {
        const res = await probe.metadata(topics.map((t) => t.topic));
        return res.topics.every((t) => t.errorCode === 0 && t.partitions.length > 0 && t.partitions.every((p) => p.leaderId >= 0));
      });
    } finally {
      await probe.close();
    }
  }
}

function nodeById(cluster: ClusterProcesses, id: number): ClusterNode {
  const node = cluster.nodes.find((n) => n.nodeId === id);
  assert.ok(node !== undefined, `node ${id} is part of the cluster`);
  return node;
}

/** Bootstrap servers of the nodes that are running (a dead bootstrap costs kafkajs retries). */
function liveBootstrap(cluster: ClusterProcesses): string[] {
  return cluster.nodes.filter((n) => n.running).map((n) => `${n.host}:${n.port}`);
}

function client(cluster: ClusterProcesses, clientId: string): KafkaClient {
  return new Kafka({ clientId, brokers: liveBootstrap(cluster), logLevel: logLevel.NOTHING, retry: RETRY });
}

describe('cluster: three nodes with kafkajs', function () {
  this.timeout(180_000);
  let cluster: ClusterProcesses;
  let kafka: KafkaClient;
  let admin: Admin;

  beforeEach(async function () {
    cluster = await startCluster({ nodes: 3, overrides: FAST_FAILOVER });
    kafka = client(cluster, 'cluster-test');
    admin = kafka.admin();
    await admin.connect();
  });

  afterEach(async function () {
    await admin?.disconnect();
    await cluster?.cleanup();
  });

  it('places the replicas of an RF 3 topic on three brokers and spreads the leaders', async function () {
    await createTopics(admin, cluster, [{ topic: 'placed', numPartitions: 6, replicationFactor: 3 }]);
    // kafkajs asks any broker: each learns of the topic as it applies the metadata log.
    const view = await partitions(admin, 'placed');
    assert.equal(view.length, 6);
    for (const p of view) {
      assert.deepEqual(p.replicas, [1, 2, 3]);
      assert.deepEqual(p.isr, [1, 2, 3]);
    }
    assert.deepEqual([...new Set(view.map((p) => p.leader))].sort(), [1, 2, 3], 'every broker leads some partitions');
    await assert.rejects(
      admin.createTopics({ topics: [{ topic: 'too-wide', numPartitions: 1, replicationFactor: 4 }] }),
      (err: Error & { type?: string }) => /INVALID_REPLICATION_FACTOR|replication factor/i.test(`${err.message} ${JSON.stringify(err)}`),
    );
  });

  it('keeps an idempotent acks=all producer going through the SIGKILL of a leader, and the ISR grows back', async function () {
    await createTopics(admin, cluster, [
      { topic: 'failover', numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
    ]);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: RETRY });
    await producer.connect();
    const acknowledged = new Map<string, string>();
    const send = async (i: number) => {
      const [meta] = await producer.send({ topic: 'failover', acks: -1, messages: [{ key: 'k', value: `v${i}`, partition: 0 }] });
      assert.equal(meta!.errorCode, 0);
      const offset = meta!.baseOffset!;
      assert.ok(!acknowledged.has(offset), `offset ${offset} acknowledged once`);
      acknowledged.set(offset, `v${i}`);
    };
    for (let i = 0; i < 50; i++) await send(i);
    const [before] = await partitions(admin, 'failover');
    const victim = nodeById(cluster, before!.leader);
    await victim.kill('SIGKILL');
    for (let i = 50; i < 100; i++) await send(i);
    await producer.disconnect();

    const [after] = await partitions(admin, 'failover');
    assert.notEqual(after!.leader, victim.nodeId, 'a surviving ISR member leads');
    assert.ok(!after!.isr.includes(victim.nodeId), 'the dead broker left the ISR');

    const read = byOffset(await readRecords(kafka, 'failover', 100, 0));
    assert.equal(read.size, 100, 'no record lost, none duplicated');
    for (const [offset, value] of acknowledged) assert.equal(read.get(offset), value, `record at acknowledged offset ${offset}`);

    await victim.start();
    await eventually(
      'the returning broker rejoins the ISR',
      async () => (await partitions(admin, 'failover'))[0]!.isr.length === 3,
      60_000,
    );
  });

  it('keeps the logs of a leader SIGKILLed and restarted at once: nothing acknowledged is taken for a stray log', async function () {
    // A restarted node starts from a metadata image that predates its topics; deleting the
    // logs that image does not list emptied the returning leader, and the followers then
    // truncated to it.
    await createTopics(admin, cluster, [
      { topic: 'quick-return', numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
    ]);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: RETRY });
    await producer.connect();
    const acknowledged = new Map<string, string>();
    const send = async (i: number) => {
      const [meta] = await producer.send({ topic: 'quick-return', acks: -1, messages: [{ value: `q${i}`, partition: 0 }] });
      acknowledged.set(meta!.baseOffset!, `q${i}`);
    };
    for (let i = 0; i < 100; i++) await send(i);
    const [before] = await partitions(admin, 'quick-return');
    const victim = nodeById(cluster, before!.leader);
    await victim.kill('SIGKILL');
    await victim.start();
    await eventually(
      'the returning broker is back in the ISR',
      async () => (await partitions(admin, 'quick-return'))[0]!.isr.length === 3,
      60_000,
    );
    for (let i = 100; i < 110; i++) await send(i);
    await producer.disconnect();
    assert.match(victim.stderr(), /removed 0 stray directories/, 'the restart removed no partition log');
    const read = byOffset(await readRecords(kafka, 'quick-return', 110, 0));
    assert.equal(read.size, 110, 'every acknowledged record is in the log');
    for (const [offset, value] of acknowledged) assert.equal(read.get(offset), value, `record at acknowledged offset ${offset}`);
  });

  it('refuses acks=all below min.insync.replicas with NOT_ENOUGH_REPLICAS while acks=1 succeeds', async function () {
    await createTopics(admin, cluster, [
      { topic: 'strict', numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '3' }] },
    ]);
    const [state] = await partitions(admin, 'strict');
    const follower = nodeById(cluster, state!.replicas.find((id) => id !== state!.leader)!);
    await follower.kill('SIGKILL');
    await eventually('the ISR shrinks to two', async () => (await partitions(admin, 'strict'))[0]!.isr.length === 2, 30_000);

    const producer = client(cluster, 'strict-producer').producer({ retry: { retries: 0 } });
    await producer.connect();
    try {
      await assert.rejects(
        producer.send({ topic: 'strict', acks: -1, messages: [{ value: 'refused' }] }),
        (err: Error & { cause?: { type?: string } }) => err.cause?.type === 'NOT_ENOUGH_REPLICAS',
      );
      const [ok] = await producer.send({ topic: 'strict', acks: 1, messages: [{ value: 'accepted' }] });
      assert.equal(ok!.errorCode, 0);
    } finally {
      await producer.disconnect();
    }
  });

  it('elects a new active controller after a SIGKILL and keeps answering admin requests', async function () {
    const first = await activeController(cluster.bootstrap);
    assert.ok(first > 0, 'a controller is active');
    await nodeById(cluster, first).kill('SIGKILL');

    await eventually(
      'a new active controller',
      async () => {
        const id = await activeController(liveBootstrap(cluster).join(',')).catch(() => -1);
        return id > 0 && id !== first;
      },
      30_000,
    );
    const survivors = client(cluster, 'after-controller-loss').admin();
    await survivors.connect();
    try {
      // Placement uses fenced brokers only when the live ones are too few; the new controller
      // fences the dead node a session timeout after it took over.
      await eventually('the dead node is fenced', async () => {
        const ids = await survivors
          .describeCluster()
          .then((c) => c.brokers.map((b) => b.nodeId))
          .catch(() => [first]);
        return !ids.includes(first);
      });
      await createTopics(survivors, cluster, [{ topic: 'after-failover', numPartitions: 2, replicationFactor: 2 }]);
      const view = await partitions(survivors, 'after-failover');
      assert.equal(view.length, 2);
      for (const p of view) assert.ok(!p.replicas.includes(first), 'placed on live brokers only');
    } finally {
      await survivors.disconnect();
    }
  });

  it("keeps a group's committed offsets across the loss of its coordinator", async function () {
    await createTopics(admin, cluster, [{ topic: 'tracked', numPartitions: 3, replicationFactor: 3 }]);
    const groupId = 'survivor-group';
    await admin.setOffsets({
      groupId,
      topic: 'tracked',
      partitions: [
        { partition: 0, offset: '7' },
        { partition: 1, offset: '11' },
        { partition: 2, offset: '13' },
      ],
    });

    const probe = new KafkaCluster(liveBootstrap(cluster));
    const coordinator = await probe.findCoordinator(groupId).finally(() => probe.close());
    await nodeById(cluster, coordinator.nodeId).kill('SIGKILL');

    const survivors = client(cluster, 'offsets-after-failover').admin();
    await survivors.connect();
    try {
      let offsets: { partition: number; offset: string }[] = [];
      await eventually(
        'the new coordinator answers with the committed offsets',
        async () => {
          try {
            const [tracked] = await survivors.fetchOffsets({ groupId, topics: ['tracked'] });
            offsets = tracked?.partitions ?? [];
            return offsets.length === 3;
          } catch {
            return false;
          }
        },
        30_000,
      );
      assert.deepEqual(offsets.map((o) => [o.partition, o.offset]).sort(), [
        [0, '7'],
        [1, '11'],
        [2, '13'],
      ]);
    } finally {
      await survivors.disconnect();
    }
  });

  it('loses no acknowledged record and fails no produce in a rolling restart', async function () {
    await createTopics(admin, cluster, [
      { topic: 'rolling', numPartitions: 3, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
    ]);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: RETRY });
    await producer.connect();
    const acknowledged = new Map<string, string>();
    let failures = 0;
    let sent = 0;
    let running = true;
    const loop = (async () => {
      while (running && sent < 5000) {
        const value = `r${sent++}`;
        try {
          const [meta] = await producer.send({ topic: 'rolling', acks: -1, messages: [{ value, partition: sent % 3 }] });
          acknowledged.set(`${meta!.partition}@${meta!.baseOffset}`, value);
        } catch {
          failures++;
        }
      }
    })();
    for (const node of cluster.nodes) {
      assert.equal(await node.stop(), 0, `node ${node.nodeId} exits cleanly on SIGTERM`);
      await node.start();
      await eventually(
        `node ${node.nodeId} back in every ISR`,
        async () => (await partitions(admin, 'rolling')).every((p) => p.isr.length === 3),
        60_000,
      );
    }
    running = false;
    await loop;
    await producer.disconnect();
    assert.equal(failures, 0, 'no produce failed');
    assert.ok(acknowledged.size > 0);
    for (const partition of [0, 1, 2]) {
      const expected = [...acknowledged].filter(([k]) => k.startsWith(`${partition}@`));
      const read = byOffset(await readRecords(kafka, 'rolling', expected.length, partition));
      for (const [key, value] of expected) assert.equal(read.get(key.split('@')[1]!), value, `acknowledged ${key}`);
    }
  });
});
