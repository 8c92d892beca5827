// Cluster figures on loopback: 3 Sluice nodes and a 3-node Apache Kafka cluster
// (scripts/kafka-cluster.sh), both started from scripts/cluster/node-{1,2,3}.properties (each
// node broker and controller) and both up for the whole run, measured in alternating rounds:
// Sluice then Kafka in round 1, Kafka then Sluice in round 2, and so on. The idle cluster's CPU
// during each load is printed with it.
//
//   produce   per round and partition count (--partitions, default 6 and 24): 1 KiB records, 64
//             a pre-encoded batch, pipelined over three connections per partition to its leader,
//             MB/s and records/s; RF 3 acks=all with min.insync.replicas=2, and RF 1 acks=1 on
//             the same cluster. Targets: RF 3 records/s >= 1.0x Kafka's; RF 3 >= 0.5x RF 1 on
//             the same cluster (replication costs at most 2x).
//   CPU/GB    utime + stime of the 3 broker processes (/proc/<pid>/stat, every thread) over each
//             produce load, per GB the client had acknowledged (counted once, not per replica).
//             Target: <= 1.0x Kafka's.
//   latency   produce-to-consume p50/p99/p999 at half of peak, RF 3 acks=all and RF 1 acks=1 on
//             the first partition count: the offered load is half the lower of the two clusters'
//             RF 3 records/s measured in the same round, the same load for both (and for both
//             RFs). Records fall due on a fixed schedule spread over the partitions; each
//             partition's producer keeps one request in flight and sends what fell due meanwhile
//             in the next (pre-encoded batches of up to 960 records, under 1 MB); a long-polling
//             consumer per partition on its leader. A record's latency runs from when it fell
//             due, so a producer that falls behind shows. Target: RF 3 p99 <= 0.7x Kafka's.
//   failover  an idempotent acks=all producer sends continuously to an RF 3 partition whose
//             leader is not the active controller; the leader is SIGKILLed: the time from the
//             kill to the first produce acknowledged by another broker. Then the partition is
//             read back (every acknowledged record once, in order) and the victim restarted.
//             --runs alternating runs (default: one per round) with Kafka's default failure
//             detection (session 9000 ms, heartbeat 2000 ms, replica lag 30000 ms), then as many
//             on clusters started again with 3000/500/3000. Target: <= 1.0x Kafka's.
// Every figure is printed first as ratios, per round, to its ceiling measured in the same run
// (RF 1 acks=1 on the same cluster for RF 3 acks=all) and to Kafka, as median (min-max) over
// the rounds, with its target; then the absolute numbers. 1 MB = 10^6 bytes.
//
// One client for all, Sluice's own protocol codec (src/client): kafkajs encodes every record
// and its CRC in JavaScript and would be the bottleneck on a small machine (the figure would
// measure kafkajs), and its retry back-off (exponential from 300 ms) would add to the failover
// time. Here the loads send pre-encoded batches (a header per request) and the failover
// producer retries every 20 ms, so both brokers see the same, cheap client.
//
// Run: npm run bench:cluster -- [options], or node --import tsx scripts/bench/cluster.ts [options]
//      --rounds=N (default 3)  --partitions=6,24  --runs=N (failover runs per detection)
//      --quick (loads of 65536 records, 3 s of latency)  --connections=N (per partition, 3)
//      --no-kafka  --no-fast  --only=produce,latency,failover
// A default run takes about 7 minutes on 2 idle cores (longer on a busy machine); --quick
// --rounds=1 about 2.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
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
import { METADATA_TOPIC } from '../../protocol/internal-topics.ts';
import { BATCH_LENGTH, LOG_OVERHEAD, RecordBatch, validateBatchAt } from '../../protocol/records/batch.ts';
import { RecordBatchBuilder } from '../../protocol/records/builder.ts';
import { readRecords } from '../../protocol/records/record.ts';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { produceBody as encodeProduce, produceError, sleep } from './requests.ts';
import { KafkaConnection } from '../../src/client/connection.ts';
import { listOffsets, tpKey } from '../../src/client/offsets.ts';
import { startCluster } from '../../test/helpers/cluster.ts';
import { REPO } from '../../test/helpers/sluice-cli.ts';
import { cpuSeconds } from './measure.ts';

