/**
 * `sluice cluster`: the membership of the controller quorum (KIP-853), as Kafka's
 * kafka-metadata-quorum tool shows and changes it, and the cluster as an admin client sees it
 * through a broker.
 *
 *   sluice cluster describe --bootstrap-controller HOST:PORT
 *   sluice cluster describe --bootstrap-server HOST:PORT[,...] [--command-config FILE] [--output text|json]
 *   sluice cluster add-controller --bootstrap-controller HOST:PORT --config controller.properties [--override key=value ...]
 *   sluice cluster remove-controller --bootstrap-controller HOST:PORT --controller-id N --controller-directory-id ID
 *
 * add-controller adds the controller `--config` configures (Kafka's --command-config is
 * accepted too): its node.id, the directory.id of the meta.properties in its metadata log
 * directory, and its controller listeners (advertised.listeners where it names them). That
 * controller must be running, started with controller.quorum.bootstrap.servers, so that it
 * fetches the log as an observer: the leader adds only a caught-up replica. remove-controller
 * names the voter by id and directory id, as DescribeQuorum reports them. Both send their
 * request to the quorum leader, found through the bootstrap controller with DescribeQuorum.
 * describe --bootstrap-server asks a broker (Metadata, and DescribeQuorum, which it forwards to
 * the controllers), so it needs no access to the controller listeners; its --command-config
 * holds the client properties of a secured listener (command-config.ts).
 *
 * Exit codes: 0 ok, 1 when the quorum refuses or cannot be reached, 2 on usage and
 * configuration errors.
 */
import { parseArgs } from 'node:util';
import { Errors, errorByCode } from '../../protocol/errors.ts';
import {
  makeAddRaftVoterRequest,
  makeAddRaftVoterRequestListener,
  type AddRaftVoterResponse,
} from '../../protocol/messages/add-raft-voter.ts';
import type { DescribeQuorumResponse } from '../../protocol/messages/describe-quorum.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import { makeRemoveRaftVoterRequest, type RemoveRaftVoterResponse } from '../../protocol/messages/remove-raft-voter.ts';
import { describeCluster, describeQuorum, type ClusterDescription, type QuorumReplica } from '../client/admin.ts';
import { KafkaConnection } from '../client/connection.ts';
import { ConfigException, type BrokerConfig } from '../config/index.ts';
import { readMetaProperties } from '../metadata/meta-properties.ts';
import { type RaftEndpoint, raftMembershipOf } from '../metadata/raft/voter-set.ts';
import { configFromFile } from './args.ts';
import { clusterTarget, parseOutputFormat, withCluster, type ClusterTarget, type Output, type OutputFormat } from './output.ts';

export const CLUSTER_USAGE = `usage:
  sluice cluster describe --bootstrap-controller HOST:PORT
  sluice cluster describe --bootstrap-server HOST:PORT[,...] [--command-config FILE] [--output text|json]
  sluice cluster add-controller --bootstrap-controller HOST:PORT --config controller.properties [--override key=value ...]
  sluice cluster remove-controller --bootstrap-controller HOST:PORT --controller-id N --controller-directory-id ID`;

/** How long AddRaftVoter may wait for the leader to commit the change (the admin client's default). */
const ADD_VOTER_TIMEOUT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 35_000;
/** How long the leader is looked for while an election runs. */
const FIND_LEADER_MS = 15_000;
const FIND_LEADER_BACKOFF_MS = 200;

const stdio: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

class ClusterCommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

const usage = (message: string) => new ClusterCommandError(`${message}\n${CLUSTER_USAGE}`, 2);

interface HostPort {
  host: string;
  port: number;
}

