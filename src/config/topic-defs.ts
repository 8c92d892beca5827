/**
 * Topic-level configuration (Kafka's TopicConfig / LogConfig): names, types, validation and
 * the broker configs each one falls back to (its synonyms, in precedence order, as
 * DescribeConfigs lists them).
 */
import { LONG_MAX, atLeast, between, validList, validString, type ConfigDef, type ConfigType } from './types.ts';

export interface BrokerSynonym {
  readonly name: string;
  /** Converts the broker value to the topic config's unit (hours -> ms). */
  readonly toTopicValue?: (brokerValue: string) => string;
}

export interface TopicConfigDef extends ConfigDef {
  /** Broker configs whose value is this topic config's default, highest precedence first. */
  readonly synonyms: readonly BrokerSynonym[];
}

const hoursToMs = (v: string): string => String(BigInt(v) * 3_600_000n);
const minutesToMs = (v: string): string => String(BigInt(v) * 60_000n);

function topic(
  name: string,
  type: ConfigType,
  defaultValue: string,
  synonyms: readonly BrokerSynonym[],
  documentation: string,
  validate?: (value: string) => string | null,
): TopicConfigDef {
  return {
    name,
    type,
    defaultValue,
    documentation,
    synonyms,
    updateMode: 'cluster-wide',
    sensitive: false,
    ...(validate ? { validate } : {}),
  };
}

const same = (name: string): BrokerSynonym[] => [{ name }];

