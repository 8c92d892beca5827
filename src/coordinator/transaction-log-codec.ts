// Byte form of the transaction coordinator's records in `__transaction_state`, as Kafka's
// TransactionLog writes them: key = int16 version (0) + TransactionLogKey; value = int16
// version + TransactionLogValue (0 written, 0 and 1 read); a null value is a tombstone.
// Tools that read `__transaction_state` with Kafka's formatters can read ours.

import { Reader, Writer } from '../../protocol/primitives.ts';
import { decodeTransactionLogKey, encodeTransactionLogKey } from '../../protocol/messages/transaction-coordinator/transaction-log-key.ts';
import {
  decodeTransactionLogValue,
  encodeTransactionLogValue,
} from '../../protocol/messages/transaction-coordinator/transaction-log-value.ts';
import { CoordinatorRecordDecodeError } from './offsets-topic-codec.ts';
import { TransactionState, type TxnLogRecord } from './transaction-metadata.ts';

const KEY_VERSION = 0;
/** Version 1 (flexible) only carries the tagged fields of transaction version 2 (KIP-890 part 2). */
const VALUE_VERSION = 0;
const MAX_VALUE_VERSION = 1;
const MAX_STATUS = TransactionState.PrepareEpochFence;

export function encodeTxnLogRecord(record: TxnLogRecord): { key: Buffer; value: Buffer | null } {
  const key = new Writer(64).int16(KEY_VERSION);
  encodeTransactionLogKey(key, { transactionalId: record.transactionalId }, KEY_VERSION);
  if (record.value === null) return { key: key.toBuffer(), value: null };
  const v = record.value;
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of v.partitions) {
    const ids = byTopic.get(topic);
    if (ids === undefined) byTopic.set(topic, [partition]);
    else ids.push(partition);
  }
  const value = new Writer(128).int16(VALUE_VERSION);
  encodeTransactionLogValue(
    value,
    {
      producerId: v.producerId,
      previousProducerId: -1n,
      nextProducerId: -1n,
      producerEpoch: v.producerEpoch,
      transactionTimeoutMs: v.txnTimeoutMs,
      transactionStatus: v.state,
      // Kafka writes null for the states that hold no partitions (Empty, Complete*, Dead).
      transactionPartitions: byTopic.size === 0 ? null : [...byTopic].map(([topic, partitionIds]) => ({ topic, partitionIds })),
      transactionLastUpdateTimestampMs: BigInt(v.txnLastUpdateTimestampMs),
      transactionStartTimestampMs: BigInt(v.txnStartTimestampMs),
      clientTransactionVersion: 0,
    },
    VALUE_VERSION,
  );
  return { key: key.toBuffer(), value: value.toBuffer() };
}

/** null for a key of a version this coordinator does not know (a newer broker's record). */
export function decodeTxnLogRecord(keyBytes: Buffer, valueBytes: Buffer | null): TxnLogRecord | null {
  try {
    const keyReader = new Reader(keyBytes);
    const keyVersion = keyReader.int16();
    if (keyVersion !== KEY_VERSION) return null;
    const { transactionalId } = decodeTransactionLogKey(keyReader, keyVersion);
    if (valueBytes === null) return { transactionalId, value: null };
    const valueReader = new Reader(valueBytes);
    const version = valueReader.int16();
    if (version < 0 || version > MAX_VALUE_VERSION)
      throw new CoordinatorRecordDecodeError(`TransactionLogValue of unknown version ${version}`);
    const v = decodeTransactionLogValue(valueReader, version);
    if (v.transactionStatus < 0 || v.transactionStatus > MAX_STATUS) {
      throw new CoordinatorRecordDecodeError(`unknown transaction status ${v.transactionStatus}`);
    }
    return {
      transactionalId,
      value: {
        producerId: v.producerId,
        producerEpoch: v.producerEpoch,
        txnTimeoutMs: v.transactionTimeoutMs,
        state: v.transactionStatus as TransactionState,
        partitions: (v.transactionPartitions ?? []).flatMap((t) => t.partitionIds.map((partition) => ({ topic: t.topic, partition }))),
        txnLastUpdateTimestampMs: Number(v.transactionLastUpdateTimestampMs),
        txnStartTimestampMs: Number(v.transactionStartTimestampMs),
      },
    };
  } catch (err) {
    if (err instanceof CoordinatorRecordDecodeError) throw err;
    throw new CoordinatorRecordDecodeError(`unreadable transaction log record: ${err instanceof Error ? err.message : String(err)}`);
  }
}
