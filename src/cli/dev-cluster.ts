/**
 * `sluice dev --nodes N`: an N-node cluster on one machine, each node a child process of
 * `sluice start --config <data-dir>/node-<i>/server.properties` in combined mode (broker and
 * controller), with its controller listener apart from its client listener, as Kafka's own
 * multi-node quickstart runs it. Replication factors and min.insync.replicas follow the node
 * count (3 and 2 from three nodes on).
 *
 * A node's start-up completes only once the quorum has a leader, which needs a majority of
 * the voters running: the children are started together, and the cluster is ready when each
 * has printed its ready line. SIGTERM/SIGINT stop every node (SIGTERM, each shuts down
 * cleanly) and exit 0; a node that dies during start-up stops the others and exits 1.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { type DevArgs, UsageError } from './args.ts';
import type { Output } from './groups.ts';

/** Where the controller ports of `--port P` start: P + 10000 (9092 -> 19092). */
export const CONTROLLER_PORT_OFFSET = 10_000;

export interface ClusterNodeAddress {
  readonly nodeId: number;
  /** Where the listeners bind. */
  readonly host: string;
  /** The address other nodes and clients use (127.0.0.1 when binding every interface). */
  readonly advertisedHost: string;
  readonly port: number;
  readonly controllerPort: number;
  readonly logDir: string;
}

/**
 * The properties of one node of a combined-mode cluster on loopback: what `sluice dev
 * --nodes`, test/helpers/cluster.ts and scripts/cluster/node-*.properties share.
 */
