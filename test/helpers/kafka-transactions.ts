import { spawnSync } from 'node:child_process';
import { JVM_OPTIONS } from '../../compat/clients/java.ts';
import { kafkaLibs } from '../../compat/targets.ts';

/** Kafka's kafka-transactions tool (KIP-664), run from the cached Kafka jars as bin/kafka-transactions.sh does. */
export function kafkaTransactions(bootstrap: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(
    'java',
    [...JVM_OPTIONS, '-cp', `${kafkaLibs()}/*`, 'org.apache.kafka.tools.TransactionsCommand', '--bootstrap-server', bootstrap, ...args],
    { encoding: 'utf8', timeout: 120_000 },
  );
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}
