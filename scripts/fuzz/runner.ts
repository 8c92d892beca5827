// The fuzz loop: a real broker process, several concurrent connections per batch (valid
// lanes whose every answer is checked, mutation lanes that throw hostile frames), checks
// between batches, a reproducer file per finding, a restart after a crash or a hang.
//
// Throughput: requests come from a pool of encoded requests per (api, version, kind),
// generated once (schema walk, record batches, compression) and then re-sent with a new
// header or mutated as copies; valid lanes pipeline their frames and match answers by
// correlation id; mutation lanes run MUTATION_PARALLEL connections each and half-close
// instead of sleeping; the checks (alive, stderr, fresh ApiVersions probe, a readback
// sample) run at most every CHECK_EVERY_MS, a big readback sample every
// BIG_SAMPLE_EVERY_MS, the full readback after every restart and at the end; heavy
// scenarios run once each per run. FUZZ_DEBUG=1 logs valid answers that took > 200 ms.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnBroker, type BrokerProcess, type SpawnBrokerOptions } from '../../test/helpers/broker-process.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { makeCreateTopicsRequest, type CreateTopicsResponse } from '../../protocol/messages/create-topics.ts';
import { makeDescribeGroupsRequest, type DescribeGroupsResponse } from '../../protocol/messages/describe-groups.ts';
import type { ProduceResponse } from '../../protocol/messages/produce.ts';
import { EncodeError } from '../../protocol/primitives.ts';
import {
  apiName,
  BatchFactory,
  CONNECTION_STATEFUL,
  Generator,
  LEDGER_PARTITIONS,
  LEDGER_TOPICS,
  SCRATCH_TOPICS,
  type GenRequest,
} from './generator.ts';
import { encodeTraced, mutateFrame, type Mark } from './mutator.ts';
import { completeLines, errorLines, errorLineSignature, type BrokerErrorLine } from './broker-log.ts';
import { checkReadable, judgeProduce, Ledger, probeApiVersions, unhandledLines, type LedgerEntry } from './oracle.ts';
import { Prng } from './prng.ts';
import { HEAVY_SCENARIOS, pickScenario } from './scenarios.ts';
import { encodeHeaderBytes, frame, FuzzConnection, roundTrip } from './wire.ts';

export interface FuzzOptions {
  durationS: number;
  seed: number;
  /** Reproducer files go here (created on the first finding). */
  outDir: string;
  /** Concurrent connections per batch: half valid lanes, half mutation lanes. Default 4. */
  connections?: number;
  /** Frames per valid connection per batch (pipelined, answers awaited together). Default 48. */
  framesPerConnection?: number;
  /** Stop after this many frames even if time remains. */
  maxFrames?: number;
  /** Restart the broker (SIGTERM, same data dir) this often, to check what survives. Default 60 s. */
  restartEveryS?: number;
  /** Decompression bombs and a CreateTopics storm. Default true. */
  heavy?: boolean;
  broker?: SpawnBrokerOptions;
  log?: (line: string) => void;
}

export type FindingKind =
  | 'process-died'
  | 'hang'
  | 'restart-failed'
  | 'unhandled-error'
  | 'error-log'
  | 'lost-record'
  | 'changed-record'
  | 'accepted-invalid-batch'
  | 'dropped-connection'
  | 'valid-request-unanswered'
  | 'undecodable-response';

export interface Finding {
  kind: FindingKind;
  signature: string;
  detail: string;
  file: string | null;
}

export interface FuzzSummary {
  seed: number;
  framesSent: number;
  elapsedS: number;
  framesPerSecond: number;
  batches: number;
  restarts: number;
  ackedRecords: number;
  findings: Finding[];
  byKind: Record<string, number>;
}

interface FrameRecord {
  conn: number;
  port: number;
  atMs: number;
  apiKey: number;
  version: number;
  label: string;
  mutation: string | null;
  bytes: Buffer;
}

interface Suspicion {
  kind: FindingKind;
  detail: string;
  suspect: FrameRecord;
  conn: number;
}

const HISTORY_FRAMES = 20_000;
const HISTORY_WINDOW_MS = 10_000;
/** Frames saved in a reproducer file (the most recent ones). */
const REPRO_FRAMES = 3_000;
/** Encoded requests kept per (api, version, kind): copies are mutated, the pool is reused. */
const POOL_SIZE = 8;
/** Cheap checks (alive, ApiVersions probe, stderr, a readback sample) at most this often. */
const CHECK_EVERY_MS = 1_000;
/** A bigger readback sample this often; the full readback runs after restarts and at the end. */
const BIG_SAMPLE_EVERY_MS = 15_000;
/** Sequential mutation connections per mutation lane. */
const MUTATION_PARALLEL = 8;
/** The history also stops at this many bytes of frames (edge requests reach megabytes). */
const HISTORY_MAX_BYTES = 96 << 20;
/** Requests a broker answers late by design (a JoinGroup waits for the rebalance). */
const SLOW_BY_DESIGN = new Set<number>([ApiKey.JoinGroup]);
const MAX_DETACHED = 8;
const PROBE_TIMEOUT_MS = 2_000;
/** How long a finding waits for the broker's log lines before its reproducer is written. */
const LOG_SETTLE_MS = 500;
const STALL_GIVE_UP_MS = 30_000;
const RESPONSE_TIMEOUT_MS = 15_000;
const FILES_PER_SIGNATURE = 3;
const MAX_FRAME_SAVED_BYTES = 1 << 20;
/** A log line's time and a frame's send time come from two processes' clocks on one machine. */
const CLOCK_SLACK_MS = 50;

