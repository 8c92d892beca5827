import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LeaderEpochCache } from '../../../storage/index.ts';
import { realDisk, withTempDir } from '../../helpers/storage.ts';

describe('storage/leader-epoch-cache', () => {
  it('assigns increasing epochs and ignores repeats of the latest', () =>
    withTempDir(async (dir) => {
      const c = await LeaderEpochCache.load(realDisk(), dir);
      assert.equal(c.assign(1, 0), true);
      assert.equal(c.assign(1, 5), false);
      assert.equal(c.assign(3, 10), true);
      assert.deepEqual(c.all(), [
        { epoch: 1, startOffset: 0 },
        { epoch: 3, startOffset: 10 },
      ]);
      // A lower epoch (a new leader after truncation) replaces what it conflicts with.
      c.assign(2, 8);
      assert.deepEqual(c.all(), [
        { epoch: 1, startOffset: 0 },
        { epoch: 2, startOffset: 8 },
      ]);
    }));

  it('answers endOffsetFor like Kafka (OffsetForLeaderEpoch)', () =>
    withTempDir(async (dir) => {
      const c = await LeaderEpochCache.load(realDisk(), dir);
      c.assign(2, 10);
      c.assign(4, 20);
      c.assign(5, 30);
      assert.deepEqual(c.endOffsetFor(5, 42), { epoch: 5, endOffset: 42 });
      assert.deepEqual(c.endOffsetFor(4, 42), { epoch: 4, endOffset: 30 });
      assert.deepEqual(c.endOffsetFor(3, 42), { epoch: 2, endOffset: 20 });
      assert.deepEqual(c.endOffsetFor(1, 42), { epoch: 1, endOffset: 10 });
      assert.deepEqual(c.endOffsetFor(6, 42), { epoch: -1, endOffset: -1 });
      assert.deepEqual(c.endOffsetFor(-1, 42), { epoch: -1, endOffset: -1 });
      assert.equal(c.epochForOffset(25), 4);
      assert.equal(c.epochForOffset(5), -1);
    }));

  it('truncates from the end and from the start, and persists in Kafka text format', () =>
    withTempDir(async (dir) => {
      const c = await LeaderEpochCache.load(realDisk(), dir);
      c.assign(2, 10);
      c.assign(4, 20);
      c.assign(5, 30);
      c.truncateFromEnd(30);
      assert.deepEqual(
        c.all().map((e) => e.epoch),
        [2, 4],
      );
      c.truncateFromStart(25);
      assert.deepEqual(c.all(), [{ epoch: 4, startOffset: 25 }]);
      await c.persist();
      assert.equal(await readFile(join(dir, 'leader-epoch-checkpoint'), 'utf8'), '0\n1\n4 25\n');
      const again = await LeaderEpochCache.load(realDisk(), dir);
      assert.deepEqual(again.all(), [{ epoch: 4, startOffset: 25 }]);
    }));

  it('persists only a state the file does not hold already (no file reads as no entries)', () =>
    withTempDir(async (dir) => {
      const path = join(dir, 'leader-epoch-checkpoint');
      const c = await LeaderEpochCache.load(realDisk(), dir, false);
      await c.persist();
      await assert.rejects(stat(path), { code: 'ENOENT' }, 'nothing to write for an empty cache and no file');
      c.assign(1, 0);
      await c.persist();
      const written = await stat(path);
      await c.persist();
      assert.equal((await stat(path)).ino, written.ino, 'the same entries are not rewritten');
      const reloaded = await LeaderEpochCache.load(realDisk(), dir);
      await reloaded.persist();
      assert.equal((await stat(path)).ino, written.ino, 'nor after a reload');
      reloaded.assign(2, 5);
      await reloaded.persist();
      assert.equal(await readFile(path, 'utf8'), '0\n2\n1 0\n2 5\n');
      // A file that does not parse is rewritten, whatever the entries.
      await writeFile(path, 'garbage');
      const damaged = await LeaderEpochCache.load(realDisk(), dir);
      assert.equal(damaged.damaged, true);
      await damaged.persist();
      assert.equal(await readFile(path, 'utf8'), '0\n0\n');
    }));

  it('kept in memory only (persistent: false), it never writes the file', () =>
    withTempDir(async (dir) => {
      const c = await LeaderEpochCache.load(realDisk(), dir, false, false);
      c.assign(3, 7);
      await c.persist();
      await assert.rejects(stat(join(dir, 'leader-epoch-checkpoint')), { code: 'ENOENT' });
      assert.deepEqual(c.all(), [{ epoch: 3, startOffset: 7 }]);
    }));
});
