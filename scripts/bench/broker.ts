// Broker figures, each a ratio against a ceiling measured in the same run, then the absolute
// numbers:
//   produce   pre-encoded ProduceRequests (1 KiB records, 64 KiB batches, acks=1) pipelined
//             over a few connections, vs a null server that appends the frames to a file and
//             answers a canned response (target >= 0.7)
//   fetch     reading the warm log back with Fetch vs a raw file-to-socket copy of the same
//             bytes (target >= 0.9)
//   latency   produce-to-consume p50/p99 at a fixed moderate rate vs a raw loopback
//             ping-pong's p50/p99 at the same rate
//   startup   process start to the first acknowledged produce, warm (after one start and stop)
//   memory    broker RSS (/proc/<pid>/status) after creating 10,000 partitions
//   wide      one Fetch of every partition of a 1,000-partition topic holding one small
//             batch each (a consumer or a follower of many quiet partitions), back to back:
//             milliseconds per fetch, against Kafka only
// With --kafka (or whenever the reference broker is installed) the same loads run against
// Apache Kafka (scripts/kafka-reference.sh) and Sluice/Kafka ratios are printed side by side.
// Run: node --import tsx scripts/bench/broker.ts [--kafka] [--no-kafka] [--quick]
//      [--only=produce,fetch,latency,memory,wide]
// Sluice runs as `sluice dev` does by default: with its HTTP listener, metrics counted.
import { sluiceCommand } from '../../test/helpers/sluice-cli.ts';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, truncate } from 'node:fs/promises';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import { RecordBatchBuilder } from '../../protocol/records/builder.ts';
import { RecordBatch, validateBatchAt } from '../../protocol/records/batch.ts';
import { readRecords } from '../../protocol/records/record.ts';
import { KafkaConnection, type ConnectionOptions } from '../../src/client/connection.ts';
import { MIB, buildBatch, fetchOnce, produceBody, produceError, rssKiB, sleep } from './requests.ts';
import { settlePageCache } from './measure.ts';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { BROKER_NODE_FLAGS } from '../../src/cli/node-flags.ts';
import { listOffsets, tpKey } from '../../src/client/offsets.ts';

const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (figure: string): boolean => only === undefined || only.includes(figure);

const PRODUCE_CONNECTIONS = 4;
const PRODUCE_IN_FLIGHT = 4;
export const PRODUCE_PARTITIONS = 4;
const PRODUCE_MS = quick ? 3000 : 8000;
const PRODUCE_WARMUP_MS = 500;
/** Throughput loads alternate with their ceilings this many times; the best of each counts. */
const MEASURE_ROUNDS = 3;
/** Bounds the log (and the null server's file) whatever the speed. */
const PRODUCE_MAX_BYTES = (quick ? 1024 : 3072) * MIB;
/** The fetch figure reads back at most this much of the log (spread over the partitions). */
const FETCH_TOTAL_BYTES = (quick ? 512 : 1024) * MIB;
const FETCH_MAX_BYTES = 4 * MIB;
const LATENCY_RATE_PER_S = 200;
const LATENCY_MS = quick ? 2000 : 5000;
const MEMORY_PARTITIONS = 10_000;
export const TOPIC = 'bench';
const WIDE_TOPIC = 'wide';
const WIDE_PARTITIONS = 1000;
const WIDE_FETCHES = quick ? 50 : 200;

// ---------------------------------------------------------------------------------------
// Targets

interface Target {
  name: string;
  host: string;
  port: number;
  pid: number;
  /** Process start to first acknowledged produce. */
  startupMs: number;
  stop(): Promise<void>;
}

export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolveLine, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms\n${out}\n${err}`)), timeoutMs);
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        resolveLine(m);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}\n${out}\n${err}`));
    });
  });
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolveStop();
    });
    child.kill('SIGTERM');
  });
}

/** Retries produce to a fresh topic until one is acknowledged; returns when it is. */
export async function firstAcknowledgedProduce(host: string, port: number, deadlineMs: number): Promise<void> {
  const batch = await buildBatch(1, 100);
  for (;;) {
    try {
      const cluster = new KafkaCluster([`${host}:${port}`], { connectTimeoutMs: 1000 });
      try {
        await createTopics(cluster, ['startup'], 1);
        const conn = await cluster.leaderConnection('startup', 0);
        const res = await produceOnce(conn, 'startup', 0, batch);
        if (res === Errors.NONE.code) return;
      } finally {
        await cluster.close();
      }
    } catch (err) {
      if (Date.now() > deadlineMs) throw err;
    }
    if (Date.now() > deadlineMs) throw new Error(`no acknowledged produce from ${host}:${port}`);
    await sleep(20);
  }
}

