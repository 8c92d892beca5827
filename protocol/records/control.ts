// Control batches (implementation.html "Control Batches"): one record whose key is
// version int16 (0) + type int16. Transaction markers carry version int16 (0) +
// coordinatorEpoch int32 as value (Kafka's EndTransactionMarker); the KRaft types carry a
// serialized message (LeaderChangeMessage, SnapshotHeaderRecord, ...) as value.

import { EncodeError } from '../primitives.ts';
import {
  CompressionType,
  InvalidRecordBatchError,
  NO_PARTITION_LEADER_EPOCH,
  NO_PRODUCER_EPOCH,
  NO_PRODUCER_ID,
  NO_SEQUENCE,
  type RecordBatch,
} from './batch.ts';
import { buildRecordBatch } from './builder.ts';
import { decompressedRecords, iterateRecords, type ReadRecordsOptions } from './record.ts';

export enum ControlRecordType {
  Abort = 0,
  Commit = 1,
  LeaderChange = 2,
  SnapshotHeader = 3,
  SnapshotFooter = 4,
  KRaftVersion = 5,
  KRaftVoters = 6,
}

export const CONTROL_RECORD_KEY_VERSION = 0;
export const END_TXN_MARKER_VALUE_VERSION = 0;
const CONTROL_RECORD_KEY_BYTES = 4;
const END_TXN_MARKER_VALUE_BYTES = 6;

export function encodeControlRecordKey(type: ControlRecordType): Buffer {
  const key = Buffer.allocUnsafe(CONTROL_RECORD_KEY_BYTES);
  key.writeInt16BE(CONTROL_RECORD_KEY_VERSION, 0);
  key.writeInt16BE(type, 2);
  return key;
}

/** Reads a control key; types this code does not know are returned as numbers. */
export function decodeControlRecordKey(key: Buffer | null): { version: number; type: number } {
  if (key === null || key.length < CONTROL_RECORD_KEY_BYTES) {
    throw new InvalidRecordBatchError(`control record key of ${key?.length ?? 'null'} bytes`, 'corrupt');
  }
  const version = key.readInt16BE(0);
  if (version < 0) throw new InvalidRecordBatchError(`invalid control record key version ${version}`, 'corrupt');
  return { version, type: key.readInt16BE(2) };
}

export function encodeEndTxnMarkerValue(coordinatorEpoch: number): Buffer {
  const value = Buffer.allocUnsafe(END_TXN_MARKER_VALUE_BYTES);
  value.writeInt16BE(END_TXN_MARKER_VALUE_VERSION, 0);
  value.writeInt32BE(coordinatorEpoch, 2);
  return value;
}

/** Like Kafka, newer value versions are read as version 0 (their prefix is the same). */
export function decodeEndTxnMarkerValue(value: Buffer | null): { version: number; coordinatorEpoch: number } {
  if (value === null || value.length < END_TXN_MARKER_VALUE_BYTES) {
    throw new InvalidRecordBatchError(`end transaction marker value of ${value?.length ?? 'null'} bytes`, 'corrupt');
  }
  return { version: value.readInt16BE(0), coordinatorEpoch: value.readInt32BE(2) };
}

export interface ControlBatchOptions {
  type: ControlRecordType;
  value: Buffer | null;
  timestamp: number;
  baseOffset?: number | bigint;
  partitionLeaderEpoch?: number;
  producerId?: bigint;
  producerEpoch?: number;
  isTransactional?: boolean;
}

/** One control batch (uncompressed, CreateTime, no sequence) holding one control record. */
export async function buildControlBatch(o: ControlBatchOptions): Promise<Buffer> {
  return buildRecordBatch(
    {
      baseOffset: o.baseOffset ?? 0,
      partitionLeaderEpoch: o.partitionLeaderEpoch ?? NO_PARTITION_LEADER_EPOCH,
      producerId: o.producerId ?? NO_PRODUCER_ID,
      producerEpoch: o.producerEpoch ?? NO_PRODUCER_EPOCH,
      baseSequence: NO_SEQUENCE,
      isTransactional: o.isTransactional ?? false,
      isControl: true,
    },
    [{ key: encodeControlRecordKey(o.type), value: o.value, timestamp: o.timestamp }],
  );
}

export interface EndTxnMarkerOptions {
  commit: boolean;
  coordinatorEpoch: number;
  producerId: bigint;
  producerEpoch: number;
  timestamp: number;
  baseOffset?: number | bigint;
  partitionLeaderEpoch?: number;
}

/** A commit or abort marker batch, as MemoryRecords.withEndTransactionMarker writes it. */
export async function buildEndTxnMarker(o: EndTxnMarkerOptions): Promise<Buffer> {
  if (o.producerId === NO_PRODUCER_ID) throw new EncodeError('an end transaction marker needs a producer id');
  return buildControlBatch({
    type: o.commit ? ControlRecordType.Commit : ControlRecordType.Abort,
    value: encodeEndTxnMarkerValue(o.coordinatorEpoch),
    timestamp: o.timestamp,
    baseOffset: o.baseOffset,
    partitionLeaderEpoch: o.partitionLeaderEpoch,
    producerId: o.producerId,
    producerEpoch: o.producerEpoch,
    isTransactional: true,
  });
}

export interface ControlRecord {
  type: number;
  version: number;
  value: Buffer | null;
  offset: number;
  timestamp: number;
}

/** The control record of a control batch. */
export async function readControlRecord(batch: RecordBatch, options?: ReadRecordsOptions): Promise<ControlRecord> {
  if (!batch.isControl) throw new InvalidRecordBatchError('not a control batch', 'corrupt');
  return controlRecordIn(batch, await decompressedRecords(batch, options));
}

/**
 * The control record of an uncompressed control batch, read synchronously: Kafka writes
 * control batches uncompressed, so log recovery and fetch filtering need no await.
 */
export function readControlRecordSync(batch: RecordBatch): ControlRecord {
  if (!batch.isControl) throw new InvalidRecordBatchError('not a control batch', 'corrupt');
  if (batch.compression !== CompressionType.None) {
    throw new InvalidRecordBatchError('compressed control batch: use readControlRecord', 'corrupt');
  }
  return controlRecordIn(batch, batch.recordsPayload());
}

function controlRecordIn(batch: RecordBatch, records: Buffer): ControlRecord {
  const first = iterateRecords(batch, records).next();
  if (first.done) throw new InvalidRecordBatchError('control batch without a record', 'corrupt');
  const record = first.value;
  const { version, type } = decodeControlRecordKey(record.key);
  return { type, version, value: record.value, offset: record.offset, timestamp: record.timestamp };
}

export interface EndTxnMarker {
  commit: boolean;
  coordinatorEpoch: number;
  producerId: bigint;
  producerEpoch: number;
  offset: number;
  timestamp: number;
}

/** The commit/abort marker a control record carries, or null for other control types. */
export function endTxnMarkerOf(batch: RecordBatch, control: ControlRecord): EndTxnMarker | null {
  if (control.type !== ControlRecordType.Commit && control.type !== ControlRecordType.Abort) return null;
  return {
    commit: control.type === ControlRecordType.Commit,
    coordinatorEpoch: decodeEndTxnMarkerValue(control.value).coordinatorEpoch,
    producerId: batch.producerId,
    producerEpoch: batch.producerEpoch,
    offset: control.offset,
    timestamp: control.timestamp,
  };
}
