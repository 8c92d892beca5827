// Sluice and the Apache Kafka reference broker (scripts/kafka-reference.sh), one node each,
// started side by side from scripts/reference/broker-settings.properties, for the benchmarks
// that race real clients against both in alternating rounds.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brokerSettings } from '../../compat/targets.ts';
import { spawnBroker } from '../../test/helpers/broker-process.ts';
import { REPO } from '../../test/helpers/sluice-cli.ts';

const BROKER_STOP_TIMEOUT_MS = 30_000;

export interface Broker {
  name: string;
  bootstrap: string;
  pid: number;
  /** The end of the broker's own log, for a failure report. */
  logTail(): Promise<string>;
  stop(): Promise<void>;
}

/** Runs a command to its end (within `timeoutMs`) and resolves with its stdout. */
export function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((done, fail) => {
    execFile(
      command,
      args,
      { env: options.env ?? process.env, maxBuffer: 16 * 1024 * 1024, timeout: options.timeoutMs ?? 0 },
      (err, stdout, stderr) => (err ? fail(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stderr}`)) : done(stdout)),
    );
  });
}

/** The last line of a client's output, which is its JSON result. */
export const lastJson = <T>(out: string): T => JSON.parse(out.trim().split('\n').pop()!) as T;

/** `bench` names the temp directories. */
export async function startSluice(bench: string): Promise<Broker> {
  const overrides = { ...Object.fromEntries(brokerSettings()), 'log.level': 'warn' };
  const dataDir = await mkdtemp(join(tmpdir(), `${bench}-bench-sluice-`));
  const broker = await spawnBroker({ dataDir, overrides, readyTimeoutMs: 60_000 }).catch(async (err: Error) => {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  });
  return {
    name: 'Sluice',
    bootstrap: broker.bootstrap,
    pid: broker.child.pid!,
    logTail: async () => `${broker.stdout().slice(-4000)}${broker.stderr().slice(-4000)}`,
    async stop() {
      const stopped = broker.stop().then((code) => {
        if (code !== 0) process.stderr.write(`${bench}: Sluice exited with ${code}\n${broker.stderr().slice(-4000)}\n`);
      });
      await Promise.race([stopped, new Promise((done) => setTimeout(done, BROKER_STOP_TIMEOUT_MS).unref())]);
      await broker.cleanup();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startKafka(bench: string): Promise<Broker> {
  const state = await mkdtemp(join(tmpdir(), `${bench}-bench-kafka-`));
  const env = { ...process.env, KAFKA_REFERENCE_STATE: state };
  const script = join(REPO, 'scripts/kafka-reference.sh');
  const stop = async (): Promise<void> => {
    await run('bash', [script, 'stop'], { env }).catch(() => undefined);
    await rm(state, { recursive: true, force: true });
  };
  try {
    const bootstrap = (await run('bash', [script, 'start'], { env })).trim().split('\n').pop()!;
    const dataDir = (await readFile(join(state, 'data-dir'), 'utf8')).trim();
    const logTail = async (): Promise<string> =>
      (await readFile(join(dataDir, 'server.log'), 'utf8').catch((err: Error) => err.message)).slice(-8000);
    return { name: 'Kafka', bootstrap, pid: Number((await readFile(join(state, 'pid'), 'utf8')).trim()), logTail, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
