import assert from 'node:assert/strict';
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers, type Message, type MessagesStream } from '@platformatic/kafka';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { eventually } from '../../helpers/wait.ts';

// @platformatic/kafka's consumer group (flexible versions only: JoinGroup v6+, LeaveGroup
// v4+, its own assigner, per-record commits) against the real broker process.

const TOPIC = 'pt-group-events';
const PARTITIONS = 4;
const GROUP = 'pt-group';

interface Member {
  consumer: Consumer<string, string, string, string>;
  stream: MessagesStream<string, string, string, string>;
  /** `partition:offset` of every record delivered. */
  consumed: Set<string>;
  /** One per delivered record: whether its commit was acknowledged. */
  commits: Promise<boolean>[];
  /** Errors the stream emitted (a stream that errors is destroyed). */
  errors: Error[];
}

async function startMember(bootstrap: string, clientId: string): Promise<Member> {
  const consumer = new Consumer({
    clientId,
    groupId: GROUP,
    bootstrapBrokers: [bootstrap],
    deserializers: stringDeserializers,
    sessionTimeout: 6000,
    heartbeatInterval: 500,
    rebalanceTimeout: 10_000,
    maxWaitTime: 200,
    retries: 5,
  });
  const stream = await consumer.consume({ topics: [TOPIC], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
  const member: Member = { consumer, stream, consumed: new Set(), commits: [], errors: [] };
  stream.on('data', (message: Message<string, string, string, string>) => {
    member.consumed.add(`${message.partition}:${message.offset}`);
    member.commits.push(
      Promise.resolve(message.commit()).then(
        () => true,
        () => false,
      ),
    );
  });
  stream.on('error', (err: Error) => member.errors.push(err));
  return member;
}

/** Stops consuming, then leaves the group (LeaveGroup) and closes the connections. */
async function stopMember(member: Member): Promise<void> {
  await member.stream.close();
  await member.consumer.close();
}

function assigned(member: Member): number[] {
  const assignment = member.consumer.assignments?.find((a) => a.topic === TOPIC);
  return [...(assignment?.partitions ?? [])].sort((a, b) => a - b);
}

async function produce(producer: Producer<string, string, string, string>, perPartition: number, tag: string): Promise<Set<string>> {
  const messages = [];
  for (let partition = 0; partition < PARTITIONS; partition++) {
    for (let i = 0; i < perPartition; i++)
      messages.push({ topic: TOPIC, partition, key: `${tag}-${partition}-${i}`, value: `${tag}-${i}` });
  }
  await producer.send({ messages, acks: -1 });
  return new Set(messages.map((m) => m.key));
}

describe('consumer groups through @platformatic/kafka', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;
  let producer: Producer<string, string, string, string>;
  const members: Member[] = [];

  before(async () => {
    broker = await spawnBroker({ overrides: { 'group.initial.rebalance.delay.ms': 0 } });
    const admin = new Admin({ clientId: 'pt-group-admin', bootstrapBrokers: [broker.bootstrap], retries: 2 });
    try {
      await admin.createTopics({ topics: [TOPIC], partitions: PARTITIONS, replicas: 1 });
    } finally {
      await admin.close();
    }
    producer = new Producer({ clientId: 'pt-group-producer', bootstrapBrokers: [broker.bootstrap], serializers: stringSerializers });
  });

  after(async () => {
    for (const m of members) await stopMember(m).catch(() => undefined);
    await producer?.close();
    await broker?.cleanup();
  });

  it('two members divide the partitions, consume everything, commit, and a restarted member resumes', async () => {
    const first = await produce(producer, 10, 'first');
    const a = await startMember(broker.bootstrap, 'pt-a');
    members.push(a);
    await eventually('the first member to own every partition', () => assigned(a).length === PARTITIONS);
    const b = await startMember(broker.bootstrap, 'pt-b');
    members.push(b);

    await eventually(
      'the two members to split the partitions 2/2',
      () => assigned(a).length === 2 && assigned(b).length === 2 && a.consumer.generationId === b.consumer.generationId,
    );
    assert.deepEqual([...assigned(a), ...assigned(b)].sort(), [0, 1, 2, 3]);

    const all = (): Set<string> => new Set([...a.consumed, ...b.consumed]);
    await eventually('every record of the first batch', () => all().size === first.size);
    for (let p = 0; p < PARTITIONS; p++) {
      for (let o = 0; o < 10; o++) assert.ok(all().has(`${p}:${o}`), `record ${p}:${o} consumed`);
    }
    // Commits of records consumed before the rebalance may be refused (stale generation);
    // what counts is what the group holds once every member has committed what it read.
    await Promise.all([...a.commits, ...b.commits]);
    assert.deepEqual([...a.errors, ...b.errors], []);
    await eventually('committed offsets at the end of every partition', async () => {
      const committed = await a.consumer.listCommittedOffsets({ topics: [{ topic: TOPIC, partitions: [0, 1, 2, 3] }] });
      return committed.get(TOPIC)!.every((offset) => offset === 10n);
    });

    for (const m of members.splice(0)) await stopMember(m);
    const second = await produce(producer, 5, 'second');

    const c = await startMember(broker.bootstrap, 'pt-c');
    members.push(c);
    await eventually('the restarted member to own every partition', () => assigned(c).length === PARTITIONS);
    await eventually('the records produced while the group was away', () => c.consumed.size === second.size);
    // Resumes from the committed offsets: nothing from before offset 10 is read again.
    assert.deepEqual([...c.consumed].sort(), [0, 1, 2, 3].flatMap((p) => [10, 11, 12, 13, 14].map((o) => `${p}:${o}`)).sort());
    assert.deepEqual(
      await Promise.all(c.commits),
      c.commits.map(() => true),
    );
    assert.deepEqual(c.errors, []);
    const committed = await c.consumer.listCommittedOffsets({ topics: [{ topic: TOPIC, partitions: [0, 1, 2, 3] }] });
    assert.deepEqual(committed.get(TOPIC), [15n, 15n, 15n, 15n]);
  });
});
