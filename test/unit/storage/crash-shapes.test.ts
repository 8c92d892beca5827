// The shapes a crash leaves in a log dir, and that start-up must always get past.
import assert from 'node:assert/strict';
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LeaderEpochCache, LogManager } from '../../../storage/index.ts';
import { writeCheckpointLines, writeFileAtomically } from '../../../storage/checkpoint.ts';
import { BackgroundErrors, ManualClock, logConfig, realDisk, simpleBatch, withTempDir } from '../../helpers/storage.ts';

const NOW = 1_700_000_000_000;
const start = (dir: string) =>
  LogManager.startup({
    logDirs: [dir],
    defaultConfig: logConfig(),
    clock: new ManualClock(NOW),
    onBackgroundError: new BackgroundErrors().sink,
  });
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

describe('storage: crash shapes at start-up', () => {
  it('a leader-epoch checkpoint written into a deleted partition dir is a no-op, not a failure', () =>
    withTempDir(async (dir) => {
      const partitionDir = join(dir, 't-0');
      await mkdir(partitionDir);
      const cache = await LeaderEpochCache.load(realDisk(), partitionDir, false);
      cache.assign(3, 0);
      await rm(partitionDir, { recursive: true });
      await cache.persist();
      assert.equal(await exists(partitionDir), false);
      const disk = realDisk();
      assert.equal(await writeCheckpointLines(disk, join(partitionDir, 'x'), ['1'], true), false);
      await assert.rejects(writeCheckpointLines(disk, join(partitionDir, 'x'), ['1']), /ENOENT|writing/);
    }));

  it('concurrent writes of one checkpoint file are serialized and the last one wins', () =>
    withTempDir(async (dir) => {
      const path = join(dir, 'cp');
      const disk = realDisk();
      await Promise.all(Array.from({ length: 20 }, (_, i) => writeFileAtomically(disk, path, Buffer.from(String(i)))));
      const { readFile } = await import('node:fs/promises');
      assert.equal(await readFile(path, 'utf8'), '19');
      assert.deepEqual((await readdir(dir)).sort(), ['cp']);
    }));

  it('a half-created partition dir (empty, or a .log without indexes) loads as a log', () =>
    withTempDir(async (dir) => {
      await mkdir(join(dir, 'empty-0'));
      const m0 = await start(dir);
      const log = await m0.getOrCreateLog('half', 0);
      await log.append(await simpleBatch(3, NOW), { leaderEpoch: 1 });
      await log.flush();
      // SIGKILL shape: no clean-shutdown marker, indexes and epoch checkpoint gone.
      await rm(join(dir, 'half-0', '00000000000000000000.index'));
      await rm(join(dir, 'half-0', '00000000000000000000.timeindex'));
      await rm(join(dir, 'half-0', 'leader-epoch-checkpoint'), { force: true });
      const m = await start(dir);
      assert.equal(m.getLog('empty', 0)!.logEndOffset, 0);
      assert.equal(m.getLog('half', 0)!.logEndOffset, 3);
      assert.equal(m.getLog('half', 0)!.latestEpoch, 1);
      assert.equal(m.recovery.partitions, 2);
      await m.shutdown();
    }));

  it('a partition dir renamed for deletion (-delete) is removed and counted', () =>
    withTempDir(async (dir) => {
      await mkdir(join(dir, 'gone-0.0123456789abcdef-delete'));
      await writeFile(join(dir, 'gone-0.0123456789abcdef-delete', '00000000000000000000.log'), 'x');
      const m = await start(dir);
      assert.deepEqual(await readdir(dir).then((n) => n.filter((x) => x.includes('gone'))), []);
      assert.equal(m.recovery.removedDirs, 1);
      assert.equal(m.getLog('gone', 0), undefined);
      await m.shutdown();
    }));

  it('.tmp checkpoints left behind are removed, and a torn checkpoint recovers instead of failing', () =>
    withTempDir(async (dir) => {
      const m0 = await start(dir);
      const log = await m0.getOrCreateLog('t', 0);
      await log.append(await simpleBatch(5, NOW), { leaderEpoch: 2 });
      await m0.shutdown();
      await writeFile(join(dir, 'recovery-point-offset-checkpoint.tmp'), '0\n1\nt 0');
      await writeFile(join(dir, 't-0', 'leader-epoch-checkpoint.tmp'), '0\n');
      await writeFile(join(dir, 't-0', 'leader-epoch-checkpoint'), '0\n7\n2 0\n');
      await writeFile(join(dir, 'replication-offset-checkpoint'), 'garbage');
      const errors: string[] = [];
      const m = await LogManager.startup({
        logDirs: [dir],
        defaultConfig: logConfig(),
        clock: new ManualClock(NOW),
        onBackgroundError: (_e, what) => errors.push(what),
      });
      const reloaded = m.getLog('t', 0)!;
      assert.equal(reloaded.logEndOffset, 5);
      assert.equal(reloaded.latestEpoch, 2, 'epochs rebuilt from the batches');
      assert.equal(await exists(join(dir, 'recovery-point-offset-checkpoint.tmp')), false);
      assert.equal(await exists(join(dir, 't-0', 'leader-epoch-checkpoint.tmp')), false);
      assert.equal(m.recovery.removedTmpFiles, 1);
      assert.equal(errors.length, 1);
      await m.shutdown();
    }));

  it('removes stray logs the caller does not keep (topics deleted while the node was down)', () =>
    withTempDir(async (dir) => {
      const m0 = await start(dir);
      await m0.getOrCreateLog('kept', 0);
      await m0.getOrCreateLog('stray', 0);
      await m0.getOrCreateLog('stray', 1);
      await m0.shutdown();
      const m = await start(dir);
      assert.equal(await m.removeStrayLogs((topic) => topic === 'kept'), 2);
      assert.equal(m.recovery.removedDirs, 2);
      assert.ok(m.getLog('kept', 0));
      assert.deepEqual(
        (await readdir(dir)).filter((n) => n.startsWith('stray')),
        [],
      );
      await m.shutdown();
    }));
});
