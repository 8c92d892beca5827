/**
 * Broker configuration definitions: Kafka's property names, types, defaults and
 * documentation (KafkaConfig / ServerLogConfigs / ReplicationConfigs of the 3.9 line), plus
 * the few limits Sluice adds, marked "Sluice:" in their documentation.
 */
import { LONG_MAX, atLeast, between, validList, validString, type ConfigDef, type ConfigType, type ConfigUpdateMode } from './types.ts';

interface DefOptions {
  updateMode?: ConfigUpdateMode;
  sensitive?: boolean;
  validate?: (value: string) => string | null;
}

function def(name: string, type: ConfigType, defaultValue: string | null, documentation: string, options: DefOptions = {}): ConfigDef {
  return {
    name,
    type,
    defaultValue,
    documentation,
    updateMode: options.updateMode ?? 'read-only',
    sensitive: options.sensitive ?? type === 'password',
    ...(options.validate ? { validate: options.validate } : {}),
  };
}

const CLUSTER: DefOptions = { updateMode: 'cluster-wide' };

/** http.listeners: http://host:port entries, the host possibly empty (every interface). */
function validHttpListeners(value: string): string | null {
  for (const entry of value.split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const m = /^http:\/\/(\[[^\]]*\]|[^:/]*):(\d+)$/.exec(entry);
    if (m === null || Number(m[2]) > 65535) return `${entry} is not http://host:port`;
  }
  return null;
}
const COMPRESSION_TYPES = ['uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'];

