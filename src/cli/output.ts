/**
 * What the client-side commands (`sluice topics`, `produce`, `consume`) share: where output
 * goes, the cluster they reach (bootstrap servers, and the security of --command-config),
 * `key=value` arguments, and turning a failure into one line that names the problem.
 *
 * Exit codes, as `sluice groups` uses them: 0 ok, 1 on errors, 2 on usage errors.
 */
import { KafkaError } from '../../protocol/errors.ts';
import { KafkaCluster, parseHostPort } from '../client/cluster.ts';
import { ConnectionError, type ClientSecurity } from '../client/connection.ts';
import { UsageError } from './args.ts';
import { readCommandConfig } from './command-config.ts';

export { UsageError };

/** Where a command writes; tests pass one that captures (the same shape `sluice groups` takes). */
export interface Output {
  out(text: string): void;
  err(text: string): void;
}

export const DEFAULT_BOOTSTRAP = '127.0.0.1:9092';

export const stdio: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

/** `--bootstrap-server a:1,b:2` as a list, the default when absent. */
export function bootstrapServers(value: string | undefined): string[] {
  const servers = (value ?? DEFAULT_BOOTSTRAP)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (servers.length === 0) throw new UsageError('--bootstrap-server names no server');
  for (const s of servers) {
    try {
      parseHostPort(s);
    } catch (err) {
      throw new UsageError(`--bootstrap-server: ${(err as Error).message}`);
    }
  }
  return servers;
}

/** The cluster a client command reaches, and how it authenticates there. */
export interface ClusterTarget {
  readonly bootstrap: readonly string[];
  readonly security: ClientSecurity;
}

/** `--bootstrap-server` and `--command-config` (none: PLAINTEXT, as Kafka's tools connect without one). */
export function clusterTarget(values: { readonly 'bootstrap-server'?: string; readonly 'command-config'?: string }): ClusterTarget {
  const path = values['command-config'];
  return { bootstrap: bootstrapServers(values['bootstrap-server']), security: path === undefined ? {} : readCommandConfig(path) };
}

/** `name=value` as Kafka's tools read `--config`: split at the first `=`; the value may hold more. */
export function parseKeyValue(text: string, flag: string): [string, string] {
  const at = text.indexOf('=');
  if (at <= 0) throw new UsageError(`${flag} expects name=value, got '${text}'`);
  return [text.slice(0, at), text.slice(at + 1)];
}

/** A non-negative (or, with `min`, larger) integer flag. */
export function parseIntFlag(text: string, flag: string, min = 0): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${flag} expects an integer >= ${min}, got '${text}'`);
  return n;
}

export type OutputFormat = 'text' | 'json';

export function parseOutputFormat(value: string | undefined): OutputFormat {
  if (value === undefined || value === 'text' || value === 'json') return value ?? 'text';
  throw new UsageError(`--output expects text or json, got '${value}'`);
}

/** One line naming the problem: which servers could not be reached, or Kafka's error name. */
export function describeFailure(err: unknown, bootstrap: readonly string[]): string {
  if (err instanceof ConnectionError) return `cannot reach the cluster at ${bootstrap.join(',')}: ${err.message}`;
  if (err instanceof KafkaError || err instanceof Error) return err.message.split('\n')[0]!;
  return String(err);
}

/**
 * Runs `command` against the cluster `target` names, every connection with its security,
 * closing them after; a failure prints one `Error:` line and exits 1.
 */
export async function withCluster(
  io: Output,
  target: ClusterTarget,
  clientId: string,
  command: (cluster: KafkaCluster) => Promise<number>,
): Promise<number> {
  const cluster = new KafkaCluster(target.bootstrap, { clientId, ...target.security });
  try {
    return await command(cluster);
  } catch (err) {
    io.err(`Error: ${describeFailure(err, target.bootstrap)}\n`);
    return 1;
  } finally {
    await cluster.close();
  }
}

/**
 * Parses a command's flags; a usage error (ours or node's parseArgs) prints the message and
 * the usage, and yields null so the caller exits 2.
 */
export function parseOrUsage<T>(io: Output, command: string, usage: string, parse: () => T): T | null {
  try {
    return parse();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (err instanceof UsageError || code?.startsWith('ERR_PARSE_ARGS') === true) {
      io.err(`sluice ${command}: ${(err as Error).message}\n${usage}\n`);
      return null;
    }
    throw err;
  }
}
