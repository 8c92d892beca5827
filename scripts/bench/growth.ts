// How costs grow on one node, each figure first as a ratio to the same measure on an empty
// broker in the same run (or to its target), then the absolute numbers:
//   log          one partition written to 20 GiB in 20 MiB segments (log.segment.bytes: about
//                1,000 segments), with pre-encoded 64 KiB batches of 1 KiB records pipelined
//                over 4 connections, once 1 GiB to another topic has warmed the broker. Its
//                ceiling, measured first in the same run: the same bytes written in place
//                (writeSync) into 20 MiB files, GiB by GiB the same way. Each GiB starts with
//                the page cache written back and dropped (measure.ts, settlePageCache). The
//                figure is the broker's throughput over the ceiling's at the same GiB, the last
//                GiB's against the first's, and the broker's user CPU per GiB (its own work;
//                system time holds the kernel's page cache work). Fetch: the newest GiB read back once the log holds 1 GiB and again at 20
//                GiB (best of 3), and the oldest GiB at 20 GiB (1,000 segments back, from disk
//                once the page cache is dropped). Broker RSS at 1 and at 20 GiB.
//                Target: within 10 % (ratio >= 0.9), memory flat.
//   partitions   100,000 partitions (100 topics of 1,000, created 9,000 at a time) on a fresh
//                node: resident memory per idle partition, (RSS after - RSS before) / partitions,
//                against the target of 20 KiB; the time to create them; the node's restart
//                time with them.
//   connections  10,000 client connections to a fresh node, each having negotiated ApiVersions
//                and asked for Metadata, then held idle: resident memory per connection.
// Broker CPU seconds (utime + stime from /proc) are given beside each load.
// Run: node --import tsx scripts/bench/growth.ts [--gib=20] [--partitions=100000]
//      [--connections=10000] [--only=log,partitions,connections]
// (--gib=2 --partitions=10000 --connections=1000 is a smoke run of about a minute.)
import { closeSync, openSync, readdirSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKey } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../protocol/messages/metadata.ts';
import { KafkaConnection } from '../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../test/helpers/broker-process.ts';
import { cpuSeconds, cpuTimes, settlePageCache } from './measure.ts';
import { GIB, MIB, buildBatch, fetchOnce, produceBody, produceError, rssKiB, sleep } from './requests.ts';