export function clusterNodeProperties(node: ClusterNodeAddress, all: readonly ClusterNodeAddress[]): Map<string, string> {
  const n = all.length;
  return new Map([
    ['process.roles', 'broker,controller'],
    ['node.id', String(node.nodeId)],
    ['controller.quorum.voters', all.map((v) => `${v.nodeId}@${v.advertisedHost}:${v.controllerPort}`).join(',')],
    ['listeners', `PLAINTEXT://${node.host}:${node.port},CONTROLLER://${node.host}:${node.controllerPort}`],
    ['advertised.listeners', `PLAINTEXT://${node.advertisedHost}:${node.port}`],
    ['controller.listener.names', 'CONTROLLER'],
    ['inter.broker.listener.name', 'PLAINTEXT'],
    ['listener.security.protocol.map', 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT'],
    ['log.dirs', node.logDir],
    ['default.replication.factor', String(Math.min(3, n))],
    ['min.insync.replicas', String(Math.min(2, n))],
    ['offsets.topic.replication.factor', String(Math.min(3, n))],
    ['transaction.state.log.replication.factor', String(Math.min(3, n))],
    ['transaction.state.log.min.isr', String(Math.min(2, n))],
  ]);
}

/** java.util.Properties text: `key=value` lines (backslashes escaped, as Properties.load reads them). */
export function propertiesText(props: ReadonlyMap<string, string>, comment: string): string {
  const lines = comment.split('\n').map((line) => `# ${line}`.trimEnd());
  for (const [key, value] of props) lines.push(`${key}=${value.replaceAll('\\', '\\\\')}`);
  return lines.join('\n') + '\n';
}

/** `count` distinct free ports on `host`: all held open at once, then released. */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, host, () => resolve());
      });
    }
    return servers.map((s) => (s.address() as { port: number }).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/**
 * The nodes of `sluice dev --nodes N`: broker ports --port .. --port+N-1 and controller ports
 * CONTROLLER_PORT_OFFSET above them, so that a restart finds the same cluster; free ports
 * (`ports`, 2N of them) with --port 0.
 */
export function planDevCluster(dev: DevArgs, ports?: readonly number[]): ClusterNodeAddress[] {
  const advertisedHost = dev.host === '0.0.0.0' || dev.host === '' ? '127.0.0.1' : dev.host;
  if (dev.port !== 0 && dev.port + CONTROLLER_PORT_OFFSET + dev.nodes - 1 > 65535) {
    throw new UsageError(
      `--port ${dev.port} leaves no room for ${dev.nodes} controller ports ${CONTROLLER_PORT_OFFSET} above the broker ports`,
    );
  }
  if (dev.port === 0 && (ports === undefined || ports.length < 2 * dev.nodes))
    throw new Error(`--port 0 needs ${2 * dev.nodes} free ports`);
  return Array.from({ length: dev.nodes }, (_, i) => ({
    nodeId: i + 1,
    host: dev.host,
    advertisedHost,
    port: dev.port === 0 ? ports![i]! : dev.port + i,
    controllerPort: dev.port === 0 ? ports![dev.nodes + i]! : dev.port + CONTROLLER_PORT_OFFSET + i,
    logDir: join(dev.dataDir, `node-${i + 1}`, 'logs'),
  }));
}

/** Node i's HTTP port: --http-port + i - 1 beside fixed broker ports, free ports beside free ones, -1 for none. */
function devHttpPort(dev: DevArgs, nodeId: number): number {
  if (dev.httpPort <= 0) return dev.httpPort;
  return dev.httpPort + nodeId - 1 > 65535 ? 0 : dev.httpPort + nodeId - 1;
}

interface NodeProcess {
  readonly address: ClusterNodeAddress;
  readonly child: ChildProcess;
  /** The ready line, without its `sluice ready: ` prefix. */
  readonly ready: Promise<string>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  running: boolean;
}

const stdio: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

const READY_PREFIX = 'sluice ready: ';

/** Runs the cluster until SIGTERM/SIGINT; resolves with the exit code. */
export async function runDevCluster(dev: DevArgs, io: Output = stdio): Promise<number> {
  const nodes = planDevCluster(dev, dev.port === 0 ? await freePorts(2 * dev.nodes, dev.host === '' ? '127.0.0.1' : dev.host) : undefined);
  const configs = await Promise.all(
    nodes.map(async (node) => {
      const dir = join(dev.dataDir, `node-${node.nodeId}`);
      await mkdir(dir, { recursive: true });
      const path = join(dir, 'server.properties');
      const comment = `Node ${node.nodeId} of ${nodes.length}, written by \`sluice dev --nodes ${nodes.length}\` at every start.`;
      const props = clusterNodeProperties(node, nodes);
      const httpPort = devHttpPort(dev, node.nodeId);
      if (httpPort >= 0) props.set('http.listeners', `http://${node.host}:${httpPort}`);
      await writeFile(path, propertiesText(props, comment));
      return path;
    }),
  );
  const children = nodes.map((node, i) => spawnNode(node, configs[i]!, dev, io));
  return new Promise<number>((resolveExit) => {
    let phase: 'starting' | 'running' | 'stopping' = 'starting';
    const stop = (exitCode: number): void => {
      if (phase === 'stopping') return;
      phase = 'stopping';
      const stopped = children.filter((c) => c.running);
      for (const c of stopped) c.child.kill('SIGTERM');
      void Promise.all(stopped.map((c) => c.exited)).then((results) => {
        const clean = results.every((r) => r.code === 0 || r.signal === 'SIGTERM');
        resolveExit(clean ? exitCode : 1);
      });
    };
    process.on('SIGTERM', () => stop(0));
    process.on('SIGINT', () => stop(0));
    for (const c of children) {
      void c.exited.then(({ code, signal }) => {
        if (phase === 'stopping') return;
        const how = signal === null ? `code ${code}` : `signal ${signal}`;
        if (phase === 'starting') {
          io.err(`sluice dev: node ${c.address.nodeId} exited with ${how} before it was ready; stopping the others\n`);
          stop(1);
          return;
        }
        io.err(`sluice dev: node ${c.address.nodeId} exited with ${how}\n`);
        if (children.every((other) => !other.running)) {
          phase = 'stopping';
          resolveExit(1);
        }
      });
    }
    void Promise.all(children.map((c) => c.ready)).then((lines) => {
      if (phase !== 'starting') return;
      phase = 'running';
      for (const line of lines) io.out(`sluice dev: ${line}\n`);
      const bootstrap = nodes.map((n) => `${n.advertisedHost}:${n.port}`).join(',');
      io.out(`${READY_PREFIX}${nodes.length} nodes, bootstrap ${bootstrap}\n`);
    });
  });
}

/**
 * `sluice start --config <file>` as a child, with the parent's Node flags and entry point
 * (bin/sluice.js, or src/cli/main.ts under tsx): its logs go to our stderr, its stdout is
 * read for the ready line.
 */
function spawnNode(address: ClusterNodeAddress, configPath: string, dev: DevArgs, io: Output): NodeProcess {
  const args = [...process.execArgv, process.argv[1]!, 'start', '--config', configPath];
  for (const o of dev.overrides) args.push('--override', o);
  if (dev.logFormat !== undefined) args.push('--log-format', dev.logFormat);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  child.on('error', (err) => io.err(`sluice dev: node ${address.nodeId}: ${err.message}\n`));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      node.running = false;
      resolve({ code, signal });
    }),
  );
  const ready = new Promise<string>((resolve) => {
    const lines = createInterface({ input: child.stdout! });
    let seen = false;
    lines.on('line', (line) => {
      if (!seen && line.startsWith(READY_PREFIX)) {
        seen = true;
        resolve(line.slice(READY_PREFIX.length));
      } else io.out(`${line}\n`);
    });
  });
  const node: NodeProcess = { address, child, ready, exited, running: true };
  return node;
}
