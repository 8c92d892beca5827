// Client for Kafka's own codec running as a Java process (test/integration/oracle/java), used as the
// oracle of the differential tests. One process serves the whole test run: it starts on
// first use, is shared by every test file, and is closed by a root-level `after` hook once the
// last test has run (its stdin ends; Oracle.java exits at end of input).
//
// The jars come from `bash scripts/install-oracle.sh`. Without Java or the jars the oracle
// tests are skipped with a loud notice, except under CI=true, where that is a failure.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../../..');
const javaSourceDir = join(here, 'java');
const cacheDir = join(repoRoot, '.cache/oracle');
const libDir = join(cacheDir, 'lib');
const newerLibDir = join(cacheDir, 'lib-newer');
const newestLibDir = join(cacheDir, 'lib-newest');
const installStamp = join(cacheDir, 'install.stamp');

export class OracleError extends Error {
  constructor(
    message: string,
    readonly javaTrace?: string,
  ) {
    super(message);
    this.name = 'OracleError';
  }
}

export interface OracleVersions {
  lowest: number;
  highest: number;
  /** Each kafka-clients jar that knows the message, with its range. */
  sources: { kafka: string; lowest: number; highest: number }[];
}

export interface OracleDecoded {
  /** Kafka's JsonConverter output; int64 values arrive as decimal strings. */
  json: Record<string, unknown>;
  /** Bytes left unread after the message. */
  remaining: number;
  unknownTaggedFields: number;
  /** The kafka-clients jar that decoded it. */
  kafka: string;
}

export interface OracleRecord {
  /** Absolute offset; defaults to the previous record's plus one (the first: baseOffset). */
  offset?: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: { key: string; value: Buffer | null }[];
}

export type OracleCodec = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

export interface OracleBuildSpec {
  codec: OracleCodec;
  /** Record format: 0 and 1 are the legacy message sets, 2 the record batch. */
  magic?: 0 | 1 | 2;
  timestampType?: 'create' | 'logAppend';
  logAppendTime?: bigint;
  baseOffset?: bigint;
  producerId?: bigint;
  producerEpoch?: number;
  baseSequence?: number;
  isTransactional?: boolean;
  partitionLeaderEpoch?: number;
  records: OracleRecord[];
}

export interface OracleControlSpec {
  marker: 'commit' | 'abort';
  baseOffset: bigint;
  timestamp: bigint;
  partitionLeaderEpoch: number;
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
}

export interface OracleReadRecord {
  offset: bigint;
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: { key: string; value: Buffer | null }[];
}

export interface OracleBatch {
  baseOffset: bigint;
  lastOffset: bigint;
  magic: number;
  /** Kafka's codec name: none, gzip, snappy, lz4, zstd. */
  codec: string;
  /** Kafka's name: NoTimestampType, CreateTime, LogAppendTime. */
  timestampType: string;
  maxTimestamp: bigint;
  isTransactional: boolean;
  isControl: boolean;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  partitionLeaderEpoch: number;
  sizeInBytes: number;
  recordCount?: number;
  records: OracleReadRecord[];
}

export interface OracleValidation {
  /** Every batch Kafka found, each having passed ensureValid(). */
  batches: OracleBatch[];
  /** Bytes covered by whole batches; less than totalBytes when a partial batch trails. */
  validBytes: number;
  totalBytes: number;
}

type Answer = Record<string, unknown> & { id: number; ok: boolean; error?: string; trace?: string };

function javaSourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.java'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

function hasCommand(name: string): boolean {
  return spawnSync(name, ['-version'], { stdio: 'ignore' }).status === 0;
}

/** Why the oracle cannot run here, or null when it can. */
function missingPrerequisite(): string | null {
  if (!hasCommand('java') || !hasCommand('javac')) return 'no JDK (java and javac) on PATH';
  if (!existsSync(installStamp)) return `Kafka jars not installed in ${relative(repoRoot, cacheDir)} (run: bash scripts/install-oracle.sh)`;
  return null;
}

