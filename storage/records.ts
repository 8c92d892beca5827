// The few record-level operations storage needs (the hot paths never decode records):
// ListOffsets by timestamp looks inside one batch, and the cleaner reads keys and rebuilds
// batches that lost records.

import {
  RecordBatch,
  RecordBatchBuilder,
  TimestampType,
  buildEmptyBatch,
  decompressedRecords,
  iterateRecords,
  records,
} from '../protocol/records/index.ts';
import type { Record } from '../protocol/records/index.ts';

export type { Record };

/** The first record of the (single) batch in `batch` with timestamp >= `timestampMs`. */
export async function firstRecordAtOrAfter(batch: Buffer, timestampMs: number): Promise<{ offset: number; timestampMs: number } | null> {
  for await (const r of records(new RecordBatch(batch, 0))) {
    if (r.timestamp >= timestampMs) return { offset: r.offset, timestampMs: r.timestamp };
  }
  return null;
}

/** All records of a batch (decompressed when needed). */
export async function batchRecords(batch: RecordBatch): Promise<Record[]> {
  return [...iterateRecords(batch, await decompressedRecords(batch))];
}

/**
 * A copy of `batch` holding only `kept` (a subset of its records, in order), with the same
 * base offset, producer fields, leader epoch, codec and timestamp type; records keep their
 * offsets. With nothing kept, an empty batch that preserves the producer's sequence range.
 */
export async function rebuildBatch(batch: RecordBatch, kept: readonly Record[]): Promise<Buffer> {
  const common = {
    baseOffset: batch.baseOffset,
    partitionLeaderEpoch: batch.partitionLeaderEpoch,
    producerId: batch.producerId,
    producerEpoch: batch.producerEpoch,
    baseSequence: batch.baseSequence,
    isTransactional: batch.isTransactional,
    isControl: batch.isControl,
    timestampType: batch.timestampType,
  };
  if (kept.length === 0) {
    return buildEmptyBatch({ ...common, lastOffset: batch.lastOffset, timestamp: batch.maxTimestamp });
  }
  const builder = new RecordBatchBuilder({
    ...common,
    compression: batch.compression,
    logAppendTimeMs: batch.timestampType === TimestampType.LogAppendTime ? batch.maxTimestamp : undefined,
  });
  for (const r of kept) {
    builder.add({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp, offsetDelta: r.offsetDelta });
  }
  return builder.build();
}

/** The offset of the first record carrying the batch's max timestamp (ListOffsets -3, KIP-734). */
export async function offsetOfMaxTimestamp(batch: Buffer): Promise<number> {
  const view = new RecordBatch(batch, 0);
  const max = view.maxTimestamp;
  for await (const r of records(view)) if (r.timestamp === max) return r.offset;
  return view.lastOffset;
}
