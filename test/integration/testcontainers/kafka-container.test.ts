import assert from 'node:assert/strict';
import { KafkaContainer, type StartedKafkaContainer } from '@testcontainers/kafka';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import {
  TEST_CONTAINER_LABELS,
  acquireContainerEngine,
  containerCli,
  sluiceImage,
  type ContainerEngine,
} from '../../helpers/container-engine.ts';

// The switch a Testcontainers user makes: Confluent's image name for Sluice's, in the
// unmodified KafkaContainer of @testcontainers/kafka. Clients reach the broker where they
// reach cp-kafka: getHost():getMappedPort(9093).

/** What KafkaContainer passes as CLUSTER_ID (@testcontainers/kafka's DEFAULT_CLUSTER_ID). */
const TESTCONTAINERS_CLUSTER_ID = '4L6g3nShT-eMCtK--X86sw';
const STEP_TIMEOUT_MS = 30_000;

/** Bounded: a step that hangs fails with what it was doing. */
async function within<T>(what: string, promise: Promise<T>, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms: ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until `check` holds, or fails after `timeoutMs` saying what it waited for. */
async function until(what: string, check: () => boolean, timeoutMs = STEP_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('@testcontainers/kafka KafkaContainer on the Sluice image', function () {
  this.timeout(20 * 60_000);
  let engine: ContainerEngine | undefined;
  let image: string;
  let container: StartedKafkaContainer | undefined;
  let kafka: Kafka;

  before(async function () {
    engine = await acquireContainerEngine(this);
    image = await sluiceImage();
  });

  after(async function () {
    await container?.stop();
    await engine?.release();
  });

  it('starts as it starts cp-kafka; kafkajs produces and consumes through getHost():getMappedPort(9093)', async function () {
    this.timeout(5 * 60_000);
    const startedAt = performance.now();
    container = await new KafkaContainer(image).withLabels(TEST_CONTAINER_LABELS).start();
    const runningAt = performance.now();
    kafka = new Kafka({
      clientId: 'testcontainers-test',
      brokers: [`${container.getHost()}:${container.getMappedPort(9093)}`],
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer();
    await within('producer.connect()', producer.connect());
    const values = Array.from({ length: 10 }, (_, i) => `order-${i}`);
    const [ack] = await within(
      'the first produce',
      producer.send({ topic: 'orders', acks: -1, messages: values.map((value, i) => ({ key: `k${i}`, value })) }),
    );
    const producedAt = performance.now();
    await producer.disconnect();
    assert.equal(ack!.errorCode, 0);
    assert.equal(ack!.baseOffset, '0');

    const sizeBytes = Number((await containerCli(['image', 'inspect', '--format', '{{.Size}}', image])).trim());
    console.log(
      `      KafkaContainer(${image}): start() ${((runningAt - startedAt) / 1000).toFixed(2)} s, ` +
        `start() to first acknowledged produce ${((producedAt - startedAt) / 1000).toFixed(2)} s; image ${(sizeBytes / 1e6).toFixed(0)} MB.\n` +
        '      For comparison, Confluent cp-kafka 7.5.0 as measured in KIP-975 ' +
        '(https://cwiki.apache.org/confluence/display/KAFKA/KIP-975%3A+Docker+Image+for+Apache+Kafka, POC table): ' +
        'startup total time 3.341 s, 876.4 MB uncompressed. That is their machine and their measure of start-up ' +
        '(no Testcontainers, no produce); cp-kafka is not run here (no registry), and @testcontainers/kafka documents no start time.',
    );

    const consumer = kafka.consumer({ groupId: 'orders-reader' });
    const seen: string[] = [];
    try {
      await within('consumer.connect()', consumer.connect());
      await consumer.subscribe({ topic: 'orders', fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString());
        },
      });
      await until(`${values.length} records of orders (got ${seen.length})`, () => seen.length >= values.length);
    } finally {
      await consumer.disconnect();
    }
    assert.deepEqual(seen, values);

    // CLUSTER_ID reached the storage as `kafka-storage format` would have written it.
    const admin = kafka.admin();
    await within('admin.connect()', admin.connect());
    try {
      assert.equal((await admin.describeCluster()).clusterId, TESTCONTAINERS_CLUSTER_ID);
    } finally {
      await admin.disconnect();
    }
  });

  it('a consumer group of two divides the partitions and commits its offsets', async function () {
    assert.ok(container, 'the container did not start');
    const topic = 'divided';
    const partitions = 4;
    const perPartition = 5;
    const admin = kafka.admin();
    await within('admin.connect()', admin.connect());
    const members: Consumer[] = [];
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
      const producer = kafka.producer();
      await within('producer.connect()', producer.connect());
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: partitions * perPartition }, (_, i) => ({ partition: i % partitions, value: `v${i}` })),
      });
      await producer.disconnect();

      const groupId = 'dividers';
      const assigned = new Map<string, number[]>();
      const consumedBy = new Map<string, Set<string>>();
      for (const name of ['a', 'b']) {
        // Short fetch waits: a member learns of a rebalance between fetches.
        const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 500 });
        members.push(consumer);
        consumedBy.set(name, new Set());
        consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
          assigned.set(name, payload.memberAssignment[topic] ?? []);
        });
        await within(`consumer ${name} connect()`, consumer.connect());
        await consumer.subscribe({ topic, fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ partition, message }) => {
            consumedBy.get(name)!.add(`${partition}:${message.offset}`);
          },
        });
      }
      const split = () => [...(assigned.get('a') ?? []), ...(assigned.get('b') ?? [])].sort();
      // The second join rebalances the group: wait until both members hold a share of it.
      await until(
        `both members to share the ${partitions} partitions (a: ${assigned.get('a')}, b: ${assigned.get('b')})`,
        () => (assigned.get('a')?.length ?? 0) > 0 && (assigned.get('b')?.length ?? 0) > 0 && split().join() === '0,1,2,3',
      );
      const consumed = () => new Set([...consumedBy.get('a')!, ...consumedBy.get('b')!]).size;
      await until(`all ${partitions * perPartition} records consumed (got ${consumed()})`, () => consumed() === partitions * perPartition);
      const description = await admin.describeGroups([groupId]);
      assert.equal(description.groups[0]!.state, 'Stable');
      assert.equal(description.groups[0]!.members.length, 2);
      // kafkajs commits what it consumed when a member leaves.
      for (const consumer of members.splice(0)) await consumer.disconnect();

      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      assert.deepEqual(
        committed!.partitions.map((p) => [p.partition, p.offset]).sort(),
        Array.from({ length: partitions }, (_, p) => [p, String(perPartition)]),
      );
    } finally {
      for (const consumer of members) await consumer.disconnect();
      await admin.disconnect();
    }
  });
});
