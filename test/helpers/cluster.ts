/**
 * A cluster of real `sluice start --config` processes on loopback for integration tests,
 * each node broker and controller (the properties `sluice dev --nodes` writes, from
 * src/cli/dev-cluster.ts), on free ports, in a temp dir:
 *
 *   const cluster = await startCluster({ nodes: 3, overrides: { 'broker.session.timeout.ms': 3000 } });
 *   const kafka = new Kafka({ brokers: cluster.bootstrap.split(',') });
 *   await cluster.nodes[0].kill('SIGKILL');              // resolves once the process is gone
 *   await cluster.nodes[0].start();                      // same config and data: waits for ready
 *   await cluster.cleanup();                             // SIGKILL what runs, delete the temp dir
 *
 * The nodes start together: a node's start-up completes only once the quorum it belongs
 * to has a leader, so starting them one after another would wait forever on the first.
 *
 * `roles` gives nodes their own process.roles (KRaft's separate roles): controller-only nodes
 * listen on their CONTROLLER port only and are the voters; broker-only nodes listen on their
 * PLAINTEXT port only and follow the quorum as observers; `bootstrap` names the brokers only.
 *
 *   const cluster = await startCluster({ nodes: 5, roles: { 1: 'controller', 2: 'controller', 3: 'controller', 4: 'broker', 5: 'broker' } });
 *
 * `propertiesFiles` starts the nodes from Kafka properties files instead (the compat suite
 * gives it scripts/cluster/node-N.properties, which scripts/kafka-cluster.sh starts Apache
 * Kafka from): their addresses and log dirs are moved to free ports and the temp dir.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ClusterNodeAddress, clusterNodeProperties, freePorts, propertiesText } from '../../src/cli/dev-cluster.ts';
import { readPropertiesFile } from '../../src/config/sources.ts';
import { REPO, sluiceCommand } from './sluice-cli.ts';

export interface StartClusterOptions {
  /** Defaults to 3, or to the number of `propertiesFiles`. */
  nodes?: number;
  /**
   * Node i + 1's properties file at index i, to start from instead of the properties `sluice
   * dev --nodes` writes: its node.id must be i + 1 and its listeners those `sluice dev` names
   * (PLAINTEXT and CONTROLLER); its addresses (listeners, advertised.listeners,
   * controller.quorum.voters) and log.dirs are replaced by this cluster's, the rest is kept.
   */
  propertiesFiles?: readonly string[];
  /**
   * process.roles per node id; a node not named is combined (`broker,controller`). The voters
   * are the nodes with the controller role; replication-factor defaults follow the number of
   * nodes with the broker role.
   */
  roles?: Record<number, NodeRoles>;
  /**
   * Broker-only nodes that find the quorum through controller.quorum.bootstrap.servers (the
   * voters' controller listeners, KIP-853) instead of listing controller.quorum.voters.
   */
  bootstrapServersOnly?: readonly number[];
  /** Broker properties for every node, written into each node's properties file. */
  overrides?: Record<string, string | number | boolean>;
  /** Per node id, properties over `overrides` (a rack, a node-specific setting). */
  nodeOverrides?: Record<number, Record<string, string | number | boolean>>;
  /** Extra environment (SLUICE_* variables) for every node. */
  env?: Record<string, string>;
  /** Milliseconds to wait for all ready lines; default 60000. */
  readyTimeoutMs?: number;
}

/** A node's process.roles. */
export type NodeRoles = 'broker,controller' | 'broker' | 'controller';

export interface ClusterNode {
  readonly nodeId: number;
  readonly roles: NodeRoles;
  readonly host: string;
  /** The PLAINTEXT (client and inter-broker) port; not listened on by a controller-only node. */
  readonly port: number;
  /** The CONTROLLER (Raft) port; not listened on by a broker-only node. */
  readonly controllerPort: number;
  /** The node's log dir (its server.properties is beside it). */
  readonly dataDir: string;
  readonly configPath: string;
  /** True from start until the process exits. */
  readonly running: boolean;
  /** The current (or last) process. */
  readonly child: ChildProcess | null;
  /** Sends `signal` and resolves with the exit code (null when a signal ended it) once the process is gone. */
  kill(signal: NodeJS.Signals): Promise<number | null>;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Starts the node again from the same properties and data; resolves at its ready line. */
  start(): Promise<void>;
  /** Everything every incarnation of this node wrote to stdout / stderr so far. */
  stdout(): string;
  stderr(): string;
}

