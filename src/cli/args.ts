/**
 * Command-line parsing for `sluice`: which command, and the broker configuration it implies.
 * Flags may repeat; the last one wins (so `npm start -- --port 19092` overrides the script's
 * own --port). Configuration layers, lowest first: Kafka's defaults, the properties file (or
 * the dev defaults, or `sluice container`'s KAFKA_* environment), SLUICE_* environment variables,
 * --override flags.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { BrokerConfig, ConfigException, parseOverride, propertiesFromEnv, readPropertiesFile } from '../config/index.ts';
import { kafkaEnvConfig } from '../container/kafka-env.ts';
import type { LogFormat } from '../observability/logger.ts';

export const USAGE = `Usage:
  sluice dev   [--host 127.0.0.1] [--port 9092] [--http-port PORT] [--data-dir ./data] [--nodes 1] [--override key=value ...]
      A single-node cluster (process.roles=broker,controller, node.id=1, one voter). With
      --nodes N (N > 1), N such nodes as child processes forming one cluster: broker ports
      --port .. --port+N-1, controller ports 10000 above them (free ports with --port 0),
      data in <data-dir>/node-<i>. Each node serves metrics, health and the admin API over
      HTTP on --http-port (default: its broker port + 552, so 9644 beside 9092; a free port
      with --port 0; none with --http-port=-1).
  sluice start --config server.properties [--override key=value ...]
      A node configured from a Kafka-style properties file. Empty log dirs are formatted
      on first start.
  sluice container [--override key=value ...]
      A node configured from KAFKA_* environment variables as Confluent's cp-kafka image
      reads them (KAFKA_LISTENERS -> listeners, CLUSTER_ID, ...): the container image's command.
  Node commands also take --log-format json|pretty: text on a terminal, JSON lines otherwise.
  sluice storage format --config server.properties --cluster-id ID [--ignore-formatted]
  sluice storage random-uuid
      Kafka's kafka-storage tool: write meta.properties with a chosen cluster id into every
      log dir before the first start; print a new cluster id.
  sluice groups list
  sluice groups describe GROUP
  sluice groups delete GROUP...
  sluice groups reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
      (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime ISO-8601
       | --by-duration PnDTnHnMnS) [--dry-run | --execute]
      Kafka's kafka-consumer-groups: state, members, and per partition the committed offset,
      log end offset, lag in records and lag in time (age of the oldest unconsumed record);
      delete groups; reset an inactive group's offsets (a plan only, unless --execute).
  sluice configs describe --entity-type topics|brokers (--entity-name NAME | --entity-default) [--all]
  sluice configs alter --entity-type topics|brokers (--entity-name NAME | --entity-default)
                       [--add-config name=value,...] [--delete-config name,...]
      Kafka's kafka-configs: the configs set on a topic, a broker or the brokers' default
      (every config with --all), and changing them.
  sluice topics list [--include-internal]
  sluice topics describe [TOPIC...]
  sluice topics create TOPIC [--partitions N] [--replication-factor R] [--config name=value ...] [--if-not-exists]
  sluice topics delete TOPIC... [--if-exists]
  sluice topics alter-config TOPIC [--set name=value ...] [--delete name ...] [--partitions N]
      Kafka's kafka-topics: list, describe (leaders, replicas, ISR, log start and end offsets,
      the topic's own configs), create, delete, change configs and add partitions.
  sluice apply -f FILE [-f FILE ...] [--dry-run] [--allow-delete] [--allow-repartition] [--allow-reassign]
  sluice apply --export [--topic NAME ...]
      Topics as code: compare topic policies (YAML/JSON) with the cluster, print the plan,
      apply it over the Admin API; --export prints the policies of existing topics.
  sluice produce TOPIC [--format text|json|hex] [--key KEY | --key-separator SEP]
                       [--header name=value ...] [--partition P] [--acks all|1]
      Records from stdin, one a line; keyed records go where Kafka's default partitioner puts them.
  sluice consume TOPIC [--partition P] [--offset earliest|latest|N | --from-timestamp MS|ISO-8601]
                       [--group G] [--max-messages N] [--follow] [--timeout-ms T]
                       [--format text|json|hex] [--print-key] [--key-separator SEP]
      Records one a line, from the start (or the offset, timestamp or group's commit) to the
      end of the partitions as they were at start; --follow keeps reading new ones. With
      --group G it is a member of consumer group G and reads the partitions the group gives it.
  sluice dlq inspect TOPIC [--samples N]
  sluice dlq replay TOPIC [--to TOPIC] [--filter FIELD=VALUE | FIELD~=TEXT ...]
                          [--partition P [--from-offset O] [--to-offset O]] [--dry-run]
      Dead-letter topics (<topic>.dlq): counts by error class and source topic, the oldest and
      newest dead letters, samples; re-publish dead letters to their original topic (or --to)
      after a fix, recording sluice.replay.count and sluice.replayed.from. Dead letters stay
      where they are: replaying again publishes them again.
  The groups, configs, topics, apply, produce, consume and dlq commands take --bootstrap-server
  HOST:PORT[,...] (default 127.0.0.1:9092) and work against any Kafka-compatible cluster;
  groups, configs, topics and dlq take --output text|json. For a secured listener they take
  --command-config FILE: Java client properties, as Kafka's tools read them (security.protocol
  PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL, sasl.mechanism PLAIN|SCRAM-SHA-256|SCRAM-SHA-512,
  sasl.jaas.config with username and password, ssl.truststore.*, ssl.keystore.* for mTLS,
  ssl.endpoint.identification.algorithm); any other setting is refused by name.
  sluice cluster describe --bootstrap-server HOST:PORT[,...] [--command-config FILE] [--output text|json]
      The cluster id, brokers, active controller and metadata quorum (leader, epoch, high
      watermark, voters and observers with their lag), asked of a broker.
  sluice cluster describe --bootstrap-controller HOST:PORT
  sluice cluster add-controller --bootstrap-controller HOST:PORT --config controller.properties
  sluice cluster remove-controller --bootstrap-controller HOST:PORT --controller-id N --controller-directory-id ID
      The controller quorum's voters (KIP-853), as kafka-metadata-quorum shows and changes
      them: add a running controller started with controller.quorum.bootstrap.servers, or
      remove a voter by id and directory id.

Any broker property can be set with --override key=value (repeatable) or a SLUICE_*
environment variable (SLUICE_LOG_RETENTION_MS=60000 sets log.retention.ms).`;

export class UsageError extends Error {}

/** The properties `sluice dev` starts from (Kafka's single-node KRaft quickstart settings). */
export function devProperties(host: string, port: number, dataDir: string, httpPort = -1): Map<string, string> {
  const props = new Map([
    ['node.id', '1'],
    ['process.roles', 'broker,controller'],
    ['listeners', `PLAINTEXT://${host}:${port}`],
    ['controller.quorum.voters', `1@${host}:${port}`],
    ['log.dirs', dataDir],
    ['offsets.topic.replication.factor', '1'],
    ['transaction.state.log.replication.factor', '1'],
    ['transaction.state.log.min.isr', '1'],
  ]);
  // Binding every interface still needs an address clients can reach: advertise loopback.
  if (host === '0.0.0.0') props.set('advertised.listeners', `PLAINTEXT://127.0.0.1:${port}`);
  if (httpPort >= 0) props.set('http.listeners', `http://${host}:${httpPort}`);
  return props;
}

