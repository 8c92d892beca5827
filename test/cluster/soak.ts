/**
 * One fault run, end to end: three real Sluice nodes in network namespaces, real clients
 * producing and consuming, the nemesis for `durationMs`, then healing, reading the log back
 * and checking the history. `npm run test:cluster` runs a short one (test/cluster/faults.test.ts),
 * `npm run test:faults -- --duration S [--seed N]` a long one (scripts/faults/main.ts).
 *
 * Settings that make each fault take seconds (as test/helpers/cluster.ts and
 * scripts/bench/cluster.ts use them):
 * - broker.session.timeout.ms 3000 / broker.heartbeat.interval.ms 500: the controller fences
 *   a dead or silent broker 3 s after its last heartbeat (Kafka's defaults: 9 s / 2 s).
 * - replica.lag.time.max.ms 3000: a silent follower leaves the ISR after 3 s (Kafka: 30 s).
 * - controller.quorum.election.timeout.ms 1000 / fetch.timeout.ms 2000: Raft elects a new
 *   controller within about 2 s of losing the leader.
 * - group.initial.rebalance.delay.ms 0, consumers' session.timeout.ms 10000: groups settle fast.
 * - offsets.topic.num.partitions 6: the internal topic's 50 default partitions would be most of
 *   what two cores replicate; log.segment.bytes 1 MiB: segments roll during a run, under faults.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs, { type Admin, type Kafka } from 'kafkajs';
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  type DescribeQuorumResponse,
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
} from '../../protocol/messages/describe-quorum.ts';
import { METADATA_TOPIC } from '../../protocol/internal-topics.ts';
import { KafkaCluster } from '../../src/client/cluster.ts';
import { readRecords } from '../helpers/read-records.ts';
import {
  CONSUMER_SESSION_TIMEOUT_MS,
  javaWorkload,
  KafkajsWorkload,
  librdkafkaWorkload,
  type Workload,
  type WorkloadContext,
} from './clients.ts';
import { EioDisk, FullDisk, removeStaleMounts } from './disks.ts';
import { FencedHighWatermarks } from './fenced-high-watermarks.ts';
import { type CheckResult, checkHistory, type GroupOutcome, type History, type LogRecord, type PartitionState } from './history.ts';
import { FAULT_KINDS, type FaultKind, Nemesis, planSchedule } from './nemesis.ts';
import { FaultNode, type NodeLayout, snapshotPackage, writeConfigs } from './nodes.ts';
import { Recorder } from './recorder.ts';
import { Topology } from './topology.ts';

const { logLevel } = kafkajs;

export const FAST_FAILURE = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
  'controller.quorum.election.timeout.ms': 1000,
  'controller.quorum.fetch.timeout.ms': 2000,
  'group.initial.rebalance.delay.ms': 0,
  'offsets.topic.num.partitions': 6,
  'log.segment.bytes': 1024 * 1024,
};
const SESSION_TIMEOUT_MS = FAST_FAILURE['broker.session.timeout.ms'];
/**
 * How long after a pause or a cut heals its node may still answer as the leader or coordinator
 * it was: until it hears of its replacement, bounded by the broker session and the quorum's
 * fetch timeout, with room for a client's in-flight request.
 */
const STALE_READ_GRACE_MS = 2 * SESSION_TIMEOUT_MS + 5_000;
const NODES = 3;
const TOPIC = 'faults';
const PARTITIONS = 3;
/** The node whose log dir is a small tmpfs (disk-full), and the one on the EIO filesystem (disk-eio). */
const FULL_DISK_NODE = 3;
const EIO_DISK_NODE = 2;
/**
 * Room for an hour of the workload's records (it filled 64 MiB in about half an hour) besides
 * the filler: a tmpfs the workload itself fills leaves the node unable to restart, a fault the
 * schedule never meant.
 */
const TMPFS_MB = 512;

export type ClientName = 'kafkajs' | 'librdkafka' | 'java';

export interface SoakOptions {
  readonly durationMs: number;
  readonly seed: number;
  readonly clients: readonly ClientName[];
  /** Fault kinds to draw from; disk-eio needs `eiofs`. */
  readonly kinds: readonly FaultKind[];
  /** The EIO filesystem binary, or null (then no node's log dir is on it). */
  readonly eiofs: string | null;
  readonly log: (line: string) => void;
  /** At least this many nemesis steps, however short the duration (a short run: every kind once). */
  readonly minSteps?: number;
  /** Pause between two sends of one producer; default 20 ms. */
  readonly intervalMs?: number;
}

