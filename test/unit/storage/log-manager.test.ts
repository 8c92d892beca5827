import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLEAN_SHUTDOWN_FILE, LogManager, nodeFileSystem, readOffsetCheckpoint, writeOffsetCheckpoint } from '../../../storage/index.ts';
import type { LogConfig, LogManagerOptions } from '../../../storage/index.ts';
import { BackgroundErrors, ManualClock, headers, logConfig, realDisk, simpleBatch, withTempDir } from '../../helpers/storage.ts';

const NOW = 1_700_000_000_000;

type StartOptions = Partial<Omit<LogManagerOptions, 'defaultConfig'>> & { defaultConfig?: Partial<LogConfig> };

function start(dir: string, clock: ManualClock, extra: StartOptions = {}): Promise<LogManager> {
  return LogManager.startup({
    logDirs: [dir],
    clock,
    onBackgroundError: new BackgroundErrors().sink,
    ...extra,
    defaultConfig: logConfig(extra.defaultConfig),
  });
}

describe('storage/log-manager', () => {
  it("keeps the broker epoch in the clean-shutdown marker as Kafka's JSON and reads it back; none after a crash or from a bad marker", () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock);
      assert.equal(m.previousBrokerEpoch, -1n, 'a new dir has no previous epoch');
      await m.shutdown(4242n);
      assert.equal(await readFile(join(dir, CLEAN_SHUTDOWN_FILE), 'utf8'), '{"version":0,"brokerEpoch":4242}');
      const again = await start(dir, clock);
      assert.equal(again.previousBrokerEpoch, 4242n);
      // Not shut down: the next start finds no marker, as after a crash.
      const crashed = await start(dir, clock);
      assert.equal(crashed.previousBrokerEpoch, -1n);
      await crashed.shutdown(7n);
      await writeFile(join(dir, CLEAN_SHUTDOWN_FILE), 'not json');
      const unreadable = await start(dir, clock);
      assert.equal(unreadable.hadCleanShutdown.get(dir), true);
      assert.equal(unreadable.previousBrokerEpoch, -1n, 'a marker it cannot read proves no epoch');
      await unreadable.shutdown();
      assert.equal(await readFile(join(dir, CLEAN_SHUTDOWN_FILE), 'utf8'), '{"version":0,"brokerEpoch":-1}');
    }));

  it('creates logs as <topic>-<partition> and reloads them after a clean shutdown', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock);
      const log = await m.getOrCreateLog('my-topic', 3);
      assert.equal(await m.getOrCreateLog('my-topic', 3), log);
      await log.append(await simpleBatch(4, NOW), { leaderEpoch: 2 });
      log.highWatermark = 4;
      await m.shutdown();
      assert.ok((await stat(join(dir, CLEAN_SHUTDOWN_FILE))).isFile());
      assert.ok((await stat(join(dir, 'my-topic-3', '00000000000000000000.log'))).isFile());
      assert.deepEqual([...(await readOffsetCheckpoint(nodeFileSystem, join(dir, 'replication-offset-checkpoint')))], [['my-topic-3', 4]]);
      assert.deepEqual(
        [...(await readOffsetCheckpoint(nodeFileSystem, join(dir, 'recovery-point-offset-checkpoint')))],
        [['my-topic-3', 4]],
      );
      // As Kafka: a log starting at its first segment needs no log-start entry.
      assert.deepEqual([...(await readOffsetCheckpoint(nodeFileSystem, join(dir, 'log-start-offset-checkpoint')))], []);

      const again = await start(dir, clock);
      assert.equal(again.hadCleanShutdown.get(dir), true);
      await assert.rejects(stat(join(dir, CLEAN_SHUTDOWN_FILE)));
      const reloaded = again.getLog('my-topic', 3)!;
      assert.equal(reloaded.logEndOffset, 4);
      assert.equal(reloaded.highWatermark, 4);
      assert.equal(reloaded.latestEpoch, 2);
      // The active segment loads on first use: appends continue at the log end.
      assert.equal((await reloaded.append(await simpleBatch(1, NOW), { leaderEpoch: 2 })).firstOffset, 4);
      assert.deepEqual(
        headers((await reloaded.read(0, 1 << 20)).records).map((h) => h.baseOffset),
        [0, 4],
      );
      await again.shutdown();
    }));

  it('a start after a clean stop rewrites no checkpoint; a log start past the first segment is kept', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock);
      const log = await m.getOrCreateLog('t', 0);
      await log.append(await simpleBatch(4, NOW), { leaderEpoch: 0 });
      log.highWatermark = 4;
      await log.deleteRecordsBefore(2);
      await m.shutdown();
      const names = ['recovery-point-offset-checkpoint', 'log-start-offset-checkpoint', 'replication-offset-checkpoint'];
      assert.deepEqual([...(await readOffsetCheckpoint(nodeFileSystem, join(dir, 'log-start-offset-checkpoint')))], [['t-0', 2]]);
      const inodes = await Promise.all(names.map(async (n) => (await stat(join(dir, n))).ino));

      const again = await start(dir, clock);
      assert.equal(again.getLog('t', 0)!.logStartOffset, 2);
      // The offsets are those the files hold: nothing is rewritten (a rewrite is a rename, a new inode).
      assert.deepEqual(await Promise.all(names.map(async (n) => (await stat(join(dir, n))).ino)), inodes);
      await again.checkpointAll();
      assert.deepEqual(await Promise.all(names.map(async (n) => (await stat(join(dir, n))).ino)), inodes);
      again.getLog('t', 0)!.highWatermark = 3;
      await again.checkpointAll();
      const after = await Promise.all(names.map(async (n) => (await stat(join(dir, n))).ino));
      assert.deepEqual([after[0], after[1]], [inodes[0], inodes[1]], 'only the changed file is written');
      assert.notEqual(after[2], inodes[2]);
      assert.deepEqual([...(await readOffsetCheckpoint(nodeFileSystem, join(dir, 'replication-offset-checkpoint')))], [['t-0', 3]]);
      await again.shutdown();
    }));

  it('recovers from the recovery-point checkpoint after an unclean stop', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock, { defaultConfig: { segmentBytes: 500 } });
      const log = await m.getOrCreateLog('t', 0);
      for (let i = 0; i < 20; i++) await log.append(await simpleBatch(2, NOW));
      await log.flush();
      await m.checkpointAll();
      // No shutdown: the marker is missing, like after a crash.
      const again = await start(dir, clock, { defaultConfig: { segmentBytes: 500 } });
      assert.equal(again.hadCleanShutdown.get(dir), false);
      assert.equal(again.getLog('t', 0)!.logEndOffset, 40);
      await again.shutdown();
      await m.pool.closeAll();
    }));

  it('runs the cleaner on compacted logs and keeps its position in cleaner-offset-checkpoint', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const options = {
        defaultConfig: { segmentBytes: 300 },
        topicConfig: (t: string) => (t === 'compacted' ? { cleanupPolicy: 'compact' as const } : undefined),
      };
      const m = await start(dir, clock, options);
      const log = await m.getOrCreateLog('compacted', 0);
      for (let i = 0; i < 10; i++) await log.append(await simpleBatch(3, NOW));
      await log.roll();
      log.highWatermark = log.logEndOffset;
      const result = await m.cleaner.clean(log);
      assert.ok(result !== null && result.removedRecords > 0);
      await m.shutdown();
      assert.equal(await readFile(join(dir, 'cleaner-offset-checkpoint'), 'utf8'), `0\n1\ncompacted 0 ${result.cleanedUpTo}\n`);
      const again = await start(dir, clock, options);
      assert.equal(again.cleaner.firstDirtyOffset(again.getLog('compacted', 0)!), result.cleanedUpTo);
      await again.shutdown();
    }));

  it('deletes a log and its directory', () =>
    withTempDir(async (dir) => {
      const m = await start(dir, new ManualClock(NOW));
      await m.getOrCreateLog('gone', 0);
      assert.equal(await m.deleteLog('gone', 0), true);
      assert.equal(m.getLog('gone', 0), undefined);
      assert.deepEqual(
        (await readdir(dir)).filter((n) => n.startsWith('gone')),
        [],
      );
      await m.shutdown();
    }));

  it('skips directories that are not partitions and removes leftover -delete directories', () =>
    withTempDir(async (dir) => {
      await mkdir(join(dir, 'not a partition'));
      await mkdir(join(dir, 'old-0.abc-delete'));
      await writeOffsetCheckpoint(realDisk(), join(dir, 'recovery-point-offset-checkpoint'), new Map([['x-1', 0]]));
      const m = await start(dir, new ManualClock(NOW));
      assert.deepEqual(m.allLogs(), []);
      assert.deepEqual(
        (await readdir(dir)).filter((n) => n.endsWith('-delete')),
        [],
      );
      await m.shutdown();
    }));
});

