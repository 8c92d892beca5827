/**
 * A node whose log dir fails (a full disk: a small tmpfs filled up; a broken one: eiofs
 * returning EIO) takes its partitions offline instead of crashing or acknowledging a write it
 * did not make: the controller moves leadership to another ISR member, the producer goes on
 * through it, the node keeps running and reports the dir in DescribeLogDirs with
 * KAFKA_STORAGE_ERROR, and every acknowledged record is read back at its offset.
 *
 * Mounting needs root (tmpfs) and FUSE (/dev/fuse, fusermount3, eiofs built by
 * scripts/faults/eiofs/build.sh): without them a loud SKIP locally, a failure under CI.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs, { type Kafka as KafkaClient } from 'kafkajs';
import { Errors } from '../../../protocol/errors.ts';
import { makeDescribeLogDirsRequest, type DescribeLogDirsResponse } from '../../../protocol/messages/describe-log-dirs.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { type ClusterProcesses, startCluster } from '../../helpers/cluster.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call } from '../../helpers/raw-requests.ts';
import { byOffset, readRecords } from '../../helpers/read-records.ts';
import { hasCommand, missingTool } from '../../helpers/runtimes.ts';
import { REPO } from '../../helpers/sluice-cli.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

const EIOFS = join(REPO, 'scripts', 'faults', 'eiofs', 'eiofs');
const TOPIC = 'bad-disk';
/** The node whose log dir fails; it leads the topic's partition when the disk breaks. */
const BAD_NODE = 3;
const RECORDS_BEFORE = 20;
const RECORDS_AFTER = 20;

/** Failure detection in seconds, as the other cluster tests. */
const OVERRIDES = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
  'offsets.topic.num.partitions': 3,
};

