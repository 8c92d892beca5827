/**
 * Kafka's meta.properties: the file in every log directory (log.dirs and metadata.log.dir)
 * that says which cluster and which node the directory belongs to, and the directory's own
 * id (KIP-858). Kafka 3.7+ writes version 1:
 *
 *   node.id=1
 *   directory.id=pQp2mD6ZQ2WfS0Bg3Cw8YQ
 *   version=1
 *   cluster.id=MkU3OEVBNTcwNTJENDM2Qk
 *
 * Kafka refuses to start on a directory nobody formatted (`kafka-storage format`). Sluice
 * formats empty directories on first start instead, so that `sluice start` on fresh disks is
 * the whole set-up: the cluster id those nodes write must then agree without them talking,
 * so it is derived from what they already share, the controller endpoints (deriveClusterId).
 * `sluice storage format --cluster-id` writes a chosen id first, as Kafka's tool does; a
 * formatted directory's id always wins. There is deliberately no `cluster.id` broker
 * property (Kafka has none): meta.properties stays the one place the id lives, and a
 * property could only disagree with it on a later start.
 */
import { createHash } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { uuidToString } from '../../protocol/primitives.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import { parseProperties } from '../config/sources.ts';
import type { Logger } from '../observability/logger.ts';
import { systemRandom, type Random } from '../runtime/random.ts';
import { type FileSystem, nodeFileSystem } from '../../storage/file-system.ts';
import { METADATA_PARTITION_DIR } from './raft/file-log.ts';

export const META_PROPERTIES_FILE = 'meta.properties';

/** One directory's meta.properties (Kafka's MetaProperties). */
export interface MetaProperties {
  /** 0: the ZooKeeper-era file (broker.id, cluster.id optional); 1: KRaft (node.id and cluster.id required). */
  readonly version: 0 | 1;
  readonly clusterId: string | null;
  readonly nodeId: number | null;
  /** KIP-858 directory id (a Kafka Uuid); null in files written before Kafka 3.7. */
  readonly directoryId: string | null;
}

/** What a node's log directories agree on, once they are all formatted. */
export interface LogDirsIdentity {
  readonly clusterId: string;
  readonly nodeId: number;
  /** Each directory (as configured) and its directory.id. */
  readonly directoryIds: ReadonlyMap<string, string>;
  /** The directories this call formatted (they had no meta.properties). */
  readonly formattedDirs: readonly string[];
}

/** Parses a meta.properties file's text; `path` names it in errors. */
export function parseMetaProperties(text: string, path: string): MetaProperties {
  const props = parseProperties(text);
  const versionText = props.get('version') ?? '0';
  if (versionText !== '0' && versionText !== '1') throw new Error(`Unknown meta.properties version number ${versionText} in ${path}`);
  const version = versionText === '1' ? 1 : 0;
  const nodeKey = version === 1 ? 'node.id' : 'broker.id';
  const nodeText = props.get(nodeKey);
  if (version === 1 && nodeText === undefined) throw new Error(`node.id was not found in ${path}`);
  const nodeId = nodeText === undefined ? null : Number(nodeText.trim());
  if (nodeId !== null && !Number.isInteger(nodeId))
    throw new Error(`Failed to parse ${nodeKey} property as an int: ${nodeText} in ${path}`);
  const clusterId = props.get('cluster.id')?.trim() ?? null;
  if (version === 1 && clusterId === null) throw new Error(`cluster.id was not found in ${path}`);
  const directoryId = props.get('directory.id')?.trim() ?? null;
  if (directoryId !== null && !isUuid(directoryId)) throw new Error(`Unable to read directory.id as a Uuid: ${directoryId} in ${path}`);
  return { version, clusterId, nodeId, directoryId };
}

/** The file's text as Kafka writes it (java.util.Properties.store with an empty comment). */
export function formatMetaProperties(meta: MetaProperties, now = new Date()): string {
  const lines = ['#', `#${javaDateString(now)}`];
  if (meta.nodeId !== null) lines.push(`${meta.version === 1 ? 'node.id' : 'broker.id'}=${meta.nodeId}`);
  if (meta.directoryId !== null) lines.push(`directory.id=${meta.directoryId}`);
  lines.push(`version=${meta.version}`);
  if (meta.clusterId !== null) lines.push(`cluster.id=${meta.clusterId}`);
  return lines.join('\n') + '\n';
}

