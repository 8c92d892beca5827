/**
 * The `sluice` command.
 *
 *   sluice dev   [--host 127.0.0.1] [--port 9092] [--data-dir ./data] [--nodes 1] [--override key=value ...]
 *   sluice start --config server.properties [--override key=value ...]
 *   sluice storage format --config server.properties --cluster-id ID [--ignore-formatted]
 *   sluice storage random-uuid
 *   sluice groups list|describe|delete|reset-offsets ... [--bootstrap-server host:port]
 *   sluice configs describe|alter --entity-type topics|brokers ... [--bootstrap-server host:port]
 *   sluice topics list|describe|create|delete|alter-config ... [--bootstrap-server host:port]
 *   sluice apply -f FILE [--dry-run] [--allow-delete] ... | --export   [--bootstrap-server host:port]
 *   sluice produce TOPIC [--bootstrap-server host:port]   (records from stdin)
 *   sluice consume TOPIC [--bootstrap-server host:port]
 *   sluice dlq inspect|replay TOPIC ... [--bootstrap-server host:port]
 *   sluice cluster describe|add-controller|remove-controller --bootstrap-controller host:port ...
 *   sluice cluster describe --bootstrap-server host:port
 *
 * Prints one ready line on stdout once the listeners are bound; logs go to stderr (text on a
 * terminal, JSON lines otherwise, or as --log-format says).
 * SIGTERM/SIGINT: stop accepting, finish in-flight requests, close components, exit 0.
 */
import { Broker } from '../broker.ts';
import { ConfigException, type BrokerConfig } from '../config/index.ts';
import { USAGE, UsageError, configFromArgs, devArgs, logFormatFromArgs, type DevArgs } from './args.ts';
import { runDevCluster } from './dev-cluster.ts';
import { runStorageCommand } from './storage.ts';
import type { LogFormat } from '../observability/logger.ts';
import { runGroupsCommand } from './groups.ts';
import { runTopicsCommand } from './topics.ts';
import { runApplyCommand } from './apply.ts';
import { runConfigsCommand } from './configs.ts';
import { runProduceCommand } from './produce.ts';
import { runConsumeCommand } from './consume.ts';
import { runDlqCommand } from './dlq.ts';
import { runClusterCommand } from './cluster.ts';
import { runContainer } from '../container/run.ts';

function isUsageError(err: unknown): boolean {
  return (
    err instanceof UsageError || err instanceof ConfigException || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true
  );
}

/** `sluice dev`: one node in this process, or with --nodes N a cluster of child processes. */
async function runDev(argv: string[]): Promise<number> {
  let dev: DevArgs;
  try {
    dev = devArgs(argv.slice(1));
    logFormatFromArgs(argv, false);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    process.stderr.write(`sluice: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (dev.nodes === 1) return runBroker(argv);
  try {
    return await runDevCluster(dev);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    process.stderr.write(`sluice: ${(err as Error).message}\n`);
    return 2;
  }
}

/** Runs a broker node until SIGTERM/SIGINT. Returns the exit code, or -1 to keep running. */
async function runBroker(argv: string[]): Promise<number> {
  let config: BrokerConfig;
  let logFormat: LogFormat;
  try {
    config = configFromArgs(argv, process.env);
    logFormat = logFormatFromArgs(argv, process.stderr.isTTY === true);
  } catch (err) {
    if (isUsageError(err)) {
      process.stderr.write(`sluice: ${(err as Error).message}\n\n${USAGE}\n`);
      return 2;
    }
    throw err;
  }
  const broker = new Broker({ config, logFd: 2, logFormat });
  const logger = broker.logger;
  const started = broker.start();
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'signal received, shutting down');
    // A signal during start-up waits for it to settle, so close() sees every component.
    started
      .catch(() => undefined)
      .then(() => broker.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    await started;
  } catch (err) {
    logger.fatal({ err }, 'start-up failed');
    process.stderr.write(`sluice: start-up failed: ${(err as Error).message}\n`);
    await broker.close().catch(() => undefined);
    return 1;
  }
  const addresses = broker.listeners.map((l) => `${l.name}://${l.host}:${l.boundPort}`).join(', ');
  const http = broker.httpListeners.map((l) => `, http on http://${l.host}:${l.port}`).join('');
  process.stdout.write(`sluice ready: node ${config.nodeId} listening on ${addresses}, data in ${config.logDirs.join(', ')}${http}\n`);
  return -1;
}

/**
 * Subcommands by name. Node commands take the whole argv (configFromArgs reads the command
 * name); client-side tools such as `sluice groups ...` are added here as their own entries.
 */
const COMMANDS: Readonly<Record<string, (argv: string[]) => Promise<number>>> = {
  dev: runDev,
  start: runBroker,
  storage: (argv) => runStorageCommand(argv),
  groups: runGroupsCommand,
  topics: (argv) => runTopicsCommand(argv),
  apply: (argv) => runApplyCommand(argv.slice(1)),
  configs: (argv) => runConfigsCommand(argv),
  produce: (argv) => runProduceCommand(argv),
  consume: (argv) => runConsumeCommand(argv),
  dlq: (argv) => runDlqCommand(argv.slice(1)),
  cluster: (argv) => runClusterCommand(argv),
  container: (argv) => runContainer(argv, runBroker),
};

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return command === undefined ? 1 : 0;
  }
  const run = COMMANDS[command];
  if (run === undefined) {
    process.stderr.write(`sluice: unknown command '${command}'\n\n${USAGE}\n`);
    return 2;
  }
  return run(argv);
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`sluice: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
