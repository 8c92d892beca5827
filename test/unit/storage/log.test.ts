import assert from 'node:assert/strict';
import { writeSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { type RecordBatch, TimestampType } from '../../../protocol/records/batch.ts';
import {
  CorruptRecordError,
  FileHandlePool,
  OffsetOutOfRangeError,
  PartitionLog,
  ProducerStateError,
  RecordTooLargeError,
  StorageIOError,
  UnexpectedAppendOffsetError,
} from '../../../storage/index.ts';
import type { LogConfig, PartitionLogOptions } from '../../../storage/index.ts';
import {
  BackgroundErrors,
  ManualClock,
  batch,
  headers,
  logConfig,
  poolWith,
  recordsOf,
  simpleBatch,
  withTempDir,
} from '../../helpers/storage.ts';
import { flipBits } from '../../helpers/bytes.ts';

const NOW = 1_700_000_000_000;

type OpenOptions = Partial<Omit<PartitionLogOptions, 'config'>> & { config?: Partial<LogConfig> };

async function openLog(dir: string, extra: OpenOptions = {}, clock = new ManualClock(NOW)): Promise<PartitionLog> {
  return PartitionLog.open({
    dir: join(dir, 'topic-0'),
    pool: poolWith(clock, new BackgroundErrors().sink),
    onBackgroundError: new BackgroundErrors().sink,
    ...extra,
    config: logConfig(extra.config),
  });
}

describe('storage/log: append and read', () => {
  it('assigns offsets and the leader epoch in place and reads whole batches back', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      const a = await log.append(await simpleBatch(3, NOW), { leaderEpoch: 4 });
      const b = await log.append(await simpleBatch(2, NOW + 1), { leaderEpoch: 4 });
      assert.deepEqual([a.firstOffset, a.lastOffset, b.firstOffset, b.lastOffset], [0, 2, 3, 4]);
      assert.equal(b.maxTimestampMs, NOW + 1);
      assert.equal(log.logEndOffset, 5);
      const r = await log.read(0, 1 << 20);
      const hs = headers(r.records);
      assert.deepEqual(
        hs.map((h) => [h.baseOffset, h.partitionLeaderEpoch]),
        [
          [0, 4],
          [3, 4],
        ],
      );
      assert.deepEqual(
        (await recordsOf(r.records)).map((x) => x.offset),
        [0, 1, 2, 3, 4],
      );
      assert.equal(r.nextOffset, 5);
      await log.close();
    }));

  it('returns the whole batch holding a mid-batch fetch offset', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      await log.append(await simpleBatch(5, NOW));
      await log.append(await simpleBatch(5, NOW));
      const r = await log.read(7, 1 << 20);
      assert.equal(r.firstOffset, 5);
      assert.deepEqual(
        headers(r.records).map((h) => h.baseOffset),
        [5],
      );
      await log.close();
    }));

  it('honours maxBytes at batch boundaries, lets one oversized batch through with minOneBatch', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      const one = await simpleBatch(4, NOW, 100);
      for (let i = 0; i < 4; i++) await log.append(Buffer.from(one));
      const two = await log.read(0, one.length * 2 + 10);
      assert.equal(headers(two.records).length, 2);
      assert.equal(two.records.length, one.length * 2);
      const big = await log.read(0, 10, undefined, true);
      assert.equal(headers(big.records).length, 1);
      const none = await log.read(0, 10, undefined, false);
      assert.equal(none.records.length, 0);
      await log.close();
    }));

  it('stops before maxOffset (high watermark) and is empty at the log end', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      for (let i = 0; i < 3; i++) await log.append(await simpleBatch(2, NOW));
      const r = await log.read(0, 1 << 20, 4);
      assert.deepEqual(
        headers(r.records).map((h) => h.baseOffset),
        [0, 2],
      );
      const atHw = await log.read(4, 1 << 20, 4);
      assert.equal(atHw.records.length, 0);
      const end = await log.read(6, 1 << 20);
      assert.ok(Buffer.isBuffer(end.records));
      assert.equal(end.records.length, 0);
      await assert.rejects(log.read(7, 100), OffsetOutOfRangeError);
      await log.close();
    }));

  it('refuses a corrupt batch with a typed error and writes nothing of the request', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      await log.append(await simpleBatch(1, NOW));
      const good = await simpleBatch(2, NOW);
      const bad = await simpleBatch(2, NOW);
      flipBits(bad, bad.length - 1, 0xff);
      const sizeBefore = log.sizeBytes;
      await assert.rejects(
        log.append(Buffer.concat([good, bad])),
        (err: unknown) => err instanceof CorruptRecordError && err.kind === 'corrupt',
      );
      const truncated = (await simpleBatch(2, NOW)).subarray(0, 40);
      await assert.rejects(log.append(truncated), (err: unknown) => err instanceof CorruptRecordError && err.kind === 'truncated');
      assert.equal(log.sizeBytes, sizeBefore);
      assert.equal(log.logEndOffset, 1);
      await log.close();
    }));

  it('refuses a batch above max.message.bytes with RecordTooLargeError', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { maxMessageBytes: 200 } });
      await assert.rejects(log.append(await simpleBatch(10, NOW, 100)), RecordTooLargeError);
      assert.equal(log.logEndOffset, 0);
      await log.close();
    }));

  it('writes the broker time into LogAppendTime batches', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW + 5000);
      const log = await openLog(dir, { config: { messageTimestampType: 'LogAppendTime' } }, clock);
      const info = await log.append(await simpleBatch(2, NOW));
      assert.equal(info.logAppendTimeMs, NOW + 5000);
      const [h] = headers((await log.read(0, 1 << 20)).records);
      assert.equal(h!.timestampType, TimestampType.LogAppendTime);
      assert.equal(h!.maxTimestamp, NOW + 5000);
      await log.close();
    }));

  it('notifies append listeners', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      const seen: number[] = [];
      const off = log.onAppend((info) => seen.push(info.lastOffset));
      await log.append(await simpleBatch(2, NOW));
      off();
      await log.append(await simpleBatch(2, NOW));
      assert.deepEqual(seen, [1]);
      await log.close();
    }));
});

