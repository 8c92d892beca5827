// Fuzzer findings against the group coordinator, as regression tests: a request never
// takes down the process (a timer that throws fails only its group), no int64 from the wire
// yields a timestamp that cannot be read back, and a partition of __consumer_offsets always
// loads (undecodable records are skipped and counted, a failed read is retried).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { Writer } from '../../../protocol/primitives.ts';
import { buildRecordBatch, RecordBatch } from '../../../protocol/records/index.ts';
import { encodeOffsetCommitValue } from '../../../protocol/messages/group-coordinator/offset-commit-value.ts';
import { DEFAULT_GROUP_COORDINATOR_CONFIG } from '../../../src/coordinator/config.ts';
import { GroupCoordinator } from '../../../src/coordinator/group-coordinator.ts';
import type { CoordinatorLog, JoinGroupParams } from '../../../src/coordinator/group-coordinator.ts';
import { GroupState, uniqueProtocols } from '../../../src/coordinator/group.ts';
import {
  CoordinatorRecordDecodeError,
  decodeCoordinatorRecord,
  encodeCoordinatorRecord,
} from '../../../src/coordinator/offsets-topic-codec.ts';
import type { CoordinatorRecord } from '../../../src/coordinator/records.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { GroupCoordinatorService } from '../../../src/coordinator/service.ts';
import type { CoordinatorTopicAccess } from '../../../src/coordinator/runtime.ts';
import {
  expireTimestampFromCommitTimestamp,
  expireTimestampFromRetention,
  MAX_TIMESTAMP_MS,
  NO_TIMESTAMP,
  saturateOptionalTimestampMs,
} from '../../../src/coordinator/timestamps.ts';

const nullLog: CoordinatorLog = { append: async () => 0, holdsLeadership: () => true };
const flush = () => new Promise((resolve) => setImmediate(resolve));
const config = { ...DEFAULT_GROUP_COORDINATOR_CONFIG, offsetsTopicPartitions: 1, initialRebalanceDelayMs: 3000 };

function joinParams(groupId: string, extra: Partial<JoinGroupParams> = {}): JoinGroupParams {
  return {
    groupId,
    memberId: '',
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('a') }],
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 30_000,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    requireKnownMemberId: false,
    supportsSkipAssignment: false,
    ...extra,
  };
}

function coordinatorWithSink() {
  const clock = new ManualClock();
  const failures: string[] = [];
  const coordinator = new GroupCoordinator(config, clock, nullLog, (_err, what) => {
    failures.push(what);
  });
  coordinator.beginLoading(0);
  coordinator.completeLoading(0, []);
  return { clock, coordinator, failures };
}