async function startSluice(): Promise<Target> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-'));
  const t0 = performance.now();
  // The same process a user starts with `npm start` or the sluice command.
  const cmd = sluiceCommand(['dev', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--override', 'log.level=warn']);
  const child = spawn(cmd.command, cmd.args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  const m = await waitForLine(child, /listening on [A-Z_]+:\/\/([^:,\s]+):(\d+)/, 60_000);
  const host = m[1]!;
  const port = Number(m[2]);
  await firstAcknowledgedProduce(host, port, Date.now() + 60_000);
  const startupMs = performance.now() - t0;
  return {
    name: 'Sluice',
    host,
    port,
    pid: child.pid!,
    startupMs,
    async stop() {
      await stopChild(child);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function kafkaInstalled(): boolean {
  const cache = join(REPO, '.cache');
  return existsSync(cache) && readdirSync(cache).some((d) => d.startsWith('kafka-') && existsSync(join(cache, d, 'libs', '.complete')));
}

function referenceScript(action: 'start' | 'stop', stateDir: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    execFile(
      'bash',
      [join(REPO, 'scripts/kafka-reference.sh'), action],
      { env: { ...process.env, KAFKA_REFERENCE_STATE: stateDir } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolveRun({ stdout, stderr })),
    );
  });
}

/** Apache Kafka, one KRaft node; start-up counts the JVM start only (storage format excluded). */
async function startKafka(): Promise<Target> {
  const stateDir = await mkdtemp(join(tmpdir(), 'kafka-bench-'));
  const t0 = performance.now();
  const { stdout, stderr } = await referenceScript('start', stateDir);
  const [host, port] = stdout.trim().split('\n').pop()!.split(':') as [string, string];
  await firstAcknowledgedProduce(host, Number(port), Date.now() + 60_000);
  const total = performance.now() - t0;
  const formatMs = Number(/format (\d+) ms/.exec(stderr)?.[1] ?? 0);
  const pid = Number((await readFile(join(stateDir, 'pid'), 'utf8')).trim());
  return {
    name: 'Kafka',
    host,
    port: Number(port),
    pid,
    startupMs: total - formatMs,
    async stop() {
      await referenceScript('stop', stateDir).catch(() => undefined);
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

interface NullServer {
  /** Kafka ports: appending through a write stream, and appending in place. */
  ports: [number, number];
  copyPort: number;
  /** Drops what the null server appended so far (its file would otherwise grow each round). */
  truncate(): Promise<void>;
  stop(): Promise<void>;
}

async function startNullServer(dir: string): Promise<NullServer> {
  // The broker's own Node flags: the ceiling runs on the same runtime settings.
  const child = spawn(
    process.execPath,
    [...BROKER_NODE_FLAGS, '--import', 'tsx', join(REPO, 'scripts/bench/null-server.ts'), '--file', join(dir, 'null-frames.bin')],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const m = await waitForLine(child, /null-server ports (\d+) (\d+) (\d+)/, 30_000);
  const file = join(dir, 'null-frames.bin');
  return {
    ports: [Number(m[1]), Number(m[2])],
    copyPort: Number(m[3]),
    truncate: async () => {
      for (const suffix of ['.stream', '.inplace']) await truncate(file + suffix, 0).catch(() => undefined);
    },
    stop: () => stopChild(child),
  };
}

// ---------------------------------------------------------------------------------------
// Requests

async function produceOnce(conn: KafkaConnection, topic: string, partition: number, records: Buffer): Promise<number> {
  const version = conn.version(ApiKey.Produce);
  return produceError(await conn.sendEncoded(ApiKey.Produce, version, produceBody(topic, partition, records, version)), version);
}

/**
 * Creates the topics (existing ones are fine) and waits until Metadata shows their leaders;
 * with `untilServed`, also until each leader answers ListOffsets for every partition.
 */
export async function createTopics(
  cluster: KafkaCluster,
  names: readonly string[],
  numPartitions: number,
  untilServed = true,
): Promise<void> {
  const conn = await cluster.anyConnection();
  const res = await conn.send<CreateTopicsResponse>(
    ApiKey.CreateTopics,
    makeCreateTopicsRequest({
      timeoutMs: 120_000,
      topics: names.map((name) => makeCreateTopicsRequestCreatableTopic({ name, numPartitions, replicationFactor: 1 })),
    }),
    conn.version(ApiKey.CreateTopics, 7),
  );
  for (const t of res.topics) {
    if (t.errorCode !== Errors.NONE.code && t.errorCode !== Errors.TOPIC_ALREADY_EXISTS.code) {
      throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ''}`);
    }
  }
  // Leaders are elected asynchronously in Kafka: wait until Metadata shows them.
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const leaders = await cluster.leaders(names);
    const elected = names.every((n) => (leaders.get(n)?.size ?? 0) === numPartitions && [...leaders.get(n)!.values()].every((l) => l >= 0));
    if (elected && !untilServed) return;
    if (elected) {
      const all = names.flatMap((topic) => Array.from({ length: numPartitions }, (_, partition) => ({ topic, partition })));
      if (
        await listOffsets(cluster, all).then(
          () => true,
          () => false,
        )
      )
        return;
    }
    await sleep(100);
  }
  throw new Error(`no leaders for ${names.join(',')}`);
}

// ---------------------------------------------------------------------------------------
// Loads

export interface Throughput {
  bytes: number;
  seconds: number;
  mibPerS: number;
}

/** Pipelined produce over several connections; counts batch bytes acknowledged after the warm-up. */
export async function produceLoad(
  host: string,
  port: number,
  partitions: number,
  options: ConnectionOptions = {},
): Promise<Throughput & { errors: number }> {
  const batch = await buildBatch(64, 1024 - 10);
  const conns = await Promise.all(Array.from({ length: PRODUCE_CONNECTIONS }, () => KafkaConnection.connect(host, port, options)));
  const version = conns[0]!.version(ApiKey.Produce);
  const bodies = Array.from({ length: partitions }, (_, p) => produceBody(TOPIC, p, batch, version));
  const start = performance.now();
  const measureFrom = start + PRODUCE_WARMUP_MS;
  const end = measureFrom + PRODUCE_MS;
  let measuredBytes = 0;
  let totalBytes = 0;
  let errors = 0;
  let firstError = 0;
  let measuredEnd = measureFrom;
  await Promise.all(
    conns.map(
      (conn, c) =>
        new Promise<void>((done, fail) => {
          let inFlight = 0;
          let next = c;
          const pump = (): void => {
            while (inFlight < PRODUCE_IN_FLIGHT && performance.now() < end && totalBytes < PRODUCE_MAX_BYTES) {
              inFlight++;
              totalBytes += batch.length;
              const body = bodies[next++ % partitions]!;
              conn.sendEncoded(ApiKey.Produce, version, body).then((res) => {
                inFlight--;
                const err = produceError(res, version);
                if (err !== 0) {
                  errors++;
                  firstError ||= err;
                }
                const now = performance.now();
                if (err === 0 && now >= measureFrom && now <= end) {
                  measuredBytes += batch.length;
                  measuredEnd = now;
                }
                pump();
              }, fail);
            }
            if (inFlight === 0) done();
          };
          pump();
        }),
    ),
  );
  for (const c of conns) c.close();
  if (errors > 0) process.stderr.write(`  produce to ${host}:${port}: ${errors} errors (first: ${firstError})\n`);
  const seconds = (measuredEnd - measureFrom) / 1000;
  return { bytes: measuredBytes, seconds, mibPerS: measuredBytes / MIB / seconds, errors };
}

/** Where each partition's fetched bytes go on the first (unmeasured) pass. */
type Sink = ((partition: number, bytes: Buffer) => Promise<void>) | null;

/** Reads every partition from offset 0 to its high watermark, one connection per partition. */
export async function fetchLoad(
  cluster: KafkaCluster,
  partitions: number,
  sink: Sink,
  options: ConnectionOptions = {},
): Promise<Throughput> {
  const ends = await listOffsets(
    cluster,
    Array.from({ length: partitions }, (_, partition) => ({ topic: TOPIC, partition })),
  );
  const conns = await Promise.all(
    Array.from({ length: partitions }, async (_, p) => {
      const leader = await cluster.leaderConnection(TOPIC, p);
      return KafkaConnection.connect(leader.host, leader.port, options);
    }),
  );
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(
    conns.map(async (conn, p) => {
      const end = ends.get(tpKey(TOPIC, p))!;
      let offset = 0;
      let partitionBytes = 0;
      while (offset < end && partitionBytes < FETCH_TOTAL_BYTES / partitions) {
        const { records, nextOffset, wholeBytes } = await fetchOnce(conn, TOPIC, p, offset, FETCH_MAX_BYTES);
        if (nextOffset <= offset) throw new Error(`fetch ${TOPIC}-${p}@${offset} made no progress`);
        bytes += wholeBytes;
        partitionBytes += wholeBytes;
        if (sink !== null) await sink(p, records.subarray(0, wholeBytes));
        offset = nextOffset;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  for (const c of conns) c.close();
  return { bytes, seconds, mibPerS: bytes / MIB / seconds };
}

/** The raw ceiling: the same bytes, one file per partition, copied file-to-socket in parallel. */
async function rawCopy(copyPort: number, files: readonly string[]): Promise<Throughput> {
  let bytes = 0;
  const t0 = performance.now();
  await Promise.all(
    files.map(
      (file) =>
        new Promise<void>((done, fail) => {
          const socket = netConnect({ host: '127.0.0.1', port: copyPort });
          const name = Buffer.from(file);
          const head = Buffer.alloc(2);
          head.writeUInt16BE(name.length);
          socket.on('connect', () => socket.write(Buffer.concat([head, name])));
          socket.on('data', (d: Buffer) => {
            bytes += d.length;
          });
          socket.on('end', () => done());
          socket.on('error', fail);
        }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { bytes, seconds, mibPerS: bytes / MIB / seconds };
}

interface Latency {
  p50Ms: number;
  p99Ms: number;
  samples: number;
}

function percentiles(samples: number[]): Latency {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { p50Ms: at(0.5), p99Ms: at(0.99), samples: s.length };
}

/** Calls `send(i)` LATENCY_RATE_PER_S times a second for LATENCY_MS, on a fixed schedule. */
async function atFixedRate(send: (i: number) => void): Promise<number> {
  const count = Math.floor((LATENCY_MS / 1000) * LATENCY_RATE_PER_S);
  const intervalMs = 1000 / LATENCY_RATE_PER_S;
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = t0 + i * intervalMs - performance.now();
    if (wait > 0) await sleep(wait);
    send(i);
  }
  return count;
}

/** The ceiling: a produce round trip to the null server, at the same rate. */
async function pingPong(port: number): Promise<Latency> {
  const conn = await KafkaConnection.connect('127.0.0.1', port);
  const version = conn.version(ApiKey.Produce);
  const body = produceBody(TOPIC, 0, await buildBatch(1, 100), version);
  const samples: number[] = [];
  const pending: Promise<void>[] = [];
  await atFixedRate(() => {
    const t = performance.now();
    pending.push(
      conn.sendEncoded(ApiKey.Produce, version, body).then(() => {
        samples.push(performance.now() - t);
      }),
    );
  });
  await Promise.all(pending);
  conn.close();
  return percentiles(samples);
}

/** Produce one small record at a time on a fixed schedule; a long-polling consumer timestamps arrivals. */
async function produceToConsume(cluster: KafkaCluster): Promise<Latency> {
  const topic = 'latency';
  await createTopics(cluster, [topic], 1);
  const leader = await cluster.leaderConnection(topic, 0);
  const producer = await KafkaConnection.connect(leader.host, leader.port);
  const consumer = await KafkaConnection.connect(leader.host, leader.port);
  const start = (await listOffsets(cluster, [{ topic, partition: 0 }])).get(tpKey(topic, 0))!;
  const version = producer.version(ApiKey.Produce);
  const sentAt = new Map<number, number>();
  const samples: number[] = [];
  let expected = Infinity;
  let stop = false;
  const consuming = (async () => {
    let offset = start;
    while (!stop && samples.length < expected) {
      const res = await consumer.send<FetchResponse>(
        ApiKey.Fetch,
        makeFetchRequest({
          replicaId: -1,
          maxWaitMs: 500,
          minBytes: 1,
          maxBytes: MIB,
          isolationLevel: 0,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [
            makeFetchRequestFetchTopic({
              topic,
              partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: BigInt(offset), partitionMaxBytes: MIB })],
            }),
          ],
        }),
        consumer.version(ApiKey.Fetch, 12),
      );
      const now = performance.now();
      const records = res.responses[0]?.partitions[0]?.records ?? Buffer.alloc(0);
      let at = 0;
      while (at < records.length) {
        const size = validateBatchAt(records, at, records.length, false);
        const batch = new RecordBatch(records, at);
        at += size;
        for (const r of await readRecords(batch)) {
          if (r.offset < offset) continue;
          const seq = r.value!.readUInt32BE(0);
          const t = sentAt.get(seq);
          if (t !== undefined) samples.push(now - t);
          offset = r.offset + 1;
        }
      }
    }
  })();
  const value = Buffer.alloc(100);
  const bodies: Promise<unknown>[] = [];
  expected = await atFixedRate((i) => {
    value.writeUInt32BE(i, 0);
    const batch = new RecordBatchBuilder().add({ value, timestamp: Date.now() });
    sentAt.set(i, performance.now());
    bodies.push(batch.build().then((b) => producer.sendEncoded(ApiKey.Produce, version, produceBody(topic, 0, b, version))));
  });
  await Promise.all(bodies);
  const deadline = sleep(10_000).then(() => {
    stop = true;
  });
  await Promise.race([consuming, deadline]);
  stop = true;
  producer.close();
  consumer.close();
  await consuming.catch(() => undefined);
  return percentiles(samples);
}

/** RSS before and after creating 10,000 partitions (100 topics of 100). */
async function memoryWithPartitions(
  cluster: KafkaCluster,
  pid: number,
): Promise<{ beforeKiB: number; afterKiB: number; createMs: number }> {
  const beforeKiB = await rssKiB(pid);
  const t0 = performance.now();
  const topics = Array.from({ length: MEMORY_PARTITIONS / 100 }, (_, i) => `mem-${String(i).padStart(3, '0')}`);
  for (let i = 0; i < topics.length; i += 10) await createTopics(cluster, topics.slice(i, i + 10), 100, false);
  const createMs = performance.now() - t0;
  const metadata = await cluster.metadata(topics);
  const partitions = metadata.topics.reduce((n, t) => n + (t.errorCode === 0 ? t.partitions.length : 0), 0);
  if (partitions !== MEMORY_PARTITIONS) throw new Error(`Metadata shows ${partitions} of ${MEMORY_PARTITIONS} partitions`);
  await sleep(2000);
  return { beforeKiB, afterKiB: await rssKiB(pid), createMs };
}

/** Milliseconds per Fetch of every partition of WIDE_TOPIC, each holding one 200-byte record. */
async function wideFetch(cluster: KafkaCluster): Promise<number> {
  await createTopics(cluster, [WIDE_TOPIC], WIDE_PARTITIONS);
  const leader = await cluster.leaderConnection(WIDE_TOPIC, 0);
  const conn = await KafkaConnection.connect(leader.host, leader.port);
  try {
    const batch = await buildBatch(1, 200);
    for (let p = 0; p < WIDE_PARTITIONS; p++) {
      const error = await produceOnce(conn, WIDE_TOPIC, p, batch);
      if (error !== 0) throw new Error(`produce to ${WIDE_TOPIC}-${p}: error ${error}`);
    }
    const request = makeFetchRequest({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 64 * MIB,
      topics: [
        makeFetchRequestFetchTopic({
          topic: WIDE_TOPIC,
          partitions: Array.from({ length: WIDE_PARTITIONS }, (_, partition) =>
            makeFetchRequestFetchPartition({ partition, fetchOffset: 0n, partitionMaxBytes: MIB }),
          ),
        }),
      ],
    });
    const version = conn.version(ApiKey.Fetch, 12);
    const fetchAll = async (): Promise<void> => {
      const res = await conn.send<FetchResponse>(ApiKey.Fetch, request, version);
      const partitions = res.responses.flatMap((t) => t.partitions);
      if (partitions.length !== WIDE_PARTITIONS || partitions.some((p) => p.errorCode !== 0 || (p.records?.length ?? 0) === 0)) {
        throw new Error(`a wide fetch did not return every partition's batch`);
      }
    };
    for (let i = 0; i < WIDE_FETCHES / 10; i++) await fetchAll();
    const t0 = performance.now();
    for (let i = 0; i < WIDE_FETCHES; i++) await fetchAll();
    return (performance.now() - t0) / WIDE_FETCHES;
  } finally {
    conn.close();
  }
}

// ---------------------------------------------------------------------------------------
// The run

interface BrokerFigures {
  startupMs: number;
  produce?: Throughput;
  produceCeiling?: Throughput;
  fetch?: Throughput;
  fetchCeiling?: Throughput;
  latency?: Latency;
  latencyCeiling?: Latency;
  memory?: { beforeKiB: number; afterKiB: number; createMs: number };
  wideFetchMs?: number;
}

const faster = (a: Throughput | undefined, b: Throughput): Throughput => (a === undefined || b.mibPerS > a.mibPerS ? b : a);

/**
 * Each load runs right after its ceiling, and the throughput loads alternate with theirs for
 * MEASURE_ROUNDS rounds (best of each), so that a busy machine skews both sides alike.
 */
async function measureBroker(target: Target, nullServer: NullServer, workDir: string): Promise<BrokerFigures> {
  const figures: BrokerFigures = { startupMs: target.startupMs };
  const cluster = new KafkaCluster([`${target.host}:${target.port}`]);
  // A failed stage is reported and the next one still runs.
  const stage = async (name: string, run: () => Promise<void>): Promise<void> => {
    if (!wanted(name) && !(name === 'produce' && wanted('fetch'))) return;
    process.stderr.write(`  ${target.name}: ${name}\n`);
    try {
      await run();
    } catch (err) {
      process.stderr.write(`  ${target.name}: ${name} failed: ${(err as Error).stack}\n`);
    }
  };
  try {
    await createTopics(cluster, [TOPIC], PRODUCE_PARTITIONS);
    await stage('produce', async () => {
      // Each load writes gigabytes: each starts from the same page cache state.
      for (let round = 0; round < MEASURE_ROUNDS; round++) {
        for (const port of nullServer.ports) {
          settlePageCache();
          figures.produceCeiling = faster(figures.produceCeiling, await produceLoad('127.0.0.1', port, PRODUCE_PARTITIONS));
          await nullServer.truncate();
        }
        settlePageCache();
        figures.produce = faster(figures.produce, await produceLoad(target.host, target.port, PRODUCE_PARTITIONS));
      }
    });
    await stage('fetch', async () => {
      const dir = join(workDir, `${target.name}-copy`);
      await mkdir(dir, { recursive: true });
      const files = Array.from({ length: PRODUCE_PARTITIONS }, (_, p) => join(dir, `p${p}.bin`));
      const handles = await Promise.all(files.map((f) => open(f, 'w')));
      // The first pass warms the log and writes the same bytes for the raw copy.
      await fetchLoad(cluster, PRODUCE_PARTITIONS, async (p, bytes) => {
        await handles[p]!.write(bytes);
      });
      await Promise.all(handles.map((h) => h.close()));
      for (let round = 0; round < MEASURE_ROUNDS; round++) {
        figures.fetchCeiling = faster(figures.fetchCeiling, await rawCopy(nullServer.copyPort, files));
        figures.fetch = faster(figures.fetch, await fetchLoad(cluster, PRODUCE_PARTITIONS, null));
      }
      await rm(dir, { recursive: true, force: true });
    });
    await stage('latency', async () => {
      // The gigabytes the produce stage left dirty in the page cache are written back first,
      // so the latency figures measure the broker rather than the disk catching up.
      settlePageCache();
      figures.latencyCeiling = await pingPong(nullServer.ports[1]);
      figures.latency = await produceToConsume(cluster);
    });
    await stage('wide', async () => {
      figures.wideFetchMs = await wideFetch(cluster);
    });
    await stage('memory', async () => {
      figures.memory = await memoryWithPartitions(cluster, target.pid);
    });
  } finally {
    await cluster.close();
  }
  return figures;
}

const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || !Number.isFinite(a / b) ? 'n/a' : (a / b).toFixed(2);
const mib = (t: Throughput | undefined): string =>
  t === undefined ? 'n/a' : `${t.mibPerS.toFixed(0)} MiB/s (${(t.bytes / MIB).toFixed(0)} MiB in ${t.seconds.toFixed(1)} s)`;
const ms = (v: number | undefined): string => (v === undefined ? 'n/a' : `${v.toFixed(2)} ms`);
const mem = (m: BrokerFigures['memory']): string =>
  m === undefined
    ? 'n/a'
    : `${(m.afterKiB / 1024).toFixed(0)} MiB RSS (${(m.beforeKiB / 1024).toFixed(0)} MiB before; created in ${(m.createMs / 1000).toFixed(1)} s)`;

function report(results: Map<string, BrokerFigures>): void {
  const lines: string[] = ['', '== ratios against ceilings measured in this run'];
  for (const [name, f] of results) {
    lines.push(`${name}:`);
    if (f.produce)
      lines.push(`  produce ingest      ${ratio(f.produce.mibPerS, f.produceCeiling?.mibPerS)} of the null server (target >= 0.70)`);
    if (f.fetch)
      lines.push(`  fetch egress        ${ratio(f.fetch.mibPerS, f.fetchCeiling?.mibPerS)} of a raw file-to-socket copy (target >= 0.90)`);
    if (f.latency) {
      lines.push(
        `  produce->consume    p50 ${ratio(f.latency.p50Ms, f.latencyCeiling?.p50Ms)}x, p99 ${ratio(f.latency.p99Ms, f.latencyCeiling?.p99Ms)}x a raw ping-pong`,
      );
    }
  }
  const sluice = results.get('Sluice');
  const kafka = results.get('Kafka');
  if (sluice && kafka) {
    lines.push('', '== Sluice / Kafka');
    lines.push(`  produce throughput  ${ratio(sluice.produce?.mibPerS, kafka.produce?.mibPerS)}`);
    lines.push(`  fetch throughput    ${ratio(sluice.fetch?.mibPerS, kafka.fetch?.mibPerS)}`);
    lines.push(`  latency p50         ${ratio(sluice.latency?.p50Ms, kafka.latency?.p50Ms)}`);
    lines.push(`  latency p99         ${ratio(sluice.latency?.p99Ms, kafka.latency?.p99Ms)}`);
    lines.push(`  start-up            ${ratio(sluice.startupMs, kafka.startupMs)}`);
    lines.push(`  RSS, 10k partitions ${ratio(sluice.memory?.afterKiB, kafka.memory?.afterKiB)}`);
    lines.push(`  wide fetch time     ${ratio(sluice.wideFetchMs, kafka.wideFetchMs)}`);
  }
  lines.push('', '== absolute');
  for (const [name, f] of results) {
    lines.push(`${name}:`);
    lines.push(`  start-up to first acknowledged produce  ${ms(f.startupMs)}`);
    lines.push(`  produce             ${mib(f.produce)}; null server ${mib(f.produceCeiling)}`);
    lines.push(`  fetch               ${mib(f.fetch)}; raw copy of the same bytes ${mib(f.fetchCeiling)}`);
    if (f.latency)
      lines.push(
        `  produce->consume    p50 ${ms(f.latency.p50Ms)}, p99 ${ms(f.latency.p99Ms)} (${f.latency.samples} records at ${LATENCY_RATE_PER_S}/s)`,
      );
    if (f.latencyCeiling)
      lines.push(
        `  raw ping-pong       p50 ${ms(f.latencyCeiling.p50Ms)}, p99 ${ms(f.latencyCeiling.p99Ms)} (${f.latencyCeiling.samples} at ${LATENCY_RATE_PER_S}/s)`,
      );
    lines.push(`  memory              ${mem(f.memory)}`);
    lines.push(`  wide fetch          ${ms(f.wideFetchMs)} per fetch of ${WIDE_PARTITIONS} partitions of one small batch each`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

async function main(): Promise<void> {
  const workDir = await mkdtemp(join(tmpdir(), 'broker-bench-'));
  const nullServer = await startNullServer(workDir);
  const results = new Map<string, BrokerFigures>();
  const targets: (() => Promise<Target>)[] = [startSluice];
  const withKafka = !argv.includes('--no-kafka') && (argv.includes('--kafka') || kafkaInstalled());
  if (withKafka) targets.push(startKafka);
  try {
    for (const start of targets) {
      let target: Target;
      try {
        // Start-up is measured warm: a start right after another bench dropped the page cache
        // would time reading the runtime's files from disk (both brokers took over 2 s).
        await (await start()).stop();
        target = await start();
      } catch (err) {
        process.stderr.write(`  ${start === startSluice ? 'Sluice' : 'Kafka'} did not start: ${(err as Error).message.split('\n')[0]}\n`);
        continue;
      }
      try {
        results.set(target.name, await measureBroker(target, nullServer, workDir));
      } catch (err) {
        process.stderr.write(`  ${target.name}: ${(err as Error).stack}\n`);
      } finally {
        await target.stop();
      }
    }
  } finally {
    await nullServer.stop();
    await rm(workDir, { recursive: true, force: true });
  }
  report(results);
}

// Other benches import the loads; only running this file measures.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
