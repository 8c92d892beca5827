// Cluster figures on loopback, 3 nodes each (broker and controller in one process), in one run:
//   produce   a fixed count of 1 KiB records (64 a batch, pre-encoded) pipelined over three
//             connections per partition to its leader (6 partitions), records/s and MiB/s:
//             RF 3 acks=all with min.insync.replicas=2, and RF 1 acks=1 on the same cluster
//   latency   produce-to-consume p50/p99 of 1 KiB records at a fixed rate (200/s; one request in
//             flight, records arriving meanwhile go in the next), a long-polling consumer on the
//             leader (RF 3 records are visible once the high watermark passes them)
//   failover  an idempotent acks=all producer sends continuously to an RF 3 partition whose
//             leader is not the active controller; the leader is SIGKILLed: the time from the
//             kill to the first produce acknowledged by another broker. Then the partition is
//             read back (every acknowledged record once, in order) and the victim restarted.
//             Median of a few runs, with Kafka's default failure detection (session 9000 ms,
//             heartbeat 2000 ms, replica lag 30000 ms) and with 3000/500/3000.
// The ceilings, measured in the same run: RF 1 acks=1 on the same cluster for RF 3 acks=all
// (the replication cost), and a 3-node Apache Kafka cluster (scripts/kafka-cluster.sh) under the
// same client and loads, side by side. Then the absolute numbers.
//
// One client for all, Sluice's own protocol codec (src/client): kafkajs encodes every record
// and its CRC in JavaScript and would be the bottleneck on a small machine (the figure would
// measure kafkajs), and its retry back-off (exponential from 300 ms) would add to the failover
// time. Here the load sends pre-encoded batches (a header per request) and the failover
// producer retries every 20 ms, so both brokers see the same, cheap client.
//
// Run: npm run bench:cluster -- [options], or node --import tsx scripts/bench/cluster.ts [--no-kafka] [--quick] [--runs=N] [--no-fast]
//      [--connections=N (per partition, default 3)] [--only=produce,latency,failover]
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors, errorByCode } from '../../protocol/errors.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableReplicaAssignment,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsRequestCreatableTopicConfig,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import {
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
  type DescribeQuorumResponse,
} from '../../protocol/messages/describe-quorum.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../protocol/messages/fetch.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import { makeInitProducerIdRequest, type InitProducerIdResponse } from '../../protocol/messages/init-producer-id.ts';
import type { MetadataResponsePartition } from '../../protocol/messages/metadata.ts';
import { decodeProduceResponse, encodeProduceRequest } from '../../protocol/messages/produce.ts';
import { METADATA_TOPIC } from '../../protocol/internal-topics.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { RecordBatch, validateBatchAt } from '../../protocol/records/batch.ts';
import { RecordBatchBuilder } from '../../protocol/records/builder.ts';
import { readRecords } from '../../protocol/records/record.ts';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { KafkaConnection } from '../../src/client/connection.ts';
import { listOffsets, tpKey } from '../../src/client/offsets.ts';
import { startCluster } from '../../test/helpers/cluster.ts';
import { REPO } from '../../test/helpers/sluice-cli.ts';

const MIB = 1024 * 1024;
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (figure: string): boolean => only === undefined || only.includes(figure);
const FAILOVER_RUNS = Number(argv.find((a) => a.startsWith('--runs='))?.slice('--runs='.length) ?? (quick ? 1 : 3));

/** Every record's value, in every figure. */
const RECORD_BYTES = 1024;
const BATCH_RECORDS = 64;
const PRODUCE_PARTITIONS = 6;
/** Kafka's max.in.flight.requests.per.connection default. */
const PRODUCE_IN_FLIGHT = 5;
/**
 * A broker handles one connection's requests one after another, so an acks=all request holds
 * its connection until replicated: several connections per partition keep the brokers busy
 * rather than measuring one replication round trip per partition.
 */
const PRODUCE_CONNECTIONS_PER_PARTITION = Number(argv.find((a) => a.startsWith('--connections='))?.slice('--connections='.length) ?? 3);
const PRODUCE_RECORDS = quick ? 65_536 : 262_144;
/** Before the measured rounds, each topic takes at least this many records and this long (a JVM compiles its hot paths). */
const WARMUP_RECORDS = 16_384;
const WARMUP_MS = quick ? 3000 : 8000;
/** Throughput loads alternate RF 3 / RF 1 this many times; the best of each counts. */
const MEASURE_ROUNDS = quick ? 1 : 2;
/** Bounds each produce load whatever the speed; a load that hits it says so. */
const PHASE_MAX_MS = 40_000;
const LATENCY_RATE_PER_S = 200;
const LATENCY_RECORDS = quick ? 400 : 1000;
/** Acknowledged produce before the kill. */
const FAILOVER_STEADY_MS = 1500;
/** Produce acknowledged by the new leader before the run ends. */
const FAILOVER_AFTER_ACKS = 50;
const FAILOVER_MAX_MS = 90_000;
const RETRY_BACKOFF_MS = 20;
const PRODUCE_TIMEOUT_MS = 30_000;
const REJOIN_MAX_MS = 90_000;

