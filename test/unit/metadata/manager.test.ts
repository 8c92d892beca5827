import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import { BrokerConfig } from '../../../src/config/broker-config.ts';
import { ConfigSource } from '../../../src/config/types.ts';
import { MetadataManager } from '../../../src/metadata/manager.ts';
import { ConfigResourceType } from '../../../src/metadata/records.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { MetadataDelta } from '../../../src/metadata/image.ts';
import { producerIdBlockAllocator } from '../../../src/metadata/controller-channel.ts';
import { type LocalBroker, startLocalBroker } from '../../helpers/broker-registration.ts';

function configFor(dir: string, extra: [string, string][] = []): BrokerConfig {
  return new BrokerConfig({
    overrides: new Map([
      ['node.id', '1'],
      ['process.roles', 'broker,controller'],
      ['listeners', 'PLAINTEXT://127.0.0.1:0'],
      ['controller.quorum.voters', '1@127.0.0.1:0'],
      ['log.dirs', dir],
      ...extra,
    ]),
  });
}

/** A started single-voter manager whose node is registered as a broker (heartbeating until close()). */
interface Started {
  readonly manager: MetadataManager;
  readonly broker: LocalBroker;
  close(): Promise<void>;
}

async function startManager(dir: string, extra: [string, string][] = [], config = configFor(dir, extra)): Promise<Started> {
  const manager = new MetadataManager({ config, logger: createLogger({ quiet: true }) });
  await manager.start();
  const broker = await startLocalBroker(manager, config);
  return {
    manager,
    broker,
    async close() {
      await broker.close();
      await manager.close();
    },
  };
}

/** A producer-id block through AllocateProducerIds, as the broker's InitProducerId gets one. */
function allocateBlock(started: Started) {
  return producerIdBlockAllocator(started.broker.channel, {
    brokerId: 1,
    brokerEpoch: () => started.broker.lifecycle.brokerEpoch,
    timeoutMs: 5000,
  })();
}

const newTopic = (name: string, numPartitions: number, configs: { name: string; value: string }[] = []) => ({
  name,
  numPartitions,
  replicationFactor: -1,
  assignments: [],
  configs,
});