function run(command: string, args: string[]): void {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${r.stderr}`);
}

function isMounted(dir: string): boolean {
  return spawnSync('mountpoint', ['-q', dir]).status === 0;
}

/** Writes zeros into `dir` until the file system is full. */
async function fill(dir: string): Promise<void> {
  const file = await open(join(dir, 'filler'), 'w');
  const chunk = Buffer.alloc(1 << 20);
  try {
    for (let i = 0; i < 100_000; i++) await file.write(chunk);
    throw new Error(`${dir} did not fill up`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
  } finally {
    await file.close().catch(() => undefined);
  }
}

/** The DescribeLogDirs answer of one node, for every dir and partition. */
async function describeLogDirs(port: number): Promise<DescribeLogDirsResponse> {
  const client = await RawClient.connect(port);
  try {
    return await call<DescribeLogDirsResponse>(client, ApiKey.DescribeLogDirs, 2, makeDescribeLogDirsRequest({ topics: null }));
  } finally {
    client.close();
  }
}

async function partitionState(kafka: KafkaClient): Promise<{ leader: number; isr: number[] }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [TOPIC] });
    const p = topics[0]!.partitions[0]!;
    return { leader: p.leader, isr: p.isr };
  } finally {
    await admin.disconnect();
  }
}

/**
 * Starts three nodes with node 3's log dir at `badLogDir` (its metadata log elsewhere),
 * produces with acks=all to a partition node 3 leads, breaks the disk with `breakDisk`,
 * produces on, and checks the outcome.
 */
async function scenario(base: string, badLogDir: string, breakDisk: () => Promise<void>): Promise<ClusterProcesses> {
  const cluster = await startCluster({
    nodes: 3,
    overrides: OVERRIDES,
    nodeOverrides: { [BAD_NODE]: { 'log.dirs': badLogDir, 'metadata.log.dir': join(base, 'metadata') } },
  });
  const kafka = new Kafka({
    brokers: cluster.bootstrap.split(','),
    clientId: 'bad-disk',
    logLevel: logLevel.NOTHING,
    retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 },
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      {
        topic: TOPIC,
        replicaAssignment: [{ partition: 0, replicas: [BAD_NODE, 1, 2] }],
        configEntries: [{ name: 'min.insync.replicas', value: '2' }],
      },
    ],
    waitForLeaders: true,
  });
  await admin.disconnect();
  await eventually('node 3 leads with a full ISR', async () => {
    const s = await partitionState(kafka);
    return s.leader === BAD_NODE && s.isr.length === 3;
  });

  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const acked = new Map<string, string>();
  const failed: string[] = [];
  const send = async (value: string): Promise<void> => {
    try {
      const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ value }] });
      acked.set(meta!.baseOffset!, value);
    } catch (err) {
      failed.push(`${value}: ${(err as Error).message}`);
    }
  };
  for (let i = 0; i < RECORDS_BEFORE; i++) await send(`v${i}`);
  assert.equal(acked.size, RECORDS_BEFORE, failed.join('\n'));

  await breakDisk();
  for (let i = RECORDS_BEFORE; i < RECORDS_BEFORE + RECORDS_AFTER; i++) await send(`v${i}`);
  await producer.disconnect();

  const bad = cluster.nodes[BAD_NODE - 1]!;
  await eventually('leadership moved away from node 3, which left the ISR', async () => {
    const s = await partitionState(kafka);
    return s.leader !== BAD_NODE && s.leader >= 0 && !s.isr.includes(BAD_NODE);
  });
  assert.ok(acked.size > RECORDS_BEFORE, `the producer went on through the new leader; failures:\n${failed.join('\n')}`);
  assert.ok(bad.running, 'the node with the failed disk keeps running');
  const described = await describeLogDirs(bad.port);
  const dir = described.results.find((r) => r.logDir === badLogDir);
  assert.ok(dir !== undefined, `node 3 describes ${badLogDir}: ${JSON.stringify(described.results.map((r) => r.logDir))}`);
  assert.equal(dir.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
  assert.deepEqual(dir.topics, []);
  assert.match(bad.stderr(), /log dir .* failed: its partitions are offline/);

  // Every acknowledged record is there, at the offset it was acknowledged with.
  // Offsets of a fresh topic without transactions are dense: reading up to the highest
  // acknowledged one reads everything acknowledged.
  const lastOffset = Math.max(...[...acked.keys()].map(Number));
  const stored = byOffset(await readRecords(kafka, TOPIC, lastOffset + 1, 0));
  for (const [offset, value] of acked) assert.equal(stored.get(offset), value, `acknowledged ${value} at ${offset}`);
  return cluster;
}

describe('cluster: a bad disk takes its partitions offline on that node', function () {
  this.timeout(240_000);
  let base = '';
  let cluster: ClusterProcesses | null = null;
  let eiofs: ChildProcess | null = null;
  const mounts: string[] = [];

  beforeEach(async function () {
    if (process.getuid?.() !== 0) missingTool(this, 'root (to mount the failing log dir)', 'run the test as root');
    base = await mkdtemp(join(tmpdir(), 'sluice-bad-disk-'));
  });

  afterEach(async () => {
    await cluster?.cleanup();
    cluster = null;
    if (eiofs !== null && eiofs.exitCode === null) {
      const gone = new Promise((resolve) => eiofs!.once('exit', resolve));
      eiofs.kill('SIGTERM');
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    }
    eiofs = null;
    for (const dir of mounts.splice(0)) {
      if (!isMounted(dir)) continue;
      const lazy = spawnSync('umount', ['-l', dir]);
      if (lazy.status !== 0) spawnSync('fusermount3', ['-u', '-z', dir]);
    }
    if (base !== '') await rm(base, { recursive: true, force: true });
    base = '';
  });

  it('ENOSPC: a full tmpfs log dir', async () => {
    const disk = join(base, 'disk');
    await mkdir(disk);
    run('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'tmpfs', disk]);
    mounts.push(disk);
    cluster = await scenario(base, disk, () => fill(disk));
  });

  it('EIO: eiofs failing every read and write', async function () {
    if (!existsSync('/dev/fuse') || !hasCommand('fusermount3'))
      missingTool(this, 'FUSE (/dev/fuse and fusermount3)', 'apt-get install fuse3');
    if (!existsSync(EIOFS)) {
      if (!hasCommand('go')) missingTool(this, 'eiofs', 'scripts/faults/eiofs/build.sh (needs Go)');
      run('bash', [join(REPO, 'scripts', 'faults', 'eiofs', 'build.sh')]);
    }
    const backing = join(base, 'backing');
    const disk = join(base, 'eio');
    await mkdir(backing);
    await mkdir(disk);
    const child = spawn(EIOFS, [backing, disk], { stdio: ['ignore', 'pipe', 'pipe'] });
    eiofs = child;
    let output = '';
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      output += d.toString();
    });
    mounts.push(disk);
    await eventually(`eiofs mounted ${disk} (${output})`, () => isMounted(disk), 10_000);
    cluster = await scenario(base, disk, async () => {
      child.kill('SIGUSR1');
      await eventually('eiofs failing', () => output.includes('failing with EIO'), 5000);
    });
  });
});
