import assert from 'node:assert/strict';
import { runTopicsCommand } from '../../../src/cli/topics.ts';
import type { TopicDescription, TopicListing } from '../../../src/client/topics.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';

function topics(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runTopicsCommand(['topics', ...argv], io));
}

async function describeJson(bootstrap: string, topic: string): Promise<TopicDescription> {
  const r = await topics('describe', topic, '--output', 'json', '--bootstrap-server', bootstrap);
  assert.equal(r.code, 0, r.stderr);
  const [d] = JSON.parse(r.stdout) as TopicDescription[];
  assert.ok(d);
  return d;
}

/** Polls describe until `check` holds: a broker applies a config change from the metadata log a moment after the controller commits it. */
async function eventually(read: () => Promise<TopicDescription>, check: (d: TopicDescription) => boolean): Promise<TopicDescription> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const d = await read();
    if (check(d) || Date.now() > deadline) return d;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('sluice topics: usage and connection errors', () => {
  it('answers usage errors with exit code 2 and the usage', async () => {
    for (const argv of [
      [],
      ['frobnicate'],
      ['create'],
      ['create', 'a', 'b'],
      ['create', 't', '--partitions', 'zero'],
      ['create', 't', '--config', 'novalue'],
      ['delete'],
      ['list', '--partitions', '3'],
      ['alter-config', 't'],
      ['list', '--output', 'yaml'],
      ['list', '--bootstrap-server', 'no-port'],
      ['list', '--no-such-flag'],
    ]) {
      const r = await topics(...argv);
      assert.equal(r.code, 2, `topics ${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
  });

  it('exits 1 naming the address when no broker answers', async () => {
    const r = await topics('list', '--bootstrap-server', '127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: cannot reach the cluster at 127\.0\.0\.1:1: .*ECONNREFUSED/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });
});

againstEachBroker('sluice topics', (bootstrap) => {
  const topic = 'cli-topics';
  const run = (...argv: string[]): Promise<CommandResult> => topics(...argv, '--bootstrap-server', bootstrap());

  it('create makes the topic with its partitions, replication factor and configs', async () => {
    const r = await run('create', topic, '--partitions', '3', '--replication-factor', '1', '--config', 'retention.ms=123456789');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Created topic ${topic}.\n`);
  });

  it('create of an existing topic exits 1 naming TOPIC_ALREADY_EXISTS, and 0 with --if-not-exists', async () => {
    const again = await run('create', topic, '--partitions', '3');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^Error: CreateTopics 'cli-topics': TOPIC_ALREADY_EXISTS/);
    const tolerated = await run('create', topic, '--partitions', '3', '--if-not-exists');
    assert.equal(tolerated.code, 0, tolerated.stderr);
    assert.equal(tolerated.stdout, '');
  });

  it('create without --partitions and --replication-factor takes the broker defaults', async () => {
    const r = await run('create', 'cli-defaults');
    assert.equal(r.code, 0, r.stderr);
    const d = await describeJson(bootstrap(), 'cli-defaults');
    assert.ok(d.partitionCount >= 1);
    assert.equal(d.replicationFactor, 1);
  });

  it('list shows the topics, as text and as JSON', async () => {
    const text = await run('list');
    assert.equal(text.code, 0, text.stderr);
    assert.deepEqual(
      text.stdout.split('\n').filter((l) => l.startsWith('cli-')),
      ['cli-defaults', 'cli-topics'],
    );
    const json = await run('list', '--output', 'json');
    const listed = (JSON.parse(json.stdout) as TopicListing[]).find((t) => t.name === topic);
    assert.deepEqual({ ...listed, topicId: undefined }, { name: topic, topicId: undefined, partitionCount: 3, internal: false });
  });

  it('describe shows partitions, leader, replicas, ISR, ELR, log offsets and the configs set on the topic', async () => {
    const r = await run('describe', topic);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^Topic: cli-topics\tTopicId: \S+\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: retention\.ms=123456789$/);
    assert.equal(lines.length, 4);
    for (const [i, line] of lines.slice(1).entries()) {
      assert.match(
        line,
        new RegExp(
          `^\\tTopic: cli-topics\\tPartition: ${i}\\tLeader: (\\d+)\\tReplicas: \\1\\tIsr: \\1\\tElr: \\tLastKnownElr: \\tOffline: \\tLogStartOffset: 0\\tLogEndOffset: 0$`,
        ),
      );
    }
    const d = await describeJson(bootstrap(), topic);
    assert.equal(d.partitionCount, 3);
    assert.deepEqual(d.configs, { 'retention.ms': '123456789' });
    // No `sluice apply` policy is stored for it (test/integration/tools/apply.test.ts covers one that is).
    assert.equal((d as TopicDescription & { policy: unknown }).policy, null);
    assert.deepEqual(
      d.partitions.map((p) => [p.partition, p.replicas.length, p.isr.length, p.elr, p.lastKnownElr, p.logStartOffset, p.logEndOffset]),
      [
        [0, 1, 1, [], [], 0, 0],
        [1, 1, 1, [], [], 0, 0],
        [2, 1, 1, [], [], 0, 0],
      ],
    );
  });

  it('alter-config sets and deletes configs, and --partitions adds partitions', async () => {
    const r = await run(
      'alter-config',
      topic,
      '--set',
      'cleanup.policy=compact',
      '--set',
      'max.message.bytes=65536',
      '--delete',
      'retention.ms',
      '--partitions',
      '4',
    );
    assert.equal(r.code, 0, r.stderr);
    const want = { 'cleanup.policy': 'compact', 'max.message.bytes': '65536' };
    const d = await eventually(
      () => describeJson(bootstrap(), topic),
      (x) => JSON.stringify(x.configs) === JSON.stringify(want) && x.partitionCount === 4,
    );
    assert.deepEqual(d.configs, want);
    assert.equal(d.partitionCount, 4);
  });

  it('alter-config with a config the broker rejects exits 1 with its error', async () => {
    const r = await run('alter-config', topic, '--set', 'cleanup.policy=shred');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^Error: IncrementalAlterConfigs 'cli-topics': INVALID_CONFIG/);
  });

  it('describe and alter-config of an unknown topic exit 1 naming it', async () => {
    for (const argv of [
      ['describe', 'no-such-topic'],
      ['alter-config', 'no-such-topic', '--set', 'retention.ms=1000'],
    ]) {
      const r = await run(...argv);
      assert.equal(r.code, 1, r.stdout);
      assert.equal(r.stderr, "Error: Topic 'no-such-topic' does not exist.\n");
    }
  });

  it('delete removes the topics; list no longer shows them', async () => {
    const r = await run('delete', topic, 'cli-defaults');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Deleted topic ${topic}.\nDeleted topic cli-defaults.\n`);
    const listed = await run('list');
    assert.doesNotMatch(listed.stdout, /^cli-/m);
  });

  it('delete of an unknown topic exits 1, and 0 with --if-exists', async () => {
    const r = await run('delete', topic);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `Error: Topic '${topic}' does not exist.\n`);
    const tolerated = await run('delete', topic, '--if-exists');
    assert.equal(tolerated.code, 0, tolerated.stderr);
    assert.equal(tolerated.stdout, '');
  });
});