export async function runFuzz(options: FuzzOptions): Promise<FuzzSummary> {
  const run = new Run(options);
  try {
    return await run.main();
  } finally {
    await run.shutdown();
  }
}

class Run {
  private readonly rng: Prng;
  private readonly log: (line: string) => void;
  private broker!: BrokerProcess;
  private advertised = new Map<number, [number, number]>();
  private readonly ledger = new Ledger();
  private readonly history: FrameRecord[] = [];
  private historyBytes = 0;
  private readonly suspicions: Suspicion[] = [];
  private readonly findings: Finding[] = [];
  private readonly signatureCounts = new Map<string, number>();
  private sweep: { apiKey: number; version: number }[] = [];
  private stderrSeen = 0;
  private framesSent = 0;
  private batches = 0;
  private restarts = 0;
  private connIds = 0;
  private fuzzerErrors = 0;
  private correlationId = 1000;
  private startedMs = 0;
  private lastRestartMs = 0;
  private heavyDone = new Set<number>();
  private readonly batchFactory: BatchFactory;
  private readonly pool = new Map<string, Pooled[]>();
  private lastCheckMs = 0;
  /** Bumped on every restart: a detached request cut off by one is not a finding. */
  private brokerEpoch = 0;
  private readonly detached = new Set<Promise<void>>();
  private lastBigSampleMs = 0;
  /** When the broker last answered a probe: a hang's reproducer holds every frame since. */
  private lastGoodProbeMs = 0;

  constructor(private readonly o: FuzzOptions) {
    this.rng = new Prng(o.seed);
    this.log = o.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.batchFactory = new BatchFactory(this.rng.fork(), `fz${o.seed}`);
  }

  async main(): Promise<FuzzSummary> {
    this.startedMs = Date.now();
    // Never leave a broker behind, even if this process dies.
    process.once('exit', () => {
      if (this.broker && this.alive()) this.broker.child.kill('SIGKILL');
    });
    await this.start(true);
    const deadline = this.startedMs + this.o.durationS * 1000;
    const maxFrames = this.o.maxFrames ?? Number.MAX_SAFE_INTEGER;
    const restartEveryMs = (this.o.restartEveryS ?? 60) * 1000;
    this.lastRestartMs = Date.now();
    this.lastCheckMs = this.lastBigSampleMs = this.lastGoodProbeMs = Date.now();
    while (Date.now() < deadline && this.framesSent < maxFrames) {
      await this.batch(deadline);
      const now = Date.now();
      if (now - this.lastCheckMs >= CHECK_EVERY_MS || this.suspicions.length > 0 || !this.alive()) {
        const big = now - this.lastBigSampleMs >= BIG_SAMPLE_EVERY_MS;
        if (big) this.lastBigSampleMs = now;
        await this.check(big ? 'big' : 'sample');
        this.lastCheckMs = Date.now();
      }
      if (Date.now() - this.lastRestartMs > restartEveryMs && Date.now() + 20_000 < deadline) await this.plannedRestart();
    }
    await Promise.all([...this.detached]);
    await this.check('full');
    const elapsedS = (Date.now() - this.startedMs) / 1000;
    const byKind: Record<string, number> = {};
    for (const f of this.findings) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
    return {
      seed: this.o.seed,
      framesSent: this.framesSent,
      elapsedS,
      framesPerSecond: this.framesSent / elapsedS,
      batches: this.batches,
      restarts: this.restarts,
      ackedRecords: this.ledger.size,
      findings: this.findings,
      byKind,
    };
  }

  async shutdown(): Promise<void> {
    await this.broker?.cleanup().catch(() => undefined);
  }

  // ------------------------------------------------------------------ broker lifecycle