describe('storage/log: segments and indexes', () => {
  it('rolls at segment.bytes and names files by 20-digit base offset', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { segmentBytes: 1000 } });
      const one = await simpleBatch(3, NOW, 50);
      for (let i = 0; i < 12; i++) await log.append(Buffer.from(one));
      assert.ok(log.segmentCount > 1);
      const names = (await readdir(join(dir, 'topic-0'))).filter((n) => n.endsWith('.log')).sort();
      assert.equal(names[0], '00000000000000000000.log');
      assert.equal(names.length, log.segmentCount);
      for (const seg of log.allSegments) assert.ok(seg.sizeBytes <= 1000);
      // Every offset is readable across segments.
      let offset = 0;
      const seen: number[] = [];
      while (offset < log.logEndOffset) {
        const r = await log.read(offset, 1 << 20);
        for (const rec of await recordsOf(r.records)) seen.push(rec.offset);
        offset = r.nextOffset;
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 36 }, (_, i) => i),
      );
      await log.close();
    }));

  it('a log deleted while the flush after a roll is in flight reports no background error', () =>
    withTempDir(async (dir) => {
      for (let round = 0; round < 20; round++) {
        const errors = new BackgroundErrors();
        const log = await openLog(join(dir, `r${round}`), { onBackgroundError: errors.sink, config: { segmentBytes: 1000 } });
        const one = await simpleBatch(3, NOW, 50);
        while (log.segmentCount < 2) await log.append(Buffer.from(one));
        await log.delete();
        await new Promise((resolve) => setTimeout(resolve, 20));
        assert.deepEqual(errors.whats, [], `round ${round}`);
      }
    }));

  it('rolls at segment.ms using the first batch timestamp', () =>
    withTempDir(async (dir) => {
      const clock = new ManualClock(NOW);
      const log = await openLog(dir, { config: { segmentMs: 1000 } }, clock);
      await log.append(await simpleBatch(1, NOW));
      clock.advance(500);
      await log.append(await simpleBatch(1, NOW + 500));
      assert.equal(log.segmentCount, 1);
      clock.advance(600);
      await log.append(await simpleBatch(1, NOW + 1100));
      assert.equal(log.segmentCount, 2);
      assert.equal(log.activeSegment.baseOffset, 2);
      await log.close();
    }));

  it('rolls when the offset index is full (segment.index.bytes)', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { indexIntervalBytes: 1, segmentIndexBytes: 8 * 3 } });
      for (let i = 0; i < 10; i++) await log.append(await simpleBatch(1, NOW));
      assert.ok(log.segmentCount >= 3);
      for (const s of log.allSegments) assert.ok(s.offsetIndexEntries <= 3);
      await log.close();
    }));

  it('keeps a sparse index and finds offsets through it after reopening', () =>
    withTempDir(async (dir) => {
      const config = { indexIntervalBytes: 256 };
      const log = await openLog(dir, { config });
      for (let i = 0; i < 50; i++) await log.append(await simpleBatch(2, NOW + i, 40));
      const entries = log.activeSegment.offsetIndexEntries;
      assert.ok(entries > 5 && entries < 50, `expected a sparse index, got ${entries} entries`);
      await log.close();
      const indexSize = (await stat(join(dir, 'topic-0', '00000000000000000000.index'))).size;
      assert.equal(indexSize, entries * 8);
      const reopened = await openLog(dir, { config });
      assert.equal(reopened.logEndOffset, 100);
      for (const target of [0, 1, 37, 64, 99]) {
        const r = await reopened.read(target, 1);
        const [h] = headers(r.records);
        assert.ok(h!.baseOffset <= target && target <= h!.lastOffset);
      }
      await reopened.close();
    }));

  it('rebuilds a missing or garbage index from the log', () =>
    withTempDir(async (dir) => {
      const config = { indexIntervalBytes: 100, segmentBytes: 2000 };
      const log = await openLog(dir, { config });
      for (let i = 0; i < 40; i++) await log.append(await simpleBatch(1, NOW + i));
      await log.close();
      const { writeFile, unlink } = await import('node:fs/promises');
      await unlink(join(dir, 'topic-0', '00000000000000000000.index'));
      await writeFile(join(dir, 'topic-0', '00000000000000000000.timeindex'), Buffer.alloc(24, 0xff));
      const reopened = await openLog(dir, { config });
      const r = await reopened.read(5, 1);
      assert.equal(headers(r.records)[0]!.baseOffset, 5);
      assert.equal((await reopened.offsetForTimestamp(NOW + 7))?.offset, 7);
      await reopened.close();
    }));
});