describe('group coordinator hardening', () => {
  describe('duplicate protocol names in JoinGroup', () => {
    it("treats a member's protocols as a set: the first occurrence wins", () => {
      const a = { name: 'range', metadata: Buffer.from('first') };
      const b = { name: 'range', metadata: Buffer.from('second') };
      const c = { name: 'roundrobin', metadata: Buffer.alloc(0) };
      assert.deepEqual(uniqueProtocols([a, c, b]), [a, c]);
    });

    it('completes the first rebalance of a new group joined with [range, range]', async () => {
      const { clock, coordinator, failures } = coordinatorWithSink();
      const join = coordinator.joinGroup(
        joinParams('dup', {
          protocols: [
            { name: 'range', metadata: Buffer.from('a') },
            { name: 'range', metadata: Buffer.from('b') },
          ],
        }),
      );
      clock.advance(config.initialRebalanceDelayMs);
      const result = await join;
      assert.equal(result.errorCode, 0);
      assert.equal(result.protocolName, 'range');
      assert.equal(result.leaderId, result.memberId);
      assert.deepEqual(
        result.members.map((m) => m.metadata.toString()),
        ['a'],
      );
      assert.equal(coordinator.group('dup')!.state, GroupState.CompletingRebalance);
      assert.deepEqual(failures, []);
    });

    it('lets a second member join a group whose first member named its protocol twice', async () => {
      const { clock, coordinator } = coordinatorWithSink();
      const dup = [
        { name: 'range', metadata: Buffer.from('a') },
        { name: 'range', metadata: Buffer.from('a') },
      ];
      const first = coordinator.joinGroup(joinParams('dup2', { protocols: dup }));
      const second = coordinator.joinGroup(joinParams('dup2'));
      clock.advance(2 * config.initialRebalanceDelayMs);
      const [r1, r2] = await Promise.all([first, second]);
      assert.equal(r1.errorCode, 0);
      assert.equal(r2.errorCode, 0);
      assert.equal(r1.protocolName, 'range');
      assert.equal(r1.generationId, r2.generationId);
    });
  });

  describe('timers', () => {
    it('fails only the group whose timer throws: its joins answer UNKNOWN_SERVER_ERROR, the group is reset and reported', async () => {
      const { clock, coordinator, failures } = coordinatorWithSink();
      const broken = coordinator.joinGroup(joinParams('broken'));
      const healthy = coordinator.joinGroup(joinParams('healthy'));
      // Break the invariant selectProtocol relies on, as a bug would.
      for (const m of coordinator.group('broken')!.members.values()) m.protocols = [];
      clock.advance(config.initialRebalanceDelayMs);
      const [b, h] = await Promise.all([broken, healthy]);
      assert.equal(b.errorCode, Errors.UNKNOWN_SERVER_ERROR.code);
      assert.equal(h.errorCode, 0);
      assert.equal(failures.length, 1);
      assert.match(failures[0]!, /group broken/);
      const group = coordinator.group('broken')!;
      assert.equal(group.state, GroupState.Empty);
      assert.equal(group.size, 0);
      // The reset group takes members again.
      const again = coordinator.joinGroup(joinParams('broken'));
      clock.advance(config.initialRebalanceDelayMs);
      assert.equal((await again).errorCode, 0);
    });

    it('keeps expiring offsets after a failing pass', async () => {
      const clock = new ManualClock();
      let fail = true;
      const failures: string[] = [];
      const log: CoordinatorLog = {
        holdsLeadership: () => true,
        append: async () => {
          if (fail) throw new Error('disk');
          return 0;
        },
      };
      const coordinator = new GroupCoordinator({ ...config, offsetsRetentionCheckIntervalMs: 1000 }, clock, log, (_e, what) =>
        failures.push(what),
      );
      coordinator.beginLoading(0);
      coordinator.completeLoading(0, []);
      coordinator.start();
      const expireOffsets = coordinator.expireOffsets.bind(coordinator);
      let passes = 0;
      coordinator.expireOffsets = async () => {
        passes++;
        if (passes === 1) throw new Error('boom');
        return expireOffsets();
      };
      clock.advance(1000);
      await flush();
      clock.advance(1000);
      await flush();
      assert.equal(passes, 2);
      assert.deepEqual(failures, ['offset expiration']);
      fail = false;
      coordinator.shutdown();
    });
  });

  describe('int64s from the wire', () => {
    const now = 1_700_000_000_000;

    it('computes OffsetCommit v2-v4 expiry from retention_time_ms without leaving the safe range', () => {
      assert.equal(expireTimestampFromRetention(now, -1n), NO_TIMESTAMP);
      assert.equal(expireTimestampFromRetention(now, 1000n), now + 1000);
      assert.equal(expireTimestampFromRetention(now, -2n), now - 2);
      assert.equal(expireTimestampFromRetention(now, 2n ** 60n), MAX_TIMESTAMP_MS);
      assert.equal(expireTimestampFromRetention(now, 2n ** 63n - 1n), MAX_TIMESTAMP_MS);
      assert.equal(expireTimestampFromRetention(now, -(2n ** 63n)), 0);
      fc.assert(
        fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (retention) => {
          const expire = expireTimestampFromRetention(now, retention);
          assert.ok(expire === NO_TIMESTAMP || (Number.isSafeInteger(expire) && expire >= 0));
        }),
      );
    });

    it('computes OffsetCommit v1 expiry from commit_timestamp without leaving the safe range', () => {
      assert.equal(expireTimestampFromCommitTimestamp(-1n, 1000), NO_TIMESTAMP);
      assert.equal(expireTimestampFromCommitTimestamp(5n, 1000), 1005);
      assert.equal(expireTimestampFromCommitTimestamp(2n ** 63n - 1n, 1000), MAX_TIMESTAMP_MS);
      assert.equal(expireTimestampFromCommitTimestamp(-(2n ** 63n), 1000), 0);
    });

    it('writes and reads back an offset whose expiry saturated', () => {
      const record: CoordinatorRecord = {
        type: 'offset',
        groupId: 'g',
        topic: 't',
        partition: 0,
        value: {
          offset: 2n ** 62n,
          leaderEpoch: -1,
          metadata: '',
          commitTimestampMs: now,
          expireTimestampMs: expireTimestampFromRetention(now, 2n ** 60n),
        },
      };
      const { key, value } = encodeCoordinatorRecord(record);
      assert.deepEqual(decodeCoordinatorRecord(key, value), record);
    });

    it('reads records Kafka may have written with timestamps past 2^53 (saturated, not refused)', () => {
      const { key } = encodeCoordinatorRecord({ type: 'offset', groupId: 'g', topic: 't', partition: 0, value: null });
      const value = new Writer(64).int16(1);
      encodeOffsetCommitValue(
        value,
        { offset: 7n, leaderEpoch: -1, metadata: '', commitTimestamp: 2n ** 62n, expireTimestamp: BigInt(now) + 2n ** 60n },
        1,
      );
      const decoded = decodeCoordinatorRecord(key, value.toBuffer());
      assert.equal(decoded?.type, 'offset');
      assert.equal(decoded.value!.commitTimestampMs, MAX_TIMESTAMP_MS);
      assert.equal(decoded.value!.expireTimestampMs, MAX_TIMESTAMP_MS);
      assert.equal(saturateOptionalTimestampMs(-1n), NO_TIMESTAMP);
      assert.equal(saturateOptionalTimestampMs(-5n), 0);
    });
  });

  describe('decoding any bytes of __consumer_offsets', () => {
    const anyBytes = fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));
    const version = fc.integer({ min: -1, max: 6 });
    const withVersion = (v: number, tail: Buffer) => Buffer.concat([Buffer.from([(v >> 8) & 0xff, v & 0xff]), tail]);
    const key = fc.oneof(
      anyBytes,
      fc.tuple(version, anyBytes).map(([v, t]) => withVersion(v, t)),
      // Valid keys followed by noise, so values get decoded.
      fc
        .tuple(fc.string({ maxLength: 8 }), anyBytes)
        .map(([g, t]) => Buffer.concat([encodeCoordinatorRecord({ type: 'group', groupId: g, value: null }).key, t])),
      fc
        .tuple(fc.string({ maxLength: 8 }), anyBytes)
        .map(([g, t]) =>
          Buffer.concat([encodeCoordinatorRecord({ type: 'offset', groupId: g, topic: 't', partition: 0, value: null }).key, t]),
        ),
    );
    const value = fc.option(
      fc.oneof(
        anyBytes,
        fc.tuple(version, anyBytes).map(([v, t]) => withVersion(v, t)),
      ),
      { nil: null },
    );

    it('returns a record or null, or throws CoordinatorRecordDecodeError: never RangeError or TypeError', () => {
      fc.assert(
        fc.property(key, value, (k, v) => {
          try {
            const decoded = decodeCoordinatorRecord(k, v);
            if (decoded?.type === 'offset' && decoded.value !== null) {
              assert.ok(Number.isSafeInteger(decoded.value.commitTimestampMs));
              assert.ok(Number.isSafeInteger(decoded.value.expireTimestampMs));
            }
            if (decoded?.type === 'group' && decoded.value !== null) assert.ok(Number.isSafeInteger(decoded.value.currentStateTimestampMs));
          } catch (err) {
            assert.ok(err instanceof CoordinatorRecordDecodeError, `unexpected ${(err as Error).name}: ${(err as Error).message}`);
          }
        }),
        { numRuns: 3000 },
      );
    });
  });

  describe('loading a partition', () => {
    const now = 1_700_000_000_000;
    const offsetRecord = (groupId: string, offset: bigint): CoordinatorRecord => ({
      type: 'offset',
      groupId,
      topic: 't',
      partition: 0,
      value: { offset, leaderEpoch: -1, metadata: '', commitTimestampMs: now, expireTimestampMs: -1 },
    });

    function service(
      readBatches: CoordinatorTopicAccess['readBatches'],
      awaitCommitted: CoordinatorTopicAccess['awaitCommitted'] = async () => true,
    ) {
      const clock = new ManualClock(now);
      const failures: { what: string; err: unknown }[] = [];
      const access: CoordinatorTopicAccess = {
        partitionLeader: () => null,
        createTopic: async () => 0,
        partitionExists: () => true,
        leaderEpoch: () => leadership.epoch,
        append: async () => 0,
        readBatches,
        awaitCommitted,
      };
      const leadership = { epoch: -1 };
      const svc = new GroupCoordinatorService({
        nodeId: 1,
        config,
        clock,
        access,
        onError: (err, what) => {
          failures.push({ what, err });
        },
        loadRetryBackoffMs: { initialMs: 100, maxMs: 1000 },
      });
      return { svc, clock, failures, leadership };
    }

    async function* batchesOf(...batches: Buffer[]) {
      for (const b of batches) yield new RecordBatch(b);
    }

    /** A read of the partition that fails before its first batch. */
    function failingRead(): AsyncIterable<RecordBatch> {
      return {
        [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('storage unavailable')) }),
      };
    }

    it('skips records it cannot decode, logs their offset, counts them, and loads the rest', async () => {
      const good1 = encodeCoordinatorRecord(offsetRecord('g1', 5n));
      const good2 = encodeCoordinatorRecord(offsetRecord('g2', 9n));
      const bad = { key: good1.key, value: Buffer.from([0, 1, 0xff]) };
      const batch = await buildRecordBatch(
        { baseOffset: 10 },
        [good1, bad, good2].map((r) => ({ ...r, timestamp: now })),
      );
      const { svc, failures } = service(() => batchesOf(batch));
      svc.onOffsetsPartitionLeadership(0, true);
      await svc.whenLoaded();
      const status = svc.partitionLoadStatus(0)!;
      assert.equal(status.state, 'loaded');
      assert.equal(status.skippedRecords, 1);
      assert.ok(
        failures.some((f) => /offset 11 of __consumer_offsets-0 \(skipped\)/.test(f.what)),
        JSON.stringify(failures.map((f) => f.what)),
      );
      const fetched = svc.coordinator.fetchOffsets('g2', [{ topic: 't', partition: 0 }]);
      assert.equal(fetched.errorCode, 0);
      assert.equal(fetched.offsets[0]!.offset, 9n);
      assert.equal(svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 5n);
    });

    it('loads every decodable record whatever garbage surrounds it (property)', async () => {
      const garbage = fc.record({
        key: fc.uint8Array({ minLength: 0, maxLength: 24 }).map((a) => Buffer.from(a)),
        value: fc.option(
          fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a)),
          { nil: null },
        ),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(fc.oneof(garbage, fc.constant(null)), { maxLength: 12 }), async (slots) => {
          let expectedSkipped = 0;
          const inputs = slots.map((slot, i) => {
            if (slot === null) return { ...encodeCoordinatorRecord(offsetRecord(`good-${i}`, BigInt(i))), timestamp: now };
            try {
              decodeCoordinatorRecord(slot.key, slot.value);
            } catch {
              expectedSkipped++;
            }
            return { ...slot, timestamp: now };
          });
          const batches = inputs.length > 0 ? [await buildRecordBatch({}, inputs)] : [];
          const { svc } = service(() => batchesOf(...batches));
          svc.onOffsetsPartitionLeadership(0, true);
          await svc.whenLoaded();
          const status = svc.partitionLoadStatus(0)!;
          assert.equal(status.state, 'loaded');
          assert.equal(status.skippedRecords, expectedSkipped);
          slots.forEach((slot, i) => {
            if (slot !== null) return;
            assert.equal(svc.coordinator.fetchOffsets(`good-${i}`, [{ topic: 't', partition: 0 }]).offsets[0]!.offset, BigInt(i));
          });
        }),
        { numRuns: 100 },
      );
    });

    it('reports a failed read, answers COORDINATOR_LOAD_IN_PROGRESS meanwhile, and retries with a backoff until it loads', async () => {
      let reads = 0;
      const good = encodeCoordinatorRecord(offsetRecord('g1', 3n));
      const batch = await buildRecordBatch({}, [{ ...good, timestamp: now }]);
      const { svc, clock, failures } = service(() => {
        reads++;
        if (reads <= 2) return failingRead();
        return batchesOf(batch);
      });
      svc.onOffsetsPartitionLeadership(0, true);
      await svc.whenLoaded();
      let status = svc.partitionLoadStatus(0)!;
      assert.equal(status.state, 'failed');
      assert.match(status.reason!, /storage unavailable/);
      assert.equal(status.nextAttemptAtMs, now + 100);
      assert.ok(failures.some((f) => f.what === 'loading __consumer_offsets-0'));
      assert.equal(svc.coordinator.describeGroup('g1').errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
      assert.equal(svc.coordinator.fetchOffsets('g1', null).errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);

      clock.advance(100);
      await svc.whenLoaded();
      status = svc.partitionLoadStatus(0)!;
      assert.equal(status.state, 'failed');
      assert.equal(status.attempts, 2);
      assert.equal(status.nextAttemptAtMs, now + 100 + 200);

      clock.advance(200);
      await svc.whenLoaded();
      status = svc.partitionLoadStatus(0)!;
      assert.equal(status.state, 'loaded');
      assert.equal(status.reason, null);
      assert.equal(status.attempts, 3);
      assert.equal(svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 3n);
      assert.deepEqual(
        svc.partitionLoadStatuses().map((s) => s.state),
        ['loaded'],
      );
    });

    it('loads at most offsets.load.max.partitions partitions at once, each as soon as a slot frees', async () => {
      const gates = new Map<number, () => void>();
      let reading = 0;
      let mostAtOnce = 0;
      const started: number[] = [];
      const clock = new ManualClock(now);
      const batch = await buildRecordBatch({}, [{ ...encodeCoordinatorRecord(offsetRecord('g', 1n)), timestamp: now }]);
      const svc = new GroupCoordinatorService({
        nodeId: 1,
        config: { ...config, offsetsTopicPartitions: 4 },
        clock,
        access: {
          partitionLeader: () => null,
          createTopic: async () => 0,
          partitionExists: () => true,
          leaderEpoch: () => -1,
          append: async () => 0,
          awaitCommitted: async () => true,
          async *readBatches(partition) {
            started.push(partition);
            reading++;
            mostAtOnce = Math.max(mostAtOnce, reading);
            await new Promise<void>((resolve) => gates.set(partition, resolve));
            reading--;
            yield new RecordBatch(batch);
          },
        },
        onError: () => {},
        maxConcurrentLoads: 2,
      });
      for (let p = 0; p < 4; p++) svc.onOffsetsPartitionLeadership(p, true);
      const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
      await settle();
      assert.deepEqual(started, [0, 1]);
      gates.get(1)?.();
      await settle();
      assert.deepEqual(started, [0, 1, 2], 'the slot partition 1 freed goes to the next in line');
      gates.get(0)?.();
      await settle();
      gates.get(2)?.();
      await settle();
      gates.get(3)?.();
      await svc.whenLoaded();
      assert.equal(mostAtOnce, 2);
      assert.deepEqual(
        svc.partitionLoadStatuses().map((st) => st.state),
        ['loaded', 'loaded', 'loaded', 'loaded'],
      );
    });

    it('replays a partition batch by batch while reading it, not the whole log at the end', async () => {
      const first = await buildRecordBatch({ baseOffset: 0 }, [{ ...encodeCoordinatorRecord(offsetRecord('g1', 1n)), timestamp: now }]);
      const second = await buildRecordBatch({ baseOffset: 1 }, [{ ...encodeCoordinatorRecord(offsetRecord('g1', 2n)), timestamp: now }]);
      const replayedBeforeSecondRead: number[] = [];
      const replayed: number[] = [];
      const { svc } = service(async function* () {
        yield new RecordBatch(first);
        replayedBeforeSecondRead.push(replayed.length);
        yield new RecordBatch(second);
      });
      const replay = svc.coordinator.replayLoading.bind(svc.coordinator);
      svc.coordinator.replayLoading = (partition, records, onSkipped) => {
        const list = [...records];
        replayed.push(list.length);
        return replay(partition, list, onSkipped);
      };
      svc.onOffsetsPartitionLeadership(0, true);
      await svc.whenLoaded();
      assert.deepEqual(replayedBeforeSecondRead, [1], 'the first batch was applied before the second was read');
      assert.deepEqual(
        replayed.filter((n) => n > 0),
        [1, 1],
      );
      assert.equal(svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 2n);
    });

    it('serves what it loaded only once it is committed: a tail past the high watermark is not answered before', async () => {
      const committed = await buildRecordBatch({ baseOffset: 0 }, [
        { ...encodeCoordinatorRecord(offsetRecord('g1', 84n)), timestamp: now },
      ]);
      const tail = await buildRecordBatch({ baseOffset: 1 }, [{ ...encodeCoordinatorRecord(offsetRecord('g1', 122n)), timestamp: now }]);
      const waits: { offset: number; answer: (committed: boolean) => void }[] = [];
      const { svc, leadership } = service(
        () => batchesOf(committed, tail),
        (_partition, offset) => new Promise<boolean>((answer) => waits.push({ offset, answer })),
      );
      leadership.epoch = 3;
      svc.onOffsetsPartitionLeadership(0, true, 3);
      await flush();
      await flush();
      assert.deepEqual(
        waits.map((w) => w.offset),
        [2],
        'it waits for the log end it read',
      );
      assert.equal(svc.coordinator.fetchOffsets('g1', null).errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
      assert.equal(svc.partitionLoadStatus(0)!.state, 'loading');
      waits.shift()!.answer(false);
      await flush();
      assert.equal(waits.length, 1, 'not committed in time: it waits again');
      assert.equal(svc.coordinator.fetchOffsets('g1', null).errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
      waits.shift()!.answer(true);
      await svc.whenLoaded();
      assert.equal(svc.partitionLoadStatus(0)!.state, 'loaded');
      assert.equal(svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 122n);
    });

    it('loads again when it leads in a newer leader epoch: another broker may have taken commits in between', async () => {
      let latest = 5n;
      const { svc, leadership } = service(async function* () {
        yield new RecordBatch(await buildRecordBatch({}, [{ ...encodeCoordinatorRecord(offsetRecord('g1', latest)), timestamp: now }]));
      });
      leadership.epoch = 3;
      svc.onOffsetsPartitionLeadership(0, true, 3);
      await svc.whenLoaded();
      assert.equal(svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 5n);
      latest = 9n;
      svc.onOffsetsPartitionLeadership(0, true, 3);
      await svc.whenLoaded();
      assert.equal(
        svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset,
        5n,
        'the same epoch: nothing to load',
      );
      leadership.epoch = 5;
      svc.onOffsetsPartitionLeadership(0, true, 5);
      await svc.whenLoaded();
      assert.equal(svc.partitionLoadStatus(0)!.state, 'loaded');
      assert.equal(svc.coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 9n);
    });

    it('a commit whose append completes after the partition was unloaded and loaded again does not overwrite what the load read, and is answered NOT_COORDINATOR', async () => {
      const clock = new ManualClock(now);
      let release: () => void = () => {};
      const log: CoordinatorLog = {
        append: () => new Promise<number>((resolve) => (release = () => resolve(0))),
        holdsLeadership: () => true,
      };
      const coordinator = new GroupCoordinator(config, clock, log, () => {});
      coordinator.beginLoading(0);
      coordinator.completeLoading(0, []);
      const commit = (offset: bigint) =>
        coordinator.commitOffsets('g1', '', null, -1, [
          { topic: 't', partition: 0, offset, leaderEpoch: -1, metadata: null, expireTimestampMs: -1 },
        ]);
      const first = commit(5n);
      await flush();
      // Leadership moved away and back; the new load read a later commit another leader took.
      coordinator.unload(0);
      coordinator.beginLoading(0);
      coordinator.completeLoading(0, [offsetRecord('g1', 9n)]);
      release();
      // Kafka's runtime fails the writes an unload leaves waiting: the state that answers
      // OffsetFetch may not hold this one, so it is not acknowledged, and the client commits again.
      assert.deepEqual(await first, [Errors.NOT_COORDINATOR.code]);
      assert.equal(coordinator.fetchOffsets('g1', [{ topic: 't', partition: 0 }]).offsets[0]!.offset, 9n);
    });

    it('stops retrying a partition it no longer leads', async () => {
      const { svc, clock } = service(failingRead);
      svc.onOffsetsPartitionLeadership(0, true);
      await svc.whenLoaded();
      assert.equal(svc.partitionLoadStatus(0)!.state, 'failed');
      svc.onOffsetsPartitionLeadership(0, false);
      await svc.whenLoaded();
      assert.equal(svc.partitionLoadStatus(0), undefined);
      assert.equal(clock.pendingTimers, 0);
      assert.equal(svc.coordinator.describeGroup('g1').errorCode, Errors.NOT_COORDINATOR.code);
    });
  });
});
