/**
 * `sluice apply` against a 3-node Sluice cluster and a 3-node Apache Kafka cluster (what it did
 * checked with kafkajs, not with the client apply uses), and against one broker of each for
 * the replication-factor check. Outside CI a missing Kafka install skips the Kafka runs loudly;
 * under CI=true it fails.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { runApplyCommand } from '../../../src/cli/apply.ts';
import { runTopicsCommand } from '../../../src/cli/topics.ts';
import type { TopicDescription } from '../../../src/client/topics.ts';
import type { TopicPolicy } from '../../../src/tools/policy/policy.ts';
import { againstEachBroker, runCaptured, type CommandResult } from '../../helpers/cli-targets.ts';
import { type ClusterProcesses, startCluster } from '../../helpers/cluster.ts';
import { REPO } from '../../helpers/sluice-cli.ts';
import { orderEventsYaml } from '../../helpers/topic-policy.ts';

const NO_CHANGES = 'No changes. The cluster matches the policies.\n';

/** The README's example policy, with 6 partitions to keep the clusters light. */
const ORDER_EVENTS = orderEventsYaml(6);

let dir = '';
let files = 0;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sluice-apply-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes a policy file and returns its path. */
async function policyFile(text: string, ext = 'yaml'): Promise<string> {
  const path = join(dir, `policy-${++files}.${ext}`);
  await writeFile(path, text);
  return path;
}

function apply(...argv: string[]): Promise<CommandResult> {
  return runCaptured((io) => runApplyCommand(argv, io));
}

/** Polls `read` until `check` holds or 10 s pass: a broker applies a change from the metadata log a moment after it is committed. */
async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function kafkaInstalled(): boolean {
  const cache = join(REPO, '.cache');
  return existsSync(cache) && readdirSync(cache).some((d) => d.startsWith('kafka-') && existsSync(join(cache, d, 'libs', '.complete')));
}

function kafkaClusterScript(action: 'start' | 'stop', stateDir: string): Promise<string> {
  return new Promise((resolveRun, reject) => {
    execFile(
      'bash',
      [join(REPO, 'scripts/kafka-cluster.sh'), action],
      { env: { ...process.env, KAFKA_CLUSTER_STATE: stateDir }, timeout: 240_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolveRun(stdout.trim())),
    );
  });
}

