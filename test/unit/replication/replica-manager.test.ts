import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import { batchesIn, RecordBatch } from '../../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { LogManager } from '../../../storage/log-manager.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import type { LogProvider } from '../../../src/replication/log.ts';
import { ReplicaManager, type FetchParams } from '../../../src/replication/replica-manager.ts';
import { LogManagerProvider } from '../../../src/replication/storage-adapter.ts';
import fc from 'fast-check';
import { readRecords } from '../../../protocol/records/record.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { flipBits } from '../../helpers/bytes.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';

const BROKER = 1;

interface Env {
  dir: string;
  logs: LogManager;
  rm: ReplicaManager;
  clock: ManualClock;
}

async function setup(
  topicConfig: Record<string, string> = {},
  partitions = 1,
  isr: number[] = [BROKER],
  replicas: number[] = isr,
): Promise<Env> {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-rm-'));
  const logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
  // The log rolls segments by the wall clock and the records are stamped by it: the replica
  // manager's clock starts there too, or the records would be from its future.
  const clock = new ManualClock(Date.now());
  const rm = new ReplicaManager({
    brokerId: BROKER,
    logs: new LogManagerProvider(logs),
    clock,
  });
  for (let p = 0; p < partitions; p++) {
    await rm.applyPartitionState(
      {
        topic: 't',
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        partition: p,
        leaderId: BROKER,
        leaderEpoch: 3,
        partitionEpoch: 0,
        replicas,
        isr,
      },
      topicConfigLookup(topicConfig),
    );
  }
  return { dir, logs, rm, clock };
}

async function teardown(env: Env): Promise<void> {
  env.rm.shutdown();
  await env.logs.shutdown();
  await rm(env.dir, { recursive: true, force: true });
}

function records(n: number, opts: Parameters<typeof buildRecordBatch>[0] = {}, timestamp = Date.now()): Promise<Buffer> {
  return buildRecordBatch(
    opts,
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`value-${i}`), timestamp: timestamp + i })),
  );
}

function produce(env: Env, recs: Buffer, acks = 1, partition = 0, timeoutMs = 1000) {
  return env.rm.appendRecords({ acks, timeoutMs, produceVersion: 9, entries: [{ topic: 't', partition, records: recs }] });
}

function fetchParams(fetchOffset: number, more: Partial<FetchParams> = {}): FetchParams {
  return {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    partitions: [{ topic: 't', partition: 0, fetchOffset, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1 }],
    ...more,
  };
}