function overridesFrom(values: string[] | undefined): Map<string, string> {
  const map = new Map<string, string>();
  for (const arg of values ?? []) {
    const [key, value] = parseOverride(arg);
    map.set(key, value);
  }
  return map;
}

/**
 * `--log-format json|pretty`; without it, text for a person when the log goes to a terminal
 * and JSON lines when it goes to a pipe or file (a log collector, a test).
 */
export function logFormatFromArgs(argv: readonly string[], logToTerminal: boolean): LogFormat {
  let format: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--log-format') format = argv[i + 1];
    else if (arg?.startsWith('--log-format=')) format = arg.slice('--log-format='.length);
  }
  if (format === undefined) return logToTerminal ? 'pretty' : 'json';
  if (format !== 'json' && format !== 'pretty') throw new UsageError(`invalid --log-format ${format} (json or pretty)`);
  return format;
}

/** `sluice dev`'s flags. */
export interface DevArgs {
  readonly host: string;
  readonly port: number;
  /** The HTTP listener's port (metrics, health, admin API); -1 for none. */
  readonly httpPort: number;
  readonly dataDir: string;
  /** How many nodes (--nodes); 1 is the single-node `sluice dev`. */
  readonly nodes: number;
  /** The --override flags as given (key=value). */
  readonly overrides: readonly string[];
  readonly logFormat: string | undefined;
}