function parseHostPort(text: string): HostPort {
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(text.trim());
  const port = Number(m?.[2]);
  if (m === null || !Number.isInteger(port) || port <= 0 || port > 65535)
    throw usage(`--bootstrap-controller: expected HOST:PORT, got ${text}`);
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

export async function runClusterCommand(argv: string[], io: Output = stdio, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [action, ...rest] = argv[0] === 'cluster' ? argv.slice(1) : argv;
  try {
    const { values } = parseArgs({
      args: rest,
      options: {
        'bootstrap-controller': { type: 'string' },
        'bootstrap-server': { type: 'string' },
        output: { type: 'string' },
        config: { type: 'string', short: 'c' },
        'command-config': { type: 'string' },
        override: { type: 'string', multiple: true },
        'controller-id': { type: 'string' },
        'controller-directory-id': { type: 'string' },
      },
    });
    const bootstrapText = values['bootstrap-controller'];
    if (action !== 'describe' && action !== 'add-controller' && action !== 'remove-controller') throw usage('unknown or missing action');
    const serversText = values['bootstrap-server'];
    if (serversText !== undefined && (action !== 'describe' || bootstrapText !== undefined)) {
      throw usage('--bootstrap-server applies to describe, instead of --bootstrap-controller');
    }
    if (values.output !== undefined && serversText === undefined) throw usage('--output applies to describe --bootstrap-server');
    if (serversText !== undefined) return await describeThroughBroker(brokerArgs(serversText, values['command-config'], values.output), io);
    if (bootstrapText === undefined) throw usage(`${action} needs --bootstrap-controller`);
    if (values['command-config'] !== undefined && action !== 'add-controller') {
      throw usage('--command-config applies to describe --bootstrap-server, and to add-controller for the controller’s properties');
    }
    const bootstrap = parseHostPort(bootstrapText);
    if (action === 'describe') return await describe(bootstrap, io);
    if (action === 'add-controller') {
      const path = values.config ?? values['command-config'];
      if (path === undefined) throw usage('add-controller needs --config with the new controller’s properties');
      return await addController(bootstrap, controllerConfig(path, values.override ?? [], env), io);
    }
    const idText = values['controller-id'];
    const directoryId = values['controller-directory-id'];
    if (idText === undefined || directoryId === undefined)
      throw usage('remove-controller needs --controller-id and --controller-directory-id');
    const id = Number(idText);
    if (!Number.isInteger(id) || id < 0) throw usage(`--controller-id: expected a node id, got ${idText}`);
    return await removeController(bootstrap, id, directoryId, io);
  } catch (err) {
    if (err instanceof ClusterCommandError) {
      io.err(`sluice cluster: ${err.message}\n`);
      return err.exitCode;
    }
    if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') === true) {
      io.err(`sluice cluster: ${(err as Error).message}\n${CLUSTER_USAGE}\n`);
      return 2;
    }
    io.err(`sluice cluster: ${(err as Error).message}\n`);
    return 1;
  }
}

type BrokerArgs = ClusterTarget & { format: OutputFormat };

function brokerArgs(servers: string, commandConfig: string | undefined, output: string | undefined): BrokerArgs {
  try {
    return { ...clusterTarget({ 'bootstrap-server': servers, 'command-config': commandConfig }), format: parseOutputFormat(output) };
  } catch (err) {
    throw usage((err as Error).message);
  }
}

