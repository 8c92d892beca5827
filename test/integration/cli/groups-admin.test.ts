import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { runGroupsCommand } from '../../../src/cli/groups.ts';
import type { GroupDescription, GroupListing } from '../../../src/client/groups.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';

function groups(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runGroupsCommand(['groups', ...argv], io));
}

describe('sluice groups delete and reset-offsets: usage', () => {
  it('answers usage errors with exit code 2 and the usage', async () => {
    for (const argv of [
      ['delete'],
      ['list', '--group', 'g'],
      ['reset-offsets', '--topic', 't', '--to-earliest'],
      ['reset-offsets', '--group', 'g', '--to-earliest'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--all-topics', '--to-earliest'],
      ['reset-offsets', '--group', 'g', '--topic', 't'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--to-earliest', '--to-latest'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--to-offset', '-1'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--shift-by', 'two'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--to-datetime', 'yesterday'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--by-duration', '1h'],
      ['reset-offsets', '--group', 'g', '--topic', 't:x', '--to-earliest'],
      ['reset-offsets', '--group', 'g', '--topic', 't', '--to-earliest', '--dry-run', '--execute'],
      ['describe', 'g', '--output', 'yaml'],
    ]) {
      const r = await groups(...argv);
      assert.equal(r.code, 2, `groups ${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
  });

  it('exits 1 naming the address when no broker answers', async () => {
    const r = await groups(
      'reset-offsets',
      '--group',
      'g',
      '--all-topics',
      '--to-earliest',
      '--dry-run',
      '--bootstrap-server',
      '127.0.0.1:1',
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: cannot reach the cluster at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });
});

/**
 * A group that consumed and committed half of a 2-partition topic (5 of 10 records each), its
 * kafkajs member then gone: its offsets are reset, it is refused while a member is back, and
 * it is deleted.
 */
againstEachBroker('sluice groups reset-offsets and delete', (bootstrap) => {
  const topic = 'reset-topic';
  const groupId = 'reset-group';
  // Records are an hour old, one a second, so a datetime picks an exact offset.
  const baseMs = Date.now() - 3_600_000;
  let kafka: Kafka;
  const run = (...argv: string[]): Promise<CommandResult> => groups(...argv, '--bootstrap-server', bootstrap());
  const reset = (...argv: string[]): Promise<CommandResult> => run('reset-offsets', '--group', groupId, ...argv);

  /** Committed offset per partition, as `describe --output json` shows it. */
  async function committed(): Promise<number[]> {
    const r = await run('describe', groupId, '--output', 'json');
    assert.equal(r.code, 0, r.stderr);
    const d = JSON.parse(r.stdout) as GroupDescription;
    return d.partitions.filter((p) => p.topic === topic).map((p) => p.committedOffset);
  }

  before(async function () {
    this.timeout(90_000);
    kafka = new Kafka({ clientId: 'reset-test', brokers: [bootstrap()], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    for (const partition of [0, 1]) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: 10 }, (_, i) => ({ partition, value: `v${i}`, timestamp: String(baseMs + i * 1000) })),
      });
    }
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId, sessionTimeout: 30_000, heartbeatInterval: 1000 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let commits = 0;
    await new Promise<void>((resolveDone) => {
      void consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const next = Number(message.offset) + 1;
          if (next > 5) return;
          await consumer.commitOffsets([{ topic, partition, offset: String(next) }]);
          if (++commits === 10) resolveDone();
        },
      });
    });
    await consumer.disconnect();
  });

  it('without --execute prints the plan with a warning and commits nothing', async () => {
    const r = await reset('--topic', topic, '--to-earliest');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^WARN: No action will be performed as the --execute option is missing/);
    assert.deepEqual(
      r.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(/\s+/)),
      [
        ['GROUP', 'TOPIC', 'PARTITION', 'NEW-OFFSET'],
        [groupId, topic, '0', '0'],
        [groupId, topic, '1', '0'],
      ],
    );
    const dry = await reset('--topic', topic, '--to-latest', '--dry-run');
    assert.equal(dry.code, 0, dry.stderr);
    assert.equal(dry.stderr, '');
    assert.match(dry.stdout, /reset-topic\s+1\s+10\n$/);
    assert.deepEqual(await committed(), [5, 5]);
  });

  it('--execute --to-earliest over --all-topics moves every committed partition to the log start', async () => {
    const r = await reset('--all-topics', '--to-earliest', '--execute');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.deepEqual(await committed(), [0, 0]);
  });

  it('--to-offset and --shift-by clamp into the log; --topic T:P resets only that partition', async () => {
    assert.equal((await reset('--topic', topic, '--to-offset', '7', '--execute')).code, 0);
    assert.deepEqual(await committed(), [7, 7]);
    const shifted = await reset('--topic', topic, '--shift-by', '-2', '--execute', '--output', 'json');
    assert.equal(shifted.code, 0, shifted.stderr);
    assert.deepEqual(JSON.parse(shifted.stdout), {
      groupId,
      executed: true,
      offsets: [
        { topic, partition: 0, currentOffset: 7, newOffset: 5 },
        { topic, partition: 1, currentOffset: 7, newOffset: 5 },
      ],
    });
    assert.deepEqual(await committed(), [5, 5]);
    assert.equal((await reset('--topic', `${topic}:1`, '--shift-by', '100', '--execute')).code, 0);
    assert.deepEqual(await committed(), [5, 10]);
    assert.equal((await reset('--topic', `${topic}:0`, '--to-offset', '99', '--execute')).code, 0);
    assert.deepEqual(await committed(), [10, 10]);
    assert.equal((await reset('--topic', topic, '--shift-by', '-1000', '--execute')).code, 0);
    assert.deepEqual(await committed(), [0, 0]);
  });

  it('--to-datetime and --by-duration find the first record at or after the time, else the log end', async () => {
    const at4 = new Date(baseMs + 4000).toISOString();
    assert.equal((await reset('--topic', topic, '--to-datetime', at4, '--execute')).code, 0);
    assert.deepEqual(await committed(), [4, 4]);
    const between = new Date(baseMs + 6500).toISOString().replace('Z', '+00:00');
    assert.equal((await reset('--topic', topic, '--to-datetime', between, '--execute')).code, 0);
    assert.deepEqual(await committed(), [7, 7]);
    assert.equal((await reset('--topic', topic, '--by-duration', 'PT1M', '--execute')).code, 0);
    assert.deepEqual(await committed(), [10, 10]);
    assert.equal((await reset('--topic', topic, '--by-duration', 'P1DT0H', '--execute')).code, 0);
    assert.deepEqual(await committed(), [0, 0]);
  });

  it('plans for a group the cluster does not know yet, reporting progress on stderr every 1000 partitions', async function () {
    this.timeout(120_000);
    const many = 'reset-many';
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic: many, numPartitions: 1001, replicationFactor: 1 }], waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
    const r = await run('reset-offsets', '--group', 'reset-new-group', '--topic', many, '--to-latest', '--dry-run');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, 'Planned 1000 of 1001 partitions\nPlanned 1001 of 1001 partitions\n');
    const rows = r.stdout.trimEnd().split('\n');
    assert.equal(rows.length, 1002);
    assert.deepEqual(rows[1001]!.split(/\s+/), ['reset-new-group', many, '1000', '0']);
  });

  it('an unknown topic or partition exits 1 naming it', async () => {
    const r = await reset('--topic', 'no-such-topic', '--to-earliest', '--execute');
    assert.equal(r.code, 1);
    assert.equal(r.stderr, "Error: Topic 'no-such-topic' does not exist.\n");
    const p = await reset('--topic', `${topic}:7`, '--to-earliest', '--execute');
    assert.equal(p.code, 1);
    assert.match(p.stderr, /^Error: reset-topic-7: UNKNOWN_TOPIC_OR_PARTITION/);
  });

  it('while the group has a member, reset-offsets is refused as Kafka words it and delete names NON_EMPTY_GROUP', async function () {
    this.timeout(30_000);
    const member = kafka.consumer({ groupId, sessionTimeout: 30_000, heartbeatInterval: 1000 });
    const joined = new Promise<void>((resolveJoined) => member.on(member.events.GROUP_JOIN, () => resolveJoined()));
    await member.connect();
    try {
      await member.subscribe({ topic });
      void member.run({ autoCommit: false, eachMessage: async () => undefined });
      await joined;
      for (const mode of ['--dry-run', '--execute']) {
        const r = await reset('--topic', topic, '--to-latest', mode);
        assert.equal(r.code, 1);
        assert.equal(r.stdout, '');
        assert.equal(
          r.stderr,
          `Error: Assignments can only be reset if the group '${groupId}' is inactive, but the current state is Stable.\n`,
        );
      }
      assert.deepEqual(await committed(), [0, 0]);
      const deleted = await run('delete', groupId);
      assert.equal(deleted.code, 1);
      assert.equal(deleted.stdout, '');
      assert.match(deleted.stderr, /^Error: Group 'reset-group' could not be deleted due to: NON_EMPTY_GROUP \(/);
    } finally {
      await member.disconnect();
    }
  });

  it('list and describe print JSON with --output json', async () => {
    const listed = await run('list', '--output', 'json');
    assert.equal(listed.code, 0, listed.stderr);
    const g = (JSON.parse(listed.stdout) as GroupListing[]).find((x) => x.groupId === groupId);
    assert.deepEqual([g?.state, g?.members], ['Empty', 0]);
    const described = await run('describe', groupId, '--output', 'json');
    const d = JSON.parse(described.stdout) as GroupDescription;
    assert.equal(d.state, 'Empty');
    assert.deepEqual(
      d.partitions.map((p) => [p.partition, p.committedOffset, p.logEndOffset, p.lag]),
      [
        [0, 0, 10, 10],
        [1, 0, 10, 10],
      ],
    );
  });

  it('delete removes the empty group; list no longer shows it; deleting it again names GROUP_ID_NOT_FOUND', async () => {
    const r = await run('delete', groupId);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Deletion of requested consumer groups ('${groupId}') was successful.\n`);
    const listed = await run('list', '--output', 'json');
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(!(JSON.parse(listed.stdout) as GroupListing[]).some((x) => x.groupId === groupId), listed.stdout);
    const again = await run('delete', groupId, '--output', 'json');
    assert.equal(again.code, 1);
    assert.deepEqual(JSON.parse(again.stdout), [{ groupId, error: 'GROUP_ID_NOT_FOUND' }]);
    assert.match(again.stderr, /^Error: Group 'reset-group' could not be deleted due to: GROUP_ID_NOT_FOUND \(/);
  });
});