/** A directory's meta.properties, or null when it has none (the directory is unformatted). */
export async function readMetaProperties(dir: string, fs: FileSystem = nodeFileSystem): Promise<MetaProperties | null> {
  const path = join(dir, META_PROPERTIES_FILE);
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return parseMetaProperties(text, path);
}

/** Writes meta.properties atomically (temp file, fsync, rename, fsync of the directory), creating the directory. */
export async function writeMetaProperties(dir: string, meta: MetaProperties, fsync = true, fs: FileSystem = nodeFileSystem): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const path = join(dir, META_PROPERTIES_FILE);
  const tmp = `${path}.tmp`;
  const file = await fs.open(tmp, 'w');
  try {
    await file.writeFile(Buffer.from(formatMetaProperties(meta), 'utf8'));
    if (fsync) await file.sync();
  } finally {
    await file.close();
  }
  await fs.rename(tmp, path);
  if (fsync) {
    const parent = await fs.open(dirname(path), 'r');
    try {
      await parent.sync();
    } finally {
      await parent.close();
    }
  }
}

/** The directories that carry meta.properties: log.dirs and metadata.log.dir, each once, sorted as Kafka's ensemble sorts them. */
export function metaPropertiesDirs(config: BrokerConfig): { dirs: string[]; metadataLogDir: string } {
  const metadataLogDir = config.metadataLogDir;
  const byPath = new Map<string, string>();
  for (const dir of [metadataLogDir, ...config.logDirs]) if (!byPath.has(resolve(dir))) byPath.set(resolve(dir), dir);
  return { dirs: [...byPath.values()].sort(), metadataLogDir };
}

/**
 * The cluster id nodes formatting empty directories on first start agree on without talking:
 * a Kafka Uuid hashed from the sorted, distinct controller endpoints (`host:port` of
 * controller.quorum.voters, else of controller.quorum.bootstrap.servers). Voters and brokers
 * that bootstrap from the same controllers therefore derive the same id. A config that
 * names no controller (no process.roles) gets a random id.
 */
export function deriveClusterId(config: BrokerConfig): string {
  const voters = config.quorumVoters;
  const endpoints = voters.length > 0 ? voters : config.quorumBootstrapServers;
  if (endpoints.length === 0) return randomKafkaUuid();
  const key = [...new Set(endpoints.map((e) => `${e.host.toLowerCase()}:${e.port}`))].sort().join(',');
  for (let attempt = 0; ; attempt++) {
    const digest = createHash('sha256').update(`sluice cluster id\0${key}\0${attempt}`).digest();
    const id = uuidToString(digest.subarray(0, 16));
    if (isUsableUuid(id)) return id;
  }
}

/**
 * Reads every log directory's meta.properties, checks that they belong to this node and to
 * one cluster (Kafka's MetaPropertiesEnsemble.verify, with its messages), and formats the
 * directories that have none: with the cluster id the formatted ones carry, else the derived
 * one. Directories without a directory.id get one, as Kafka rewrites them on start.
 *
 * Call it before anything opens a log directory; the returned cluster id is the one the
 * Raft client and the broker registration use.
 */
