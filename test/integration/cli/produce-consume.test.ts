import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { runConsumeCommand } from '../../../src/cli/consume.ts';
import { runProduceCommand } from '../../../src/cli/produce.ts';
import { runTopicsCommand } from '../../../src/cli/topics.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { describeGroup } from '../../../src/client/groups.ts';
import { partitionForKey } from '../../../src/client/partitioner.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';
import { eventually } from '../../helpers/wait.ts';

interface JsonRecord {
  topic: string;
  partition: number;
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: Record<string, string | null>;
}

function produce(stdin: string, ...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runProduceCommand(['produce', ...argv], io, Readable.from([Buffer.from(stdin)])));
}

function consume(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runConsumeCommand(['consume', ...argv], io));
}

function records(r: CommandResult): JsonRecord[] {
  assert.equal(r.code, 0, r.stderr);
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as JsonRecord);
}

const byPosition = (a: JsonRecord, b: JsonRecord): number => a.partition - b.partition || a.offset - b.offset;

/** Waits until `group` is Stable with `members` members, each of them assigned partitions. */
async function untilStable(bootstrap: string, group: string, members: number): Promise<void> {
  const cluster = new KafkaCluster([bootstrap]);
  try {
    await eventually(`group ${group} Stable with ${members} assigned members`, async () => {
      // Not found until the first member's JoinGroup reaches the coordinator.
      const d = await describeGroup(cluster, group).catch(() => null);
      return d?.state === 'Stable' && d.members.length === members && d.members.every((m) => m.assignment.length > 0);
    });
  } finally {
    await cluster.close();
  }
}

describe('sluice produce and consume: usage and connection errors', () => {
  it('answers usage errors with exit code 2', async () => {
    for (const argv of [
      [],
      ['a', 'b'],
      ['t', '--acks', '0'],
      ['t', '--key', 'k', '--key-separator', ':'],
      ['t', '--format', 'xml'],
      ['t', '--partition', '-1'],
    ]) {
      const r = await produce('', ...argv);
      assert.equal(r.code, 2, `produce ${argv.join(' ')}: ${r.stderr}`);
    }
    for (const argv of [
      [],
      ['t', '--offset', '5'],
      ['t', '--offset', 'soon'],
      ['t', '--offset', 'earliest', '--from-timestamp', '0'],
      ['t', '--from-timestamp', 'yesterday'],
      ['t', '--max-messages', '0'],
      ['t', '--key-separator', ':'],
      ['t', '--group', 'g', '--partition', '0'],
    ]) {
      const r = await consume(...argv);
      assert.equal(r.code, 2, `consume ${argv.join(' ')}: ${r.stderr}`);
    }
  });

  it('exits 1 naming the address when no broker answers', async () => {
    const p = await produce('x\n', 't', '--bootstrap-server', '127.0.0.1:1');
    assert.equal(p.code, 1);
    assert.match(p.stderr, /^Error: cannot reach the cluster at 127\.0\.0\.1:1: /);
    const c = await consume('t', '--bootstrap-server', '127.0.0.1:1');
    assert.equal(c.code, 1);
    assert.match(c.stderr, /^Error: cannot reach the cluster at 127\.0\.0\.1:1: /);
  });
});

