/**
 * Kafka's own admin tools against three Sluice nodes: kafka-reassign-partitions moves a
 * partition's replicas (add, catch up, drop) with its records intact, and
 * kafka-leader-election moves leadership back to the preferred replica after a failover;
 * auto.leader.rebalance.enable does the same by itself.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs, { type Admin, type Kafka as KafkaClient } from 'kafkajs';
import { JVM_OPTIONS } from '../../../compat/clients/java.ts';
import { runOk } from '../../../compat/support/process.ts';
import { kafkaInstalled, kafkaLibs } from '../../../compat/targets.ts';
import { startCluster, type ClusterProcesses } from '../../helpers/cluster.ts';
import { hasCommand, missingTool } from '../../helpers/runtimes.ts';
import { readRecords } from '../../helpers/read-records.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

const FAST_FAILOVER = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
};

const RETRY = { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 };

/** Runs one of Kafka's tools by its main class, as bin/kafka-*.sh do. */
async function kafkaTool(mainClass: string, args: string[]): Promise<string> {
  const result = await runOk('java', [...JVM_OPTIONS, '-cp', `${kafkaLibs()}/*`, mainClass, ...args], { timeoutMs: 90_000 });
  return result.stdout;
}

interface PartitionView {
  leader: number;
  replicas: number[];
  isr: number[];
}

async function partition(admin: Admin, topic: string, id = 0): Promise<PartitionView | undefined> {
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const p = topics[0]?.partitions.find((q) => q.partitionId === id);
    return p === undefined ? undefined : { leader: p.leader, replicas: [...p.replicas], isr: [...p.isr].sort() };
  } catch {
    return undefined;
  }
}

async function produce(kafka: KafkaClient, topic: string, count: number): Promise<void> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: RETRY });
  await producer.connect();
  try {
    for (let i = 0; i < count; i += 10) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: 10 }, (_, j) => ({ partition: 0, value: `m${i + j}` })),
      });
    }
  } finally {
    await producer.disconnect();
  }
}

describe("cluster: Kafka's admin tools", function () {
  this.timeout(240_000);
  let cluster: ClusterProcesses | null = null;
  let admin: Admin | null = null;

  beforeEach(function () {
    if (!hasCommand('java')) missingTool(this, 'Java', 'apt-get install -y openjdk-17-jre-headless');
    if (!kafkaInstalled()) missingTool(this, "Apache Kafka's tools", 'scripts/install-test-clients.sh');
  });

  afterEach(async function () {
    await admin?.disconnect();
    admin = null;
    await cluster?.cleanup();
    cluster = null;
  });

  async function start(overrides: Record<string, string | number | boolean>): Promise<{ kafka: KafkaClient; admin: Admin }> {
    cluster = await startCluster({ nodes: 3, overrides: { ...FAST_FAILOVER, ...overrides } });
    const kafka = new Kafka({ clientId: 'admin-tools', brokers: cluster.bootstrap.split(','), logLevel: logLevel.NOTHING, retry: RETRY });
    admin = kafka.admin();
    await admin.connect();
    return { kafka, admin };
  }

  it('kafka-reassign-partitions moves the replicas of a partition and keeps its records', async function () {
    const { kafka, admin } = await start({});
    await admin.createTopics({ topics: [{ topic: 'moving', replicaAssignment: [{ partition: 0, replicas: [1, 2] }] }] });
    await eventually('the topic has its two replicas in sync', async () => (await partition(admin, 'moving'))?.isr.length === 2);
    await produce(kafka, 'moving', 200);

    const dir = await mkdtemp(join(tmpdir(), 'sluice-reassign-'));
    try {
      const plan = join(dir, 'plan.json');
      await writeFile(plan, JSON.stringify({ version: 1, partitions: [{ topic: 'moving', partition: 0, replicas: [2, 3] }] }));
      const bootstrap = cluster!.bootstrap.split(',')[0]!;
      const tool = 'org.apache.kafka.tools.reassign.ReassignPartitionsCommand';
      const executed = await kafkaTool(tool, ['--bootstrap-server', bootstrap, '--reassignment-json-file', plan, '--execute']);
      assert.match(executed, /Successfully started partition reassignment/);
      await eventually(
        'the reassignment completes',
        async () => {
          const verified = await kafkaTool(tool, ['--bootstrap-server', bootstrap, '--reassignment-json-file', plan, '--verify']);
          return /Reassignment of partition moving-0 is completed/.test(verified);
        },
        90_000,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await eventually('the metadata shows the new replicas', async () => {
      const p = await partition(admin, 'moving');
      return p !== undefined && [...p.replicas].sort().join() === '2,3' && p.isr.join() === '2,3' && p.leader !== 1;
    });
    const values = (await readRecords(kafka, 'moving', 200)).map((r) => r.value);
    assert.deepEqual(
      values,
      Array.from({ length: 200 }, (_, i) => `m${i}`),
    );
  });

  it('kafka-leader-election moves leadership back to the preferred replica', async function () {
    const { kafka, admin } = await start({ 'auto.leader.rebalance.enable': false });
    await admin.createTopics({ topics: [{ topic: 'preferred', replicaAssignment: [{ partition: 0, replicas: [1, 2, 3] }] }] });
    await eventually('node 1 leads', async () => (await partition(admin, 'preferred'))?.leader === 1);
    await produce(kafka, 'preferred', 20);
    const node1 = cluster!.nodes.find((n) => n.nodeId === 1)!;
    await node1.kill('SIGKILL');
    await eventually('another replica leads', async () => {
      const p = await partition(admin, 'preferred');
      return p !== undefined && p.leader !== 1 && p.leader > 0;
    });
    await node1.start();
    await eventually('node 1 is back in the ISR', async () => (await partition(admin, 'preferred'))?.isr.length === 3, 60_000);
    assert.notEqual((await partition(admin, 'preferred'))?.leader, 1, 'no automatic move back while auto rebalance is off');

    const bootstrap = cluster!.nodes.filter((n) => n.running).map((n) => `${n.host}:${n.port}`)[0]!;
    const out = await kafkaTool('org.apache.kafka.tools.LeaderElectionCommand', [
      '--bootstrap-server',
      bootstrap,
      '--election-type',
      'PREFERRED',
      '--topic',
      'preferred',
      '--partition',
      '0',
    ]);
    assert.match(out, /Successfully completed leader election \(PREFERRED\) for partitions preferred-0/);
    await eventually('node 1 leads again', async () => (await partition(admin, 'preferred'))?.leader === 1);
    assert.equal((await readRecords(kafka, 'preferred', 20)).length, 20);
  });

  it('auto.leader.rebalance.enable moves leadership back to the preferred replica by itself', async function () {
    const { admin } = await start({ 'leader.imbalance.check.interval.seconds': 1 });
    await admin.createTopics({ topics: [{ topic: 'rebalanced', replicaAssignment: [{ partition: 0, replicas: [1, 2, 3] }] }] });
    await eventually('node 1 leads', async () => (await partition(admin, 'rebalanced'))?.leader === 1);
    const node1 = cluster!.nodes.find((n) => n.nodeId === 1)!;
    await node1.kill('SIGKILL');
    await eventually('another replica leads', async () => {
      const p = await partition(admin, 'rebalanced');
      return p !== undefined && p.leader !== 1 && p.leader > 0;
    });
    await node1.start();
    await eventually('node 1 leads again without being asked', async () => (await partition(admin, 'rebalanced'))?.leader === 1, 60_000);
  });
});
