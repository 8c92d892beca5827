// Record batches: the v2 header view, records, the builder, control batches, and the
// legacy v0/v1 message sets.

export {
  ATTRIBUTES, BASE_OFFSET, BASE_SEQUENCE, BASE_TIMESTAMP, BATCH_LENGTH, batchesIn, COMPRESSION_MASK,
  CompressionType, CONTROL_BIT, CRC, DELETE_HORIZON_BIT, InvalidRecordBatchError, LAST_OFFSET_DELTA, LOG_OVERHEAD,
  MAGIC, MAX_TIMESTAMP, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
  PARTITION_LEADER_EPOCH, PRODUCER_EPOCH, PRODUCER_ID, RECORD_BATCH_OVERHEAD, RecordBatch, RECORDS_COUNT,
  TIMESTAMP_TYPE_BIT, TimestampType, TRANSACTIONAL_BIT, validateBatchAt,
} from './batch.ts';
export {
  decompressedRecords, iterateRecords, readRecords, records, sizeOfVarint, writeRecord,
  type ReadRecordsOptions, type Record, type RecordHeader, type RecordInput,
} from './record.ts';
export { RecordFault, RecordScanner, type RecordScanOptions } from './scan.ts';
export {
  batchAttributes, buildEmptyBatch, buildRecordBatch, RecordBatchBuilder,
  type EmptyBatchOptions, type RecordBatchOptions,
} from './builder.ts';
export {
  buildControlBatch, buildEndTxnMarker, CONTROL_RECORD_KEY_VERSION, ControlRecordType, decodeControlRecordKey,
  decodeEndTxnMarkerValue, encodeControlRecordKey, encodeEndTxnMarkerValue, END_TXN_MARKER_VALUE_VERSION,
  endTxnMarkerOf, readControlRecord, readControlRecordSync,
  type ControlBatchOptions, type ControlRecord, type EndTxnMarker, type EndTxnMarkerOptions,
} from './control.ts';
export {
  buildLegacyMessageSet, convertLegacyToV2, LEGACY_RECORD_OVERHEAD_V0, LEGACY_RECORD_OVERHEAD_V1, legacyEntries,
  legacyRecords, magicAt, v2ToLegacy,
  type ConvertLegacyOptions, type DownConvertOptions, type LegacyMagic, type LegacyMessage,
  type LegacyMessageSetOptions, type LegacyReadOptions, type LegacyRecordInput,
} from './legacy.ts';