describe('metadata manager (single-voter quorum on disk)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-metadata-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('elects itself, registers the broker unfenced and keeps a cluster id', async () => {
    const started = await startManager(dir);
    const manager = started.manager;
    assert.equal(manager.activeControllerId(), 1);
    assert.deepEqual(
      manager
        .image()
        .liveBrokers()
        .map((b) => b.id),
      [1],
    );
    assert.match(manager.clusterId, /^[A-Za-z0-9_-]{22}$/);
    const clusterId = manager.clusterId;
    await started.close();
    const again = await startManager(dir);
    assert.equal(again.manager.clusterId, clusterId);
    await again.close();
  });

  it('brings back every topic, partition and config after a restart', async () => {
    const first = await startManager(dir);
    const [created] = await first.manager.controller.createTopics([newTopic('kept', 3, [{ name: 'retention.ms', value: '12345' }])], false);
    assert.equal(created!.errorCode, Errors.NONE.code);
    await first.manager.controller.createTopics([newTopic('gone', 1)], false);
    await first.manager.controller.deleteTopics([{ name: 'gone', topicId: 'AAAAAAAAAAAAAAAAAAAAAA' }]);
    const block = await allocateBlock(first);
    await first.close();

    const files = await readdir(join(dir, '__cluster_metadata-0'));
    assert.ok(files.includes('quorum-state'));
    assert.ok(files.some((f) => f.endsWith('.log')));

    const second = await startManager(dir);
    const image = second.manager.image();
    assert.deepEqual([...image.topicsByName.keys()], ['kept']);
    assert.equal(image.topic('kept')!.id, created!.topicId);
    assert.equal(image.topic('kept')!.partitions.size, 3);
    assert.equal(image.topicConfigs('kept').get('retention.ms'), '12345');
    assert.equal((await allocateBlock(second)).firstProducerId, block.firstProducerId + 1000n);
    assert.ok(second.manager.raft.currentEpoch > 1, 'a restart starts a new epoch');
    await second.close();
  });

  it('snapshots past metadata.log.max.record.bytes.between.snapshots and restores from snapshot + log', async () => {
    const extra: [string, string][] = [['metadata.log.max.record.bytes.between.snapshots', '2000']];
    const first = await startManager(dir, extra);
    for (let i = 0; i < 20; i++) await first.manager.controller.createTopics([newTopic(`t${i}`, 2)], false);
    // The snapshot is taken on the turn after the commit that crossed the threshold.
    await new Promise((resolve) => setImmediate(resolve));
    await first.manager.controller.createTopics([newTopic('after-snapshot', 1)], false);
    await first.close();
    const files = await readdir(join(dir, '__cluster_metadata-0'));
    const snapshots = files.filter((f) => f.endsWith('.checkpoint'));
    assert.equal(snapshots.length, 1, `one snapshot kept: ${files.join(' ')}`);

    const second = await startManager(dir, extra);
    assert.equal(second.manager.image().topicsByName.size, 21);
    assert.ok(second.manager.raft.logStartOffset > 0, 'replay starts after the snapshot');
    await second.close();
  });

  it('publishes deltas and applies dynamic broker configs from the log', async () => {
    const config = configFor(dir);
    const started = await startManager(dir, [], config);
    const manager = started.manager;
    const deltas: MetadataDelta[] = [];
    manager.onMetadataDelta((delta) => {
      deltas.push(delta);
    });
    await manager.controller.createTopics([newTopic('d', 2)], false);
    assert.deepEqual(
      deltas.at(-1)!.topicsCreated.map((t) => t.name),
      ['d'],
    );
    const [r] = await manager.controller.incrementalAlterConfigs(
      [
        {
          resourceType: ConfigResourceType.BROKER,
          resourceName: '1',
          configs: [{ name: 'log.retention.ms', configOperation: 0, value: '777' }],
        },
      ],
      false,
    );
    assert.equal(r!.errorCode, Errors.NONE.code);
    assert.equal(config.get('log.retention.ms'), '777');
    assert.equal(config.source('log.retention.ms'), ConfigSource.DYNAMIC_BROKER_CONFIG);
    await started.close();
  });
});

describe('metadata manager of a broker-only node', () => {
  it('is an observer, never a quorum of itself, when it lists only controller.quorum.bootstrap.servers', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-metadata-'));
    const config = new BrokerConfig({
      overrides: new Map([
        ['node.id', '4'],
        ['process.roles', 'broker'],
        ['listeners', 'PLAINTEXT://127.0.0.1:0'],
        ['controller.listener.names', 'CONTROLLER'],
        ['listener.security.protocol.map', 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT'],
        // Nothing listens there: no leader can be found.
        ['controller.quorum.bootstrap.servers', '127.0.0.1:1'],
        ['controller.quorum.election.timeout.ms', '50'],
        ['controller.quorum.fetch.timeout.ms', '100'],
        ['controller.quorum.retry.backoff.ms', '10'],
        ['log.dirs', dir],
      ]),
    });
    const manager = new MetadataManager({ config, logger: createLogger({ quiet: true }) });
    try {
      await manager.start();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(manager.voters, []);
      assert.equal(manager.isActiveController(), false);
      assert.equal(manager.activeControllerId(), -1);
      assert.equal(manager.raft.currentEpoch, 0, 'it never stood for election');
    } finally {
      await manager.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('metadata manager delta listeners', () => {
  it('answers an admin change only after listeners that return promises have finished', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-metadata-'));
    try {
      const started = await startManager(dir);
      const manager = started.manager;
      let created = false;
      manager.onMetadataDelta(async (delta) => {
        if (delta.topicsCreated.length === 0) return;
        await new Promise((resolve) => setImmediate(resolve));
        created = true;
      });
      await manager.controller.createTopics([newTopic('served', 1)], false);
      assert.equal(created, true);
      await started.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