export interface ClusterProcesses {
  /** `host:port,host:port,...` of every node's client listener (nodes with the broker role). */
  readonly bootstrap: string;
  readonly nodes: readonly ClusterNode[];
  readonly dir: string;
  /** SIGTERM to every running node at once; SIGKILL after `timeoutMs` (default 60000). Resolves with the exit codes. */
  stopAll(timeoutMs?: number): Promise<(number | null)[]>;
  /** SIGKILL every running node and delete the temp dir. */
  cleanup(): Promise<void>;
}

const READY = /^sluice ready: /m;

class Node implements ClusterNode {
  child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private out = '';
  private err = '';
  private alive = false;

  constructor(
    private readonly address: ClusterNodeAddress,
    readonly roles: NodeRoles,
    readonly configPath: string,
    private readonly env: Record<string, string>,
    private readonly readyTimeoutMs: number,
  ) {}

  get nodeId(): number {
    return this.address.nodeId;
  }
  get host(): string {
    return this.address.advertisedHost;
  }
  get port(): number {
    return this.address.port;
  }
  get controllerPort(): number {
    return this.address.controllerPort;
  }
  get dataDir(): string {
    return this.address.logDir;
  }
  get running(): boolean {
    return this.alive;
  }

  stdout(): string {
    return this.out;
  }
  stderr(): string {
    return this.err;
  }

  async start(): Promise<void> {
    if (this.alive) throw new Error(`node ${this.nodeId} is running`);
    const cmd = sluiceCommand(['start', '--config', this.configPath]);
    const child = spawn(cmd.command, cmd.args, { cwd: REPO, env: { ...process.env, ...this.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.alive = true;
    const from = this.out.length;
    child.stdout!.on('data', (d: Buffer) => {
      this.out += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      this.err += d.toString();
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        this.alive = false;
        resolve(code);
      }),
    );
    const exited = this.exited;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.stdout!.off('data', onData);
        reject(new Error(`node ${this.nodeId} not ready after ${this.readyTimeoutMs} ms\n${this.tail()}`));
      }, this.readyTimeoutMs);
      const onData = (): void => {
        if (!READY.test(this.out.slice(from))) return;
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve();
      };
      child.stdout!.on('data', onData);
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`node ${this.nodeId} exited with ${code} before ready\n${this.tail()}`));
      });
    });
  }

  async kill(signal: NodeJS.Signals): Promise<number | null> {
    if (this.alive) this.child?.kill(signal);
    return this.exited;
  }

  stop(): Promise<number | null> {
    return this.kill('SIGTERM');
  }

  /** The end of the node's output, for a failure message. */
  tail(): string {
    return `node ${this.nodeId} stdout:\n${this.out.slice(-2000)}\nnode ${this.nodeId} stderr (last 8000 chars):\n${this.err.slice(-8000)}`;
  }
}

/** The properties that say where a node is: replaced in a properties file by this cluster's. */
const ADDRESS_PROPERTIES = ['listeners', 'advertised.listeners', 'controller.quorum.voters', 'log.dirs'];

/** `path`'s properties with the addresses and log dir of `generated` (the same node of this cluster). */
function relocated(path: string, generated: ReadonlyMap<string, string>): Map<string, string> {
  const props = readPropertiesFile(path);
  const listenerNames = (listeners: string | undefined) => (listeners ?? '').replace(/:\/\/[^,]*/g, '');
  if (props.get('node.id') !== generated.get('node.id')) {
    throw new Error(`${path}: node.id ${props.get('node.id')}, expected ${generated.get('node.id')} (files are given in node id order)`);
  }
  if (listenerNames(props.get('listeners')) !== listenerNames(generated.get('listeners'))) {
    throw new Error(
      `${path}: listeners ${props.get('listeners')} are not the ${listenerNames(generated.get('listeners'))} this helper can move`,
    );
  }
  for (const key of ADDRESS_PROPERTIES) props.set(key, generated.get(key)!);
  return props;
}

/**
 * `generated` (a combined node's properties) for a node of `roles`: only the listeners its
 * roles serve, the voters of the cluster, replication defaults for `brokers` brokers.
 */
