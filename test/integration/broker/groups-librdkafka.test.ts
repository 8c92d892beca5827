import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeDescribeGroupsRequest, type DescribeGroupsResponse } from '../../../protocol/messages/describe-groups.ts';
import { makeOffsetFetchRequest, type OffsetFetchResponse } from '../../../protocol/messages/offset-fetch.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { eventually as eventuallyWithin } from '../../helpers/wait.ts';

// Consumer groups of librdkafka 2.0.2 (through Debian's confluent-kafka-python) with the
// cooperative-sticky assignor (incremental rebalances), and of kafka-python 2.0.2 with its
// default range/roundrobin assignors (old versions: JoinGroup <= v5, OffsetCommit v2...).
// Each member is its own Python process (test/helpers/python-group-consumer.py).

const PYTHON = '/usr/bin/python3';
const HELPER = 'test/helpers/python-group-consumer.py';
const PARTITIONS = 6;

/**
 * Whether `module` imports under Debian's Python. A missing client is a loud skip locally and
 * a failure under CI, where scripts/install-test-clients.sh must have installed it.
 */
function pythonHas(module: string): boolean {
  if (spawnSync(PYTHON, ['-c', `import ${module}`], { stdio: 'ignore' }).status === 0) return true;
  const why = `${PYTHON} cannot import ${module} (apt-get install -y python3-confluent-kafka python3-kafka)`;
  if (process.env.CI === 'true') throw new Error(why);
  console.error(`\n    !!!!! SKIP: ${why} !!!!!\n`);
  return false;
}

// Each member is a Python process of its own, slower to start and rebalance than in-process clients.
const eventually = (what: string, check: () => boolean | Promise<boolean>): Promise<void> => eventuallyWithin(what, check, 40_000);

interface Member {
  readonly child: ChildProcess;
  /** The member's whole assignment after its last rebalance callback. */
  assignment: number[];
  /** Partitions taken away, one entry per revocation. */
  revocations: number[][];
  /** `partition:offset` of every record delivered. */
  consumed: Set<string>;
  errors: string[];
  closed: boolean;
  /** SIGTERM: final commit and LeaveGroup, then exit. */
  stop(): Promise<void>;
}

function startMember(client: 'confluent' | 'kafka-python', bootstrap: string, group: string, topic: string, strategy?: string): Member {
  const args = [HELPER, client, bootstrap, group, topic, ...(strategy === undefined ? [] : [strategy])];
  const child = spawn(PYTHON, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const member: Member = {
    child,
    assignment: [],
    revocations: [],
    consumed: new Set(),
    errors: [],
    closed: false,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      if (!member.closed) throw new Error(`${client} member did not close cleanly:\n${stderr}`);
    },
  };
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const event = JSON.parse(line) as {
      event: string;
      partitions?: number[];
      assignment?: number[];
      partition?: number;
      offset?: number;
      error?: string;
    };
    if (event.event === 'assigned') member.assignment = event.assignment!;
    else if (event.event === 'revoked') {
      member.assignment = event.assignment!;
      member.revocations.push(event.partitions!);
    } else if (event.event === 'record') member.consumed.add(`${event.partition}:${event.offset}`);
    else if (event.event === 'error') member.errors.push(event.error!);
    else if (event.event === 'closed') member.closed = true;
  });
  return member;
}

/** Whether the members' assignments are disjoint, cover every partition and have sizes `sizes`. */
function divided(members: Member[], sizes: number[]): boolean {
  const all = members.flatMap((m) => m.assignment).sort((a, b) => a - b);
  const expected = Array.from({ length: PARTITIONS }, (_, i) => i);
  return (
    JSON.stringify(all) === JSON.stringify(expected) &&
    JSON.stringify(members.map((m) => m.assignment.length).sort()) === JSON.stringify([...sizes].sort())
  );
}

function union(members: Member[]): Set<string> {
  return new Set(members.flatMap((m) => [...m.consumed]));
}

/** Every `partition:offset` for offsets [from, to) of every partition. */
function offsets(from: number, to: number): string[] {
  const out: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) for (let o = from; o < to; o++) out.push(`${p}:${o}`);
  return out;
}

