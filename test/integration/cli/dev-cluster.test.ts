/**
 * `sluice dev --nodes 3`: three child processes of `sluice start`, one cluster.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { access, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { sluiceCommand } from '../../helpers/sluice-cli.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

interface DevProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

function runDev(args: string[]): DevProcess {
  const cmd = sluiceCommand(['dev', ...args]);
  const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function readyLine(dev: DevProcess, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = /^sluice ready: .*$/m.exec(dev.stdout());
    if (m) return m[0];
    if (dev.child.exitCode !== null)
      throw new Error(`sluice dev exited ${dev.child.exitCode}\n${dev.stdout()}\n${dev.stderr().slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`sluice dev not ready after ${timeoutMs} ms\n${dev.stdout()}\n${dev.stderr().slice(-4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('sluice dev --nodes 3', function () {
  this.timeout(120_000);
  let dir: string;
  let dev: DevProcess | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-dev-cluster-'));
  });
  afterEach(async () => {
    if (dev !== undefined && dev.child.exitCode === null && dev.child.signalCode === null) {
      dev.child.kill('SIGTERM');
      await dev.exited;
    }
    dev = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('starts three nodes, prints their ports and one bootstrap line, serves them as one cluster, and stops all on SIGTERM', async () => {
    dev = runDev(['--nodes', '3', '--port', '0', '--data-dir', dir]);
    const ready = await readyLine(dev, 90_000);
    const m = /^sluice ready: 3 nodes, bootstrap (127\.0\.0\.1:\d+),(127\.0\.0\.1:\d+),(127\.0\.0\.1:\d+)$/.exec(ready);
    assert.ok(m, ready);
    const bootstrap = m.slice(1, 4);
    const nodeLines = dev
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('sluice dev: node '));
    assert.equal(nodeLines.length, 3, dev.stdout());
    for (const [i, line] of nodeLines.entries()) {
      assert.match(
        line,
        new RegExp(`^sluice dev: node ${i + 1} listening on PLAINTEXT://${bootstrap[i]}, CONTROLLER://127\\.0\\.0\\.1:\\d+`),
      );
      await access(join(dir, `node-${i + 1}`, 'server.properties'));
    }

    const admin = new Kafka({ brokers: bootstrap, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      // Every node registers; DescribeCluster lists the brokers the controller has unfenced.
      let brokers: number[] = [];
      await eventually(
        'three brokers in DescribeCluster',
        async () => {
          brokers = (await admin.describeCluster()).brokers.map((b) => b.nodeId).sort();
          return brokers.length === 3;
        },
        15_000,
      ).catch(() => assert.deepEqual(brokers, [1, 2, 3]));
      await admin.createTopics({ topics: [{ topic: 'replicated' }], waitForLeaders: true });
      // Each broker learns of the topic from the metadata log in its own time.
      let replicas: number[] = [];
      await eventually('the topic on every broker', async () => {
        const metadata = await admin.fetchTopicMetadata({ topics: ['replicated'] }).catch(() => null);
        replicas = metadata?.topics[0]?.partitions[0]?.replicas ?? [];
        return replicas.length > 0;
      });
      assert.equal(replicas.length, 3, 'default.replication.factor=3 on three nodes');
    } finally {
      await admin.disconnect();
    }

    dev.child.kill('SIGTERM');
    assert.equal(await dev.exited, 0);
    for (const address of bootstrap) assert.ok(await refusesConnections(Number(address.split(':')[1])), `${address} is closed`);
  });

  it('exits non-zero when a node dies during start-up', async () => {
    const notADir = join(dir, 'file');
    await writeFile(notADir, '');
    dev = runDev(['--nodes', '3', '--port', '0', '--data-dir', join(dir, 'data'), '--override', `log.dirs=${join(notADir, 'logs')}`]);
    assert.equal(await dev.exited, 1);
    assert.match(dev.stderr(), /sluice dev: node \d exited with code 1 before it was ready; stopping the others/);
    assert.doesNotMatch(dev.stdout(), /sluice ready/);
  });

  it('refuses --nodes 0 and a --port without room for the controller ports, with usage', async () => {
    for (const args of [
      ['--nodes', '0'],
      ['--nodes', '3', '--port', '60000'],
    ]) {
      dev = runDev([...args, '--data-dir', dir]);
      assert.equal(await dev.exited, 2, args.join(' '));
      assert.match(dev.stderr(), /invalid --nodes 0|leaves no room/);
    }
  });
});