const MB = 1e6;
const GB = 1e9;
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const option = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
function positiveInteger(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}=${raw}: not a positive integer`);
  return n;
}
const only = option('only')?.split(',');
const wanted = (figure: string): boolean => only === undefined || only.includes(figure);
const ROUNDS = positiveInteger('rounds', option('rounds') ?? '3');
const PARTITION_COUNTS = (option('partitions') ?? '6,24').split(',').map((p) => positiveInteger('partitions', p));
/** The latency load runs on the first partition count, at half the peak measured there. */
const LATENCY_PARTITIONS = PARTITION_COUNTS[0]!;
const FAILOVER_RUNS = positiveInteger('runs', option('runs') ?? String(ROUNDS));
const CLUSTER_FILES = [1, 2, 3].map((i) => join(REPO, 'scripts/cluster', `node-${i}.properties`));

/** Every record's value, in every figure. */
const RECORD_BYTES = 1024;
const BATCH_RECORDS = 64;
/** Kafka's max.in.flight.requests.per.connection default. */
const PRODUCE_IN_FLIGHT = 5;
/**
 * A broker handles one connection's requests one after another, so an acks=all request holds
 * its connection until replicated: several connections per partition keep the brokers busy
 * rather than measuring one replication round trip per partition.
 */
const PRODUCE_CONNECTIONS_PER_PARTITION = positiveInteger('connections', option('connections') ?? '3');
const PRODUCE_RECORDS = quick ? 65_536 : 262_144;
/** Before round 1, each topic takes at least this many records, and all of them together this long (a JVM compiles its hot paths). */
const WARMUP_RECORDS = 16_384;
const WARMUP_MS = quick ? 3000 : 8000;
/** Bounds each produce load whatever the speed; a load that hits it says so. */
const PHASE_MAX_MS = 40_000;
/**
 * The largest batch a latency request carries. With one request in flight a partition's rate
 * is a batch per round trip, so everything that fell due meanwhile goes in the next request,
 * up to a batch under Kafka's message.max.bytes default (1 MiB + 12 bytes).
 */
const LATENCY_MAX_BATCH_RECORDS = 960;
/** The record counts latency requests carry (1..BATCH_RECORDS, then multiples of it), for `pending` records due. */
const latencyBatchRecords = (pending: number): number =>
  pending <= BATCH_RECORDS ? pending : Math.min(LATENCY_MAX_BATCH_RECORDS, pending - (pending % BATCH_RECORDS));
/** How long records fall due in a latency load. */
const LATENCY_SECONDS = quick ? 3 : 10;
/** After the last record fell due, how long the consumers may take to see the rest. */
const LATENCY_DRAIN_MS = 10_000;
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
  /** For the ratio lines. */
  short: string;
  props: Record<string, number>;
}
const KAFKA_DEFAULT_DETECTION: Detection = {
  label: 'session 9000 / heartbeat 2000 / lag 30000 ms (Kafka defaults)',
  short: 'Kafka default detection',
  props: { 'broker.session.timeout.ms': 9000, 'broker.heartbeat.interval.ms': 2000, 'replica.lag.time.max.ms': 30_000 },
};
const FAST_DETECTION: Detection = {
  label: 'session 3000 / heartbeat 500 / lag 3000 ms',
  short: 'fast detection (3000/500/3000 ms)',
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
  readonly name: SystemName;
  /** host:port of node id i + 1 at index i. */
  readonly addresses: readonly string[];
  readonly nodeIds: readonly number[];
  /** The broker processes' pids, while every node runs. */
  pids(): number[];
  kill(nodeId: number): Promise<Killed>;
  /** Starts a killed node again from its config and data; resolves when it is up. */
  restart(nodeId: number): Promise<void>;
  stop(): Promise<void>;
}

type SystemName = 'Sluice' | 'Kafka';

/** Clusters that run now: an interrupted run still stops them, and a load knows which idle. */
const running = new Set<ClusterTarget>();

async function startSluiceCluster(detection: Detection): Promise<ClusterTarget> {
  const cluster = await startCluster({
    propertiesFiles: CLUSTER_FILES,
    overrides: { ...detection.props, 'log.level': 'warn' },
    readyTimeoutMs: 120_000,
  });
  const node = (id: number) => cluster.nodes.find((n) => n.nodeId === id)!;
  return {
    name: 'Sluice',
    addresses: cluster.nodes.map((n) => `${n.host}:${n.port}`),
    nodeIds: cluster.nodes.map((n) => n.nodeId),
    pids: () =>
      cluster.nodes.map((n) => {
        if (!n.running || n.child?.pid === undefined) throw new Error(`node ${n.nodeId} is not running`);
        return n.child.pid;
      }),
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
  // The script records each node's pid (that of the JVM: nohup execs java) in its state dir.
  const pidOf = (id: number): number => Number(readFileSync(join(stateDir, `pid-${id}`), 'utf8').trim());
  const nodeIds = addresses.map((_, i) => i + 1);
  return {
    name: 'Kafka',
    addresses,
    nodeIds,
    pids: () =>
      nodeIds.map((id) => {
        const pid = pidOf(id);
        if (processGone(pid)) throw new Error(`node ${id} is not running`);
        return pid;
      }),
    async kill(id) {
      const pid = pidOf(id);
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

const clusterCpuSeconds = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);

// ---------------------------------------------------------------------------------------
// Requests

/** A record value: its sequence number in the first 4 bytes, then a fixed pattern. */
function recordValue(seq: number): Buffer {
  const value = Buffer.alloc(RECORD_BYTES);
  for (let i = 4; i < value.length; i++) value[i] = (i * 31 + 7) & 0xff;
  value.writeUInt32BE(seq >>> 0, 0);
  return value;
}

/** A batch of `count` records, all of one value. */
function fixedBatch(count: number): Promise<Buffer> {
  const builder = new RecordBatchBuilder();
  const value = recordValue(0);
  for (let i = 0; i < count; i++) builder.add({ key: null, value, timestamp: Date.now() });
  return builder.build();
}

const produceBody = (topic: string, partition: number, records: Buffer, version: number, acks: number): Buffer =>
  encodeProduce(topic, partition, records, version, acks, PRODUCE_TIMEOUT_MS);

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

/** Fetches `topic`-`partition` from `offset` (long-polling up to maxWaitMs); the records' bytes. */
async function fetchRecords(conn: KafkaConnection, topic: string, partition: number, offset: number, maxWaitMs: number): Promise<Buffer> {
  const res = await conn.send<FetchResponse>(
    ApiKey.Fetch,
    makeFetchRequest({
      replicaId: -1,
      maxWaitMs,
      minBytes: 1,
      maxBytes: 4 * MB,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        makeFetchRequestFetchTopic({
          topic,
          partitions: [makeFetchRequestFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: 4 * MB })],
        }),
      ],
    }),
    conn.version(ApiKey.Fetch, 12),
  );
  const p = res.responses[0]?.partitions[0];
  if (p === undefined || p.errorCode !== Errors.NONE.code) {
    throw new Error(`fetch ${topic}-${partition}@${offset}: ${errorName(p?.errorCode ?? -1)}`);
  }
  return p.records ?? Buffer.alloc(0);
}

/** The whole batches at the start of `records` (a fetch may end in a partial one). */
function* wholeBatches(records: Buffer): Generator<RecordBatch> {
  let at = 0;
  while (at + LOG_OVERHEAD <= records.length && at + LOG_OVERHEAD + records.readInt32BE(at + BATCH_LENGTH) <= records.length) {
    const batch = new RecordBatch(records, at);
    yield batch;
    at += batch.sizeInBytes;
  }
}

/** The whole batches in `records`: each record's offset and sequence number (the value's first 4 bytes). */
async function decodeSeqs(records: Buffer): Promise<{ offset: number; seq: number }[]> {
  const out: { offset: number; seq: number }[] = [];
  for (const batch of wholeBatches(records)) {
    validateBatchAt(records, batch.offset, records.length, false);
    for (const r of await readRecords(batch)) out.push({ offset: r.offset, seq: r.value!.readUInt32BE(0) });
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
  mbPerS: number;
  /** CPU time of the three broker processes over the load. */
  cpuSeconds: number;
  cpuSecondsPerGb: number;
  /** CPU the other, idle clusters used meanwhile, in cores: what this load could not have. */
  idleCoreShare: number;
  errors: number;
  firstError: string;
  /** The load hit PHASE_MAX_MS before every record was acknowledged. */
  bounded: boolean;
}

/**
 * `records` records of RECORD_BYTES, pipelined over PRODUCE_CONNECTIONS_PER_PARTITION
 * connections per partition to its leader; a failed request is sent again.
 */
async function produceLoad(
  admin: KafkaCluster,
  target: ClusterTarget,
  topic: string,
  partitions: number,
  acks: number,
  records: number,
): Promise<Throughput> {
  const leaders = (await admin.leaders([topic])).get(topic)!;
  const batch = await fixedBatch(BATCH_RECORDS);
  const conns = await Promise.all(
    Array.from({ length: partitions * PRODUCE_CONNECTIONS_PER_PARTITION }, async (_, c) => {
      const pooled = await admin.brokerConnection(leaders.get(c % partitions)!);
      return KafkaConnection.connect(pooled.host, pooled.port);
    }),
  );
  const batches = Math.ceil(records / BATCH_RECORDS);
  let claimed = 0;
  let acked = 0;
  let errors = 0;
  let firstError = '';
  const pids = target.pids();
  const idlePids = [...running].filter((t) => t !== target).flatMap((t) => t.pids());
  const cpuAtStart = clusterCpuSeconds(pids);
  const idleCpuAtStart = clusterCpuSeconds(idlePids);
  const t0 = performance.now();
  let lastAckMs = t0;
  const deadline = t0 + PHASE_MAX_MS;
  try {
    await Promise.all(
      conns.map(
        (conn, c) =>
          new Promise<void>((done, fail) => {
            const version = conn.version(ApiKey.Produce);
            const body = produceBody(topic, c % partitions, batch, version, acks);
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
  const cpu = clusterCpuSeconds(pids) - cpuAtStart;
  const idleCpu = clusterCpuSeconds(idlePids) - idleCpuAtStart;
  const seconds = (lastAckMs - t0) / 1000;
  const bytes = acked * batch.length;
  return {
    records: acked * BATCH_RECORDS,
    bytes,
    seconds,
    recordsPerS: (acked * BATCH_RECORDS) / seconds,
    mbPerS: bytes / MB / seconds,
    cpuSeconds: cpu,
    cpuSecondsPerGb: cpu / (bytes / GB),
    idleCoreShare: idleCpu / seconds,
    errors,
    firstError,
    bounded: acked < batches,
  };
}

interface Latency {
  /** Records per second offered, over all partitions. */
  offeredPerS: number;
  /** Acknowledged records per second, first due to last acknowledged. */
  achievedPerS: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  samples: number;
  /** Records acknowledged. */
  sent: number;
  /** Produce requests the records went in (fewer than records when they queued behind one in flight). */
  requests: number;
  errors: number;
}

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

interface LatencyLane {
  partition: number;
  producer: KafkaConnection;
  consumer: KafkaConnection;
  /** Pre-encoded batches by record count, shared by the lanes. */
  batches: ReadonlyMap<number, Buffer>;
  /** This lane's request bodies by record count, encoded on first use. */
  bodies: Map<number, Buffer>;
  acks: number;
  version: number;
  startOffset: number;
}

interface LaneResult {
  /** When each acknowledged record fell due, in the order the log holds them. */
  dueAtMs: number[];
  /** When the consumer saw each record, by offset from the start. */
  seenAtMs: number[];
  lastAckMs: number;
  requests: number;
  errors: number;
}

/**
 * One partition's share of a latency load: `count` records due every `intervalMs` from
 * `t0`, one request in flight carrying whatever fell due (a failed one is sent again), and a
 * consumer that timestamps each record's arrival. With one request in flight on one
 * connection, the log holds the records in the order they were acknowledged, so the n-th
 * record seen is the n-th acknowledged (unless a request failed after its append: the report
 * names any failed request).
 */
async function runLane(lane: LatencyLane, topic: string, t0: number, intervalMs: number, count: number): Promise<LaneResult> {
  const result: LaneResult = { dueAtMs: [], seenAtMs: [], lastAckMs: t0, requests: 0, errors: 0 };
  const drainDeadline = t0 + count * intervalMs + LATENCY_DRAIN_MS;
  let producing = true;
  let producerFailed = false;
  const consuming = (async () => {
    let offset = lane.startOffset;
    while (performance.now() < drainDeadline && !producerFailed) {
      const seen = offset - lane.startOffset;
      if (seen >= count || (!producing && seen >= result.dueAtMs.length)) return;
      const records = await fetchRecords(lane.consumer, topic, lane.partition, offset, 500);
      const now = performance.now();
      for (const batch of wholeBatches(records)) {
        for (let o = Math.max(offset, batch.baseOffset); o <= batch.lastOffset; o++) result.seenAtMs[o - lane.startOffset] = now;
        offset = Math.max(offset, batch.nextOffset);
      }
    }
  })();
  try {
    let next = 0;
    while (next < count && performance.now() < drainDeadline) {
      const due = Math.min(count, Math.floor((performance.now() - t0) / intervalMs) + 1);
      if (due <= next) {
        await sleep(t0 + next * intervalMs - performance.now());
        continue;
      }
      const n = latencyBatchRecords(due - next);
      let body = lane.bodies.get(n);
      if (body === undefined) {
        body = produceBody(topic, lane.partition, lane.batches.get(n)!, lane.version, lane.acks);
        lane.bodies.set(n, body);
      }
      const res = await lane.producer.sendEncoded(ApiKey.Produce, lane.version, body);
      result.requests++;
      if (produceError(res, lane.version) !== Errors.NONE.code) {
        result.errors++;
        await sleep(RETRY_BACKOFF_MS);
        continue;
      }
      result.lastAckMs = performance.now();
      for (let i = next; i < next + n; i++) result.dueAtMs.push(t0 + i * intervalMs);
      next += n;
    }
  } catch (err) {
    producerFailed = true;
    await consuming.catch(() => undefined);
    throw err;
  } finally {
    producing = false;
  }
  await consuming;
  return result;
}

/** Every batch a latency request may carry, by record count: built once, about 10 MB. */
let latencyBatches: Promise<ReadonlyMap<number, Buffer>> | undefined;

/** `offeredPerS` records a second spread evenly over the topic's partitions; a producer and a consumer per partition, on its leader. */
async function produceToConsume(
  admin: KafkaCluster,
  topic: string,
  partitions: number,
  acks: number,
  offeredPerS: number,
): Promise<Latency> {
  const leaders = (await admin.leaders([topic])).get(topic)!;
  const starts = await listOffsets(
    admin,
    Array.from({ length: partitions }, (_, partition) => ({ topic, partition })),
  );
  latencyBatches ??= Promise.all(
    [...new Set(Array.from({ length: LATENCY_MAX_BATCH_RECORDS }, (_, i) => latencyBatchRecords(i + 1)))].map(
      async (n) => [n, await fixedBatch(n)] as const,
    ),
  ).then((entries) => new Map(entries));
  const batches = await latencyBatches;
  const lanes: LatencyLane[] = [];
  try {
    for (let partition = 0; partition < partitions; partition++) {
      const pooled = await admin.brokerConnection(leaders.get(partition)!);
      const producer = await KafkaConnection.connect(pooled.host, pooled.port);
      const consumer = await KafkaConnection.connect(pooled.host, pooled.port).catch((err: Error) => {
        producer.close();
        throw err;
      });
      const version = producer.version(ApiKey.Produce);
      lanes.push({
        partition,
        producer,
        consumer,
        batches,
        bodies: new Map(),
        acks,
        version,
        startOffset: starts.get(tpKey(topic, partition))!,
      });
    }
    const intervalMs = (1000 * partitions) / offeredPerS;
    const count = Math.max(1, Math.round((offeredPerS * LATENCY_SECONDS) / partitions));
    const t0 = performance.now();
    // Partition p's records fall due p/partitions of an interval after partition 0's: evenly over time.
    const results = await Promise.all(
      lanes.map((lane) => runLane(lane, topic, t0 + (lane.partition * intervalMs) / partitions, intervalMs, count)),
    );
    const latencies: number[] = [];
    for (const r of results) {
      for (let k = 0; k < r.dueAtMs.length; k++) {
        const seen = r.seenAtMs[k];
        if (seen !== undefined) latencies.push(seen - r.dueAtMs[k]!);
      }
    }
    latencies.sort((a, b) => a - b);
    const sent = results.reduce((n, r) => n + r.dueAtMs.length, 0);
    const lastAckMs = Math.max(...results.map((r) => r.lastAckMs));
    return {
      offeredPerS,
      achievedPerS: sent / ((lastAckMs - t0) / 1000),
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      p999Ms: percentile(latencies, 0.999),
      samples: latencies.length,
      sent,
      requests: results.reduce((n, r) => n + r.requests, 0),
      errors: results.reduce((n, r) => n + r.errors, 0),
    };
  } finally {
    for (const lane of lanes) {
      lane.producer.close();
      lane.consumer.close();
    }
  }
}

// ---------------------------------------------------------------------------------------
// Failover

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
    const got = await decodeSeqs(await fetchRecords(leader, topic, 0, offset, 0));
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

interface Load {
  partitions: number;
  replicationFactor: 1 | 3;
}
const loadKey = (l: Load): string => `rf${l.replicationFactor}-p${l.partitions}`;
const loadTopic = (l: Load): string => `produce-${loadKey(l)}`;
const acksOf = (l: Load): number => (l.replicationFactor === 3 ? -1 : 1);
const loadLabel = (l: Load): string =>
  `RF ${l.replicationFactor} ${l.replicationFactor === 3 ? 'acks=all' : 'acks=1'}, ${l.partitions} partitions`;

/** The produce loads a round runs: every partition count for the produce figure, else the latency figure's peak alone. */
const LOADS: readonly Load[] = wanted('produce')
  ? PARTITION_COUNTS.flatMap((partitions) => [
      { partitions, replicationFactor: 3 as const },
      { partitions, replicationFactor: 1 as const },
    ])
  : wanted('latency')
    ? [{ partitions: LATENCY_PARTITIONS, replicationFactor: 3 }]
    : [];
const PEAK_LOAD: Load = { partitions: LATENCY_PARTITIONS, replicationFactor: 3 };
/** Where latency is measured: the first partition count's topics. */
const LATENCY_LOADS: readonly Load[] = wanted('latency') ? [PEAK_LOAD, { partitions: LATENCY_PARTITIONS, replicationFactor: 1 }] : [];

interface RoundFigures {
  produce: Map<string, Throughput>;
  /** By replication factor. */
  latency: Map<number, Latency>;
}

interface SystemResults {
  name: SystemName;
  /** By round; a round the cluster failed in is missing. */
  rounds: (RoundFigures | undefined)[];
  /** By run. */
  failover: Map<Detection, (FailoverSample | undefined)[]>;
}

interface System {
  results: SystemResults;
  start(d: Detection): Promise<ClusterTarget>;
}

interface Live {
  results: SystemResults;
  target: ClusterTarget;
  /** Set once a step failed: a cluster in an unknown state gives no more figures. */
  broken: boolean;
}

function log(text: string): void {
  process.stderr.write(`  ${text}\n`);
}

/** Round 0 in the given order, round 1 reversed, and so on: neither cluster always goes first. */
const alternate = <T>(xs: readonly T[], round: number): readonly T[] => (round % 2 === 0 ? xs : [...xs].reverse());

async function step(live: Live, what: string, fn: () => Promise<void>): Promise<void> {
  if (live.broken) return;
  try {
    await fn();
  } catch (err) {
    live.broken = true;
    log(`${live.target.name}: ${what} FAILED, no more figures from this cluster: ${(err as Error).stack}`);
  }
}

async function withAdmin<T>(target: ClusterTarget, fn: (admin: KafkaCluster) => Promise<T>): Promise<T> {
  const admin = new KafkaCluster([...target.addresses]);
  try {
    return await fn(admin);
  } finally {
    await admin.close();
  }
}

/** Creates the load topics and runs each until warm. */
async function prepareLoads(target: ClusterTarget): Promise<void> {
  const loads = [...new Map([...LOADS, ...LATENCY_LOADS].map((l) => [loadKey(l), l])).values()];
  await withAdmin(target, async (admin) => {
    for (const l of loads) {
      await createTopic(admin, loadTopic(l), {
        partitions: l.partitions,
        replicationFactor: l.replicationFactor,
        minInsync: Math.min(2, l.replicationFactor),
      });
    }
    for (const l of loads) await waitForPartitions(target.addresses, loadTopic(l), l.partitions, l.replicationFactor);
    log(`${target.name}: warm-up`);
    const until = performance.now() + WARMUP_MS;
    do for (const l of loads) await produceLoad(admin, target, loadTopic(l), l.partitions, acksOf(l), WARMUP_RECORDS);
    while (performance.now() < until);
  });
}

async function produceRound(live: Live, round: number): Promise<void> {
  const figures: RoundFigures = { produce: new Map(), latency: new Map() };
  await withAdmin(live.target, async (admin) => {
    for (const l of LOADS) {
      log(`${live.target.name}: round ${round + 1}, produce ${loadLabel(l)}`);
      figures.produce.set(loadKey(l), await produceLoad(admin, live.target, loadTopic(l), l.partitions, acksOf(l), PRODUCE_RECORDS));
    }
  });
  live.results.rounds[round] = figures;
}

async function latencyRound(live: Live, round: number, offeredPerS: number): Promise<void> {
  const figures = live.results.rounds[round]!;
  await withAdmin(live.target, async (admin) => {
    for (const l of LATENCY_LOADS) {
      log(`${live.target.name}: round ${round + 1}, produce->consume ${loadLabel(l)} at ${offeredPerS.toFixed(0)} records/s`);
      figures.latency.set(l.replicationFactor, await produceToConsume(admin, loadTopic(l), l.partitions, acksOf(l), offeredPerS));
    }
  });
}

async function measureRounds(lives: readonly Live[]): Promise<void> {
  for (const live of lives) await step(live, 'topics and warm-up', () => prepareLoads(live.target));
  for (let round = 0; round < ROUNDS; round++) {
    const order = alternate(lives, round);
    for (const live of order) await step(live, `round ${round + 1} produce`, () => produceRound(live, round));
    if (LATENCY_LOADS.length === 0) continue;
    // The same offered load for both: half the lower peak, so that neither runs past its own.
    const peaks = lives
      .filter((l) => !l.broken)
      .map((l) => l.results.rounds[round]?.produce.get(loadKey(PEAK_LOAD))?.recordsPerS)
      .filter((r): r is number => r !== undefined && r > 0);
    if (peaks.length === 0) continue;
    const offeredPerS = Math.min(...peaks) / 2;
    for (const live of order) await step(live, `round ${round + 1} produce->consume`, () => latencyRound(live, round, offeredPerS));
  }
}

async function measureFailover(lives: readonly Live[], detection: Detection): Promise<void> {
  for (const live of lives) live.results.failover.set(detection, []);
  for (let run = 0; run < FAILOVER_RUNS; run++) {
    for (const live of alternate(lives, run)) {
      await step(live, `failover run ${run + 1}`, async () => {
        log(`${live.target.name}: failover run ${run + 1} (${detection.label})`);
        const s = await failoverRun(live.target, run);
        live.results.failover.get(detection)![run] = s;
        log(
          `${live.target.name}: killed ${s.victim}, ${s.newLeader} acknowledged after ${s.failoverMs.toFixed(0)} ms (metadata ${s.leaderSeenMs.toFixed(0)} ms), ` +
            `rejoin ${s.rejoinMs.toFixed(0)} ms; round trip before the kill ${s.steadyRttMsP50.toFixed(1)} ms; acked ${s.acked}, lost ${s.lost}, duplicated ${s.duplicated}, out of order ${s.outOfOrder}`,
        );
      });
    }
  }
}

/** Starts every system's cluster (one after another: starting is the heaviest moment), runs `fn`, stops them all. */
async function withClusters(systems: readonly System[], detection: Detection, fn: (lives: Live[]) => Promise<void>): Promise<void> {
  const lives: Live[] = [];
  try {
    for (const system of systems) {
      log(`${system.results.name}: starting 3 nodes (${detection.label})`);
      try {
        const target = await system.start(detection);
        running.add(target);
        lives.push({ results: system.results, target, broken: false });
      } catch (err) {
        log(`${system.results.name}: DID NOT START: ${(err as Error).message.slice(0, 4000)}`);
      }
    }
    await fn(lives);
  } finally {
    for (const live of lives) {
      await live.target.stop().catch((err: Error) => log(`${live.target.name}: stop failed: ${err.message}`));
      running.delete(live.target);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Report

interface Spread {
  median: number;
  min: number;
  max: number;
  count: number;
}

function spread(xs: readonly (number | undefined)[]): Spread | undefined {
  const s = xs.filter((x): x is number => x !== undefined && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  const mid = Math.floor(s.length / 2);
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]!, count: s.length };
}

/** `median (min-max)`, and how many samples when fewer than expected. */
function showSpread(s: Spread | undefined, digits: number, expected: number, unit = ''): string {
  if (s === undefined) return 'n/a';
  const partial = s.count < expected ? ` [${s.count} of ${expected}]` : '';
  return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}-${s.max.toFixed(digits)})${unit}${partial}`;
}

