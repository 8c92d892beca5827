import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { eventually } from '../../helpers/wait.ts';

const TOPIC = 'orders';
const PARTITIONS = 6;
const GROUP = 'billing';

interface GroupMember {
  assignment: number[];
  consumed: Set<string>;
  stop(): Promise<void>;
}

const consumed = new Set<string>();
/** Every member started, stopped in `after` whatever a failed test left running. */
const started: GroupMember[] = [];

function inProcessMember(kafka: Kafka, groupId: string): GroupMember & { consumer: Consumer; start(): Promise<void> } {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000 });
  const member = {
    consumer,
    assignment: [] as number[],
    consumed: new Set<string>(),
    async start() {
      consumer.on(consumer.events.GROUP_JOIN, (e) => {
        member.assignment = e.payload.memberAssignment[TOPIC] ?? [];
      });
      await consumer.connect();
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ partition, message }) => {
          member.consumed.add(`${partition}:${message.offset}`);
          if (groupId === GROUP) consumed.add(`${partition}:${message.offset}`);
        },
      });
    },
    stop: () => consumer.disconnect(),
  };
  started.push(member);
  return member;
}

function childMember(bootstrap: string): GroupMember & { child: ChildProcess } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/group-consumer.ts', bootstrap, GROUP, TOPIC], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const member = {
    child,
    assignment: [] as number[],
    consumed: new Set<string>(),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  started.push(member);
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const event = JSON.parse(line) as { event: string; partitions?: number[]; partition?: number; offset?: string };
    if (event.event === 'assigned') member.assignment = event.partitions!;
    else {
      member.consumed.add(`${event.partition}:${event.offset}`);
      consumed.add(`${event.partition}:${event.offset}`);
    }
  });
  return member;
}

async function produce(kafka: Kafka, count: number, tag: string): Promise<number> {
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: TOPIC,
    messages: Array.from({ length: count }, (_, i) => ({ key: `${tag}-${i}`, value: `value-${tag}-${i}` })),
  });
  await producer.disconnect();
  return count;
}

async function endOffsets(kafka: Kafka, topic = TOPIC): Promise<Map<number, number>> {
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
}

describe('consumer groups with kafkajs against the broker', function () {
  this.timeout(180_000);
  let broker: BrokerProcess;
  let kafka: Kafka;

  before(async () => {
    broker = await spawnBroker({ overrides: { 'group.initial.rebalance.delay.ms': 0, 'offsets.topic.num.partitions': 5 } });
    kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
    await admin.disconnect();
  });

  after(async () => {
    for (const m of started) await m.stop().catch(() => undefined);
    await broker?.cleanup();
  });

  it('divides partitions, rebalances on leave and on a killed member, resumes after a restart, and keeps groups independent', async () => {
    let produced = await produce(kafka, 600, 'a');

    const a = inProcessMember(kafka, GROUP);
    const b = inProcessMember(kafka, GROUP);
    const c = childMember(broker.bootstrap);
    await a.start();
    await b.start();
    const members: GroupMember[] = [a, b, c];
    await eventually(
      '3 members with 2 partitions each',
      () => members.every((m) => m.assignment.length === 2) && new Set(members.flatMap((m) => m.assignment)).size === PARTITIONS,
    );
    await eventually('every record consumed', () => consumed.size >= produced);

    const admin = kafka.admin();
    await admin.connect();
    const described = await admin.describeGroups([GROUP]);
    assert.equal(described.groups[0]!.state, 'Stable');
    assert.equal(described.groups[0]!.members.length, 3);

    await a.stop();
    c.child.kill('SIGKILL');
    await eventually('the survivor owns every partition', () => b.assignment.length === PARTITIONS, 40_000);
    produced += await produce(kafka, 300, 'b');
    await eventually('records produced after the rebalance consumed', () => consumed.size >= produced);
    const expected = await endOffsets(kafka);
    for (const [partition, end] of expected) {
      for (let offset = 0; offset < end; offset++) assert.ok(consumed.has(`${partition}:${offset}`), `${partition}:${offset} consumed`);
    }
    await b.stop();
    const committed = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] });
    for (const p of committed[0]!.partitions)
      assert.equal(Number(p.offset), expected.get(p.partition), `partition ${p.partition} committed at its end`);
    await admin.disconnect();

    assert.equal(await broker.stop(), 0);
    broker = await broker.restart();
    kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const before = new Map(expected);
    produced += await produce(kafka, 60, 'c');
    const d = inProcessMember(kafka, GROUP);
    await d.start();
    await eventually('the restarted group consumes the new records', () => d.consumed.size >= 60);
    for (const key of d.consumed) {
      const [partition, offset] = key.split(':').map(Number) as [number, number];
      assert.ok(offset >= before.get(partition)!, `record ${key} was committed before the restart and must not be redelivered`);
    }
    await d.stop();

    const other = inProcessMember(kafka, 'audit');
    await other.start();
    await eventually('a second group reads everything', () => other.consumed.size >= produced);
    await other.stop();
  });
});