function withRoles(
  generated: Map<string, string>,
  address: ClusterNodeAddress,
  roles: NodeRoles,
  voters: readonly ClusterNodeAddress[],
  brokers: number,
  bootstrapServersOnly: boolean,
): Map<string, string> {
  const props = new Map(generated);
  props.set('process.roles', roles);
  if (bootstrapServersOnly) {
    props.delete('controller.quorum.voters');
    props.set('controller.quorum.bootstrap.servers', voters.map((v) => `${v.advertisedHost}:${v.controllerPort}`).join(','));
  } else {
    props.set('controller.quorum.voters', voters.map((v) => `${v.nodeId}@${v.advertisedHost}:${v.controllerPort}`).join(','));
  }
  if (roles === 'controller') {
    props.set('listeners', `CONTROLLER://${address.host}:${address.controllerPort}`);
    props.delete('advertised.listeners');
    props.delete('inter.broker.listener.name');
  } else if (roles === 'broker') {
    props.set('listeners', `PLAINTEXT://${address.host}:${address.port}`);
  }
  const replication = {
    'default.replication.factor': Math.min(3, brokers),
    'min.insync.replicas': Math.min(2, brokers),
    'offsets.topic.replication.factor': Math.min(3, brokers),
    'transaction.state.log.replication.factor': Math.min(3, brokers),
    'transaction.state.log.min.isr': Math.min(2, brokers),
  };
  for (const [k, v] of Object.entries(replication)) props.set(k, String(Math.max(1, v)));
  return props;
}

export async function startCluster(options: StartClusterOptions = {}): Promise<ClusterProcesses> {
  const count = options.propertiesFiles?.length ?? options.nodes ?? 3;
  const dir = await mkdtemp(join(tmpdir(), 'sluice-cluster-'));
  const ports = await freePorts(2 * count);
  const addresses: ClusterNodeAddress[] = Array.from({ length: count }, (_, i) => ({
    nodeId: i + 1,
    host: '127.0.0.1',
    advertisedHost: '127.0.0.1',
    port: ports[i]!,
    controllerPort: ports[count + i]!,
    logDir: join(dir, `node-${i + 1}`, 'logs'),
  }));
  const rolesOf = (nodeId: number): NodeRoles => options.roles?.[nodeId] ?? 'broker,controller';
  const voters = addresses.filter((a) => rolesOf(a.nodeId).includes('controller'));
  const brokerCount = addresses.filter((a) => rolesOf(a.nodeId).includes('broker')).length;
  const nodes = await Promise.all(
    addresses.map(async (address) => {
      const combined = clusterNodeProperties(address, addresses);
      const roles = rolesOf(address.nodeId);
      const bootstrapOnly = options.bootstrapServersOnly?.includes(address.nodeId) === true;
      if (bootstrapOnly && roles !== 'broker') throw new Error(`node ${address.nodeId}: only a broker-only node may list no voters`);
      const generated = options.roles === undefined ? combined : withRoles(combined, address, roles, voters, brokerCount, bootstrapOnly);
      const file = options.propertiesFiles?.[address.nodeId - 1];
      const props = file === undefined ? generated : relocated(file, generated);
      for (const [k, v] of Object.entries({ ...options.overrides, ...options.nodeOverrides?.[address.nodeId] })) props.set(k, String(v));
      const configPath = join(dir, `node-${address.nodeId}`, 'server.properties');
      await mkdir(join(dir, `node-${address.nodeId}`), { recursive: true });
      await writeFile(configPath, propertiesText(props, `test/helpers/cluster.ts: node ${address.nodeId} of ${count}`));
      return new Node(address, roles, configPath, options.env ?? {}, options.readyTimeoutMs ?? 60_000);
    }),
  );
  const handle: ClusterProcesses = {
    bootstrap: nodes
      .filter((n) => n.roles.includes('broker'))
      .map((n) => `${n.host}:${n.port}`)
      .join(','),
    nodes,
    dir,
    async stopAll(timeoutMs = 60_000) {
      const running = nodes.filter((n) => n.running);
      const timer = setTimeout(() => {
        for (const n of running) if (n.running) n.child?.kill('SIGKILL');
      }, timeoutMs);
      try {
        return await Promise.all(running.map((n) => n.stop()));
      } finally {
        clearTimeout(timer);
      }
    },
    async cleanup() {
      await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
      await rm(dir, { recursive: true, force: true });
    },
  };
  const started = await Promise.allSettled(nodes.map((n) => n.start()));
  const failed = started.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed.length > 0) {
    // Every node's output: the reason one did not start is often in another's log.
    const logs = nodes.map((n) => n.tail()).join('\n');
    await handle.cleanup();
    throw new Error(`cluster did not start: ${failed.map((f) => (f.reason as Error).message.split('\n')[0]).join('; ')}\n${logs}`);
  }
  return handle;
}