/** The cluster's id, brokers and active controller, then the quorum with each replica's lag behind the leader. */
export function formatClusterDescription(d: ClusterDescription, nowMs: number): string {
  const pad = (label: string) => `${label}:`.padEnd(24);
  const lines = [
    `${pad('ClusterId')}${d.clusterId ?? '-'}`,
    `${pad('ControllerId')}${d.controllerId}`,
    `${pad('Brokers')}${d.brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}${b.rack === null ? '' : ` (rack ${b.rack})`}`).join(', ')}`,
  ];
  const q = d.quorum;
  if (q === null) return `${lines.join('\n')}\n${pad('Quorum')}not described by this cluster\n`;
  const leaderEnd = q.voters.find((v) => v.nodeId === q.leaderId)?.logEndOffset ?? q.highWatermark;
  const replica = (r: QuorumReplica, status: string): string[] => [
    String(r.nodeId),
    String(r.logEndOffset),
    String(Math.max(0, leaderEnd - r.logEndOffset)),
    r.lastCaughtUpTimestampMs < 0 ? '-' : String(Math.max(0, nowMs - r.lastCaughtUpTimestampMs)),
    status,
  ];
  const rows = [
    ...q.voters.map((v) => replica(v, v.nodeId === q.leaderId ? 'Leader' : 'Follower')),
    ...q.observers.map((o) => replica(o, 'Observer')),
  ];
  const header = ['NODE-ID', 'LOG-END-OFFSET', 'LAG', 'LAST-CAUGHT-UP-AGO-MS', 'STATUS'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const row = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  lines.push(
    `${pad('LeaderId')}${q.leaderId}`,
    `${pad('LeaderEpoch')}${q.leaderEpoch}`,
    `${pad('HighWatermark')}${q.highWatermark}`,
    `${pad('CurrentVoters')}[${q.voters.map((v) => v.nodeId).join(',')}]`,
    `${pad('CurrentObservers')}[${q.observers.map((o) => o.nodeId).join(',')}]`,
    '',
    row(header),
    ...rows.map(row),
  );
  return `${lines.join('\n')}\n`;
}

async function describeThroughBroker(args: BrokerArgs, io: Output): Promise<number> {
  return withCluster(io, args, 'sluice-cluster', async (cluster) => {
    const described = await describeCluster(cluster);
    io.out(args.format === 'json' ? `${JSON.stringify(described)}\n` : formatClusterDescription(described, Date.now()));
    return 0;
  });
}

function controllerConfig(path: string, overrides: readonly string[], env: NodeJS.ProcessEnv): BrokerConfig {
  try {
    return configFromFile(path, overrides, env);
  } catch (err) {
    if (err instanceof ConfigException || (err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new ClusterCommandError((err as Error).message, 2);
    throw err;
  }
}

const connect = (address: HostPort) =>
  KafkaConnection.connect(address.host, address.port, {
    clientId: 'sluice-cluster',
    connectTimeoutMs: 10_000,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
  });

/**
 * A connection to the quorum leader and its DescribeQuorum answer: asked of the bootstrap
 * controller, then of the leader at the address the answer gives for it.
 */
async function connectToLeader(bootstrap: HostPort): Promise<{ conn: KafkaConnection; described: DescribeQuorumResponse }> {
  const deadline = Date.now() + FIND_LEADER_MS;
  for (;;) {
    const conn = await connect(bootstrap);
    let redirect: HostPort | null = null;
    try {
      const { response, partition } = await describeQuorum(conn);
      if (partition.errorCode === Errors.NONE.code) return { conn, described: response };
      const leader = response.nodes.find((n) => n.nodeId === partition.leaderId)?.listeners[0];
      if (partition.leaderId >= 0 && leader !== undefined) redirect = { host: leader.host, port: leader.port };
    } catch (err) {
      conn.close();
      throw err;
    }
    conn.close();
    if (redirect !== null) {
      const leaderConn = await connect(redirect);
      try {
        const { response, partition } = await describeQuorum(leaderConn);
        if (partition.errorCode === Errors.NONE.code) return { conn: leaderConn, described: response };
      } catch (err) {
        leaderConn.close();
        throw err;
      }
      leaderConn.close();
    }
    if (Date.now() > deadline) throw new ClusterCommandError(`no quorum leader found through ${bootstrap.host}:${bootstrap.port}`, 1);
    await new Promise((resolve) => setTimeout(resolve, FIND_LEADER_BACKOFF_MS));
  }
}

const endpointText = (e: RaftEndpoint) => `${e.name}://${e.host.includes(':') ? `[${e.host}]` : e.host}:${e.port}`;

/** `describe --status` of kafka-metadata-quorum, voters with their directory ids and endpoints. */
async function describe(bootstrap: HostPort, io: Output): Promise<number> {
  const { conn, described } = await connectToLeader(bootstrap);
  conn.close();
  const partition = described.topics[0]!.partitions[0]!;
  const nowMs = Date.now();
  const leader = partition.currentVoters.find((v) => v.replicaId === partition.leaderId);
  const followers = partition.currentVoters.filter((v) => v.replicaId !== partition.leaderId);
  const leaderEnd = leader?.logEndOffset ?? partition.highWatermark;
  const maxLag = followers.reduce((max, v) => Math.max(max, Number(leaderEnd - v.logEndOffset)), 0);
  const maxLagMs = followers.reduce(
    (max, v) => Math.max(max, v.lastCaughtUpTimestamp < 0n ? 0 : nowMs - Number(v.lastCaughtUpTimestamp)),
    0,
  );
  const endpoints = (id: number) => (described.nodes.find((n) => n.nodeId === id)?.listeners ?? []).map(endpointText);
  const voters = partition.currentVoters.map((v) => ({
    id: v.replicaId,
    directoryId: v.replicaDirectoryId,
    endpoints: endpoints(v.replicaId),
  }));
  const observers = partition.observers.map((o) => ({ id: o.replicaId, directoryId: o.replicaDirectoryId }));
  const pad = (label: string) => `${label}:`.padEnd(24);
  io.out(
    [
      `${pad('LeaderId')}${partition.leaderId}`,
      `${pad('LeaderEpoch')}${partition.leaderEpoch}`,
      `${pad('HighWatermark')}${partition.highWatermark}`,
      `${pad('MaxFollowerLag')}${maxLag}`,
      `${pad('MaxFollowerLagTimeMs')}${maxLagMs}`,
      `${pad('CurrentVoters')}${JSON.stringify(voters)}`,
      `${pad('CurrentObservers')}${JSON.stringify(observers)}`,
    ].join('\n') + '\n',
  );
  return 0;
}

