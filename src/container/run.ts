/**
 * `sluice container`: what the Sluice image's /etc/confluent/docker/run execs. cp-kafka's run
 * is configure (KAFKA_* environment -> kafka.properties), ensure (`kafka-storage format` with
 * CLUSTER_ID) and launch; here configure is kafka-env.ts (read by configFromArgs), ensure is
 * formatStorage below, and launch is the same broker lifecycle as `sluice start`.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrokerConfig } from '../config/index.ts';
import { configFromArgs } from '../cli/args.ts';
import { kafkaEnvConfig } from './kafka-env.ts';

/**
 * `kafka-storage format --ignore-formatted`: writes meta.properties with the cluster id into
 * the metadata log dir, unless the dir is formatted already (a restarted container keeps its
 * data and its id). Returns the cluster id the dir belongs to.
 */
export async function formatStorage(dir: string, clusterId: string, nodeId: number): Promise<{ clusterId: string; formatted: boolean }> {
  const path = join(dir, 'meta.properties');
  try {
    const existing = /^cluster\.id=(.+)$/m.exec(await readFile(path, 'utf8'));
    if (existing !== null) return { clusterId: existing[1]!.trim(), formatted: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dir, { recursive: true });
  // The layout the metadata manager reads (and writes itself when a dir is not formatted).
  await writeFile(path, `#\n#${new Date().toUTCString()}\nnode.id=${nodeId}\nversion=1\ncluster.id=${clusterId}\n`);
  return { clusterId, formatted: true };
}

/**
 * Formats the storage with CLUSTER_ID, then runs the broker with `runBroker` (the CLI's node
 * lifecycle: signals, the ready line, exit codes). A configuration error is left to
 * `runBroker`, which reports it as it does for `sluice start`.
 */
export async function runContainer(argv: string[], runBroker: (argv: string[]) => Promise<number>, env = process.env): Promise<number> {
  let config: BrokerConfig;
  try {
    config = configFromArgs(argv, env);
  } catch {
    return runBroker(argv);
  }
  const { clusterId } = kafkaEnvConfig(env);
  const storage = await formatStorage(config.metadataLogDir, clusterId, config.nodeId);
  process.stderr.write(
    storage.formatted
      ? `sluice container: formatted ${config.metadataLogDir} with cluster id ${clusterId}\n`
      : `sluice container: ${config.metadataLogDir} is already formatted (cluster id ${storage.clusterId})\n`,
  );
  return runBroker(argv);
}
