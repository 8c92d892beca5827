// Raft batches as Kafka stores them in `__cluster_metadata-0` and in snapshots: v2 record
// batches, uncompressed, partitionLeaderEpoch = the Raft epoch, control batches (attribute
// bit 5) holding LeaderChange / SnapshotHeader / SnapshotFooter records with the control
// key (version int16 0, type int16). Records have null keys except control records.

import { crc32c } from '../../../protocol/crc.ts';
import { DecodeError, Reader, Writer } from '../../../protocol/primitives.ts';
import { ATTRIBUTES, CRC, RECORD_BATCH_OVERHEAD, batchesIn } from '../../../protocol/records/batch.ts';
import type { RaftBatch } from './types.ts';

/** Kafka's ControlRecordType ids. */
export const ControlRecordType = {
  LEADER_CHANGE: 2,
  SNAPSHOT_HEADER: 3,
  SNAPSHOT_FOOTER: 4,
} as const;

const CONTROL_ATTRIBUTE = 0x20;

function controlKey(type: number): Buffer {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(type, 2);
  return key;
}

/** Encodes one batch; control batches carry records of `controlType`. */
export function encodeRaftBatch(batch: RaftBatch, controlType: number = ControlRecordType.LEADER_CHANGE): Buffer {
  const w = new Writer(RECORD_BATCH_OVERHEAD + batch.records.reduce((n, r) => n + r.length + 16, 0));
  w.int64(BigInt(batch.baseOffset));
  w.int32(0);
  w.int32(batch.epoch);
  w.int8(2);
  w.int32(0);
  w.int16(batch.control ? CONTROL_ATTRIBUTE : 0);
  w.int32(batch.records.length - 1);
  w.int64(BigInt(batch.appendTimeMs));
  w.int64(BigInt(batch.appendTimeMs));
  w.int64(-1n);
  w.int16(-1);
  w.int32(-1);
  w.int32(batch.records.length);
  const key = batch.control ? controlKey(controlType) : null;
  batch.records.forEach((value, offsetDelta) => {
    const body = new Writer(value.length + 16);
    body.int8(0);
    body.varlong(0n);
    body.varint(offsetDelta);
    if (key === null) body.varint(-1);
    else body.varint(key.length).raw(key);
    body.varint(value.length).raw(value);
    body.uvarint(0);
    const bytes = body.toBuffer();
    w.varint(bytes.length).raw(bytes);
  });
  const buf = w.toBuffer();
  buf.writeInt32BE(buf.length - 12, 8);
  buf.writeUInt32BE(crc32c(buf.subarray(ATTRIBUTES)), CRC);
  return buf;
}

/** Decodes every batch in `buf`, checking framing and CRCs. */
export function decodeRaftBatches(buf: Buffer): RaftBatch[] {
  const out: RaftBatch[] = [];
  for (const batch of batchesIn(buf, true)) {
    if (batch.compression !== 0) throw new DecodeError('compressed metadata batches are not supported');
    const r = new Reader(batch.recordsPayload());
    const records: Buffer[] = [];
    for (let i = 0; i < batch.recordCount; i++) {
      const length = r.varint();
      const rec = new Reader(r.raw(length));
      rec.int8();
      rec.varlong();
      rec.varint();
      const keyLength = rec.varint();
      if (keyLength > 0) rec.raw(keyLength);
      const valueLength = rec.varint();
      records.push(Buffer.from(valueLength < 0 ? Buffer.alloc(0) : rec.raw(valueLength)));
    }
    out.push({
      baseOffset: batch.baseOffset,
      epoch: batch.partitionLeaderEpoch,
      appendTimeMs: batch.maxTimestamp,
      control: batch.isControl,
      records,
    });
  }
  return out;
}
