import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { DEFAULT_SYNC_READ_MAX_BYTES, FileHandlePool, MemoryFileSystem } from '../../../storage/index.ts';
import type { FileHandle, FileSystem } from '../../../storage/index.ts';
import { BackgroundErrors, withTempDir } from '../../helpers/storage.ts';

// Reads up to syncReadMaxBytes are made in place, larger ones on the thread pool: both give
// the same bytes, on the real disk and on the simulated one.

function pool(fileSystem: FileSystem | undefined, syncReadMaxBytes: number | undefined): FileHandlePool {
  return new FileHandlePool({ onError: new BackgroundErrors().sink, fileSystem, syncReadMaxBytes });
}

/** Counts the reads a handle is asked to make on the thread pool. */
function counted(handle: FileHandle): { handle: FileHandle; threadPoolReads: () => number } {
  let reads = 0;
  const read = handle.read.bind(handle);
  const wrapped = Object.create(handle) as FileHandle & { read: FileHandle['read'] };
  wrapped.read = (...args) => {
    reads++;
    return read(...args);
  };
  return { handle: wrapped, threadPoolReads: () => reads };
}

describe('storage/file-pool: reads', () => {
  for (const disk of ['the real disk', 'the simulated disk']) {
    it(`reads in place and on the thread pool give the same bytes, shorter only at the end of the file (${disk})`, () =>
      withTempDir(async (dir) => {
        const memory = disk === 'the simulated disk' ? new MemoryFileSystem() : undefined;
        const path = memory === undefined ? join(dir, 'file') : '/file';
        await fc.assert(
          fc.asyncProperty(fc.uint8Array({ maxLength: 150_000 }), fc.nat(160_000), fc.nat(160_000), async (bytes, position, length) => {
            const content = Buffer.from(bytes);
            if (memory === undefined) await writeFile(path, content);
            else {
              const fh = await memory.open(path, 'w');
              await fh.write(content, 0, content.length, 0);
              await fh.close();
            }
            const expected = content.subarray(position, position + length);
            for (const syncReadMaxBytes of [0, DEFAULT_SYNC_READ_MAX_BYTES, 1 << 30]) {
              const files = pool(memory, syncReadMaxBytes);
              const lease = await files.acquire(path);
              try {
                assert.deepEqual(await files.read(lease.handle, position, length), expected);
              } finally {
                lease.release();
                await files.closeAll();
              }
            }
          }),
          { numRuns: 30 },
        );
      }));
  }

  it('reads up to syncReadMaxBytes do not go to the thread pool; larger ones do', () =>
    withTempDir(async (dir) => {
      const path = join(dir, 'file');
      const content = Buffer.alloc(3 * DEFAULT_SYNC_READ_MAX_BYTES, 7);
      await writeFile(path, content);
      const files = pool(undefined, undefined);
      const lease = await files.acquire(path);
      try {
        const { handle, threadPoolReads } = counted(lease.handle);
        await files.read(handle, 100, DEFAULT_SYNC_READ_MAX_BYTES);
        assert.equal(threadPoolReads(), 0);
        await files.read(handle, 100, DEFAULT_SYNC_READ_MAX_BYTES + 1);
        assert.ok(threadPoolReads() > 0);
      } finally {
        lease.release();
        await files.closeAll();
      }
    }));
});