/** Compiles the oracle into .cache/oracle/classes-<hash of the sources> once per source change. */
function compiledClasses(): string {
  const sources = javaSourceFiles(javaSourceDir);
  const hash = createHash('sha256');
  for (const file of sources) hash.update(relative(javaSourceDir, file)).update('\0').update(readFileSync(file));
  const out = join(cacheDir, `classes-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(out)) return out;
  // Compile beside the target and rename, so a concurrent run never sees half the classes.
  const staging = `${out}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const javac = spawnSync('javac', ['-encoding', 'UTF-8', '-d', staging, '-cp', join(libDir, '*'), ...sources], { encoding: 'utf8' });
  if (javac.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new OracleError(`javac failed for the Kafka oracle:\n${javac.stderr}${javac.stdout}`);
  }
  try {
    renameSync(staging, out);
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(out)) throw e;
  }
  // Builds of earlier sources are of no further use.
  for (const e of readdirSync(cacheDir, { withFileTypes: true })) {
    if (e.isDirectory() && /^classes-[0-9a-f]{16}$/.test(e.name) && join(cacheDir, e.name) !== out) {
      rmSync(join(cacheDir, e.name), { recursive: true, force: true });
    }
  }
  return out;
}

function bigintFields<T>(o: Record<string, unknown>, names: string[]): T {
  const copy: Record<string, unknown> = { ...o };
  for (const n of names) if (typeof copy[n] === 'string') copy[n] = BigInt(copy[n] as string);
  return copy as T;
}

function nullableBuffer(v: unknown): Buffer | null {
  return v === null || v === undefined ? null : Buffer.from(v as string, 'base64');
}

function recordJson(r: OracleRecord): string {
  const parts = [
    ...(r.offset === undefined ? [] : [`"offset":${r.offset}`]),
    `"timestamp":${r.timestamp}`,
    `"key":${r.key === null ? 'null' : JSON.stringify(r.key.toString('base64'))}`,
    `"value":${r.value === null ? 'null' : JSON.stringify(r.value.toString('base64'))}`,
    `"headers":[${r.headers.map((h) => `{"key":${JSON.stringify(h.key)},"value":${h.value === null ? 'null' : JSON.stringify(h.value.toString('base64'))}}`).join(',')}]`,
  ];
  return `{${parts.join(',')}}`;
}