  private async start(fresh: boolean): Promise<void> {
    if (fresh) {
      this.broker = await spawnBroker({ readyTimeoutMs: 60_000, ...this.o.broker });
      this.ledger.clear();
    }
    this.stderrSeen = 0;
    const adv = await probeApiVersions(this.broker.host, this.broker.port, 10_000);
    if (!adv) throw new Error('the broker does not answer ApiVersions after starting');
    this.lastGoodProbeMs = Date.now();
    if (this.advertised.size > 0 && !sameAdvertised(this.advertised, adv)) this.pool.clear();
    this.advertised = adv;
    if (fresh) {
      await this.createTopics();
      if (this.sweep.length === 0 && this.batches === 0) {
        for (const [apiKey, [lo, hi]] of [...adv.entries()].sort((a, b) => a[0] - b[0])) {
          if (!apis.has(apiKey)) continue;
          for (let v = lo; v <= Math.min(hi, apis.get(apiKey)!.maxVersion); v++) this.sweep.push({ apiKey, version: v });
        }
        this.log(`fuzz: broker ${this.broker.bootstrap}, ${adv.size} APIs advertised, sweep of ${this.sweep.length} (api, version) pairs`);
      }
    }
  }

  private async createTopics(): Promise<void> {
    const [lo, hi] = this.advertised.get(ApiKey.CreateTopics) ?? [0, 0];
    const version = Math.max(lo, Math.min(hi, 7));
    const conn = await FuzzConnection.open(this.broker.host, this.broker.port, 5000);
    try {
      const topics = [...LEDGER_TOPICS, ...SCRATCH_TOPICS].map((name) => ({
        name,
        numPartitions: LEDGER_PARTITIONS,
        replicationFactor: -1,
        assignments: [],
        configs: [],
      }));
      const res = await roundTrip<CreateTopicsResponse>(
        conn,
        ApiKey.CreateTopics,
        version,
        1,
        makeCreateTopicsRequest({ topics, timeoutMs: 10_000 }),
        15_000,
      );
      if (!res) throw new Error('CreateTopics for the fuzz topics got no answer');
    } finally {
      conn.close();
    }
  }

  private async restartSameDir(why: string): Promise<boolean> {
    this.restarts++;
    this.brokerEpoch++;
    this.log(`fuzz: restarting the broker (${why})`);
    try {
      this.broker = await this.broker.restart();
      await this.start(false);
      return true;
    } catch (err) {
      await this.finding(
        'restart-failed',
        `restart-failed|${why}`,
        `restart after ${why} failed: ${(err as Error).message.slice(0, 4000)}`,
        null,
        [],
      );
      await this.freshBroker();
      return false;
    }
  }

  private async freshBroker(): Promise<void> {
    this.restarts++;
    this.brokerEpoch++;
    await this.broker.cleanup().catch(() => undefined);
    await this.start(true);
  }

  private async plannedRestart(): Promise<void> {
    this.lastRestartMs = Date.now();
    await Promise.all([...this.detached]);
    await this.scanStderr();
    if (await this.restartSameDir('planned restart')) await this.readback('full');
    this.lastRestartMs = Date.now();
  }

  // ------------------------------------------------------------------ one batch

  private async batch(deadline: number): Promise<void> {
    this.batches++;
    const n = Math.max(2, this.o.connections ?? 4);
    const perConn = this.o.framesPerConnection ?? 48;
    const validLanes = Math.ceil(n / 2);
    const valid: Promise<void>[] = [];
    for (let i = 0; i < validLanes; i++) valid.push(this.guard(this.validLane(this.laneGenerator(i), perConn, deadline)));
    let validDone = false;
    const all = Promise.all(valid).then(() => {
      validDone = true;
    });
    const mutation: Promise<void>[] = [];
    // Mutation lanes keep going while the valid lanes wait for answers (bounded).
    for (let i = validLanes; i < n; i++) {
      for (let j = 0; j < MUTATION_PARALLEL; j++) {
        mutation.push(
          this.guard(
            this.mutationLane(
              this.laneGenerator(i * MUTATION_PARALLEL + j),
              Math.ceil(perConn / MUTATION_PARALLEL),
              perConn * 20,
              () => validDone,
            ),
          ),
        );
      }
    }
    await all;
    await Promise.all(mutation);
  }

  /** A bug in the fuzzer itself is reported and the run goes on. */
  private async guard(lane: Promise<void>): Promise<void> {
    try {
      await lane;
    } catch (err) {
      this.fuzzerErrors++;
      if (this.fuzzerErrors <= 5) this.log(`fuzz: internal error (fuzzer bug, not a finding): ${(err as Error).stack ?? String(err)}`);
    }
  }

  /**
   * Each lane of each batch draws from its own PRNG, derived from (seed, batch, lane), so
   * what a lane generates does not depend on how the lanes' I/O interleaved.
   */
  private laneGenerator(lane: number): { gen: Generator; rng: Prng } {
    const rng = new Prng(
      (Math.imul(this.o.seed, 0x9e3779b1) ^ Math.imul(this.batches, 0x85ebca6b) ^ Math.imul(lane + 1, 0xc2b2ae35)) >>> 0,
    );
    return { rng, gen: new Generator(rng, this.batchFactory, this.advertised) };
  }

