/**
 * KRaft's separate roles with real node processes: three controller-only nodes (the voters,
 * serving their controller listener only) and two broker-only nodes (Raft observers that
 * follow `__cluster_metadata` from the quorum leader and register and heartbeat with the
 * active controller over the network; broker 4 lists controller.quorum.voters, broker 5 only
 * controller.quorum.bootstrap.servers), driven by kafkajs: an RF 2 topic produced and
 * consumed, the SIGKILL of the active controller, and a broker that comes back after the
 * metadata moved on (and the leader it last followed is gone).
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import kafkajs, { type Admin, type Kafka as KafkaClient } from 'kafkajs';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
  type DescribeQuorumResponsePartitionData,
  type DescribeQuorumResponse,
} from '../../../protocol/messages/describe-quorum.ts';
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { startCluster, type ClusterNode, type ClusterProcesses } from '../../helpers/cluster.ts';
import { readRecords } from '../../helpers/read-records.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

const ROLES = { 1: 'controller', 2: 'controller', 3: 'controller', 4: 'broker', 5: 'broker' } as const;

/**
 * Short failure detection so that each failover takes seconds. The session outlasts what an
 * observer may need to find a new quorum leader (a fetch timeout to give up on the old one,
 * another when a voter still names it), so that a controller failover fences no broker.
 */
const FAST_FAILOVER = {
  'broker.session.timeout.ms': 6000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
};

const RETRY = { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 };

/** The quorum as the controller listener at `port` describes it. */
async function describeQuorum(port: number): Promise<DescribeQuorumResponsePartitionData> {
  const conn = await KafkaConnection.connect('127.0.0.1', port, { clientId: 'roles-test', requestTimeoutMs: 5000 });
  try {
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
    const p = res.topics[0]?.partitions[0];
    assert.ok(p !== undefined, 'DescribeQuorum answers for __cluster_metadata-0');
    return p;
  } finally {
    conn.close();
  }
}

/** The active controller, as a running controller that knows one says; -1 while none is known. */
async function activeController(cluster: ClusterProcesses): Promise<number> {
  for (const node of controllers(cluster).filter((n) => n.running)) {
    const p = await describeQuorum(node.controllerPort).catch(() => undefined);
    if (p !== undefined && p.leaderId > 0) return p.leaderId;
  }
  return -1;
}

function controllers(cluster: ClusterProcesses): ClusterNode[] {
  return cluster.nodes.filter((n) => n.roles === 'controller');
}

function brokers(cluster: ClusterProcesses): ClusterNode[] {
  return cluster.nodes.filter((n) => n.roles === 'broker');
}

function nodeById(cluster: ClusterProcesses, id: number): ClusterNode {
  const node = cluster.nodes.find((n) => n.nodeId === id);
  assert.ok(node !== undefined, `node ${id} is part of the cluster`);
  return node;
}

/** Whether anything accepts a TCP connection at 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The partitions of `topic` as broker `node` serves them: [leader, replicas, isr] by partition. */
async function partitionsOn(node: ClusterNode, topic: string): Promise<{ leader: number; replicas: number[]; isr: number[] }[] | null> {
  const probe = new KafkaCluster([`${node.host}:${node.port}`]);
  try {
    const res = await probe.metadata([topic]);
    const t = res.topics[0];
    if (t === undefined || t.errorCode !== 0 || t.partitions.length === 0) return null;
    return [...t.partitions]
      .sort((a, b) => a.partitionIndex - b.partitionIndex)
      .map((p) => ({ leader: p.leaderId, replicas: [...p.replicaNodes].sort(), isr: [...p.isrNodes].sort() }));
  } catch {
    return null;
  } finally {
    await probe.close();
  }
}

/** Waits until every running broker serves `topic` with a leader for each partition; its view then. */
async function servedEverywhere(cluster: ClusterProcesses, topic: string) {
  let view: Awaited<ReturnType<typeof partitionsOn>> = null;
  for (const node of brokers(cluster).filter((n) => n.running)) {
    await eventually(`broker ${node.nodeId} serves ${topic}`, async () => {
      view = await partitionsOn(node, topic);
      return view?.every((p) => p.leader >= 0) === true;
    });
  }
  return view!;
}