export async function loadOrFormatMetaProperties(
  config: BrokerConfig,
  logger?: Logger,
  options: { random?: Random; fileSystem?: FileSystem } = {},
): Promise<LogDirsIdentity> {
  const random = options.random ?? systemRandom;
  const fs = options.fileSystem ?? nodeFileSystem;
  const { dirs, metadataLogDir } = metaPropertiesDirs(config);
  const nodeId = config.nodeId;
  const fsync = !config.getBoolean('unsafe.bypass.fsync');
  const ensemble = await loadEnsemble(dirs, fs);
  const found = verifyEnsemble(ensemble, null, nodeId);
  for (const [dir] of ensemble) {
    if (resolve(dir) === resolve(metadataLogDir)) continue;
    if (await exists(fs, join(dir, METADATA_PARTITION_DIR))) {
      throw new Error(
        `Found unexpected metadata location in data directory \`${join(dir, METADATA_PARTITION_DIR)}\` ` +
          `(the configured metadata directory is ${metadataLogDir}).`,
      );
    }
  }
  const clusterId = found ?? deriveClusterId(config);
  const directoryIds = new Map<string, string>();
  const formattedDirs: string[] = [];
  for (const [dir, meta] of ensemble) {
    if (meta === null) {
      const directoryId = newDirectoryId(ensemble, directoryIds, random);
      await writeMetaProperties(dir, { version: 1, clusterId, nodeId, directoryId }, fsync, fs);
      logger?.info({ dir, clusterId, nodeId, directoryId }, 'formatted log directory (wrote a new meta.properties)');
      directoryIds.set(dir, directoryId);
      formattedDirs.push(dir);
      continue;
    }
    if (meta.nodeId === null) throw new Error(`Error: node ID not found in ${dir}`);
    if (meta.clusterId === null) throw new Error(`Error: cluster ID not found in ${dir}`);
    if (meta.directoryId !== null) {
      directoryIds.set(dir, meta.directoryId);
      continue;
    }
    const directoryId = newDirectoryId(ensemble, directoryIds, random);
    await writeMetaProperties(dir, { ...meta, directoryId }, fsync, fs);
    logger?.info({ dir, directoryId }, 'rewrote meta.properties with a directory.id');
    directoryIds.set(dir, directoryId);
  }
  return { clusterId, nodeId, directoryIds, formattedDirs };
}

export interface FormatOptions {
  /** Skip directories that are formatted already instead of failing (`--ignore-formatted`). */
  readonly ignoreFormatted?: boolean;
}

export interface FormatResult {
  /** The directories written, each with Kafka's description of it. */
  readonly formatted: readonly { dir: string; kind: 'metadata directory' | 'data directory' }[];
  /** The directories that were formatted already (left as they were). */
  readonly alreadyFormatted: readonly string[];
}

/**
 * `kafka-storage format`: writes meta.properties with `clusterId` and this node's id into
 * every log directory and the metadata log directory. Directories formatted before must
 * carry the same cluster and node id; unless `ignoreFormatted`, any formatted one fails.
 */
export async function formatLogDirs(config: BrokerConfig, clusterId: string, options: FormatOptions = {}): Promise<FormatResult> {
  checkClusterId(clusterId);
  const nodeId = config.nodeId;
  if (nodeId < 0) throw new Error('You must specify a valid non-negative node ID.');
  const { dirs, metadataLogDir } = metaPropertiesDirs(config);
  const ensemble = await loadEnsemble(dirs);
  verifyEnsemble(ensemble, clusterId, nodeId);
  const alreadyFormatted = [...ensemble].filter(([, meta]) => meta !== null).map(([dir]) => dir);
  const [firstFormatted] = alreadyFormatted;
  if (firstFormatted !== undefined && options.ignoreFormatted !== true) {
    throw new Error(
      `Log directory ${firstFormatted} is already formatted. Use --ignore-formatted to ignore this directory and format the others.`,
    );
  }
  const fsync = !config.getBoolean('unsafe.bypass.fsync');
  const formatted: { dir: string; kind: 'metadata directory' | 'data directory' }[] = [];
  const directoryIds = new Map<string, string>();
  for (const [dir, meta] of ensemble) {
    if (meta !== null) continue;
    const directoryId = newDirectoryId(ensemble, directoryIds);
    await writeMetaProperties(dir, { version: 1, clusterId, nodeId, directoryId }, fsync);
    directoryIds.set(dir, directoryId);
    formatted.push({ dir, kind: resolve(dir) === resolve(metadataLogDir) ? 'metadata directory' : 'data directory' });
  }
  return { formatted, alreadyFormatted };
}

