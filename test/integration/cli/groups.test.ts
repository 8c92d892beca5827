import assert from 'node:assert/strict';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { Writer } from '../../../protocol/primitives.ts';
import { encodeConsumerProtocolAssignment } from '../../../protocol/messages/consumer-protocol-assignment.ts';
import { formatDuration, runGroupsCommand } from '../../../src/cli/groups.ts';
import { decodeAssignment } from '../../../src/client/groups.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';

function groups(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runGroupsCommand(['groups', ...argv], io));
}

/** The data row of `describe` for one partition, split into its columns. */
function partitionRow(stdout: string, topic: string, partition: number): string[] {
  const lines = stdout.split('\n');
  const start = lines.findIndex((l) => l.startsWith('GROUP') && l.includes('LAG-TIME'));
  const row = lines
    .slice(start + 1)
    .map((l) => l.split(/\s+/))
    .find((c) => c[1] === topic && c[2] === String(partition));
  assert.ok(row, `no row for ${topic}-${partition} in\n${stdout}`);
  return row;
}

function parseDurationMs(text: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  for (const [, n, u] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) total += Number(n) * units[u!]!;
  return total;
}

describe('sluice groups: helpers', () => {
  it('decodes consumer-protocol assignments of any version, newer ones as our newest', () => {
    for (const version of [0, 1, 3, 7]) {
      const w = new Writer();
      w.int16(version);
      encodeConsumerProtocolAssignment(
        w,
        {
          assignedPartitions: [
            { topic: 'b', partitions: [1, 0] },
            { topic: 'a', partitions: [2] },
          ],
          userData: null,
        },
        Math.min(version, 3),
      );
      assert.deepEqual(decodeAssignment(w.toBuffer()), [
        { topic: 'a', partition: 2 },
        { topic: 'b', partition: 0 },
        { topic: 'b', partition: 1 },
      ]);
    }
    assert.deepEqual(decodeAssignment(Buffer.alloc(0)), []);
  });

  it('formats lag times with their two largest units', () => {
    assert.equal(formatDuration(250), '250ms');
    assert.equal(formatDuration(4_200), '4.2s');
    assert.equal(formatDuration(42_000), '42s');
    assert.equal(formatDuration(185_000), '3m05s');
    assert.equal(formatDuration(7_620_000), '2h07m');
    assert.equal(formatDuration(3 * 86_400_000 + 4 * 3_600_000), '3d04h');
  });

  it('answers usage errors with exit code 2', async () => {
    assert.equal((await groups()).code, 2);
    assert.equal((await groups('describe')).code, 2);
    assert.equal((await groups('frobnicate')).code, 2);
  });

  it('exits 1 with a message when no broker answers', async () => {
    const r = await groups('list', '--bootstrap-server', '127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: /);
  });
});

/**
 * A group whose one kafkajs member consumed and committed part of a 3-partition topic, then
 * paused while more records arrived:
 *   p0: 4 committed of 10, the first unconsumed record 90 s old  -> lag 6, lag time ~90 s
 *   p1: 2 committed of 2                                           -> lag 0, lag time '-'
 *   p2: nothing committed, 3 records                              -> '-' everywhere
 */
function lagScenario(target: () => string): void {
  const topic = 'lag-topic';
  const groupId = 'lag-group';
  const oldAgeMs = 90_000;
  let kafka: Kafka;
  let consumer: Consumer;

  before(async function () {
    this.timeout(90_000);
    kafka = new Kafka({ clientId: 'lag-test', brokers: [target()], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    const now = Date.now();
    const send = (partition: number, n: number, timestamp: number): Promise<unknown> =>
      producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: n }, (_, i) => ({ partition, value: `v${i}`, timestamp: String(timestamp + i) })),
      });
    await send(0, 4, now);
    await send(1, 2, now);

    const committedUpTo: Record<number, number> = { 0: 4, 1: 2 };
    let consumed = 0;
    consumer = kafka.consumer({ groupId, sessionTimeout: 30_000, heartbeatInterval: 1000 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const done = new Promise<void>((resolveDone) => {
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const next = Number(message.offset) + 1;
          // Commit only the first phase: later records stay unconsumed even if fetched.
          if (next > (committedUpTo[partition] ?? 0)) return;
          await consumer.commitOffsets([{ topic, partition, offset: String(next) }]);
          if (++consumed === 6) resolveDone();
        },
      });
    });
    await done;
    consumer.pause([{ topic }]);
    await send(0, 6, now - oldAgeMs);
    await send(2, 3, now - 30_000);
    await producer.disconnect();
  });

  after(async () => {
    await consumer?.disconnect().catch(() => undefined);
  });

  it('describe shows committed offset, log end, lag and the age of the oldest unconsumed record', async () => {
    const startedMs = Date.now();
    const r = await groups('describe', groupId, '--bootstrap-server', target());
    assert.equal(r.code, 0, r.stderr);
    const p0 = partitionRow(r.stdout, topic, 0);
    assert.deepEqual(p0.slice(0, 6), [groupId, topic, '0', '4', '10', '6']);
    const lagMs = parseDurationMs(p0[6]!);
    // The record's timestamp is now - 90 s at produce time; the scenario took less than a minute since.
    assert.ok(lagMs >= oldAgeMs - 1000 && lagMs <= oldAgeMs + (Date.now() - startedMs) + 60_000, `lag time ${p0[6]}`);
    assert.deepEqual(partitionRow(r.stdout, topic, 1).slice(0, 7), [groupId, topic, '1', '2', '2', '0', '-']);
    assert.deepEqual(partitionRow(r.stdout, topic, 2).slice(0, 7), [groupId, topic, '2', '-', '3', '-', '-']);
    // Every partition is assigned to the one member, whose client id is kafkajs's.
    for (const p of [0, 1, 2]) assert.equal(partitionRow(r.stdout, topic, p)[9], 'lag-test');
    assert.match(r.stdout, /ASSIGNMENT\n.*lag-test\s+3\s+lag-topic\(0,1,2\)/);
    assert.match(r.stdout, /Stable\s+1\n/);
  });

  it('list shows the group with its state, protocol type and member count', async () => {
    const r = await groups('list', '--bootstrap-server', target());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^GROUP\s+STATE\s+PROTOCOL-TYPE\s+MEMBERS\n/);
    assert.match(r.stdout, /\nlag-group\s+Stable\s+consumer\s+1\n/);
  });

  it("describe of an unknown group exits 1 as Kafka's tool words it", async () => {
    const r = await groups('describe', 'no-such-group', '--bootstrap-server', target());
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Consumer group 'no-such-group' does not exist\./);
  });

  it('after the member leaves, the group is Empty and keeps its offsets', async function () {
    this.timeout(30_000);
    await consumer.disconnect();
    const r = await groups('describe', groupId, '--bootstrap-server', target());
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Consumer group 'lag-group' has no active members\./);
    assert.deepEqual(partitionRow(r.stdout, topic, 0).slice(0, 6), [groupId, topic, '0', '4', '10', '6']);
    assert.equal(partitionRow(r.stdout, topic, 0)[7], '-');
    // Without a member nobody is assigned p2 and nothing was committed there: it is not shown.
    assert.doesNotMatch(r.stdout, /lag-topic\s+2\s/);
  });
}

againstEachBroker('sluice groups', lagScenario);