  /** The next valid request: the sweep first, then random APIs, edge values and scenarios. */
  private async nextValid(lane: { gen: Generator; rng: Prng }, deadline: number, allowHeavy: boolean): Promise<GenRequest | null> {
    const { gen, rng } = lane;
    const sweep = this.sweep.shift();
    if (sweep) return gen.request(sweep.apiKey, sweep.version);
    if (allowHeavy && (this.o.heavy ?? true)) {
      const progress = 1 - (deadline - Date.now()) / (this.o.durationS * 1000);
      for (let i = 0; i < HEAVY_SCENARIOS.length; i++) {
        const at = ((i + 1) / (HEAVY_SCENARIOS.length + 1)) * 0.8;
        if (progress >= at && !this.heavyDone.has(i)) {
          this.heavyDone.add(i);
          this.log(`fuzz: heavy scenario ${HEAVY_SCENARIOS[i]!.name}`);
          return HEAVY_SCENARIOS[i]!.run(gen, rng);
        }
      }
    }
    const r = rng.float();
    if (r < 0.12) {
      const s = pickScenario(rng);
      return this.pooled(`${s.name}|valid`, rng, () => s.run(gen, rng).then((q) => q && forValidLane(q)));
    }
    const { apiKey, version } = gen.pickApi();
    const edge = r < 0.27;
    return this.pooled(poolKey(apiKey, version, edge, true), rng, () => gen.request(apiKey, version, { edge }).then(forValidLane));
  }

  /**
   * A request from the pool for `key`, generating (and encoding once) until the pool is
   * full. Generation (schema walk, record batches, compression) and body encoding are the
   * fuzzer's own per-frame cost; reused requests differ only in their header (correlation
   * id), and mutation lanes mutate copies.
   */
  private async pooled(key: string, rng: Prng, make: () => Promise<GenRequest | null>): Promise<Pooled | null> {
    let list = this.pool.get(key);
    if (!list) {
      list = [];
      this.pool.set(key, list);
    }
    if (list.length >= POOL_SIZE) return list[rng.int(list.length)]!;
    const req = await make();
    if (!req) return null;
    const enc = this.encodeBody(req);
    if (!enc) return null;
    const p: Pooled = { ...req, pooledBody: enc.body, marks: enc.marks };
    list.push(p);
    return p;
  }

  private encodeBody(req: GenRequest): { body: Buffer; marks: Mark[] } | null {
    try {
      return encodeTraced(req.apiKey, req.version, req.msg);
    } catch (err) {
      if (err instanceof EncodeError || err instanceof RangeError) return null;
      throw err;
    }
  }

  private encode(req: GenRequest | Pooled, correlationId: number): { header: Buffer; body: Buffer; marks: Mark[] } | null {
    const enc = 'pooledBody' in req ? { body: req.pooledBody, marks: req.marks } : this.encodeBody(req);
    if (!enc) return null;
    return { header: encodeHeaderBytes(req.apiKey, req.version, correlationId, 'sluice-fuzz'), body: enc.body, marks: enc.marks };
  }

  private remember(rec: FrameRecord): void {
    this.history.push(rec);
    this.historyBytes += rec.bytes.length;
    // Trimmed in chunks: splicing one element per frame off a long array is quadratic.
    if (this.history.length > HISTORY_FRAMES * 1.25 || this.historyBytes > HISTORY_MAX_BYTES) {
      let drop = Math.max(0, this.history.length - HISTORY_FRAMES);
      let bytes = this.historyBytes;
      for (let i = 0; i < drop; i++) bytes -= this.history[i]!.bytes.length;
      while (bytes > HISTORY_MAX_BYTES * 0.75 && drop < this.history.length - 1) bytes -= this.history[drop++]!.bytes.length;
      this.history.splice(0, drop);
      this.historyBytes = bytes;
    }
    this.framesSent++;
  }