describe('storage/log: timestamps', () => {
  it('offsetForTimestamp finds the earliest record with timestamp >= target, inside a batch', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { segmentBytes: 400 } });
      let ts = NOW;
      for (let i = 0; i < 10; i++) {
        await log.append(
          await batch(
            [
              { key: 'a', timestamp: ts },
              { key: 'b', timestamp: ts + 5 },
              { key: 'c', timestamp: ts + 10 },
            ],
            {},
          ),
          { leaderEpoch: i < 5 ? 1 : 2 },
        );
        ts += 100;
      }
      assert.ok(log.segmentCount > 2);
      assert.deepEqual(await log.offsetForTimestamp(NOW - 1), { offset: 0, timestampMs: NOW, leaderEpoch: 1 });
      assert.deepEqual(await log.offsetForTimestamp(NOW + 304), { offset: 10, timestampMs: NOW + 305, leaderEpoch: 1 });
      assert.deepEqual(await log.offsetForTimestamp(NOW + 706), { offset: 23, timestampMs: NOW + 710, leaderEpoch: 2 });
      assert.equal(await log.offsetForTimestamp(NOW + 5000), null);
      await log.close();
    }));

  it('maxTimestampOffset points at the record with the largest timestamp', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { segmentBytes: 300 } });
      const stamps = [NOW + 10, NOW + 900, NOW + 20, NOW + 30, NOW + 40];
      for (const t of stamps)
        await log.append(
          await batch([
            { key: 'a', timestamp: t - 1 },
            { key: 'b', timestamp: t },
            { key: 'c', timestamp: t - 2 },
          ]),
          { leaderEpoch: 3 },
        );
      assert.deepEqual(await log.maxTimestampOffset(), { offset: 4, timestampMs: NOW + 900, leaderEpoch: 3 });
      await log.close();
    }));
});

