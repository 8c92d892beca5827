import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { buildEndTxnMarker } from '../../../protocol/records/index.ts';
import { PartitionLog, ProducerStateError } from '../../../storage/index.ts';
import type { AbortedTxn } from '../../../storage/transaction-index.ts';
import { BackgroundErrors, ManualClock, logConfig, poolWith, simpleBatch, withTempDir } from '../../helpers/storage.ts';

const NOW = 1_700_000_000_000;

function openLog(
  dir: string,
  extra: { cleanShutdown?: boolean; recoveryPoint?: number; highWatermark?: number } = {},
): Promise<PartitionLog> {
  const errors = new BackgroundErrors();
  return PartitionLog.open({
    dir: join(dir, 'topic-0'),
    pool: poolWith(new ManualClock(NOW), errors.sink),
    onBackgroundError: errors.sink,
    config: logConfig(),
    ...extra,
  });
}

type Op =
  | { kind: 'data'; producer: number; transactional: boolean; count: number }
  | { kind: 'marker'; producer: number; commit: boolean }
  | { kind: 'roll' }
  | { kind: 'highWatermark' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('data' as const),
      producer: fc.integer({ min: 1, max: 3 }),
      transactional: fc.boolean(),
      count: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('marker' as const), producer: fc.integer({ min: 1, max: 3 }), commit: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'roll' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'highWatermark' as const }) },
);

/** What a log that has taken the ops must answer: Kafka's transaction bookkeeping, kept naively. */
class TxnModel {
  readonly open = new Map<number, number>();
  readonly aborted: AbortedTxn[] = [];
  /** Completed transactions whose marker the high watermark has not passed. */
  unreplicated: { first: number; marker: number }[] = [];
  highWatermark = 0;

  lastStableOffset(): number {
    const firsts = [...this.open.values(), ...this.unreplicated.map((t) => t.first)];
    return Math.min(this.highWatermark, ...firsts);
  }

  expectedAborted(fetchOffset: number, upperBound: number): AbortedTxn[] {
    return this.aborted.filter((t) => t.lastOffset >= fetchOffset && t.firstOffset < upperBound);
  }
}

async function apply(log: PartitionLog, model: TxnModel, sequences: Map<number, number>, o: Op): Promise<void> {
  switch (o.kind) {
    case 'data': {
      const pid = BigInt(o.producer);
      const seq = sequences.get(o.producer) ?? 0;
      const info = await log.append(
        await simpleBatch(o.count, NOW, 8, { producerId: pid, producerEpoch: 0, baseSequence: seq, isTransactional: o.transactional }),
        { leaderEpoch: 0 },
      );
      sequences.set(o.producer, seq + o.count);
      if (o.transactional && !model.open.has(o.producer)) model.open.set(o.producer, info.firstOffset);
      return;
    }
    case 'marker': {
      const marker = await buildEndTxnMarker({
        commit: o.commit,
        coordinatorEpoch: 0,
        producerId: BigInt(o.producer),
        producerEpoch: 0,
        timestamp: NOW,
      });
      const at = log.logEndOffset;
      await log.append(marker, { leaderEpoch: 0, origin: 'coordinator' });
      const first = model.open.get(o.producer);
      model.open.delete(o.producer);
      const othersFirst = Math.min(at + 1, ...model.open.values());
      if (!o.commit)
        model.aborted.push({ producerId: BigInt(o.producer), firstOffset: first ?? at, lastOffset: at, lastStableOffset: othersFirst });
      if (first !== undefined) model.unreplicated.push({ first, marker: at });
      return;
    }
    case 'roll':
      await log.roll();
      return;
    case 'highWatermark':
      log.highWatermark = log.logEndOffset;
      model.highWatermark = log.logEndOffset;
      model.unreplicated = model.unreplicated.filter((t) => t.marker >= model.highWatermark);
  }
}

async function assertAgrees(log: PartitionLog, model: TxnModel, checkUnreplicated: boolean): Promise<void> {
  await log.loadProducerStateIfNeeded();
  if (checkUnreplicated) assert.equal(log.lastStableOffset, model.lastStableOffset());
  const end = log.logEndOffset;
  for (let fetchOffset = 0; fetchOffset < end; fetchOffset++) {
    for (const upperBound of [fetchOffset + 1, end]) {
      assert.deepEqual(
        await log.abortedTransactions(fetchOffset, upperBound),
        model.expectedAborted(fetchOffset, upperBound),
        `[${fetchOffset}, ${upperBound})`,
      );
    }
  }
}

