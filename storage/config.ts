// Topic-level log configuration: Kafka's topic config names, camelCased, with Kafka's defaults.

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

export const DEFAULT_LOG_CONFIG: Readonly<LogConfig> = Object.freeze({
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  segmentJitterMs: 0,
  segmentIndexBytes: 10 * 1024 * 1024,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  cleanupPolicy: 'delete',
  flushMessages: NEVER,
  flushMs: NEVER,
  indexIntervalBytes: 4096,
  maxMessageBytes: 1024 * 1024 + 12,
  minCleanableDirtyRatio: 0.5,
  minCompactionLagMs: 0,
  maxCompactionLagMs: NEVER,
  deleteRetentionMs: 24 * 60 * 60 * 1000,
  fileDeleteDelayMs: 60_000,
  messageTimestampType: 'CreateTime',
});

/** Topic config name -> LogConfig field. */
export const TOPIC_CONFIG_NAMES: Readonly<Record<string, keyof LogConfig>> = Object.freeze({
  'segment.bytes': 'segmentBytes',
  'segment.ms': 'segmentMs',
  'segment.jitter.ms': 'segmentJitterMs',
  'segment.index.bytes': 'segmentIndexBytes',
  'retention.ms': 'retentionMs',
  'retention.bytes': 'retentionBytes',
  'cleanup.policy': 'cleanupPolicy',
  'flush.messages': 'flushMessages',
  'flush.ms': 'flushMs',
  'index.interval.bytes': 'indexIntervalBytes',
  'max.message.bytes': 'maxMessageBytes',
  'min.cleanable.dirty.ratio': 'minCleanableDirtyRatio',
  'min.compaction.lag.ms': 'minCompactionLagMs',
  'max.compaction.lag.ms': 'maxCompactionLagMs',
  'delete.retention.ms': 'deleteRetentionMs',
  'file.delete.delay.ms': 'fileDeleteDelayMs',
  'message.timestamp.type': 'messageTimestampType',
});

/**
 * Builds a LogConfig from Kafka topic properties (`{'retention.ms': '1000'}`) over `base`.
 * Unknown names are ignored: they belong to other layers (min.insync.replicas, ...).
 */
export function logConfigFromProperties(props: Record<string, string | number>, base: Partial<LogConfig> = {}): LogConfig {
  const config: LogConfig = { ...DEFAULT_LOG_CONFIG, ...base };
  for (const [name, raw] of Object.entries(props)) {
    const field = TOPIC_CONFIG_NAMES[name];
    if (field === undefined) continue;
    if (field === 'cleanupPolicy') config.cleanupPolicy = normalizeCleanupPolicy(String(raw));
    else if (field === 'messageTimestampType') {
      if (raw !== 'CreateTime' && raw !== 'LogAppendTime') throw new RangeError(`invalid message.timestamp.type ${raw}`);
      config.messageTimestampType = raw;
    } else {
      const value = Number(raw);
      if (!Number.isFinite(value)) throw new RangeError(`invalid ${name}: ${raw}`);
      config[field] = Math.min(value, NEVER);
    }
  }
  return config;
}

export function normalizeCleanupPolicy(value: string): CleanupPolicy {
  const parts = new Set(
    value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  );
  const compact = parts.has('compact');
  const del = parts.has('delete');
  for (const p of parts) if (p !== 'compact' && p !== 'delete') throw new RangeError(`invalid cleanup.policy ${value}`);
  if (compact && del) return 'compact,delete';
  if (compact) return 'compact';
  return 'delete';
}

export function isCompacted(config: LogConfig): boolean {
  return config.cleanupPolicy !== 'delete';
}

export function hasDeletePolicy(config: LogConfig): boolean {
  return config.cleanupPolicy !== 'compact';
}