  private async validLane(lane: { gen: Generator; rng: Prng }, frames: number, deadline: number): Promise<void> {
    let conn: FuzzConnection;
    try {
      conn = await FuzzConnection.open(this.broker.host, this.broker.port, PROBE_TIMEOUT_MS);
    } catch {
      return;
    }
    const connId = ++this.connIds;
    const sent: { req: GenRequest; rec: FrameRecord; response: Promise<import('./wire.ts').Response | null> | undefined }[] = [];
    try {
      for (let i = 0; i < frames; i++) {
        const req = await this.nextValid(lane, deadline, connId % 2 === 1 && i === 0);
        if (!req) continue;
        const stateful = CONNECTION_STATEFUL.has(req.apiKey);
        if (stateful && i > 0) {
          this.sweep.unshift({ apiKey: req.apiKey, version: req.version });
          break;
        }
        // A broker closes the connection after a failed acks=0 produce (as Kafka does), so
        // valid lanes, which check every answer, always ask for one.
        if (!('pooledBody' in req)) forValidLane(req);
        if (SLOW_BY_DESIGN.has(req.apiKey)) {
          // A JoinGroup is answered when the rebalance completes (seconds): on its own
          // connection, awaited in the background, it does not hold up the batch.
          if (this.detached.size < MAX_DETACHED) {
            const p: Promise<void> = this.guard(this.detachedRequest(req)).finally(() => this.detached.delete(p));
            this.detached.add(p);
          }
          continue;
        }
        const correlationId = this.correlationId++;
        const enc = this.encode(req, correlationId);
        if (!enc) continue;
        const bytes = frame(enc.header, enc.body);
        const rec: FrameRecord = {
          conn: connId,
          port: conn.localPort,
          atMs: Date.now(),
          apiKey: req.apiKey,
          version: req.version,
          label: req.label,
          mutation: null,
          bytes,
        };
        this.remember(rec);
        const response = conn.send(
          bytes,
          req.expectResponse ? { correlationId, apiKey: req.apiKey, apiVersion: req.version, timeoutMs: RESPONSE_TIMEOUT_MS } : undefined,
        );
        sent.push({ req, rec, response });
        if (stateful) break;
      }
      let missing = false;
      let prevAt = 0;
      for (const s of sent) {
        if (!s.response) continue;
        const res = await s.response;
        if (process.env.FUZZ_DEBUG && res && res.receivedAtMs - Math.max(prevAt, s.rec.atMs) > 200)
          this.log(`fuzz: slow ${res.receivedAtMs - Math.max(prevAt, s.rec.atMs)} ms ${s.req.label}`);
        if (res) prevAt = res.receivedAtMs;
        if (!res) {
          if (!missing && !CONNECTION_STATEFUL.has(s.req.apiKey)) {
            const kind: FindingKind = conn.isClosed ? 'dropped-connection' : 'valid-request-unanswered';
            this.suspicions.push({
              kind,
              detail: `${s.req.label}: ${conn.isClosed ? closedDetail(conn) : `no answer in ${RESPONSE_TIMEOUT_MS} ms`}`,
              suspect: s.rec,
              conn: connId,
            });
          }
          missing = true;
          continue;
        }
        await this.judgeResponse(s.req, s.rec, res.body, connId);
      }
    } finally {
      conn.close();
    }
  }

  /**
   * A JoinGroup is answered once every member rejoined or the group's longest rebalance
   * timeout passed, and fuzzed members carry timeouts up to 2^31 - 1 ms, as Kafka honours
   * them too: a join still waiting while its group is in a rebalance is by design. One
   * waiting in any other state is a finding.
   */
  private async stillRebalancing(req: GenRequest | Pooled): Promise<boolean> {
    const groupId = (req.msg as { groupId?: unknown }).groupId;
    if (req.apiKey !== ApiKey.JoinGroup || typeof groupId !== 'string') return false;
    let conn: FuzzConnection;
    try {
      conn = await FuzzConnection.open(this.broker.host, this.broker.port, PROBE_TIMEOUT_MS);
    } catch {
      return false;
    }
    try {
      const res = await roundTrip<DescribeGroupsResponse>(
        conn,
        ApiKey.DescribeGroups,
        0,
        1,
        makeDescribeGroupsRequest({ groups: [groupId] }),
        PROBE_TIMEOUT_MS,
      );
      return res?.groups[0]?.groupState === 'PreparingRebalance';
    } catch {
      return false;
    } finally {
      conn.close();
    }
  }

  /** One valid request on its own connection; its answer is checked like a lane's. */
  private async detachedRequest(req: GenRequest | Pooled): Promise<void> {
    let conn: FuzzConnection;
    try {
      conn = await FuzzConnection.open(this.broker.host, this.broker.port, PROBE_TIMEOUT_MS);
    } catch {
      return;
    }
    const connId = ++this.connIds;
    const epoch = this.brokerEpoch;
    try {
      const correlationId = this.correlationId++;
      const enc = this.encode(req, correlationId);
      if (!enc) return;
      const bytes = frame(enc.header, enc.body);
      const rec: FrameRecord = {
        conn: connId,
        port: conn.localPort,
        atMs: Date.now(),
        apiKey: req.apiKey,
        version: req.version,
        label: req.label,
        mutation: null,
        bytes,
      };
      this.remember(rec);
      const res = await conn.send(bytes, { correlationId, apiKey: req.apiKey, apiVersion: req.version, timeoutMs: RESPONSE_TIMEOUT_MS });
      if (!res) {
        if (epoch !== this.brokerEpoch) return;
        if (!conn.isClosed && (await this.stillRebalancing(req))) return;
        const kind: FindingKind = conn.isClosed ? 'dropped-connection' : 'valid-request-unanswered';
        this.suspicions.push({
          kind,
          detail: `${req.label}: ${conn.isClosed ? closedDetail(conn) : `no answer in ${RESPONSE_TIMEOUT_MS} ms`}`,
          suspect: rec,
          conn: connId,
        });
        return;
      }
      await this.judgeResponse(req, rec, res.body, connId);
    } finally {
      conn.close();
    }
  }

