import assert from 'node:assert/strict';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrokerConfig } from '../../../src/config/broker-config.ts';
import { registerApiVersions, registerQuorumApis } from '../../../src/handlers/index.ts';
import { HandlerRegistry } from '../../../src/handlers/registry.ts';
import { MetadataManager } from '../../../src/metadata/manager.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { RequestProcessor } from '../../../src/server/request-processor.ts';
import { SocketServer } from '../../../src/server/socket-server.ts';
import { registerBrokers } from '../../helpers/broker-registration.ts';
import { freePort } from '../../helpers/wait.ts';

const CLUSTER_ID = 'q7Jg3kPYQ1i2ZsQnMFvD2g';

// Three metadata quorum voters in one process, each behind a real controller listener,
// talking Kafka's Raft RPCs (Vote, BeginQuorumEpoch, Fetch of __cluster_metadata-0) over
// loopback sockets.

async function until(condition: () => boolean, what: string, limitMs = 15_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Voter {
  id: number;
  metadata: MetadataManager;
  server: SocketServer;
}

async function startVoter(id: number, dir: string, ports: number[], clusterId: string): Promise<Voter> {
  const logDir = join(dir, `node-${id}`);
  await mkdir(logDir, { recursive: true });
  // All voters of a cluster are formatted with one cluster id (Kafka's meta.properties).
  await writeFile(join(logDir, 'meta.properties'), `node.id=${id}\nversion=1\ncluster.id=${clusterId}\n`);
  const config = new BrokerConfig({
    overrides: new Map([
      ['node.id', String(id)],
      ['process.roles', 'controller'],
      ['listeners', `CONTROLLER://127.0.0.1:${ports[id - 1]}`],
      ['controller.listener.names', 'CONTROLLER'],
      ['controller.quorum.voters', ports.map((p, i) => `${i + 1}@127.0.0.1:${p}`).join(',')],
      ['controller.quorum.election.timeout.ms', '300'],
      ['controller.quorum.election.backoff.max.ms', '300'],
      ['controller.quorum.fetch.timeout.ms', '600'],
      ['log.dirs', logDir],
    ]),
  });
  const logger = createLogger({ quiet: true });
  const metadata = new MetadataManager({ config, logger });
  const registry = new HandlerRegistry();
  registerApiVersions(registry);
  registerQuorumApis(registry, metadata);
  const server = new SocketServer(
    new RequestProcessor(registry, logger),
    { maxRequestBytes: 100 << 20, maxQueuedRequests: 500, maxBufferedBytes: 100 << 20, idleMs: 600_000 },
    logger,
    { maxConnections: 1000 },
  );
  await server.start([{ name: 'CONTROLLER', host: '127.0.0.1', port: ports[id - 1]!, securityProtocol: 'PLAINTEXT', role: 'controller' }]);
  await metadata.start();
  return { id, metadata, server };
}

describe('metadata quorum over Kafka RPCs (three voters)', function () {
  this.timeout(60_000);
  let dir: string;
  let voters: Voter[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-quorum-'));
    const ports = [await freePort(), await freePort(), await freePort()];
    voters = await Promise.all([1, 2, 3].map((id) => startVoter(id, dir, ports, CLUSTER_ID)));
  });

  after(async () => {
    for (const v of voters) {
      await v.metadata.close();
      await v.server.close();
    }
    await rm(dir, { recursive: true, force: true });
  });

  const leaders = () => voters.filter((v) => v.metadata.isActiveController());

  it('elects one leader that every voter follows', async () => {
    await until(() => leaders().length === 1 && voters.every((v) => v.metadata.activeControllerId() === leaders()[0]!.id), 'a leader');
  });

  it('replicates committed metadata to every voter', async () => {
    const leader = leaders()[0]!;
    await leader.metadata.controller.bootstrapIfEmpty();
    await registerBrokers(leader.metadata.controller, () => leader.metadata.image(), [{ brokerId: 7, port: 9092 }], CLUSTER_ID);
    const [created] = await leader.metadata.controller.createTopics(
      [{ name: 'replicated', numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
      false,
    );
    assert.equal(created!.errorCode, 0);
    await until(() => voters.every((v) => v.metadata.image().topic('replicated')?.id === created!.topicId), 'replication');
  });

  it('fails over to another voter when the leader stops, and keeps committing', async () => {
    const old = leaders()[0]!;
    await old.metadata.close();
    await old.server.close();
    voters = voters.filter((v) => v !== old);
    await until(() => leaders().length === 1, 'a new leader');
    const leader = leaders()[0]!;
    const [created] = await leader.metadata.controller.createTopics(
      [{ name: 'after-failover', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      false,
    );
    assert.equal(created!.errorCode, 0);
    await until(() => voters.every((v) => v.metadata.image().topic('after-failover') !== undefined), 'replication after failover');
    assert.ok(voters.every((v) => v.metadata.image().topic('replicated') !== undefined));
  });
});
