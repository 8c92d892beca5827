/**
 * `sluice storage`: Kafka's kafka-storage tool, for the two things a cluster needs before its
 * first start.
 *
 *   sluice storage format --config server.properties --cluster-id ID [--ignore-formatted]
 *                         [--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]' ...]
 *   sluice storage random-uuid
 *
 * format writes meta.properties with the cluster id and the node's id into every log dir and
 * the metadata log dir (src/metadata/meta-properties.ts). `sluice start` formats empty dirs
 * itself, with a cluster id derived from the controller endpoints; formatting first is how a
 * cluster gets an id of its own choosing, as with Kafka. `-c`, `-t` and `-g` are Kafka's short
 * forms; --override and SLUICE_* variables apply as they do for `sluice start`, so that the
 * tool sees the log dirs the node will use. --add-scram (`-S`, as Kafka's) gives the new cluster
 * SCRAM users (the first admin of a SASL cluster) through bootstrap records
 * (src/metadata/bootstrap-records.ts).
 *
 * Exit codes: 0 ok, 1 when formatting fails, 2 on usage and configuration errors.
 */
import { parseArgs } from 'node:util';
import { ConfigException, type BrokerConfig } from '../config/index.ts';
import { formatLogDirs, randomKafkaUuid } from '../metadata/meta-properties.ts';
import { configFromFile } from './args.ts';
import { parseAddScram, writeBootstrapRecords } from '../metadata/bootstrap-records.ts';
import type { MetadataRecord } from '../metadata/records.ts';
import type { Output } from './groups.ts';

export const STORAGE_USAGE = `usage:
  sluice storage format --config server.properties --cluster-id ID [--ignore-formatted]
                        [--add-scram 'SCRAM-SHA-256=[name=NAME,password=PASSWORD]' ...] [--override key=value ...]
  sluice storage random-uuid`;

const stdio: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

export async function runStorageCommand(argv: string[], io: Output = stdio, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [action, ...rest] = argv[0] === 'storage' ? argv.slice(1) : argv;
  if (action === 'random-uuid' && rest.length === 0) {
    io.out(`${randomKafkaUuid()}\n`);
    return 0;
  }
  if (action !== 'format') {
    io.err(`${STORAGE_USAGE}\n`);
    return 2;
  }
  let values: { config?: string; 'cluster-id'?: string; 'ignore-formatted'?: boolean; override?: string[]; 'add-scram'?: string[] };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        config: { type: 'string', short: 'c' },
        'cluster-id': { type: 'string', short: 't' },
        'ignore-formatted': { type: 'boolean', short: 'g' },
        override: { type: 'string', multiple: true },
        'add-scram': { type: 'string', short: 'S', multiple: true },
      },
    }));
  } catch (err) {
    io.err(`sluice storage: ${(err as Error).message}\n${STORAGE_USAGE}\n`);
    return 2;
  }
  if (values.config === undefined || values['cluster-id'] === undefined) {
    io.err(`sluice storage: format needs --config and --cluster-id\n${STORAGE_USAGE}\n`);
    return 2;
  }
  let config: BrokerConfig;
  try {
    config = configFromFile(values.config, values.override ?? [], env);
  } catch (err) {
    if (!(err instanceof ConfigException) && (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    io.err(`sluice storage: ${(err as Error).message}\n`);
    return 2;
  }
  let bootstrap: MetadataRecord[];
  try {
    bootstrap = (values['add-scram'] ?? []).map(parseAddScram);
  } catch (err) {
    io.err(`sluice storage: ${(err as Error).message}\n`);
    return 2;
  }
  try {
    const clusterId = values['cluster-id'];
    const result = await formatLogDirs(config, clusterId, { ignoreFormatted: values['ignore-formatted'] === true });
    if (bootstrap.length > 0) await writeBootstrapRecords(config.metadataLogDir, bootstrap);
    if (result.formatted.length === 0) io.out('All of the log directories are already formatted.\n');
    for (const { dir, kind } of result.formatted) io.out(`Formatting ${kind} ${dir} with cluster id ${clusterId}.\n`);
    return 0;
  } catch (err) {
    io.err(`sluice storage: ${(err as Error).message}\n`);
    return 1;
  }
}
