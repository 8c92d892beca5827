/**
 * The environment of Confluent's cp-kafka image as Sluice broker properties, for the Sluice
 * container image (scripts/container/build-image.sh) whose /etc/confluent/docker/run runs
 * `sluice container`. Testcontainers' KafkaContainer, docker-compose files and Helm charts
 * written for cp-kafka configure a broker this way; this module reads that environment as
 * cp-kafka 8 (KRaft only) does, from confluentinc/kafka-images kafka/include/etc/confluent/docker:
 *
 * - `kafka.properties.template`: every `KAFKA_*` variable except the JVM and log4j ones
 *   becomes a property by common-docker's `ub` ConvertKey: drop the prefix, lower-case, `_`
 *   -> `.`, `__` -> `_`, `___` -> `-` (KAFKA_LOG_RETENTION_MS -> log.retention.ms).
 *   `CONFLUENT_SUPPORT_*` becomes `confluent.support.*` likewise.
 * - `configure`: KAFKA_PROCESS_ROLES and CLUSTER_ID are required; KAFKA_ADVERTISED_LISTENERS
 *   is required unless the node is a controller only (and refused then); KAFKA_LISTENERS
 *   defaults to the advertised listeners with every host 0.0.0.0; KAFKA_LOG_DIRS defaults to
 *   /var/lib/kafka/data; KAFKA_ADVERTISED_PORT, _ADVERTISED_HOST, _HOST and _PORT (deprecated
 *   long ago) are refused.
 * - `ensure`: `kafka-storage format --cluster-id=$CLUSTER_ID` (src/container/run.ts).
 *
 * Names Sluice does not know (KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE, the ZooKeeper-era
 * settings) reach the broker like any other property, which logs Kafka's "supplied but isn't
 * a known config" warning and goes on, as Kafka does. Pure: no I/O.
 */
import { ConfigException } from '../config/index.ts';

/** cp-kafka's kafka.properties.template excludes these: they configure the JVM and log4j. */
export const CONFLUENT_EXCLUDED_ENV: readonly string[] = [
  'KAFKA_VERSION',
  'KAFKA_HEAP_OPTS',
  'KAFKA_LOG4J_OPTS',
  'KAFKA_OPTS',
  'KAFKA_JMX_OPTS',
  'KAFKA_JVM_PERFORMANCE_OPTS',
  'KAFKA_GC_LOG_OPTS',
  'KAFKA_LOG4J_ROOT_LOGLEVEL',
  'KAFKA_LOG4J_LOGGERS',
  'KAFKA_TOOLS_LOG4J_LOGLEVEL',
];

/** cp-kafka's `configure`: where the data lives when KAFKA_LOG_DIRS is not set. */
export const CONFLUENT_DEFAULT_LOG_DIRS = '/var/lib/kafka/data';

/** The variables `configure` refuses, with its messages. */
const DEPRECATED_ENV: readonly [string, string][] = [
  ['KAFKA_ADVERTISED_PORT', 'advertised.port is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.'],
  ['KAFKA_ADVERTISED_HOST', 'advertised.host is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.'],
  ['KAFKA_HOST', 'host is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.'],
  ['KAFKA_PORT', 'port is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.'],
];

/** log4j levels (KAFKA_LOG4J_ROOT_LOGLEVEL) as the pino levels of Sluice's `log.level`. */
const LOG4J_TO_PINO: Readonly<Record<string, string>> = {
  ALL: 'trace',
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
  FATAL: 'fatal',
  OFF: 'silent',
};

export interface KafkaEnvConfig {
  /** Broker properties, as a server.properties file would give them. */
  readonly properties: Map<string, string>;
  /** CLUSTER_ID: what `kafka-storage format` writes into meta.properties. */
  readonly clusterId: string;
}

/**
 * Converts the part of a variable name after its prefix, as common-docker's `ub` ConvertKey:
 * a single `_` -> `.`, `__` -> `_`, `___` -> `-`, lower-cased. (`ub` finds single underscores
 * with a non-overlapping regex match and so misses every second one between one-letter
 * segments, A_B_C -> a.b_c; here every single underscore becomes a dot.)
 */
