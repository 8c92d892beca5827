// What one partition log is configured with: Kafka's topic configs (LogConfig), camelCased,
// with units last. Storage keeps no defaults and parses no properties: the broker builds a
// LogConfig from its config definitions (src/config/topic-config.ts, logConfigOf) and
// hands it over whole.

export type CleanupPolicy = 'delete' | 'compact' | 'compact,delete';
export type MessageTimestampType = 'CreateTime' | 'LogAppendTime';

/** Kafka's Long.MAX_VALUE defaults (flush.messages, flush.ms, ...) as the largest safe number. */
export const NEVER = Number.MAX_SAFE_INTEGER;

export interface LogConfig {
  /** segment.bytes */
  segmentBytes: number;
  /** segment.ms */
  segmentMs: number;
  /** segment.jitter.ms */
  segmentJitterMs: number;
  /** segment.index.bytes: a segment rolls when its offset index would outgrow this. */
  segmentIndexBytes: number;
  /** retention.ms (-1: unlimited) */
  retentionMs: number;
  /** retention.bytes (-1: unlimited) */
  retentionBytes: number;
  /** cleanup.policy */
  cleanupPolicy: CleanupPolicy;
  /** flush.messages */
  flushMessages: number;
  /** flush.ms */
  flushMs: number;
  /** index.interval.bytes */
  indexIntervalBytes: number;
  /** max.message.bytes */
  maxMessageBytes: number;
  /** min.cleanable.dirty.ratio */
  minCleanableDirtyRatio: number;
  /** min.compaction.lag.ms */
  minCompactionLagMs: number;
  /** max.compaction.lag.ms */
  maxCompactionLagMs: number;
  /** delete.retention.ms */
  deleteRetentionMs: number;
  /** file.delete.delay.ms */
  fileDeleteDelayMs: number;
  /** message.timestamp.type */
  messageTimestampType: MessageTimestampType;
}

/** cleanup.policy includes compact: the cleaner keeps the latest record per key. */
export function isCompacted(config: Pick<LogConfig, 'cleanupPolicy'>): boolean {
  return config.cleanupPolicy !== 'delete';
}

/** cleanup.policy includes delete: retention drops whole segments (and DeleteRecords is allowed). */
export function hasDeletePolicy(config: Pick<LogConfig, 'cleanupPolicy'>): boolean {
  return config.cleanupPolicy !== 'compact';
}