describe('sluice apply: usage and refused files, before any connection', () => {
  it('answers usage errors with exit code 2 and the usage', async () => {
    for (const argv of [[], ['-f'], ['--export', '-f', 'x.yaml'], ['--topic', 't', '-f', 'x.yaml'], ['x.yaml'], ['--no-such-flag']]) {
      const r = await apply(...argv);
      assert.equal(r.code, 2, `apply ${argv.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /usage:/);
    }
  });

  it('refuses an unreadable or invalid file with one line per reason and exit 1, without reaching for the cluster', async () => {
    const bad = await policyFile('topic_policy:\n  name: t\n  partitions: 0\n  retention: 5\n');
    const json = await policyFile('{"topic_policy": {"name": "t",}}', 'json');
    // Nothing listens on port 1: an attempt to connect would fail differently.
    const r = await apply('-f', bad, '-f', json, '-f', join(dir, 'missing.yaml'), '--bootstrap-server', '127.0.0.1:1');
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.deepEqual(r.stderr.trimEnd().split('\n'), [
      `sluice apply: ${bad}: t: unknown key 'retention' (did you mean retention_ms?)`,
      `sluice apply: ${bad}: t: partitions must be >= 1, not 0`,
      `sluice apply: ${json}: syntax: invalid JSON at line 1, column 31: Expected double-quoted property name`,
      `sluice apply: ${join(dir, 'missing.yaml')}: file: cannot be read (ENOENT)`,
    ]);
  });
});

/** The whole life of a policy, on a cluster of three brokers. */
function onThreeBrokers(bootstrap: () => string): void {
  let admin: Admin;
  const run = (...argv: string[]) => apply(...argv, '--bootstrap-server', bootstrap());
  const describe = async (topic: string): Promise<TopicDescription & { policy: TopicPolicy | null }> => {
    const r = await runCaptured((io) =>
      runTopicsCommand(['topics', 'describe', topic, '--output', 'json', '--bootstrap-server', bootstrap()], io),
    );
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as (TopicDescription & { policy: TopicPolicy | null })[])[0]!;
  };
  const partitionsOf = async (topic: string): Promise<number[][]> => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    return topics[0]!.partitions.sort((a, b) => a.partitionId - b.partitionId).map((p) => p.replicas);
  };
  const configsOf = async (topic: string): Promise<Record<string, string>> => {
    const res = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false });
    return Object.fromEntries(res.resources[0]!.configEntries.map((c) => [c.configName, c.configValue]));
  };

  before(async () => {
    admin = new Kafka({ brokers: bootstrap().split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
  });

  after(async () => {
    await admin?.disconnect();
  });

  it('applies the example policy: the topic with its partitions, replication factor and configs, the schemas in describe', async () => {
    const r = await run('-f', await policyFile(ORDER_EVENTS));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^\+ create topic order\.events \(6 partitions, replication factor 3\)\n/);
    assert.match(r.stdout, /guidance: producers: acks=all, enable\.idempotence=true/);
    assert.match(r.stdout, /\nCreated topic order\.events\.\nApply complete: 1 created, 0 changed, 0 deleted\.\n$/);

    const replicas = await partitionsOf('order.events');
    assert.equal(replicas.length, 6);
    assert.ok(replicas.every((r) => new Set(r).size === 3));
    const configs = await configsOf('order.events');
    assert.deepEqual([configs['min.insync.replicas'], configs['cleanup.policy'], configs['retention.ms']], ['2', 'delete', '604800000']);

    const d = await describe('order.events');
    assert.deepEqual(
      [d.policy?.key_schema, d.policy?.value_schema, d.policy?.delivery_contract],
      ['order_id', 'order_event_v2', 'at_least_once'],
    );
    const text = await runCaptured((io) => runTopicsCommand(['topics', 'describe', 'order.events', '--bootstrap-server', bootstrap()], io));
    assert.match(text.stdout.split('\n')[0]!, /\tKeySchema: order_id\tValueSchema: order_event_v2\tDeliveryContract: at_least_once$/);
  });

  it('finds nothing to do on a second run, and exits 0', async () => {
    const r = await run('-f', await policyFile(ORDER_EVENTS));
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, NO_CHANGES, '']);
  });

  it('with --dry-run prints the retention change and changes nothing', async () => {
    const r = await run('-f', await policyFile(ORDER_EVENTS.replace('604800000', '86400000')), '--dry-run');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^~ order\.events: retention\.ms 604800000 -> 86400000\n/);
    assert.match(r.stdout, /Plan: 0 to create, 1 to change, 0 to delete\.\nDry run: nothing was applied\.\n$/);
    assert.equal((await configsOf('order.events'))['retention.ms'], '604800000');
  });

  it('applies a retention change, visible in DescribeConfigs', async () => {
    const file = await policyFile(ORDER_EVENTS.replace('604800000', '86400000'));
    const r = await run('-f', file);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\nAltered order\.events: retention\.ms=86400000\.\n/);
    const configs = await eventually(
      () => configsOf('order.events'),
      (c) => c['retention.ms'] === '86400000',
    );
    assert.equal(configs['retention.ms'], '86400000');
    assert.equal((await run('-f', file)).stdout, NO_CHANGES);
  });

  it('refuses a partition decrease with exit 1 and changes nothing', async () => {
    const r = await run('-f', await policyFile(ORDER_EVENTS.replace('604800000', '3600000').replace('partitions: 6', 'partitions: 3')));
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^sluice apply: \S+: order\.events: partitions 6 -> 3: Kafka cannot remove partitions\n$/);
    assert.equal((await partitionsOf('order.events')).length, 6);
    assert.equal((await configsOf('order.events'))['retention.ms'], '86400000', 'the retention change beside it was not applied either');
  });

  it('adds partitions only with --allow-repartition, saying that keys remap', async () => {
    const file = await policyFile(ORDER_EVENTS.replace('604800000', '86400000').replace('partitions: 6', 'partitions: 8'));
    const refused = await run('-f', file);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stdout,
      /~ order\.events: partitions 6 -> 8 \(keys remap: the default partitioner hashes keys over the new partition count/,
    );
    assert.match(refused.stderr, /order\.events: partitions 6 -> 8 needs --allow-repartition .*\nsluice apply: nothing was applied\n$/);
    assert.equal((await partitionsOf('order.events')).length, 6);

    const allowed = await run('-f', file, '--allow-repartition');
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /Added partitions to order\.events: 6 -> 8\./);
    assert.equal(
      (
        await eventually(
          () => partitionsOf('order.events'),
          (p) => p.length === 8,
        )
      ).length,
      8,
    );
  });

  it('changes a replication factor only with --allow-reassign, by reassigning the partitions', async () => {
    const policy = 'topic_policy: {name: replicated, partitions: 2, replication_factor: 1, min_insync_replicas: 1}\n';
    assert.equal((await run('-f', await policyFile(policy))).code, 0);
    const twice = await policyFile(policy.replace('replication_factor: 1', 'replication_factor: 2'));
    const refused = await run('-f', twice);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /replicated: replication_factor 1 -> 2 needs --allow-reassign/);
    assert.ok((await partitionsOf('replicated')).every((r) => r.length === 1));

    const allowed = await run('-f', twice, '--allow-reassign');
    assert.equal(allowed.code, 0, allowed.stderr);
    assert.match(allowed.stdout, /partition 0: replicas -> \d,\d\n/);
    assert.match(allowed.stdout, /Reassigned replicated: replication factor 1 -> 2\./);
    const replicas = await eventually(
      () => partitionsOf('replicated'),
      (p) => p.every((r) => r.length === 2),
    );
    assert.ok(replicas.every((r) => new Set(r).size === 2));
    // order.events is in no file of this run: the plan names it as kept, and changes nothing.
    const again = await run('-f', twice);
    assert.equal(again.code, 0);
    assert.match(
      again.stdout,
      /^ {2}order\.events: in __sluice_topic_policies but in no policy file: kept .*\nNo changes\. The cluster matches the policies\.\n$/,
    );
  });

  it('exports the policies of the topics, and applying the export changes nothing', async () => {
    const exported = await run('--export');
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stdout, /^topic_policies:\n/);
    assert.match(exported.stdout, /- name: order\.events\n {4}partitions: 8\n {4}replication_factor: 3\n {4}min_insync_replicas: 2\n/);
    assert.match(exported.stdout, /key_schema: order_id\n {4}value_schema: order_event_v2\n {4}delivery_contract: at_least_once\n/);
    assert.doesNotMatch(exported.stdout, /__sluice_topic_policies/);
    const r = await run('-f', await policyFile(exported.stdout));
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, NO_CHANGES, '']);
  });

  it('deletes a topic it manages that no file names only with --allow-delete', async () => {
    const only = await policyFile(ORDER_EVENTS.replace('604800000', '86400000').replace('partitions: 6', 'partitions: 8'));
    const kept = await run('-f', only);
    assert.equal(kept.code, 0, kept.stderr);
    assert.equal(
      kept.stdout,
      `  replicated: in __sluice_topic_policies but in no policy file: kept (--allow-delete deletes it)\n${NO_CHANGES}`,
    );
    const deleted = await run('-f', only, '--allow-delete');
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.match(deleted.stdout, /- delete topic replicated .*\n[\s\S]*Deleted topic replicated\./);
    assert.ok(!(await admin.listTopics()).includes('replicated'));
    assert.equal((await run('-f', only)).stdout, NO_CHANGES);
  });
}

describe('sluice apply on a 3-node Sluice cluster', function () {
  this.timeout(120_000);
  let cluster: ClusterProcesses | undefined;

  before(async () => {
    cluster = await startCluster({ nodes: 3 });
  });

  after(async () => {
    await cluster?.cleanup();
  });

  onThreeBrokers(() => cluster!.bootstrap);
});

describe('sluice apply on a 3-node Apache Kafka cluster', function () {
  this.timeout(120_000);
  let state: string | undefined;
  let bootstrap = '';

  before(async function () {
    if (!kafkaInstalled()) {
      if (process.env.CI === 'true') throw new Error('Apache Kafka is not installed (scripts/install-test-clients.sh)');
      console.error('*** SKIP: sluice apply against a Kafka cluster: Kafka is not installed (bash scripts/install-test-clients.sh) ***');
      this.skip();
    }
    this.timeout(300_000);
    state = await mkdtemp(join(tmpdir(), 'sluice-apply-kafka-'));
    bootstrap = (await kafkaClusterScript('start', join(state, 'cluster'))).split('\n').pop()!;
  });

  after(async function () {
    this.timeout(120_000);
    if (state === undefined) return;
    await kafkaClusterScript('stop', join(state, 'cluster')).catch(() => undefined);
    await rm(state, { recursive: true, force: true });
  });

  onThreeBrokers(() => bootstrap);
});

againstEachBroker('sluice apply on one broker', (bootstrap) => {
  it('refuses replication factor 3 with exit 1 and creates nothing', async () => {
    const r = await apply('-f', await policyFile(ORDER_EVENTS), '--bootstrap-server', bootstrap());
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr.split('\n')[0],
      `sluice apply: ${join(dir, `policy-${files}.yaml`)}: order.events: replication_factor 3 is more than the 1 live broker(s): each replica needs a broker of its own`,
    );
    const admin = new Kafka({ brokers: [bootstrap()], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      assert.deepEqual(
        (await admin.listTopics()).filter((t) => !t.startsWith('__')),
        [],
      );
    } finally {
      await admin.disconnect();
    }
  });
});
