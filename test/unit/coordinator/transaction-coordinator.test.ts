import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import {
  TransactionCoordinator,
  type TransactionCoordinatorConfig,
  type TxnMarkerSpec,
} from '../../../src/coordinator/transaction-coordinator.ts';
import { decodeTxnLogRecord, encodeTxnLogRecord } from '../../../src/coordinator/transaction-log-codec.ts';
import { TransactionState, type TopicPartitionRef, type TxnLogRecord } from '../../../src/coordinator/transaction-metadata.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

const CONFIG: TransactionCoordinatorConfig = {
  transactionStatePartitions: 1,
  maxTimeoutMs: 900_000,
  idExpirationMs: 604_800_000,
  abortTimedOutIntervalMs: 10_000,
  removeExpiredIntervalMs: 3_600_000,
};
const TP: TopicPartitionRef = { topic: 'orders', partition: 0 };
const NONE = Errors.NONE.code;

/** A coordinator over an in-memory log and marker writer, with partition 0 loaded at coordinator epoch 3. */
function setup(options: { markers?: 'written' | 'fenced'; loaded?: TxnLogRecord[] } = {}) {
  const clock = new ManualClock();
  const appended: TxnLogRecord[] = [];
  const markers: { marker: TxnMarkerSpec; partitions: readonly TopicPartitionRef[] }[] = [];
  let nextProducerId = 1000n;
  let failAppends: Error | null = null;
  const coordinator = new TransactionCoordinator(
    CONFIG,
    clock,
    {
      append: async (_partition, records) => {
        if (failAppends !== null) throw failAppends;
        appended.push(...records);
      },
      holdsLeadership: () => true,
    },
    { generateProducerId: async () => nextProducerId++ },
    {
      write: async (marker, partitions) => {
        markers.push({ marker, partitions });
        return options.markers ?? 'written';
      },
    },
    (err) => {
      throw err;
    },
  );
  coordinator.beginLoading(0, 3);
  coordinator.replayLoading(0, options.loaded ?? [], (_i, err) => {
    throw err;
  });
  coordinator.completeLoading(0);
  return {
    clock,
    coordinator,
    appended,
    markers,
    failAppendsWith(err: Error | null) {
      failAppends = err;
    },
    states: () => appended.map((r) => r.value?.state),
  };
}

