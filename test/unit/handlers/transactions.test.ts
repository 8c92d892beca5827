import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeAddPartitionsToTxnRequest,
  makeAddPartitionsToTxnRequestAddPartitionsToTxnTransaction,
} from '../../../protocol/messages/add-partitions-to-txn.ts';
import { makeEndTxnRequest } from '../../../protocol/messages/end-txn.ts';
import { makeInitProducerIdRequest } from '../../../protocol/messages/init-producer-id.ts';
import { makeListTransactionsRequest } from '../../../protocol/messages/list-transactions.ts';
import { handleInitProducerId, type ProducerIdServices } from '../../../src/handlers/producer-id.ts';
import {
  handleAddPartitionsToTxn,
  handleEndTxn,
  handleListTransactions,
  type TransactionHandlerServices,
} from '../../../src/handlers/transactions.ts';

/** A coordinator that answers every request with `errorCode` and records what it was asked. */
function services(errorCode: number, existing: (topic: string, partition: number) => boolean = () => true) {
  const calls: unknown[][] = [];
  const coordinator: TransactionHandlerServices['coordinator'] = {
    initProducerId: async (...args) => {
      calls.push(['initProducerId', ...args]);
      return { errorCode, producerId: -1n, producerEpoch: -1 };
    },
    addPartitions: async (...args) => {
      calls.push(['addPartitions', ...args]);
      return errorCode;
    },
    verifyPartitions: (...args) => {
      calls.push(['verifyPartitions', ...args]);
      return args[3].map(() => errorCode);
    },
    endTransaction: async (...args) => {
      calls.push(['endTransaction', ...args]);
      return errorCode;
    },
    describe: () => {
      throw new Error('not asked');
    },
    list: (...args) => {
      calls.push(['list', ...args]);
      return { errorCode: Errors.NONE.code, transactions: [] };
    },
  };
  return {
    calls,
    handlers: { coordinator, partitionExists: existing, offsetsPartitionFor: () => 0 } satisfies TransactionHandlerServices,
    coordinator,
  };
}

describe('transaction handlers', () => {
  it('answer PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to the versions before KIP-588, as KafkaApis does', async () => {
    const { handlers, coordinator } = services(Errors.PRODUCER_FENCED.code);
    const end = makeEndTxnRequest({ transactionalId: 'tx', producerId: 1n, producerEpoch: 0, committed: true });
    assert.equal((await handleEndTxn(handlers, end, 1)).errorCode, Errors.INVALID_PRODUCER_EPOCH.code);
    assert.equal((await handleEndTxn(handlers, end, 2)).errorCode, Errors.PRODUCER_FENCED.code);
    const add = makeAddPartitionsToTxnRequest({
      v3AndBelowTransactionalId: 'tx',
      v3AndBelowProducerId: 1n,
      v3AndBelowProducerEpoch: 0,
      v3AndBelowTopics: [{ name: 't', partitions: [0] }],
    });
    assert.equal(
      (await handleAddPartitionsToTxn(handlers, add, 1)).resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode,
      Errors.INVALID_PRODUCER_EPOCH.code,
    );
    assert.equal(
      (await handleAddPartitionsToTxn(handlers, add, 2)).resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode,
      Errors.PRODUCER_FENCED.code,
    );
    const producerIds = { transactions: coordinator } as unknown as ProducerIdServices;
    const init = makeInitProducerIdRequest({ transactionalId: 'tx', transactionTimeoutMs: 1000, producerId: -1n, producerEpoch: -1 });
    assert.equal((await handleInitProducerId(producerIds, init, 3)).errorCode, Errors.INVALID_PRODUCER_EPOCH.code);
    assert.equal((await handleInitProducerId(producerIds, init, 4)).errorCode, Errors.PRODUCER_FENCED.code);
  });

  it('AddPartitionsToTxn: partitions that do not exist fail alone, the others are not attempted, the coordinator is not asked', async () => {
    const { handlers, calls } = services(Errors.NONE.code, (topic) => topic === 'known');
    const r = await handleAddPartitionsToTxn(
      handlers,
      makeAddPartitionsToTxnRequest({
        v3AndBelowTransactionalId: 'tx',
        v3AndBelowProducerId: 1n,
        v3AndBelowProducerEpoch: 0,
        v3AndBelowTopics: [
          { name: 'known', partitions: [0, 1] },
          { name: 'unknown', partitions: [0] },
        ],
      }),
      3,
    );
    assert.deepEqual(
      r.resultsByTopicV3AndBelow.map((t) => [t.name, t.resultsByPartition.map((p) => p.partitionErrorCode)]),
      [
        ['known', [Errors.OPERATION_NOT_ATTEMPTED.code, Errors.OPERATION_NOT_ATTEMPTED.code]],
        ['unknown', [Errors.UNKNOWN_TOPIC_OR_PARTITION.code]],
      ],
    );
    assert.deepEqual(calls, []);
  });

  it('AddPartitionsToTxn v4+ (brokers, KIP-890): verifyOnly asks the coordinator to verify; TRANSACTION_ABORTABLE is INVALID_TXN_STATE before v5', async () => {
    const { handlers, calls } = services(Errors.TRANSACTION_ABORTABLE.code);
    const request = makeAddPartitionsToTxnRequest({
      transactions: [
        makeAddPartitionsToTxnRequestAddPartitionsToTxnTransaction({
          transactionalId: 'tx',
          producerId: 1n,
          producerEpoch: 2,
          verifyOnly: true,
          topics: [{ name: 't', partitions: [0] }],
        }),
      ],
    });
    const codeAt = async (version: number) =>
      (await handleAddPartitionsToTxn(handlers, request, version)).resultsByTransaction[0]!.topicResults[0]!.resultsByPartition[0]!
        .partitionErrorCode;
    assert.equal(await codeAt(4), Errors.INVALID_TXN_STATE.code);
    assert.equal(await codeAt(5), Errors.TRANSACTION_ABORTABLE.code);
    assert.deepEqual(calls[0], ['verifyPartitions', 'tx', 1n, 2, [{ topic: 't', partition: 0 }]]);
    request.transactions[0]!.verifyOnly = false;
    await codeAt(5);
    assert.equal(calls.at(-1)![0], 'addPartitions', 'without verifyOnly the partitions join the transaction');
  });

  it('ListTransactions filters by the states it knows and reports the others', () => {
    const { handlers, calls } = services(Errors.NONE.code);
    const r = handleListTransactions(
      handlers,
      makeListTransactionsRequest({ stateFilters: ['Ongoing', 'Bogus'], producerIdFilters: [], durationFilter: 5n }),
      0,
    );
    assert.deepEqual(r.unknownStateFilters, ['Bogus']);
    assert.deepEqual(calls, [['list', ['Ongoing'], [], -1]]);
  });
});