describe('storage/log: truncation and log start', () => {
  it('truncateTo removes the batch holding the offset and everything after', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { segmentBytes: 300 } });
      for (let i = 0; i < 10; i++) await log.append(await simpleBatch(2, NOW), { leaderEpoch: i < 6 ? 1 : 2 });
      await log.truncateTo(9);
      assert.equal(log.logEndOffset, 8);
      assert.equal(log.latestEpoch, 1);
      const info = await log.append(await simpleBatch(1, NOW), { leaderEpoch: 3 });
      assert.equal(info.firstOffset, 8);
      await log.close();
      const reopened = await openLog(dir, { config: { segmentBytes: 300 } });
      assert.equal(reopened.logEndOffset, 9);
      assert.deepEqual(reopened.endOffsetForEpoch(1), { epoch: 1, endOffset: 8 });
      await reopened.close();
    }));

  it('truncateTo at the log end drops an epoch this replica began as leader and wrote nothing in, on disk too', () =>
    withTempDir(async (dir) => {
      // A leader deposed before its first append: the new leader's epoch cache never saw
      // epoch 2, and a follower still naming it as its last fetched epoch diverges at every fetch.
      const log = await openLog(dir);
      for (let i = 0; i < 3; i++) await log.append(await simpleBatch(1, NOW), { leaderEpoch: 1 });
      await log.assignEpochStartOffset(2, 3);
      assert.equal(log.latestEpoch, 2);
      await log.truncateTo(3);
      assert.equal(log.logEndOffset, 3);
      assert.equal(log.latestEpoch, 1);
      // An epoch above the latest is unknown, as Kafka's LeaderEpochFileCache.endOffsetFor answers.
      assert.deepEqual(log.endOffsetForEpoch(2), { epoch: -1, endOffset: -1 });
      await log.close();
      const reopened = await openLog(dir);
      assert.equal(reopened.latestEpoch, 1);
      await reopened.close();
    }));

  it('a flush that read the log end before a truncation leaves the recovery point at or below the new end', () =>
    withTempDir(async (dir) => {
      // The flush's run starts while the truncation awaits its files: it must not then move
      // the recovery point to the log end it read, past records the truncation removed (a
      // clean reopen trusts the recovery point and would serve them again).
      const log = await openLog(dir);
      for (let i = 0; i < 3; i++) await log.append(await simpleBatch(1, NOW), { leaderEpoch: 0 });
      await Promise.all([log.flush(), log.truncateTo(0)]);
      await log.append(await simpleBatch(1, NOW), { leaderEpoch: 0 });
      assert.ok(log.recoveryPoint <= log.logEndOffset, `recovery point ${log.recoveryPoint} <= log end ${log.logEndOffset}`);
      const { logStartOffset, recoveryPoint } = log;
      await log.close();
      const reopened = await openLog(dir, { logStartOffset, recoveryPoint, cleanShutdown: true });
      assert.equal(reopened.logEndOffset, 1);
      await reopened.close();
    }));

  it('truncateFullyAndStartAt empties the log at a new offset', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      for (let i = 0; i < 3; i++) await log.append(await simpleBatch(2, NOW), { leaderEpoch: 1 });
      await log.truncateFullyAndStartAt(100);
      assert.equal(log.logStartOffset, 100);
      assert.equal(log.logEndOffset, 100);
      await assert.rejects(log.read(0, 100), OffsetOutOfRangeError);
      assert.equal((await log.append(await simpleBatch(1, NOW))).firstOffset, 100);
      await log.close();
      const reopened = await openLog(dir, { logStartOffset: 100 });
      assert.equal(reopened.logEndOffset, 101);
      assert.equal(reopened.logStartOffset, 100);
      await reopened.close();
    }));

  it('deleteRecordsBefore moves the log start, drops whole segments below it, refuses offsets above the high watermark', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { segmentBytes: 300, fileDeleteDelayMs: 0 } });
      for (let i = 0; i < 10; i++) await log.append(await simpleBatch(2, NOW));
      log.highWatermark = 15;
      await assert.rejects(log.deleteRecordsBefore(16), OffsetOutOfRangeError);
      const segmentsBefore = log.segmentCount;
      assert.equal(await log.deleteRecordsBefore(7), 7);
      assert.ok(log.segmentCount < segmentsBefore);
      assert.ok(log.allSegments[0]!.baseOffset <= 7);
      await assert.rejects(log.read(6, 100), OffsetOutOfRangeError);
      // The batch holding the start offset is returned whole.
      assert.equal(headers((await log.read(7, 1)).records)[0]!.baseOffset, 6);
      await log.close();
    }));
});

