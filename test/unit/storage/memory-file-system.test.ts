import assert from 'node:assert/strict';
import fc from 'fast-check';
import { FileQuorumStateStore } from '../../../src/metadata/raft/quorum-state.ts';
import { FileHandlePool, LogManager, MemoryFileSystem, PartitionLog, StorageIOError } from '../../../storage/index.ts';
import type { FileSystem, LogConfig } from '../../../storage/index.ts';
import { BackgroundErrors, ManualClock, logConfig, simpleBatch } from '../../helpers/storage.ts';

// The simulated disk: its own crash semantics first, then the production log code on it.

const NOW = 1_700_000_000_000;

/** A seeded PRNG (mulberry32), so a failing run replays from its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function writeAll(fs: FileSystem, path: string, data: Buffer, sync: boolean): Promise<void> {
  const fh = await fs.open(path, 'w');
  await fh.write(data, 0, data.length, 0);
  if (sync) await fh.sync();
  await fh.close();
}

async function fsyncDir(fs: FileSystem, dir: string): Promise<void> {
  const fh = await fs.open(dir, 'r');
  await fh.sync();
  await fh.close();
}

async function errnoOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code;
  }
  return undefined;
}

describe('storage/memory-file-system: a file system in memory', () => {
  it('answers as node:fs does: contents, directories, renames and errno codes', async () => {
    const fs = new MemoryFileSystem();
    assert.equal(await fs.mkdir('/a/b', { recursive: true }), '/a');
    assert.equal(await fs.mkdir('/a/b', { recursive: true }), undefined);
    await fs.writeFile('/a/b/x', 'hello');
    assert.equal(await fs.readFile('/a/b/x', 'utf8'), 'hello');
    await fs.rename('/a/b/x', '/a/y');
    assert.deepEqual(await fs.readdir('/a'), ['b', 'y']);
    const entries = await fs.readdir('/a', { withFileTypes: true });
    assert.deepEqual(
      entries.map((e) => [e.name, e.isDirectory(), e.isFile()]),
      [
        ['b', true, false],
        ['y', false, true],
      ],
    );
    assert.equal((await fs.stat('/a/y')).size, 5);
    assert.equal(await errnoOf(fs.readFile('/a/b/x')), 'ENOENT');
    assert.equal(await errnoOf(fs.open('/a/missing', 'r+')), 'ENOENT');
    assert.equal(await errnoOf(fs.writeFile('/nowhere/f', 'x')), 'ENOENT');
    const fh = await fs.open('/a/y', 'r+');
    await fs.unlink('/a/y');
    // An unlinked file stays readable through a handle opened before.
    const buf = Buffer.alloc(5);
    assert.equal((await fh.read(buf, 0, 5, 0)).bytesRead, 5);
    assert.equal(buf.toString(), 'hello');
    await fh.close();
    await fs.rm('/a', { recursive: true, force: true });
    assert.deepEqual(await fs.readdir('/'), []);
    await fs.rm('/a', { recursive: true, force: true });
  });

  it('completes asynchronous operations only when the deferred completion runs', async () => {
    const pending: (() => void)[] = [];
    const fs = new MemoryFileSystem({ defer: (complete) => pending.push(complete) });
    let done = false;
    const write = fs.writeFile('/f', 'x').then(() => {
      done = true;
    });
    await Promise.resolve();
    assert.equal(done, false);
    assert.equal(pending.length, 1);
    pending.shift()?.();
    await write;
    assert.equal(done, true);
    assert.equal(fs.readFileSync('/f').toString(), 'x', 'a synchronous call acts at once');
  });

  it('keeps fsynced bytes through a crash and never invents a byte it did not hold', () =>
    fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              kind: fc.constant('write' as const),
              at: fc.double({ min: 0, max: 1.2, noNaN: true }),
              bytes: fc.uint8Array({ minLength: 1, maxLength: 40 }),
            }),
            fc.record({ kind: fc.constant('truncate' as const), at: fc.double({ min: 0, max: 1, noNaN: true }) }),
            fc.constant({ kind: 'sync' as const }),
          ),
          { maxLength: 25 },
        ),
        fc.integer(),
        async (ops, seed) => {
          const fs = new MemoryFileSystem();
          const fh = await fs.open('/f', 'w+');
          await fh.sync();
          let current = Buffer.alloc(0);
          let synced = Buffer.alloc(0);
          let changedSinceSync = false;
          for (const op of ops) {
            if (op.kind === 'write') {
              const at = Math.floor(op.at * current.length);
              await fh.write(Buffer.from(op.bytes), 0, op.bytes.length, at);
              const next = Buffer.alloc(Math.max(current.length, at + op.bytes.length));
              current.copy(next);
              Buffer.from(op.bytes).copy(next, at);
              current = next;
              changedSinceSync = true;
            } else if (op.kind === 'truncate') {
              const to = Math.floor(op.at * current.length);
              await fh.truncate(to);
              current = current.subarray(0, to);
              changedSinceSync = true;
            } else {
              await fh.sync();
              synced = Buffer.from(current);
              changedSinceSync = false;
            }
          }
          fs.crash(seeded(seed));
          const after = fs.readFileSync('/f');
          if (!changedSinceSync) assert.deepEqual(after, synced);
          assert.ok(after.length <= Math.max(current.length, synced.length));
          for (let i = 0; i < after.length; i++) {
            assert.ok(after[i] === current[i] || after[i] === synced[i], `byte ${i} was never written there`);
          }
          await assert.rejects(fh.stat(), /EBADF/);
        },
      ),
      { numRuns: 200 },
    ));

  it('after a crash keeps the synced part of an append and a prefix of the rest', () =>
    fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 64 }), fc.uint8Array({ maxLength: 64 }), fc.integer(), async (synced, unsynced, seed) => {
        const fs = new MemoryFileSystem();
        await writeAll(fs, '/f', Buffer.from(synced), true);
        const fh = await fs.open('/f', 'r+');
        await fh.write(Buffer.from(unsynced), 0, unsynced.length, synced.length);
        fs.crash(seeded(seed));
        const after = fs.readFileSync('/f');
        const whole = Buffer.concat([Buffer.from(synced), Buffer.from(unsynced)]);
        assert.ok(after.length >= synced.length);
        assert.deepEqual(after, whole.subarray(0, after.length));
      }),
      { numRuns: 200 },
    ));

  it('journal: a name is durable after any fsync that follows it, and lost without one', async () => {
    const fs = new MemoryFileSystem();
    await fs.mkdir('/d', { recursive: true });
    await writeAll(fs, '/d/kept', Buffer.from('k'), true);
    await writeAll(fs, '/d/lost', Buffer.from('l'), false);
    fs.crash(() => 0.99);
    assert.deepEqual(await fs.readdir('/d'), ['kept']);
    assert.equal(fs.readFileSync('/d/kept').toString(), 'k');
    // A rename replacing a file, then a directory fsync: the new content under the old name.
    await writeAll(fs, '/d/kept.tmp', Buffer.from('new'), true);
    await fs.rename('/d/kept.tmp', '/d/kept');
    await fsyncDir(fs, '/d');
    fs.crash(() => 0);
    assert.deepEqual(await fs.readdir('/d'), ['kept']);
    assert.equal(fs.readFileSync('/d/kept').toString(), 'new');
  });

  it('directory-fsync: only a fsync of the directory makes its names durable', async () => {
    const fs = new MemoryFileSystem({ nameDurability: 'directory-fsync' });
    await fs.mkdir('/d', { recursive: true });
    await fsyncDir(fs, '/');
    await writeAll(fs, '/d/f', Buffer.from('data'), true);
    fs.crash(() => 0.99);
    assert.deepEqual(await fs.readdir('/d'), [], 'the file was fsynced, its name was not');
    await writeAll(fs, '/d/f', Buffer.from('data'), true);
    await fsyncDir(fs, '/d');
    await fs.unlink('/d/f');
    fs.crash(() => 0.99);
    assert.equal(fs.readFileSync('/d/f').toString(), 'data', 'the unlink was not made durable');
  });

  it('never completes an operation a crash interrupted', async () => {
    const pending: (() => void)[] = [];
    const fs = new MemoryFileSystem({ defer: (complete) => pending.push(complete) });
    let settled = false;
    void fs.writeFile('/f', 'x').finally(() => {
      settled = true;
    });
    fs.crash(() => 0);
    for (const complete of pending.splice(0)) complete();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false);
    assert.throws(() => fs.readFileSync('/f'), /ENOENT/);
  });

  it('failWith makes operations under a prefix fail with the errno, until healed', async () => {
    const fs = new MemoryFileSystem();
    await fs.mkdir('/disk1', { recursive: true });
    await fs.mkdir('/disk2', { recursive: true });
    await fs.writeFile('/disk1/f', 'old');
    fs.failWith('ENOSPC', '/disk1');
    assert.equal(await errnoOf(fs.writeFile('/disk1/g', 'x')), 'ENOSPC');
    const fh = await fs.open('/disk1/f', 'r+');
    assert.equal(await errnoOf(fh.write(Buffer.from('x'), 0, 1, 3)), 'ENOSPC');
    assert.throws(() => fs.writeSync(fh.fd, Buffer.from('x'), 0, 1, 3), /ENOSPC/);
    assert.equal(await fs.readFile('/disk1/f', 'utf8'), 'old', 'a full disk still reads');
    await fs.writeFile('/disk2/f', 'fine');
    fs.failWith('EIO', '/disk1');
    assert.equal(await errnoOf(fs.readFile('/disk1/f')), 'EIO');
    assert.equal(await errnoOf(fh.sync()), 'EIO');
    assert.equal(await fs.readFile('/disk2/f', 'utf8'), 'fine');
    fs.failWith(null);
    assert.equal(await fs.readFile('/disk1/f', 'utf8'), 'old');
    await fh.close();
  });

  it('fills up: a write takes what fits, the next fails with ENOSPC, and statfs says so', async () => {
    const fs = new MemoryFileSystem({ capacityBytes: 8192 });
    const fh = await fs.open('/f', 'w');
    assert.equal((await fh.write(Buffer.alloc(8000), 0, 8000, 0)).bytesWritten, 8000);
    assert.equal((await fh.write(Buffer.alloc(500), 0, 500, 8000)).bytesWritten, 192);
    assert.equal(await errnoOf(fh.write(Buffer.alloc(1), 0, 1, 8192)), 'ENOSPC');
    assert.deepEqual(await fs.statfs('/'), { bsize: 4096, blocks: 2, bavail: 0 });
    await fh.truncate(0);
    assert.equal((await fs.statfs('/')).bavail, 2);
    await fh.close();
  });
});

describe('storage/memory-file-system: the log on the simulated disk', () => {
  const config = (overrides: Partial<LogConfig> = {}): LogConfig =>
    logConfig({ segmentBytes: 2048, indexIntervalBytes: 256, ...overrides });
  const open = (fs: MemoryFileSystem, extra: { recoveryPoint?: number; cleanShutdown?: boolean } = {}): Promise<PartitionLog> => {
    const background = new BackgroundErrors();
    return PartitionLog.open({
      dir: '/data/t-0',
      config: config(),
      pool: new FileHandlePool({ onError: background.sink, fileSystem: fs, clock: new ManualClock(NOW) }),
      onBackgroundError: background.sink,
      ...extra,
    });
  };

  async function readAll(log: PartitionLog): Promise<Buffer> {
    const parts: Buffer[] = [];
    let at = log.logStartOffset;
    while (at < log.logEndOffset) {
      const r = await log.read(at, 1 << 20);
      parts.push(r.records);
      at = r.nextOffset;
    }
    return Buffer.concat(parts);
  }

  it('keeps every batch appended before the last flush through a crash; what it recovers is a prefix of what was appended', async () => {
    // The crash must bite for the property to mean anything: some runs lose unflushed
    // batches, and some leave a torn batch that recovery cuts off.
    const seen = { lostUnflushed: 0, tornBatchCut: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ count: fc.integer({ min: 1, max: 8 }), valueBytes: fc.integer({ min: 0, max: 200 }), flush: fc.boolean() }), {
          minLength: 1,
          maxLength: 30,
        }),
        fc.integer(),
        fc.boolean(),
        async (appends, seed, fromRecoveryPoint) => {
          const fs = new MemoryFileSystem();
          const log = await open(fs);
          const appended: Buffer[] = [];
          let flushedBytes = 0;
          let flushedOffset = 0;
          for (const [i, a] of appends.entries()) {
            const data = await simpleBatch(a.count, NOW + i, a.valueBytes);
            await log.append(data, { leaderEpoch: 1 });
            // The append wrote its offsets into the buffer in place: it now holds the stored bytes.
            appended.push(Buffer.from(data));
            if (a.flush) {
              await log.flush();
              flushedBytes = appended.reduce((n, b) => n + b.length, 0);
              flushedOffset = log.logEndOffset;
            }
          }
          fs.crash(seeded(seed));
          // The recovery point a checkpoint would hold, or none (the whole log is validated).
          const recovered = await open(fs, { cleanShutdown: false, recoveryPoint: fromRecoveryPoint ? flushedOffset : 0 });
          const bytes = await readAll(recovered);
          const all = Buffer.concat(appended);
          assert.ok(bytes.length >= flushedBytes, `lost flushed data: ${bytes.length} < ${flushedBytes} bytes`);
          assert.deepEqual(bytes, all.subarray(0, bytes.length));
          let boundary = 0;
          const boundaries = new Set([0]);
          for (const b of appended) {
            boundary += b.length;
            boundaries.add(boundary);
          }
          assert.ok(boundaries.has(bytes.length), 'the recovered log ends at a batch boundary');
          if (bytes.length < all.length) seen.lostUnflushed++;
          if (recovered.truncatedOnRecoveryBytes > 0) seen.tornBatchCut++;
          assert.ok(recovered.logEndOffset >= flushedOffset);
          // It goes on from where it stopped.
          const next = await recovered.append(await simpleBatch(1, NOW), { leaderEpoch: 2 });
          assert.equal(next.firstOffset, recovered.logEndOffset - 1);
          await recovered.close();
        },
      ),
      { numRuns: 60 },
    );
    assert.ok(seen.lostUnflushed > 0 && seen.tornBatchCut > 0, `crashes that bit: ${JSON.stringify(seen)}`);
  });

  it('LogManager starts, checkpoints and recovers on it', async () => {
    const fs = new MemoryFileSystem();
    const start = (): Promise<LogManager> =>
      LogManager.startup({
        logDirs: ['/data'],
        defaultConfig: config({ flushMessages: 1 }),
        clock: new ManualClock(NOW),
        onBackgroundError: new BackgroundErrors().sink,
        fileSystem: fs,
      });
    const first = await start();
    const log = await first.getOrCreateLog('t', 0);
    for (let i = 0; i < 10; i++) await log.append(await simpleBatch(3, NOW + i), { leaderEpoch: 1 });
    await first.checkpointAll();
    await first.shutdown();
    const clean = await start();
    assert.equal(clean.hadCleanShutdown.get('/data'), true);
    assert.equal(clean.getLog('t', 0)?.logEndOffset, 30);
    const again = clean.getLog('t', 0) as PartitionLog;
    // flush.messages=1: every acknowledged append is fsynced, so an OS crash loses none.
    await again.append(await simpleBatch(2, NOW), { leaderEpoch: 2 });
    fs.crash(seeded(7));
    const recovered = await start();
    assert.equal(recovered.hadCleanShutdown.get('/data'), false);
    assert.equal(recovered.getLog('t', 0)?.logEndOffset, 32);
    await recovered.shutdown();
  });

  it('an append on a full disk fails as a storage error and leaves the log consistent', async () => {
    const fs = new MemoryFileSystem();
    const log = await open(fs);
    await log.append(await simpleBatch(2, NOW), { leaderEpoch: 1 });
    fs.capacityBytes = fs.usedBytes + 10;
    await assert.rejects(log.append(await simpleBatch(2, NOW, 100), { leaderEpoch: 1 }), (err: unknown) => {
      assert.ok(err instanceof StorageIOError);
      assert.equal(err.code, 'ENOSPC');
      return true;
    });
    fs.capacityBytes = 1 << 30;
    await log.append(await simpleBatch(1, NOW), { leaderEpoch: 1 });
    assert.equal(log.logEndOffset, 3);
    await log.close();
  });

  it('the Raft quorum state survives a crash once written', async () => {
    const fs = new MemoryFileSystem();
    await fs.mkdir('/meta', { recursive: true });
    const state = { leaderId: 2, leaderEpoch: 5, votedId: 2, votedDirectoryId: 'AAAAAAAAAAAAAAAAAAAAAA' };
    new FileQuorumStateStore('/meta', false, fs).write(state);
    fs.crash(() => 0);
    assert.deepEqual(new FileQuorumStateStore('/meta', false, fs).read(), state);
  });
});
