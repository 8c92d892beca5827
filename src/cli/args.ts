/**
 * Command-line parsing for `sluice`: which command, and the broker configuration it implies.
 * Flags may repeat; the last one wins (so `npm start -- --port 19092` overrides the script's
 * own --port). Configuration layers, lowest first: Kafka's defaults, the properties file (or
 * the dev defaults, or `sluice container`'s KAFKA_* environment), SLUICE_* environment variables,
 * --override flags.
 */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { BrokerConfig, parseOverride, propertiesFromEnv, readPropertiesFile } from '../config/index.ts';
import { kafkaEnvConfig } from '../container/kafka-env.ts';
import type { LogFormat } from '../observability/logger.ts';

export const USAGE = `Usage:
  sluice dev   [--host 127.0.0.1] [--port 9092] [--data-dir ./data] [--override key=value ...]
      A single-node cluster (process.roles=broker,controller, node.id=1, one voter).
  sluice start --config server.properties [--override key=value ...]
      A node configured from a Kafka-style properties file.
  sluice container [--override key=value ...]
      A node configured from KAFKA_* environment variables as Confluent's cp-kafka image
      reads them (KAFKA_LISTENERS -> listeners, CLUSTER_ID, ...): the container image's command.
  Node commands also take --log-format json|pretty: text on a terminal, JSON lines otherwise.
  sluice groups list [--bootstrap-server HOST:PORT]
  sluice groups describe GROUP [--bootstrap-server HOST:PORT]
      Consumer groups: state, members, and per partition the committed offset, log end
      offset, lag in records and lag in time (age of the oldest unconsumed record).

Any broker property can be set with --override key=value (repeatable) or a SLUICE_*
environment variable (SLUICE_LOG_RETENTION_MS=60000 sets log.retention.ms).`;

export class UsageError extends Error {}

/** The properties `sluice dev` starts from (Kafka's single-node KRaft quickstart settings). */
export function devProperties(host: string, port: number, dataDir: string): Map<string, string> {
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

export function configFromArgs(argv: string[], env: NodeJS.ProcessEnv): BrokerConfig {
  const [command, ...rest] = argv;
  if (command === 'dev') {
    const { values } = parseArgs({
      args: rest,
      options: {
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'string', default: '9092' },
        'data-dir': { type: 'string', default: './data' },
        override: { type: 'string', multiple: true },
        'log-format': { type: 'string' },
      },
    });
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`invalid --port ${values.port}`);
    return new BrokerConfig({
      file: devProperties(values.host!, port, resolve(values['data-dir']!)),
      env: propertiesFromEnv(env),
      overrides: overridesFrom(values.override),
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
    return new BrokerConfig({
      file: readPropertiesFile(values.config),
      env: propertiesFromEnv(env),
      overrides: overridesFrom(values.override),
    });
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