/** A JSON object literal where bigint members are written as exact numeric literals. */
function objectJson(o: Record<string, string | number | boolean | bigint | undefined>): string {
  return `{${Object.entries(o)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}:${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}`)
    .join(',')}}`;
}

export class KafkaOracle {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  private exited: Error | null = null;
  private readonly exitedPromise: Promise<void>;
  private stderr = '';

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => this.onLine(line));
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8192);
    });
    child.on('exit', (code, signal) => {
      this.exited = new OracleError(`Kafka oracle exited (code ${code}, signal ${signal})\n${this.stderr}`);
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
    child.stdin.on('error', () => {
      // The exit handler reports the failure with the process's stderr.
    });
    this.exitedPromise = new Promise((resolveExit) => {
      if (child.exitCode !== null || child.signalCode !== null) resolveExit();
      else child.once('exit', () => resolveExit());
    });
  }

  /** Ends the process's input and waits for it to exit (SIGKILL after `graceMs`). */
  async close(graceMs = 5_000): Promise<void> {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      await this.exitedPromise;
    } finally {
      clearTimeout(timer);
    }
  }

  static start(): KafkaOracle {
    const classes = compiledClasses();
    const args = [
      // A short-lived test helper: fast start beats peak throughput.
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Xss4m',
      '-cp',
      [classes, join(libDir, '*')].join(':'),
      'sluice.oracle.Oracle',
      newerLibDir,
      newestLibDir,
    ];
    // Should the test process die without its after hooks, the oracle's stdin ends with it.
    const child = spawn('java', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    return new KafkaOracle(child);
  }

  private onLine(line: string): void {
    const answer = JSON.parse(line) as Answer;
    const p = this.pending.get(answer.id);
    if (!p) return;
    this.pending.delete(answer.id);
    if (answer.ok) p.resolve(answer);
    else p.reject(new OracleError(answer.error ?? 'unknown oracle error', answer.trace));
  }

  /** Sends one request; `fields` is the JSON text of the request's members, without braces. */
  private call(op: string, fields: string): Promise<Answer> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.nextId++;
    return new Promise<Answer>((resolveAnswer, reject) => {
      this.pending.set(id, { resolve: resolveAnswer, reject });
      this.child.stdin.write(`{"id":${id},"op":${JSON.stringify(op)}${fields ? ',' : ''}${fields}}\n`);
    });
  }

  async versions(name: string): Promise<OracleVersions> {
    const a = await this.call('versions', `"name":${JSON.stringify(name)}`);
    return { lowest: a.lowest as number, highest: a.highest as number, sources: a.sources as OracleVersions['sources'] };
  }

  /**
   * Kafka's bytes for a message given in Kafka's JSON form (XxxDataJsonConverter.read, then
   * Message.write). `json` is JSON text so int64 values can be exact numeric literals.
   */
  async encode(name: string, version: number, json: string): Promise<{ bytes: Buffer; kafka: string }> {
    const a = await this.call('encode', `"name":${JSON.stringify(name)},"version":${version},"json":${json}`);
    return { bytes: Buffer.from(a.bytes as string, 'base64'), kafka: a.kafka as string };
  }

  /** Kafka's reading of a message (Message.read, then XxxDataJsonConverter.write). */
  async decode(name: string, version: number, bytes: Buffer): Promise<OracleDecoded> {
    const a = await this.call(
      'decode',
      `"name":${JSON.stringify(name)},"version":${version},"bytes":${JSON.stringify(bytes.toString('base64'))}`,
    );
    return {
      json: a.json as Record<string, unknown>,
      remaining: a.remaining as number,
      unknownTaggedFields: a.unknownTaggedFields as number,
      kafka: a.kafka as string,
    };
  }

  /** A batch (or legacy message set) written by Kafka's MemoryRecordsBuilder. */
  async buildRecords(spec: OracleBuildSpec): Promise<Buffer> {
    const { records, ...rest } = spec;
    const head = objectJson(rest as Record<string, string | number | boolean | bigint | undefined>).slice(1, -1);
    const a = await this.call('records-build', `${head}${head ? ',' : ''}"records":[${records.map(recordJson).join(',')}]`);
    return Buffer.from(a.bytes as string, 'base64');
  }

  /** A transaction marker batch written by MemoryRecords.withEndTransactionMarker. */
  async controlBatch(spec: OracleControlSpec): Promise<Buffer> {
    const a = await this.call('records-control', objectJson({ ...spec }).slice(1, -1));
    return Buffer.from(a.bytes as string, 'base64');
  }

  /** Kafka's MemoryRecords reading: ensureValid() on every batch, every record read back. */
  async validateRecords(bytes: Buffer): Promise<OracleValidation> {
    const a = await this.call('records-validate', `"bytes":${JSON.stringify(bytes.toString('base64'))}`);
    const batches = (a.batches as Record<string, unknown>[]).map((b) => {
      const batch = bigintFields<OracleBatch>(b, ['baseOffset', 'lastOffset', 'maxTimestamp', 'producerId']);
      batch.records = (b.records as Record<string, unknown>[]).map((r) => ({
        offset: BigInt(r.offset as string),
        timestamp: BigInt(r.timestamp as string),
        key: nullableBuffer(r.key),
        value: nullableBuffer(r.value),
        headers: (r.headers as { key: string; value: string | null }[]).map((h) => ({ key: h.key, value: nullableBuffer(h.value) })),
      }));
      return batch;
    });
    return { batches, validBytes: a.validBytes as number, totalBytes: a.totalBytes as number };
  }
}

let shared: Promise<KafkaOracle | null> | undefined;

/**
 * The shared oracle, started on first call; null when Java or the jars are missing and
 * CI is not set (after a loud SKIP notice). Under CI=true a missing prerequisite throws.
 */
export function kafkaOracle(): Promise<KafkaOracle | null> {
  shared ??= (async () => {
    const missing = missingPrerequisite();
    if (missing) {
      if (process.env.CI === 'true') throw new OracleError(`Kafka oracle unavailable under CI: ${missing}`);
      console.warn(`\n*** SKIP: Kafka oracle tests: ${missing} ***\n`);
      return null;
    }
    return KafkaOracle.start();
  })();
  return shared;
}

/** Closes the shared oracle if one was started; the next kafkaOracle() starts a new one. */
export async function closeKafkaOracle(): Promise<void> {
  const started = shared;
  shared = undefined;
  const oracle = await started?.catch(() => null);
  await oracle?.close();
}

// A root-level hook (this module is imported while mocha loads the test files): runs once,
// after every test of the run, whichever files used the oracle.
after(async function () {
  this.timeout(10_000);
  await closeKafkaOracle();
});
