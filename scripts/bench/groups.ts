// Group coordinator figures, each a ratio against a ceiling measured in the same run, then
// the absolute numbers:
//   rebalance  a group of 10 members joining at once (group.initial.rebalance.delay.ms=0), from
//              the first JoinGroup sent to the last SyncGroup response of the generation that
//              holds all 10, vs the round trip of 10 parallel ApiVersions over the same 10
//              connections. Members act as real clients do: MEMBER_ID_REQUIRED then rejoin,
//              the leader assigns, members of an earlier generation learn of the next
//              rebalance from their heartbeats (every 10 ms).
//   commits    OffsetCommit requests of 100 partitions each (simple commits, generation -1),
//              pipelined over a few connections, vs ApiVersions requests pipelined the same
//              way over the same connections.
// The broker runs as its own process (`sluice dev`), as a user runs it.
// Run: node --import tsx scripts/bench/groups.ts [--quick]
import { sluiceCommand } from '../../test/helpers/sluice-cli.ts';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors } from '../../protocol/errors.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { makeApiVersionsRequest, encodeApiVersionsRequest } from '../../protocol/messages/api-versions.ts';
import { encodeConsumerProtocolAssignment } from '../../protocol/messages/consumer-protocol-assignment.ts';
import {
  encodeConsumerProtocolSubscription,
  makeConsumerProtocolSubscription,
} from '../../protocol/messages/consumer-protocol-subscription.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import { makeFindCoordinatorRequest, type FindCoordinatorResponse } from '../../protocol/messages/find-coordinator.ts';
import { makeHeartbeatRequest, type HeartbeatResponse } from '../../protocol/messages/heartbeat.ts';
import { makeJoinGroupRequest, type JoinGroupResponse } from '../../protocol/messages/join-group.ts';
import { makeLeaveGroupRequest, type LeaveGroupResponse } from '../../protocol/messages/leave-group.ts';
import {
  decodeOffsetCommitResponse,
  encodeOffsetCommitRequest,
  makeOffsetCommitRequest,
  makeOffsetCommitRequestPartition,
} from '../../protocol/messages/offset-commit.ts';
import { makeSyncGroupRequest, type SyncGroupResponse } from '../../protocol/messages/sync-group.ts';
import { KafkaConnection } from '../../src/client/connection.ts';

const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const quick = process.argv.includes('--quick');

const MEMBERS = 10;
const REBALANCE_ROUNDS = quick ? 10 : 40;
const API_VERSIONS_ROUNDS = quick ? 100 : 400;
/** How often a member of an earlier generation asks whether a rebalance is under way. */
const HEARTBEAT_INTERVAL_MS = 10;
const SUBSCRIBED_TOPIC = 'bench-group-topic';
const COMMIT_TOPIC = 'bench-commits';
const COMMIT_PARTITIONS = 100;
const COMMIT_CONNECTIONS = 4;
const COMMIT_IN_FLIGHT = 8;
const COMMIT_MS = quick ? 2000 : 5000;

// ---------------------------------------------------------------------------------------
// Broker process

interface BrokerProcess {
  host: string;
  port: number;
  stop(): Promise<void>;
}

