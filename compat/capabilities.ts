// What Sluice can do today, as the compat suite sees it. A scenario runs against Sluice only
// when every capability it needs is listed here; otherwise the matrix says "not yet". Extend
// the list as features land — never to make a failing scenario disappear.

export type Capability =
  | 'api-versions' // ApiVersions at every version clients send (KIP-511 fallback included)
  | 'metadata' // Metadata: brokers, controller, topics, partitions, unknown topics
  | 'topics-admin' // CreateTopics with configs, DeleteTopics, CreatePartitions
  | 'configs' // DescribeConfigs, AlterConfigs, IncrementalAlterConfigs on topics
  | 'produce-fetch' // Produce (acks=all), Fetch, ListOffsets earliest/latest, uncompressed
  | 'list-offsets-by-time' // ListOffsets by timestamp
  | 'long-poll' // Fetch max.wait.ms / min.bytes woken by appends
  | 'max-message-bytes' // max.message.bytes enforced with MESSAGE_TOO_LARGE
  | 'gzip'
  | 'snappy'
  | 'lz4'
  | 'zstd'
  | 'groups' // classic consumer groups and committed offsets
  | 'idempotence' // InitProducerId and sequence checks
  | 'transactions'; // transactional producers (commit, abort), read_committed consumers

export const ALL_CAPABILITIES: readonly Capability[] = [
  'api-versions',
  'metadata',
  'topics-admin',
  'configs',
  'produce-fetch',
  'list-offsets-by-time',
  'long-poll',
  'max-message-bytes',
  'gzip',
  'snappy',
  'lz4',
  'zstd',
  'groups',
  'idempotence',
  'transactions',
];

export const SLUICE_CAPABILITIES: ReadonlySet<Capability> = new Set<Capability>([
  'api-versions',
  'metadata',
  'topics-admin',
  'configs',
  'produce-fetch',
  'list-offsets-by-time',
  'long-poll',
  'max-message-bytes',
  'gzip',
  'snappy',
  'lz4',
  'zstd',
  'groups',
  'idempotence',
  'transactions',
]);