describe('storage/log: transactions (LSO and the aborted-transaction index)', () => {
  it('keep the last stable offset and the aborted ranges of a model, through a clean restart, an unclean one and lost index files (property)', () =>
    fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), (ops) =>
        withTempDir(async (dir) => {
          const model = new TxnModel();
          const sequences = new Map<number, number>();
          let log = await openLog(dir);
          for (const o of ops) {
            await apply(log, model, sequences, o);
            await assertAgrees(log, model, true);
          }
          log.highWatermark = log.logEndOffset;
          model.highWatermark = log.logEndOffset;
          model.unreplicated = [];
          await log.close();

          log = await openLog(dir, { recoveryPoint: log.logEndOffset, highWatermark: model.highWatermark });
          await assertAgrees(log, model, true);
          await log.close();

          // An unclean stop that lost every .txnindex: recovery replays the log and rebuilds them.
          for (const name of await readdir(join(dir, 'topic-0'))) {
            if (name.endsWith('.txnindex')) await rm(join(dir, 'topic-0', name));
          }
          log = await openLog(dir, { cleanShutdown: false, recoveryPoint: 0, highWatermark: model.highWatermark });
          await assertAgrees(log, model, true);
          await log.close();
        }),
      ),
      { numRuns: 40 },
    ));

  it('a truncation below a marker reopens its transaction and drops its aborted entry', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      await log.append(await simpleBatch(2, NOW, 8, { producerId: 7n, producerEpoch: 0, baseSequence: 0, isTransactional: true }), {
        leaderEpoch: 0,
      });
      await log.append(await simpleBatch(1, NOW), { leaderEpoch: 0 });
      await log.append(await buildEndTxnMarker({ commit: false, coordinatorEpoch: 0, producerId: 7n, producerEpoch: 0, timestamp: NOW }), {
        leaderEpoch: 0,
        origin: 'coordinator',
      });
      log.highWatermark = log.logEndOffset;
      assert.equal(log.lastStableOffset, 4);
      assert.deepEqual(await log.abortedTransactions(0, 4), [{ producerId: 7n, firstOffset: 0, lastOffset: 3, lastStableOffset: 4 }]);
      await log.truncateTo(3);
      await log.loadProducerStateIfNeeded();
      assert.deepEqual(await log.abortedTransactions(0, 3), []);
      log.highWatermark = log.logEndOffset;
      assert.equal(log.lastStableOffset, 0);
      await log.close();
    }));

  it('refuses a marker of an older producer epoch or from an older coordinator', () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      const marker = (producerEpoch: number, coordinatorEpoch: number) =>
        buildEndTxnMarker({ commit: true, coordinatorEpoch, producerId: 9n, producerEpoch, timestamp: NOW });
      await log.append(await simpleBatch(1, NOW, 8, { producerId: 9n, producerEpoch: 2, baseSequence: 0, isTransactional: true }), {
        leaderEpoch: 0,
      });
      await log.append(await marker(2, 5), { leaderEpoch: 0 });
      await assert.rejects(
        log.append(await marker(1, 5), { leaderEpoch: 0 }),
        (err: unknown) => err instanceof ProducerStateError && err.code === 'INVALID_PRODUCER_EPOCH',
      );
      await assert.rejects(
        log.append(await marker(2, 4), { leaderEpoch: 0 }),
        (err: unknown) => err instanceof ProducerStateError && err.code === 'TRANSACTION_COORDINATOR_FENCED',
      );
      // A fencing marker of a newer epoch is taken, and bumps the producer's epoch.
      await log.append(await marker(3, 5), { leaderEpoch: 0 });
      assert.equal((await log.activeProducers())[0]?.producerEpoch, 3);
      await log.close();
    }));

  it("KIP-890 part 1: a transaction's first batch needs the verification guard the log still holds; a marker in between voids it", () =>
    withTempDir(async (dir) => {
      const log = await openLog(dir);
      const txnBatch = (baseSequence: number) =>
        simpleBatch(1, NOW, 8, { producerId: 5n, producerEpoch: 0, baseSequence, isTransactional: true });
      const notInTransaction = (err: unknown) => err instanceof ProducerStateError && err.code === 'INVALID_TXN_STATE';
      await assert.rejects(log.append(await txnBatch(0), { leaderEpoch: 0, verification: { guard: null } }), notInTransaction);

      const voided = await log.startTransactionVerification(5n, 0);
      assert.notEqual(voided, null);
      await log.append(await txnBatch(0), { leaderEpoch: 0, verification: { guard: voided } });
      assert.equal(await log.startTransactionVerification(5n, 0), null, 'the transaction is open here: nothing to verify');
      await log.append(await txnBatch(1), { leaderEpoch: 0, verification: { guard: null } });

      const late = await log.startTransactionVerification(5n, 1);
      await log.append(await buildEndTxnMarker({ commit: false, coordinatorEpoch: 0, producerId: 5n, producerEpoch: 1, timestamp: NOW }), {
        leaderEpoch: 0,
        origin: 'coordinator',
      });
      const nextTxn = await simpleBatch(1, NOW, 8, { producerId: 5n, producerEpoch: 1, baseSequence: 0, isTransactional: true });
      await assert.rejects(log.append(nextTxn, { leaderEpoch: 0, verification: { guard: late } }), notInTransaction);
      const fresh = await log.startTransactionVerification(5n, 1);
      assert.notEqual(fresh, late);
      await log.append(nextTxn, { leaderEpoch: 0, verification: { guard: fresh } });
      await log.close();
    }));
});
