/**
 * A second process started with the node.id of a running broker fails start-up with a message
 * naming the id, and the running broker keeps serving: the active controller refuses its
 * registration (DUPLICATE_BROKER_REGISTRATION) while the first incarnation heartbeats.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { startCluster, type ClusterProcesses } from '../../helpers/cluster.ts';
import { REPO, sluiceCommand } from '../../helpers/sluice-cli.ts';
import { freePort } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

describe('cluster: two nodes with the same node.id', function () {
  this.timeout(120_000);
  let cluster: ClusterProcesses | null = null;
  let dir = '';

  afterEach(async function () {
    await cluster?.cleanup();
    cluster = null;
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('refuses the second one at start-up with a message naming the id; the first serves on', async function () {
    const session = { 'broker.session.timeout.ms': 3000, 'broker.heartbeat.interval.ms': 500 };
    cluster = await startCluster({ nodes: 3, overrides: session });
    dir = await mkdtemp(join(tmpdir(), 'sluice-duplicate-'));
    const port = await freePort();
    const bootstrapServers = cluster.nodes.map((n) => `${n.host}:${n.controllerPort}`).join(',');
    const config = join(dir, 'server.properties');
    await writeFile(
      config,
      [
        'process.roles=broker',
        'node.id=2',
        // With controller.quorum.voters, Kafka's own check refuses a broker-only node whose id is
        // a voter's before anything starts; found through the bootstrap servers, it is the
        // controller that tells the two apart.
        `controller.quorum.bootstrap.servers=${bootstrapServers}`,
        'controller.listener.names=CONTROLLER',
        `listeners=PLAINTEXT://127.0.0.1:${port}`,
        'inter.broker.listener.name=PLAINTEXT',
        'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
        `log.dirs=${join(dir, 'logs')}`,
        ...Object.entries(session).map(([k, v]) => `${k}=${v}`),
        '',
      ].join('\n'),
    );
    const cmd = sluiceCommand(['start', '--config', config, '--log-format', 'json']);
    const child = spawn(cmd.command, cmd.args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 1, `the duplicate exits with a failure: ${stderr.slice(-400)}`);
    assert.match(stderr, /start-up failed: .*node\.id 2|start-up failed: .*node 2/i);
    assert.match(stderr, /DUPLICATE_BROKER_REGISTRATION|Another broker is registered with that broker id/);

    const admin = new Kafka({ brokers: cluster.bootstrap.split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const { brokers } = await admin.describeCluster();
      const two = brokers.find((b) => b.nodeId === 2);
      assert.ok(two !== undefined, 'broker 2 is still registered and unfenced');
      assert.equal(two.port, cluster.nodes.find((n) => n.nodeId === 2)!.port, 'with the first incarnation’s endpoint');
    } finally {
      await admin.disconnect();
    }
  });
});