  private async judgeResponse(
    req: GenRequest,
    rec: FrameRecord,
    body: import('../../protocol/primitives.ts').Reader,
    connId: number,
  ): Promise<void> {
    let decoded: unknown;
    try {
      decoded = apis.get(req.apiKey)!.decodeResponse(body, req.version);
    } catch (err) {
      this.suspicions.push({ kind: 'undecodable-response', detail: `${req.label}: ${(err as Error).message}`, suspect: rec, conn: connId });
      return;
    }
    if (req.apiKey === ApiKey.Produce && req.produced) {
      const verdict = await judgeProduce(decoded as ProduceResponse, req.produced, req.label);
      for (const e of verdict.acked) this.ledger.add(e);
      for (const bad of verdict.acceptedInvalid) {
        this.suspicions.push({
          kind: 'accepted-invalid-batch',
          detail: `${req.label}: acknowledged ${bad.batch.tampered ?? 'a batch'} although ${bad.reason}`,
          suspect: rec,
          conn: connId,
        });
      }
    }
  }

  private async mutationLane(
    lane: { gen: Generator; rng: Prng },
    minFrames: number,
    maxFrames: number,
    validDone: () => boolean,
  ): Promise<void> {
    const { gen, rng } = lane;
    let sent = 0;
    while (sent < maxFrames && (sent < minFrames || !validDone())) {
      let conn: FuzzConnection;
      try {
        conn = await FuzzConnection.open(this.broker.host, this.broker.port, PROBE_TIMEOUT_MS);
      } catch {
        return;
      }
      const connId = ++this.connIds;
      const k = rng.range(1, 4);
      for (let j = 0; j < k && !conn.isClosed; j++) {
        const { apiKey, version } = gen.pickApi();
        const r = rng.float();
        let req: Pooled | null;
        if (r < 0.15) {
          const s = pickScenario(rng);
          req = await this.pooled(`${s.name}|mut`, rng, () => s.run(gen, rng));
        } else {
          const edge = r < 0.3;
          req = await this.pooled(poolKey(apiKey, version, edge, false), rng, () => gen.request(apiKey, version, { edge }));
        }
        if (!req) continue;
        const enc = this.encode(req, this.correlationId++);
        if (!enc) continue;
        let bytes: Buffer;
        let mutation: string | null = null;
        if (rng.chance(0.8)) {
          const m = mutateFrame(rng, enc.header, enc.body, enc.marks);
          bytes = m.bytes;
          mutation = m.mutation;
        } else {
          bytes = frame(enc.header, enc.body);
        }
        this.remember({
          conn: connId,
          port: conn.localPort,
          atMs: Date.now(),
          apiKey: req.apiKey,
          version: req.version,
          label: req.label,
          mutation,
          bytes,
        });
        conn.send(bytes);
        sent++;
      }
      // Half-close once the frames are flushed and go on as soon as the broker has read
      // them and closed (bounded: a broker that never closes is the probe's business).
      conn.end();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        conn.closed,
        new Promise((r) => {
          timer = setTimeout(r, 250);
        }),
      ]);
      clearTimeout(timer);
      conn.close();
    }
  }

  // ------------------------------------------------------------------ checks

  private alive(): boolean {
    return this.broker.child.exitCode === null && this.broker.child.signalCode === null;
  }

  private async scanStderr(): Promise<void> {
    const { lines, end } = completeLines(this.broker.stderr(), this.stderrSeen);
    this.stderrSeen = end;
    const errors = errorLines(lines);
    await this.reportErrorLines(errors);
    const reported = new Set(errors.map((e) => e.raw));
    const unhandled = unhandledLines(lines.filter((l) => !reported.has(l)).join('\n'));
    if (unhandled.length > 0) {
      const first = unhandled[0]!;
      const sig = first
        .replace(/"time":\d+,|"pid":\d+,/g, '')
        .replace(/\d+/g, 'N')
        .slice(0, 160);
      await this.finding(
        'unhandled-error',
        `unhandled-error|${sig}`,
        unhandled.slice(0, 5).join('\n').slice(0, 4000),
        null,
        this.recentFrames(),
      );
    }
  }

  /**
   * One finding per distinct error line of this scan, with the request that caused it when
   * the line names the connection (its client port) and the api key: the last frame sent
   * on that port with that api key before the line was written.
   */
  private async reportErrorLines(errors: readonly BrokerErrorLine[]): Promise<void> {
    const seen = new Set<string>();
    for (const line of errors) {
      const suspect = this.frameBehind(line);
      const apiKey = suspect?.apiKey ?? line.apiKey;
      const signature = `error-log|${apiKey === null ? 'no request' : apiName(apiKey)}|${errorLineSignature(line)}`;
      if (seen.has(signature)) continue;
      seen.add(signature);
      const cause = suspect
        ? `${suspect.label}${suspect.mutation ? ` mutated by ${suspect.mutation}` : ''}`
        : apiKey === null
          ? 'no request named'
          : `${apiName(apiKey)} v${line.apiVersion}`;
      await this.finding(
        'error-log',
        signature,
        `${cause}: broker logged at level ${line.level} "${line.msg}"${line.errMessage ? `: ${line.errMessage}` : ''}\n${line.raw.slice(0, 4000)}`,
        suspect,
        suspect ? this.history.filter((f) => f.conn === suspect.conn) : this.recentFrames(),
      );
    }
  }

  private frameBehind(line: BrokerErrorLine): FrameRecord | null {
    if (line.clientPort === null) return null;
    const before = (line.timeMs ?? Number.MAX_SAFE_INTEGER) + CLOCK_SLACK_MS;
    for (let i = this.history.length - 1; i >= 0; i--) {
      const f = this.history[i]!;
      if (f.port === line.clientPort && f.atMs <= before && (line.apiKey === null || f.apiKey === line.apiKey)) return f;
    }
    return null;
  }

  private async check(depth: ReadbackDepth): Promise<void> {
    const suspicions = this.suspicions.splice(0);
    if (!this.alive()) {
      await new Promise((r) => setTimeout(r, 200));
      const code = this.broker.child.exitCode ?? this.broker.child.signalCode;
      const tail = this.broker
        .stderr()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .slice(-3)
        .join(' | ')
        .slice(0, 300);
      const sig = tail
        .replace(/"time":\d+,|"pid":\d+,/g, '')
        .replace(/\d+/g, 'N')
        .slice(-120);
      await this.finding('process-died', `process-died|${sig}`, `broker exited with ${code}`, null, this.recentFrames());
      if (await this.restartSameDir('process died')) await this.readback('full');
      return;
    }
    const probeStartedMs = Date.now();
    await this.scanStderr();
    const t0 = Date.now();
    let adv = await probeApiVersions(this.broker.host, this.broker.port, PROBE_TIMEOUT_MS);
    if (!adv) {
      while (!adv && Date.now() - t0 < STALL_GIVE_UP_MS && this.alive())
        adv = await probeApiVersions(this.broker.host, this.broker.port, PROBE_TIMEOUT_MS);
      // Every frame since the broker last answered a probe (and a little before): the one
      // that stalled it is among them, whatever the frame rate.
      const recent = this.history.filter((f) => f.atMs >= this.lastGoodProbeMs - 2_000);
      const suspect = [...recent].reverse().find((f) => f.label.includes('storm')) ?? null;
      const sig = `hang|${suspect ? suspect.label.replace(/v\d+.*/, '') : 'unknown'}`;
      if (adv) {
        await this.finding(
          'hang',
          sig,
          `no ApiVersions answer within ${PROBE_TIMEOUT_MS} ms; recovered after ${Date.now() - t0} ms`,
          suspect,
          recent,
        );
        this.lastGoodProbeMs = Date.now();
      } else {
        await this.finding(
          'hang',
          sig,
          `no ApiVersions answer for ${Date.now() - t0} ms${this.alive() ? '' : ' (then died)'}`,
          suspect,
          recent,
        );
        await this.freshBroker();
        return;
      }
    } else this.lastGoodProbeMs = probeStartedMs;
    for (const s of suspicions) {
      if (s.kind === 'dropped-connection') {
        const line = this.broker
          .stderr()
          .split('\n')
          .reverse()
          .find((l) => l.includes(`:${s.suspect.port}"`) && /closing|error/i.test(l));
        const reason = line ? (/"reason":"([^"]*)"/.exec(line)?.[1] ?? /"msg":"([^"]*)"/.exec(line)?.[1]) : undefined;
        if (reason) s.detail += ` (broker: ${reason.slice(0, 200)})`;
      }
      const sig = `${s.kind}|${apiName(s.suspect.apiKey)} v${s.suspect.version}|${s.detail
        .replace(/^[^:]*: /, '')
        .replace(/\d+/g, 'N')
        .slice(0, 80)}`;
      await this.finding(
        s.kind,
        sig,
        s.detail,
        s.suspect,
        this.history.filter((f) => f.conn === s.conn),
      );
    }
    await this.readback(depth);
  }

  private async readback(depth: ReadbackDepth): Promise<void> {
    const entries = depth === 'full' ? this.ledger.entries : this.ledger.sample(this.rng, depth === 'big' ? 300 : 8);
    if (entries.length === 0) return;
    const [lo, hi] = this.advertised.get(ApiKey.Fetch) ?? [4, 4];
    const fetchVersion = Math.max(lo, Math.min(hi, 12));
    const problems = await checkReadable(
      this.broker.host,
      this.broker.port,
      entries,
      fetchVersion,
      depth === 'full' ? 15_000 : 5000,
      depth === 'full' ? 4 << 20 : 64 << 10,
    );
    if (!problems) return; // unreachable: the next liveness check reports it
    const bad = new Set<LedgerEntry>();
    for (const p of problems) {
      bad.add(p.entry);
      await this.finding(
        p.kind,
        `${p.kind}|${p.entry.topic}`,
        `${p.detail} (acknowledged to ${p.entry.ackedBy})`,
        this.history.find((f) => f.label === p.entry.ackedBy) ?? null,
        [],
      );
    }
    // Report each lost record once.
    if (bad.size > 0) {
      const keep = this.ledger.entries.filter((e) => !bad.has(e));
      this.ledger.clear();
      for (const e of keep) this.ledger.add(e);
    }
  }

  private recentFrames(windowMs = HISTORY_WINDOW_MS): FrameRecord[] {
    const since = Date.now() - windowMs;
    return this.history.filter((f) => f.atMs >= since);
  }

  // ------------------------------------------------------------------ findings

  private async finding(
    kind: FindingKind,
    signature: string,
    detail: string,
    suspect: FrameRecord | null,
    frames: FrameRecord[],
  ): Promise<void> {
    const count = (this.signatureCounts.get(signature) ?? 0) + 1;
    this.signatureCounts.set(signature, count);
    let file: string | null = null;
    if (count <= FILES_PER_SIGNATURE) {
      // The broker writes its log asynchronously: give the lines about the suspect time to arrive.
      await new Promise((resolve) => setTimeout(resolve, LOG_SETTLE_MS));
      await mkdir(this.o.outDir, { recursive: true });
      file = join(this.o.outDir, `${kind}-seed${this.o.seed}-${this.findings.length + 1}.json`);
      const show = (f: FrameRecord) => ({
        conn: f.conn,
        atMs: f.atMs,
        api: `${apiName(f.apiKey)} (${f.apiKey}) v${f.version}`,
        label: f.label,
        mutation: f.mutation,
        bytes: f.bytes.length,
        ...(f.bytes.length <= 2048
          ? { hex: f.bytes.toString('hex') }
          : { base64: f.bytes.subarray(0, MAX_FRAME_SAVED_BYTES).toString('base64'), truncated: f.bytes.length > MAX_FRAME_SAVED_BYTES }),
      });
      const report = {
        kind,
        signature,
        detail,
        seed: this.o.seed,
        batch: this.batches,
        at: new Date().toISOString(),
        broker: this.broker.bootstrap,
        replay: `npm run fuzz -- --seed ${this.o.seed} --duration ${this.o.durationS}`,
        suspect: suspect ? show(suspect) : null,
        frames: frames.slice(-REPRO_FRAMES).map(show),
        brokerLinesForSuspect: suspect
          ? this.broker
              .stderr()
              .split('\n')
              .filter((l) => l.includes(`:${suspect.port}"`))
              .slice(-20)
          : [],
        stderrTail: this.broker.stderr().split('\n').slice(-60).join('\n'),
      };
      await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
    }
    this.findings.push({ kind, signature, detail, file });
    if (count === 1) this.log(`fuzz: FINDING ${kind}: ${detail.split('\n')[0]!.slice(0, 300)}${file ? ` -> ${file}` : ''}`);
  }
}