export function convertEnvKey(key: string): string {
  return key
    .replace(/(?<=[^_])_(?=[^_])/g, '.')
    .replace(/___/g, '-')
    .replace(/__/g, '_')
    .toLowerCase();
}

/** Every `PREFIX*` variable outside `exclude`, as `propertyPrefix` + the converted rest. */
export function envToProperties(
  env: NodeJS.ProcessEnv,
  envPrefix: string,
  propertyPrefix: string,
  exclude: readonly string[] = [],
): Map<string, string> {
  const result = new Map<string, string>();
  // Sorted, so that two variables naming the same property resolve the same way every time.
  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    if (value === undefined || !name.startsWith(envPrefix) || name.length === envPrefix.length || exclude.includes(name)) continue;
    result.set(propertyPrefix + convertEnvKey(name.slice(envPrefix.length)), value);
  }
  return result;
}

/**
 * `ub listeners`: the listeners to bind, derived from the advertised ones by binding every
 * interface (`BROKER://kafka:9092,PLAINTEXT://localhost:29092` -> `BROKER://0.0.0.0:9092,...`).
 */
export function listenersFromAdvertised(advertised: string): string {
  return advertised
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => entry.replace(/^([^:]+:\/\/)(\[[^\]]*\]|[^:/]*)(:\d+)$/, '$10.0.0.0$3'))
    .join(',');
}

/** A Kafka Uuid as `kafka-storage format` accepts it: 16 bytes in base64url, no padding. */
function checkClusterId(clusterId: string): void {
  if (!/^[A-Za-z0-9_-]{22}$/.test(clusterId) || Buffer.from(clusterId, 'base64url').length !== 16) {
    throw new ConfigException('CLUSTER_ID', `Cluster ID string ${clusterId} does not appear to be a valid UUID`);
  }
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  // `ub ensure` checks presence only; an empty value fails later, in the broker's own checks.
  if (value === undefined) throw new ConfigException(name, `${name} is required.`);
  return value;
}

/** The broker properties and cluster id a cp-kafka 8 container would start with. */
export function kafkaEnvConfig(env: NodeJS.ProcessEnv): KafkaEnvConfig {
  const roles = required(env, 'KAFKA_PROCESS_ROLES');
  const clusterId = required(env, 'CLUSTER_ID').trim();
  checkClusterId(clusterId);
  const controllerOnly = roles.trim() === 'controller';
  if (controllerOnly && env.KAFKA_ADVERTISED_LISTENERS !== undefined) {
    throw new ConfigException('KAFKA_ADVERTISED_LISTENERS', 'KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller.');
  }
  if (!controllerOnly) required(env, 'KAFKA_ADVERTISED_LISTENERS');
  for (const [name, message] of DEPRECATED_ENV) {
    if (env[name] !== undefined && env[name] !== '') throw new ConfigException(name, message);
  }

  const properties = envToProperties(env, 'KAFKA_', '', CONFLUENT_EXCLUDED_ENV);
  if (!properties.has('listeners') && !controllerOnly) {
    properties.set('listeners', listenersFromAdvertised(properties.get('advertised.listeners')!));
  }
  if (!properties.has('log.dirs')) properties.set('log.dirs', CONFLUENT_DEFAULT_LOG_DIRS);
  for (const [name, value] of envToProperties(env, 'CONFLUENT_SUPPORT_', 'confluent.support.')) properties.set(name, value);

  const log4jLevel = env.KAFKA_LOG4J_ROOT_LOGLEVEL?.trim().toUpperCase();
  if (log4jLevel !== undefined && log4jLevel !== '') {
    const level = LOG4J_TO_PINO[log4jLevel];
    if (level === undefined) {
      throw new ConfigException('KAFKA_LOG4J_ROOT_LOGLEVEL', `KAFKA_LOG4J_ROOT_LOGLEVEL must be a log4j level, got ${log4jLevel}`);
    }
    properties.set('log.level', level);
  }
  return { properties, clusterId };
}