/**
 * 9644 beside the default 9092 (the admin port Redpanda users know), and the same distance
 * from any other broker port, so that brokers started side by side never race for one HTTP
 * port. A broker port too high for that gets a free HTTP port.
 */
function defaultHttpPort(brokerPort: number): number {
  const port = brokerPort + HTTP_PORT_DISTANCE;
  return brokerPort === 0 || port > 65535 ? 0 : port;
}

const HTTP_PORT_DISTANCE = 9644 - 9092;

export function devArgs(rest: string[]): DevArgs {
  const { values } = parseArgs({
    args: rest,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '9092' },
      'http-port': { type: 'string' },
      'data-dir': { type: 'string', default: './data' },
      nodes: { type: 'string', default: '1' },
      override: { type: 'string', multiple: true },
      'log-format': { type: 'string' },
    },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`invalid --port ${values.port}`);
  const httpPort = values['http-port'] === undefined ? defaultHttpPort(port) : Number(values['http-port']);
  if (!Number.isInteger(httpPort) || httpPort < -1 || httpPort > 65535) throw new UsageError(`invalid --http-port ${values['http-port']}`);
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1) throw new UsageError(`invalid --nodes ${values.nodes}`);
  return {
    host: values.host!,
    port,
    httpPort,
    dataDir: resolve(values['data-dir']!),
    nodes,
    overrides: values.override ?? [],
    logFormat: values['log-format'],
  };
}

/**
 * A node's config from a properties file, as `sluice start` and `sluice storage format`
 * read it: the file < SLUICE_* environment < --override flags. Kafka 4 requires
 * process.roles; so does a node started from a file.
 */
export function configFromFile(path: string, overrides: readonly string[], env: NodeJS.ProcessEnv): BrokerConfig {
  const config = new BrokerConfig({
    file: readPropertiesFile(path),
    env: propertiesFromEnv(env),
    overrides: overridesFrom([...overrides]),
  });
  if (config.processRoles.length === 0) {
    throw new ConfigException('process.roles', 'Missing required configuration "process.roles" which has no default value.');
  }
  return config;
}

export function configFromArgs(argv: string[], env: NodeJS.ProcessEnv): BrokerConfig {
  const [command, ...rest] = argv;
  if (command === 'dev') {
    const dev = devArgs(rest);
    if (dev.nodes !== 1) throw new UsageError('sluice dev --nodes N runs N child processes, each configured by `sluice start`');
    return new BrokerConfig({
      file: devProperties(dev.host, dev.port, dev.dataDir, dev.httpPort),
      env: propertiesFromEnv(env),
      overrides: overridesFrom([...dev.overrides]),
    });
  }
  if (command === 'start') {
    const { values } = parseArgs({
      args: rest,
      options: {
        config: { type: 'string' },
        override: { type: 'string', multiple: true },
        'log-format': { type: 'string' },
      },
    });
    if (values.config === undefined) throw new UsageError('sluice start needs --config <server.properties>');
    return configFromFile(values.config, values.override ?? [], env);
  }
  if (command === 'container') {
    const { values } = parseArgs({
      args: rest,
      options: { override: { type: 'string', multiple: true }, 'log-format': { type: 'string' } },
    });
    return new BrokerConfig({
      file: kafkaEnvConfig(env).properties,
      env: propertiesFromEnv(env),
      overrides: overridesFrom(values.override),
    });
  }
  throw new UsageError(command === undefined ? 'missing command' : `unknown command '${command}'`);
}