describe('storage/log: follower appends and leader epochs', () => {
  it('keeps offsets on follower appends and refuses offsets below the log end', () =>
    withTempDir(async (dir) => {
      const leader = await openLog(dir);
      await leader.append(await simpleBatch(3, NOW), { leaderEpoch: 5 });
      await leader.append(await simpleBatch(3, NOW), { leaderEpoch: 6 });
      const data = (await leader.read(0, 1 << 20)).records;
      const follower = await PartitionLog.open({
        dir: join(dir, 'follower-0'),
        config: logConfig(),
        onBackgroundError: new BackgroundErrors().sink,
      });
      const info = await follower.appendAsFollower(Buffer.from(data));
      assert.deepEqual([info.firstOffset, info.lastOffset], [0, 5]);
      assert.deepEqual(follower.epochCache.all(), [
        { epoch: 5, startOffset: 0 },
        { epoch: 6, startOffset: 3 },
      ]);
      await assert.rejects(follower.appendAsFollower(Buffer.from(data)), UnexpectedAppendOffsetError);
      assert.deepEqual(follower.endOffsetForEpoch(5), { epoch: 5, endOffset: 3 });
      assert.deepEqual(follower.endOffsetForEpoch(6), { epoch: 6, endOffset: 6 });
      assert.deepEqual(follower.endOffsetForEpoch(7), { epoch: -1, endOffset: -1 });
      assert.deepEqual(follower.endOffsetForEpoch(2), { epoch: 2, endOffset: 0 });
      await leader.close();
      await follower.close();
    }));
});