describe('consumer groups through librdkafka and kafka-python', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;
  let kafka: Kafka;
  let conn: KafkaConnection;
  const members: Member[] = [];

  before(async () => {
    broker = await spawnBroker({ overrides: { 'group.initial.rebalance.delay.ms': 0 } });
    kafka = new Kafka({ clientId: 'groups-librdkafka', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    conn = await KafkaConnection.connect(broker.host, broker.port);
  });

  afterEach(() => {
    for (const m of members.splice(0)) m.child.kill('SIGKILL');
  });

  after(async () => {
    conn?.close();
    await broker?.cleanup();
  });

  async function createTopicWithRecords(topic: string, perPartition: number): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true });
    await admin.disconnect();
    await produce(topic, 0, perPartition);
  }

  async function produce(topic: string, from: number, to: number): Promise<void> {
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: PARTITIONS }, (_, p) =>
        Array.from({ length: to - from }, (_, i) => ({ partition: p, value: `${p}-${from + i}` })),
      ).flat(),
    });
    await producer.disconnect();
  }

  async function committed(group: string, topic: string): Promise<bigint[]> {
    const res = await conn.send<OffsetFetchResponse>(
      ApiKey.OffsetFetch,
      makeOffsetFetchRequest({
        groupId: group,
        topics: [{ name: topic, partitionIndexes: Array.from({ length: PARTITIONS }, (_, i) => i) }],
      }),
      5,
    );
    return res.topics[0]!.partitions.map((p) => p.committedOffset);
  }

  async function described(group: string): Promise<{ state: string; protocol: string; members: number }> {
    const res = await conn.send<DescribeGroupsResponse>(ApiKey.DescribeGroups, makeDescribeGroupsRequest({ groups: [group] }), 5);
    const g = res.groups[0]!;
    return { state: g.groupState, protocol: g.protocolData, members: g.members.length };
  }

  /**
   * Stops the members one at a time, each once the group has settled after the last one left:
   * a member closing while the others rejoin may find its final commit refused with
   * REBALANCE_IN_PROGRESS (as Kafka refuses it), and then its last records would be read again.
   */
  async function stopInTurn(group: string, stopping: Member[]): Promise<void> {
    for (const [i, m] of stopping.entries()) {
      await m.stop();
      const left = stopping.length - i - 1;
      await eventually(`the group to settle with ${left} members`, async () => {
        const g = await described(group);
        return g.members === left && g.state === (left === 0 ? 'Empty' : 'Stable');
      });
    }
  }

  it('librdkafka cooperative-sticky: 2 then 3 members divide 6 partitions incrementally and consume everything', async function () {
    if (!pythonHas('confluent_kafka')) this.skip();
    const topic = 'rdk-coop';
    const group = 'rdk-coop-group';
    await createTopicWithRecords(topic, 10);
    const start = (): Member => {
      const m = startMember('confluent', broker.bootstrap, group, topic, 'cooperative-sticky');
      members.push(m);
      return m;
    };

    const [a, b] = [start(), start()];
    await eventually('2 members to own 3 partitions each', () => divided([a, b], [3, 3]));
    await eventually('every record of the first 10 per partition', () => union([a, b]).size === PARTITIONS * 10);
    assert.deepEqual(await described(group), { state: 'Stable', protocol: 'cooperative-sticky', members: 2 });

    const heldBefore = [a.assignment.length, b.assignment.length];
    const revocationsBefore = [a.revocations.length, b.revocations.length];
    const c = start();
    await eventually('3 members to own 2 partitions each', () => divided([a, b, c], [2, 2, 2]));
    // Incremental: each revocation took only some of a member's partitions (an eager protocol
    // revokes a member's whole assignment at every rebalance), and the newcomer's partitions
    // are ones the others gave up.
    const revokedNow = [a, b].map((m, i) => m.revocations.slice(revocationsBefore[i]));
    assert.ok(revokedNow.flat().length > 0, 'the newcomer took partitions from the others');
    revokedNow.forEach((events, i) => {
      for (const revoked of events)
        assert.ok(revoked.length < heldBefore[i]!, `member ${i} revoked ${JSON.stringify(revoked)} of ${heldBefore[i]}`);
    });
    const given = new Set(revokedNow.flat(2));
    assert.ok(
      c.assignment.every((p) => given.has(p)),
      `newcomer ${JSON.stringify(c.assignment)} from ${JSON.stringify([...given])}`,
    );

    await produce(topic, 10, 20);
    await eventually('every record across the group', () => union([a, b, c]).size === PARTITIONS * 20);
    assert.deepEqual([...union([a, b, c])].sort(), offsets(0, 20).sort());
    assert.deepEqual(a.errors.concat(b.errors, c.errors), []);

    await stopInTurn(group, [a, b, c]);
    assert.deepEqual(await committed(group, topic), Array(PARTITIONS).fill(20n));
    assert.equal((await described(group)).state, 'Empty');
  });

  it('kafka-python default assignors: 2 members divide 6 partitions, commit, and a restarted member resumes', async function () {
    if (!pythonHas('kafka')) this.skip();
    const topic = 'kp-range';
    const group = 'kp-range-group';
    await createTopicWithRecords(topic, 10);
    const start = (): Member => {
      const m = startMember('kafka-python', broker.bootstrap, group, topic);
      members.push(m);
      return m;
    };

    const [a, b] = [start(), start()];
    await eventually('2 members to own 3 partitions each', () => divided([a, b], [3, 3]));
    await eventually('every record of the first 10 per partition', () => union([a, b]).size === PARTITIONS * 10);
    assert.deepEqual(await described(group), { state: 'Stable', protocol: 'range', members: 2 });
    assert.deepEqual([...union([a, b])].sort(), offsets(0, 10).sort());

    await stopInTurn(group, [a, b]);
    assert.deepEqual(await committed(group, topic), Array(PARTITIONS).fill(10n));

    await produce(topic, 10, 15);
    const c = start();
    await eventually('the restarted member to own every partition', () => c.assignment.length === PARTITIONS);
    await eventually('the records produced while the group was away', () => c.consumed.size === PARTITIONS * 5);
    assert.deepEqual([...c.consumed].sort(), offsets(10, 15).sort());
    await c.stop();
    assert.deepEqual(await committed(group, topic), Array(PARTITIONS).fill(15n));
  });
});