/** Per index, a[i] / b[i] where both are known. */
const pairRatios = (a: readonly (number | undefined)[], b: readonly (number | undefined)[]): (number | undefined)[] =>
  a.map((x, i) => {
    const y = b[i];
    return x === undefined || y === undefined || y === 0 ? undefined : x / y;
  });

interface Target {
  higherIsBetter: boolean;
  value: number;
}
const atLeast = (value: number): Target => ({ higherIsBetter: true, value });
const atMost = (value: number): Target => ({ higherIsBetter: false, value });

function verdict(s: Spread | undefined, target: Target | undefined): string {
  if (target === undefined) return '';
  const goal = `target ${target.higherIsBetter ? '>=' : '<='} ${target.value.toFixed(2)}`;
  if (s === undefined) return `  ${goal}`;
  const met = target.higherIsBetter ? s.median >= target.value : s.median <= target.value;
  return `  ${goal}: ${met ? 'met' : 'NOT met'}`;
}

const LABEL_WIDTH = 50;

function ratioLine(label: string, ratios: readonly (number | undefined)[], expected: number, target?: Target): string {
  const s = spread(ratios);
  return `  ${label.padEnd(LABEL_WIDTH)} ${showSpread(s, 2, expected).padEnd(26)}${verdict(s, target)}`;
}