describe('storage/log: opening without work to do', () => {
  /** A pool that counts the fsyncs asked of it. */
  class CountingPool extends FileHandlePool {
    syncs = 0;
    override async sync(handle: FileHandle): Promise<void> {
      this.syncs++;
      await super.sync(handle);
    }
  }

  it('a log in a directory it creates has nothing to recover: no fsync even after an unclean stop', () =>
    withTempDir(async (dir) => {
      const pool = new CountingPool({ onError: new BackgroundErrors().sink, clock: new ManualClock(NOW) });
      const log = await openLog(dir, { pool, cleanShutdown: false, recoveryPoint: 0 });
      assert.equal(pool.syncs, 0);
      assert.deepEqual(await readdir(join(dir, 'topic-0')), [
        '00000000000000000000.index',
        '00000000000000000000.log',
        '00000000000000000000.timeindex',
      ]);
      const idempotent = await batch([{ value: 'a' }], { producerId: 7n, producerEpoch: 0, baseSequence: 0 });
      assert.equal((await log.append(Buffer.from(idempotent))).firstOffset, 0);
      assert.equal((await log.append(Buffer.from(idempotent))).duplicate, true, 'the producer state is there, empty, from the start');
      await log.close();
      // Reopened after an unclean stop, the same log is recovered, and its segment fsynced.
      const again = await openLog(dir, { pool, cleanShutdown: false, recoveryPoint: 0 });
      assert.equal(again.logEndOffset, 1);
      assert.ok(pool.syncs > 0);
      await again.close();
    }));

  it('keeps leader epochs in memory only when told, rebuilding them from the batches at every open', () =>
    withTempDir(async (dir) => {
      const options = { cleanShutdown: false, recoveryPoint: 0, persistLeaderEpochs: false };
      const log = await openLog(dir, options);
      await log.append(await simpleBatch(2, NOW), { leaderEpoch: 1 });
      await log.append(await simpleBatch(2, NOW), { leaderEpoch: 3 });
      await log.close();
      assert.ok(!(await readdir(join(dir, 'topic-0'))).includes('leader-epoch-checkpoint'));
      const again = await openLog(dir, options);
      assert.deepEqual(again.epochCache.all(), [
        { epoch: 1, startOffset: 0 },
        { epoch: 3, startOffset: 2 },
      ]);
      await again.close();
      // Only a log recovered in full at every open may skip them.
      await assert.rejects(openLog(dir, { persistLeaderEpochs: false }), /full recovery/);
    }));

  it('unsafeBypassFsync: flushes and closes reach no file handle fsync', () =>
    withTempDir(async (dir) => {
      let handleSyncs = 0;
      const countHandleSyncs = (handle: FileHandle): FileHandle =>
        new Proxy(handle, {
          get: (target, prop) => {
            if (prop === 'sync') return () => Promise.resolve(handleSyncs++);
            const value = Reflect.get(target, prop) as unknown;
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          },
        });
      class ProbedPool extends FileHandlePool {
        override async sync(handle: FileHandle): Promise<void> {
          await super.sync(countHandleSyncs(handle));
        }
      }
      for (const unsafeBypassFsync of [false, true]) {
        handleSyncs = 0;
        const pool = new ProbedPool({ onError: new BackgroundErrors().sink, unsafeBypassFsync, clock: new ManualClock(NOW) });
        const log = await openLog(dir, { pool, config: { flushMessages: 1 } });
        await log.append(await simpleBatch(2, NOW), { leaderEpoch: 0 });
        assert.equal(log.recoveryPoint, log.logEndOffset, 'flush.messages=1 flushed');
        await log.close();
        assert.equal(handleSyncs > 0, !unsafeBypassFsync);
      }
      assert.equal(new FileHandlePool({ onError: new BackgroundErrors().sink }).unsafeBypassFsync, false, 'off by default');
    }));
});

