import assert from 'node:assert/strict';
import fc from 'fast-check';
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

function openCompacted(dir: string, clock: ManualClock, config: LogConfig = compactConfig): Promise<PartitionLog> {
  return PartitionLog.open({ onBackgroundError: background.sink, dir: join(dir, 'c-0'), config, pool: poolWith(clock, background.sink) });
}

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

type TxnOp =
  | { kind: 'plain'; key: number }
  | { kind: 'txn'; producer: number; key: number }
  | { kind: 'end'; producer: number; commit: boolean }
  | { kind: 'roll' };

const txnOp: fc.Arbitrary<TxnOp> = fc.oneof(
  fc.record({ kind: fc.constant('plain' as const), key: fc.nat(3) }),
  fc.record({ kind: fc.constant('txn' as const), producer: fc.integer({ min: 1, max: 2 }), key: fc.nat(3) }),
  fc.record({ kind: fc.constant('end' as const), producer: fc.integer({ min: 1, max: 2 }), commit: fc.boolean() }),
  fc.record({ kind: fc.constant('roll' as const) }),
);

/**
 * What a read_committed consumer reads below `lso`: records outside aborted transactions (by
 * the log's aborted-transaction index, as Fetch reports it), and how many it skipped.
 */
async function readCommitted(
  log: PartitionLog,
  lso: number,
): Promise<{
  records: { offset: number; key: string | null; value: string | null }[];
  abortedRecords: number;
  transactional: Set<number>;
}> {
  const aborted = await log.abortedTransactions(log.logStartOffset, lso);
  const records: { offset: number; key: string | null; value: string | null }[] = [];
  let abortedRecords = 0;
  const transactional = new Set<number>();
  let offset = log.logStartOffset;
  while (offset < lso) {
    const r = await log.read(offset, 1 << 20);
    if (r.records.length === 0) break;
    for (const b of headers(r.records)) {
      if (b.isControl) continue;
      const isAborted =
        b.isTransactional &&
        aborted.some((t) => t.producerId === b.producerId && t.firstOffset <= b.baseOffset && b.baseOffset <= t.lastOffset);
      for (const rec of await recordsOf(Buffer.from(b.bytes()))) {
        if (rec.offset < offset || rec.offset >= lso) continue;
        if (isAborted) abortedRecords++;
        else records.push({ offset: rec.offset, key: rec.key, value: rec.value });
        if (b.isTransactional) transactional.add(rec.offset);
      }
    }
    offset = r.nextOffset;
  }
  return { records, abortedRecords, transactional };
}

function latestByKey(records: readonly { key: string | null; value: string | null }[]): Map<string | null, string | null> {
  const latest = new Map<string | null, string | null>();
  for (const r of records) latest.set(r.key, r.value);
  return latest;
}

async function controlBatches(log: PartitionLog): Promise<number[]> {
  const offsets: number[] = [];
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20);
    if (r.records.length === 0) break;
    for (const b of headers(r.records)) if (b.isControl && b.baseOffset >= offset) offsets.push(b.baseOffset);
    offset = r.nextOffset;
  }
  return offsets;
}

describe('storage/cleaner', () => {
  it('keeps only the latest record per key below the active segment, with offsets unchanged', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await openCompacted(dir, clock);
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
      const log = await openCompacted(dir, clock, { ...compactConfig, segmentBytes: 1 << 20 });
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
      const log = await openCompacted(dir, clock, { ...compactConfig, minCompactionLagMs: 60_000 });
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
      const log = await openCompacted(dir, clock);
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

  it('compacts committed transactions, removes aborted ones, keeps the markers and never cleans at or past the LSO (property)', async () => {
    // The property must not hold vacuously: across the runs, committed transactional records and aborted ones are removed.
    let committedTxnRecordsRemoved = 0;
    let abortedRecordsRemoved = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(txnOp, { minLength: 1, maxLength: 40 }), (ops) =>
        withTempDir(async (dir) => {
          const clock = new ManualClock(NOW);
          const log = await openCompacted(dir, clock);
          const open = new Set<number>();
          const sequences = new Map<number, number>();
          let value = 0;
          for (const o of ops) {
            if (o.kind === 'plain') {
              await log.append(await batch([{ key: `k${o.key}`, value: `v${value++}`, timestamp: NOW }]));
            } else if (o.kind === 'txn') {
              const sequence = sequences.get(o.producer) ?? 0;
              sequences.set(o.producer, sequence + 1);
              const options = { producerId: BigInt(o.producer), producerEpoch: 0, baseSequence: sequence, isTransactional: true };
              await log.append(await batch([{ key: `k${o.key}`, value: `v${value++}`, timestamp: NOW }], options));
              open.add(o.producer);
            } else if (o.kind === 'end' && open.has(o.producer)) {
              const marker = { commit: o.commit, producerId: BigInt(o.producer), producerEpoch: 0, coordinatorEpoch: 0, timestamp: NOW };
              await log.append(await buildEndTxnMarker(marker), { origin: 'coordinator' });
              open.delete(o.producer);
            } else if (o.kind === 'roll') {
              await log.roll();
            }
          }
          await log.append(await batch([{ key: 'last', value: 'last', timestamp: NOW }]));
          await log.roll();
          log.highWatermark = log.logEndOffset;
          const lso = log.lastStableOffset;
          const before = await readCommitted(log, lso);
          const tailBefore = (await readAll(log)).filter((r) => r.offset >= lso);
          const markersBefore = await controlBatches(log);
          await new LogCleaner({ onError: background.sink, clock }).clean(log, true);
          const after = await readCommitted(log, lso);
          assert.deepEqual(
            latestByKey(after.records),
            latestByKey(before.records),
            'a read_committed reader ends with the same value per key',
          );
          assert.ok(after.abortedRecords <= before.abortedRecords);
          abortedRecordsRemoved += before.abortedRecords - after.abortedRecords;
          const kept = new Set(after.records.map((r) => r.offset));
          committedTxnRecordsRemoved += before.records.filter((r) => before.transactional.has(r.offset) && !kept.has(r.offset)).length;
          assert.deepEqual(
            (await readAll(log)).filter((r) => r.offset >= lso),
            tailBefore,
            'nothing at or past the LSO changes',
          );
          assert.deepEqual(await controlBatches(log), markersBefore, 'every marker is kept');
          await log.close();
        }),
      ),
      {
        numRuns: 40,
        // A history that surely compacts a committed record and removes an aborted one, so that
        // the checks below hold whatever the random runs drew.
        examples: [
          [
            [
              { kind: 'txn', producer: 1, key: 1 },
              { kind: 'end', producer: 1, commit: true },
              { kind: 'plain', key: 1 },
              { kind: 'txn', producer: 2, key: 2 },
              { kind: 'end', producer: 2, commit: false },
              { kind: 'roll' },
            ],
          ],
        ],
      },
    );
    assert.ok(committedTxnRecordsRemoved > 0, 'committed transactional records were compacted');
    assert.ok(abortedRecordsRemoved > 0, 'aborted records were removed');
  });

  it('yields to the event loop while cleaning', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await openCompacted(dir, clock, { ...compactConfig, segmentBytes: 64 * 1024 });
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