const produceFigure = (r: SystemResults, l: Load, pick: (t: Throughput) => number): (number | undefined)[] =>
  Array.from({ length: ROUNDS }, (_, i) => {
    const t = r.rounds[i]?.produce.get(loadKey(l));
    return t === undefined ? undefined : pick(t);
  });

const latencyFigure = (r: SystemResults, rf: number, pick: (l: Latency) => number): (number | undefined)[] =>
  Array.from({ length: ROUNDS }, (_, i) => {
    const l = r.rounds[i]?.latency.get(rf);
    return l === undefined ? undefined : pick(l);
  });

const failoverFigure = (r: SystemResults, d: Detection, pick: (s: FailoverSample) => number): (number | undefined)[] =>
  Array.from({ length: FAILOVER_RUNS }, (_, i) => {
    const s = r.failover.get(d)?.[i];
    return s === undefined ? undefined : pick(s);
  });

function replicationCostLines(r: SystemResults): string[] {
  const lines = [`${r.name}:`];
  for (const partitions of wanted('produce') ? PARTITION_COUNTS : []) {
    const rf3 = produceFigure(r, { partitions, replicationFactor: 3 }, (t) => t.recordsPerS);
    const rf1 = produceFigure(r, { partitions, replicationFactor: 1 }, (t) => t.recordsPerS);
    lines.push(ratioLine(`produce records/s, ${partitions} partitions`, pairRatios(rf3, rf1), ROUNDS, atLeast(0.5)));
  }
  for (const partitions of wanted('produce') ? PARTITION_COUNTS : []) {
    const rf3 = produceFigure(r, { partitions, replicationFactor: 3 }, (t) => t.cpuSecondsPerGb);
    const rf1 = produceFigure(r, { partitions, replicationFactor: 1 }, (t) => t.cpuSecondsPerGb);
    lines.push(ratioLine(`broker CPU per GB, ${partitions} partitions`, pairRatios(rf3, rf1), ROUNDS));
  }
  if (LATENCY_LOADS.length > 0) {
    for (const [name, pick] of [
      ['p50', (l: Latency) => l.p50Ms],
      ['p99', (l: Latency) => l.p99Ms],
    ] as const) {
      lines.push(
        ratioLine(
          `produce->consume ${name}, ${LATENCY_PARTITIONS} partitions, same load`,
          pairRatios(latencyFigure(r, 3, pick), latencyFigure(r, 1, pick)),
          ROUNDS,
        ),
      );
    }
  }
  return lines;
}