againstEachBroker('sluice produce and consume', (bootstrap) => {
  const topic = 'cli-records';
  const timed = 'cli-timed';
  const b = (): string[] => ['--bootstrap-server', bootstrap()];

  before(async () => {
    for (const [name, partitions] of [
      [topic, '3'],
      [timed, '1'],
    ] as const) {
      const r = await runCaptured((io) => runTopicsCommand(['topics', 'create', name, '--partitions', partitions, ...b()], io));
      assert.equal(r.code, 0, r.stderr);
    }
  });

  const keys = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'];

  it("produce writes one record a line, keyed ones to the partition of Kafka's default partitioner", async () => {
    const stdin = keys.map((k, i) => `${k}:value-${i}\n`).join('');
    const r = await produce(stdin, topic, '--key-separator', ':', '--header', 'source=cli', '--header', 'run=1', ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, `Produced 6 records to topic ${topic}.\n`);
    assert.equal(r.stdout, '');

    const got = records(await consume(topic, '--format', 'json', ...b())).sort(byPosition);
    assert.equal(got.length, 6);
    const expected = keys
      .map((key, i) => ({ key, value: `value-${i}`, partition: partitionForKey(Buffer.from(key), 3) }))
      .sort((x, y) => x.partition - y.partition);
    assert.deepEqual(
      got.map((x) => ({ key: x.key, value: x.value, partition: x.partition })),
      expected,
    );
    for (const x of got) {
      assert.equal(x.topic, topic);
      assert.deepEqual(x.headers, { source: 'cli', run: '1' });
      assert.ok(Math.abs(x.timestamp - Date.now()) < 60_000, `timestamp ${x.timestamp}`);
    }
    // Offsets within each partition start at 0 and follow the input order.
    for (const p of [0, 1, 2]) {
      assert.deepEqual(
        got.filter((x) => x.partition === p).map((x) => x.offset),
        expected.filter((x) => x.partition === p).map((_, i) => i),
      );
    }
  });

  it('consume prints values as text, keys with --print-key, and bytes as hex', async () => {
    const text = await consume(topic, '--partition', String(partitionForKey(Buffer.from('alpha'), 3)), '--max-messages', '1', ...b());
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, 'value-0\n');
    assert.equal(text.stderr, 'Processed a total of 1 messages\n');

    const keyed = await consume(topic, '--print-key', '--key-separator', ' => ', ...b());
    assert.deepEqual(keyed.stdout.trimEnd().split('\n').sort(), keys.map((k, i) => `${k} => value-${i}`).sort());

    const hex = await consume(topic, '--format', 'hex', '--print-key', ...b());
    assert.deepEqual(
      hex.stdout.trimEnd().split('\n').sort(),
      keys.map((k, i) => `${Buffer.from(k).toString('hex')}\t${Buffer.from(`value-${i}`).toString('hex')}`).sort(),
    );
  });

  it('json lines carry keys, values, null values, headers (an object, or pairs where a key repeats), a partition and a timestamp; hex lines carry bytes', async () => {
    const stdin = [
      JSON.stringify({ key: 'k1', value: 'v1', headers: { trace: 'abc', empty: null }, partition: 2, timestamp: 1_700_000_000_000 }),
      '',
      JSON.stringify({
        key: 'k2',
        value: null,
        headers: [
          ['h', '1'],
          ['h', '2'],
        ],
        partition: 2,
      }),
      JSON.stringify({ value: 'no key', partition: 2 }),
    ].join('\n');
    const r = await produce(stdin, topic, '--format', 'json', ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, `Produced 3 records to topic ${topic}.\n`);
    const binary = await produce('00ff10\n\n', topic, '--format', 'hex', '--partition', '2', ...b());
    assert.equal(binary.code, 0, binary.stderr);

    const before = keys.filter((k) => partitionForKey(Buffer.from(k), 3) === 2).length;
    const got = records(await consume(topic, '--partition', '2', '--offset', String(before), '--format', 'json', ...b()));
    assert.deepEqual(
      got.map(({ offset, key, value, headers }) => ({ offset, key, value, headers })),
      [
        { offset: before, key: 'k1', value: 'v1', headers: { trace: 'abc', empty: null } },
        // A key twice: an object would keep one, the pairs keep both in order.
        {
          offset: before + 1,
          key: 'k2',
          value: null,
          headers: [
            ['h', '1'],
            ['h', '2'],
          ],
        },
        { offset: before + 2, key: null, value: 'no key', headers: {} },
        { offset: before + 3, key: null, value: '\u0000\ufffd\u0010', headers: {} },
        { offset: before + 4, key: null, value: '', headers: {} },
      ],
    );
    assert.equal(got[0]!.timestamp, 1_700_000_000_000);
    const hex = await consume(topic, '--partition', '2', '--offset', String(before + 1), '--format', 'hex', ...b());
    assert.equal(hex.stdout, 'null\n' + Buffer.from('no key').toString('hex') + '\n00ff10\n\n');
  });

  it('consume --from-timestamp starts at the first record at or after the time, in ms or ISO-8601', async () => {
    const t0 = Date.now() - 60_000;
    const stdin = [0, 1, 2, 3].map((i) => JSON.stringify({ value: `at-${i}`, timestamp: t0 + i * 1000 })).join('\n');
    assert.equal((await produce(stdin, timed, '--format', 'json', ...b())).code, 0);
    const fromMs = await consume(timed, '--from-timestamp', String(t0 + 1500), ...b());
    assert.equal(fromMs.stdout, 'at-2\nat-3\n');
    const fromIso = await consume(timed, '--from-timestamp', new Date(t0 + 1000).toISOString(), ...b());
    assert.equal(fromIso.stdout, 'at-1\nat-2\nat-3\n');
    const future = await consume(timed, '--from-timestamp', String(Date.now() + 3_600_000), ...b());
    assert.equal(future.code, 0, future.stderr);
    assert.equal(future.stdout, '');
  });

  it('consume --offset and --max-messages pick a window of a partition; --offset latest prints nothing', async () => {
    const r = await consume(timed, '--partition', '0', '--offset', '1', '--max-messages', '2', ...b());
    assert.equal(r.stdout, 'at-1\nat-2\n');
    const latest = await consume(timed, '--offset', 'latest', ...b());
    assert.equal(latest.code, 0, latest.stderr);
    assert.equal(latest.stdout, '');
  });

  it("consume --group starts at the group's committed offsets and commits where it stopped", async function () {
    this.timeout(60_000);
    const group = 'cli-consumer';
    const first = await consume(timed, '--group', group, '--max-messages', '3', ...b());
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout, 'at-0\nat-1\nat-2\n');
    const second = await consume(timed, '--group', group, ...b());
    assert.equal(second.stdout, 'at-3\n');
    const third = await consume(timed, '--group', group, ...b());
    assert.equal(third.code, 0, third.stderr);
    assert.equal(third.stdout, '');
  });

  it('consume --group members share the partitions, hand them over on a rebalance and commit what they printed', async function () {
    this.timeout(90_000);
    const shared = 'cli-shared';
    assert.equal((await runCaptured((io) => runTopicsCommand(['topics', 'create', shared, '--partitions', '4', ...b()], io))).code, 0);
    const batch = (from: number) => Array.from({ length: 20 }, (_, i) => `k${from + i}:v${from + i}`).join('\n') + '\n';
    assert.equal((await produce(batch(0), shared, '--key-separator', ':', ...b())).code, 0);
    const member = () => consume(shared, '--group', 'cli-sharing', '--follow', '--timeout-ms', '8000', '--format', 'json', ...b());
    const first = member();
    // The second joins while the first reads: the group rebalances and splits the partitions,
    // and the records produced then go to both.
    await untilStable(bootstrap(), 'cli-sharing', 1);
    const second = member();
    await untilStable(bootstrap(), 'cli-sharing', 2);
    assert.equal((await produce(batch(20), shared, '--key-separator', ':', ...b())).code, 0);
    const [a, c] = [records(await first), records(await second)];
    assert.deepEqual(
      [...a, ...c].map((r) => r.value).sort(),
      Array.from({ length: 40 }, (_, i) => `v${i}`).sort(),
      'every record once, across the two members',
    );
    // After the rebalance each member owns half the partitions: the later records went to both.
    const later = (rs: JsonRecord[]) => rs.filter((r) => Number(r.value!.slice(1)) >= 20);
    assert.ok(later(a).length > 0 && later(c).length > 0, `the later records split ${later(a).length}/${later(c).length}`);
    const partitionsOfA = new Set(later(a).map((r) => r.partition));
    assert.ok(
      later(c).every((r) => !partitionsOfA.has(r.partition)),
      'no partition read by both after the rebalance',
    );
    // Both committed where they stopped: a new member of the group has nothing left to read.
    const after = await consume(shared, '--group', 'cli-sharing', ...b());
    assert.equal(after.code, 0, after.stderr);
    assert.equal(after.stdout, '');
  });

  it('consume --follow prints records produced after it started', async () => {
    const following = consume(timed, '--offset', 'latest', '--follow', '--max-messages', '1', '--timeout-ms', '20000', ...b());
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal((await produce('later\n', timed, ...b())).code, 0);
    const r = await following;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'later\n');
  });

  it('consume --follow --timeout-ms exits after that long without a record', async () => {
    const startedMs = Date.now();
    const r = await consume(timed, '--offset', 'latest', '--follow', '--timeout-ms', '1000', ...b());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.ok(Date.now() - startedMs >= 1000);
  });

  it('an unknown topic exits 1 naming it, for produce and consume', async () => {
    const p = await produce('x\n', 'no-such-topic', ...b());
    assert.equal(p.code, 1);
    assert.match(p.stderr, /^Error: Topic 'no-such-topic' does not exist\.\n/);
    const c = await consume('no-such-topic', ...b());
    assert.equal(c.code, 1);
    assert.equal(c.stderr, "Error: Topic 'no-such-topic' does not exist.\n");
  });

  it('a partition the topic lacks exits 1', async () => {
    const p = await produce('x\n', timed, '--partition', '7', ...b());
    assert.equal(p.code, 1);
    assert.match(p.stderr, /partition 7 of topic 'cli-timed' does not exist \(1 partitions\)/);
    const c = await consume(timed, '--partition', '7', ...b());
    assert.equal(c.code, 1);
    assert.match(c.stderr, /partition 7 of topic 'cli-timed' does not exist/);
  });

  it('a malformed input line exits 1 naming the line, after writing the lines before it', async () => {
    const r = await produce('{"value":"ok"}\n{"value":3}\n', timed, '--format', 'json', ...b());
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Produced 1 records to topic cli-timed\.\nError: stdin line 2: "value" must be a string or null\n$/);
    assert.equal(records(await consume(timed, '--format', 'json', ...b())).at(-1)?.value, 'ok');
    const hex = await produce('abc\n', timed, '--format', 'hex', ...b());
    assert.equal(hex.code, 1);
    assert.match(hex.stderr, /stdin line 1: 'abc' is not hex/);
  });
});