/** `kafka-storage random-uuid`: a fresh Kafka Uuid, never one starting with '-'. */
export function randomKafkaUuid(random: Random = systemRandom): string {
  for (;;) {
    const id = uuidToString(random.bytes(16));
    if (isUsableUuid(id)) return id;
  }
}

/** Kafka's Uuid.fromString check, with the message kafka-storage prints. */
export function checkClusterId(clusterId: string): void {
  if (!isUuid(clusterId)) throw new Error(`Cluster ID string ${clusterId} does not appear to be a valid UUID`);
}

type Ensemble = ReadonlyMap<string, MetaProperties | null>;

async function loadEnsemble(dirs: readonly string[], fs: FileSystem = nodeFileSystem): Promise<Ensemble> {
  const metas = await Promise.all(dirs.map((dir) => readMetaProperties(dir, fs)));
  return new Map(dirs.map((dir, i) => [dir, metas[i] ?? null]));
}

/**
 * Kafka's MetaPropertiesEnsemble.verify: every formatted directory names one cluster (the
 * expected one when given) and this node, and no two share a directory id. Returns the
 * cluster id they carry, null when none is formatted.
 */
function verifyEnsemble(ensemble: Ensemble, expectedClusterId: string | null, expectedNodeId: number): string | null {
  let clusterId = expectedClusterId;
  const seen = new Map<string, string>();
  for (const [dir, meta] of ensemble) {
    if (meta === null) continue;
    const path = join(dir, META_PROPERTIES_FILE);
    if (meta.clusterId !== null) {
      if (clusterId === null) clusterId = meta.clusterId;
      else if (meta.clusterId !== clusterId) {
        throw new Error(`Invalid cluster.id in: ${path}. Expected ${clusterId}, but read ${meta.clusterId}`);
      }
    }
    if (meta.nodeId !== null && meta.nodeId !== expectedNodeId) {
      throw new Error(
        `Stored node id ${meta.nodeId} doesn't match previous node id ${expectedNodeId} in ${path}. ` +
          'If you moved your data, make sure your configured node id matches. ' +
          'If you intend to create a new node, you should remove all data in your data directories.',
      );
    }
    if (meta.directoryId !== null) {
      if (isReservedDirectoryId(meta.directoryId)) throw new Error(`Invalid reserved directory ID ${meta.directoryId} found in ${dir}`);
      const previous = seen.get(meta.directoryId);
      if (previous !== undefined) {
        throw new Error(`Duplicate directory ID ${meta.directoryId} found. It was the ID of ${previous}, but also of ${dir}`);
      }
      seen.set(meta.directoryId, dir);
    }
  }
  return clusterId;
}

/** A random directory id no other directory of this node has and that Kafka does not reserve. */
function newDirectoryId(ensemble: Ensemble, assigned: ReadonlyMap<string, string>, random: Random = systemRandom): string {
  const taken = new Set<string>(assigned.values());
  for (const meta of ensemble.values()) if (meta?.directoryId) taken.add(meta.directoryId);
  for (;;) {
    const id = randomKafkaUuid(random);
    if (!taken.has(id) && !isReservedDirectoryId(id)) return id;
  }
}

function isUuid(text: string): boolean {
  return /^[A-Za-z0-9_-]{22}$/.test(text) && Buffer.from(text, 'base64url').length === 16;
}

function isUsableUuid(id: string): boolean {
  return !id.startsWith('-') && id !== uuidToString(Buffer.alloc(16));
}

/** Kafka's DirectoryId.reserved (UNASSIGNED, LOST, MIGRATING, ...): the comparison is on Java's signed long. */
function isReservedDirectoryId(id: string): boolean {
  const bytes = Buffer.from(id, 'base64url');
  return bytes.readBigInt64BE(0) === 0n && bytes.readBigInt64BE(8) < 100n;
}

async function exists(fs: FileSystem, path: string): Promise<boolean> {
  try {
    await fs.stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** java.util.Date#toString in UTC ("Thu Mar 14 10:08:53 UTC 2024"), the comment Properties.store writes. */
function javaDateString(d: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${two(d.getUTCDate())} ${time} UTC ${d.getUTCFullYear()}`;
}
