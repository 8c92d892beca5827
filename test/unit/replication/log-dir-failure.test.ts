import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import { ReplicaManager } from '../../../src/replication/replica-manager.ts';
import { LogManagerProvider } from '../../../src/replication/storage-adapter.ts';
import { LogDirFailureChannel } from '../../../storage/log-dir-failure.ts';
import { CLEAN_SHUTDOWN_FILE, LogManager } from '../../../storage/log-manager.ts';
import { MANUAL_CLOCK_START_MS, ManualClock } from '../../helpers/manual-clock.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';

// A log dir whose writes start failing (ENOSPC, EIO) goes offline on this broker: its
// partitions answer KAFKA_STORAGE_ERROR, nothing whose write failed is acknowledged, and the
// other dirs keep serving.

const BROKER = 1;
const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

interface Env {
  dirs: string[];
  logs: LogManager;
  rm: ReplicaManager;
  failures: { logDir: string; what: string }[];
}

async function setup(dirCount: number, partitions: number, isr: number[] = [BROKER]): Promise<Env> {
  const dirs = await Promise.all(Array.from({ length: dirCount }, () => mkdtemp(join(tmpdir(), 'sluice-dirfail-'))));
  const failures: Env['failures'] = [];
  const channel = new LogDirFailureChannel((logDir, _err, what) => failures.push({ logDir, what }));
  const logs = await LogManager.startup({
    logDirs: dirs,
    defaultConfig: logConfig(),
    onBackgroundError: new BackgroundErrors().sink,
    logDirFailureChannel: channel,
  });
  const rm = new ReplicaManager({
    brokerId: BROKER,
    logs: new LogManagerProvider(logs),
    clock: new ManualClock(),
    logDirFailures: channel,
  });
  for (let p = 0; p < partitions; p++) await applyState(rm, p, isr);
  return { dirs, logs, rm, failures };
}

function applyState(rm: ReplicaManager, partition: number, isr: number[], leaderEpoch = 3) {
  return rm.applyPartitionState(
    { topic: 't', topicId: TOPIC_ID, partition, leaderId: BROKER, leaderEpoch, partitionEpoch: leaderEpoch, replicas: isr, isr },
    topicConfigLookup({}),
  );
}

/** From now on every write of the file handle pool fails with `code`, as a full or broken disk does. */
function failWrites(logs: LogManager, code: 'ENOSPC' | 'EIO'): () => void {
  const pool = logs.pool as unknown as { write: unknown; writeSync: unknown };
  const saved = { write: pool.write, writeSync: pool.writeSync };
  const error = () => Object.assign(new Error(`${code}: simulated, write`), { code, syscall: 'write' });
  pool.writeSync = () => {
    throw error();
  };
  pool.write = async () => {
    throw error();
  };
  return () => Object.assign(pool, saved);
}

function records(n: number): Promise<Buffer> {
  return buildRecordBatch(
    {},
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`), timestamp: MANUAL_CLOCK_START_MS })),
  );
}

function produce(env: Env, recs: Buffer, partition = 0, acks = 1, timeoutMs = 30_000) {
  return env.rm.appendRecords({ acks, timeoutMs, produceVersion: 9, entries: [{ topic: 't', partition, records: recs }] });
}

function fetch(env: Env, partition = 0) {
  return env.rm.fetchMessages({
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    partitions: [{ topic: 't', partition, fetchOffset: 0, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1 }],
  });
}

describe('log dir failure', () => {
  let env: Env | undefined;
  afterEach(async () => {
    if (env === undefined) return;
    env.rm.shutdown();
    await env.logs.shutdown();
    for (const dir of env.dirs) await rm(dir, { recursive: true, force: true });
    env = undefined;
  });

  it('a failed append is answered KAFKA_STORAGE_ERROR and takes the partition offline for every request', async () => {
    env = await setup(1, 1);
    const [ok] = await produce(env, await records(2));
    assert.equal(ok!.errorCode, Errors.NONE.code);
    failWrites(env.logs, 'ENOSPC');
    const [failed] = await produce(env, await records(1));
    assert.equal(failed!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    assert.deepEqual(
      env.failures.map((f) => f.logDir),
      env.dirs,
    );
    assert.equal(env.rm.getPartition('t', 0), undefined, 'no longer hosted');
    assert.equal(env.logs.getLog('t', 0), undefined, 'the LogManager no longer serves its log');
    const [again] = await produce(env, await records(1));
    assert.equal(again!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    assert.equal((await fetch(env))[0]!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    assert.equal((await env.rm.listOffset('t', 0, -1, 0, -1, -1)).errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    // Metadata (a new leader epoch) does not bring it back before a restart.
    assert.equal(await applyState(env.rm, 0, [BROKER], 4), undefined);
    assert.equal((await fetch(env))[0]!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    assert.deepEqual(env.rm.describeLogDirs(null), [{ logDir: env.dirs[0], offline: true, topics: [] }]);
  });

  it('never acknowledges an acks=all produce parked when the dir fails', async () => {
    env = await setup(1, 2, [BROKER, 2]);
    // Written locally, waiting for follower 2 (which never fetches).
    const parked = produce(env, await records(1), 0, -1);
    await new Promise((resolve) => setImmediate(resolve));
    failWrites(env.logs, 'EIO');
    const [other] = await produce(env, await records(1), 1, -1);
    assert.equal(other!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    const [answer] = await parked;
    assert.equal(answer!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
  });

  it('keeps serving the partitions of the other log dirs, and places new logs there', async () => {
    env = await setup(2, 2);
    const dirOf = (p: number) => env!.logs.logDirOf('t', p);
    const [failing, healthy] = [dirOf(0), dirOf(1)];
    assert.notEqual(failing, healthy);
    const heal = failWrites(env.logs, 'EIO');
    const [failed] = await produce(env, await records(1), 0);
    heal();
    assert.equal(failed!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
    const [ok] = await produce(env, await records(1), 1);
    assert.equal(ok!.errorCode, Errors.NONE.code);
    assert.equal((await fetch(env, 1))[0]!.errorCode, Errors.NONE.code);
    await applyState(env.rm, 2, [BROKER]);
    assert.equal(dirOf(2), healthy);
    const described = env.rm.describeLogDirs(null);
    assert.deepEqual(
      described.map((d) => [d.logDir, d.offline, d.topics.flatMap((t) => t.partitions.map((p) => p.partitionIndex))]),
      env.dirs.map((dir) => (dir === failing ? [dir, true, []] : [dir, false, [1, 2]])),
    );
    // A clean stop leaves no marker in the failed dir: the next start recovers its logs.
    env.rm.shutdown();
    await env.logs.shutdown();
    await assert.rejects(stat(join(failing!, CLEAN_SHUTDOWN_FILE)));
    await stat(join(healthy!, CLEAN_SHUTDOWN_FILE));
    for (const dir of env.dirs) await rm(dir, { recursive: true, force: true });
    env = undefined;
  });

  it('a partition whose log cannot be created because every dir is offline answers KAFKA_STORAGE_ERROR', async () => {
    env = await setup(1, 1);
    failWrites(env.logs, 'ENOSPC');
    await produce(env, await records(1));
    await assert.rejects(applyState(env.rm, 5, [BROKER]), /offline/);
    const [answer] = await produce(env, await records(1), 5);
    assert.equal(answer!.errorCode, Errors.KAFKA_STORAGE_ERROR.code);
  });
});
