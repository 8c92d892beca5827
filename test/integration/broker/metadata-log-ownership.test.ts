// `__cluster_metadata-0` sits in the data log dir but belongs to the Raft client alone: the
// storage engine's LogManager never loads it (as Kafka's LogManager skips the metadata topic),
// so data-dir retention never trims it and a restart finds it intact.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { LogManager } from '../../../storage/log-manager.ts';
import { startBroker, type EmbeddedBroker } from '../../../src/index.ts';
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';

const METADATA_DIR = `${METADATA_TOPIC}-0`;

async function segmentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith('.log')).sort();
}

describe('the metadata log in the data log dir', function () {
  this.timeout(60_000);
  let dataDir: string;
  /** The broker a test runs, closed here when a failed assertion skipped its own close(). */
  let broker: EmbeddedBroker | undefined;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-metadata-owner-'));
  });

  afterEach(async () => {
    await broker?.close();
    broker = undefined;
    await rm(dataDir, { recursive: true, force: true });
  });

  it("is not loaded by the broker's LogManager, survives data-dir retention, and is intact after a restart", async () => {
    // Every data log is past retention at once: a retention pass deletes whatever it owns.
    const overrides = { 'log.retention.ms': 1, 'log.retention.check.interval.ms': 3_600_000 };
    broker = await startBroker({ dataDir, overrides });
    const kafka = new Kafka({ clientId: 'metadata-owner', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'data', numPartitions: 2 }] });
    await admin.disconnect();

    const logManager = broker.broker['logManager'] as LogManager;
    assert.equal(logManager.getLog(METADATA_TOPIC, 0), undefined);
    assert.ok(logManager.allLogs().every((l) => l.topic !== METADATA_TOPIC));
    assert.ok(logManager.getLog('data', 0) !== undefined, "data partitions are the LogManager's");

    const metadataDir = join(dataDir, METADATA_DIR);
    const segments = await segmentFiles(metadataDir);
    assert.ok(segments.length > 0);
    const before = await readFile(join(metadataDir, segments[0]!));
    await logManager.runRetention();
    assert.deepEqual(await segmentFiles(metadataDir), segments, 'retention deleted no metadata segment');
    await broker.close();

    broker = await startBroker({ dataDir, overrides });
    try {
      const after = await readFile(join(metadataDir, segments[0]!));
      assert.ok(after.length >= before.length);
      assert.deepEqual(after.subarray(0, before.length), before, 'the metadata log kept every byte it had');
      const restarted = new Kafka({ clientId: 'metadata-owner', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
      await restarted.connect();
      const described = await restarted.fetchTopicMetadata({ topics: ['data'] });
      await restarted.disconnect();
      assert.deepEqual(described.topics[0]!.partitions.map((p) => p.partitionId).sort(), [0, 1]);
    } finally {
      await broker.close();
    }
  });

  it('is skipped by LogManager.startup when its topic is in skipTopics, and no other dir is', async () => {
    const first = await LogManager.startup({
      logDirs: [dataDir],
      defaultConfig: logConfig(),
      onBackgroundError: new BackgroundErrors().sink,
    });
    try {
      const data = await first.getOrCreateLog('orders', 0);
      const metadata = await first.getOrCreateLog(METADATA_TOPIC, 0);
      assert.ok(data !== undefined && metadata !== undefined);
    } finally {
      await first.shutdown();
    }

    const second = await LogManager.startup({
      logDirs: [dataDir],
      defaultConfig: logConfig(),
      onBackgroundError: new BackgroundErrors().sink,
      skipTopics: [METADATA_TOPIC],
    });
    try {
      assert.equal(second.getLog(METADATA_TOPIC, 0), undefined);
      assert.ok(second.getLog('orders', 0) !== undefined);
      assert.ok((await readdir(dataDir)).includes(METADATA_DIR), 'a skipped dir is left where it is');
    } finally {
      await second.shutdown();
    }
  });
});
