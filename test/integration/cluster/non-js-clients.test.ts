/**
 * Three real Sluice nodes under the idempotent acks=all producers of librdkafka (through
 * confluent-kafka-python) and of Kafka's Java client: each keeps producing to an RF 3 topic
 * with min.insync.replicas=2 while the leader of its partition is SIGKILLed, and every record
 * it saw acknowledged is read back at its acknowledged offset, none twice, none missing.
 *
 * The producers are child processes (test/helpers/python-failover-producer.py,
 * compat/java/FailoverProducer.java) that send "v0", "v1", ... until their stdin closes and
 * report each delivery as a JSON line. A missing client is a loud SKIP locally and a failure
 * under CI (scripts/install-test-clients.sh installs them).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import kafkajs, { type Admin, type Kafka as KafkaClient } from 'kafkajs';
import { JVM_OPTIONS, javaClasspath, javaUnavailable } from '../../../compat/clients/java.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { byOffset, readRecords } from '../../helpers/read-records.ts';
import { type ClusterProcesses, startCluster } from '../../helpers/cluster.ts';
import { missingTool } from '../../helpers/runtimes.ts';
import { REPO } from '../../helpers/sluice-cli.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

/** Short failure detection, as in replication.test.ts: each failover takes seconds. */
const FAST_FAILOVER = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
};
const RETRY = { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 };

/** Debian's interpreter: python3-confluent-kafka is installed for it, not for a pyenv python3. */
const PYTHON = '/usr/bin/python3';
const PRODUCE_INTERVAL_MS = 5;
/** Acknowledged records before the kill, and after it (so the producer demonstrably went on). */
const ACKS_BEFORE_KILL = 100;
const ACKS_AFTER_FAILOVER = 100;

interface Ack {
  seq: number;
  partition: number;
  offset: number;
}

/** A producer process and what it reported so far. */
class ProducerProcess {
  readonly acks: Ack[] = [];
  readonly errors: string[] = [];
  /** Records sent, from the final "done" line. */
  sent: number | null = null;
  /** Date.now() of each acknowledgement, parallel to `acks`. */
  readonly ackedAtMs: number[] = [];
  private stderr = '';
  private readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event: string; seq?: number; partition?: number; offset?: number; error?: string; sent?: number };
      if (event.event === 'ack') {
        this.acks.push({ seq: event.seq!, partition: event.partition!, offset: event.offset! });
        this.ackedAtMs.push(Date.now());
      } else if (event.event === 'error') this.errors.push(`record ${event.seq}: ${event.error}`);
      else if (event.event === 'done') this.sent = event.sent!;
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Closes stdin (the producer stops sending and flushes) and resolves with the exit code. */
  async finish(timeoutMs: number): Promise<number | null> {
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  describe(): string {
    return `${this.acks.length} acknowledged, ${this.errors.length} failed; stderr:\n${this.stderr.slice(-4000)}`;
  }
}

function pythonHasConfluentKafka(): boolean {
  return spawnSync(PYTHON, ['-c', 'import confluent_kafka'], { stdio: 'ignore' }).status === 0;
}

function liveBootstrap(cluster: ClusterProcesses): string[] {
  return cluster.nodes.filter((n) => n.running).map((n) => `${n.host}:${n.port}`);
}