export const BROKER_CONFIG_DEFS: readonly ConfigDef[] = [
  // Server basics and KRaft
  def('node.id', 'int', '-1', 'The node ID associated with the roles this process is playing when process.roles is non-empty.'),
  def('broker.id', 'int', '-1', 'The broker id for this server. When node.id is set it must be equal to it.'),
  def('process.roles', 'list', '', "The roles that this process plays: 'broker', 'controller', or 'broker,controller' if it is both.", {
    validate: validList('broker', 'controller'),
  }),
  def(
    'controller.quorum.voters',
    'list',
    '',
    'Map of id/endpoint information for the set of voters in a comma-separated list of {id}@{host}:{port} entries.',
  ),
  def(
    'controller.quorum.bootstrap.servers',
    'list',
    '',
    'List of endpoints to use for bootstrapping the cluster metadata. The endpoints are specified in comma-separated list of {host}:{port} entries. For example: localhost:9092,localhost:9093,localhost:9094.',
  ),
  def('controller.listener.names', 'list', null, 'A comma-separated list of the names of the listeners used by the controller.'),
  def(
    'controller.quorum.election.timeout.ms',
    'int',
    '1000',
    'Maximum time in milliseconds to wait without being able to fetch from the leader before triggering a new election.',
  ),
  def(
    'controller.quorum.fetch.timeout.ms',
    'int',
    '2000',
    'Maximum time without a successful fetch from the current leader before becoming a candidate and triggering an election for voters.',
  ),
  def('controller.quorum.election.backoff.max.ms', 'int', '1000', 'Maximum time in milliseconds before starting new elections.'),
  def(
    'controller.quorum.retry.backoff.ms',
    'int',
    '20',
    'The amount of time to wait before attempting to retry a failed request to a given topic partition.',
  ),
  def(
    'controller.quorum.request.timeout.ms',
    'int',
    '2000',
    'The maximum amount of time the client will wait for the response of a request.',
  ),
  def(
    'broker.session.timeout.ms',
    'int',
    '9000',
    'The length of time in milliseconds that a broker lease lasts if no heartbeats are made.',
  ),
  def('broker.heartbeat.interval.ms', 'int', '2000', 'The length of time in milliseconds between broker heartbeats.'),
  // Kafka's reassignment tool sets and clears these dynamic broker configs; Sluice stores them
  // but does not throttle replication.
  def(
    'leader.replication.throttled.rate',
    'long',
    '9223372036854775807',
    'A long representing the upper bound (bytes/sec) on replication traffic for leaders (stored; not enforced).',
    { updateMode: 'per-broker' },
  ),
  def(
    'follower.replication.throttled.rate',
    'long',
    '9223372036854775807',
    'A long representing the upper bound (bytes/sec) on replication traffic for followers (stored; not enforced).',
    { updateMode: 'per-broker' },
  ),
  def(
    'replica.alter.log.dirs.io.max.bytes.per.second',
    'long',
    '9223372036854775807',
    'A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log directories (stored; not enforced).',
    { updateMode: 'per-broker' },
  ),
  def('broker.rack', 'string', null, 'Rack of the broker. This will be used in rack aware replication assignment for fault tolerance.'),
  def(
    'auto.leader.rebalance.enable',
    'boolean',
    'true',
    'Enables auto leader balancing: the controller moves leadership back to the preferred replica.',
  ),
  def(
    'leader.imbalance.check.interval.seconds',
    'long',
    '300',
    'The frequency with which the partition rebalance check is triggered by the controller.',
  ),
  def(
    'metadata.log.dir',
    'string',
    null,
    'This configuration determines where we put the metadata log. If it is not set, the metadata log is placed in the first log directory from log.dirs.',
  ),
  def('metadata.log.segment.bytes', 'int', '1073741824', 'The maximum size of a single metadata log file.', { validate: atLeast(12) }),
  def('metadata.log.segment.ms', 'long', '604800000', 'The maximum time before a new metadata log file is rolled out (in milliseconds).'),
  def(
    'metadata.log.max.record.bytes.between.snapshots',
    'long',
    '20971520',
    'The maximum number of bytes in the log between the latest snapshot and the high-watermark needed before generating a new snapshot.',
    { validate: atLeast(1) },
  ),
  def(
    'metadata.log.max.snapshot.interval.ms',
    'long',
    '3600000',
    'The maximum number of milliseconds to wait to generate a snapshot if there are committed records in the log that are not included in the latest snapshot.',
    { validate: atLeast(0) },
  ),
  def(
    'metadata.max.retention.bytes',
    'long',
    '104857600',
    'The maximum combined size of the metadata log and snapshots before deleting old snapshots and log files.',
  ),
  def(
    'metadata.max.retention.ms',
    'long',
    '604800000',
    'The number of milliseconds to keep a metadata log file or snapshot before deleting it.',
  ),

  // Socket server
  def(
    'listeners',
    'list',
    'PLAINTEXT://:9092',
    'Listener List - Comma-separated list of URIs we will listen on and the listener names. Specify hostname as 0.0.0.0 to bind to all interfaces. Leave hostname empty to bind to the default interface (Sluice binds 127.0.0.1).',
    { updateMode: 'per-broker' },
  ),
  def(
    'http.listeners',
    'list',
    '',
    'Sluice: where the node serves HTTP: GET /metrics (Prometheus), /health/live, /health/ready and the admin API under /api/v1, as a comma-separated list of http://host:port URIs (port 0: a free port). Empty: no HTTP listener. `sluice dev` serves one beside its broker port.',
    { validate: validHttpListeners },
  ),
  def(
    'metrics.partition.series.max',
    'int',
    '10000',
    'Sluice: per-partition metric series (log end offset, high watermark, log size, consumer group lag) are exported while the node hosts at most this many partitions, and left out above, to bound the cardinality of a scrape. Per-topic and broker-wide series are always exported.',
    { validate: atLeast(0) },
  ),
  def(
    'metrics.lag.sample.interval.ms',
    'long',
    '15000',
    "Sluice: how often the node samples the lag (in records and in time) of the consumer groups it coordinates, for /metrics and the admin API's lag history.",
    { validate: atLeast(1000) },
  ),
  def(
    'metrics.lag.history.ms',
    'long',
    '3600000',
    'Sluice: how much lag history the node keeps per group partition (a bounded ring of samples), for the admin API and the console.',
    { validate: atLeast(0) },
  ),
  def(
    'advertised.listeners',
    'list',
    null,
    'Listeners to publish for clients to use, if different than the listeners config property. If this is not set, the value for listeners will be used.',
    { updateMode: 'per-broker' },
  ),
  def(
    'listener.security.protocol.map',
    'string',
    'SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT',
    'Map between listener names and security protocols.',
    { updateMode: 'per-broker' },
  ),
  def(
    'inter.broker.listener.name',
    'string',
    null,
    'Name of listener used for communication between brokers. If this is unset, the listener name is defined by security.inter.broker.protocol.',
  ),
  def('security.inter.broker.protocol', 'string', 'PLAINTEXT', 'Security protocol used to communicate between brokers.', {
    validate: validString('PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'),
  }),
  def(
    'authorizer.class.name',
    'string',
    '',
    'The fully qualified name of a class that implements the Authorizer interface, which is used by the broker for authorization. Sluice serves org.apache.kafka.metadata.authorizer.StandardAuthorizer.',
  ),
  def(
    'super.users',
    'string',
    null,
    'A semicolon-separated list of principals (User:admin;User:broker) that are allowed every operation whatever the ACLs say.',
  ),
  def(
    'allow.everyone.if.no.acl.found',
    'boolean',
    'false',
    'When a resource has no ACL, allow every principal (true) or only super users (false).',
  ),
  def(
    'sasl.enabled.mechanisms',
    'list',
    'GSSAPI',
    'The list of SASL mechanisms enabled in the Kafka server. The list may contain any mechanism for which a security provider is available. Only GSSAPI is enabled by default.',
    { updateMode: 'per-broker' },
  ),
  def(
    'sasl.mechanism.inter.broker.protocol',
    'string',
    'GSSAPI',
    'SASL mechanism used for inter-broker communication. Default is GSSAPI.',
    {
      updateMode: 'per-broker',
    },
  ),
  def(
    'sasl.mechanism.controller.protocol',
    'string',
    'GSSAPI',
    'SASL mechanism used for communication with controllers. Default is GSSAPI.',
  ),
  def(
    'sasl.jaas.config',
    'password',
    null,
    'JAAS login context parameters for SASL connections in the format used by JAAS configuration files. The broker reads it per listener and mechanism: listener.name.{listenerName}.{saslMechanism}.sasl.jaas.config.',
    { updateMode: 'per-broker' },
  ),
  def(
    'sasl.server.max.receive.size',
    'int',
    '524288',
    'The maximum receive size allowed before and during initial SASL authentication. Default receive size is 512KB.',
  ),
  def(
    'connection.failed.authentication.delay.ms',
    'int',
    '100',
    'Connection close delay on failed authentication: the time (in milliseconds) by which the answer to a failed authentication is delayed. Must be less than connections.max.idle.ms.',
    { validate: atLeast(0) },
  ),
  def(
    'connections.max.reauth.ms',
    'long',
    '0',
    'When explicitly set to a positive number, a session lifetime that will not exceed the configured value will be communicated to SASL clients that support re-authentication (v1 or later of SaslAuthenticate), and connections whose session expired are closed at their next request.',
  ),
  def('sasl.oauthbearer.jwks.endpoint.url', 'string', null, "The OAuth/OIDC provider URL from which the provider's JWKS can be retrieved."),
  def('sasl.oauthbearer.jwks.endpoint.refresh.ms', 'long', '3600000', 'How often the broker refreshes its JWKS cache.'),
  def('sasl.oauthbearer.jwks.endpoint.retry.backoff.ms', 'long', '100', 'The wait between attempts to retrieve the JWKS.'),
  def('sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms', 'long', '10000', 'The longest wait between attempts to retrieve the JWKS.'),
  def(
    'sasl.oauthbearer.expected.audience',
    'list',
    null,
    'The (optional) comma-delimited setting for the broker to use to verify that the JWT was issued for one of the expected audiences.',
  ),
  def(
    'sasl.oauthbearer.expected.issuer',
    'string',
    null,
    'The (optional) setting for the broker to use to verify that the JWT was created by the expected issuer.',
  ),
  def(
    'sasl.oauthbearer.sub.claim.name',
    'string',
    'sub',
    'The OAuth claim for the subject is often named "sub", but this (optional) setting can provide a different name.',
  ),
  def(
    'sasl.oauthbearer.scope.claim.name',
    'string',
    'scope',
    'The OAuth claim for the scope is often named "scope", but this (optional) setting can provide a different name.',
  ),
  def(
    'sasl.oauthbearer.clock.skew.seconds',
    'int',
    '30',
    'The (optional) value in seconds to allow for differences between the time of the OAuth/OIDC identity provider and the broker.',
  ),
  def('ssl.keystore.type', 'string', 'JKS', 'The file format of the key store file. Sluice reads PEM and PKCS12.', {
    updateMode: 'per-broker',
  }),
  def('ssl.keystore.location', 'string', null, 'The location of the key store file.', { updateMode: 'per-broker' }),
  def('ssl.keystore.password', 'password', null, 'The store password for the key store file.', { updateMode: 'per-broker' }),
  def(
    'ssl.key.password',
    'password',
    null,
    'The password of the private key in the key store file or the PEM key specified in ssl.keystore.key.',
    {
      updateMode: 'per-broker',
    },
  ),
  def('ssl.keystore.key', 'password', null, "Private key in the format specified by 'ssl.keystore.type'.", { updateMode: 'per-broker' }),
  def('ssl.keystore.certificate.chain', 'password', null, "Certificate chain in the format specified by 'ssl.keystore.type'.", {
    updateMode: 'per-broker',
  }),
  def('ssl.truststore.type', 'string', 'JKS', 'The file format of the trust store file. Sluice reads PEM and PKCS12.', {
    updateMode: 'per-broker',
  }),
  def('ssl.truststore.location', 'string', null, 'The location of the trust store file.', { updateMode: 'per-broker' }),
  def('ssl.truststore.password', 'password', null, 'The password for the trust store file.', { updateMode: 'per-broker' }),
  def('ssl.truststore.certificates', 'password', null, "Trusted certificates in the format specified by 'ssl.truststore.type'.", {
    updateMode: 'per-broker',
  }),
  def('ssl.client.auth', 'string', 'none', 'Configures the broker to request client authentication: required, requested or none.', {
    updateMode: 'per-broker',
    validate: validString('required', 'requested', 'none'),
  }),
  def('ssl.enabled.protocols', 'list', 'TLSv1.2,TLSv1.3', 'The list of protocols enabled for SSL connections.', {
    updateMode: 'per-broker',
  }),
  def('ssl.protocol', 'string', 'TLSv1.3', 'The SSL protocol used to generate the SSLContext.', { updateMode: 'per-broker' }),
  def('ssl.cipher.suites', 'list', '', 'A list of cipher suites. By default all the available cipher suites are supported.', {
    updateMode: 'per-broker',
  }),
  def(
    'ssl.endpoint.identification.algorithm',
    'string',
    'https',
    'The endpoint identification algorithm to validate server hostname using server certificate.',
    { updateMode: 'per-broker' },
  ),
  def(
    'ssl.principal.mapping.rules',
    'string',
    'DEFAULT',
    'A list of rules for mapping from distinguished name from the client certificate to short name.',
  ),
  def('socket.request.max.bytes', 'int', '104857600', 'The maximum number of bytes in a socket request.', { validate: atLeast(1) }),
  def(
    'socket.send.buffer.bytes',
    'int',
    '102400',
    'The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS default will be used.',
  ),
  def(
    'socket.receive.buffer.bytes',
    'int',
    '102400',
    'The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS default will be used.',
  ),
  def(
    'connections.max.idle.ms',
    'long',
    '600000',
    'Idle connections timeout: the server socket processor threads close the connections that idle more than this.',
  ),
  def('max.connections', 'int', '2147483647', 'The maximum number of connections we allow in the broker at any time.', {
    updateMode: 'cluster-wide',
    validate: atLeast(0),
  }),
  def(
    'max.connections.per.ip',
    'int',
    '2147483647',
    'The maximum number of connections we allow from each ip address. This can be set to 0 if there are overrides configured using max.connections.per.ip.overrides property. New connections from the ip address are dropped if the limit is reached.',
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def(
    'max.connections.per.ip.overrides',
    'string',
    '',
    'A comma-separated list of per-ip or hostname overrides to the default maximum number of connections. An example value is "hostName:100,127.0.0.1:200"',
    CLUSTER,
  ),
  def(
    'max.connection.creation.rate',
    'int',
    '2147483647',
    'The maximum connection creation rate we allow in the broker at any time. Listener-level limits may also be configured by prefixing the config name with the listener prefix, for example, listener.name.internal.max.connection.creation.rate. New connections are throttled if the limit is reached.',
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def(
    'queued.max.requests',
    'int',
    '500',
    'The number of queued requests allowed before blocking the network threads. Sluice: applied per connection; a connection is not read while this many of its requests wait.',
    { validate: atLeast(1) },
  ),
  def(
    'queued.max.request.bytes',
    'long',
    '268435456',
    'The number of queued bytes allowed before no more requests are read. As in Kafka, a request is admitted while any of this memory is free, so the bytes held by requests read and not yet answered stay below this plus socket.request.max.bytes; zero or less means no bound. ' +
      'Sluice: the default is 268435456 (256 MiB, room for two requests of the default socket.request.max.bytes) where Kafka defaults to -1, because without a broker-wide bound the memory of requests read from many connections at once is bounded only by connection.max.buffered.bytes times max.connections, and a Node.js process has no other limit on the buffers it holds.',
  ),
  def(
    'connection.max.buffered.bytes',
    'long',
    '2097152',
    'Sluice: a connection stops being read while its queued request bytes plus unsent response bytes exceed this bound (back-pressure). ' +
      "Requests on a connection are served one at a time, so what a client pipelines beyond it waits in the kernel's socket buffers, as it does for Kafka, whose network threads read one request per connection at a time. " +
      'The default, 2 MiB, keeps a request read ahead only briefly: with 16 MiB, two librdkafka producers saturating one partition kept ~100 ms of their requests queued, long enough for V8 to promote the buffers and answer them with a full collection every 0.5-1 s (14-17 in 10 s against 0-1).',
    { validate: atLeast(1) },
  ),

  // Log basics
  def(
    'log.dirs',
    'list',
    null,
    'A comma-separated list of the directories where the log data is stored. If not set, the value in log.dir is used.',
  ),
  def('log.dir', 'string', '/tmp/kafka-logs', 'The directory in which the log data is kept (supplemental for log.dirs property).'),
  def('num.partitions', 'int', '1', 'The default number of log partitions per topic.', { validate: atLeast(1) }),
  def(
    'default.replication.factor',
    'int',
    '1',
    'The replication factor for automatically created topics, and for topics created with -1 as the replication factor.',
  ),
  def('auto.create.topics.enable', 'boolean', 'true', 'Enable auto creation of topic on the server.'),
  def(
    'delete.topic.enable',
    'boolean',
    'true',
    'Enables delete topic. Delete topic through the admin tool will have no effect if this config is turned off.',
  ),
  def('log.segment.bytes', 'int', '1073741824', 'The maximum size of a single log file.', { ...CLUSTER, validate: atLeast(1024 * 1024) }),
  def(
    'log.roll.ms',
    'long',
    null,
    'The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in log.roll.hours is used.',
    CLUSTER,
  ),
  def(
    'log.roll.hours',
    'int',
    '168',
    'The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property.',
    { validate: atLeast(1) },
  ),
  def(
    'log.roll.jitter.ms',
    'long',
    null,
    'The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in log.roll.jitter.hours is used.',
    CLUSTER,
  ),
  def(
    'log.roll.jitter.hours',
    'int',
    '0',
    'The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property.',
    { validate: atLeast(0) },
  ),
  def(
    'log.retention.ms',
    'long',
    null,
    'The number of milliseconds to keep a log file before deleting it (in milliseconds). If not set, the value in log.retention.minutes is used. If set to -1, no time limit is applied.',
    CLUSTER,
  ),
  def(
    'log.retention.minutes',
    'int',
    null,
    'The number of minutes to keep a log file before deleting it (in minutes), secondary to log.retention.ms property. If not set, the value in log.retention.hours is used.',
  ),
  def(
    'log.retention.hours',
    'int',
    '168',
    'The number of hours to keep a log file before deleting it (in hours), tertiary to log.retention.ms property.',
  ),
  def('log.retention.bytes', 'long', '-1', 'The maximum size of the log before deleting it.', CLUSTER),
  def(
    'log.retention.check.interval.ms',
    'long',
    '300000',
    'The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion.',
    { validate: atLeast(1) },
  ),
  def(
    'log.cleanup.policy',
    'list',
    'delete',
    'The default cleanup policy for segments beyond the retention window. A comma separated list of valid policies.',
    { ...CLUSTER, validate: validList('delete', 'compact') },
  ),
  def('log.index.size.max.bytes', 'int', '10485760', 'The maximum size in bytes of the offset index.', {
    ...CLUSTER,
    validate: atLeast(4),
  }),
  def('log.index.interval.bytes', 'int', '4096', 'The interval with which we add an entry to the offset index.', {
    ...CLUSTER,
    validate: atLeast(0),
  }),
  def(
    'log.flush.interval.messages',
    'long',
    LONG_MAX,
    'The number of messages accumulated on a log partition before messages are flushed to disk.',
    { ...CLUSTER, validate: atLeast(1) },
  ),
  def(
    'log.flush.interval.ms',
    'long',
    null,
    'The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used.',
    CLUSTER,
  ),
  def(
    'log.flush.scheduler.interval.ms',
    'long',
    LONG_MAX,
    'The frequency in ms that the log flusher checks whether any log needs to be flushed to disk.',
  ),
  def(
    'log.flush.offset.checkpoint.interval.ms',
    'int',
    '60000',
    'The frequency with which we update the persistent record of the last flush which acts as the log recovery point.',
    { validate: atLeast(0) },
  ),
  def(
    'log.flush.start.offset.checkpoint.interval.ms',
    'int',
    '60000',
    'The frequency with which we update the persistent record of log start offset.',
    { validate: atLeast(0) },
  ),
  def(
    'unsafe.bypass.fsync',
    'boolean',
    'false',
    "Sluice, after Redpanda's unsafe_bypass_fsync: UNSAFE, never fsync anything (log segments, checkpoint files, directories, the metadata log and snapshots, the Raft quorum-state). Writes still reach the OS page cache in the same order, so a crash of the broker process loses nothing; an OS crash or power loss can lose or tear anything written since the kernel last wrote back, including acknowledged records, the Raft vote and epoch (a voter may vote twice in one epoch) and checkpoints the clean-shutdown marker vouches for: the data dir may then fail to load or load inconsistent. Only for data that cannot outlive the process: startBroker() sets it for the temp dir it creates and deletes on close().",
  ),
  def('log.segment.delete.delay.ms', 'long', '60000', 'The amount of time to wait before deleting a file from the filesystem.', {
    ...CLUSTER,
    validate: atLeast(0),
  }),
  def('log.preallocate', 'boolean', 'false', 'Should pre allocate file when create new segment?', CLUSTER),
  def(
    'log.message.timestamp.type',
    'string',
    'CreateTime',
    'Define whether the timestamp in the message is message create time or log append time.',
    { ...CLUSTER, validate: validString('CreateTime', 'LogAppendTime') },
  ),
  def(
    'log.message.timestamp.before.max.ms',
    'long',
    LONG_MAX,
    "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration.",
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def(
    'log.message.timestamp.after.max.ms',
    'long',
    // Kafka 4.0 (KIP-1030) bounds future timestamps by an hour: a record stamped far ahead
    // would otherwise hold its segment back from time-based retention.
    '3600000',
    "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration.",
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def('log.cleaner.enable', 'boolean', 'true', 'Enable the log cleaner process to run on the server.'),
  def(
    'log.cleaner.min.cleanable.ratio',
    'double',
    '0.5',
    'The minimum ratio of dirty log to total log for a log to eligible for cleaning.',
    { ...CLUSTER, validate: between(0, 1) },
  ),
  def(
    'log.cleaner.delete.retention.ms',
    'long',
    '86400000',
    'The amount of time to retain tombstone message markers for log compacted topics.',
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def(
    'log.cleaner.min.compaction.lag.ms',
    'long',
    '0',
    'The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted.',
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def(
    'log.cleaner.max.compaction.lag.ms',
    'long',
    LONG_MAX,
    'The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted.',
    { ...CLUSTER, validate: atLeast(1) },
  ),
  def('log.cleaner.backoff.ms', 'long', '15000', 'The amount of time to sleep when there are no logs to clean.', {
    ...CLUSTER,
    validate: atLeast(0),
  }),
  def(
    'message.max.bytes',
    'int',
    '1048588',
    'The largest record batch size allowed by Kafka (after compression if compression is enabled).',
    { ...CLUSTER, validate: atLeast(0) },
  ),
  def(
    'compression.type',
    'string',
    'producer',
    "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer.",
    { ...CLUSTER, validate: validString(...COMPRESSION_TYPES) },
  ),
  def('compression.gzip.level', 'int', '-1', 'The compression level to use if compression.type is set to gzip.', {
    ...CLUSTER,
    validate: (v) => (v === '-1' || (Number(v) >= 1 && Number(v) <= 9) ? null : 'Value must be -1 or between 1 and 9'),
  }),
  def('compression.lz4.level', 'int', '9', 'The compression level to use if compression.type is set to lz4.', {
    ...CLUSTER,
    validate: between(1, 17),
  }),
  def('compression.zstd.level', 'int', '3', 'The compression level to use if compression.type is set to zstd.', {
    ...CLUSTER,
    validate: between(-131072, 22),
  }),
  def(
    'num.recovery.threads.per.data.dir',
    'int',
    '2',
    'The number of threads per data directory to be used for log recovery at startup and flushing at shutdown.',
    { ...CLUSTER, validate: atLeast(1) },
  ),

  // Replication
  def(
    'min.insync.replicas',
    'int',
    '1',
    'When a producer sets acks to "all" (or "-1"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful.',
    { ...CLUSTER, validate: atLeast(1) },
  ),
  def(
    'unclean.leader.election.enable',
    'boolean',
    'false',
    'Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss.',
    CLUSTER,
  ),
  def(
    'replica.lag.time.max.ms',
    'long',
    '30000',
    "If a follower hasn't sent any fetch requests or hasn't consumed up to the leaders log end offset for at least this time, the leader will remove the follower from isr.",
  ),
  def('replica.fetch.max.bytes', 'int', '1048576', 'The number of bytes of messages to attempt to fetch for each partition.', {
    validate: atLeast(0),
  }),
  def(
    'replica.fetch.min.bytes',
    'int',
    '1',
    'Minimum bytes expected for each fetch response. If not enough bytes, wait up to replica.fetch.wait.max.ms.',
  ),
  def('replica.fetch.wait.max.ms', 'int', '500', 'The maximum wait time for each fetcher request issued by follower replicas.'),
  def('replica.fetch.response.max.bytes', 'int', '10485760', 'Maximum bytes expected for the entire fetch response.', {
    validate: atLeast(0),
  }),
  def('replica.fetch.backoff.ms', 'int', '1000', 'The amount of time to sleep when fetch partition error occurs.', {
    validate: atLeast(0),
  }),
  def('num.replica.fetchers', 'int', '1', 'Number of fetcher threads used to replicate records from each source broker.', CLUSTER),
  def('replica.high.watermark.checkpoint.interval.ms', 'long', '5000', 'The frequency with which the high watermark is saved out to disk.'),
  def(
    'replica.append.queue.max.bytes',
    'long',
    '16777216',
    "Sluice: the most produce bytes queued for one partition's log while its previous write is in flight; they go out as the next write. A produce that does not fit waits for room (its own bytes are always admitted to an empty queue) and is answered REQUEST_TIMED_OUT when its timeout passes first. Kafka has no such queue: its request handler threads wait on the log lock, bounded by queued.max.requests.",
    { validate: atLeast(1) },
  ),
  def(
    'replica.append.queue.max.requests',
    'int',
    '500',
    "Sluice: the most produce requests queued for one partition's log, as replica.append.queue.max.bytes bounds their bytes; the default is queued.max.requests'.",
    { validate: atLeast(1) },
  ),
  def('fetch.max.bytes', 'int', '57671680', 'The maximum number of bytes we will return for a fetch request. Must be at least 1024.', {
    validate: atLeast(1024),
  }),
  def(
    'max.incremental.fetch.session.cache.slots',
    'int',
    '1000',
    'The maximum number of incremental fetch sessions that we will maintain.',
    { validate: atLeast(0) },
  ),
  def(
    'fetch.purgatory.purge.interval.requests',
    'int',
    '1000',
    'The purge interval (in number of requests) of the fetch request purgatory.',
  ),
  def(
    'producer.purgatory.purge.interval.requests',
    'int',
    '1000',
    'The purge interval (in number of requests) of the producer request purgatory.',
  ),

  // Group coordinator
  def(
    'offsets.topic.num.partitions',
    'int',
    '50',
    'The number of partitions for the offset commit topic (should not change after deployment).',
    { validate: atLeast(1) },
  ),
  def(
    'offsets.topic.replication.factor',
    'short',
    '3',
    'The replication factor for the offsets topic (set higher to ensure availability). Internal topic creation will fail until the cluster size meets this replication factor requirement.',
    { validate: atLeast(1) },
  ),
  def(
    'offsets.topic.segment.bytes',
    'int',
    '104857600',
    'The offsets topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads.',
    { validate: atLeast(1) },
  ),
  def(
    'offsets.load.buffer.size',
    'int',
    '5242880',
    'Batch size for reading from the offsets segments when loading offsets into the cache (soft-limit, overridden if records are too large).',
    { validate: atLeast(1) },
  ),
  def(
    'offsets.load.max.partitions',
    'int',
    '1',
    'Sluice: how many __consumer_offsets partitions this broker loads at once; each load holds at most offsets.load.buffer.size of the log (plus one decompressed batch) beside the groups it builds. Kafka loads them one at a time on its loader thread.',
    { validate: atLeast(1) },
  ),
  def(
    'offsets.topic.compression.codec',
    'int',
    '0',
    'Compression codec for the offsets topic - compression may be used to achieve "atomic" commits.',
  ),
  def(
    'offsets.retention.minutes',
    'int',
    '10080',
    'For subscribed consumers, committed offset of a specific partition will be expired and discarded when the consumer group has been empty for this period.',
    { validate: atLeast(1) },
  ),
  def('offsets.retention.check.interval.ms', 'long', '600000', 'Frequency at which to check for stale offsets.', { validate: atLeast(1) }),
  def(
    'offsets.commit.timeout.ms',
    'int',
    '5000',
    'Offset commit will be delayed until all replicas for the offsets topic receive the commit or this timeout is reached.',
    { validate: atLeast(1) },
  ),
  def('offset.metadata.max.bytes', 'int', '4096', 'The maximum size for a metadata entry associated with an offset commit.'),
  def(
    'group.initial.rebalance.delay.ms',
    'int',
    '3000',
    'The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance.',
  ),
  def('group.min.session.timeout.ms', 'int', '6000', 'The minimum allowed session timeout for registered consumers.'),
  def('group.max.session.timeout.ms', 'int', '1800000', 'The maximum allowed session timeout for registered consumers.'),
  def('group.max.size', 'int', '2147483647', 'The maximum number of consumers that a single consumer group can accommodate.', {
    validate: atLeast(1),
  }),

  // Transactions and producer ids
  def(
    'transaction.max.timeout.ms',
    'int',
    '900000',
    "The maximum allowed timeout for transactions. If a client's requested transaction time exceed this, then the broker will return an error in InitProducerIdRequest.",
    { validate: atLeast(1) },
  ),
  def(
    'transaction.partition.verification.enable',
    'boolean',
    'true',
    'Enable verification that checks that the partition has been added to the transaction before writing transactional records to the partition.',
  ),
  def(
    'transaction.state.log.num.partitions',
    'int',
    '50',
    'The number of partitions for the transaction topic (should not change after deployment).',
    { validate: atLeast(1) },
  ),
  def(
    'transaction.state.log.replication.factor',
    'short',
    '3',
    'The replication factor for the transaction topic (set higher to ensure availability).',
    { validate: atLeast(1) },
  ),
  def(
    'transaction.state.log.min.isr',
    'int',
    '2',
    'The minimum number of replicas that must acknowledge a write to transaction topic in order to be considered successful.',
    { validate: atLeast(1) },
  ),
  def(
    'transaction.state.log.segment.bytes',
    'int',
    '104857600',
    'The transaction topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads.',
    { validate: atLeast(1) },
  ),
  def(
    'transaction.state.log.load.buffer.size',
    'int',
    '5242880',
    'Batch size for reading from the transaction log segments when loading producer ids and transactions into the cache (soft-limit, overridden if records are too large).',
    { validate: atLeast(1) },
  ),
  def(
    'transaction.abort.timed.out.transaction.cleanup.interval.ms',
    'int',
    '10000',
    'The interval at which to rollback transactions that have timed out.',
    { validate: atLeast(1) },
  ),
  def(
    'transaction.remove.expired.transaction.cleanup.interval.ms',
    'int',
    '3600000',
    'The interval at which to remove transactions that have expired due to <code>transactional.id.expiration.ms</code> passing.',
    { validate: atLeast(1) },
  ),
  def(
    'transactional.id.expiration.ms',
    'int',
    '604800000',
    'The time in ms that the transaction coordinator will wait without receiving any transaction status updates for the current transaction before expiring its transactional id.',
    { validate: atLeast(1) },
  ),
  def(
    'producer.id.expiration.ms',
    'int',
    '86400000',
    'The time in ms that a topic partition leader will wait before expiring producer IDs.',
    { ...CLUSTER, validate: atLeast(1) },
  ),

  // Requests and quotas
  def('quota.window.num', 'int', '11', 'The number of samples to retain in memory for client quotas', { validate: atLeast(1) }),
  def('quota.window.size.seconds', 'int', '1', 'The time span of each sample for client quotas', { validate: atLeast(1) }),
  def('controller.quota.window.num', 'int', '11', 'The number of samples to retain in memory for controller mutation quotas', {
    validate: atLeast(1),
  }),
  def('controller.quota.window.size.seconds', 'int', '1', 'The time span of each sample for controller mutations quotas', {
    validate: atLeast(1),
  }),
  def(
    'request.timeout.ms',
    'int',
    '30000',
    'The configuration controls the maximum amount of time the client will wait for the response of a request.',
  ),

  // Observability
  def(
    'log.level',
    'string',
    'info',
    "Sluice: the level of the broker's own log (pino levels: fatal, error, warn, info, debug, trace, silent). Not a Kafka config (Kafka uses log4j).",
    { updateMode: 'per-broker', validate: validString('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent') },
  ),
];

export const BROKER_CONFIG_DEF_BY_NAME: ReadonlyMap<string, ConfigDef> = new Map(BROKER_CONFIG_DEFS.map((d) => [d.name, d]));