describe('ReplicaManager', function () {
  let env: Env;
  afterEach(async () => {
    if (env !== undefined) await teardown(env);
    env = undefined as unknown as Env;
  });

  it('assigns consecutive offsets, stamps the leader epoch, and moves the high watermark (ISR = {self})', async () => {
    env = await setup();
    const [r1] = await produce(env, await records(3));
    const [r2] = await produce(env, await records(2));
    assert.equal(r1!.errorCode, Errors.NONE.code);
    assert.equal(r1!.baseOffset, 0);
    assert.equal(r2!.baseOffset, 3);
    assert.equal(r2!.logStartOffset, 0);
    const partition = env.rm.getPartition('t', 0)!;
    assert.equal(partition.highWatermark, 5);
    const [f] = await env.rm.fetchMessages(fetchParams(0));
    const batches = [...batchesIn(f!.records, true)];
    assert.deepEqual(
      batches.map((b) => [b.baseOffset, b.lastOffset, b.partitionLeaderEpoch]),
      [
        [0, 2, 3],
        [3, 4, 3],
      ],
    );
    assert.equal(f!.highWatermark, 5);
    assert.equal(f!.lastStableOffset, 5);
    assert.equal(f!.logStartOffset, 0);
    assert.equal(f!.abortedTransactions, null);
  });

  it('appends made to one partition concurrently land back to back in call order', async () => {
    env = await setup();
    const all = await Promise.all([produce(env, await records(1)), produce(env, await records(2)), produce(env, await records(3))]);
    assert.deepEqual(
      all.map(([r]) => r!.baseOffset),
      [0, 1, 3],
    );
    assert.equal(env.rm.getPartition('t', 0)!.logEndOffset, 6);
  });

  it('an append that breaks the offset invariant fails its request with UNKNOWN_SERVER_ERROR and later appends still go through', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-rm-'));
    const logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
    const provider = new LogManagerProvider(logs);
    let misreport = true;
    const reported: string[] = [];
    const misreportingProvider: LogProvider = {
      async getOrCreateLog(topic, partition, topicId, config) {
        const log = await provider.getOrCreateLog(topic, partition, topicId, config);
        return new Proxy(log, {
          get(target, prop) {
            if (prop === 'appendAsLeader') {
              return async (batches: Buffer, leaderEpoch: number) => {
                const info = await target.appendAsLeader(batches, leaderEpoch);
                if (!misreport) return info;
                misreport = false;
                return { ...info, firstOffset: info.firstOffset + 1 };
              };
            }
            const value = Reflect.get(target, prop) as unknown;
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          },
        });
      },
      deleteLog: (topic, partition) => provider.deleteLog(topic, partition),
      logDirOf: (topic, partition) => provider.logDirOf(topic, partition),
      logDirs: () => provider.logDirs(),
    };
    const clock = new ManualClock(Date.now());
    const manager = new ReplicaManager({
      brokerId: BROKER,
      logs: misreportingProvider,
      clock,
      onAppendError: (partition) => reported.push(partition),
    });
    await manager.applyPartitionState(
      {
        topic: 't',
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        partition: 0,
        leaderId: BROKER,
        leaderEpoch: 3,
        partitionEpoch: 0,
        replicas: [BROKER],
        isr: [BROKER],
      },
      topicConfigLookup({}),
    );
    env = { dir, logs, rm: manager, clock };
    const [failed] = await produce(env, await records(2));
    assert.equal(failed!.errorCode, Errors.UNKNOWN_SERVER_ERROR.code);
    assert.deepEqual(reported, ['t-0']);
    const [next] = await produce(env, await records(1));
    assert.equal(next!.errorCode, Errors.NONE.code);
    assert.equal(next!.baseOffset, 2);
  });

  describe('bounded append queues (replica.append.queue.max.*)', () => {
    /** A ReplicaManager whose log appends wait until the test opens the gate; it records each write's batch count. */
    async function gated(limits: { maxBytes: number; maxRequests: number }) {
      const dir = await mkdtemp(join(tmpdir(), 'sluice-rm-'));
      const logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
      const provider = new LogManagerProvider(logs);
      const writes: number[] = [];
      let open: () => void = () => {};
      let gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const gatedProvider: LogProvider = {
        async getOrCreateLog(topic, partition, topicId, config) {
          const log = await provider.getOrCreateLog(topic, partition, topicId, config);
          return new Proxy(log, {
            get(target, prop) {
              if (prop === 'appendAsLeader') {
                return async (batches: Buffer, leaderEpoch: number) => {
                  writes.push([...batchesIn(batches)].length);
                  await gate;
                  return target.appendAsLeader(batches, leaderEpoch);
                };
              }
              const value = Reflect.get(target, prop) as unknown;
              return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
            },
          });
        },
        deleteLog: (topic, partition) => provider.deleteLog(topic, partition),
        logDirOf: (topic, partition) => provider.logDirOf(topic, partition),
        logDirs: () => provider.logDirs(),
      };
      const clock = new ManualClock(Date.now());
      const manager = new ReplicaManager({ brokerId: BROKER, logs: gatedProvider, clock, appendQueueLimits: limits });
      await manager.applyPartitionState(
        {
          topic: 't',
          topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
          partition: 0,
          leaderId: BROKER,
          leaderEpoch: 3,
          partitionEpoch: 0,
          replicas: [BROKER],
          isr: [BROKER],
        },
        topicConfigLookup({}),
      );
      env = { dir, logs, rm: manager, clock };
      const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
      return {
        writes,
        settle,
        /** Lets the writes through, the ones made so far and every later one. */
        release() {
          open();
          gate = Promise.resolve();
        },
      };
    }

    it('holds what does not fit (max.requests) until the write in flight is done, then writes it next, in order', async () => {
      const q = await gated({ maxBytes: 1 << 20, maxRequests: 2 });
      const sent = [];
      for (let i = 0; i < 5; i++) sent.push(produce(env, await records(1)));
      await q.settle();
      // The first request is being written; two fill the queue, two wait for room.
      assert.deepEqual(q.writes, [1]);
      q.release();
      const results = await Promise.all(sent);
      assert.deepEqual(
        results.map(([r]) => [r!.errorCode, r!.baseOffset]),
        [
          [0, 0],
          [0, 1],
          [0, 2],
          [0, 3],
          [0, 4],
        ],
      );
      assert.deepEqual(q.writes, [1, 2, 2], 'no write took more than max.requests');
    });

    it('bounds a write by max.bytes, but admits one request alone whatever its size', async () => {
      const big = await records(40);
      const q = await gated({ maxBytes: big.length, maxRequests: 100 });
      const sent = [produce(env, await records(1)), produce(env, await records(40)), produce(env, await records(40))];
      sent.push(produce(env, await records(200)));
      await q.settle();
      q.release();
      const results = await Promise.all(sent);
      assert.ok(results.every(([r]) => r!.errorCode === 0));
      assert.deepEqual(q.writes, [1, 1, 1, 1]);
      assert.equal(env.rm.getPartition('t', 0)!.logEndOffset, 281);
    });

    it('answers a request still waiting for room when its timeout passes REQUEST_TIMED_OUT, and writes nothing of it', async () => {
      const q = await gated({ maxBytes: 1 << 20, maxRequests: 1 });
      const first = produce(env, await records(1), 1, 0, 60_000);
      const queued = produce(env, await records(1), 1, 0, 60_000);
      const late = produce(env, await records(1), 1, 0, 1000);
      await q.settle();
      env.clock.advance(1000);
      const [timedOut] = await late;
      assert.equal(timedOut!.errorCode, Errors.REQUEST_TIMED_OUT.code);
      assert.match(timedOut!.errorMessage ?? '', /append queue of t-0/);
      q.release();
      assert.deepEqual(
        (await Promise.all([first, queued])).map(([r]) => r!.baseOffset),
        [0, 1],
      );
      assert.equal(env.rm.getPartition('t', 0)!.logEndOffset, 2);
    });
  });

  it('a corrupt batch coalesced with good ones is refused alone (the log checks the CRC)', async () => {
    env = await setup();
    const bad = await records(2);
    flipBits(bad, bad.length - 1, 0xff);
    const all = await Promise.all([produce(env, await records(1)), produce(env, bad), produce(env, await records(2))]);
    assert.deepEqual(
      all.map(([r]) => [r!.errorCode, r!.baseOffset]),
      [
        [0, 0],
        [Errors.CORRUPT_MESSAGE.code, -1],
        [0, 1],
      ],
    );
  });

  it('returns the whole batch containing a mid-batch fetch offset, and at least one batch past max bytes', async () => {
    env = await setup();
    await produce(env, await records(5));
    await produce(env, await records(5));
    const [mid] = await env.rm.fetchMessages(fetchParams(2, { maxBytes: 1 }));
    const batches = [...batchesIn(mid!.records)];
    assert.equal(batches.length, 1, 'only the first batch fits, and it is returned whole');
    assert.equal(batches[0]!.baseOffset, 0);
  });

  it('a fetch of several partitions answers as if read in order: only the first with records may pass its max bytes, and it shrinks what the rest may take', async () => {
    env = await setup({}, 3);
    for (let p = 0; p < 3; p++) for (let b = 0; b < 4; b++) await produce(env, await records(5), 1, p);
    const batchBytes = [...batchesIn((await env.rm.fetchMessages(fetchParams(0, { maxBytes: 1 })))[0]!.records)][0]!.sizeInBytes;
    const fetch = (partitionMaxBytes: number[], maxBytes: number) =>
      env.rm.fetchMessages(
        fetchParams(0, {
          maxBytes,
          partitions: partitionMaxBytes.map((max, partition) => ({
            topic: 't',
            partition,
            fetchOffset: 0,
            partitionMaxBytes: max,
            currentLeaderEpoch: -1,
          })),
        }),
      );
    const batches = (rs: { records: Buffer }[]): number[] => rs.map((r) => [...batchesIn(r.records)].length);

    // The request's bound does not bind: every partition takes what its own bound allows.
    assert.deepEqual(batches(await fetch([2 * batchBytes, 3 * batchBytes, 1 * batchBytes], 1 << 20)), [2, 3, 1]);
    // The first partition's bound is below one batch: it still answers one; the later ones may not.
    assert.deepEqual(batches(await fetch([1, 1, 2 * batchBytes], 1 << 20)), [1, 0, 2]);
    // The request's bound binds: in order, each takes what the ones before it left.
    assert.deepEqual(batches(await fetch([2 * batchBytes, 2 * batchBytes, 2 * batchBytes], 3 * batchBytes)), [2, 1, 0]);
    // The oversized first batch counts against the request's bound for the partitions after it.
    assert.deepEqual(batches(await fetch([1, 4 * batchBytes, 4 * batchBytes], 4 * batchBytes + 1)), [1, 3, 0]);
  });

  it('answers OFFSET_OUT_OF_RANGE past the log end with the offsets filled in, and an empty read at the end', async () => {
    env = await setup();
    await produce(env, await records(2));
    const [past] = await env.rm.fetchMessages(fetchParams(3));
    assert.equal(past!.errorCode, Errors.OFFSET_OUT_OF_RANGE.code);
    assert.equal(past!.highWatermark, 2);
    assert.equal(past!.logStartOffset, 0);
    assert.equal(past!.records.length, 0);
    const [atEnd] = await env.rm.fetchMessages(fetchParams(2));
    assert.equal(atEnd!.errorCode, Errors.NONE.code);
    assert.ok(Buffer.isBuffer(atEnd!.records));
    assert.equal(atEnd!.records.length, 0);
  });

  it('a follower fetching past the log end is OFFSET_OUT_OF_RANGE and moves neither the high watermark nor waiting produces', async () => {
    env = await setup({}, 1, [BROKER, 2]);
    await produce(env, await records(2), 1);
    const waiting = produce(env, await records(1), -1, 0, 60_000);
    await new Promise((r) => setTimeout(r, 20));
    const partition = env.rm.getPartition('t', 0)!;
    assert.equal(partition.logEndOffset, 3);
    for (const offset of [4, Number.MAX_SAFE_INTEGER]) {
      const [past] = await env.rm.fetchMessages({ ...fetchParams(offset), replicaId: 2 });
      assert.equal(past!.errorCode, Errors.OFFSET_OUT_OF_RANGE.code);
      assert.equal(past!.highWatermark, 0);
    }
    assert.equal(partition.highWatermark, 0, 'the follower holds none of the records it claimed');
    assert.equal(env.rm.producePurgatory.size, 1, 'the acks=-1 produce still waits for the follower');
    // A fetch within the log acknowledges what precedes it.
    const [caughtUp] = await env.rm.fetchMessages({ ...fetchParams(3), replicaId: 2 });
    assert.equal(caughtUp!.errorCode, Errors.NONE.code);
    assert.equal(partition.highWatermark, 3);
    const [done] = await waiting;
    assert.equal(done!.errorCode, Errors.NONE.code);
  });

  it('answers UNKNOWN_TOPIC_OR_PARTITION with -1 offsets for partitions it does not host', async () => {
    env = await setup();
    const [f] = await env.rm.fetchMessages({
      ...fetchParams(0),
      partitions: [{ topic: 'nope', partition: 0, fetchOffset: 0, partitionMaxBytes: 100, currentLeaderEpoch: -1 }],
    });
    assert.equal(f!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
    assert.equal(f!.highWatermark, -1);
    const [p] = await env.rm.appendRecords({
      acks: 1,
      timeoutMs: 100,
      produceVersion: 9,
      entries: [{ topic: 'nope', partition: 0, records: await records(1) }],
    });
    assert.equal(p!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });

  it('fences stale leader epochs and flags future ones', async () => {
    env = await setup();
    const base = fetchParams(0);
    const [stale] = await env.rm.fetchMessages({ ...base, partitions: [{ ...base.partitions[0]!, currentLeaderEpoch: 2 }] });
    assert.equal(stale!.errorCode, Errors.FENCED_LEADER_EPOCH.code);
    const [future] = await env.rm.fetchMessages({ ...base, partitions: [{ ...base.partitions[0]!, currentLeaderEpoch: 4 }] });
    assert.equal(future!.errorCode, Errors.UNKNOWN_LEADER_EPOCH.code);
  });

  it('a long-poll fetch at the log end is woken by an append, with no timer firing', async () => {
    env = await setup();
    let settled = false;
    const pending = env.rm.fetchMessages(fetchParams(0, { maxWaitMs: 30_000 })).then((r) => {
      settled = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false);
    assert.equal(env.rm.fetchPurgatory.size, 1);
    await produce(env, await records(2));
    const [f] = await pending;
    assert.equal([...batchesIn(f!.records)].length, 1);
    assert.equal(env.rm.fetchPurgatory.size, 0);
  });

  it('a long-poll fetch with nothing new returns empty when max.wait.ms expires', async () => {
    env = await setup();
    const pending = env.rm.fetchMessages(fetchParams(0, { maxWaitMs: 500 }));
    await new Promise((r) => setImmediate(r));
    env.clock.advance(500);
    const [f] = await pending;
    assert.equal(f!.errorCode, Errors.NONE.code);
    assert.equal(f!.records.length, 0);
  });

  it('min.bytes keeps the fetch parked until enough bytes are visible', async () => {
    env = await setup();
    const one = await records(1);
    const pending = env.rm.fetchMessages(fetchParams(0, { maxWaitMs: 30_000, minBytes: one.length * 2 + 1 }));
    await new Promise((r) => setImmediate(r));
    await produce(env, one);
    await produce(env, await records(1));
    assert.equal(env.rm.fetchPurgatory.size, 1, 'two small batches are not enough');
    await produce(env, await records(1));
    const [f] = await pending;
    assert.equal([...batchesIn(f!.records)].length, 3);
  });

  it('acks=-1 waits for the ISR: immediate with one replica, REQUEST_TIMED_OUT when a follower lags', async () => {
    env = await setup();
    const [solo] = await produce(env, await records(1), -1);
    assert.equal(solo!.errorCode, Errors.NONE.code);
    await teardown(env);

    env = await setup({}, 1, [BROKER, 2]);
    const pending = produce(env, await records(1), -1, 0, 200);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(env.rm.producePurgatory.size, 1);
    env.clock.advance(200);
    const [late] = await pending;
    assert.equal(late!.errorCode, Errors.REQUEST_TIMED_OUT.code);
    assert.equal(late!.baseOffset, 0);

    const waiting = produce(env, await records(1), -1, 0, 10_000);
    await new Promise((r) => setTimeout(r, 20));
    // The follower fetches past both batches: the high watermark moves and the produce completes.
    await env.rm.fetchMessages({ ...fetchParams(2), replicaId: 2 });
    const [done] = await waiting;
    assert.equal(done!.errorCode, Errors.NONE.code);
    assert.equal(env.rm.getPartition('t', 0)!.highWatermark, 2);
  });

  it('an acks=-1 produce waiting when the partition goes away is answered NOT_LEADER_OR_FOLLOWER', async () => {
    env = await setup({}, 1, [BROKER, 2]);
    const waiting = produce(env, await records(1), -1, 0, 60_000);
    await new Promise((r) => setTimeout(r, 20));
    await env.rm.removePartition('t', 0, false);
    const [r] = await waiting;
    assert.equal(r!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);
  });

  it('acks=-1 below min.insync.replicas is NOT_ENOUGH_REPLICAS and writes nothing', async () => {
    env = await setup({ 'min.insync.replicas': '2' }, 1, [BROKER], [BROKER, 2]);
    const [r] = await produce(env, await records(1), -1);
    assert.equal(r!.errorCode, Errors.NOT_ENOUGH_REPLICAS.code);
    assert.equal(env.rm.getPartition('t', 0)!.logEndOffset, 0);
    const [ok] = await produce(env, await records(1), 1);
    assert.equal(ok!.errorCode, Errors.NONE.code);
  });

  it('min.insync.replicas above the replication factor is capped by it: acks=-1 succeeds once every replica is in sync', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 5 }), async (replicationFactor, minIsr) => {
        const replicas = Array.from({ length: replicationFactor }, (_, i) => BROKER + i);
        const local = await setup({ 'min.insync.replicas': String(minIsr) }, 1, replicas, replicas);
        try {
          const partition = local.rm.getPartition('t', 0)!;
          assert.equal(partition.effectiveMinIsr, Math.min(minIsr, replicationFactor));
          assert.equal(partition.isUnderMinIsr, false);
          const waiting = produce(local, await records(1), -1, 0, 60_000);
          await new Promise((r) => setTimeout(r, 20));
          for (const follower of replicas.slice(1)) await local.rm.fetchMessages({ ...fetchParams(1), replicaId: follower });
          const [r] = await waiting;
          assert.equal(r!.errorCode, Errors.NONE.code);
          assert.equal(partition.highWatermark, 1);
        } finally {
          await teardown(local);
        }
      }),
      { numRuns: 15 },
    );
  });

  it('consumers see only offsets below the high watermark', async () => {
    env = await setup({}, 1, [BROKER, 2]);
    await produce(env, await records(2), 1);
    const [f] = await env.rm.fetchMessages(fetchParams(0));
    assert.equal(f!.records.length, 0);
    assert.equal(f!.highWatermark, 0);
    const [follower] = await env.rm.fetchMessages({ ...fetchParams(0), replicaId: 2 });
    assert.ok(follower!.records.length > 0, 'followers read up to the log end');
  });

  it('idempotent producers: a retried batch gets its original offset, gaps and old epochs are refused', async () => {
    env = await setup();
    const b0 = await records(2, { producerId: 42n, producerEpoch: 0, baseSequence: 0 });
    const b1 = await records(2, { producerId: 42n, producerEpoch: 0, baseSequence: 2 });
    const [first] = await produce(env, Buffer.from(b0));
    const [second] = await produce(env, Buffer.from(b1));
    assert.deepEqual([first!.baseOffset, second!.baseOffset], [0, 2]);
    const [dup] = await produce(env, Buffer.from(b0));
    assert.equal(dup!.errorCode, Errors.NONE.code);
    assert.equal(dup!.baseOffset, 0, 'duplicate answered with the original offset');
    assert.equal(env.rm.getPartition('t', 0)!.logEndOffset, 4, 'and not appended');
    const gap = await records(1, { producerId: 42n, producerEpoch: 0, baseSequence: 9 });
    const [outOfOrder] = await produce(env, gap);
    assert.equal(outOfOrder!.errorCode, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code);
    const bumped = await records(1, { producerId: 42n, producerEpoch: 1, baseSequence: 0 });
    assert.equal((await produce(env, bumped))[0]!.errorCode, Errors.NONE.code);
    const fenced = await records(1, { producerId: 42n, producerEpoch: 0, baseSequence: 4 });
    assert.equal((await produce(env, fenced))[0]!.errorCode, Errors.INVALID_PRODUCER_EPOCH.code);
    const { producers } = await env.rm.describeProducers('t', 0);
    assert.deepEqual(
      producers.map((p) => [p.producerId, p.producerEpoch, p.lastSequence]),
      [[42n, 1, 0]],
    );
  });

  it('LogAppendTime topics stamp the batch and answer with the append time', async () => {
    env = await setup({ 'message.timestamp.type': 'LogAppendTime' });
    const [r] = await produce(env, await records(2, {}, 1000));
    assert.equal(r!.logAppendTimeMs, env.clock.now());
    const [f] = await env.rm.fetchMessages(fetchParams(0));
    const batch = new RecordBatch(f!.records);
    assert.equal(batch.maxTimestamp, env.clock.now());
    assert.ok(batch.isCrcValid());
  });

  it('ListOffsets: earliest, latest, by timestamp (first >= target, else -1) and max timestamp', async () => {
    env = await setup();
    await produce(env, await records(3, {}, 1000)); // offsets 0-2, ts 1000-1002
    await produce(env, await records(3, {}, 5000)); // offsets 3-5, ts 5000-5002
    const list = (ts: number) => env.rm.listOffset('t', 0, ts, 0, -1, -1);
    assert.deepEqual(await list(-2), { errorCode: 0, timestampMs: -1, offset: 0, leaderEpoch: 3 });
    assert.deepEqual(await list(-1), { errorCode: 0, timestampMs: -1, offset: 6, leaderEpoch: 3 });
    assert.deepEqual(await list(1001), { errorCode: 0, timestampMs: 1001, offset: 1, leaderEpoch: 3 });
    assert.deepEqual(await list(2000), { errorCode: 0, timestampMs: 5000, offset: 3, leaderEpoch: 3 });
    assert.deepEqual(await list(9999), { errorCode: 0, timestampMs: -1, offset: -1, leaderEpoch: -1 });
    const max = await list(-3);
    assert.deepEqual([max.offset, max.timestampMs], [5, 5002]);
  });

  it('DeleteRecords moves the log start (-1 = high watermark) and refuses offsets past the high watermark', async () => {
    env = await setup();
    await produce(env, await records(4));
    assert.deepEqual(await env.rm.deleteRecords('t', 0, 5), { errorCode: Errors.OFFSET_OUT_OF_RANGE.code, lowWatermark: -1 });
    assert.deepEqual(await env.rm.deleteRecords('t', 0, 2), { errorCode: 0, lowWatermark: 2 });
    const [below] = await env.rm.fetchMessages(fetchParams(1));
    assert.equal(below!.errorCode, Errors.OFFSET_OUT_OF_RANGE.code);
    assert.equal(below!.logStartOffset, 2);
    assert.deepEqual(await env.rm.deleteRecords('t', 0, -1), { errorCode: 0, lowWatermark: 4 });
    assert.equal((await env.rm.listOffset('t', 0, -2, 0, -1, -1)).offset, 4);
  });

  it('OffsetForLeaderEpoch answers from the leader-epoch cache', async () => {
    env = await setup();
    await produce(env, await records(3));
    assert.deepEqual(env.rm.offsetForLeaderEpoch('t', 0, 3, -1), { errorCode: 0, leaderEpoch: 3, endOffset: 3 });
    assert.deepEqual(env.rm.offsetForLeaderEpoch('t', 0, 3, 2), {
      errorCode: Errors.FENCED_LEADER_EPOCH.code,
      leaderEpoch: -1,
      endOffset: -1,
    });
    assert.equal(env.rm.offsetForLeaderEpoch('x', 0, 3, -1).errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });

  it('DescribeLogDirs lists hosted partitions with their sizes under their log dir', async () => {
    env = await setup({}, 2);
    await produce(env, await records(3));
    const dirs = env.rm.describeLogDirs(null);
    assert.equal(dirs.length, 1);
    assert.equal(dirs[0]!.logDir, env.dir);
    const parts = dirs[0]!.topics[0]!.partitions;
    assert.deepEqual(
      parts.map((p) => p.partitionIndex),
      [0, 1],
    );
    assert.ok(parts[0]!.partitionSizeBytes > 0);
    assert.equal(parts[1]!.partitionSizeBytes, 0);
  });

  it('removing a partition completes its waiting fetches and deletes its log when asked', async () => {
    env = await setup();
    const pending = env.rm.fetchMessages(fetchParams(0, { maxWaitMs: 30_000 }));
    await new Promise((r) => setImmediate(r));
    await env.rm.removePartition('t', 0, true);
    const [f] = await pending;
    assert.equal(f!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
    assert.equal(env.logs.getLog('t', 0), undefined);
  });

  it('concurrent bursts of produces to several partitions read back complete and in order (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(fc.record({ partition: fc.integer({ min: 0, max: 2 }), count: fc.integer({ min: 1, max: 4 }) }), {
            minLength: 1,
            maxLength: 6,
          }),
          { minLength: 1, maxLength: 4 },
        ),
        async (bursts) => {
          env = await setup({}, 3);
          const expected: string[][] = [[], [], []];
          let n = 0;
          for (const burst of bursts) {
            const sends = burst.map(async ({ partition, count }) => {
              const values = Array.from({ length: count }, () => `m${n++}`);
              expected[partition]!.push(...values);
              const recs = await buildRecordBatch(
                {},
                values.map((v) => ({ value: Buffer.from(v), timestamp: Date.now() })),
              );
              return produce(env, recs, 1, partition);
            });
            const results = await Promise.all(sends);
            assert.ok(results.every(([r]) => r!.errorCode === 0));
          }
          for (let partition = 0; partition < 3; partition++) {
            const values: string[] = [];
            // A read stops at a segment end, as Kafka's does: keep fetching from the next offset.
            for (let offset = 0; ; ) {
              const [f] = await env.rm.fetchMessages({
                ...fetchParams(0),
                partitions: [{ topic: 't', partition, fetchOffset: offset, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1 }],
              });
              const batches = [...batchesIn(f!.records, true)];
              if (batches.length === 0) break;
              for (const batch of batches) for (const r of await readRecords(batch)) values.push(r.value!.toString());
              offset = batches.at(-1)!.nextOffset;
            }
            assert.deepEqual(values, expected[partition]);
          }
          await teardown(env);
          env = undefined as unknown as Env;
        },
      ),
      { numRuns: 8 },
    );
  });
});
