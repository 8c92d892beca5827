import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ClusterProcesses, startCluster } from '../test/helpers/cluster.ts';
import { sluiceCommand } from '../test/helpers/sluice-cli.ts';
import { KafkaCluster } from '../src/client/cluster.ts';
import { parseProperties } from '../src/config/sources.ts';
import { ALL_CAPABILITIES, SLUICE_CAPABILITIES } from './capabilities.ts';
import type { Capability } from './capabilities.ts';
import { runOk, sleep, stopProcess, tail } from './support/process.ts';

// The brokers a compat run drives: Sluice started from its CLI, the Apache Kafka reference
// broker, a 3-node Sluice cluster and a 3-node Apache Kafka cluster started from the same
// properties files (scripts/cluster/node-N.properties), or whatever COMPAT_BOOTSTRAP names.
// A target's bootstrap lists all of its brokers (host:port,host:port,...).

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

/** The properties files both 3-node targets start from, node 1 first. */
export const CLUSTER_FILES = [1, 2, 3].map((i) => join(ROOT, 'scripts/cluster', `node-${i}.properties`));

/**
 * The settings the scenarios assume (brokerSettings()) for a cluster: those the cluster files
 * set themselves (replication factors and min.insync.replicas for three nodes, where
 * broker-settings.properties has one node's) are the files'.
 */
export function clusterSettings(): [string, string][] {
  const own = new Set(CLUSTER_FILES.flatMap((file) => [...parseProperties(readFileSync(file, 'utf8')).keys()]));
  return brokerSettings().filter(([key]) => !own.has(key));
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

/**
 * Resolves once every broker of `bootstrap` lists all of them in its Metadata. A broker's
 * start-up ends once the controller has unfenced it; the others learn that as they apply
 * the metadata log, a moment later (Kafka's brokers and Sluice's alike). Resolves with the
 * milliseconds waited.
 */
async function allBrokersVisible(bootstrap: string, timeoutMs = 60_000): Promise<number> {
  const started = Date.now();
  const expected = bootstrap.split(',').sort().join(',');
  for (const broker of bootstrap.split(',')) {
    const probe = new KafkaCluster([broker]);
    try {
      for (;;) {
        const seen = await probe.metadata([]).then(
          (res) =>
            res.brokers
              .map((b) => `${b.host}:${b.port}`)
              .sort()
              .join(','),
          (error: Error) => error.message,
        );
        if (seen === expected) break;
        if (Date.now() - started > timeoutMs) throw new Error(`${broker} lists brokers ${seen}, not ${expected}, after ${timeoutMs} ms`);
        await sleep(50);
      }
    } finally {
      await probe.close();
    }
  }
  return Date.now() - started;
}

// Three `sluice start --config` processes from scripts/cluster/node-N.properties, moved to free
// ports and a temp dir by test/helpers/cluster.ts. Each node's output is written to
// .cache/compat-logs/sluice-cluster/ when the target stops.
function sluiceClusterTarget(): Target {
  let cluster: ClusterProcesses | null = null;
  return {
    name: 'Sluice cluster',
    capabilities: SLUICE_CAPABILITIES,
    unavailable: null,
    async start() {
      const started = Date.now();
      cluster = await startCluster({ propertiesFiles: CLUSTER_FILES, overrides: Object.fromEntries(clusterSettings()) });
      const ready = Date.now() - started;
      const visible = await allBrokersVisible(cluster.bootstrap);
      console.log(
        `compat: Sluice cluster up at ${cluster.bootstrap} in ${ready} ms, every broker listed by every broker ${visible} ms later (data in ${cluster.dir})`,
      );
      return cluster.bootstrap;
    },
    async stop() {
      if (!cluster) return;
      await cluster.stopAll(20_000);
      const logs = join(ROOT, '.cache', 'compat-logs', 'sluice-cluster');
      rmSync(logs, { recursive: true, force: true });
      mkdirSync(logs, { recursive: true });
      for (const node of cluster.nodes) writeFileSync(join(logs, `node-${node.nodeId}.log`), node.stdout() + node.stderr());
      await cluster.cleanup();
      cluster = null;
    },
  };
}

// scripts/kafka-cluster.sh: Apache Kafka from the same scripts/cluster/node-N.properties.
function kafkaClusterTarget(ci: boolean): Target {
  const script = join(ROOT, 'scripts/kafka-cluster.sh');
  let state: string | null = null;
  const env = () => ({
    ...process.env,
    KAFKA_CLUSTER_STATE: join(state!, 'cluster'),
    KAFKA_CLUSTER_OVERRIDES: clusterSettings()
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
  });
  return {
    name: 'Kafka cluster',
    capabilities: new Set(ALL_CAPABILITIES),
    unavailable: kafkaInstalled() || ci ? null : `Apache Kafka ${kafkaVersion()} is not installed (scripts/install-test-clients.sh)`,
    async start() {
      const started = Date.now();
      state = mkdtempSync(join(tmpdir(), 'kafka-cluster-state-'));
      const result = await runOk('bash', [script, 'start'], { env: env(), timeoutMs: 240_000 });
      const bootstrap = result.stdout.trim().split('\n').pop()!;
      const ready = Date.now() - started;
      const visible = await allBrokersVisible(bootstrap);
      console.log(
        `compat: Kafka ${kafkaVersion()} cluster up at ${bootstrap} in ${ready} ms, every broker listed by every broker ${visible} ms later`,
      );
      return bootstrap;
    },
    async stop() {
      if (!state) return;
      await runOk('bash', [script, 'stop'], { env: env(), timeoutMs: 90_000 });
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

/** The names COMPAT_TARGETS selects by, in the order of a full run's matrix. */
export const TARGET_KEYS = ['sluice', 'kafka', 'sluice-cluster', 'kafka-cluster'] as const;
/** A target's key: one of TARGET_KEYS, or `bootstrap` for the broker COMPAT_BOOTSTRAP names. */
export type TargetKey = (typeof TARGET_KEYS)[number] | 'bootstrap';

/** The target `key` names, or null when this run does not select it. */
export function selectTarget(env: NodeJS.ProcessEnv, key: TargetKey): Target | null {
  if (env.COMPAT_BOOTSTRAP) return key === 'bootstrap' ? externalTarget(env.COMPAT_BOOTSTRAP) : null;
  if (key === 'bootstrap') return null;
  const only = env.COMPAT_TARGETS?.split(',').map((t) => t.trim());
  for (const name of only ?? []) {
    if (!(TARGET_KEYS as readonly string[]).includes(name))
      throw new Error(`COMPAT_TARGETS: no target ${name} (${TARGET_KEYS.join(', ')})`);
  }
  if (only && !only.includes(key)) return null;
  const ci = env.CI === 'true';
  switch (key) {
    case 'sluice':
      return sluiceTarget();
    case 'kafka':
      return kafkaTarget(ci);
    case 'sluice-cluster':
      return sluiceClusterTarget();
    case 'kafka-cluster':
      return kafkaClusterTarget(ci);
  }
}