interface Detection {
  label: string;
  props: Record<string, number>;
}
const KAFKA_DEFAULT_DETECTION: Detection = {
  label: 'session 9000 / heartbeat 2000 / lag 30000 ms (Kafka defaults)',
  props: { 'broker.session.timeout.ms': 9000, 'broker.heartbeat.interval.ms': 2000, 'replica.lag.time.max.ms': 30_000 },
};
const FAST_DETECTION: Detection = {
  label: 'session 3000 / heartbeat 500 / lag 3000 ms',
  props: { 'broker.session.timeout.ms': 3000, 'broker.heartbeat.interval.ms': 500, 'replica.lag.time.max.ms': 3000 },
};

// ---------------------------------------------------------------------------------------
// Clusters

interface Killed {
  /** performance.now() just before the signal. */
  signalledAtMs: number;
  /** Resolves once the process is gone. */
  gone: Promise<void>;
}

interface ClusterTarget {
  readonly name: 'Sluice' | 'Kafka';
  /** host:port of node id i + 1 at index i. */
  readonly addresses: readonly string[];
  readonly nodeIds: readonly number[];
  kill(nodeId: number): Promise<Killed>;
  /** Starts a killed node again from its config and data; resolves when it is up. */
  restart(nodeId: number): Promise<void>;
  stop(): Promise<void>;
}

async function startSluiceCluster(detection: Detection): Promise<ClusterTarget> {
  const cluster = await startCluster({ nodes: 3, overrides: { ...detection.props, 'log.level': 'warn' }, readyTimeoutMs: 120_000 });
  const node = (id: number) => cluster.nodes.find((n) => n.nodeId === id)!;
  return {
    name: 'Sluice',
    addresses: cluster.nodes.map((n) => `${n.host}:${n.port}`),
    nodeIds: cluster.nodes.map((n) => n.nodeId),
    async kill(id) {
      const signalledAtMs = performance.now();
      const exited = node(id).kill('SIGKILL');
      return { signalledAtMs, gone: exited.then(() => undefined) };
    },
    restart: (id) => node(id).start(),
    async stop() {
      await cluster.stopAll(30_000);
      await cluster.cleanup();
    },
  };
}

function kafkaInstalled(): boolean {
  const cache = join(REPO, '.cache');
  return existsSync(cache) && readdirSync(cache).some((d) => d.startsWith('kafka-') && existsSync(join(cache, d, 'libs', '.complete')));
}