describe('storage/log: producer state', () => {
  const pid = 42n;
  const idem = (seq: number, count = 2, epoch = 0): Promise<Buffer> =>
    simpleBatch(count, NOW, 10, { producerId: pid, producerEpoch: epoch, baseSequence: seq });

  it('answers a retried batch with its original offsets and writes nothing', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      const first = await log.append(await idem(0));
      await log.append(await idem(2));
      const dup = await log.append(await idem(0));
      assert.equal(dup.duplicate, true);
      assert.deepEqual([dup.firstOffset, dup.lastOffset], [first.firstOffset, first.lastOffset]);
      assert.equal(log.logEndOffset, 4);
      await log.close();
    }));

  it('rejects gaps (OUT_OF_ORDER_SEQUENCE_NUMBER) and older epochs (INVALID_PRODUCER_EPOCH)', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      await log.append(await idem(0, 2, 1));
      await assert.rejects(
        log.append(await idem(5, 2, 1)),
        (e: unknown) => e instanceof ProducerStateError && e.code === 'OUT_OF_ORDER_SEQUENCE_NUMBER',
      );
      await assert.rejects(
        log.append(await idem(2, 2, 0)),
        (e: unknown) => e instanceof ProducerStateError && e.code === 'INVALID_PRODUCER_EPOCH',
      );
      await assert.rejects(
        log.append(await idem(3, 2, 2)),
        (e: unknown) => e instanceof ProducerStateError && e.code === 'OUT_OF_ORDER_SEQUENCE_NUMBER',
      );
      assert.equal((await log.append(await idem(0, 2, 2))).firstOffset, 2);
      assert.equal(log.logEndOffset, 4);
      assert.deepEqual((await log.checkProducerBatches(await idem(9, 1, 2))).result, 'error');
      assert.deepEqual((await log.checkProducerBatches(await idem(2, 1, 2))).result, 'ok');
      await log.close();
    }));

  it('accepts any first sequence from an unknown producer, and sequence wrap-around', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      await log.append(await idem(0x7fffffff - 1, 2));
      assert.equal((await log.append(await idem(0, 1))).firstOffset, 2);
      await log.close();
    }));

  it('keeps the last five batches per producer for duplicate detection', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      for (let i = 0; i < 7; i++) await log.append(await idem(i * 2));
      assert.equal((await log.append(await idem(4))).duplicate, true);
      await assert.rejects(log.append(await idem(2)), ProducerStateError);
      const [p] = await log.activeProducers();
      assert.deepEqual(
        { ...p, lastTimestampMs: 0 },
        {
          producerId: pid,
          producerEpoch: 0,
          lastSequence: 13,
          lastTimestampMs: 0,
          coordinatorEpoch: -1,
          currentTxnStartOffset: -1,
        },
      );
      await log.close();
    }));

  it('restores producer state from the snapshot taken at close and after a roll + unclean stop', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { segmentBytes: 400 } });
      for (let i = 0; i < 6; i++) await log.append(await idem(i * 2));
      await log.close();
      const names = await readdir(join(dir, 'topic-0'));
      assert.ok(names.some((n) => n.endsWith('.snapshot')));
      const reopened = await openLog(dir, { config: { segmentBytes: 400 } });
      assert.equal((await reopened.append(await idem(10))).duplicate, true);
      assert.equal((await reopened.append(await idem(12))).firstOffset, 12);
      await reopened.close();
      // Unclean: the snapshot written at close is gone; state = an older (roll) snapshot + replay.
      const { unlink } = await import('node:fs/promises');
      const snapshots = (await readdir(join(dir, 'topic-0'))).filter((n) => n.endsWith('.snapshot')).sort();
      assert.ok(snapshots.length >= 2);
      await unlink(join(dir, 'topic-0', snapshots[snapshots.length - 1]!));
      const crashed = await openLog(dir, { config: { segmentBytes: 400 }, cleanShutdown: false, recoveryPoint: 0 });
      assert.equal((await crashed.append(await idem(12))).duplicate, true);
      await assert.rejects(crashed.append(await idem(16)), ProducerStateError);
      assert.equal((await crashed.append(await idem(14))).firstOffset, 14);
      await crashed.close();
    }));
});