/** Lets the background completion (markers, then the Complete* append) run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('TransactionCoordinator', () => {
  it('hands out a producer id at epoch 0, then bumps the epoch for each new instance', async () => {
    const { coordinator, appended } = setup();
    const first = await coordinator.initProducerId('tx', 60_000, null);
    assert.deepEqual(first, { errorCode: NONE, producerId: 1000n, producerEpoch: 0 });
    const second = await coordinator.initProducerId('tx', 60_000, null);
    assert.deepEqual(second, { errorCode: NONE, producerId: 1000n, producerEpoch: 1 });
    assert.deepEqual(
      appended.map((r) => [r.transactionalId, r.value?.state, r.value?.producerEpoch]),
      [
        ['tx', TransactionState.Empty, 0],
        ['tx', TransactionState.Empty, 1],
      ],
    );
  });

  it('refuses a timeout above transaction.max.timeout.ms, an empty id, and ids of partitions it does not serve', async () => {
    const { coordinator } = setup();
    assert.equal((await coordinator.initProducerId('tx', 900_001, null)).errorCode, Errors.INVALID_TRANSACTION_TIMEOUT.code);
    assert.equal((await coordinator.initProducerId('', 1000, null)).errorCode, Errors.INVALID_REQUEST.code);
    coordinator.unload(0);
    assert.equal((await coordinator.initProducerId('tx', 1000, null)).errorCode, Errors.NOT_COORDINATOR.code);
    coordinator.beginLoading(0, 4);
    assert.equal((await coordinator.initProducerId('tx', 1000, null)).errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
  });

  it('commits: Ongoing, PrepareCommit, the markers with the coordinator epoch, CompleteCommit; a retried EndTxn is answered NONE', async () => {
    const { coordinator, markers, states } = setup();
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60_000, null);
    assert.equal(await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]), NONE);
    assert.equal(await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]), NONE, 'already added: nothing to store');
    assert.equal(await coordinator.endTransaction('tx', producerId, producerEpoch, true), NONE);
    await settle();
    assert.deepEqual(markers, [{ marker: { producerId, producerEpoch, commit: true, coordinatorEpoch: 3 }, partitions: [TP] }]);
    assert.deepEqual(states(), [
      TransactionState.Empty,
      TransactionState.Ongoing,
      TransactionState.PrepareCommit,
      TransactionState.CompleteCommit,
    ]);
    assert.equal(await coordinator.endTransaction('tx', producerId, producerEpoch, true), NONE);
    assert.equal(await coordinator.endTransaction('tx', producerId, producerEpoch, false), Errors.INVALID_TXN_STATE.code);
    assert.equal(coordinator.describe('tx').state, 'CompleteCommit');
    assert.deepEqual(coordinator.describe('tx').partitions, []);
  });

  it('answers Kafka’s errors for a stale epoch, a wrong producer id, no open transaction', async () => {
    const { coordinator } = setup();
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60_000, null);
    assert.equal(await coordinator.endTransaction('tx', producerId, producerEpoch, true), Errors.INVALID_TXN_STATE.code, 'nothing to end');
    await coordinator.initProducerId('tx', 60_000, null);
    assert.equal(await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]), Errors.PRODUCER_FENCED.code);
    assert.equal(await coordinator.addPartitions('tx', producerId + 1n, producerEpoch + 1, [TP]), Errors.INVALID_PRODUCER_ID_MAPPING.code);
    assert.equal(await coordinator.endTransaction('unknown', producerId, producerEpoch, true), Errors.INVALID_PRODUCER_ID_MAPPING.code);
  });

  it('a new instance while a transaction is open: the open one is aborted with a bumped epoch, the producer retries', async () => {
    const { coordinator, markers } = setup();
    const old = await coordinator.initProducerId('tx', 60_000, null);
    await coordinator.addPartitions('tx', old.producerId, old.producerEpoch, [TP]);
    assert.equal((await coordinator.initProducerId('tx', 60_000, null)).errorCode, Errors.CONCURRENT_TRANSACTIONS.code);
    await settle();
    assert.deepEqual(markers[0]?.marker, {
      producerId: old.producerId,
      producerEpoch: old.producerEpoch + 1,
      commit: false,
      coordinatorEpoch: 3,
    });
    assert.equal(coordinator.describe('tx').state, 'CompleteAbort');
    const retried = await coordinator.initProducerId('tx', 60_000, null);
    assert.deepEqual(retried, { errorCode: NONE, producerId: old.producerId, producerEpoch: old.producerEpoch + 2 });
    assert.equal(await coordinator.endTransaction('tx', old.producerId, old.producerEpoch, true), Errors.PRODUCER_FENCED.code);
  });

  it('KIP-360: a producer that lost the answer of a bump gets the same answer again; another epoch is fenced', async () => {
    const { coordinator } = setup();
    const first = await coordinator.initProducerId('tx', 60_000, null);
    const bumped = await coordinator.initProducerId('tx', 60_000, { producerId: first.producerId, producerEpoch: first.producerEpoch });
    assert.equal(bumped.producerEpoch, first.producerEpoch + 1);
    const retried = await coordinator.initProducerId('tx', 60_000, { producerId: first.producerId, producerEpoch: first.producerEpoch });
    assert.deepEqual(retried, bumped);
    assert.equal(
      (await coordinator.initProducerId('tx', 60_000, { producerId: first.producerId, producerEpoch: 40 })).errorCode,
      Errors.PRODUCER_FENCED.code,
    );
    assert.equal(
      (await coordinator.initProducerId('tx', 60_000, { producerId: 7n, producerEpoch: 0 })).errorCode,
      Errors.PRODUCER_FENCED.code,
    );
  });

  it('aborts a transaction open past its timeout, fencing its producer', async () => {
    const { coordinator, clock, markers } = setup();
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 5_000, null);
    await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]);
    clock.advance(4_000);
    coordinator.abortTimedOutTransactions();
    assert.equal(coordinator.describe('tx').state, 'Ongoing');
    clock.advance(2_000);
    coordinator.abortTimedOutTransactions();
    await settle();
    assert.equal(coordinator.describe('tx').state, 'CompleteAbort');
    assert.deepEqual(markers[0]?.marker, { producerId, producerEpoch: producerEpoch + 1, commit: false, coordinatorEpoch: 3 });
    assert.equal(await coordinator.endTransaction('tx', producerId, producerEpoch, true), Errors.PRODUCER_FENCED.code);
  });

  it('a loaded transaction a previous coordinator prepared has its markers written again and completes', async () => {
    const prepared: TxnLogRecord = {
      transactionalId: 'tx',
      value: {
        producerId: 5n,
        producerEpoch: 2,
        txnTimeoutMs: 60_000,
        state: TransactionState.PrepareAbort,
        partitions: [TP, { topic: 'orders', partition: 1 }],
        txnLastUpdateTimestampMs: 1,
        txnStartTimestampMs: 1,
      },
    };
    const { markers, states } = setup({ loaded: [prepared] });
    await settle();
    assert.deepEqual(markers, [
      { marker: { producerId: 5n, producerEpoch: 2, commit: false, coordinatorEpoch: 3 }, partitions: prepared.value!.partitions },
    ]);
    assert.deepEqual(states(), [TransactionState.CompleteAbort]);
  });

  it('a fenced marker write leaves the transaction prepared for the coordinator that fenced it', async () => {
    const { coordinator, states } = setup({ markers: 'fenced' });
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60_000, null);
    await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]);
    assert.equal(await coordinator.endTransaction('tx', producerId, producerEpoch, false), NONE);
    await settle();
    assert.equal(states().at(-1), TransactionState.PrepareAbort);
  });

  it('maps a failed append to the errors producers retry, and keeps the state it had', async () => {
    const { coordinator, failAppendsWith } = setup();
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60_000, null);
    failAppendsWith(new KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, 'moved'));
    assert.equal(await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]), Errors.NOT_COORDINATOR.code);
    failAppendsWith(new KafkaError(Errors.NOT_ENOUGH_REPLICAS, 'few'));
    assert.equal(await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]), Errors.COORDINATOR_NOT_AVAILABLE.code);
    assert.equal(coordinator.describe('tx').state, 'Empty');
    failAppendsWith(null);
    assert.equal(await coordinator.addPartitions('tx', producerId, producerEpoch, [TP]), NONE);
  });

  it('expires an idle transactional id with a tombstone', async () => {
    const { coordinator, clock, appended } = setup();
    await coordinator.initProducerId('tx', 60_000, null);
    clock.advance(CONFIG.idExpirationMs + 1);
    coordinator.expireTransactionalIds();
    await settle();
    assert.deepEqual(appended.at(-1), { transactionalId: 'tx', value: null });
    assert.equal(coordinator.describe('tx').errorCode, Errors.TRANSACTIONAL_ID_NOT_FOUND.code);
  });

  it('lists transactions by state and producer id, and reports a partition still loading', async () => {
    const { coordinator } = setup();
    const a = await coordinator.initProducerId('a', 60_000, null);
    await coordinator.initProducerId('b', 60_000, null);
    await coordinator.addPartitions('a', a.producerId, a.producerEpoch, [TP]);
    assert.deepEqual(
      coordinator.list(['Ongoing'], [], -1).transactions.map((t) => t.transactionalId),
      ['a'],
    );
    assert.deepEqual(
      coordinator.list([], [a.producerId], -1).transactions.map((t) => t.transactionalId),
      ['a'],
    );
    assert.equal(coordinator.list([], [], -1).transactions.length, 2);
    coordinator.beginLoading(0, 9);
    assert.equal(coordinator.list([], [], -1).errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
  });
});

describe('transaction log codec', () => {
  const snapshot = fc.record({
    producerId: fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }),
    producerEpoch: fc.integer({ min: -1, max: 32767 }),
    txnTimeoutMs: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    state: fc.constantFrom(...Object.values(TransactionState).filter((v): v is TransactionState => typeof v === 'number')),
    partitions: fc.uniqueArray(fc.record({ topic: fc.constantFrom('a', 'b', 'orders'), partition: fc.integer({ min: 0, max: 100 }) }), {
      selector: (tp) => `${tp.topic}/${tp.partition}`,
      maxLength: 8,
    }),
    txnLastUpdateTimestampMs: fc.integer({ min: -1, max: 2 ** 45 }),
    txnStartTimestampMs: fc.integer({ min: -1, max: 2 ** 45 }),
  });

  it('round-trips every record, tombstones included (property)', () =>
    fc.assert(
      fc.property(fc.string(), fc.option(snapshot, { nil: null }), (transactionalId, value) => {
        const record: TxnLogRecord = { transactionalId, value };
        const { key, value: bytes } = encodeTxnLogRecord(record);
        const decoded = decodeTxnLogRecord(key, bytes);
        // Partitions come back grouped by topic, as Kafka stores them.
        const normalize = (r: TxnLogRecord | null) => {
          if (r === null || r.value === null) return r;
          const partitions = r.value.partitions.map((tp) => ({ topic: tp.topic, partition: tp.partition }));
          partitions.sort((x, y) => `${x.topic}/${x.partition}`.localeCompare(`${y.topic}/${y.partition}`));
          return { transactionalId: r.transactionalId, value: { ...r.value, partitions } };
        };
        assert.deepEqual(normalize(decoded), normalize(record));
      }),
    ));

  it('skips keys of versions it does not know and refuses unknown statuses', () => {
    const { key, value } = encodeTxnLogRecord({ transactionalId: 'x', value: null });
    const future = Buffer.from(key);
    future.writeInt16BE(7, 0);
    assert.equal(decodeTxnLogRecord(future, value), null);
    const withValue = encodeTxnLogRecord({
      transactionalId: 'x',
      value: {
        producerId: 1n,
        producerEpoch: 0,
        txnTimeoutMs: 1,
        state: TransactionState.Empty,
        partitions: [],
        txnLastUpdateTimestampMs: 0,
        txnStartTimestampMs: -1,
      },
    });
    const badStatus = Buffer.from(withValue.value!);
    // int16 version, int64 producer id, int16 epoch, int32 timeout, then the int8 status.
    badStatus.writeInt8(42, 2 + 8 + 2 + 4);
    assert.throws(() => decodeTxnLogRecord(withValue.key, badStatus), /unknown transaction status/);
  });
});