export const TOPIC_CONFIG_DEFS: readonly TopicConfigDef[] = [
  topic(
    'cleanup.policy',
    'list',
    'delete',
    same('log.cleanup.policy'),
    'This config designates the retention policy to use on log segments. The "delete" policy (which is the default) will discard old segments when their retention time or size limit has been reached. The "compact" policy will enable log compaction, which retains the latest value for each key.',
    validList('delete', 'compact'),
  ),
  topic(
    'compression.type',
    'string',
    'producer',
    same('compression.type'),
    "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer.",
    validString('uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'),
  ),
  topic(
    'compression.gzip.level',
    'int',
    '-1',
    same('compression.gzip.level'),
    'The compression level to use if compression.type is set to gzip.',
    (v) => (v === '-1' || (Number(v) >= 1 && Number(v) <= 9) ? null : 'Value must be -1 or between 1 and 9'),
  ),
  topic(
    'compression.lz4.level',
    'int',
    '9',
    same('compression.lz4.level'),
    'The compression level to use if compression.type is set to lz4.',
    between(1, 17),
  ),
  topic(
    'compression.zstd.level',
    'int',
    '3',
    same('compression.zstd.level'),
    'The compression level to use if compression.type is set to zstd.',
    between(-131072, 22),
  ),
  topic(
    'delete.retention.ms',
    'long',
    '86400000',
    same('log.cleaner.delete.retention.ms'),
    'The amount of time to retain delete tombstone markers for log compacted topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage.',
    atLeast(0),
  ),
  topic(
    'file.delete.delay.ms',
    'long',
    '60000',
    same('log.segment.delete.delay.ms'),
    'The time to wait before deleting a file from the filesystem.',
    atLeast(0),
  ),
  topic(
    'flush.messages',
    'long',
    LONG_MAX,
    same('log.flush.interval.messages'),
    'This setting allows specifying an interval at which we will force an fsync of data written to the log. For example if this was set to 1 we would fsync after every message.',
    atLeast(1),
  ),
  topic(
    'flush.ms',
    'long',
    LONG_MAX,
    [{ name: 'log.flush.interval.ms' }, { name: 'log.flush.scheduler.interval.ms' }],
    'This setting allows specifying a time interval at which we will force an fsync of data written to the log.',
    atLeast(0),
  ),
  topic(
    'index.interval.bytes',
    'int',
    '4096',
    same('log.index.interval.bytes'),
    'This setting controls how frequently Kafka adds an index entry to its offset index.',
    atLeast(0),
  ),
  topic(
    'max.compaction.lag.ms',
    'long',
    LONG_MAX,
    same('log.cleaner.max.compaction.lag.ms'),
    'The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted.',
    atLeast(1),
  ),
  topic(
    'max.message.bytes',
    'int',
    '1048588',
    same('message.max.bytes'),
    'The largest record batch size allowed by Kafka (after compression if compression is enabled).',
    atLeast(0),
  ),
  topic(
    'message.timestamp.after.max.ms',
    'long',
    '3600000',
    same('log.message.timestamp.after.max.ms'),
    "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. If message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold.",
    atLeast(0),
  ),
  topic(
    'message.timestamp.before.max.ms',
    'long',
    LONG_MAX,
    same('log.message.timestamp.before.max.ms'),
    "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. If message.timestamp.type=CreateTime, the message will be rejected if the difference in timestamps exceeds this specified threshold.",
    atLeast(0),
  ),
  topic(
    'message.timestamp.type',
    'string',
    'CreateTime',
    same('log.message.timestamp.type'),
    'Define whether the timestamp in the message is message create time or log append time.',
    validString('CreateTime', 'LogAppendTime'),
  ),
  topic(
    'min.cleanable.dirty.ratio',
    'double',
    '0.5',
    same('log.cleaner.min.cleanable.ratio'),
    'This configuration controls how frequently the log compactor will attempt to clean the log (assuming log compaction is enabled).',
    between(0, 1),
  ),
  topic(
    'min.compaction.lag.ms',
    'long',
    '0',
    same('log.cleaner.min.compaction.lag.ms'),
    'The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted.',
    atLeast(0),
  ),
  topic(
    'min.insync.replicas',
    'int',
    '1',
    same('min.insync.replicas'),
    'When a producer sets acks to "all" (or "-1"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful. If this minimum cannot be met, then the producer will raise an exception (either NotEnoughReplicas or NotEnoughReplicasAfterAppend).',
    atLeast(1),
  ),
  topic(
    'preallocate',
    'boolean',
    'false',
    same('log.preallocate'),
    'True if we should preallocate the file on disk when creating a new log segment.',
  ),
  topic(
    'retention.bytes',
    'long',
    '-1',
    same('log.retention.bytes'),
    'This configuration controls the maximum size a partition (which consists of log segments) can grow to before we will discard old log segments to free up space if we are using the "delete" retention policy. By default there is no size limit only a time limit.',
  ),
  topic(
    'retention.ms',
    'long',
    '604800000',
    [
      { name: 'log.retention.ms' },
      { name: 'log.retention.minutes', toTopicValue: minutesToMs },
      { name: 'log.retention.hours', toTopicValue: hoursToMs },
    ],
    'This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the "delete" retention policy. If set to -1, no time limit is applied.',
    atLeast(-1),
  ),
  topic(
    'segment.bytes',
    'int',
    '1073741824',
    same('log.segment.bytes'),
    'This configuration controls the segment file size for the log. Retention and cleaning is always done a file at a time so a larger segment size means fewer files but less granular control over retention.',
    // Kafka 4.0 (KIP-1030): at least 1 MiB; a 14-byte segment per batch is a file storm.
    atLeast(1024 * 1024),
  ),
  topic(
    'segment.index.bytes',
    'int',
    '10485760',
    same('log.index.size.max.bytes'),
    'This configuration controls the size of the index that maps offsets to file positions.',
    atLeast(4),
  ),
  topic(
    'segment.jitter.ms',
    'long',
    '0',
    [{ name: 'log.roll.jitter.ms' }, { name: 'log.roll.jitter.hours', toTopicValue: hoursToMs }],
    'The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of segment rolling',
    atLeast(0),
  ),
  topic(
    'segment.ms',
    'long',
    '604800000',
    [{ name: 'log.roll.ms' }, { name: 'log.roll.hours', toTopicValue: hoursToMs }],
    "This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full to ensure that retention can delete or compact old data.",
    atLeast(1),
  ),
  topic(
    'unclean.leader.election.enable',
    'boolean',
    'false',
    same('unclean.leader.election.enable'),
    'Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss.',
  ),
  // Kafka's reassignment tool sets and clears these; Sluice stores them but does not throttle.
  topic(
    'leader.replication.throttled.replicas',
    'list',
    '',
    [],
    'A list of replicas for which log replication should be throttled on the leader side (stored; replication is not throttled).',
  ),
  topic(
    'follower.replication.throttled.replicas',
    'list',
    '',
    [],
    'A list of replicas for which log replication should be throttled on the follower side (stored; replication is not throttled).',
  ),
];

export const TOPIC_CONFIG_DEF_BY_NAME: ReadonlyMap<string, TopicConfigDef> = new Map(TOPIC_CONFIG_DEFS.map((d) => [d.name, d]));
