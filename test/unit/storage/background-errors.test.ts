// Storage work nobody awaits (flushes, deferred deletions, the cleaner, checkpoints) reports
// its failures to the BackgroundErrorSink it was given, instead of dropping them.
import assert from 'node:assert/strict';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { CLEAN_SHUTDOWN_FILE, FileHandlePool, LogManager, PartitionLog, REPLICATION_OFFSET_CHECKPOINT } from '../../../storage/index.ts';
import type { HandleLease } from '../../../storage/file-pool.ts';
import { BackgroundErrors, ManualClock, batch, logConfig, poolWith, simpleBatch, withTempDir } from '../../helpers/storage.ts';

const NOW = 1_700_000_000_000;

/** Resolves once `condition` holds, polling the real clock (the tasks under test run on real timers). */
async function eventually(condition: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A pool whose handles fail to fsync while `failSync` is set. */
class FailingSyncPool extends FileHandlePool {
  failSync = false;
  override async acquire(path: string): Promise<HandleLease> {
    const lease = await super.acquire(path);
    if (!this.failSync) return lease;
    const handle = new Proxy(lease.handle, {
      get: (target, prop) => {
        if (prop === 'sync') return () => Promise.reject(Object.assign(new Error('input/output error'), { code: 'EIO' }));
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as FileHandle;
    return { handle, release: () => lease.release() };
  }
}

describe('storage: background failures are reported', () => {
  it('a flush.ms flush that fails is reported with the partition, and the recovery point stays behind', () =>
    withTempDir(async (dir) => {
      const background = new BackgroundErrors();
      const pool = new FailingSyncPool({ onError: background.sink, clock: new ManualClock(NOW) });
      const log = await PartitionLog.open({
        dir: join(dir, 't-0'),
        config: logConfig({ flushMs: 10 }),
        pool,
        onBackgroundError: background.sink,
      });
      pool.failSync = true;
      await log.append(await simpleBatch(2, NOW));
      await eventually(() => background.reported.length > 0, 'the failed flush to be reported');
      assert.deepEqual(background.whats, [`flushing ${join(dir, 't-0')}`]);
      const [failure] = background.reported;
      assert.equal((failure?.err as { code?: string } | undefined)?.code, 'EIO');
      assert.equal(log.recoveryPoint, 0);
      pool.failSync = false;
      await log.close();
      assert.equal(log.recoveryPoint, 2, 'the next flush retries it');
    }));

  it('a deferred segment deletion (file.delete.delay.ms) that fails is reported with the file', () =>
    withTempDir(async (dir) => {
      const background = new BackgroundErrors();
      const clock = new ManualClock(NOW);
      const partition = join(dir, 't-0');
      const log = await PartitionLog.open({
        dir: partition,
        config: logConfig({ segmentBytes: 300, retentionMs: 1000, fileDeleteDelayMs: 30 }),
        pool: poolWith(clock, background.sink),
        onBackgroundError: background.sink,
      });
      for (let i = 0; i < 6; i++) await log.append(await simpleBatch(2, NOW));
      log.highWatermark = log.logEndOffset;
      clock.advance(10_000);
      assert.ok((await log.deleteOldSegments()) > 0);
      // Something else took the renamed file's place with what unlink cannot remove.
      const deleted = (await readdir(partition)).find((n) => n.endsWith('.log.deleted'));
      assert.ok(deleted !== undefined);
      await rm(join(partition, deleted));
      await mkdir(join(partition, deleted, 'inside'), { recursive: true });
      await eventually(() => background.reported.length > 0, 'the failed deletion to be reported');
      assert.ok(background.whats.includes(`deleting ${join(partition, deleted)}`), JSON.stringify(background.whats));
      await log.close();
    }));

  it('a cleaning pass that fails is reported by the log manager, and the log stays as it was', () =>
    withTempDir(async (dir) => {
      const background = new BackgroundErrors();
      const clock = new ManualClock(NOW);
      const m = await LogManager.startup({
        logDirs: [dir],
        defaultConfig: logConfig({ cleanupPolicy: 'compact', segmentBytes: 400, minCleanableDirtyRatio: 0 }),
        clock,
        onBackgroundError: background.sink,
      });
      const log = await m.getOrCreateLog('c', 0);
      for (let round = 0; round < 6; round++) {
        await log.append(
          await batch([
            { key: 'k', value: `v${round}`, timestamp: NOW },
            { key: 'j', value: `w${round}`, timestamp: NOW },
          ]),
        );
      }
      await log.roll();
      log.highWatermark = log.logEndOffset;
      // The file the pass writes its output to cannot be created.
      await mkdir(join(dir, 'c-0', '00000000000000000000.log.cleaned', 'inside'), { recursive: true });
      const sizeBefore = log.sizeBytes;
      m.cleaner.start(60_000);
      const cleaned = join(dir, 'c-0', '00000000000000000000.log.cleaned');
      await eventually(() => background.whats.includes(`cleaning ${join(dir, 'c-0')}`), 'the failed cleaning to be reported');
      // So is the leftover it could not remove (a `.cleaned` file is also removed at the next start).
      assert.ok(background.whats.includes(`deleting ${cleaned}`), JSON.stringify(background.whats));
      assert.equal(log.sizeBytes, sizeBefore);
      await m.shutdown();
    }));

  it('a periodic checkpoint that fails takes its log dir offline (as Kafka does on its IOException)', () =>
    withTempDir(async (dir) => {
      const background = new BackgroundErrors();
      const m = await LogManager.startup({
        logDirs: [dir],
        defaultConfig: logConfig(),
        clock: new ManualClock(NOW),
        onBackgroundError: background.sink,
        tasks: {
          retentionCheckIntervalMs: 60_000,
          flushOffsetCheckpointIntervalMs: 60_000,
          flushStartOffsetCheckpointIntervalMs: 60_000,
          highWatermarkCheckpointIntervalMs: 10,
          cleanerEnable: false,
          cleanerBackoffMs: 15_000,
        },
      });
      // The checkpoint's rename cannot replace a directory that is not empty; a high watermark
      // that moved gives the tick something to write (an unchanged checkpoint is not rewritten).
      await rm(join(dir, REPLICATION_OFFSET_CHECKPOINT), { force: true });
      await mkdir(join(dir, REPLICATION_OFFSET_CHECKPOINT, 'inside'), { recursive: true });
      const log = await m.getOrCreateLog('t', 0);
      await log.append(await simpleBatch(1, NOW));
      log.highWatermark = 1;
      await eventually(() => m.logDirFailures.isOffline(dir), 'the failed checkpoint to take the dir offline');
      assert.equal(m.getLog('t', 0), undefined, 'its logs are no longer served');
      await assert.rejects(m.getOrCreateLog('t', 1), /offline/);
      await m.shutdown();
      await assert.rejects(stat(join(dir, CLEAN_SHUTDOWN_FILE)), 'an offline dir gets no clean-shutdown marker');
    }));
});