function versusKafkaLines(sluice: SystemResults, kafka: SystemResults, detections: readonly Detection[]): string[] {
  const lines: string[] = [];
  for (const l of LOADS) {
    const target = l.replicationFactor === 3 ? atLeast(1) : undefined;
    lines.push(
      ratioLine(
        `produce ${loadLabel(l)}, records/s`,
        pairRatios(
          produceFigure(sluice, l, (t) => t.recordsPerS),
          produceFigure(kafka, l, (t) => t.recordsPerS),
        ),
        ROUNDS,
        target,
      ),
    );
  }
  for (const l of LOADS) {
    lines.push(
      ratioLine(
        `broker CPU per GB, ${loadLabel(l)}`,
        pairRatios(
          produceFigure(sluice, l, (t) => t.cpuSecondsPerGb),
          produceFigure(kafka, l, (t) => t.cpuSecondsPerGb),
        ),
        ROUNDS,
        atMost(1),
      ),
    );
  }
  for (const rf of LATENCY_LOADS.map((l) => l.replicationFactor)) {
    for (const [name, pick] of [
      ['p50', (l: Latency) => l.p50Ms],
      ['p99', (l: Latency) => l.p99Ms],
      ['p999', (l: Latency) => l.p999Ms],
    ] as const) {
      lines.push(
        ratioLine(
          `produce->consume RF ${rf}, ${name}, same offered load`,
          pairRatios(latencyFigure(sluice, rf, pick), latencyFigure(kafka, rf, pick)),
          ROUNDS,
          rf === 3 && name === 'p99' ? atMost(0.7) : undefined,
        ),
      );
    }
  }
  for (const d of detections) {
    const pick = (s: FailoverSample) => s.failoverMs;
    lines.push(
      ratioLine(
        `failover, ${d.short}`,
        pairRatios(failoverFigure(sluice, d, pick), failoverFigure(kafka, d, pick)),
        FAILOVER_RUNS,
        atMost(1),
      ),
    );
  }
  return lines;
}