export interface SoakReport {
  readonly seed: number;
  readonly result: CheckResult;
  readonly injected: ReadonlyMap<FaultKind, number>;
  readonly unacknowledged: number;
  readonly summary: string;
  /** Kept when the run failed: the nodes' output and configs. */
  readonly runDir: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function withTimeout<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p.catch(() => fallback), new Promise<T>((r) => (timer = setTimeout(() => r(fallback), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(200);
  }
  return false;
}

/** Everything a run holds that must be let go of, even on SIGINT. */
class Resources {
  topology: Topology | null = null;
  nodes: FaultNode[] = [];
  workloads: Workload[] = [];
  fullDisk: FullDisk | null = null;
  eioDisk: EioDisk | null = null;

  private released = false;

  /** Synchronous, so that a SIGINT handler can run it; once. */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const w of this.workloads) w.kill();
    for (const n of this.nodes) n.killNow();
    // The nodes' files on the fault disks close with their processes; wait for them to go.
    const deadline = Date.now() + 5000;
    while (this.nodes.some((n) => n.running) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    this.eioDisk?.unmount();
    this.fullDisk?.unmount();
    this.topology?.destroy();
    for (const n of this.nodes) n.closeFiles();
  }
}

/** The resources of runs under way: what releaseRuns() lets go of. */
const active = new Set<Resources>();

/**
 * Kills the nodes and clients of every run still under way and removes their namespaces and
 * mounts: for a test's `after` hook, when a timeout left a run behind.
 */
export function releaseRuns(): void {
  for (const res of active) res.release();
  active.clear();
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const res = new Resources();
  active.add(res);
  const onSigint = (): void => {
    options.log('SIGINT: tearing down the fault cluster');
    res.release();
    process.exit(130);
  };
  process.prependListener('SIGINT', onSigint);
  removeStaleMounts(tmpdir());
  const runDir = mkdtempSync(join(tmpdir(), `sluice-faults-${process.pid}-`));
  let failed = true;
  try {
    const report = await soak(options, res, runDir);
    failed = report.result.violations.length > 0;
    return report;
  } finally {
    process.off('SIGINT', onSigint);
    res.release();
    active.delete(res);
    if (!failed) rmSync(runDir, { recursive: true, force: true });
    else options.log(`node output and configs kept in ${runDir}`);
  }
}

async function soak(options: SoakOptions, res: Resources, runDir: string): Promise<SoakReport> {
  const startedAt = Date.now();
  const log = (line: string): void => options.log(`[+${((Date.now() - startedAt) / 1000).toFixed(1)} s] ${line}`);
  const sluiceJs = snapshotPackage(join(runDir, 'pkg'));
  const net = Topology.create(NODES);
  res.topology = net;
  log(
    `network: namespaces ${net.namespace(1)}..${NODES} on bridge ${net.bridge} (${net.subnet}.0/24); slow links: ${net.netem ? 'netem delay' : 'tbf rate limit (no netem in this kernel)'}`,
  );

  const layouts: NodeLayout[] = Array.from({ length: NODES }, (_, i) => {
    const nodeId = i + 1;
    const nodeDir = join(runDir, `node-${nodeId}`);
    return {
      nodeId,
      namespace: net.namespace(nodeId),
      ip: net.nodeIp(nodeId),
      logDir: join(nodeDir, 'logs'),
      metadataDir: join(nodeDir, 'metadata'),
      nodeDir,
    };
  });
  for (const l of layouts) mkdirSync(l.nodeDir, { recursive: true });
  if (options.kinds.includes('disk-full')) {
    res.fullDisk = FullDisk.mount(layouts[FULL_DISK_NODE - 1]!.logDir, TMPFS_MB);
    log(`node ${FULL_DISK_NODE}: log dir on a ${TMPFS_MB} MiB tmpfs`);
  }
  if (options.eiofs !== null && options.kinds.includes('disk-eio')) {
    const l = layouts[EIO_DISK_NODE - 1]!;
    res.eioDisk = await EioDisk.mount(options.eiofs, join(l.nodeDir, 'backing'), l.logDir);
    log(`node ${EIO_DISK_NODE}: log dir on eiofs`);
  }
  const configs = writeConfigs(layouts, FAST_FAILURE);
  const recorder = new Recorder();
  const held = new Set<number>();
  const restarts = new Map<number, number>();
  let nemesis: Nemesis | null = null;
  const nodes: FaultNode[] = layouts.map(
    (l, i) =>
      new FaultNode(l, configs[i]!, sluiceJs, 60_000, recorder.startedAtMs, (exit) => {
        recorder.exits.push(exit);
        if (exit.caused) return;
        log(`!!! node ${exit.nodeId} exited on its own (code ${exit.code}, signal ${exit.signal})`);
        // Keep the run going: start it again (a few times) unless a fault holds it.
        const n = (restarts.get(exit.nodeId) ?? 0) + 1;
        restarts.set(exit.nodeId, n);
        if (n <= 3 && !held.has(exit.nodeId) && !(nemesis?.holds(exit.nodeId) ?? false))
          setTimeout(() => void nodes[i]!.start().catch((err: Error) => log(`node ${exit.nodeId} restart: ${err.message}`)), 2000);
      }),
  );
  res.nodes = nodes;
  const starting = await Promise.allSettled(nodes.map((n) => n.start()));
  const notStarted = starting.findIndex((s) => s.status === 'rejected');
  if (notStarted >= 0)
    throw new Error(
      `the cluster did not start: ${(starting[notStarted] as PromiseRejectedResult).reason}\n${nodes.map((n) => n.tail()).join('\n')}`,
    );
  log('3 nodes ready');

  const bootstrap = nodes.map((n) => n.address);
  const kafka = new kafkajs.Kafka({
    clientId: 'fault-admin',
    brokers: bootstrap,
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 },
    connectionTimeout: 2000,
    requestTimeout: 5000,
  });
  const admin = kafka.admin();
  await admin.connect();
  let sampling = true;
  let sampler: Promise<void> = Promise.resolve();
  try {
    await createTopic(admin, nodes);
    const ctx: WorkloadContext = { bootstrap, topic: TOPIC, partitions: PARTITIONS, recorder, intervalMs: options.intervalMs ?? 20 };
    const workloads: Workload[] = [];
    if (options.clients.includes('kafkajs')) workloads.push(new KafkajsWorkload(ctx));
    if (options.clients.includes('librdkafka')) workloads.push(librdkafkaWorkload(ctx));
    if (options.clients.includes('java')) workloads.push(javaWorkload(ctx));
    res.workloads = workloads;
    await Promise.all(workloads.map((w) => w.start()));
    const producers = workloads.flatMap((w) => w.producers);
    const warm = await until(
      () => producers.every((p) => recorder.acked(p) >= 20) && workloads.every((w) => recorder.unconsumed(w.group) < recorder.acks.length),
      120_000,
    );
    log(
      `clients ${warm ? 'warmed up' : 'did NOT all warm up in 120 s'}: ${producers.map((p) => `${p} ${recorder.acked(p)}`).join(', ')} acknowledged`,
    );
    sampler = sample(
      admin,
      new FencedHighWatermarks(TOPIC, () => nodes, 5000),
      recorder,
      workloads.map((w) => w.group),
      () => sampling,
    );

    const target = {
      nodes,
      topology: net,
      fullDisk: res.fullDisk === null ? null : { nodeId: FULL_DISK_NODE, disk: res.fullDisk },
      eioDisk: res.eioDisk === null ? null : { nodeId: EIO_DISK_NODE, disk: res.eioDisk },
      partitions: PARTITIONS,
      activeController: () => activeController(nodes),
      partitionLeader: (partition: number) => partitionLeader(nodes, partition),
      log,
    };
    const kinds = options.kinds.filter((k) => k !== 'disk-eio' || res.eioDisk !== null);
    const steps = planSchedule(options.seed, {
      kinds,
      durationMs: options.durationMs,
      minSteps: options.minSteps,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    nemesis = new Nemesis(options.seed, target);
    log(`nemesis: seed ${options.seed}, ${steps.length} steps planned over ${options.durationMs / 1000} s from ${kinds.join(', ')}`);
    await nemesis.run(steps);

    log('healing: network faults lifted, paused nodes continued, disks drained, stopped nodes started');
    for (const id of nodes.map((n) => n.nodeId)) held.add(id);
    net.healAll();
    await res.fullDisk?.drain();
    if (res.eioDisk?.broken) res.eioDisk.heal();
    for (const n of nodes) n.resume();
    await Promise.allSettled(nodes.filter((n) => !n.running).map((n) => n.start()));
    held.clear();
    const healedAt = Date.now();
    const isrFull = await until(async () => (await partitionStates(admin)).every((p) => p.isr.length === p.replicas.length), 120_000);
    log(`ISRs ${isrFull ? `full again after ${Date.now() - healedAt} ms` : 'NOT full 120 s after healing'}`);

    const stable = new Map<string, number | null>();
    await Promise.all(
      workloads.map(async (w) => {
        const ok = await until(async () => groupStable(admin, w.group, w.members), 3 * CONSUMER_SESSION_TIMEOUT_MS);
        stable.set(w.group, ok ? Date.now() - healedAt : null);
      }),
    );
    await Promise.all(workloads.map((w) => w.stopProducing(180_000)));
    const quietAt = Date.now();
    log(`producers stopped: ${recorder.acks.length} acknowledged, ${recorder.unacknowledged} given up on`);
    const groups: GroupOutcome[] = [];
    await Promise.all(
      workloads.map(async (w) => {
        const ok = await until(() => recorder.unconsumed(w.group) === 0, 60_000);
        groups.push({
          group: w.group,
          stableMs: stable.get(w.group) ?? null,
          limitMs: CONSUMER_SESSION_TIMEOUT_MS,
          caughtUpMs: ok ? Date.now() - quietAt : null,
        });
      }),
    );
    log(
      `groups: ${groups
        .map(
          (g) =>
            `${g.group} ${g.stableMs === null ? 'never Stable' : `Stable ${g.stableMs} ms after healing`}, ${g.caughtUpMs === null ? 'did not catch up' : `caught up ${g.caughtUpMs} ms after the last send`}`,
        )
        .join('; ')}`,
    );
    sampling = false;
    await sampler;

    const finalPartitions = await partitionStates(admin);
    const stored = await readLog(kafka, admin);
    log(`read back ${stored.length} records`);
    await Promise.all(workloads.map((w) => w.close(30_000)));
    for (const id of nodes.map((n) => n.nodeId)) held.add(id);
    await Promise.all(nodes.map((n) => n.stop()));

    const history: History = {
      topic: TOPIC,
      acks: recorder.acks,
      unacknowledged: recorder.unacknowledged,
      log: stored,
      consumed: recorder.consumed,
      highWatermarks: recorder.highWatermarks,
      staleReadWindows: nemesis.cutOff.map((w) => ({
        fromMs: w.fromMs - recorder.startedAtMs,
        untilMs: w.untilMs - recorder.startedAtMs + STALE_READ_GRACE_MS,
      })),
      commits: recorder.commits,
      finalPartitions,
      groups,
      exits: recorder.exits,
    };
    const result = checkHistory(history);
    const injected = nemesis.injected;
    return {
      seed: options.seed,
      result,
      injected,
      unacknowledged: recorder.unacknowledged,
      summary: summarize(options, result, injected, recorder, net.netem),
      runDir,
    };
  } finally {
    sampling = false;
    await sampler;
    await admin.disconnect().catch(() => {});
  }
}

/** Whether `group` is Stable with `members` members (DescribeGroups through its coordinator). */
async function groupStable(admin: Admin, group: string, members: number): Promise<boolean> {
  const described = await withTimeout(admin.describeGroups([group]), 5000, null);
  const g = described?.groups[0];
  return g !== undefined && g.state === 'Stable' && g.members.length === members;
}

async function createTopic(admin: Admin, nodes: readonly FaultNode[]): Promise<void> {
  await admin.createTopics({
    topics: [
      { topic: TOPIC, numPartitions: PARTITIONS, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
    ],
  });
  for (const node of nodes) {
    const probe = new KafkaCluster([node.address]);
    try {
      const ok = await until(async () => {
        const topics = (await probe.metadata([TOPIC]).catch(() => null))?.topics ?? [];
        return (
          topics.length > 0 &&
          topics.every((t) => t.errorCode === 0 && t.partitions.length === PARTITIONS && t.partitions.every((p) => p.leaderId >= 0))
        );
      }, 30_000);
      if (!ok) throw new Error(`node ${node.nodeId} did not learn of topic ${TOPIC} in 30 s`);
    } finally {
      await probe.close();
    }
  }
}

/**
 * Every 500 ms: the topic's high watermarks (ListOffsets latest, fenced by the newest leader
 * epoch seen) and each group's committed offsets.
 */
async function sample(
  admin: Admin,
  highWatermarks: FencedHighWatermarks,
  recorder: Recorder,
  groups: readonly string[],
  going: () => boolean,
): Promise<void> {
  while (going()) {
    const at = recorder.now();
    for (const [partition, highWatermark] of await highWatermarks.sample()) recorder.highWatermark(partition, highWatermark, at);
    for (const groupId of groups) {
      const asked = recorder.now();
      const committed = await withTimeout(admin.fetchOffsets({ groupId, topics: [TOPIC] }), 5000, null);
      for (const t of committed ?? []) for (const p of t.partitions) recorder.sampledCommit(groupId, p.partition, Number(p.offset), asked);
    }
    await sleep(500);
  }
}

/** The active controller by DescribeQuorum, from the node that knows the newest epoch; -1 when none answers. */
async function activeController(nodes: readonly FaultNode[]): Promise<number> {
  const answers = await Promise.all(
    nodes
      .filter((n) => n.running && !n.paused)
      .map((n) =>
        withTimeout(
          (async () => {
            const client = new KafkaCluster([n.address]);
            try {
              const conn = await client.anyConnection();
              const r = await conn.send<DescribeQuorumResponse>(
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
              const p = r.topics[0]?.partitions[0];
              return p === undefined ? null : { leader: p.leaderId, epoch: p.leaderEpoch };
            } finally {
              await client.close();
            }
          })(),
          3000,
          null,
        ),
      ),
  );
  let best: { leader: number; epoch: number } | null = null;
  for (const a of answers) if (a !== null && a.leader >= 0 && (best === null || a.epoch > best.epoch)) best = a;
  return best?.leader ?? -1;
}

async function partitionLeader(nodes: readonly FaultNode[], partition: number): Promise<number> {
  for (const n of nodes.filter((x) => x.running && !x.paused)) {
    const client = new KafkaCluster([n.address]);
    try {
      const leaders = await withTimeout(client.leaders([TOPIC]), 3000, null);
      const id = leaders?.get(TOPIC)?.get(partition);
      if (id !== undefined && id >= 0) return id;
    } finally {
      await client.close();
    }
  }
  return -1;
}

async function partitionStates(admin: Admin): Promise<(PartitionState & { topic: string })[]> {
  const meta = await withTimeout(admin.fetchTopicMetadata({ topics: [TOPIC, '__consumer_offsets'] }), 10_000, null);
  if (meta === null) return [{ topic: TOPIC, partition: -1, replicas: [1, 2, 3], isr: [] }];
  return meta.topics.flatMap((t) =>
    t.partitions.map((p) => ({ topic: t.name, partition: p.partitionId, replicas: p.replicas, isr: p.isr })),
  );
}

/** Every record of the topic, from offset 0 to the high watermark of each partition. */
async function readLog(kafka: Kafka, admin: Admin): Promise<LogRecord[]> {
  const ends = await admin.fetchTopicOffsets(TOPIC);
  const total = ends.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
  if (total === 0) return [];
  const read = await readRecords(kafka, TOPIC, total, undefined, 180_000);
  return read.map((r) => ({
    partition: r.partition,
    offset: Number(r.offset),
    value: r.value,
    producerId: r.producerId,
    producerEpoch: r.producerEpoch,
  }));
}

function summarize(
  options: SoakOptions,
  result: CheckResult,
  injected: ReadonlyMap<FaultKind, number>,
  recorder: Recorder,
  netem: boolean,
): string {
  const faults = FAULT_KINDS.filter((k) => injected.has(k)).map((k) => `${k} ${injected.get(k)}`);
  const total = [...injected.values()].reduce((a, b) => a + b, 0);
  const byProducer = new Map<string, number>();
  for (const a of recorder.acks) byProducer.set(a.producer, (byProducer.get(a.producer) ?? 0) + 1);
  const lines = [
    `faults summary (seed ${options.seed}, ${options.durationMs / 1000} s of faults, clients ${options.clients.join(', ')}):`,
    `  faults injected: ${total} (${faults.join(', ')}); slow links by ${netem ? 'netem delay' : 'tbf (no netem in this kernel)'}`,
    `  records acknowledged ${result.acknowledged} (${[...byProducer].map(([p, n]) => `${p} ${n}`).join(', ')}), given up on ${recorder.unacknowledged}, stored ${result.stored}`,
    `  lost ${result.lost}, duplicated ${result.duplicated}, reordered ${result.reordered}${
      result.resentUnderNewEpoch > 0
        ? `; ${result.resentUnderNewEpoch} more stored twice by their producer's re-send under a bumped epoch (not deduplicable; see history.ts)`
        : ''
    }`,
    `  node exits: ${recorder.exits.length} (${recorder.exits.filter((e) => !e.caused).length} on their own); client errors ${recorder.clientErrorCount}`,
    `  violations: ${result.violations.length === 0 ? 'none' : result.violations.length}`,
    ...result.violations.map((v) => `    ${v.kind}: ${v.detail}`),
  ];
  if (recorder.clientErrors.size > 0)
    lines.push(
      '  client errors (first seen, count):',
      ...[...recorder.clientErrors].slice(0, 15).map(([m, e]) => `    +${e.firstAtMs} ms x${e.count}: ${m.slice(0, 300)}`),
    );
  lines.push(`  reproduce: npm run test:faults -- --duration ${options.durationMs / 1000} --seed ${options.seed}`);
  return lines.join('\n');
}