async function startBrokerProcess(): Promise<BrokerProcess> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-groups-'));
  const cmd = sluiceCommand([
    'dev',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--override',
    'group.initial.rebalance.delay.ms=0',
  ]);
  const child = spawn(cmd.command, cmd.args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const { host, port } = await new Promise<{ host: string; port: number }>((resolveReady, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`broker not ready:\n${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^sluice ready: .* listening on [A-Z_]+:\/\/([^:,\s]+):(\d+)/m.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      resolveReady({ host: m[1]!, port: Number(m[2]) });
    });
    void exited.then(() => reject(new Error(`broker exited before ready:\n${out}\n${log}`)));
  });
  return {
    host,
    port,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------
// Helpers

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function expectNoError(what: string, errorCode: number): void {
  if (errorCode !== Errors.NONE.code) throw new Error(`${what}: error ${errorCode}`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function createTopic(conn: KafkaConnection, name: string, numPartitions: number): Promise<void> {
  const res = await conn.send<CreateTopicsResponse>(
    ApiKey.CreateTopics,
    makeCreateTopicsRequest({
      timeoutMs: 30_000,
      topics: [makeCreateTopicsRequestCreatableTopic({ name, numPartitions, replicationFactor: 1 })],
    }),
    conn.version(ApiKey.CreateTopics, 7),
  );
  expectNoError(`CreateTopics ${name}`, res.topics[0]!.errorCode);
}

/** Waits until the broker coordinates `groupId` (the offsets topic is created on first use). */
async function findCoordinator(conn: KafkaConnection, groupId: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const res = await conn.send<FindCoordinatorResponse>(ApiKey.FindCoordinator, makeFindCoordinatorRequest({ key: groupId }), 3);
    if (res.errorCode === Errors.NONE.code) return;
    if (res.errorCode !== Errors.COORDINATOR_NOT_AVAILABLE.code && res.errorCode !== Errors.COORDINATOR_LOAD_IN_PROGRESS.code) {
      expectNoError(`FindCoordinator ${groupId}`, res.errorCode);
    }
    await sleep(100);
  }
  throw new Error(`no coordinator for ${groupId}`);
}

/** Milliseconds for one ApiVersions on each connection at once, until the last response. */
async function parallelApiVersionsMs(conns: KafkaConnection[]): Promise<number> {
  const request = makeApiVersionsRequest({ clientSoftwareName: 'bench', clientSoftwareVersion: '1' });
  const start = performance.now();
  await Promise.all(conns.map((c) => c.send(ApiKey.ApiVersions, request, 3)));
  return performance.now() - start;
}

// ---------------------------------------------------------------------------------------
// Rebalance

const subscription = ((): Buffer => {
  const w = new Writer();
  w.int16(1);
  encodeConsumerProtocolSubscription(w, makeConsumerProtocolSubscription({ topics: [SUBSCRIBED_TOPIC] }), 1);
  return w.toBuffer();
})();

/** Round-robin of the subscribed topic's partitions over the members, as the leader sends it. */
function assignments(memberIds: string[], partitions: number): { memberId: string; assignment: Buffer }[] {
  return memberIds.map((memberId, i) => {
    const w = new Writer();
    w.int16(1);
    const owned = Array.from({ length: partitions }, (_, p) => p).filter((p) => p % memberIds.length === i);
    encodeConsumerProtocolAssignment(w, { assignedPartitions: [{ topic: SUBSCRIBED_TOPIC, partitions: owned }], userData: null }, 1);
    return { memberId, assignment: w.toBuffer() };
  });
}

interface RebalanceResult {
  ms: number;
  /** From the first JoinGroup sent to the last JoinGroup response of the final generation. */
  joinMs: number;
  generations: number;
}

interface Settling {
  /** The generation whose leader saw every member; -1 until then. */
  generation: number;
  /** When the last member of that generation got its JoinGroup response. */
  lastJoinAt: number;
}

/**
 * One member: joins, syncs, and while the group has not settled with every member, heartbeats
 * and rejoins when told a rebalance is under way. Resolves with its member id once a
 * SyncGroup of the generation holding all members has answered.
 */
async function runMember(conn: KafkaConnection, groupId: string, settled: Settling): Promise<string> {
  let memberId = '';
  for (;;) {
    const join = await conn.send<JoinGroupResponse>(
      ApiKey.JoinGroup,
      makeJoinGroupRequest({
        groupId,
        memberId,
        sessionTimeoutMs: 30_000,
        rebalanceTimeoutMs: 30_000,
        protocolType: 'consumer',
        protocols: [{ name: 'roundrobin', metadata: subscription }],
      }),
    );
    if (join.errorCode === Errors.MEMBER_ID_REQUIRED.code) {
      memberId = join.memberId;
      continue;
    }
    expectNoError('JoinGroup', join.errorCode);
    memberId = join.memberId;
    const joinedAt = performance.now();
    const isLeader = join.leader === memberId;
    if (isLeader && join.members.length === MEMBERS) settled.generation = join.generationId;
    const sync = await conn.send<SyncGroupResponse>(
      ApiKey.SyncGroup,
      makeSyncGroupRequest({
        groupId,
        generationId: join.generationId,
        memberId,
        protocolType: 'consumer',
        protocolName: join.protocolName,
        assignments: isLeader
          ? assignments(
              join.members.map((m) => m.memberId),
              12,
            )
          : [],
      }),
    );
    if (sync.errorCode === Errors.REBALANCE_IN_PROGRESS.code) continue;
    expectNoError('SyncGroup', sync.errorCode);
    // The leader's JoinGroup response tells whether this generation holds every member; the
    // other members may see theirs first, so they wait on the leader rather than decide.
    for (;;) {
      if (settled.generation === join.generationId) {
        settled.lastJoinAt = Math.max(settled.lastJoinAt, joinedAt);
        return memberId;
      }
      await sleep(HEARTBEAT_INTERVAL_MS);
      if (settled.generation === join.generationId) continue;
      const beat = await conn.send<HeartbeatResponse>(
        ApiKey.Heartbeat,
        makeHeartbeatRequest({ groupId, generationId: join.generationId, memberId }),
      );
      if (beat.errorCode === Errors.REBALANCE_IN_PROGRESS.code) break;
      expectNoError('Heartbeat', beat.errorCode);
    }
  }
}

async function rebalanceOnce(conns: KafkaConnection[], groupId: string): Promise<RebalanceResult> {
  await findCoordinator(conns[0]!, groupId);
  const settled: Settling = { generation: -1, lastJoinAt: 0 };
  const start = performance.now();
  const memberIds = await Promise.all(conns.map((c) => runMember(c, groupId, settled)));
  const ms = performance.now() - start;
  const left = await conns[0]!.send<LeaveGroupResponse>(
    ApiKey.LeaveGroup,
    makeLeaveGroupRequest({
      groupId,
      members: memberIds.map((memberId) => ({ memberId, groupInstanceId: null, reason: null })),
    }),
  );
  expectNoError('LeaveGroup', left.errorCode);
  return { ms, joinMs: settled.lastJoinAt - start, generations: settled.generation };
}

async function benchRebalance(host: string, port: number): Promise<void> {
  const conns = await Promise.all(
    Array.from({ length: MEMBERS }, (_, i) => KafkaConnection.connect(host, port, { clientId: `member-${i}` })),
  );
  try {
    await createTopic(conns[0]!, SUBSCRIBED_TOPIC, 12);
    for (let i = 0; i < 3; i++) await rebalanceOnce(conns, `warmup-${i}`);
    for (let i = 0; i < 20; i++) await parallelApiVersionsMs(conns);

    // Interleaved so that both figures see the same machine conditions.
    const rebalances: RebalanceResult[] = [];
    const apiVersions: number[] = [];
    const perRound = Math.ceil(API_VERSIONS_ROUNDS / REBALANCE_ROUNDS);
    for (let round = 0; round < REBALANCE_ROUNDS; round++) {
      rebalances.push(await rebalanceOnce(conns, `bench-group-${round}`));
      for (let i = 0; i < perRound; i++) apiVersions.push(await parallelApiVersionsMs(conns));
    }
    const ms = rebalances.map((r) => r.ms);
    const ceiling = median(apiVersions);
    console.log(
      `rebalance  ${MEMBERS} members joining at once: median ${(median(ms) / ceiling).toFixed(1)}x the round trip of ${MEMBERS} parallel ApiVersions`,
    );
    console.log(
      `           rebalance p50 ${median(ms).toFixed(2)} ms, p90 ${percentile(ms, 0.9).toFixed(2)} ms, ` +
        `min ${Math.min(...ms).toFixed(2)} ms over ${REBALANCE_ROUNDS} groups ` +
        `(of which the join phase p50 ${median(rebalances.map((r) => r.joinMs)).toFixed(2)} ms); ` +
        `generation reached: median ${median(rebalances.map((r) => r.generations))}, max ${Math.max(...rebalances.map((r) => r.generations))}`,
    );
    console.log(
      `           ${MEMBERS} parallel ApiVersions p50 ${ceiling.toFixed(3)} ms, p90 ${percentile(apiVersions, 0.9).toFixed(3)} ms`,
    );
  } finally {
    for (const c of conns) c.close();
  }
}

// ---------------------------------------------------------------------------------------
// OffsetCommit throughput

/** Requests per second of `body` pipelined `COMMIT_IN_FLIGHT` deep on every connection. */
async function pipelinedRate(
  conns: KafkaConnection[],
  apiKey: number,
  version: number,
  body: Buffer,
  check: (res: Buffer) => void,
  durationMs = COMMIT_MS,
): Promise<number> {
  let count = 0;
  const deadline = performance.now() + durationMs;
  const start = performance.now();
  await Promise.all(
    conns.flatMap((conn) =>
      Array.from({ length: COMMIT_IN_FLIGHT }, async () => {
        while (performance.now() < deadline) {
          const res = await conn.sendEncoded(apiKey, version, body);
          // Decoding every response would make the client the bottleneck; every 64th is checked.
          if ((count++ & 63) === 0) check(res);
        }
      }),
    ),
  );
  return count / ((performance.now() - start) / 1000);
}

async function benchCommits(host: string, port: number): Promise<void> {
  const conns = await Promise.all(Array.from({ length: COMMIT_CONNECTIONS }, () => KafkaConnection.connect(host, port)));
  try {
    await createTopic(conns[0]!, COMMIT_TOPIC, COMMIT_PARTITIONS);
    const commitVersion = conns[0]!.version(ApiKey.OffsetCommit);
    const commit = new Writer();
    encodeOffsetCommitRequest(
      commit,
      makeOffsetCommitRequest({
        groupId: 'bench-commit-group',
        topics: [
          {
            name: COMMIT_TOPIC,
            partitions: Array.from({ length: COMMIT_PARTITIONS }, (_, p) =>
              makeOffsetCommitRequestPartition({ partitionIndex: p, committedOffset: 1000n + BigInt(p), committedMetadata: 'bench' }),
            ),
          },
        ],
      }),
      commitVersion,
    );
    const commitBody = commit.toBuffer();
    const checkCommit = (res: Buffer): void => {
      for (const p of decodeOffsetCommitResponse(new Reader(res), commitVersion).topics[0]!.partitions)
        expectNoError('OffsetCommit', p.errorCode);
    };
    const apiVersionsBody = ((): Buffer => {
      const w = new Writer();
      encodeApiVersionsRequest(w, makeApiVersionsRequest({ clientSoftwareName: 'bench', clientSoftwareVersion: '1' }), 3);
      return w.toBuffer();
    })();
    const noCheck = (): void => undefined;

    // A short warm-up of each so that neither pays for JIT compilation in the measurement.
    await pipelinedRate(conns, ApiKey.ApiVersions, 3, apiVersionsBody, noCheck, 500);
    await pipelinedRate(conns, ApiKey.OffsetCommit, commitVersion, commitBody, checkCommit, 500);
    const apiVersionsPerS = await pipelinedRate(conns, ApiKey.ApiVersions, 3, apiVersionsBody, noCheck);
    const commitsPerS = await pipelinedRate(conns, ApiKey.OffsetCommit, commitVersion, commitBody, checkCommit);
    console.log(
      `commits    OffsetCommit v${commitVersion} of ${COMMIT_PARTITIONS} partitions: ${(commitsPerS / apiVersionsPerS).toFixed(3)}x ApiVersions requests/s ` +
        `(${COMMIT_CONNECTIONS} connections x ${COMMIT_IN_FLIGHT} in flight)`,
    );
    console.log(
      `           ${Math.round(commitsPerS)} commits/s = ${Math.round(commitsPerS * COMMIT_PARTITIONS)} partition offsets/s ` +
        `(request ${commitBody.length} bytes); ApiVersions ${Math.round(apiVersionsPerS)} requests/s`,
    );
  } finally {
    for (const c of conns) c.close();
  }
}

const broker = await startBrokerProcess();
try {
  await benchRebalance(broker.host, broker.port);
  await benchCommits(broker.host, broker.port);
} finally {
  await broker.stop();
}
