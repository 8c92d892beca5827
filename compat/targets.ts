import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sluiceCommand } from '../test/helpers/sluice-cli.ts';
import { ALL_CAPABILITIES, SLUICE_CAPABILITIES } from './capabilities.ts';
import type { Capability } from './capabilities.ts';
import { runOk, sleep, stopProcess, tail } from './support/process.ts';

// The brokers a compat run drives: Sluice started from its CLI, the Apache Kafka reference
// broker, or whatever COMPAT_BOOTSTRAP names.

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface Target {
  name: string;
  capabilities: ReadonlySet<Capability>;
  // Why the target cannot run here (only ever set outside CI), or null.
  unavailable: string | null;
  start(): Promise<string>;
  stop(): Promise<void>;
}

// Settings both brokers run with (scripts/reference/broker-settings.properties).
export function brokerSettings(): [string, string][] {
  const text = readFileSync(join(ROOT, 'scripts/reference/broker-settings.properties'), 'utf8');
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const at = line.indexOf('=');
      return [line.slice(0, at), line.slice(at + 1)];
    });
}

export function kafkaVersion(): string {
  const pom = readFileSync(join(ROOT, 'scripts/reference/pom.xml'), 'utf8');
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom);
  if (!match) throw new Error('kafka.version missing from scripts/reference/pom.xml');
  return match[1]!;
}

export function kafkaLibs(): string {
  return join(ROOT, '.cache', `kafka-${kafkaVersion()}`, 'libs');
}

export function kafkaInstalled(): boolean {
  return existsSync(join(kafkaLibs(), '.complete'));
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function sluiceTarget(): Target {
  let child: ChildProcess | null = null;
  let dataDir: string | null = null;
  return {
    name: 'Sluice',
    capabilities: SLUICE_CAPABILITIES,
    unavailable: null,
    async start() {
      const port = await freePort();
      dataDir = mkdtempSync(join(tmpdir(), 'sluice-compat-'));
      const logPath = join(dataDir, 'sluice.log');
      const overrides = brokerSettings().flatMap(([k, v]) => ['--override', `${k}=${v}`]);
      const cmd = sluiceCommand(['dev', '--host', '127.0.0.1', '--port', String(port), '--data-dir', join(dataDir, 'data'), ...overrides]);
      const started = Date.now();
      child = spawn(cmd.command, cmd.args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      const log = createWriteStream(logPath);
      child.stdout!.pipe(log);
      child.stderr!.pipe(log);
      const deadline = Date.now() + 60_000;
      while (!(await accepts(port))) {
        if (child.exitCode !== null || Date.now() > deadline) {
          await sleep(100);
          const output = existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
          throw new Error(`Sluice did not start on port ${port}: ${tail(output)}`);
        }
        await sleep(100);
      }
      console.log(`compat: Sluice up at 127.0.0.1:${port} in ${Date.now() - started} ms (log ${logPath})`);
      return `127.0.0.1:${port}`;
    },
    async stop() {
      if (child) await stopProcess(child, 20_000);
      child = null;
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      dataDir = null;
    },
  };
}

function kafkaTarget(ci: boolean): Target {
  const script = join(ROOT, 'scripts/kafka-reference.sh');
  let state: string | null = null;
  const env = () => ({ ...process.env, KAFKA_REFERENCE_STATE: join(state!, 'broker') });
  return {
    name: 'Kafka',
    capabilities: new Set(ALL_CAPABILITIES),
    unavailable: kafkaInstalled() || ci ? null : `Apache Kafka ${kafkaVersion()} is not installed (scripts/install-test-clients.sh)`,
    async start() {
      const started = Date.now();
      state = mkdtempSync(join(tmpdir(), 'kafka-reference-state-'));
      const result = await runOk('bash', [script, 'start'], { env: env(), timeoutMs: 180_000 });
      const bootstrap = result.stdout.trim().split('\n').pop()!;
      console.log(`compat: Kafka ${kafkaVersion()} up at ${bootstrap} in ${Date.now() - started} ms`);
      return bootstrap;
    },
    async stop() {
      if (!state) return;
      await runOk('bash', [script, 'stop'], { env: env(), timeoutMs: 60_000 });
      rmSync(state, { recursive: true, force: true });
      state = null;
    },
  };
}

function externalTarget(bootstrap: string): Target {
  return {
    name: bootstrap,
    capabilities: new Set(ALL_CAPABILITIES),
    unavailable: null,
    start: async () => bootstrap,
    stop: async () => {},
  };
}

export function selectTargets(env: NodeJS.ProcessEnv): Target[] {
  if (env.COMPAT_BOOTSTRAP) return [externalTarget(env.COMPAT_BOOTSTRAP)];
  return [sluiceTarget(), kafkaTarget(env.CI === 'true')];
}
