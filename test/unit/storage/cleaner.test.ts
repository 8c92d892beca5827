import assert from 'node:assert/strict';
import { copyFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LogCleaner, PartitionLog } from '../../../storage/index.ts';
import type { LogConfig } from '../../../storage/index.ts';
import { buildEndTxnMarker } from '../../../protocol/records/index.ts';
import { BackgroundErrors, ManualClock, batch, headers, logConfig, poolWith, recordsOf, withTempDir } from '../../helpers/storage.ts';
import type { TestRecord } from '../../helpers/storage.ts';

const NOW = 1_700_000_000_000;

const compactConfig: LogConfig = logConfig({
  cleanupPolicy: 'compact',
  segmentBytes: 400,
  fileDeleteDelayMs: 0,
  deleteRetentionMs: 10_000,
  minCleanableDirtyRatio: 0.5,
});

const background = new BackgroundErrors();

async function readAll(log: PartitionLog): Promise<{ offset: number; key: string | null; value: string | null }[]> {
  const out: { offset: number; key: string | null; value: string | null }[] = [];
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20);
    if (r.records.length === 0) break;
    for (const rec of await recordsOf(r.records))
      if (rec.offset >= offset) out.push({ offset: rec.offset, key: rec.key, value: rec.value });
    offset = r.nextOffset;
  }
  return out;
}

async function fill(log: PartitionLog, rounds: number, keys: number, clock: ManualClock, tombstoneKey?: string): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    const records: TestRecord[] = [];
    for (let k = 0; k < keys; k++) {
      const key = `k${k}`;
      records.push({ key, value: key === tombstoneKey && round === rounds - 1 ? null : `${key}@${round}`, timestamp: clock.nowMs });
    }
    await log.append(await batch(records));
  }
}

