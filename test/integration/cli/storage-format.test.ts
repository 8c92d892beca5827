/**
 * `sluice storage` and meta.properties at start-up, through the real CLI: a formatted cluster
 * id is the one the node reports, an empty dir is formatted on first start, a dir of another
 * node or cluster fails start-up with Kafka's message, and bad KRaft settings fail with exit 2.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { sluiceCommand } from '../../helpers/sluice-cli.ts';

const { Kafka, logLevel } = kafkajs;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `sluice <args>` to its exit; a process still running after `timeoutMs` is killed (code null). */
function run(args: string[], timeoutMs = 20_000): Promise<Run> {
  const cmd = sluiceCommand(args);
  return new Promise((resolve) => {
    const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts `sluice start --config`, waits for its ready line, returns the bootstrap address and a stop function. */
async function startNode(args: string[]): Promise<{ bootstrap: string; stop(): Promise<number | null> }> {
  const cmd = sluiceCommand(['start', ...args]);
  const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const bootstrap = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^sluice ready: .* listening on PLAINTEXT:\/\/([^,\s]+)/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}\n${out}\n${err.slice(-4000)}`));
    });
  });
  return {
    bootstrap,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

async function clusterIdOf(bootstrap: string): Promise<string> {
  const admin = new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return (await admin.describeCluster()).clusterId;
  } finally {
    await admin.disconnect();
  }
}

describe('sluice storage format and meta.properties at start-up', function () {
  this.timeout(60_000);
  let dir: string;
  let props: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-storage-it-'));
    props = join(dir, 'server.properties');
    await writeFile(
      props,
      [
        'process.roles=broker,controller',
        'node.id=1',
        'controller.quorum.voters=1@127.0.0.1:0',
        'listeners=PLAINTEXT://127.0.0.1:0',
        `log.dirs=${join(dir, 'a')},${join(dir, 'b')}`,
      ].join('\n'),
    );
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('random-uuid prints a cluster id that format writes into every log dir and the node then reports', async () => {
    const uuid = await run(['storage', 'random-uuid']);
    assert.equal(uuid.code, 0);
    const clusterId = uuid.stdout.trim();
    assert.match(clusterId, /^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);

    const format = await run(['storage', 'format', '--config', props, '--cluster-id', clusterId]);
    assert.equal(format.code, 0, format.stderr);
    assert.equal(
      format.stdout,
      `Formatting metadata directory ${join(dir, 'a')} with cluster id ${clusterId}.\n` +
        `Formatting data directory ${join(dir, 'b')} with cluster id ${clusterId}.\n`,
    );
    for (const d of ['a', 'b']) {
      const text = await readFile(join(dir, d, 'meta.properties'), 'utf8');
      assert.match(text, /^version=1$/m);
      assert.match(text, /^node\.id=1$/m);
      assert.match(text, new RegExp(`^cluster\\.id=${clusterId}$`, 'm'));
      assert.match(text, /^directory\.id=[A-Za-z0-9_-]{22}$/m);
    }
    const again = await run(['storage', 'format', '--config', props, '--cluster-id', clusterId]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /Log directory .* is already formatted\. Use --ignore-formatted/);

    const node = await startNode(['--config', props]);
    try {
      assert.equal(await clusterIdOf(node.bootstrap), clusterId);
    } finally {
      assert.equal(await node.stop(), 0);
    }
  });

  it('formats empty log dirs on first start and refuses them to another node id', async () => {
    const node = await startNode(['--config', props]);
    const clusterId = await clusterIdOf(node.bootstrap).finally(() => node.stop());
    for (const d of ['a', 'b'])
      assert.match(await readFile(join(dir, d, 'meta.properties'), 'utf8'), new RegExp(`cluster\\.id=${clusterId}`));

    const moved = await run([
      'start',
      '--config',
      props,
      '--override',
      'node.id=2',
      '--override',
      'controller.quorum.voters=2@127.0.0.1:0',
    ]);
    assert.equal(moved.code, 1);
    assert.match(moved.stderr, /Stored node id 1 doesn't match previous node id 2 in .*meta\.properties\. If you moved your data/);
  });

  it('refuses a log dir formatted for another cluster', async () => {
    assert.equal((await run(['storage', 'format', '-c', props, '-t', 'MkU3OEVBNTcwNTJENDM2Qk'])).code, 0);
    const other = join(dir, 'other.properties');
    await writeFile(
      other,
      (await readFile(props, 'utf8')).replace(`log.dirs=${join(dir, 'a')},${join(dir, 'b')}`, `log.dirs=${join(dir, 'c')}`),
    );
    assert.equal((await run(['storage', 'format', '-c', other, '-t', 'AAAAAAAAAAAAAAAAAAAAAQ'])).code, 0);
    const mixed = await run(['start', '--config', props, '--override', `log.dirs=${join(dir, 'a')},${join(dir, 'c')}`]);
    assert.equal(mixed.code, 1);
    assert.match(
      mixed.stderr,
      /Invalid cluster\.id in: .*c\/meta\.properties\. Expected MkU3OEVBNTcwNTJENDM2Qk, but read AAAAAAAAAAAAAAAAAAAAAQ/,
    );
  });

  it("rejects KRaft misconfigurations at start-up with Kafka's messages and exit code 2", async () => {
    const cases: [string[], RegExp][] = [
      [['--override', 'node.id=5'], /the node id 5 must be included in the set of voters controller\.quorum\.voters=Set\(1\)/],
      [
        ['--override', 'process.roles=broker', '--override', 'controller.listener.names=CONTROLLER'],
        /the node id 1 must not be included in the set of voters/,
      ],
      [
        ['--override', 'inter.broker.listener.name=INTERNAL'],
        /Listener with name INTERNAL defined in inter\.broker\.listener\.name not found/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await run(['start', '--config', props, ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
  });
});
