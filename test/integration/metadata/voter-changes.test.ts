/**
 * Controller membership changes without downtime (KIP-853) with real node processes: one
 * controller-only node started with controller.quorum.voters naming itself, two more started
 * with only controller.quorum.bootstrap.servers (observers of the quorum), added with `sluice
 * cluster add-controller`; then the original controller is killed, the other two elect a
 * leader and commit, and `sluice cluster remove-controller` takes the dead one out. When
 * Kafka's tools are installed (.cache/kafka-<version>), kafka-metadata-quorum describes the
 * Sluice quorum too.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readMetaProperties } from '../../../src/metadata/meta-properties.ts';
import { REPO, sluiceCommand } from '../../helpers/sluice-cli.ts';
import { eventually, freePort } from '../../helpers/wait.ts';

interface Controller {
  id: number;
  port: number;
  configPath: string;
  logDir: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

async function startController(dir: string, id: number, port: number, quorum: string): Promise<Controller> {
  const logDir = join(dir, `node-${id}`);
  await mkdir(logDir, { recursive: true });
  const configPath = join(dir, `controller-${id}.properties`);
  await writeFile(
    configPath,
    [
      'process.roles=controller',
      `node.id=${id}`,
      `listeners=CONTROLLER://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      quorum,
      `log.dirs=${logDir}`,
      'controller.quorum.election.timeout.ms=300',
      'controller.quorum.election.backoff.max.ms=300',
      'controller.quorum.fetch.timeout.ms=600',
      '',
    ].join('\n'),
  );
  const cmd = sluiceCommand(['start', '--config', configPath]);
  const child = spawn(cmd.command, cmd.args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const controller = { id, port, configPath, logDir, child, output: () => output, exited };
  await eventually(`controller ${id} ready`, () => {
    if (child.exitCode !== null) throw new Error(`controller ${id} exited with ${child.exitCode}:\n${output}`);
    return /sluice ready/.test(output);
  });
  return controller;
}

function run(command: string, args: string[], timeoutMs = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: REPO, timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

const cluster = (args: string[]) => {
  const cmd = sluiceCommand(['cluster', ...args]);
  return run(cmd.command, cmd.args);
};

interface Described {
  leaderId: number;
  leaderEpoch: number;
  highWatermark: number;
  voters: { id: number; directoryId: string; endpoints: string[] }[];
  observers: { id: number; directoryId: string }[];
}

async function quorumOf(port: number): Promise<Described> {
  const r = await cluster(['describe', '--bootstrap-controller', `127.0.0.1:${port}`]);
  assert.equal(r.code, 0, r.stderr);
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(.*)$`, 'm').exec(r.stdout);
    assert.ok(m, `${name} in\n${r.stdout}`);
    return m[1]!;
  };
  return {
    leaderId: Number(field('LeaderId')),
    leaderEpoch: Number(field('LeaderEpoch')),
    highWatermark: Number(field('HighWatermark')),
    voters: JSON.parse(field('CurrentVoters')),
    observers: JSON.parse(field('CurrentObservers')),
  };
}

async function directoryIdOf(controller: Controller): Promise<string> {
  const meta = await readMetaProperties(controller.logDir);
  assert.ok(meta?.directoryId, `meta.properties of controller ${controller.id}`);
  return meta.directoryId;
}

/**
 * Kafka's kafka-metadata-quorum (MetadataQuorumCommand) when Kafka's jars are unpacked under
 * .cache/kafka-<version>/libs and a java is on the PATH.
 */
function kafkaMetadataQuorum(): { command: string; args: string[] } | null {
  const cache = join(REPO, '.cache');
  if (!existsSync(cache)) return null;
  const dist = readdirSync(cache).find((name) => /^kafka-\d/.test(name) && existsSync(join(cache, name, 'libs')));
  if (dist === undefined) return null;
  const libs = join(cache, dist, 'libs');
  if (!readdirSync(libs).some((jar) => jar.startsWith('kafka-tools-'))) return null;
  return { command: 'java', args: ['-cp', join(libs, '*'), 'org.apache.kafka.tools.MetadataQuorumCommand'] };
}

