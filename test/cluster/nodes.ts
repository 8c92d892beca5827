/**
 * The fault suite's Sluice nodes: real `sluice start --config F` processes, combined
 * broker,controller nodes, each run in its own network namespace (`ip netns exec`, which
 * execs, so the child's pid is the node's and signals reach it directly). Every exit is
 * recorded with whether the nemesis caused it: a node that dies on its own is a finding.
 *
 * The nodes run a copy of bin/ and dist/ taken when the run starts (snapshotPackage), so a
 * rebuild of dist/ during a long run does not change the code a restarted node runs.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, createWriteStream, mkdirSync, symlinkSync, type WriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clusterNodeProperties, propertiesText } from '../../src/cli/dev-cluster.ts';
import { BROKER_NODE_FLAGS } from '../../src/cli/node-flags.ts';
import { ensureBuilt, REPO } from '../helpers/sluice-cli.ts';
import type { NodeExit } from './history.ts';

export const CLIENT_PORT = 9092;
export const CONTROLLER_PORT = 9093;
const READY = /^sluice ready: /m;
/** The line a node logs when it takes a log dir offline (src/broker.ts). */
const LOG_DIR_FAILED = /"msg":"log dir [^"]* failed/g;
/** Output kept in memory per node, for failure reports (the whole output goes to files in the run dir). */
const TAIL_CHARS = 16_000;

/**
 * Copies the built package (bin/, dist/, package.json; node_modules linked) into `dir`;
 * returns its bin/sluice.js. The package is this checkout's (built first when stale), or the
 * one SLUICE_FAULTS_PACKAGE names (a directory with a built bin/ and dist/: another checkout,
 * an older commit's build), to tell a regression from an old bug.
 */
export function snapshotPackage(dir: string): string {
  const from = process.env.SLUICE_FAULTS_PACKAGE ?? REPO;
  if (from === REPO) ensureBuilt();
  mkdirSync(dir, { recursive: true });
  cpSync(join(from, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(from, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(from, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  return join(dir, 'bin', 'sluice.js');
}

export interface NodeLayout {
  readonly nodeId: number;
  readonly namespace: string;
  readonly ip: string;
  /** log.dirs: the partitions' data (a fault disk for some nodes). */
  readonly logDir: string;
  /** metadata.log.dir: the Raft log, always on the ordinary disk. */
  readonly metadataDir: string;
  /** Where the properties file and the output files go. */
  readonly nodeDir: string;
}

/** Writes each node's server.properties: combined mode, the bridge addresses, `overrides` on top. */
export function writeConfigs(layouts: readonly NodeLayout[], overrides: Record<string, string | number>): string[] {
  const addresses = layouts.map((l) => ({
    nodeId: l.nodeId,
    host: l.ip,
    advertisedHost: l.ip,
    port: CLIENT_PORT,
    controllerPort: CONTROLLER_PORT,
    logDir: l.logDir,
  }));
  return layouts.map((layout, i) => {
    const props = clusterNodeProperties(addresses[i]!, addresses);
    props.set('metadata.log.dir', layout.metadataDir);
    for (const [k, v] of Object.entries(overrides)) props.set(k, String(v));
    mkdirSync(layout.nodeDir, { recursive: true });
    const path = join(layout.nodeDir, 'server.properties');
    writeFileSync(
      path,
      propertiesText(props, `test/cluster: node ${layout.nodeId} of ${layouts.length}, in network namespace ${layout.namespace}`),
    );
    return path;
  });
}

export class FaultNode {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private expectingExit = false;
  private stopped = false;
  private out = '';
  private err = '';
  /** Times any incarnation logged that a log dir failed. */
  logDirFailures = 0;
  private readonly outFile: WriteStream;
  private readonly errFile: WriteStream;

  constructor(
    readonly layout: NodeLayout,
    private readonly configPath: string,
    private readonly sluiceJs: string,
    private readonly readyTimeoutMs: number,
    private readonly startedAtMs: number,
    private readonly onExit: (exit: NodeExit) => void,
  ) {
    this.outFile = createWriteStream(join(layout.nodeDir, 'stdout.log'), { flags: 'a' });
    this.errFile = createWriteStream(join(layout.nodeDir, 'stderr.log'), { flags: 'a' });
  }

  get nodeId(): number {
    return this.layout.nodeId;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** SIGSTOPped and not yet continued. */
  get paused(): boolean {
    return this.stopped;
  }

  /** `ip:port` of the client listener. */
  get address(): string {
    return `${this.layout.ip}:${CLIENT_PORT}`;
  }

  /** Starts the node (no-op when it runs) and resolves at its ready line; rejects after the ready timeout (the process keeps running). */
  async start(): Promise<void> {
    if (this.child !== null) return;
    const child = spawn(
      'ip',
      ['netns', 'exec', this.layout.namespace, process.execPath, ...BROKER_NODE_FLAGS, this.sluiceJs, 'start', '--config', this.configPath],
      { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    this.expectingExit = false;
    this.stopped = false;
    let fresh = '';
    child.stdout!.on('data', (d: Buffer) => {
      const text = d.toString();
      fresh += text;
      this.out = (this.out + text).slice(-TAIL_CHARS);
      this.outFile.write(d);
    });
    child.stderr!.on('data', (d: Buffer) => {
      const text = d.toString();
      this.logDirFailures += text.match(LOG_DIR_FAILED)?.length ?? 0;
      this.err = (this.err + text).slice(-TAIL_CHARS);
      this.errFile.write(d);
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.child = null;
        this.stopped = false;
        this.onExit({
          nodeId: this.nodeId,
          atMs: Date.now() - this.startedAtMs,
          code,
          signal,
          caused: this.expectingExit,
          tail: this.expectingExit ? undefined : this.tail(),
        });
        resolve();
      }),
    );
    const exited = this.exited;
    await new Promise<void>((resolve, reject) => {
      const poll = setInterval(() => {
        if (READY.test(fresh)) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        }
      }, 50);
      const timer = setTimeout(() => {
        clearInterval(poll);
        reject(new Error(`node ${this.nodeId} not ready after ${this.readyTimeoutMs} ms`));
      }, this.readyTimeoutMs);
      void exited.then(() => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new Error(`node ${this.nodeId} exited before its ready line`));
      });
    });
  }

  /** Sends `signal` as the nemesis (the exit is caused) and resolves once the process is gone. */
  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.child === null) return;
    this.expectingExit = true;
    if (this.stopped && signal !== 'SIGKILL') this.child.kill('SIGCONT');
    this.child.kill(signal);
    await this.exited;
  }

  /** SIGTERM, then SIGKILL after `graceMs`: how the nemesis restarts a node whose disk it healed. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.child === null) return;
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), graceMs);
    try {
      await this.kill('SIGTERM');
    } finally {
      clearTimeout(timer);
    }
  }

  pause(): void {
    if (this.child === null || this.stopped) return;
    this.child.kill('SIGSTOP');
    this.stopped = true;
  }

  resume(): void {
    if (this.child === null || !this.stopped) return;
    this.child.kill('SIGCONT');
    this.stopped = false;
  }

  /** Synchronous last resort (SIGINT, a failed hook): SIGKILL whatever runs. */
  killNow(): void {
    if (this.child === null) return;
    this.expectingExit = true;
    this.child.kill('SIGKILL');
  }

  tail(): string {
    return `node ${this.nodeId} stdout:\n${this.out.slice(-3000)}\nnode ${this.nodeId} stderr:\n${this.err.slice(-6000)}`;
  }

  closeFiles(): void {
    this.outFile.end();
    this.errFile.end();
  }
}
