import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogManager } from '../../../storage/log-manager.ts';
import { MetadataImage, type MetadataDelta } from '../../../src/metadata/image.ts';
import { ConfigResourceType, type MetadataRecord, type PartitionRecord } from '../../../src/metadata/records.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import { ReplicaMetadataPublisher } from '../../../src/replication/metadata-publisher.ts';
import { ReplicaManager } from '../../../src/replication/replica-manager.ts';
import { LogManagerProvider } from '../../../src/replication/storage-adapter.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';
import { buildUncompressedRecordBatch } from '../../../protocol/records/index.ts';

const TOPIC_ID = 'dG9waWMtb25lLWlkLTAwMQ';

function partitionRecord(partitionId: number, leader: number, replicas: number[], leaderEpoch = 0): MetadataRecord {
  const data: PartitionRecord = {
    partitionId,
    topicId: TOPIC_ID,
    replicas,
    isr: replicas,
    removingReplicas: [],
    addingReplicas: [],
    leader,
    leaderRecoveryState: 0,
    leaderEpoch,
    partitionEpoch: 0,
    directories: [],
    eligibleLeaderReplicas: null,
    lastKnownElr: null,
  };
  return { type: 'PartitionRecord', data };
}

describe('ReplicaMetadataPublisher', () => {
  let dir: string;
  let logs: LogManager;
  let rmgr: ReplicaManager;
  let publisher: ReplicaMetadataPublisher;
  let image: MetadataImage;
  const errors: unknown[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-pub-'));
    logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
    rmgr = new ReplicaManager({ brokerId: 1, logs: new LogManagerProvider(logs) });
    publisher = new ReplicaMetadataPublisher(rmgr, {
      topicConfig: (img, topic) => topicConfigLookup(img.topicConfigs(topic)),
      onError: (err) => errors.push(err),
    });
    image = MetadataImage.EMPTY;
  });

  afterEach(async () => {
    rmgr.shutdown();
    await logs.shutdown();
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(errors, []);
  });

  async function commit(records: MetadataRecord[]): Promise<MetadataDelta> {
    const { image: next, delta } = image.apply(records, image.offset + records.length, 1);
    image = next;
    publisher.onMetadataDelta(delta, next);
    await publisher.whenIdle();
    return delta;
  }

  it('hosts the partitions this broker replicates, as leader with the metadata epoch', async () => {
    await commit([
      { type: 'TopicRecord', data: { name: 'orders', topicId: TOPIC_ID } },
      partitionRecord(0, 1, [1]),
      partitionRecord(1, 2, [2, 1]),
      partitionRecord(2, 2, [2]),
    ]);
    const p0 = rmgr.getPartition('orders', 0)!;
    assert.equal(p0.isLeader, true);
    assert.equal(p0.leaderEpoch, 0);
    assert.equal(rmgr.getPartition('orders', 1)!.isLeader, false, 'a follower replica');
    assert.equal(rmgr.getPartition('orders', 2), undefined, 'not a replica here');
    assert.ok(existsSync(join(dir, 'orders-0')));
    assert.equal(rmgr.topicNameOf(TOPIC_ID), 'orders');
  });

  it('applies leader changes, config changes and topic deletion', async () => {
    await commit([{ type: 'TopicRecord', data: { name: 'orders', topicId: TOPIC_ID } }, partitionRecord(0, 1, [1])]);
    await commit([
      {
        type: 'PartitionChangeRecord',
        data: {
          partitionId: 0,
          topicId: TOPIC_ID,
          isr: null,
          leader: 1,
          replicas: null,
          removingReplicas: null,
          addingReplicas: null,
          leaderRecoveryState: -1,
          directories: null,
          eligibleLeaderReplicas: null,
          lastKnownElr: null,
        },
      },
    ]);
    const epochAfter = image.partition('orders', 0)!.leaderEpoch;
    assert.equal(rmgr.getPartition('orders', 0)!.leaderEpoch, epochAfter);

    await commit([
      {
        type: 'ConfigRecord',
        data: { resourceType: ConfigResourceType.TOPIC, resourceName: 'orders', name: 'max.message.bytes', value: '1234' },
      },
    ]);
    assert.equal(rmgr.getPartition('orders', 0)!.settings.maxMessageBytes, 1234);
    assert.equal(logs.getLog('orders', 0)!.config.maxMessageBytes, 1234, 'the log sees it too');

    await commit([{ type: 'RemoveTopicRecord', data: { topicId: TOPIC_ID } }]);
    assert.equal(rmgr.getPartition('orders', 0), undefined);
    assert.equal(logs.getLog('orders', 0), undefined);
  });

  it('applyImage hosts everything in an image (startup)', async () => {
    const { image: loaded } = MetadataImage.EMPTY.apply(
      [{ type: 'TopicRecord', data: { name: 'orders', topicId: TOPIC_ID } }, partitionRecord(0, 1, [1]), partitionRecord(1, 1, [1])],
      2,
      1,
    );
    await publisher.applyImage(loaded);
    assert.deepEqual([...rmgr.allPartitions()].map((p) => p.partition).sort(), [0, 1]);
  });

  it('keeps the logs a start-up image does not name until told the broker caught up (a snapshot may predate their topic)', async () => {
    const held = await logs.getOrCreateLog('later', 0);
    await held.append(buildUncompressedRecordBatch({}, [{ value: Buffer.from('kept'), timestamp: 1 }]), { assignOffsets: true });
    const strays = new ReplicaMetadataPublisher(rmgr, {
      topicConfig: (img, topic) => topicConfigLookup(img.topicConfigs(topic)),
      onError: (err) => errors.push(err),
      removeStrayLogs: (keep) => logs.removeStrayLogs(keep),
    });
    // The image a restarted broker replays first: its latest snapshot, from before 'later'.
    await strays.applyImage(MetadataImage.EMPTY);
    assert.equal(logs.getLog('later', 0)?.logEndOffset, 1);
    // Caught up, the image names what the broker hosts: anything else on disk is stray.
    await strays.removeStrayLogs();
    assert.equal(logs.getLog('later', 0), undefined);
    assert.equal(strays.strayLogsRemoved, 1);
  });
});