describe('storage/log: flush and I/O errors', () => {
  it('flush.messages fsyncs and advances the recovery point', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir, { config: { flushMessages: 4 } });
      await log.append(await simpleBatch(2, NOW));
      assert.equal(log.recoveryPoint, 0);
      await log.append(await simpleBatch(2, NOW));
      assert.equal(log.recoveryPoint, 4);
      await log.close();
    }));

  it('by default acknowledges without fsync; flush() advances the recovery point', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      await log.append(await simpleBatch(2, NOW));
      assert.equal(log.recoveryPoint, 0);
      await log.flush();
      assert.equal(log.recoveryPoint, 2);
      await log.close();
    }));

  /** A pool whose next segment write stores half the bytes, then fails with ENOSPC. */
  class FailingPool extends FileHandlePool {
    failNext = false;
    private fail(handle: FileHandle, data: Buffer, position: number): Error {
      this.failNext = false;
      writeSync(handle.fd, data, 0, Math.floor(data.length / 2), position);
      return Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
    }
    override writeSync(handle: FileHandle, data: Buffer, position: number): void {
      if (this.failNext) throw this.fail(handle, data, position);
      super.writeSync(handle, data, position);
    }
    override async write(handle: FileHandle, data: Buffer, position: number): Promise<void> {
      if (this.failNext) throw this.fail(handle, data, position);
      await super.write(handle, data, position);
    }
  }

  for (const { path, syncWriteMaxBytes } of [
    { path: 'a write in place', syncWriteMaxBytes: undefined },
    { path: 'a thread-pool write', syncWriteMaxBytes: 0 },
  ]) {
    it(`turns ENOSPC into StorageIOError and cuts the partial write (${path})`, () =>
      withTempDir(async (dir) => {
        const pool = new FailingPool({
          maxOpenFiles: 16,
          syncWriteMaxBytes,
          onError: new BackgroundErrors().sink,
          clock: new ManualClock(NOW),
        });
        const log = await openLog(dir, { pool });
        await log.append(await simpleBatch(2, NOW));
        const size = log.sizeBytes;
        pool.failNext = true;
        await assert.rejects(log.append(await simpleBatch(3, NOW)), (e: unknown) => e instanceof StorageIOError && e.code === 'ENOSPC');
        assert.equal(pool.failNext, false);
        assert.equal(log.sizeBytes, size);
        assert.equal(log.logEndOffset, 2);
        assert.equal((await stat(join(dir, 'topic-0', '00000000000000000000.log'))).size, size);
        assert.equal((await log.append(await simpleBatch(1, NOW))).firstOffset, 2);
        const all = await recordsOf((await log.read(0, 1 << 20)).records);
        assert.deepEqual(
          all.map((r) => r.offset),
          [0, 1, 2],
        );
        await log.close();
      }));
  }
});

describe('storage/log: crash recovery', () => {
  it('truncates at the first invalid byte after the recovery point and rebuilds indexes', () =>
    withTempDir(async (dir) => {
      const config = { segmentBytes: 600, indexIntervalBytes: 100 };
      const log = await openLog(dir, { config });
      for (let i = 0; i < 20; i++) await log.append(await simpleBatch(2, NOW + i), { leaderEpoch: 1 });
      await log.flush(10);
      const active = log.activeSegment;
      await log.close();
      const { open } = await import('node:fs/promises');
      // Corrupt a byte inside the last batch and add a torn partial batch at the end.
      const fh = await open(active.logPath, 'r+');
      const { size } = await fh.stat();
      await fh.write(Buffer.from([0xee]), 0, 1, size - 3);
      await fh.write(Buffer.alloc(30, 7), 0, 30, size);
      await fh.close();
      const recovered = await openLog(dir, { config, cleanShutdown: false, recoveryPoint: 10 });
      assert.equal(recovered.logEndOffset, 38);
      assert.equal(recovered.recoveryPoint, 38);
      const hs: RecordBatch[] = [];
      let offset = 0;
      while (offset < recovered.logEndOffset) {
        const r = await recovered.read(offset, 1 << 20);
        hs.push(...headers(r.records));
        offset = r.nextOffset;
      }
      assert.deepEqual(
        hs.map((h) => h.baseOffset),
        Array.from({ length: 19 }, (_, i) => i * 2),
      );
      assert.equal((await recovered.append(await simpleBatch(1, NOW))).firstOffset, 38);
      await recovered.close();
    }));
});