const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number =>
  Number(argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const only = argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (figure: string): boolean => only === undefined || only.includes(figure);

const LOG_GIB = option('gib', 20);
const SEGMENT_BYTES = 20 * MIB;
const PRODUCE_CONNECTIONS = 4;
const PRODUCE_IN_FLIGHT = 4;
const BATCH_RECORDS = 64;
const RECORD_VALUE_BYTES = 1024 - 10;
const FETCH_MAX_BYTES = 8 * MIB;
const PARTITIONS = option('partitions', 100_000);
const PARTITIONS_PER_TOPIC = 1000;
/** Kafka's controller writes at most 10,000 records per operation (a topic's record and its partitions'); so does Sluice's. */
const PARTITIONS_PER_REQUEST = 9000;
const CONNECTIONS = option('connections', 10_000);
const PARTITION_TARGET_BYTES = 20 * 1024;
/** What settles after a load before memory is read: timers, lazily opened files, the collector. */
const SETTLE_MS = 3000;

const TOPIC = 'growth';
const WARMUP_TOPIC = 'growth-warmup';

async function startBroker(overrides: Record<string, string | number> = {}): Promise<BrokerProcess> {
  return spawnBroker({ overrides: { 'log.level': 'warn', ...overrides }, readyTimeoutMs: 300_000 });
}

async function createTopics(conn: KafkaConnection, names: readonly string[], numPartitions: number): Promise<void> {
  const res = await conn.send<CreateTopicsResponse>(
    ApiKey.CreateTopics,
    makeCreateTopicsRequest({
      timeoutMs: 600_000,
      topics: names.map((name) => makeCreateTopicsRequestCreatableTopic({ name, numPartitions, replicationFactor: 1 })),
    }),
    conn.version(ApiKey.CreateTopics, 7),
  );
  for (const t of res.topics) {
    if (t.errorCode !== Errors.NONE.code) throw new Error(`CreateTopics ${t.name}: error ${t.errorCode} ${t.errorMessage ?? ''}`);
  }
}

/** Partitions of `names` that Metadata shows with a leader. */
async function ledPartitions(conn: KafkaConnection, names: readonly string[]): Promise<number> {
  const res = await conn.send<MetadataResponse>(
    ApiKey.Metadata,
    makeMetadataRequest({ topics: names.map((name) => makeMetadataRequestTopic({ name })) }),
    conn.version(ApiKey.Metadata, 9),
  );
  return res.topics.reduce((n, t) => n + (t.errorCode === 0 ? t.partitions.filter((p) => p.leaderId >= 0).length : 0), 0);
}

async function waitForLeaders(conn: KafkaConnection, names: readonly string[], partitions: number): Promise<void> {
  const deadline = Date.now() + 600_000;
  while ((await ledPartitions(conn, names)) < partitions) {
    if (Date.now() > deadline) throw new Error(`no leaders for ${partitions} partitions of ${names.length} topics`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------
// log

interface LogFigures {
  /** MiB/s over each GiB written, in order: the raw ceiling's, then the broker's. */
  rawPerGiB: number[];
  producePerGiB: number[];
  produceCpuSecondsPerGiB: number[];
  produceUserCpuSecondsPerGiB: number[];
  newestAtStart: number;
  newestAtEnd: number;
  oldestAtEnd: number;
  rssAtStartKiB: number;
  rssAtEndKiB: number;
  segments: number;
}

/** The ceiling: the bench's batch written in place into 20 MiB files, GiB by GiB; MiB/s per GiB. */
async function rawCeiling(batch: Buffer, gib: number): Promise<number[]> {
  const dir = await mkdtemp(join(tmpdir(), 'growth-raw-'));
  const perGiB: number[] = [];
  try {
    const perFile = Math.floor(SEGMENT_BYTES / batch.length);
    let fd = -1;
    let inFile = perFile;
    let files = 0;
    for (let k = 0; k < gib; k++) {
      const t0 = performance.now();
      for (let written = 0; written < GIB; written += batch.length) {
        if (inFile === perFile) {
          if (fd >= 0) closeSync(fd);
          fd = openSync(join(dir, `${String(files++).padStart(20, '0')}.log`), 'w');
          inFile = 0;
        }
        writeSync(fd, batch);
        inFile++;
      }
      perGiB.push(1024 / ((performance.now() - t0) / 1000));
      settlePageCache();
    }
    if (fd >= 0) closeSync(fd);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return perGiB;
}

/**
 * Produces pipelined batches to partition 0 until `untilBytes` are acknowledged, calling
 * `atGiB(k)` each time the k-th GiB is acknowledged (the load pauses while it runs).
 */
async function produceUntil(
  broker: BrokerProcess,
  topic: string,
  untilBytes: number,
  atGiB: (k: number, msSinceLast: number) => Promise<void>,
): Promise<void> {
  const batch = await buildBatch(BATCH_RECORDS, RECORD_VALUE_BYTES);
  const conns = await Promise.all(Array.from({ length: PRODUCE_CONNECTIONS }, () => KafkaConnection.connect(broker.host, broker.port)));
  const version = conns[0]!.version(ApiKey.Produce);
  const body = produceBody(topic, 0, batch, version);
  let sent = 0;
  let acked = 0;
  let nextGiB = 1;
  let last = performance.now();
  try {
    while (acked < untilBytes) {
      const stopAt = Math.min(untilBytes, nextGiB * GIB);
      // One GiB at a time, so that the figures taken between GiBs see a quiet broker.
      await Promise.all(
        conns.map(async (conn) => {
          const inFlight: Promise<void>[] = [];
          const one = async (): Promise<void> => {
            const err = produceError(await conn.sendEncoded(ApiKey.Produce, version, body), version);
            if (err !== Errors.NONE.code) throw new Error(`produce: error ${err}`);
            acked += batch.length;
          };
          while (sent < stopAt) {
            sent += batch.length;
            inFlight.push(one());
            if (inFlight.length >= PRODUCE_IN_FLIGHT) await inFlight.shift();
          }
          await Promise.all(inFlight);
        }),
      );
      const now = performance.now();
      await atGiB(nextGiB, now - last);
      settlePageCache();
      nextGiB++;
      last = performance.now();
    }
  } finally {
    for (const c of conns) c.close();
  }
}

/** Reads `bytes` of partition 0 from `fromOffset` on one connection; MiB/s. */
async function fetchRange(broker: BrokerProcess, fromOffset: number, bytes: number): Promise<number> {
  const conn = await KafkaConnection.connect(broker.host, broker.port);
  try {
    let offset = fromOffset;
    let read = 0;
    const t0 = performance.now();
    while (read < bytes) {
      const { nextOffset, wholeBytes } = await fetchOnce(conn, TOPIC, 0, offset, FETCH_MAX_BYTES);
      if (nextOffset <= offset) break;
      read += wholeBytes;
      offset = nextOffset;
    }
    return read / MIB / ((performance.now() - t0) / 1000);
  } finally {
    conn.close();
  }
}

/** The best of `runs` reads. */
async function bestFetch(broker: BrokerProcess, fromOffset: number, bytes: number, runs = 3): Promise<number> {
  let best = 0;
  for (let i = 0; i < runs; i++) best = Math.max(best, await fetchRange(broker, fromOffset, bytes));
  return best;
}

async function logGrowth(): Promise<LogFigures> {
  const rawPerGiB = await rawCeiling(await buildBatch(BATCH_RECORDS, RECORD_VALUE_BYTES), LOG_GIB);
  process.stderr.write(`  log: raw ceiling ${rawPerGiB.map((x) => x.toFixed(0)).join(' ')} MiB/s per GiB\n`);
  const broker = await startBroker({ 'log.segment.bytes': SEGMENT_BYTES });
  try {
    const admin = await KafkaConnection.connect(broker.host, broker.port);
    await createTopics(admin, [TOPIC, WARMUP_TOPIC], 1);
    await waitForLeaders(admin, [TOPIC, WARMUP_TOPIC], 2);
    admin.close();
    // The first GiB of a fresh process also pays for compiling its hot paths: warm them first.
    await produceUntil(broker, WARMUP_TOPIC, GIB, async () => undefined);
    const batchBytes = (await buildBatch(BATCH_RECORDS, RECORD_VALUE_BYTES)).length;
    const offsetAt = (bytes: number): number => Math.floor(bytes / batchBytes) * BATCH_RECORDS;
    const figures: LogFigures = {
      rawPerGiB,
      producePerGiB: [],
      produceCpuSecondsPerGiB: [],
      produceUserCpuSecondsPerGiB: [],
      newestAtStart: 0,
      newestAtEnd: 0,
      oldestAtEnd: 0,
      rssAtStartKiB: 0,
      rssAtEndKiB: 0,
      segments: 0,
    };
    let cpuBefore = cpuTimes(broker.child.pid!);
    await produceUntil(broker, TOPIC, LOG_GIB * GIB, async (k, ms) => {
      figures.producePerGiB.push(1024 / (ms / 1000));
      const cpu = cpuTimes(broker.child.pid!);
      figures.produceUserCpuSecondsPerGiB.push(cpu.userSeconds - cpuBefore.userSeconds);
      figures.produceCpuSecondsPerGiB.push(cpu.userSeconds + cpu.systemSeconds - cpuBefore.userSeconds - cpuBefore.systemSeconds);
      process.stderr.write(`  log: ${k} GiB, ${figures.producePerGiB.at(-1)!.toFixed(0)} MiB/s\n`);
      if (k === 1) {
        figures.newestAtStart = await bestFetch(broker, 0, GIB);
        await sleep(SETTLE_MS);
        figures.rssAtStartKiB = await rssKiB(broker.child.pid!);
      }
      cpuBefore = cpuTimes(broker.child.pid!);
    });
    figures.newestAtEnd = await bestFetch(broker, offsetAt((LOG_GIB - 1) * GIB), GIB);
    figures.oldestAtEnd = await fetchRange(broker, 0, GIB);
    await sleep(SETTLE_MS);
    figures.rssAtEndKiB = await rssKiB(broker.child.pid!);
    figures.segments = readdirSync(`${broker.dataDir}/${TOPIC}-0`).filter((f) => f.endsWith('.log')).length;
    return figures;
  } finally {
    await broker.cleanup();
  }
}

// ---------------------------------------------------------------------------------------
// partitions

interface PartitionFigures {
  partitions: number;
  beforeKiB: number;
  afterKiB: number;
  createSeconds: number;
  createCpuSeconds: number;
  restartSeconds: number;
  afterRestartKiB: number;
}

async function manyPartitions(): Promise<PartitionFigures> {
  let broker = await startBroker();
  try {
    await sleep(SETTLE_MS);
    const beforeKiB = await rssKiB(broker.child.pid!);
    const conn = await KafkaConnection.connect(broker.host, broker.port, { requestTimeoutMs: 900_000 });
    const topics = Array.from({ length: Math.ceil(PARTITIONS / PARTITIONS_PER_TOPIC) }, (_, i) => `p-${String(i).padStart(4, '0')}`);
    const perRequest = Math.max(1, Math.floor(PARTITIONS_PER_REQUEST / PARTITIONS_PER_TOPIC));
    const cpu0 = cpuSeconds(broker.child.pid!);
    const t0 = performance.now();
    for (let i = 0; i < topics.length; i += perRequest) {
      await createTopics(conn, topics.slice(i, i + perRequest), PARTITIONS_PER_TOPIC);
      process.stderr.write(`  partitions: ${Math.min(i + perRequest, topics.length) * PARTITIONS_PER_TOPIC} requested\n`);
    }
    await waitForLeaders(conn, topics, topics.length * PARTITIONS_PER_TOPIC);
    const createSeconds = (performance.now() - t0) / 1000;
    const createCpuSeconds = cpuSeconds(broker.child.pid!) - cpu0;
    conn.close();
    await sleep(SETTLE_MS);
    const afterKiB = await rssKiB(broker.child.pid!);
    const t1 = performance.now();
    broker = await broker.restart();
    const restartSeconds = (performance.now() - t1) / 1000;
    await sleep(SETTLE_MS);
    const afterRestartKiB = await rssKiB(broker.child.pid!);
    return {
      partitions: topics.length * PARTITIONS_PER_TOPIC,
      beforeKiB,
      afterKiB,
      createSeconds,
      createCpuSeconds,
      restartSeconds,
      afterRestartKiB,
    };
  } finally {
    await broker.cleanup();
  }
}

// ---------------------------------------------------------------------------------------
// connections

interface ConnectionFigures {
  connections: number;
  beforeKiB: number;
  afterKiB: number;
  openSeconds: number;
}

async function manyConnections(): Promise<ConnectionFigures> {
  const broker = await startBroker();
  const conns: KafkaConnection[] = [];
  try {
    const admin = await KafkaConnection.connect(broker.host, broker.port);
    await createTopics(admin, [TOPIC], 1);
    await waitForLeaders(admin, [TOPIC], 1);
    admin.close();
    await sleep(SETTLE_MS);
    const beforeKiB = await rssKiB(broker.child.pid!);
    const t0 = performance.now();
    // A few hundred at a time: a client's connect storm is not what is measured.
    for (let i = 0; i < CONNECTIONS; i += 250) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(250, CONNECTIONS - i) }, async () => {
          const conn = await KafkaConnection.connect(broker.host, broker.port, { requestTimeoutMs: 120_000 });
          await conn.send<MetadataResponse>(
            ApiKey.Metadata,
            makeMetadataRequest({ topics: [makeMetadataRequestTopic({ name: TOPIC })] }),
            conn.version(ApiKey.Metadata, 9),
          );
          return conn;
        }),
      );
      conns.push(...batch);
    }
    const openSeconds = (performance.now() - t0) / 1000;
    await sleep(SETTLE_MS);
    return { connections: conns.length, beforeKiB, afterKiB: await rssKiB(broker.child.pid!), openSeconds };
  } finally {
    for (const c of conns) c.close();
    await broker.cleanup();
  }
}

// ---------------------------------------------------------------------------------------
// report

const f = (x: number, digits = 2): string => x.toFixed(digits);

function report(log: LogFigures | null, parts: PartitionFigures | null, conns: ConnectionFigures | null): string {
  const lines = ['', '== ratios'];
  if (log !== null) {
    const vsRaw = log.producePerGiB.map((x, k) => x / log.rawPerGiB[k]!);
    const first = vsRaw[0]!;
    lines.push(
      `  produce / raw write at the same GiB, GiB ${LOG_GIB} vs GiB 1 (target >= 0.9)  ${f(vsRaw.at(-1)! / first)} (lowest GiB ${f(Math.min(...vsRaw) / first)})`,
      `  produce / raw write, per GiB           ${vsRaw.map((x) => f(x)).join(' ')}`,
      `  broker user CPU per GiB, GiB ${LOG_GIB} / GiB 1 (target <= 1.1)  ${f(log.produceUserCpuSecondsPerGiB.at(-1)! / log.produceUserCpuSecondsPerGiB[0]!)}`,
      `  fetch newest GiB, at ${LOG_GIB} GiB / at 1 GiB (target >= 0.9)  ${f(log.newestAtEnd / log.newestAtStart)}`,
      `  fetch oldest GiB at ${LOG_GIB} GiB / newest at 1 GiB           ${f(log.oldestAtEnd / log.newestAtStart)} (may read from disk)`,
      `  RSS at ${LOG_GIB} GiB / at 1 GiB                               ${f(log.rssAtEndKiB / log.rssAtStartKiB)}`,
    );
  }
  if (parts !== null) {
    const perPartition = ((parts.afterKiB - parts.beforeKiB) * 1024) / parts.partitions;
    lines.push(`  memory per idle partition / 20 KiB target (< 1)   ${f(perPartition / PARTITION_TARGET_BYTES)}`);
  }
  lines.push('', '== absolute');
  if (log !== null) {
    const cpu = log.produceCpuSecondsPerGiB;
    lines.push(
      `  log: ${LOG_GIB} GiB in ${log.segments} segments of ${SEGMENT_BYTES / MIB} MiB, one partition`,
      `    raw write MiB/s per GiB   ${log.rawPerGiB.map((x) => f(x, 0)).join(' ')}`,
      `    produce MiB/s per GiB     ${log.producePerGiB.map((x) => f(x, 0)).join(' ')}`,
      `    broker CPU s per GiB      ${cpu.map((x) => f(x)).join(' ')}`,
      `    of which user             ${log.produceUserCpuSecondsPerGiB.map((x) => f(x)).join(' ')}`,
      `    fetch newest GiB          ${f(log.newestAtStart, 0)} MiB/s at 1 GiB, ${f(log.newestAtEnd, 0)} MiB/s at ${LOG_GIB} GiB`,
      `    fetch oldest GiB          ${f(log.oldestAtEnd, 0)} MiB/s at ${LOG_GIB} GiB`,
      `    broker RSS                ${f(log.rssAtStartKiB / 1024, 0)} MiB at 1 GiB, ${f(log.rssAtEndKiB / 1024, 0)} MiB at ${LOG_GIB} GiB`,
    );
  }
  if (parts !== null) {
    const perPartition = ((parts.afterKiB - parts.beforeKiB) * 1024) / parts.partitions;
    lines.push(
      `  partitions: ${parts.partitions} idle`,
      `    RSS                       ${f(parts.beforeKiB / 1024, 0)} MiB before, ${f(parts.afterKiB / 1024, 0)} MiB after: ${f(perPartition / 1024)} KiB per partition`,
      `    created in                ${f(parts.createSeconds, 1)} s (${f(parts.createCpuSeconds, 1)} broker CPU s)`,
      `    restart with them         ready in ${f(parts.restartSeconds, 1)} s, RSS ${f(parts.afterRestartKiB / 1024, 0)} MiB`,
    );
  }
  if (conns !== null) {
    const perConnection = ((conns.afterKiB - conns.beforeKiB) * 1024) / conns.connections;
    lines.push(
      `  connections: ${conns.connections} idle (ApiVersions and Metadata each)`,
      `    RSS                       ${f(conns.beforeKiB / 1024, 0)} MiB before, ${f(conns.afterKiB / 1024, 0)} MiB after: ${f(perConnection / 1024)} KiB per connection`,
      `    opened in                 ${f(conns.openSeconds, 1)} s`,
    );
  }
  return `${lines.join('\n')}\n`;
}

const log = wanted('log') ? await logGrowth() : null;
const parts = wanted('partitions') ? await manyPartitions() : null;
const conns = wanted('connections') ? await manyConnections() : null;
process.stdout.write(report(log, parts, conns));
