/**
 * Runs the real `sluice` CLI as a child process for integration tests:
 *
 *   const broker = await spawnBroker();                 // `sluice dev` on a free port, temp data dir
 *   const kafka = new Kafka({ brokers: [broker.bootstrap] });
 *   ...
 *   await broker.stop();                                 // SIGTERM; resolves with the exit code
 *   broker = await broker.restart();                     // same port and data dir: a new handle
 *   await broker.cleanup();                              // stop if running, delete the temp dir
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, sluiceCommand } from './sluice-cli.ts';

export { sluiceCommand };
const READY = /^sluice ready: .* listening on [A-Z_]+:\/\/([^:,\s]+):(\d+)/m;
const HTTP = /^sluice ready: .*, http on (http:\/\/[^,\s]+)/m;

export interface SpawnBrokerOptions {
  /** Defaults to a fresh temp dir (deleted by cleanup()). */
  dataDir?: string;
  /** Defaults to 0 (a free port, read back from the ready line). */
  port?: number;
  /** The HTTP listener's port: 0 (a free one) by default, -1 for none. */
  httpPort?: number;
  /** Broker properties passed as --override key=value. */
  overrides?: Record<string, string | number | boolean>;
  /** Extra environment (SLUICE_* variables). */
  env?: Record<string, string>;
  /** Milliseconds to wait for the ready line; default 30000. */
  readyTimeoutMs?: number;
}

export interface BrokerProcess {
  readonly host: string;
  readonly port: number;
  /** `host:port` */
  readonly bootstrap: string;
  /** `http://host:port` of the HTTP listener (metrics, health, admin API); null without one. */
  readonly httpUrl: string | null;
  readonly dataDir: string;
  readonly child: ChildProcess;
  /** Everything the process wrote to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code (null if killed by a signal). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Stops (if running) and starts again on the same port and data dir. */
  restart(): Promise<BrokerProcess>;
  /** Stops with SIGKILL if still running and deletes a temp data dir this helper created. */
  cleanup(): Promise<void>;
}

export async function spawnBroker(options: SpawnBrokerOptions = {}): Promise<BrokerProcess> {
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'sluice-it-')));
  return launch({ ...options, dataDir }, ownDir);
}

async function launch(options: SpawnBrokerOptions & { dataDir: string }, ownDir: boolean): Promise<BrokerProcess> {
  const args = [
    'dev',
    '--host',
    '127.0.0.1',
    '--port',
    String(options.port ?? 0),
    `--http-port=${options.httpPort ?? 0}`,
    '--data-dir',
    options.dataDir,
  ];
  for (const [k, v] of Object.entries(options.overrides ?? {})) args.push('--override', `${k}=${v}`);
  const cmd = sluiceCommand(args);
  const child = spawn(cmd.command, cmd.args, {
    cwd: REPO,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));

  const { host, port } = await new Promise<{ host: string; port: number }>((resolveReady, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`broker not ready after ${options.readyTimeoutMs ?? 30000} ms\nstdout:\n${out}\nstderr:\n${err}`));
    }, options.readyTimeoutMs ?? 30000);
    const onData = (): void => {
      const m = READY.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      resolveReady({ host: m[1]!, port: Number(m[2]) });
    };
    child.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code} before ready\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });

  let running = true;
  void exited.then(() => {
    running = false;
  });
  const handle: BrokerProcess = {
    host,
    port,
    bootstrap: `${host}:${port}`,
    httpUrl: HTTP.exec(out)?.[1] ?? null,
    dataDir: options.dataDir,
    child,
    stdout: () => out,
    stderr: () => err,
    async stop(signal = 'SIGTERM') {
      if (running) child.kill(signal);
      return exited;
    },
    async restart() {
      await handle.stop();
      return launch({ ...options, port }, ownDir);
    },
    async cleanup() {
      if (running) child.kill('SIGKILL');
      await exited;
      if (ownDir) await rm(options.dataDir, { recursive: true, force: true });
    },
  };
  return handle;
}