/** Creates a one-partition RF 3 topic and waits until every node serves it with a leader. */
async function createTopic(admin: Admin, cluster: ClusterProcesses, topic: string): Promise<void> {
  await admin.createTopics({
    topics: [{ topic, numPartitions: 1, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
  });
  for (const node of cluster.nodes) {
    const probe = new KafkaCluster([`${node.host}:${node.port}`]);
    try {
      await eventually(`node ${node.nodeId} knows ${topic}`, async () => {
        const res = await probe.metadata([topic]);
        return res.topics.every((t) => t.errorCode === 0 && t.partitions.length === 1 && t.partitions[0]!.leaderId >= 0);
      });
    } finally {
      await probe.close();
    }
  }
}

async function leaderOf(admin: Admin, topic: string): Promise<{ leader: number; isr: number[] }> {
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
  const p = topics[0]!.partitions[0]!;
  return { leader: p.leader, isr: [...p.isr].sort() };
}

/** Every record of partition 0 below the high watermark, as offset -> value. */
async function readAll(kafka: KafkaClient, admin: Admin, topic: string): Promise<Map<number, string>> {
  const [end] = await admin.fetchTopicOffsets(topic);
  const count = Number(end!.high);
  if (count === 0) return new Map();
  const read = byOffset(await readRecords(kafka, topic, count));
  return new Map([...read].map(([offset, value]) => [Number(offset), value]));
}

describe('cluster: librdkafka and Java idempotent producers through a leader SIGKILL', function () {
  this.timeout(240_000);
  let cluster: ClusterProcesses | null = null;
  let producer: ProducerProcess | null = null;

  afterEach(async function () {
    producer?.kill();
    producer = null;
    await cluster?.cleanup();
    cluster = null;
  });

  /**
   * Starts the cluster and the topic, starts the producer, SIGKILLs the partition's leader
   * once ACKS_BEFORE_KILL records are acknowledged, lets the producer get ACKS_AFTER_FAILOVER
   * more acknowledged, stops it and reads the partition back.
   */
  async function produceThroughFailover(
    client: string,
    spawnProducer: (bootstrap: string, topic: string) => Promise<ChildProcess>,
  ): Promise<void> {
    cluster = await startCluster({ nodes: 3, overrides: FAST_FAILOVER });
    const kafka = new Kafka({ clientId: `${client}-check`, brokers: liveBootstrap(cluster), logLevel: logLevel.NOTHING, retry: RETRY });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topic = `failover-${client}`;
      await createTopic(admin, cluster, topic);
      const before = await leaderOf(admin, topic);
      assert.deepEqual(before.isr, [1, 2, 3], 'three replicas in sync before the kill');

      const p = new ProducerProcess(await spawnProducer(cluster.bootstrap, topic));
      producer = p;
      await eventually(
        `${ACKS_BEFORE_KILL} acknowledgements before the kill (${p.describe()})`,
        () => p.acks.length >= ACKS_BEFORE_KILL,
        60_000,
      );
      const victim = cluster.nodes.find((n) => n.nodeId === before.leader)!;
      const killedAtMs = Date.now();
      const ackedAtKill = p.acks.length;
      await victim.kill('SIGKILL');
      await eventually(
        `${ACKS_AFTER_FAILOVER} acknowledgements after the failover (${p.describe()})`,
        () => p.acks.length >= ackedAtKill + ACKS_AFTER_FAILOVER,
        90_000,
      );
      const resumedAtMs = p.ackedAtMs.find((t) => t > killedAtMs + 1) ?? Number.NaN;
      console.log(
        `      ${client}: ${ackedAtKill} acknowledged before the kill of node ${victim.nodeId}; first acknowledgement after it ${resumedAtMs - killedAtMs} ms later`,
      );

      assert.equal(await p.finish(120_000), 0, `the producer exits cleanly (${p.describe()})`);
      assert.deepEqual(p.errors, [], 'no record failed');
      assert.equal(p.acks.length, p.sent, `every record sent was acknowledged (${p.describe()})`);

      const after = await leaderOf(admin, topic);
      assert.notEqual(after.leader, victim.nodeId, 'a surviving replica leads');
      assert.ok(!after.isr.includes(victim.nodeId), 'the dead broker left the ISR');

      const byOffset = new Map<number, number>();
      for (const ack of p.acks) {
        assert.equal(ack.partition, 0);
        assert.ok(!byOffset.has(ack.offset), `offset ${ack.offset} acknowledged once (records ${byOffset.get(ack.offset)} and ${ack.seq})`);
        byOffset.set(ack.offset, ack.seq);
      }
      const read = await readAll(kafka, admin, topic);
      assert.equal(read.size, p.acks.length, 'the partition holds exactly the acknowledged records: none lost, none duplicated');
      for (const ack of p.acks)
        assert.equal(read.get(ack.offset), `v${ack.seq}`, `record ${ack.seq} at its acknowledged offset ${ack.offset}`);
      // One partition, idempotent: the log keeps the order of sends.
      for (const ack of p.acks) assert.equal(ack.offset, ack.seq, `record ${ack.seq} in the order it was sent`);
    } finally {
      await admin.disconnect();
    }
  }

  it('librdkafka (confluent-kafka-python, enable.idempotence, acks=all) loses and duplicates no acknowledged record', async function () {
    if (!pythonHasConfluentKafka())
      missingTool(this, `${PYTHON} module confluent_kafka`, 'apt-get install python3-confluent-kafka: scripts/install-test-clients.sh');
    await produceThroughFailover('librdkafka', async (bootstrap, topic) =>
      spawn(PYTHON, ['-B', join(REPO, 'test/helpers/python-failover-producer.py'), bootstrap, topic, '0', String(PRODUCE_INTERVAL_MS)], {
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
  });

  it("Kafka's Java producer (idempotent and acks=all by default) loses and duplicates no acknowledged record", async function () {
    const why = javaUnavailable();
    if (why !== null) missingTool(this, `the Java client (${why})`, 'scripts/install-test-clients.sh');
    const classpath = await javaClasspath('FailoverProducer');
    await produceThroughFailover('java', async (bootstrap, topic) =>
      spawn('java', [...JVM_OPTIONS, '-cp', classpath, 'FailoverProducer', bootstrap, topic, '0', String(PRODUCE_INTERVAL_MS)], {
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
  });
});