describe('controller membership changes with real processes (KIP-853)', function () {
  this.timeout(180_000);
  let dir: string;
  const controllers = new Map<number, Controller>();

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-voters-'));
    const ports = [await freePort(), await freePort(), await freePort()];
    const [p1, p2, p3] = ports as [number, number, number];
    controllers.set(1, await startController(dir, 1, p1, `controller.quorum.voters=1@127.0.0.1:${p1}`));
    const joining = `controller.quorum.bootstrap.servers=127.0.0.1:${p1}`;
    const [c2, c3] = await Promise.all([startController(dir, 2, p2, joining), startController(dir, 3, p3, joining)]);
    controllers.set(2, c2);
    controllers.set(3, c3);
  });

  after(async () => {
    for (const c of controllers.values()) {
      if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
      await c.exited;
    }
    await rm(dir, { recursive: true, force: true });
  });

  const port = (id: number) => controllers.get(id)!.port;

  it('starts with the one static voter; the controllers with bootstrap servers only observe', async () => {
    await eventually('both observers fetching', async () => {
      const q = await quorumOf(port(1));
      return (
        q.observers
          .map((o) => o.id)
          .sort()
          .join() === '2,3'
      );
    });
    const q = await quorumOf(port(2));
    assert.equal(q.leaderId, 1);
    assert.deepEqual(
      q.voters.map((v) => [v.id, v.endpoints]),
      [[1, [`CONTROLLER://127.0.0.1:${port(1)}`]]],
    );
    assert.equal(q.voters[0]!.directoryId, await directoryIdOf(controllers.get(1)!), 'the leader wrote its own directory id');
    const observers = new Map(q.observers.map((o) => [o.id, o.directoryId]));
    assert.equal(observers.get(2), await directoryIdOf(controllers.get(2)!));
  });

  it('adds the two controllers with `sluice cluster add-controller`, one at a time', async () => {
    for (const id of [2, 3]) {
      const c = controllers.get(id)!;
      const r = await cluster(['add-controller', '--bootstrap-controller', `127.0.0.1:${port(1)}`, '--config', c.configPath]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        new RegExp(
          `^Added controller ${id} with directory id ${await directoryIdOf(c)} and endpoints: CONTROLLER://127\\.0\\.0\\.1:${c.port}$`,
          'm',
        ),
      );
    }
    const again = await cluster([
      'add-controller',
      '--bootstrap-controller',
      `127.0.0.1:${port(2)}`,
      '--config',
      controllers.get(3)!.configPath,
    ]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /DUPLICATE_VOTER/);
    await eventually('every controller sees three voters', async () => {
      for (const id of [1, 2, 3]) {
        const q = await quorumOf(port(id));
        if (q.voters.map((v) => v.id).join() !== '1,2,3') return false;
      }
      return true;
    });
  });

  it('describes the Sluice quorum with kafka-metadata-quorum, when Kafka is installed', async function () {
    const tool = kafkaMetadataQuorum();
    if (tool === null) this.skip();
    const r = await run(tool.command, [...tool.args, '--bootstrap-controller', `127.0.0.1:${port(1)}`, 'describe', '--status'], 90_000);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /LeaderId:\s+1/);
    assert.match(r.stdout, /CurrentVoters:\s+\[.*"id":\s*1.*"id":\s*2.*"id":\s*3/);
  });

  it('keeps working when the original controller is killed, and removes it with `sluice cluster remove-controller`', async () => {
    const before = await quorumOf(port(2));
    const original = controllers.get(1)!;
    original.child.kill('SIGKILL');
    await original.exited;
    let after: Described | null = null;
    await eventually('a new leader among controllers 2 and 3 that commits in its epoch', async () => {
      try {
        after = await quorumOf(port(2));
      } catch {
        return false;
      }
      return (
        after.leaderId !== 1 && after.leaderId >= 0 && after.leaderEpoch > before.leaderEpoch && after.highWatermark > before.highWatermark
      );
    });
    const directoryId = await directoryIdOf(original);
    const r = await cluster([
      'remove-controller',
      '--bootstrap-controller',
      `127.0.0.1:${port(3)}`,
      '--controller-id',
      '1',
      '--controller-directory-id',
      directoryId,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`Removed controller 1 with directory id ${directoryId}`));
    const q = await quorumOf(port(3));
    assert.deepEqual(
      q.voters.map((v) => v.id),
      [2, 3],
    );
    const wrong = await cluster([
      'remove-controller',
      '--bootstrap-controller',
      `127.0.0.1:${port(3)}`,
      '--controller-id',
      '1',
      '--controller-directory-id',
      directoryId,
    ]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /VOTER_NOT_FOUND/);
  });
});