describe('storage/cleaner', () => {
  it('keeps only the latest record per key below the active segment, with offsets unchanged', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: compactConfig,
        pool: poolWith(clock, background.sink),
      });
      await fill(log, 8, 4, clock);
      await log.roll();
      log.highWatermark = log.logEndOffset;
      const before = await readAll(log);
      const cleaner = new LogCleaner({ onError: background.sink, clock });
      const result = await cleaner.clean(log);
      assert.ok(result !== null && result.removedRecords === 28, JSON.stringify(result));
      const after = await readAll(log);
      assert.deepEqual(
        after.map((r) => r.offset),
        [28, 29, 30, 31],
      );
      assert.deepEqual(
        after.map((r) => r.value),
        ['k0@7', 'k1@7', 'k2@7', 'k3@7'],
      );
      // Each kept record is the one that had that offset before.
      for (const r of after)
        assert.deepEqual(
          before.find((b) => b.offset === r.offset),
          r,
        );
      assert.ok(log.sizeBytes < result.sizeBeforeBytes);
      // New appends continue at the same log end.
      assert.equal((await log.append(await batch([{ key: 'k0', timestamp: NOW }]))).firstOffset, 32);
      await log.close();
      const reopened = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: compactConfig,
        pool: poolWith(clock, background.sink),
      });
      assert.deepEqual(
        (await readAll(reopened)).map((r) => r.offset),
        [28, 29, 30, 31, 32],
      );
      await reopened.close();
    }));

  it('never cleans the active segment or beyond the high watermark', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: { ...compactConfig, segmentBytes: 1 << 20 },
        pool: poolWith(clock, background.sink),
      });
      await fill(log, 5, 3, clock);
      log.highWatermark = log.logEndOffset;
      const cleaner = new LogCleaner({ onError: background.sink, clock });
      assert.equal(await cleaner.clean(log, true), null);
      await log.roll();
      log.highWatermark = 0;
      assert.equal(await cleaner.clean(log, true), null);
      assert.equal((await readAll(log)).length, 15);
      await log.close();
    }));

  it('waits for min.cleanable.dirty.ratio and min.compaction.lag.ms', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: { ...compactConfig, minCompactionLagMs: 60_000 },
        pool: poolWith(clock, background.sink),
      });
      await fill(log, 8, 4, clock);
      await log.roll();
      log.highWatermark = log.logEndOffset;
      const cleaner = new LogCleaner({ onError: background.sink, clock });
      assert.equal(await cleaner.clean(log), null, 'too young to compact');
      clock.advance(61_000);
      const first = await cleaner.clean(log);
      assert.ok(first !== null && first.removedRecords > 0);
      // Only a little new dirty data: below the ratio, so nothing happens.
      await log.append(await batch([{ key: 'k1', value: 'new', timestamp: clock.nowMs }]));
      await log.roll();
      log.highWatermark = log.logEndOffset;
      clock.advance(61_000);
      const range = await cleaner.cleanableRange(log);
      assert.ok(range.dirtyRatio > 0 && range.dirtyRatio < 0.5, `ratio ${range.dirtyRatio}`);
      assert.equal(await cleaner.clean(log), null);
      await log.close();
    }));

  it('keeps tombstones for delete.retention.ms, then removes them', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: compactConfig,
        pool: poolWith(clock, background.sink),
      });
      await fill(log, 6, 3, clock, 'k1');
      await log.roll();
      log.highWatermark = log.logEndOffset;
      const cleaner = new LogCleaner({ onError: background.sink, clock });
      await cleaner.clean(log, true);
      let all = await readAll(log);
      assert.deepEqual(
        all.map((r) => [r.key, r.value]),
        [
          ['k0', 'k0@5'],
          ['k1', null],
          ['k2', 'k2@5'],
        ],
      );
      clock.advance(20_000);
      await log.append(await batch([{ key: 'k9', value: 'x', timestamp: clock.nowMs }]));
      await log.roll();
      log.highWatermark = log.logEndOffset;
      await cleaner.clean(log, true);
      all = await readAll(log);
      assert.deepEqual(
        all.map((r) => [r.key, r.value]),
        [
          ['k0', 'k0@5'],
          ['k2', 'k2@5'],
          ['k9', 'x'],
        ],
      );
      await log.close();
    }));

  it('keeps control batches and transactional batches whole', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: compactConfig,
        pool: poolWith(clock, background.sink),
      });
      const txn = { producerId: 7n, producerEpoch: 0, isTransactional: true };
      await log.append(await batch([{ key: 'a', value: 't1', timestamp: NOW }], { ...txn, baseSequence: 0 }));
      const marker = await buildEndTxnMarker({ commit: true, producerId: 7n, producerEpoch: 0, coordinatorEpoch: 1, timestamp: NOW });
      await log.append(marker, { origin: 'coordinator' });
      await fill(log, 6, 2, clock);
      await log.roll();
      log.highWatermark = log.logEndOffset;
      await new LogCleaner({ onError: background.sink, clock }).clean(log, true);
      let offset = 0;
      const kinds: string[] = [];
      while (offset < log.logEndOffset) {
        const r = await log.read(offset, 1 << 20);
        for (const h of headers(r.records)) kinds.push(h.isControl ? 'control' : h.isTransactional ? 'txn' : 'data');
        offset = r.nextOffset;
      }
      assert.equal(kinds[0], 'txn');
      assert.equal(kinds[1], 'control');
      await log.close();
    }));

  it('yields to the event loop while cleaning', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: join(dir, 'c-0'),
        config: { ...compactConfig, segmentBytes: 64 * 1024 },
        pool: poolWith(clock, background.sink),
      });
      for (let i = 0; i < 150; i++) {
        const records: TestRecord[] = [];
        for (let k = 0; k < 50; k++) records.push({ key: `k${(i * 50 + k) % 500}`, value: 'v'.repeat(40), timestamp: NOW });
        await log.append(await batch(records));
      }
      await log.roll();
      log.highWatermark = log.logEndOffset;
      let ticks = 0;
      let spinning = true;
      const spin = (): void => {
        ticks++;
        if (spinning) setImmediate(spin);
      };
      setImmediate(spin);
      const result = await new LogCleaner({ onError: background.sink, clock, sliceMs: 1 }).clean(log, true);
      spinning = false;
      assert.ok(result !== null && result.removedRecords === 7000);
      assert.ok(ticks > 10, `event loop turned ${ticks} times during cleaning`);
      await log.close();
    }));

  it('completes a swap interrupted by a crash and discards unfinished .cleaned files', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const partition = join(dir, 'c-0');
      const log = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: partition,
        config: compactConfig,
        pool: poolWith(clock, background.sink),
      });
      await fill(log, 8, 4, clock);
      await log.roll();
      log.highWatermark = log.logEndOffset;
      await new LogCleaner({ onError: background.sink, clock }).clean(log, true);
      const cleanedView = await readAll(log);
      await log.close();
      // Pretend the crash hit after the commit point: the new file is still named .swap and the
      // stale index of the old segment is still there.
      const seg = '00000000000000000000';
      const { rename } = await import('node:fs/promises');
      await rename(join(partition, `${seg}.log`), join(partition, `${seg}.log.swap`));
      await writeFile(join(partition, `${seg}.log`), Buffer.alloc(100, 1));
      await copyFile(join(partition, `${seg}.log.swap`), join(partition, `${seg}.index.cleaned`));
      await writeFile(join(partition, '00000000000000000040.log.cleaned'), Buffer.alloc(10));
      const reopened = await PartitionLog.open({
        onBackgroundError: background.sink,
        dir: partition,
        config: compactConfig,
        pool: poolWith(clock, background.sink),
        cleanShutdown: false,
        recoveryPoint: 0,
      });
      assert.deepEqual(await readAll(reopened), cleanedView);
      const names = await readdir(partition);
      assert.deepEqual(
        names.filter((n) => n.endsWith('.swap') || n.endsWith('.cleaned')),
        [],
      );
      await reopened.close();
    }));
});