/** Errors and bounds of any round, so that a figure is never read without them. */
function produceNotes(r: SystemResults, l: Load): string {
  const notes: string[] = [];
  r.rounds.forEach((f, i) => {
    const t = f?.produce.get(loadKey(l));
    if (t === undefined) return;
    if (t.errors > 0) notes.push(`round ${i + 1}: ${t.errors} failed requests sent again (first ${t.firstError})`);
    if (t.bounded) notes.push(`round ${i + 1}: STOPPED at the ${PHASE_MAX_MS / 1000} s bound with ${t.records} records`);
  });
  return notes.length === 0 ? '' : `\n      ${notes.join('\n      ')}`;
}

function latencyNotes(r: SystemResults, rf: number): string {
  const notes: string[] = [];
  r.rounds.forEach((f, i) => {
    const l = f?.latency.get(rf);
    if (l === undefined) return;
    if (l.errors > 0) notes.push(`round ${i + 1}: ${l.errors} FAILED requests sent again`);
    if (l.samples < l.sent) notes.push(`round ${i + 1}: ONLY ${l.samples} of ${l.sent} records consumed`);
  });
  return notes.length === 0 ? '' : `\n      ${notes.join('\n      ')}`;
}

/** `others`: the clusters that ran, idle, beside each load. */
function absoluteLines(r: SystemResults, others: readonly SystemName[]): string[] {
  const lines = [`${r.name}:`];
  for (const l of LOADS) {
    const mbPerS = showSpread(spread(produceFigure(r, l, (t) => t.mbPerS)), 1, ROUNDS, ' MB/s');
    const perS = showSpread(spread(produceFigure(r, l, (t) => t.recordsPerS)), 0, ROUNDS, ' records/s');
    const cpu = showSpread(spread(produceFigure(r, l, (t) => t.cpuSecondsPerGb)), 1, ROUNDS, ' s/GB');
    const idle = showSpread(spread(produceFigure(r, l, (t) => t.idleCoreShare)), 2, ROUNDS, ' cores');
    lines.push(
      `  produce ${loadLabel(l).padEnd(32)} ${mbPerS}, ${perS}\n      broker CPU ${cpu}${others.length > 0 ? `; meanwhile ${others.join(' and ')}, idle, used ${idle}` : ''}${produceNotes(r, l)}`,
    );
  }
  for (const rf of LATENCY_LOADS.map((l) => l.replicationFactor)) {
    const figure = (pick: (l: Latency) => number, digits: number, unit: string) =>
      showSpread(spread(latencyFigure(r, rf, pick)), digits, ROUNDS, unit);
    lines.push(
      `  produce->consume RF ${rf}, ${LATENCY_PARTITIONS} partitions   p50 ${figure((l) => l.p50Ms, 1, ' ms')}, p99 ${figure((l) => l.p99Ms, 1, ' ms')}, ` +
        `p999 ${figure((l) => l.p999Ms, 1, ' ms')}\n      offered ${figure((l) => l.offeredPerS, 0, ' records/s')}, ` +
        `acknowledged ${figure((l) => l.achievedPerS, 0, ' records/s')}, ${figure((l) => l.sent / l.requests, 1, ' records a request')}${latencyNotes(r, rf)}`,
    );
  }
  for (const [d, all] of r.failover) {
    const samples = all.filter((s): s is FailoverSample => s !== undefined);
    const figure = (pick: (s: FailoverSample) => number) => showSpread(spread(failoverFigure(r, d, pick)), 0, FAILOVER_RUNS, ' ms');
    const lost = samples.reduce((n, s) => n + s.lost, 0);
    const dup = samples.reduce((n, s) => n + s.duplicated + s.outOfOrder, 0);
    const errs = new Map<string, number>();
    for (const s of samples) for (const [e, n] of s.errors) errs.set(e, (errs.get(e) ?? 0) + n);
    lines.push(`  failover, ${d.label}:`);
    lines.push(`    kill -> first ack by the new leader  ${figure((s) => s.failoverMs)}`);
    lines.push(`    kill -> Metadata names a new leader  ${figure((s) => s.leaderSeenMs)}`);
    lines.push(`    that Metadata -> first ack           ${figure((s) => s.failoverMs - s.leaderSeenMs)}`);
    lines.push(`    restarted victim back in the ISR     ${figure((s) => s.rejoinMs)}`);
    lines.push(
      `    produce round trip before the kill   ${showSpread(spread(failoverFigure(r, d, (s) => s.steadyRttMsP50)), 1, FAILOVER_RUNS, ' ms')}`,
    );
    lines.push(
      `    ${samples.reduce((n, s) => n + s.acked, 0)} acknowledged records read back: ${lost === 0 && dup === 0 ? 'every one once, in order' : `${lost} LOST, ${dup} DUPLICATED or out of order`}`,
    );
    lines.push(`    errors the producer retried: ${[...errs].map(([e, n]) => `${e} ${n}`).join(', ') || 'none'}`);
  }
  return lines;
}