describe('storage/retention', () => {
  it('deletes segments past retention.ms by their largest timestamp, rolling the active one if it expired', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock, { defaultConfig: { segmentBytes: 300, retentionMs: 10_000, fileDeleteDelayMs: 0 } });
      const log = await m.getOrCreateLog('t', 0);
      for (let i = 0; i < 12; i++) await log.append(await simpleBatch(2, NOW + i * 1000));
      log.highWatermark = log.logEndOffset;
      const segments = log.segmentCount;
      assert.ok(segments >= 3);
      clock.nowMs = NOW + 12_500; // batches stamped before NOW + 2500 have expired
      const deleted = await m.runRetention();
      assert.ok(deleted > 0 && deleted < segments);
      const first = log.allSegments[0]!;
      assert.ok((await first.largestTimestampMs()) >= NOW + 2500);
      assert.equal(log.logStartOffset, first.baseOffset);
      clock.nowMs = NOW + 100_000;
      await m.runRetention();
      assert.equal(log.segmentCount, 1);
      assert.equal(log.activeSegment.sizeBytes, 0);
      assert.equal(log.logStartOffset, 24);
      assert.equal(log.logEndOffset, 24);
      await m.shutdown();
    }));

  it('deletes the oldest segments beyond retention.bytes', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock, {
        defaultConfig: { segmentBytes: 300, retentionBytes: 600, retentionMs: -1, fileDeleteDelayMs: 0 },
      });
      const log = await m.getOrCreateLog('t', 0);
      for (let i = 0; i < 10; i++) await log.append(await simpleBatch(2, NOW, 60));
      log.highWatermark = log.logEndOffset;
      const sizeBefore = log.sizeBytes;
      assert.ok((await m.runRetention()) > 0);
      // Kafka deletes a segment only while the log stays at or above retention.bytes without it.
      assert.ok(log.sizeBytes < sizeBefore);
      assert.ok(log.sizeBytes >= 600 && log.sizeBytes - log.allSegments[0]!.sizeBytes < 600, `size ${log.sizeBytes}`);
      const r = await log.read(log.logStartOffset, 1 << 20);
      assert.equal(headers(r.records)[0]!.baseOffset, log.logStartOffset);
      await m.shutdown();
    }));

  it('never deletes segments at or above the high watermark', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock, { defaultConfig: { segmentBytes: 300, retentionMs: 1, fileDeleteDelayMs: 0 } });
      const log = await m.getOrCreateLog('t', 0);
      for (let i = 0; i < 6; i++) await log.append(await simpleBatch(2, NOW));
      log.highWatermark = 0;
      clock.advance(1_000_000);
      assert.equal(await m.runRetention(), 0);
      assert.equal(log.logStartOffset, 0);
      await m.shutdown();
    }));

  it('with cleanup.policy=compact only drops segments below the log start offset', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const m = await start(dir, clock, {
        defaultConfig: { segmentBytes: 300, retentionMs: 1, cleanupPolicy: 'compact', fileDeleteDelayMs: 0 },
      });
      const log = await m.getOrCreateLog('t', 0);
      for (let i = 0; i < 6; i++) await log.append(await simpleBatch(2, NOW));
      log.highWatermark = log.logEndOffset;
      clock.advance(1_000_000);
      assert.equal(await m.runRetention(), 0);
      await log.deleteRecordsBefore(7);
      assert.ok(log.allSegments[0]!.baseOffset <= 7);
      assert.ok(log.allSegments[1] === undefined || log.allSegments[1].baseOffset > 7);
      await m.shutdown();
    }));
});
