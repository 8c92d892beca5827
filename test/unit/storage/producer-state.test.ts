import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { RecordBatch, buildEndTxnMarker } from '../../../protocol/records/index.ts';
import { ProducerStateManager } from '../../../storage/index.ts';
import { BackgroundErrors, realDisk, simpleBatch, withTempDir } from '../../helpers/storage.ts';

const background = new BackgroundErrors();

async function appended(
  psm: ProducerStateManager,
  base: number,
  opts: { pid?: bigint; epoch: number; seq: number; count?: number; txn?: boolean },
): Promise<RecordBatch> {
  const buf = await simpleBatch(opts.count ?? 1, 1000, 1, {
    producerId: opts.pid ?? 1n,
    producerEpoch: opts.epoch,
    baseSequence: opts.seq,
    isTransactional: opts.txn ?? false,
  });
  const b = new RecordBatch(buf, 0);
  b.setBaseOffset(base);
  psm.update(b, -1);
  return b;
}

async function view(opts: { pid?: bigint; epoch: number; seq: number; count?: number }): Promise<RecordBatch> {
  return new RecordBatch(
    await simpleBatch(opts.count ?? 1, 1000, 1, { producerId: opts.pid ?? 1n, producerEpoch: opts.epoch, baseSequence: opts.seq }),
    0,
  );
}

describe('storage/producer-state', () => {
  it('follows Kafka sequence rules', () =>
    withTempDir(async (dir) => {
      const psm = new ProducerStateManager(realDisk(), dir, background.sink);
      assert.equal(psm.check([await view({ epoch: 0, seq: 17 })]).result, 'ok', 'unknown producer: any sequence');
      await appended(psm, 0, { epoch: 0, seq: 17, count: 3 });
      assert.equal(psm.check([await view({ epoch: 0, seq: 20 })]).result, 'ok');
      assert.deepEqual(psm.check([await view({ epoch: 0, seq: 17, count: 3 })]), {
        result: 'duplicate',
        firstOffset: 0,
        lastOffset: 2,
        timestampMs: 1000,
      });
      const gap = psm.check([await view({ epoch: 0, seq: 22 })]);
      assert.equal(gap.result === 'error' && gap.code, 'OUT_OF_ORDER_SEQUENCE_NUMBER');
      const newEpochBadSeq = psm.check([await view({ epoch: 1, seq: 5 })]);
      assert.equal(newEpochBadSeq.result === 'error' && newEpochBadSeq.code, 'OUT_OF_ORDER_SEQUENCE_NUMBER');
      assert.equal(psm.check([await view({ epoch: 1, seq: 0 })]).result, 'ok');
      // Several batches of one request are checked against each other.
      assert.equal(psm.check([await view({ epoch: 0, seq: 20, count: 2 }), await view({ epoch: 0, seq: 22 })]).result, 'ok');
      const inner = psm.check([await view({ epoch: 0, seq: 20, count: 2 }), await view({ epoch: 0, seq: 23 })]);
      assert.equal(inner.result, 'error');
    }));

  it('tracks the open transaction and closes it on a control batch', () =>
    withTempDir(async (dir) => {
      const psm = new ProducerStateManager(realDisk(), dir, background.sink);
      await appended(psm, 5, { epoch: 0, seq: 0, txn: true });
      assert.equal(psm.describe()[0]!.currentTxnStartOffset, 5);
      assert.equal(psm.firstUnstableOffset, 5);
      const marker = new RecordBatch(
        await buildEndTxnMarker({ commit: false, coordinatorEpoch: 3, producerId: 1n, producerEpoch: 0, timestamp: 1000 }),
        0,
      );
      marker.setBaseOffset(6);
      assert.deepEqual(psm.update(marker, -1), { producerId: 1n, firstOffset: 5, lastOffset: 6, isAborted: true, lastStableOffset: 7 });
      assert.equal(psm.describe()[0]!.currentTxnStartOffset, -1);
      assert.equal(psm.describe()[0]!.coordinatorEpoch, 3);
      assert.equal(psm.describe()[0]!.lastSequence, 0);
      // Until the high watermark passes the marker, a new leader might not have it.
      assert.equal(psm.firstUnstableOffset, 5);
      psm.onHighWatermarkUpdated(7);
      assert.equal(psm.firstUnstableOffset, null);
    }));

  it('snapshots to %020d.snapshot and falls back past a corrupt one', () =>
    withTempDir(async (dir) => {
      const psm = new ProducerStateManager(realDisk(), dir, background.sink);
      await appended(psm, 0, { epoch: 2, seq: 0, count: 2 });
      await psm.takeSnapshot();
      await appended(psm, 2, { epoch: 2, seq: 2, count: 2 });
      await psm.takeSnapshot();
      assert.deepEqual(await psm.snapshotOffsets(), [2, 4]);
      await writeFile(psm.snapshotPath(4), Buffer.from('garbage'));
      const skipped = new BackgroundErrors();
      const loaded = new ProducerStateManager(realDisk(), dir, skipped.sink);
      assert.equal(await loaded.loadLatestSnapshot(10, 0), 2);
      assert.deepEqual(await loaded.snapshotOffsets(), [2]);
      assert.deepEqual(skipped.whats, [`reading the producer snapshot ${psm.snapshotPath(4)} (skipped and deleted)`]);
      assert.equal(loaded.get(1n)!.producerEpoch, 2);
      assert.deepEqual(
        loaded.get(1n)!.batches.map((b) => [b.firstSeq, b.lastSeq, b.firstOffset, b.lastOffset]),
        [[0, 1, 0, 1]],
      );
    }));

  it('forgets producers whose batches all fell below the log start', () =>
    withTempDir(async (dir) => {
      const psm = new ProducerStateManager(realDisk(), dir, background.sink);
      await appended(psm, 0, { pid: 1n, epoch: 0, seq: 0 });
      await appended(psm, 1, { pid: 2n, epoch: 0, seq: 0 });
      psm.truncateHead(1);
      assert.deepEqual(
        psm.describe().map((d) => d.producerId),
        [2n],
      );
    }));

  it('KIP-890: a refused verification drops its guard, and made-up producer ids cannot pile up verifications', () =>
    withTempDir(async (dir) => {
      const psm = new ProducerStateManager(realDisk(), dir, background.sink);
      const txnBatch = async (pid: bigint) =>
        new RecordBatch(await simpleBatch(1, 1000, 1, { producerId: pid, producerEpoch: 0, baseSequence: 0, isTransactional: true }), 0);
      const refused = psm.startVerification(1n, 0)!;
      assert.equal(psm.startVerification(1n, 0), refused, 'a concurrent verification of the same transaction shares the guard');
      psm.abandonVerification(refused);
      assert.equal(psm.check([await txnBatch(1n)], 'client', { guard: refused }).result, 'error');
      for (let pid = 1000n; pid < 3000n; pid++) psm.startVerification(pid, 0);
      assert.equal(psm.pendingVerifications, 1000, 'bounded, oldest dropped first');
      const latest = psm.startVerification(2999n, 0)!;
      assert.equal(psm.check([await txnBatch(2999n)], 'client', { guard: latest }).result, 'ok');
    }));
});