/** The new controller's identity: its node id, its metadata log directory's id and cluster id, its controller listeners. */
async function controllerIdentity(
  config: BrokerConfig,
): Promise<{ id: number; directoryId: string; clusterId: string | null; endpoints: RaftEndpoint[] }> {
  if (!config.processRoles.includes('controller'))
    throw new ClusterCommandError('the configured node does not have the controller role', 2);
  const dir = config.metadataLogDir;
  const meta = await readMetaProperties(dir);
  if (meta === null || meta.directoryId === null) {
    throw new ClusterCommandError(`no directory.id in ${dir}/meta.properties: start (or format) the new controller first`, 1);
  }
  if (meta.nodeId !== null && meta.nodeId !== config.nodeId) {
    throw new ClusterCommandError(`${dir}/meta.properties belongs to node ${meta.nodeId}, not to node ${config.nodeId}`, 1);
  }
  const endpoints = raftMembershipOf(config, meta.directoryId).localEndpoints;
  if (endpoints.length === 0) throw new ClusterCommandError('the configured node has no controller listener others can reach', 2);
  return { id: config.nodeId, directoryId: meta.directoryId, clusterId: meta.clusterId, endpoints };
}

async function addController(bootstrap: HostPort, config: BrokerConfig, io: Output): Promise<number> {
  const controller = await controllerIdentity(config);
  const { conn } = await connectToLeader(bootstrap);
  try {
    const response = await conn.send<AddRaftVoterResponse>(
      ApiKey.AddRaftVoter,
      makeAddRaftVoterRequest({
        clusterId: controller.clusterId,
        timeoutMs: ADD_VOTER_TIMEOUT_MS,
        voterId: controller.id,
        voterDirectoryId: controller.directoryId,
        listeners: controller.endpoints.map((e) => makeAddRaftVoterRequestListener(e)),
      }),
    );
    if (response.errorCode !== Errors.NONE.code) return refused(io, 'add-controller', response.errorCode, response.errorMessage);
  } finally {
    conn.close();
  }
  io.out(
    `Added controller ${controller.id} with directory id ${controller.directoryId} and endpoints: ${controller.endpoints.map(endpointText).join(', ')}\n`,
  );
  return 0;
}

async function removeController(bootstrap: HostPort, id: number, directoryId: string, io: Output): Promise<number> {
  if (!/^[A-Za-z0-9_-]{22}$/.test(directoryId)) throw usage(`--controller-directory-id: expected a Kafka Uuid, got ${directoryId}`);
  const { conn } = await connectToLeader(bootstrap);
  try {
    const response = await conn.send<RemoveRaftVoterResponse>(
      ApiKey.RemoveRaftVoter,
      makeRemoveRaftVoterRequest({ clusterId: null, voterId: id, voterDirectoryId: directoryId }),
    );
    if (response.errorCode !== Errors.NONE.code) return refused(io, 'remove-controller', response.errorCode, response.errorMessage);
  } finally {
    conn.close();
  }
  io.out(`Removed controller ${id} with directory id ${directoryId}\n`);
  return 0;
}

function refused(io: Output, action: string, errorCode: number, message: string | null): number {
  const error = errorByCode(errorCode);
  io.err(`sluice cluster: ${action} failed: ${error.name}: ${message !== null && message !== '' ? message : error.message}\n`);
  return 1;
}
