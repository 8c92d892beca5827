import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FileHandlePool, StorageIOError, nodeFileSystem, readOffsetCheckpoint, writeOffsetCheckpoint } from '../../../storage/index.ts';
import { writeFilesAtomically } from '../../../storage/checkpoint.ts';
import { BackgroundErrors, realDisk, withTempDir } from '../../helpers/storage.ts';

describe('storage/checkpoint and the handle cache', () => {
  it('replaces several files of a directory at once; one that fails leaves the others written', () =>
    withTempDir(async (dir) => {
      await writeFilesAtomically(realDisk(), dir, [
        { path: join(dir, 'a'), data: Buffer.from('A') },
        { path: join(dir, 'b'), data: Buffer.from('B') },
      ]);
      assert.deepEqual([await readFile(join(dir, 'a'), 'utf8'), await readFile(join(dir, 'b'), 'utf8')], ['A', 'B']);
      // A rename cannot replace a directory that is not empty.
      await mkdir(join(dir, 'c', 'inside'), { recursive: true });
      await assert.rejects(
        writeFilesAtomically(realDisk(), dir, [
          { path: join(dir, 'a'), data: Buffer.from('A2') },
          { path: join(dir, 'c'), data: Buffer.from('C') },
        ]),
        StorageIOError,
      );
      assert.equal(await readFile(join(dir, 'a'), 'utf8'), 'A2');
      assert.deepEqual((await readdir(dir)).sort(), ['a', 'b', 'c'], 'no temp file left behind');
    }));

  it('writes and reads Kafka offset checkpoints, topics with dashes included', () =>
    withTempDir(async (dir) => {
      const path = join(dir, 'recovery-point-offset-checkpoint');
      await writeOffsetCheckpoint(
        realDisk(),
        path,
        new Map([
          ['a-b-c-0', 12],
          ['x-7', 0],
        ]),
      );
      assert.equal(await readFile(path, 'utf8'), '0\n2\na-b-c 0 12\nx 7 0\n');
      assert.deepEqual(
        [...(await readOffsetCheckpoint(nodeFileSystem, path))],
        [
          ['a-b-c-0', 12],
          ['x-7', 0],
        ],
      );
      assert.deepEqual([...(await readOffsetCheckpoint(nodeFileSystem, join(dir, 'missing')))], []);
      await writeFile(path, '0\n3\nx 7 0\n');
      await assert.rejects(readOffsetCheckpoint(nodeFileSystem, path), StorageIOError);
    }));

  it('keeps at most maxOpen idle handles and never closes a leased one', () =>
    withTempDir(async (dir) => {
      const pool = new FileHandlePool({ maxOpenFiles: 2, onError: new BackgroundErrors().sink });
      const paths = ['a', 'b', 'c', 'd'].map((n) => join(dir, n));
      for (const p of paths) await writeFile(p, p);
      const held = await pool.acquire(paths[0]!);
      for (const p of paths.slice(1)) (await pool.acquire(p)).release();
      assert.ok(pool.openCount <= 2);
      const buf = Buffer.alloc(paths[0]!.length);
      await held.handle.read(buf, 0, buf.length, 0);
      assert.equal(buf.toString(), paths[0]);
      held.release();
      await pool.closeAll();
    }));
});
