import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { OFFSETS_TOPIC } from '../../../protocol/internal-topics.ts';
import { buildUncompressedRecordBatch } from '../../../protocol/records/index.ts';
import { LogManager } from '../../../storage/log-manager.ts';
import { BrokerConfig } from '../../../src/config/broker-config.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import { offsetsTopicSpec } from '../../../src/coordinator/internal-topics.ts';
import { coordinatorTopicAccess } from '../../../src/coordinator/topic-access.ts';
import type { MetadataManager } from '../../../src/metadata/manager.ts';
import { ReplicaManager } from '../../../src/replication/replica-manager.ts';
import { LogManagerProvider } from '../../../src/replication/storage-adapter.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';

describe('coordinatorTopicAccess (__consumer_offsets)', () => {
  let dir: string;
  let logs: LogManager;
  let replicas: ReplicaManager;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-offsets-access-'));
    logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
    replicas = new ReplicaManager({ brokerId: 1, logs: new LogManagerProvider(logs) });
  });

  afterEach(async () => {
    replicas.shutdown();
    await logs.shutdown();
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a partition up to its log end: a new leader’s high watermark lags commits a previous leader acknowledged', async () => {
    // A broker just made leader, its follower yet to fetch: the high watermark is still 0.
    await replicas.applyPartitionState(
      {
        topic: OFFSETS_TOPIC,
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        partition: 0,
        leaderId: 1,
        leaderEpoch: 1,
        partitionEpoch: 1,
        replicas: [1, 2],
        isr: [1, 2],
      },
      topicConfigLookup({}),
    );
    const log = replicas.getPartition(OFFSETS_TOPIC, 0)!.log;
    for (const value of ['commit-1', 'commit-2']) {
      await log.appendAsLeader(buildUncompressedRecordBatch({}, [{ key: Buffer.from('k'), value: Buffer.from(value), timestamp: 1 }]), 1);
    }
    assert.equal(log.highWatermark, 0);
    const access = coordinatorTopicAccess(offsetsTopicSpec(new BrokerConfig()), {} as MetadataManager, replicas, async () => []);
    const offsets: number[] = [];
    for await (const batch of access.readBatches(0)) offsets.push(batch.baseOffset);
    assert.deepEqual(offsets, [0, 1]);
  });

  it('tells when what a load read is committed: once the high watermark passes it, and throws once it no longer leads', async () => {
    const state = {
      topic: OFFSETS_TOPIC,
      topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
      partition: 0,
      leaderId: 1,
      leaderEpoch: 1,
      partitionEpoch: 1,
      replicas: [1, 2],
      isr: [1, 2],
    };
    await replicas.applyPartitionState(state, topicConfigLookup({}));
    const partition = replicas.getPartition(OFFSETS_TOPIC, 0)!;
    await partition.log.appendAsLeader(
      buildUncompressedRecordBatch({}, [{ key: Buffer.from('k'), value: Buffer.from('v'), timestamp: 1 }]),
      1,
    );
    const config = new BrokerConfig({ overrides: new Map([['offsets.commit.timeout.ms', '20']]) });
    const access = coordinatorTopicAccess(offsetsTopicSpec(config), {} as MetadataManager, replicas, async () => []);
    assert.equal(await access.awaitCommitted(0, 1), false, 'the follower has not fetched it');

    const waiting = access.awaitCommitted(0, 1);
    partition.updateFollowerFetchState(2, 1, 0, Date.now(), 1, -1n);
    replicas.producePurgatory.checkAndComplete(partition.key);
    assert.equal(await waiting, true);

    await replicas.applyPartitionState({ ...state, leaderId: 2, leaderEpoch: 2, partitionEpoch: 2 }, topicConfigLookup({}));
    await assert.rejects(
      access.awaitCommitted(0, 1),
      (err) => err instanceof KafkaError && err.code === Errors.NOT_LEADER_OR_FOLLOWER.code,
    );
  });
});
