import assert from 'node:assert/strict';
import { FileHandlePool, LogManager, MemoryFileSystem, PartitionLog, createDirectory } from '../../../storage/index.ts';
import type { FileHandle, LogConfig, OpenFlags } from '../../../storage/index.ts';
import { BackgroundErrors, ManualClock, logConfig, recordsOf, simpleBatch } from '../../helpers/storage.ts';

// On a file system that makes a name durable only when its directory is fsynced (POSIX at
// its strictest: MemoryFileSystem's 'directory-fsync'), fsyncing a segment keeps nothing if
// the segment's name, or its partition directory's, is lost: flushed records must survive
// a crash there too, as Kafka's LocalLog.flush sees to by flushing the log's directory.

const NOW = 1_700_000_000_000;

/** The simulated disk, recording which directories are opened to be fsynced. */
class CountingDisk extends MemoryFileSystem {
  readonly dirSyncs: string[] = [];
  constructor(private readonly dirs: ReadonlySet<string>) {
    super({ nameDurability: 'directory-fsync' });
  }
  override open(path: string, flags: OpenFlags): Promise<FileHandle> {
    if (flags === 'r' && this.dirs.has(path)) this.dirSyncs.push(path);
    return super.open(path, flags);
  }
}

const config = (overrides: Partial<LogConfig> = {}): LogConfig => logConfig({ segmentBytes: 2048, ...overrides });

function open(
  fs: MemoryFileSystem,
  extra: { recoveryPoint?: number; cleanShutdown?: boolean; config?: LogConfig } = {},
  unsafeBypassFsync = false,
) {
  const background = new BackgroundErrors();
  return PartitionLog.open({
    dir: '/data/t-0',
    config: config(),
    pool: new FileHandlePool({ onError: background.sink, fileSystem: fs, clock: new ManualClock(NOW), unsafeBypassFsync }),
    onBackgroundError: background.sink,
    ...extra,
  });
}

async function offsetsOf(log: PartitionLog): Promise<number[]> {
  const offsets: number[] = [];
  let at = log.logStartOffset;
  while (at < log.logEndOffset) {
    const r = await log.read(at, 1 << 20);
    // A log whose files were lost still claims the recovery point it was opened with.
    if (r.records.length === 0) break;
    for (const rec of await recordsOf(r.records)) offsets.push(rec.offset);
    at = r.nextOffset;
  }
  return offsets;
}

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

describe('storage: flushed records survive a crash where names are durable only by a directory fsync', () => {
  // What the page cache wrote back of the unflushed tail: nothing, or all of it.
  for (const [what, random] of [
    ['nothing', () => 0],
    ['all', () => 0.999],
  ] as const) {
    it(`a new log keeps every flushed record, in its first segment and in rolled ones (unflushed bytes written back: ${what})`, async () => {
      const fs = new MemoryFileSystem({ nameDurability: 'directory-fsync' });
      // The log dir itself is durable, as the log manager and the broker leave it.
      await createDirectory(fs, '/data');
      const log = await open(fs);
      for (let i = 0; i < 20; i++) await log.append(await simpleBatch(2, NOW + i, 100), { leaderEpoch: 1 });
      assert.ok(log.segmentCount > 2, `the appends rolled segments (${log.segmentCount})`);
      await log.flush();
      const flushed = log.logEndOffset;
      assert.equal(flushed, 40);
      fs.crash(random);
      const recovered = await open(fs, { cleanShutdown: false, recoveryPoint: flushed });
      assert.deepEqual(await offsetsOf(recovered), range(40));
      await recovered.close();
    });
  }

  it('a log manager that creates its log dir keeps a new partition acknowledged with flush.messages=1', async () => {
    const fs = new MemoryFileSystem({ nameDurability: 'directory-fsync' });
    const start = (): Promise<LogManager> =>
      LogManager.startup({
        logDirs: ['/srv/kafka/logs'],
        defaultConfig: config({ flushMessages: 1 }),
        clock: new ManualClock(NOW),
        onBackgroundError: new BackgroundErrors().sink,
        fileSystem: fs,
      });
    const first = await start();
    const log = await first.getOrCreateLog('t', 0);
    for (let i = 0; i < 20; i++) await log.append(await simpleBatch(2, NOW + i, 100), { leaderEpoch: 1 });
    // No checkpoint and no shutdown: only the flushes stand between the records and the crash.
    fs.crash(() => 0);
    const recovered = await start();
    const again = recovered.getLog('t', 0);
    assert.ok(again !== undefined, 'the partition directory survived');
    assert.deepEqual(await offsetsOf(again), range(40));
    await recovered.shutdown();
  });

  it('fsyncs the directory when a flush covers a segment created since the last one, not at every append', async () => {
    const fs = new CountingDisk(new Set(['/', '/data', '/data/t-0']));
    await createDirectory(fs, '/data', false);
    const log = await open(fs, { config: config({ flushMessages: 1 }) });
    // The first flush makes the new segment's names durable, and the name of the directory
    // open() created (the first epoch's checkpoint file fsyncs the directory on its own).
    await log.append(await simpleBatch(1, NOW), { leaderEpoch: 1 });
    assert.deepEqual(fs.dirSyncs.slice(-2), ['/data/t-0', '/data']);
    const afterFirst = fs.dirSyncs.length;
    for (let i = 0; i < 5; i++) await log.append(await simpleBatch(1, NOW), { leaderEpoch: 1 });
    assert.deepEqual(fs.dirSyncs.slice(afterFirst), []);
    await log.roll();
    await log.append(await simpleBatch(1, NOW), { leaderEpoch: 1 });
    await log.append(await simpleBatch(1, NOW), { leaderEpoch: 1 });
    assert.deepEqual(fs.dirSyncs.slice(afterFirst), ['/data/t-0'], 'once for the rolled segment');
    assert.equal(fs.dirSyncs.filter((d) => d === '/data').length, 1, 'the parent once in the life of the log');
    await log.close();
  });

  it('unsafe.bypass.fsync fsyncs no directory either', async () => {
    const fs = new CountingDisk(new Set(['/', '/data', '/data/t-0', '/other', '/other/logs', '/other/logs/t-0']));
    await createDirectory(fs, '/data', false);
    const log = await open(fs, { config: config({ flushMessages: 1 }) }, true);
    for (let i = 0; i < 20; i++) await log.append(await simpleBatch(2, NOW + i, 100), { leaderEpoch: 1 });
    assert.ok(log.segmentCount > 2);
    await log.close();
    const manager = await LogManager.startup({
      logDirs: ['/other/logs'],
      defaultConfig: config({ flushMessages: 1 }),
      unsafeBypassFsync: true,
      onBackgroundError: new BackgroundErrors().sink,
      fileSystem: fs,
    });
    const managed = await manager.getOrCreateLog('t', 0);
    for (let i = 0; i < 20; i++) await managed.append(await simpleBatch(2, NOW + i, 100), { leaderEpoch: 1 });
    await manager.shutdown();
    assert.deepEqual(fs.dirSyncs, []);
  });
});