type ReadbackDepth = 'sample' | 'big' | 'full';

/** A generated request with its body encoded once (header added per send). */
type Pooled = GenRequest & { pooledBody: Buffer; marks: Mark[] };

/**
 * A broker closes the connection after a failed acks=0 produce (as Kafka does), so valid
 * lanes, which check every answer, always ask for one.
 */
function forValidLane(req: GenRequest): GenRequest {
  if (req.apiKey === ApiKey.Produce) {
    (req.msg as { acks: number }).acks = 1;
    req.expectResponse = true;
  }
  return req;
}

function sameAdvertised(a: ReadonlyMap<number, readonly [number, number]>, b: ReadonlyMap<number, readonly [number, number]>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, [lo, hi]] of a) {
    const o = b.get(k);
    if (!o || o[0] !== lo || o[1] !== hi) return false;
  }
  return true;
}

/** Valid and mutation lanes share a pool except for Produce (valid lanes always ask for acks). */
function poolKey(apiKey: number, version: number, edge: boolean, validLane: boolean): string {
  return `${apiKey}|${version}|${edge}${apiKey === ApiKey.Produce ? (validLane ? '|valid' : '|mut') : ''}`;
}

function closedDetail(conn: FuzzConnection): string {
  return conn.badFrameSize === null
    ? 'connection closed without an answer'
    : `answered with a frame of ${conn.badFrameSize} bytes, outside what a response can be`;
}