function report(results: readonly SystemResults[], detections: readonly Detection[]): void {
  const lines: string[] = [
    '',
    `Every figure: median (min-max) over ${ROUNDS} alternating rounds (failover: ${FAILOVER_RUNS} alternating runs), this run.`,
    '',
    '== replication cost: RF 3 acks=all (min.insync.replicas=2) / RF 1 acks=1, same cluster, per round',
  ];
  for (const r of results) lines.push(...replicationCostLines(r));
  const sluice = results.find((r) => r.name === 'Sluice');
  const kafka = results.find((r) => r.name === 'Kafka');
  if (sluice !== undefined && kafka !== undefined) {
    lines.push('', '== Sluice / Kafka, 3 nodes each, same client and loads, per round');
    lines.push(...versusKafkaLines(sluice, kafka, wanted('failover') ? detections : []));
  }
  lines.push('', '== absolute');
  for (const r of results) {
    const others = results.filter((o) => o !== r).map((o) => o.name);
    lines.push(...absoluteLines(r, others));
  }
  lines.push(
    '',
    `records of ${RECORD_BYTES} bytes; produce ${PRODUCE_RECORDS} records a load, ${BATCH_RECORDS} a batch, ` +
      `${PRODUCE_CONNECTIONS_PER_PARTITION} connections per partition, ${PRODUCE_IN_FLIGHT} requests in flight each; ` +
      `produce->consume for ${LATENCY_SECONDS} s at half the lower of the clusters' RF 3 records/s at ${LATENCY_PARTITIONS} partitions in the same round; ` +
      `failover retry every ${RETRY_BACKOFF_MS} ms`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function main(): Promise<void> {
  const startedAtMs = performance.now();
  const loadAtStart = load();
  const detections = [KAFKA_DEFAULT_DETECTION, ...(argv.includes('--no-fast') ? [] : [FAST_DETECTION])];
  const newResults = (name: SystemName): SystemResults => ({ name, rounds: [], failover: new Map() });
  const systems: System[] = [{ results: newResults('Sluice'), start: startSluiceCluster }];
  if (argv.includes('--no-kafka')) {
    log('Kafka: skipped (--no-kafka)');
  } else if (!kafkaInstalled()) {
    process.stderr.write(
      '\n  *** Kafka is NOT installed (.cache/kafka-*/libs/.complete missing): Sluice/Kafka figures skipped. Run scripts/install-test-clients.sh ***\n\n',
    );
  } else {
    systems.push({ results: newResults('Kafka'), start: startKafkaCluster });
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping the clusters`);
      void Promise.allSettled([...running].map((t) => t.stop())).then(() => process.exit(1));
    });
  }
  for (const detection of detections) {
    const loads = detection === KAFKA_DEFAULT_DETECTION && LOADS.length > 0;
    if (!loads && !wanted('failover')) continue;
    await withClusters(systems, detection, async (lives) => {
      if (loads) await measureRounds(lives);
      if (wanted('failover')) await measureFailover(lives, detection);
    });
  }
  report(
    systems.map((s) => s.results),
    detections,
  );
  // The machine may be shared: say how busy it was.
  process.stdout.write(
    `${cpus().length} cores; load average (1, 5, 15 min) ${loadAtStart} at the start, ${load()} at the end; ` +
      `the run took ${((performance.now() - startedAtMs) / 60_000).toFixed(1)} min\n`,
  );
}

await main();