describe('cluster: controller-only and broker-only nodes', function () {
  this.timeout(240_000);
  let cluster: ClusterProcesses;
  let kafka: KafkaClient;
  let admin: Admin;

  const newAdmin = async (clientId: string): Promise<Admin> => {
    const a = new Kafka({ clientId, brokers: cluster.bootstrap.split(','), logLevel: logLevel.NOTHING, retry: RETRY }).admin();
    await a.connect();
    return a;
  };

  before(async function () {
    cluster = await startCluster({ nodes: 5, roles: ROLES, bootstrapServersOnly: [5], overrides: FAST_FAILOVER });
    kafka = new Kafka({ clientId: 'roles-test', brokers: cluster.bootstrap.split(','), logLevel: logLevel.NOTHING, retry: RETRY });
    admin = kafka.admin();
    await admin.connect();
  });

  after(async function () {
    await admin?.disconnect();
    await cluster?.cleanup();
  });

  it('has the controllers vote, the brokers observe, and only the brokers registered and reachable', async function () {
    assert.equal(cluster.bootstrap.split(',').length, 2, 'clients bootstrap from the two brokers');
    for (const node of controllers(cluster))
      assert.equal(await listening(node.port), false, `controller ${node.nodeId}: no client listener`);
    for (const node of brokers(cluster)) {
      assert.equal(await listening(node.controllerPort), false, `broker ${node.nodeId}: no controller listener`);
    }
    let quorum: DescribeQuorumResponsePartitionData | undefined;
    await eventually('both brokers fetch the metadata log as observers', async () => {
      const leader = await activeController(cluster);
      if (leader < 0) return false;
      quorum = await describeQuorum(nodeById(cluster, leader).controllerPort);
      return (
        quorum.observers
          .map((o) => o.replicaId)
          .sort()
          .join() === '4,5'
      );
    });
    assert.deepEqual(quorum!.currentVoters.map((v) => v.replicaId).sort(), [1, 2, 3]);
    assert.ok([1, 2, 3].includes(quorum!.leaderId), `a controller leads (${quorum!.leaderId})`);

    // Each broker applies the other's registration as it follows the log: eventually both list both.
    for (const node of brokers(cluster)) {
      const probe = new Kafka({ clientId: 'describe', brokers: [`${node.host}:${node.port}`], logLevel: logLevel.NOTHING }).admin();
      await probe.connect();
      try {
        await eventually(`broker ${node.nodeId} lists brokers 4 and 5 only`, async () => {
          const described = await probe.describeCluster();
          return (
            described.brokers
              .map((b) => b.nodeId)
              .sort()
              .join() === '4,5'
          );
        });
        for (let i = 0; i < 5; i++) {
          const { controller } = await probe.describeCluster();
          assert.ok([4, 5].includes(controller!), `the reported controller is a broker clients can reach (${controller})`);
        }
      } finally {
        await probe.disconnect();
      }
    }
  });

  it('creates an RF 2 topic, produces with acks=all and consumes it with a group', async function () {
    await admin.createTopics({ topics: [{ topic: 'replicated', numPartitions: 2, replicationFactor: 2 }] });
    const view = await servedEverywhere(cluster, 'replicated');
    for (const p of view) assert.deepEqual(p.replicas, [4, 5]);
    await eventually('full ISRs', async () => (await partitionsOn(brokers(cluster)[0]!, 'replicated'))!.every((p) => p.isr.length === 2));

    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: RETRY });
    await producer.connect();
    try {
      for (let i = 0; i < 20; i++) {
        const [meta] = await producer.send({ topic: 'replicated', acks: -1, messages: [{ key: `k${i}`, value: `v${i}` }] });
        assert.equal(meta!.errorCode, 0);
      }
    } finally {
      await producer.disconnect();
    }
    const read = (await readRecords(kafka, 'replicated', 20)).map((r) => r.value);
    assert.deepEqual(read.sort(), Array.from({ length: 20 }, (_, i) => `v${i}`).sort());
  });

  it('elects another active controller after a SIGKILL of the active one, and CreateTopics still succeeds', async function () {
    const first = await activeController(cluster);
    assert.ok([1, 2, 3].includes(first), `a controller is active (${first})`);
    await nodeById(cluster, first).kill('SIGKILL');
    await eventually(
      'a new active controller',
      async () => {
        const id = await activeController(cluster);
        return id > 0 && id !== first;
      },
      30_000,
    );
    const survivors = await newAdmin('after-controller-loss');
    try {
      await survivors.createTopics({ topics: [{ topic: 'after-failover', numPartitions: 2, replicationFactor: 2 }] });
      const view = await servedEverywhere(cluster, 'after-failover');
      for (const p of view) assert.deepEqual(p.replicas, [4, 5]);
      const described = await survivors.describeCluster();
      assert.deepEqual(described.brokers.map((b) => b.nodeId).sort(), [4, 5], 'both brokers stay registered and unfenced');
    } finally {
      await survivors.disconnect();
    }
    // Back as a follower: the next test needs a majority after another controller loss.
    await nodeById(cluster, first).start();
    await eventually('the restarted controller follows the leader', async () => {
      const p = await describeQuorum(nodeById(cluster, first).controllerPort).catch(() => undefined);
      return p !== undefined && p.leaderId > 0 && p.leaderId !== first;
    });
  });

  it('brings a restarted broker-only node up to date after the metadata and the quorum leader moved on', async function () {
    const away = nodeById(cluster, 5);
    await away.kill('SIGKILL');
    const stayed = await newAdmin('while-away');
    try {
      await eventually('broker 5 fenced', async () => {
        const ids = await stayed
          .describeCluster()
          .then((c) => c.brokers.map((b) => b.nodeId))
          .catch(() => [5]);
        return !ids.includes(5);
      });
      // The leader broker 5 followed last goes too: on restart it must find the new one.
      const leader = await activeController(cluster);
      await nodeById(cluster, leader).kill('SIGKILL');
      await eventually('another active controller', async () => {
        const id = await activeController(cluster);
        return id > 0 && id !== leader;
      });
      await stayed.createTopics({ topics: [{ topic: 'created-while-away', numPartitions: 1, replicationFactor: 1 }] });
      const producer = kafka.producer({ retry: RETRY });
      await producer.connect();
      try {
        for (let i = 0; i < 10; i++) await producer.send({ topic: 'replicated', acks: 1, messages: [{ key: `k${i}`, value: `late${i}` }] });
      } finally {
        await producer.disconnect();
      }

      await away.start();
      await eventually('broker 5 serves the topic created while it was away', async () => {
        const view = await partitionsOn(away, 'created-while-away');
        return view?.every((p) => p.leader === 4) === true;
      });
      await eventually(
        'broker 5 caught up and back in the ISRs',
        async () => (await partitionsOn(away, 'replicated'))?.every((p) => p.isr.length === 2) === true,
        60_000,
      );
      const described = await stayed.describeCluster();
      assert.deepEqual(described.brokers.map((b) => b.nodeId).sort(), [4, 5]);
    } finally {
      await stayed.disconnect();
    }
    const read = (await readRecords(kafka, 'replicated', 30)).map((r) => r.value);
    assert.equal(read.filter((v) => v.startsWith('late')).length, 10, 'what was produced while broker 5 was away is all there');
  });
});