function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  // Nobody may have reaped it yet: a zombie is gone for our purposes.
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** scripts/kafka-cluster.sh with its own state dir, so that a cluster someone else runs is left alone. */
async function startKafkaCluster(detection: Detection): Promise<ClusterTarget> {
  const stateDir = await mkdtemp(join(tmpdir(), 'kafka-cluster-bench-'));
  const env = {
    ...process.env,
    KAFKA_CLUSTER_STATE: stateDir,
    KAFKA_CLUSTER_OVERRIDES: Object.entries(detection.props)
      .map(([k, v]) => `${k}=${v}`)
      .join(' '),
  };
  const script = (...args: string[]): Promise<string> =>
    new Promise((resolveRun, reject) => {
      execFile('bash', [join(REPO, 'scripts/kafka-cluster.sh'), ...args], { env }, (err, stdout, stderr) =>
        err ? reject(new Error(`kafka-cluster.sh ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolveRun(stdout),
      );
    });
  let addresses: string[];
  try {
    addresses = (await script('start')).trim().split('\n').pop()!.split(',');
  } catch (err) {
    await script('stop').catch(() => undefined);
    await rm(stateDir, { recursive: true, force: true });
    throw err;
  }
  return {
    name: 'Kafka',
    addresses,
    nodeIds: addresses.map((_, i) => i + 1),
    async kill(id) {
      const pid = Number((await readFile(join(stateDir, `pid-${id}`), 'utf8')).trim());
      const signalledAtMs = performance.now();
      process.kill(pid, 'SIGKILL');
      const gone = (async () => {
        while (!processGone(pid)) await sleep(10);
      })();
      return { signalledAtMs, gone };
    },
    restart: async (id) => {
      await script('start-node', String(id));
    },
    async stop() {
      await script('stop').catch((err: Error) => process.stderr.write(`  ${err.message}\n`));
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------
// Requests

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A record value: its sequence number in the first 4 bytes, then a fixed pattern. */
function recordValue(seq: number): Buffer {
  const value = Buffer.alloc(RECORD_BYTES);
  for (let i = 4; i < value.length; i++) value[i] = (i * 31 + 7) & 0xff;
  value.writeUInt32BE(seq >>> 0, 0);
  return value;
}

function produceBody(topic: string, partition: number, records: Buffer, version: number, acks: number): Buffer {
  const w = new Writer(records.length + 128);
  encodeProduceRequest(
    w,
    {
      transactionalId: null,
      acks,
      timeoutMs: PRODUCE_TIMEOUT_MS,
      topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
    },
    version,
  );
  return w.toBuffer();
}

/** The first error code of a produce response (NONE when every partition succeeded). */
function produceError(body: Buffer, version: number): number {
  const res = decodeProduceResponse(new Reader(body), version);
  for (const t of res.responses) for (const p of t.partitionResponses) if (p.errorCode !== 0) return p.errorCode;
  return Errors.NONE.code;
}

const errorName = (code: number): string => errorByCode(code).name;

async function createTopic(
  admin: KafkaCluster,
  name: string,
  spec: { partitions: number; replicationFactor: number; minInsync: number; leaderFirst?: readonly number[] },
): Promise<void> {
  const conn = await admin.anyConnection();
  const res = await conn.send<CreateTopicsResponse>(
    ApiKey.CreateTopics,
    makeCreateTopicsRequest({
      timeoutMs: 60_000,
      topics: [
        makeCreateTopicsRequestCreatableTopic({
          name,
          // A manual assignment: its first replica is the preferred leader.
          numPartitions: spec.leaderFirst ? -1 : spec.partitions,
          replicationFactor: spec.leaderFirst ? -1 : spec.replicationFactor,
          assignments: spec.leaderFirst
            ? [makeCreateTopicsRequestCreatableReplicaAssignment({ partitionIndex: 0, brokerIds: [...spec.leaderFirst] })]
            : [],
          configs: [makeCreateTopicsRequestCreatableTopicConfig({ name: 'min.insync.replicas', value: String(spec.minInsync) })],
        }),
      ],
    }),
    conn.version(ApiKey.CreateTopics, 7),
  );
  for (const t of res.topics) {
    if (t.errorCode !== Errors.NONE.code) throw new Error(`CreateTopics ${t.name}: ${errorName(t.errorCode)} ${t.errorMessage ?? ''}`);
  }
}

/** The topic's partitions as node `address` sees them (empty while it does not know the topic). */
async function partitionsSeenBy(address: string, topic: string): Promise<MetadataResponsePartition[]> {
  const probe = new KafkaCluster([address], { connectTimeoutMs: 2000, requestTimeoutMs: 10_000 });
  try {
    const t = (await probe.metadata([topic])).topics.find((x) => x.name === topic);
    return t === undefined || t.errorCode !== Errors.NONE.code ? [] : t.partitions;
  } finally {
    await probe.close();
  }
}

/**
 * Waits until every node in `addresses` shows each partition with a leader (`leader` when
 * given) and a full ISR, and the leaders answer ListOffsets.
 */
async function waitForPartitions(
  addresses: readonly string[],
  topic: string,
  partitions: number,
  replicationFactor: number,
  leader?: number,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const views = await Promise.all(addresses.map((a) => partitionsSeenBy(a, topic).catch(() => [])));
    const ready = views.every(
      (ps) =>
        ps.length === partitions &&
        ps.every((p) => p.leaderId >= 0 && (leader === undefined || p.leaderId === leader) && p.isrNodes.length === replicationFactor),
    );
    if (ready) {
      const admin = new KafkaCluster([...addresses]);
      try {
        const all = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
        if (
          await listOffsets(admin, all).then(
            () => true,
            () => false,
          )
        )
          return;
      } finally {
        await admin.close();
      }
    }
    if (Date.now() > deadline)
      throw new Error(`${topic}: no leader${leader === undefined ? '' : ` ${leader}`} with a full ISR on every node`);
    await sleep(100);
  }
}

async function activeController(admin: KafkaCluster): Promise<number> {
  const conn = await admin.anyConnection();
  const res = await conn.send<DescribeQuorumResponse>(
    ApiKey.DescribeQuorum,
    makeDescribeQuorumRequest({
      topics: [
        makeDescribeQuorumRequestTopicData({
          topicName: METADATA_TOPIC,
          partitions: [makeDescribeQuorumRequestPartitionData({ partitionIndex: 0 })],
        }),
      ],
    }),
  );
  return res.topics[0]?.partitions[0]?.leaderId ?? -1;
}

/** Fetches `topic`-0 from `offset` (long-polling up to maxWaitMs); the records' bytes. */
async function fetchRecords(conn: KafkaConnection, topic: string, offset: number, maxWaitMs: number): Promise<Buffer> {
  const res = await conn.send<FetchResponse>(
    ApiKey.Fetch,
    makeFetchRequest({
      replicaId: -1,
      maxWaitMs,
      minBytes: 1,
      maxBytes: 4 * MIB,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        makeFetchRequestFetchTopic({
          topic,
          partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: BigInt(offset), partitionMaxBytes: 4 * MIB })],
        }),
      ],
    }),
    conn.version(ApiKey.Fetch, 12),
  );
  const p = res.responses[0]?.partitions[0];
  if (p === undefined || p.errorCode !== Errors.NONE.code) throw new Error(`fetch ${topic}-0@${offset}: ${errorName(p?.errorCode ?? -1)}`);
  return p.records ?? Buffer.alloc(0);
}

/** The whole batches in `records`: each record's offset and sequence number (the value's first 4 bytes). */
async function decodeSeqs(records: Buffer): Promise<{ offset: number; seq: number }[]> {
  const out: { offset: number; seq: number }[] = [];
  let at = 0;
  while (at + 12 <= records.length && at + 12 + records.readInt32BE(at + 8) <= records.length) {
    const size = validateBatchAt(records, at, records.length, false);
    for (const r of await readRecords(new RecordBatch(records, at))) out.push({ offset: r.offset, seq: r.value!.readUInt32BE(0) });
    at += size;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Loads

interface Throughput {
  records: number;
  bytes: number;
  seconds: number;
  recordsPerS: number;
  mibPerS: number;
  errors: number;
  firstError: string;
  /** The load hit PHASE_MAX_MS before every record was acknowledged. */
  bounded: boolean;
}

/** `records` records of RECORD_BYTES, pipelined over one connection per partition to its leader; a failed request is sent again. */
async function produceLoad(admin: KafkaCluster, topic: string, acks: number, records: number): Promise<Throughput> {
  const leaders = (await admin.leaders([topic])).get(topic)!;
  const builder = new RecordBatchBuilder();
  const value = recordValue(0);
  for (let i = 0; i < BATCH_RECORDS; i++) builder.add({ key: null, value, timestamp: Date.now() });
  const batch = await builder.build();
  const conns = await Promise.all(
    Array.from({ length: PRODUCE_PARTITIONS * PRODUCE_CONNECTIONS_PER_PARTITION }, async (_, c) => {
      const pooled = await admin.brokerConnection(leaders.get(c % PRODUCE_PARTITIONS)!);
      return KafkaConnection.connect(pooled.host, pooled.port);
    }),
  );
  const batches = Math.ceil(records / BATCH_RECORDS);
  let claimed = 0;
  let acked = 0;
  let errors = 0;
  let firstError = '';
  const t0 = performance.now();
  let lastAckMs = t0;
  const deadline = t0 + PHASE_MAX_MS;
  try {
    await Promise.all(
      conns.map(
        (conn, c) =>
          new Promise<void>((done, fail) => {
            const version = conn.version(ApiKey.Produce);
            const body = produceBody(topic, c % PRODUCE_PARTITIONS, batch, version, acks);
            let inFlight = 0;
            const pump = (): void => {
              while (inFlight < PRODUCE_IN_FLIGHT && claimed < batches && performance.now() < deadline) {
                inFlight++;
                claimed++;
                conn.sendEncoded(ApiKey.Produce, version, body).then((res) => {
                  inFlight--;
                  const err = produceError(res, version);
                  if (err === Errors.NONE.code) {
                    acked++;
                    lastAckMs = performance.now();
                  } else {
                    errors++;
                    firstError ||= errorName(err);
                    claimed--;
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
  } finally {
    for (const c of conns) c.close();
  }
  const seconds = (lastAckMs - t0) / 1000;
  const bytes = acked * batch.length;
  return {
    records: acked * BATCH_RECORDS,
    bytes,
    seconds,
    recordsPerS: (acked * BATCH_RECORDS) / seconds,
    mibPerS: bytes / MIB / seconds,
    errors,
    firstError,
    bounded: acked < batches,
  };
}

interface Latency {
  p50Ms: number;
  p99Ms: number;
  samples: number;
  sent: number;
  /** Produce requests the records went in (fewer than records when they queued behind one in flight). */
  requests: number;
  errors: number;
}

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** One record a request at LATENCY_RATE_PER_S; a long-polling consumer on the leader timestamps arrivals. */
async function produceToConsume(admin: KafkaCluster, topic: string, acks: number): Promise<Latency> {
  const leader = await admin.leaderConnection(topic, 0);
  const producer = await KafkaConnection.connect(leader.host, leader.port);
  const consumer = await KafkaConnection.connect(leader.host, leader.port);
  const start = (await listOffsets(admin, [{ topic, partition: 0 }])).get(tpKey(topic, 0))!;
  const version = producer.version(ApiKey.Produce);
  const sentAt: number[] = [];
  const samples: number[] = [];
  let stop = false;
  const consuming = (async () => {
    let offset = start;
    while (!stop && samples.length < LATENCY_RECORDS) {
      const records = await fetchRecords(consumer, topic, offset, 500);
      const now = performance.now();
      for (const r of await decodeSeqs(records)) {
        if (r.offset < offset) continue;
        const t = sentAt[r.seq];
        if (t !== undefined) samples.push(now - t);
        offset = r.offset + 1;
      }
    }
  })();
  // Records arrive on a fixed schedule; as in a Kafka producer's accumulator, those that arrive
  // while a request is in flight go together in the next one (one request in flight: a broker
  // handles a connection's requests one after another, so pipelining would only queue them).
  const intervalMs = 1000 / LATENCY_RATE_PER_S;
  const t0 = performance.now();
  let next = 0;
  let requests = 0;
  let errors = 0;
  while (next < LATENCY_RECORDS) {
    const due = Math.min(LATENCY_RECORDS, Math.floor((performance.now() - t0) / intervalMs) + 1);
    if (due <= next) {
      await sleep(t0 + next * intervalMs - performance.now());
      continue;
    }
    const builder = new RecordBatchBuilder();
    for (let i = next; i < due; i++) {
      builder.add({ key: null, value: recordValue(i), timestamp: Date.now() });
      sentAt[i] = t0 + i * intervalMs;
    }
    next = due;
    const res = await producer.sendEncoded(ApiKey.Produce, version, produceBody(topic, 0, builder.buildUncompressed(), version, acks));
    requests++;
    if (produceError(res, version) !== Errors.NONE.code) errors++;
  }
  await Promise.race([consuming, sleep(10_000)]);
  stop = true;
  producer.close();
  consumer.close();
  await consuming.catch(() => undefined);
  const sorted = samples.sort((a, b) => a - b);
  return {
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    samples: sorted.length,
    sent: LATENCY_RECORDS,
    requests,
    errors,
  };
}

interface FailoverSample {
  victim: number;
  newLeader: number;
  /** SIGKILL to the first produce acknowledged by another broker. */
  failoverMs: number;
  /** SIGKILL to the first Metadata (from a survivor) naming another leader. */
  leaderSeenMs: number;
  /** Restarted victim's ready to its return to the ISR. */
  rejoinMs: number;
  /** The producer's round trip before the kill (one request in flight, one record each). */
  steadyRttMsP50: number;
  acked: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  errors: Map<string, number>;
}

/** An idempotent producer's id and epoch; retried while the broker is not ready to hand one out. */
async function initProducerId(admin: KafkaCluster): Promise<InitProducerIdResponse> {
  const deadline = performance.now() + 60_000;
  for (;;) {
    const res = await (await admin.anyConnection()).send<InitProducerIdResponse>(
      ApiKey.InitProducerId,
      makeInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 }),
    );
    if (res.errorCode === Errors.NONE.code) return res;
    if (!errorByCode(res.errorCode).retriable || performance.now() > deadline)
      throw new Error(`InitProducerId: ${errorName(res.errorCode)}`);
    await sleep(100);
  }
}

/** The leader of `topic`-0 according to the survivors, -1 when none answers. */
async function leaderOf(survivors: KafkaCluster, topic: string): Promise<{ id: number; address: string } | null> {
  try {
    const res = await survivors.metadata([topic]);
    const p = res.topics.find((t) => t.name === topic)?.partitions.find((x) => x.partitionIndex === 0);
    const b = res.brokers.find((x) => x.nodeId === p?.leaderId);
    return p === undefined || b === undefined ? null : { id: p.leaderId, address: `${b.host}:${b.port}` };
  } catch {
    return null;
  }
}

/**
 * A fresh RF 3 topic led by a node that is not the active controller (the figure is a broker's
 * failover, not the controller's), alternating between the two candidates, and a producer id.
 */
async function prepareFailover(
  target: ClusterTarget,
  run: number,
): Promise<{ victim: number; others: number[]; topic: string; init: InitProducerIdResponse }> {
  const admin = new KafkaCluster([...target.addresses]);
  try {
    const controller = await activeController(admin).catch(() => -1);
    const candidates = target.nodeIds.filter((id) => id !== controller);
    const victim = candidates[run % candidates.length]!;
    const others = target.nodeIds.filter((id) => id !== victim);
    const topic = `failover-${run}`;
    await createTopic(admin, topic, { partitions: 1, replicationFactor: 3, minInsync: 2, leaderFirst: [victim, ...others] });
    await waitForPartitions(target.addresses, topic, 1, 3, victim);
    return { victim, others, topic, init: await initProducerId(admin) };
  } finally {
    await admin.close();
  }
}

async function failoverRun(target: ClusterTarget, run: number): Promise<FailoverSample> {
  const { victim, others, topic, init } = await prepareFailover(target, run);
  const survivors = new KafkaCluster(
    others.map((id) => target.addresses[id - 1]!),
    { connectTimeoutMs: 1000 },
  );
  const errors = new Map<string, number>();
  const countError = (name: string): void => {
    errors.set(name, (errors.get(name) ?? 0) + 1);
  };
  let conn: KafkaConnection | null = null;
  let connLeader = -1;
  let seq = 0;
  let body: Buffer | null = null;
  let killed: Killed | null = null;
  let leaderSeenMs = Number.NaN;
  let failoverMs = Number.NaN;
  let newLeader = -1;
  let afterAcks = 0;
  const steadyRttsMs: number[] = [];
  const steadyUntil = performance.now() + FAILOVER_STEADY_MS;
  try {
    while (afterAcks < FAILOVER_AFTER_ACKS) {
      if (killed === null && performance.now() >= steadyUntil) killed = await target.kill(victim);
      if (killed !== null && performance.now() - killed.signalledAtMs > FAILOVER_MAX_MS) {
        throw new Error(`${target.name}: no produce acknowledged by another broker ${FAILOVER_MAX_MS} ms after the kill`);
      }
      try {
        if (conn === null || conn.closed) {
          conn?.close();
          conn = null;
          const leader = killed === null ? { id: victim, address: target.addresses[victim - 1]! } : await leaderOf(survivors, topic);
          if (leader === null) throw new Error('leader unknown');
          if (killed !== null && leader.id !== victim && Number.isNaN(leaderSeenMs)) {
            leaderSeenMs = performance.now() - killed.signalledAtMs;
          }
          const [host, port] = leader.address.split(':') as [string, string];
          conn = await KafkaConnection.connect(host, Number(port), { connectTimeoutMs: 1000, requestTimeoutMs: PRODUCE_TIMEOUT_MS + 5000 });
          connLeader = leader.id;
        }
        const version = conn.version(ApiKey.Produce);
        body ??= produceBody(
          topic,
          0,
          new RecordBatchBuilder({ producerId: init.producerId, producerEpoch: init.producerEpoch, baseSequence: seq })
            .add({ key: null, value: recordValue(seq), timestamp: Date.now() })
            .buildUncompressed(),
          version,
          -1,
        );
        const sentAtMs = performance.now();
        const err = produceError(await conn.sendEncoded(ApiKey.Produce, version, body), version);
        if (err === Errors.NONE.code || err === Errors.DUPLICATE_SEQUENCE_NUMBER.code) {
          if (err !== Errors.NONE.code) countError(errorName(err));
          if (killed === null) steadyRttsMs.push(performance.now() - sentAtMs);
          seq++;
          body = null;
          if (killed !== null && connLeader !== victim) {
            if (afterAcks === 0) {
              failoverMs = performance.now() - killed.signalledAtMs;
              newLeader = connLeader;
            }
            afterAcks++;
          }
          continue;
        }
        countError(errorName(err));
      } catch (err) {
        countError((err as Error).name === 'ConnectionError' ? 'connection' : (err as Error).message.split(':')[0]!);
      }
      // Any failure: find the leader again.
      conn?.close();
      conn = null;
      await sleep(RETRY_BACKOFF_MS);
    }
  } finally {
    conn?.close();
  }
  const check = await readBack(survivors, topic, seq);
  await killed!.gone;
  await target.restart(victim);
  const restartedAt = performance.now();
  const rejoinMs = await untilIsr(target.addresses[others[0]! - 1]!, topic, 3, REJOIN_MAX_MS).then((ok) =>
    ok ? performance.now() - restartedAt : Number.NaN,
  );
  await survivors.close();
  const steadyRttMsP50 = percentile(
    steadyRttsMs.sort((a, b) => a - b),
    0.5,
  );
  return { victim, newLeader, failoverMs, leaderSeenMs, rejoinMs, steadyRttMsP50, acked: seq, ...check, errors };
}

/** Reads the partition to its high watermark: each acknowledged sequence number once, in order. */
async function readBack(
  survivors: KafkaCluster,
  topic: string,
  acked: number,
): Promise<{ lost: number; duplicated: number; outOfOrder: number }> {
  const end = (await listOffsets(survivors, [{ topic, partition: 0 }])).get(tpKey(topic, 0))!;
  const leader = await survivors.leaderConnection(topic, 0);
  const seen = new Map<number, number>();
  let outOfOrder = 0;
  let last = -1;
  let offset = 0;
  while (offset < end) {
    const got = await decodeSeqs(await fetchRecords(leader, topic, offset, 0));
    if (got.length === 0) throw new Error(`read back ${topic}@${offset}: no progress`);
    for (const r of got) {
      if (r.offset < offset || r.offset >= end) continue;
      seen.set(r.seq, (seen.get(r.seq) ?? 0) + 1);
      if (r.seq <= last) outOfOrder++;
      last = r.seq;
      offset = r.offset + 1;
    }
  }
  let lost = 0;
  for (let s = 0; s < acked; s++) if (!seen.has(s)) lost++;
  const duplicated = [...seen.values()].filter((n) => n > 1).length;
  return { lost, duplicated, outOfOrder };
}

async function untilIsr(address: string, topic: string, size: number, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const ps = await partitionsSeenBy(address, topic).catch(() => []);
    if (ps[0]?.isrNodes.length === size) return true;
    await sleep(50);
  }
  return false;
}

// ---------------------------------------------------------------------------------------
// The run

interface Figures {
  rf3?: Throughput;
  rf1?: Throughput;
  latencyRf3?: Latency;
  latencyRf1?: Latency;
  failover: Map<Detection, FailoverSample[]>;
}

const faster = (a: Throughput | undefined, b: Throughput): Throughput => (a === undefined || b.mibPerS > a.mibPerS ? b : a);

function log(text: string): void {
  process.stderr.write(`  ${text}\n`);
}

async function measureLoads(target: ClusterTarget, figures: Figures): Promise<void> {
  const admin = new KafkaCluster([...target.addresses]);
  try {
    if (wanted('produce')) {
      await createTopic(admin, 'produce-rf3', { partitions: PRODUCE_PARTITIONS, replicationFactor: 3, minInsync: 2 });
      await createTopic(admin, 'produce-rf1', { partitions: PRODUCE_PARTITIONS, replicationFactor: 1, minInsync: 1 });
      await waitForPartitions(target.addresses, 'produce-rf3', PRODUCE_PARTITIONS, 3);
      await waitForPartitions(target.addresses, 'produce-rf1', PRODUCE_PARTITIONS, 1);
      log(`${target.name}: produce warm-up`);
      for (const [topic, acks] of [
        ['produce-rf3', -1],
        ['produce-rf1', 1],
      ] as const) {
        const until = performance.now() + WARMUP_MS;
        do await produceLoad(admin, topic, acks, WARMUP_RECORDS);
        while (performance.now() < until);
      }
      for (let round = 0; round < MEASURE_ROUNDS; round++) {
        log(`${target.name}: produce round ${round + 1}, RF 3 acks=all`);
        figures.rf3 = faster(figures.rf3, await produceLoad(admin, 'produce-rf3', -1, PRODUCE_RECORDS));
        log(`${target.name}: produce round ${round + 1}, RF 1 acks=1`);
        figures.rf1 = faster(figures.rf1, await produceLoad(admin, 'produce-rf1', 1, PRODUCE_RECORDS));
      }
    }
    if (wanted('latency')) {
      log(`${target.name}: produce->consume`);
      await createTopic(admin, 'latency-rf3', { partitions: 1, replicationFactor: 3, minInsync: 2 });
      await createTopic(admin, 'latency-rf1', { partitions: 1, replicationFactor: 1, minInsync: 1 });
      await waitForPartitions(target.addresses, 'latency-rf3', 1, 3);
      await waitForPartitions(target.addresses, 'latency-rf1', 1, 1);
      figures.latencyRf3 = await produceToConsume(admin, 'latency-rf3', -1);
      figures.latencyRf1 = await produceToConsume(admin, 'latency-rf1', 1);
    }
  } finally {
    await admin.close();
  }
}

async function measureFailover(target: ClusterTarget, detection: Detection, figures: Figures): Promise<void> {
  const samples: FailoverSample[] = [];
  figures.failover.set(detection, samples);
  for (let run = 0; run < FAILOVER_RUNS; run++) {
    log(`${target.name}: failover run ${run + 1} (${detection.label})`);
    const s = await failoverRun(target, run);
    samples.push(s);
    log(
      `${target.name}: killed ${s.victim}, ${s.newLeader} acknowledged after ${s.failoverMs.toFixed(0)} ms (metadata ${s.leaderSeenMs.toFixed(0)} ms), ` +
        `rejoin ${s.rejoinMs.toFixed(0)} ms; round trip before the kill ${s.steadyRttMsP50.toFixed(1)} ms; acked ${s.acked}, lost ${s.lost}, duplicated ${s.duplicated}, out of order ${s.outOfOrder}`,
    );
  }
}

/** Each cluster runs on its own (a Kafka cluster alone takes ~1.5 GB): loads and failover with Kafka's defaults, then failover with fast detection. */
async function measureSystem(start: (d: Detection) => Promise<ClusterTarget>, name: string): Promise<Figures> {
  const figures: Figures = { failover: new Map() };
  const detections = [KAFKA_DEFAULT_DETECTION, ...(argv.includes('--no-fast') ? [] : [FAST_DETECTION])];
  for (const detection of detections) {
    const loads = detection === KAFKA_DEFAULT_DETECTION && (wanted('produce') || wanted('latency'));
    if (!loads && !wanted('failover')) continue;
    log(`${name}: starting 3 nodes (${detection.label})`);
    let target: ClusterTarget;
    try {
      target = await start(detection);
    } catch (err) {
      log(`${name}: DID NOT START: ${(err as Error).message.slice(0, 4000)}`);
      continue;
    }
    try {
      if (loads) await measureLoads(target, figures);
      if (wanted('failover')) await measureFailover(target, detection, figures);
    } catch (err) {
      log(`${name}: FAILED: ${(err as Error).stack}`);
    } finally {
      await target.stop();
    }
  }
  return figures;
}

// ---------------------------------------------------------------------------------------
// Report

const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || !Number.isFinite(a / b) ? 'n/a' : (a / b).toFixed(2);
const ms = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? 'n/a' : `${v.toFixed(1)} ms`);
const median = (xs: readonly number[]): number | undefined => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length === 0 ? undefined : s[Math.floor(s.length / 2)];
};
const failoverMedian = (f: Figures | undefined, d: Detection): number | undefined =>
  median((f?.failover.get(d) ?? []).map((s) => s.failoverMs));

function throughputLine(t: Throughput | undefined): string {
  if (t === undefined) return 'n/a';
  const errs = t.errors > 0 ? `, ${t.errors} failed requests sent again (first ${t.firstError})` : '';
  const bound = t.bounded ? `, STOPPED at the ${PHASE_MAX_MS / 1000} s bound` : '';
  return `${t.mibPerS.toFixed(1)} MiB/s, ${t.recordsPerS.toFixed(0)} records/s (${t.records} records in ${t.seconds.toFixed(2)} s${errs}${bound})`;
}

function latencyLine(l: Latency | undefined): string {
  if (l === undefined) return 'n/a';
  const missing = l.samples < l.sent ? `, ONLY ${l.samples} of ${l.sent} consumed` : '';
  const errors = l.errors > 0 ? `, ${l.errors} FAILED requests` : '';
  return `p50 ${ms(l.p50Ms)}, p99 ${ms(l.p99Ms)} (${l.sent} records at ${LATENCY_RATE_PER_S}/s in ${l.requests} requests${errors}${missing})`;
}

function report(results: Map<string, Figures>, detections: readonly Detection[]): void {
  const lines: string[] = ['', '== replication cost: RF 3 acks=all (min.insync.replicas=2) / RF 1 acks=1, same cluster, this run'];
  for (const [name, f] of results) {
    lines.push(`${name}:`);
    lines.push(`  produce throughput  ${ratio(f.rf3?.mibPerS, f.rf1?.mibPerS)}`);
    lines.push(
      `  produce->consume    p50 ${ratio(f.latencyRf3?.p50Ms, f.latencyRf1?.p50Ms)}x, p99 ${ratio(f.latencyRf3?.p99Ms, f.latencyRf1?.p99Ms)}x RF 1's`,
    );
  }
  const sluice = results.get('Sluice');
  const kafka = results.get('Kafka');
  if (sluice && kafka) {
    lines.push('', '== Sluice / Kafka (3 nodes each, same client and loads, this run)');
    lines.push(`  produce RF 3 acks=all  ${ratio(sluice.rf3?.mibPerS, kafka.rf3?.mibPerS)} (higher is better)`);
    lines.push(`  produce RF 1 acks=1    ${ratio(sluice.rf1?.mibPerS, kafka.rf1?.mibPerS)}`);
    lines.push(
      `  produce->consume RF 3  p50 ${ratio(sluice.latencyRf3?.p50Ms, kafka.latencyRf3?.p50Ms)}, p99 ${ratio(sluice.latencyRf3?.p99Ms, kafka.latencyRf3?.p99Ms)} (lower is better)`,
    );
    for (const d of detections)
      lines.push(`  failover, ${d.label}  ${ratio(failoverMedian(sluice, d), failoverMedian(kafka, d))} (lower is better)`);
  }
  lines.push('', '== absolute');
  for (const [name, f] of results) {
    lines.push(`${name}:`);
    lines.push(`  produce RF 3 acks=all   ${throughputLine(f.rf3)}`);
    lines.push(`  produce RF 1 acks=1     ${throughputLine(f.rf1)}`);
    lines.push(`  produce->consume RF 3   ${latencyLine(f.latencyRf3)}`);
    lines.push(`  produce->consume RF 1   ${latencyLine(f.latencyRf1)}`);
    for (const [d, samples] of f.failover) {
      const all = samples.map((s) => s.failoverMs.toFixed(0)).join(', ');
      const lost = samples.reduce((n, s) => n + s.lost, 0);
      const dup = samples.reduce((n, s) => n + s.duplicated + s.outOfOrder, 0);
      const errs = new Map<string, number>();
      for (const s of samples) for (const [e, n] of s.errors) errs.set(e, (errs.get(e) ?? 0) + n);
      lines.push(`  failover, ${d.label}:`);
      lines.push(`    kill -> first ack by the new leader  median ${ms(failoverMedian(f, d))} of [${all}] ms`);
      lines.push(`    kill -> Metadata names a new leader  median ${ms(median(samples.map((s) => s.leaderSeenMs)))}`);
      lines.push(`    that Metadata -> first ack           median ${ms(median(samples.map((s) => s.failoverMs - s.leaderSeenMs)))}`);
      lines.push(`    restarted victim back in the ISR     median ${ms(median(samples.map((s) => s.rejoinMs)))}`);
      lines.push(`    produce round trip before the kill   median ${ms(median(samples.map((s) => s.steadyRttMsP50)))}`);
      lines.push(
        `    ${samples.reduce((n, s) => n + s.acked, 0)} acknowledged records read back: ${lost === 0 && dup === 0 ? 'every one once, in order' : `${lost} LOST, ${dup} DUPLICATED or out of order`}`,
      );
      lines.push(`    errors the producer retried: ${[...errs].map(([e, n]) => `${e} ${n}`).join(', ') || 'none'}`);
    }
  }
  lines.push(
    '',
    `records of ${RECORD_BYTES} bytes; produce ${PRODUCE_RECORDS} records, ${BATCH_RECORDS} a batch, ${PRODUCE_PARTITIONS} partitions, ` +
      `${PRODUCE_CONNECTIONS_PER_PARTITION} connections per partition, ${PRODUCE_IN_FLIGHT} requests in flight each, best of ${MEASURE_ROUNDS}; failover retry every ${RETRY_BACKOFF_MS} ms`,
  );
  process.stdout.write(lines.join('\n') + '\n');
}

const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function main(): Promise<void> {
  const loadAtStart = load();
  const results = new Map<string, Figures>();
  const detections = [KAFKA_DEFAULT_DETECTION, ...(argv.includes('--no-fast') ? [] : [FAST_DETECTION])];
  results.set('Sluice', await measureSystem(startSluiceCluster, 'Sluice'));
  if (argv.includes('--no-kafka')) {
    log('Kafka: skipped (--no-kafka)');
  } else if (!kafkaInstalled()) {
    process.stderr.write(
      '\n  *** Kafka is NOT installed (.cache/kafka-*/libs/.complete missing): Sluice/Kafka figures skipped. Run scripts/install-test-clients.sh ***\n\n',
    );
  } else {
    results.set('Kafka', await measureSystem(startKafkaCluster, 'Kafka'));
  }
  report(results, detections);
  // The machine may be shared: say how busy it was.
  process.stdout.write(`${cpus().length} cores; load average (1, 5, 15 min) ${loadAtStart} at the start, ${load()} at the end\n`);
}

await main();
