import assert from 'node:assert/strict';
import { Errors, KafkaError, errorByCode } from '../../../protocol/errors.ts';
import { DEFAULT_GROUP_COORDINATOR_CONFIG } from '../../../src/coordinator/config.ts';
import { GroupCoordinator } from '../../../src/coordinator/group-coordinator.ts';
import type { CoordinatorLog, JoinGroupParams } from '../../../src/coordinator/group-coordinator.ts';
import type { TransactionalProducer } from '../../../src/coordinator/runtime.ts';
import { GroupState } from '../../../src/coordinator/group.ts';
import type { JoinResult } from '../../../src/coordinator/group.ts';
import type { CoordinatorRecord } from '../../../src/coordinator/records.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { coordinatorPartitionFor, javaStringHashCode } from '../../../src/coordinator/partitioning.ts';

class MemoryLog implements CoordinatorLog {
  verifyTransaction?: CoordinatorLog['verifyTransaction'];
  readonly records: { partition: number; record: CoordinatorRecord; producer?: TransactionalProducer }[] = [];
  failWith: number | null = null;
  /** The log offset of a record is its index in `records`. */
  async append(partition: number, records: CoordinatorRecord[], producer?: TransactionalProducer): Promise<number> {
    if (this.failWith !== null) throw new KafkaError(errorByCode(this.failWith), 'append failed');
    const baseOffset = this.records.length;
    for (const record of records) this.records.push({ partition, record, producer });
    return baseOffset;
  }
  holdsLeadership(): boolean {
    return true;
  }
  forPartition(partition: number): CoordinatorRecord[] {
    return this.records.filter((r) => r.partition === partition).map((r) => r.record);
  }
}

const GROUP = 'orders';
const SESSION_MS = 10_000;
const REBALANCE_MS = 30_000;

function setup(overrides: Partial<typeof DEFAULT_GROUP_COORDINATOR_CONFIG> = {}) {
  const clock = new ManualClock();
  const log = new MemoryLog();
  const config = { ...DEFAULT_GROUP_COORDINATOR_CONFIG, offsetsTopicPartitions: 4, ...overrides };
  const coordinator = new GroupCoordinator(config, clock, log);
  for (let p = 0; p < config.offsetsTopicPartitions; p++) {
    coordinator.beginLoading(p);
    coordinator.completeLoading(p, []);
  }
  return { clock, log, coordinator, config };
}

function joinParams(memberId: string, extra: Partial<JoinGroupParams> = {}): JoinGroupParams {
  return {
    groupId: GROUP,
    memberId,
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('sub') }],
    sessionTimeoutMs: SESSION_MS,
    rebalanceTimeoutMs: REBALANCE_MS,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    requireKnownMemberId: true,
    supportsSkipAssignment: true,
    ...extra,
  };
}

/**
 * Members arriving during group.initial.rebalance.delay.ms extend it by another delay (as
 * Kafka's InitialDelayedJoin does), so a burst of joins settles after two delays.
 */
function settleInitialDelay(ctx: { clock: ManualClock; config: { initialRebalanceDelayMs: number } }): void {
  ctx.clock.advance(2 * ctx.config.initialRebalanceDelayMs);
}

/** Settles promise callbacks queued by the coordinator. */
const flush = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Joins as a new member (MEMBER_ID_REQUIRED first); the join itself stays pending until
 * the rebalance completes, so it is returned wrapped rather than awaited.
 */
async function joinWithMemberId(
  coordinator: GroupCoordinator,
  extra: Partial<JoinGroupParams> = {},
): Promise<{ join: Promise<JoinResult> }> {
  const first = await coordinator.joinGroup(joinParams('', extra));
  assert.equal(first.errorCode, Errors.MEMBER_ID_REQUIRED.code);
  assert.ok(first.memberId.startsWith('client-'));
  return { join: coordinator.joinGroup(joinParams(first.memberId, extra)) };
}

/** Joins `n` members, completes the initial delay and the sync; returns their member ids. */
async function stableGroup(n: number, ctx = setup()) {
  const joins: Promise<JoinResult>[] = [];
  for (let i = 0; i < n; i++) joins.push((await joinWithMemberId(ctx.coordinator)).join);
  settleInitialDelay(ctx);
  const results = await Promise.all(joins);
  const leader = results.find((r) => r.leaderId === r.memberId)!;
  const syncs = results.map((r) =>
    ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: r.generationId,
      memberId: r.memberId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments:
        r.memberId === leader.memberId ? results.map((m) => ({ memberId: m.memberId, assignment: Buffer.from(`a-${m.memberId}`) })) : [],
    }),
  );
  const synced = await Promise.all(syncs);
  return { ...ctx, results, synced, leader };
}

describe('group coordinator (classic protocol)', () => {
  it('maps a group to its offsets partition with Java String.hashCode', () => {
    assert.equal(javaStringHashCode('orders'), -1008770331);
    assert.equal(coordinatorPartitionFor('orders', 50), 31);
    assert.equal(coordinatorPartitionFor('', 50), 0);
  });

  it('asks an unknown member to rejoin with a generated member id (MEMBER_ID_REQUIRED, v4+)', async () => {
    const { coordinator } = setup();
    const result = await coordinator.joinGroup(joinParams(''));
    assert.equal(result.errorCode, Errors.MEMBER_ID_REQUIRED.code);
    assert.equal(coordinator.group(GROUP)!.size, 0);
  });

  it('holds the first rebalance while members keep arriving within the initial delay, then forms one generation', async () => {
    const { coordinator, clock, config } = setup();
    const joins = [(await joinWithMemberId(coordinator)).join, (await joinWithMemberId(coordinator)).join];
    let settled = false;
    void Promise.all(joins).then(() => {
      settled = true;
    });
    clock.advance(config.initialRebalanceDelayMs - 1);
    joins.push((await joinWithMemberId(coordinator)).join);
    clock.advance(1);
    await flush();
    assert.equal(settled, false, 'an arrival during the delay extends it');
    clock.advance(config.initialRebalanceDelayMs - 1);
    await flush();
    assert.equal(settled, false);
    clock.advance(1);
    const results = await Promise.all(joins);
    assert.ok(results.every((r) => r.errorCode === 0 && r.generationId === 1 && r.protocolName === 'range'));
    const leaders = results.filter((r) => r.leaderId === r.memberId);
    assert.equal(leaders.length, 1);
    assert.equal(leaders[0]!.members.length, 3);
    assert.ok(results.filter((r) => r !== leaders[0]).every((r) => r.members.length === 0));
    assert.equal(coordinator.group(GROUP)!.state, GroupState.CompletingRebalance);
  });

  it('gives every member the assignment the leader sent, empty for members it left out', async () => {
    const ctx = setup();
    const joins = [(await joinWithMemberId(ctx.coordinator)).join, (await joinWithMemberId(ctx.coordinator)).join];
    settleInitialDelay(ctx);
    const [a, b] = await Promise.all(joins);
    const leader = a!.leaderId === a!.memberId ? a! : b!;
    const follower = leader === a ? b! : a!;
    const followerSync = ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: 1,
      memberId: follower.memberId,
      groupInstanceId: null,
      protocolType: null,
      protocolName: null,
      assignments: [],
    });
    const leaderSync = await ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: 1,
      memberId: leader.memberId,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [{ memberId: leader.memberId, assignment: Buffer.from('p0') }],
    });
    assert.equal(leaderSync.errorCode, 0);
    assert.equal(leaderSync.assignment.toString(), 'p0');
    const f = await followerSync;
    assert.equal(f.errorCode, 0);
    assert.equal(f.assignment.length, 0);
    assert.equal(ctx.coordinator.group(GROUP)!.state, GroupState.Stable);
    const stored = ctx.log.forPartition(ctx.coordinator.partitionFor(GROUP)).filter((r) => r.type === 'group');
    assert.equal(stored.length, 1);
  });

  it('rebalances when a member joins a stable group; heartbeats then see REBALANCE_IN_PROGRESS', async () => {
    const { coordinator, results } = await stableGroup(2);
    const newcomer = (await joinWithMemberId(coordinator)).join;
    assert.equal(coordinator.group(GROUP)!.state, GroupState.PreparingRebalance);
    const hb = coordinator.heartbeat(GROUP, results[0]!.memberId, null, 1);
    assert.equal(hb, Errors.REBALANCE_IN_PROGRESS.code);
    const rejoins = results.map((r) => coordinator.joinGroup(joinParams(r.memberId)));
    const all = await Promise.all([newcomer, ...rejoins]);
    assert.ok(all.every((r) => r.errorCode === 0 && r.generationId === 2));
    assert.equal(coordinator.group(GROUP)!.size, 3);
  });

  it('removes a member whose session expires and rebalances the rest', async () => {
    const { coordinator, clock, results } = await stableGroup(2);
    const [alive, dead] = results as [JoinResult, JoinResult];
    for (let t = 0; t < SESSION_MS; t += 3000) {
      clock.advance(3000);
      coordinator.heartbeat(GROUP, alive.memberId, null, alive.generationId);
    }
    assert.equal(coordinator.group(GROUP)!.has(dead.memberId), false);
    assert.equal(coordinator.group(GROUP)!.state, GroupState.PreparingRebalance);
    const rejoin = await coordinator.joinGroup(joinParams(alive.memberId));
    assert.equal(rejoin.generationId, 2);
    assert.equal(rejoin.leaderId, alive.memberId);
    assert.equal(coordinator.heartbeat(GROUP, dead.memberId, null, 1), Errors.UNKNOWN_MEMBER_ID.code);
  });

  it('rebalances without a member that leaves (LeaveGroup)', async () => {
    const { coordinator, results } = await stableGroup(3);
    const left = coordinator.leaveGroup(GROUP, [{ memberId: results[1]!.memberId, groupInstanceId: null }]);
    assert.deepEqual(
      left.members.map((m) => m.errorCode),
      [0],
    );
    assert.equal(coordinator.group(GROUP)!.state, GroupState.PreparingRebalance);
    const rejoined = await Promise.all([results[0]!, results[2]!].map((r) => coordinator.joinGroup(joinParams(r.memberId))));
    assert.ok(rejoined.every((r) => r.generationId === 2));
    assert.equal(
      coordinator.leaveGroup(GROUP, [{ memberId: 'nobody', groupInstanceId: null }]).members[0]!.errorCode,
      Errors.UNKNOWN_MEMBER_ID.code,
    );
  });

  it('refuses a commit from a stale generation and one during CompletingRebalance', async () => {
    const { coordinator, results } = await stableGroup(1);
    const member = results[0]!;
    const entry = { topic: 't', partition: 0, offset: 5n, leaderEpoch: -1, metadata: 'm', expireTimestampMs: -1 };
    assert.deepEqual(await coordinator.commitOffsets(GROUP, member.memberId, null, 0, [entry]), [Errors.ILLEGAL_GENERATION.code]);
    assert.deepEqual(await coordinator.commitOffsets(GROUP, 'stranger', null, 1, [entry]), [Errors.UNKNOWN_MEMBER_ID.code]);
    assert.deepEqual(await coordinator.commitOffsets(GROUP, member.memberId, null, 1, [entry]), [0]);
    const rejoin = coordinator.joinGroup(joinParams(member.memberId, { protocols: [{ name: 'range', metadata: Buffer.from('changed') }] }));
    const r = await rejoin;
    assert.equal(r.generationId, 2);
    assert.deepEqual(await coordinator.commitOffsets(GROUP, member.memberId, null, 2, [entry]), [Errors.REBALANCE_IN_PROGRESS.code]);
  });

  it('stores offsets with their metadata and serves them back; unknown partitions read -1', async () => {
    const { coordinator } = setup();
    const codes = await coordinator.commitOffsets('simple', '', null, -1, [
      { topic: 't', partition: 0, offset: 42n, leaderEpoch: 3, metadata: 'where I was', expireTimestampMs: -1 },
    ]);
    assert.deepEqual(codes, [0]);
    const fetched = coordinator.fetchOffsets('simple', [
      { topic: 't', partition: 0 },
      { topic: 't', partition: 1 },
    ]);
    assert.deepEqual(
      fetched.offsets.map((o) => [o.offset, o.leaderEpoch, o.metadata]),
      [
        [42n, 3, 'where I was'],
        [-1n, -1, ''],
      ],
    );
    assert.equal(coordinator.fetchOffsets('simple', null).offsets.length, 1);
    assert.deepEqual(
      await coordinator.commitOffsets('nobody', 'm', null, 3, [
        { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: '', expireTimestampMs: -1 },
      ]),
      [Errors.ILLEGAL_GENERATION.code],
    );
  });

  it('refuses metadata larger than offset.metadata.max.bytes', async () => {
    const { coordinator } = setup({ offsetMetadataMaxBytes: 4 });
    const codes = await coordinator.commitOffsets('simple', '', null, -1, [
      { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: 'too long', expireTimestampMs: -1 },
    ]);
    assert.deepEqual(codes, [Errors.OFFSET_METADATA_TOO_LARGE.code]);
  });

  it('lets a restarted static member take its place without a rebalance and fences the old id', async () => {
    const ctx = setup();
    const join = ctx.coordinator.joinGroup(joinParams('', { groupInstanceId: 'instance-1' }));
    ctx.clock.advance(ctx.config.initialRebalanceDelayMs);
    const first = await join;
    assert.equal(first.errorCode, 0);
    await ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: first.generationId,
      memberId: first.memberId,
      groupInstanceId: 'instance-1',
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [{ memberId: first.memberId, assignment: Buffer.from('mine') }],
    });
    assert.equal(ctx.coordinator.group(GROUP)!.state, GroupState.Stable);

    const again = await ctx.coordinator.joinGroup(joinParams('', { groupInstanceId: 'instance-1' }));
    assert.equal(again.errorCode, 0);
    assert.notEqual(again.memberId, first.memberId);
    assert.equal(again.generationId, first.generationId);
    assert.equal(again.skipAssignment, true);
    assert.equal(ctx.coordinator.group(GROUP)!.state, GroupState.Stable);
    const sync = await ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: again.generationId,
      memberId: again.memberId,
      groupInstanceId: 'instance-1',
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [],
    });
    assert.equal(sync.assignment.toString(), 'mine');
    assert.equal(ctx.coordinator.heartbeat(GROUP, first.memberId, 'instance-1', first.generationId), Errors.FENCED_INSTANCE_ID.code);
  });

  it('keeps a static member through a restart shorter than its session timeout', async () => {
    const ctx = setup();
    const join = ctx.coordinator.joinGroup(joinParams('', { groupInstanceId: 'i-1' }));
    ctx.clock.advance(ctx.config.initialRebalanceDelayMs);
    const first = await join;
    await ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: 1,
      memberId: first.memberId,
      groupInstanceId: 'i-1',
      protocolType: null,
      protocolName: null,
      assignments: [],
    });
    ctx.clock.advance(SESSION_MS - 1000);
    const back = await ctx.coordinator.joinGroup(joinParams('', { groupInstanceId: 'i-1' }));
    ctx.clock.advance(SESSION_MS - 1000);
    assert.equal(ctx.coordinator.heartbeat(GROUP, back.memberId, 'i-1', 1), 0);
    assert.equal(ctx.coordinator.group(GROUP)!.generationId, 1);
  });

  it('selects the protocol every member supports by vote, and refuses an inconsistent one', async () => {
    const { coordinator, clock, config } = setup();
    const { join: a } = await joinWithMemberId(coordinator, {
      protocols: [
        { name: 'cooperative-sticky', metadata: Buffer.alloc(1) },
        { name: 'range', metadata: Buffer.alloc(1) },
      ],
    });
    const { join: b } = await joinWithMemberId(coordinator, {
      protocols: [
        { name: 'range', metadata: Buffer.alloc(1) },
        { name: 'cooperative-sticky', metadata: Buffer.alloc(1) },
      ],
    });
    const { join: c } = await joinWithMemberId(coordinator, {
      protocols: [
        { name: 'cooperative-sticky', metadata: Buffer.alloc(1) },
        { name: 'range', metadata: Buffer.alloc(1) },
      ],
    });
    const bad = await coordinator.joinGroup(joinParams('', { protocols: [{ name: 'roundrobin', metadata: Buffer.alloc(1) }] }));
    assert.equal(bad.errorCode, Errors.INCONSISTENT_GROUP_PROTOCOL.code);
    settleInitialDelay({ clock, config });
    const results = await Promise.all([a, b, c]);
    assert.ok(results.every((r) => r.protocolName === 'cooperative-sticky'));
  });

  it('rejects session timeouts outside the broker bounds', async () => {
    const { coordinator } = setup();
    const r = await coordinator.joinGroup(joinParams('', { sessionTimeoutMs: 100 }));
    assert.equal(r.errorCode, Errors.INVALID_SESSION_TIMEOUT.code);
  });

  it('removes members that do not sync within the rebalance timeout', async () => {
    const ctx = setup();
    const joins = [(await joinWithMemberId(ctx.coordinator)).join, (await joinWithMemberId(ctx.coordinator)).join];
    settleInitialDelay(ctx);
    const [a, b] = await Promise.all(joins);
    const leader = a!.leaderId === a!.memberId ? a! : b!;
    const other = leader === a ? b! : a!;
    await ctx.coordinator.syncGroup({
      groupId: GROUP,
      generationId: 1,
      memberId: leader.memberId,
      groupInstanceId: null,
      protocolType: null,
      protocolName: null,
      assignments: [],
    });
    for (let t = 0; t < REBALANCE_MS; t += 5000) {
      ctx.clock.advance(5000);
      ctx.coordinator.heartbeat(GROUP, leader.memberId, null, 1);
      ctx.coordinator.heartbeat(GROUP, other.memberId, null, 1);
    }
    assert.equal(ctx.coordinator.group(GROUP)!.has(other.memberId), false);
  });

  it('answers NOT_COORDINATOR for unowned partitions and COORDINATOR_LOAD_IN_PROGRESS while loading', async () => {
    const clock = new ManualClock();
    const coordinator = new GroupCoordinator({ ...DEFAULT_GROUP_COORDINATOR_CONFIG, offsetsTopicPartitions: 4 }, clock, new MemoryLog());
    assert.equal((await coordinator.joinGroup(joinParams(''))).errorCode, Errors.NOT_COORDINATOR.code);
    coordinator.beginLoading(coordinator.partitionFor(GROUP));
    assert.equal(coordinator.heartbeat(GROUP, 'm', null, 1), Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
    assert.equal(coordinator.fetchOffsets(GROUP, null).errorCode, Errors.COORDINATOR_LOAD_IN_PROGRESS.code);
  });

  it('restores groups and offsets from its records after a restart', async () => {
    const ctx = await stableGroup(2);
    const member = ctx.results[0]!;
    await ctx.coordinator.commitOffsets(GROUP, member.memberId, null, 1, [
      { topic: 't', partition: 3, offset: 77n, leaderEpoch: 0, metadata: 'x', expireTimestampMs: -1 },
    ]);
    const partition = ctx.coordinator.partitionFor(GROUP);
    const restarted = new GroupCoordinator(ctx.config, ctx.clock, new MemoryLog());
    restarted.beginLoading(partition);
    restarted.completeLoading(partition, ctx.log.forPartition(partition));
    const group = restarted.group(GROUP)!;
    assert.equal(group.state, GroupState.Stable);
    assert.equal(group.generationId, 1);
    assert.equal(group.size, 2);
    assert.equal(restarted.heartbeat(GROUP, member.memberId, null, 1), 0);
    assert.equal(restarted.fetchOffsets(GROUP, [{ topic: 't', partition: 3 }]).offsets[0]!.offset, 77n);
    const synced = ctx.synced.find((_, i) => ctx.results[i]!.memberId === member.memberId)!;
    const again = await restarted.syncGroup({
      groupId: GROUP,
      generationId: 1,
      memberId: member.memberId,
      groupInstanceId: null,
      protocolType: null,
      protocolName: null,
      assignments: [],
    });
    assert.deepEqual(again.assignment, synced.assignment);
  });

  it('deletes only empty groups, writing tombstones', async () => {
    const ctx = await stableGroup(1);
    await ctx.coordinator.commitOffsets(GROUP, ctx.results[0]!.memberId, null, 1, [
      { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: '', expireTimestampMs: -1 },
    ]);
    assert.deepEqual(await ctx.coordinator.deleteGroups([GROUP, 'missing']), [
      { groupId: GROUP, errorCode: Errors.NON_EMPTY_GROUP.code },
      { groupId: 'missing', errorCode: Errors.GROUP_ID_NOT_FOUND.code },
    ]);
    ctx.coordinator.leaveGroup(GROUP, [{ memberId: ctx.results[0]!.memberId, groupInstanceId: null }]);
    assert.equal(ctx.coordinator.group(GROUP)!.state, GroupState.Empty);
    assert.deepEqual(await ctx.coordinator.deleteGroups([GROUP]), [{ groupId: GROUP, errorCode: 0 }]);
    const tail = ctx.log.forPartition(ctx.coordinator.partitionFor(GROUP)).slice(-2);
    assert.deepEqual(
      tail.map((r) => [r.type, r.value]),
      [
        ['offset', null],
        ['group', null],
      ],
    );
    assert.equal(ctx.coordinator.group(GROUP), undefined);
  });

  it('expires the offsets of a group empty for longer than offsets.retention.minutes', async () => {
    const ctx = await stableGroup(1);
    await ctx.coordinator.commitOffsets(GROUP, ctx.results[0]!.memberId, null, 1, [
      { topic: 't', partition: 0, offset: 9n, leaderEpoch: -1, metadata: '', expireTimestampMs: -1 },
    ]);
    ctx.coordinator.leaveGroup(GROUP, [{ memberId: ctx.results[0]!.memberId, groupInstanceId: null }]);
    ctx.clock.advance(ctx.config.offsetsRetentionMs - 1);
    await ctx.coordinator.expireOffsets();
    assert.equal(ctx.coordinator.fetchOffsets(GROUP, null).offsets.length, 1);
    ctx.clock.advance(2);
    await ctx.coordinator.expireOffsets();
    assert.equal(ctx.coordinator.fetchOffsets(GROUP, null).offsets.length, 0);
    assert.equal(ctx.coordinator.group(GROUP), undefined);
  });

  it('keeps an emptied group a consumer group whose offsets expire a retention period after it emptied, not after the commit', async () => {
    const ctx = await stableGroup(1, setup({ offsetsRetentionMs: 4 * SESSION_MS }));
    const member = ctx.results[0]!;
    await ctx.coordinator.commitOffsets(GROUP, member.memberId, null, 1, [
      { topic: 't', partition: 0, offset: 9n, leaderEpoch: -1, metadata: '', expireTimestampMs: -1 },
    ]);
    // Committed long ago, consumed nothing since (the member heartbeats on): Kafka counts the
    // retention from the moment the group emptied.
    for (let i = 0; i < 20; i++) {
      ctx.clock.advance(SESSION_MS / 2);
      assert.equal(ctx.coordinator.heartbeat(GROUP, member.memberId, null, member.generationId), Errors.NONE.code);
    }
    ctx.coordinator.leaveGroup(GROUP, [{ memberId: ctx.results[0]!.memberId, groupInstanceId: null }]);
    const described = ctx.coordinator.describeGroup(GROUP);
    assert.equal(described.state, 'Empty');
    assert.equal(described.protocolType, 'consumer');
    await ctx.coordinator.expireOffsets();
    assert.equal(ctx.coordinator.fetchOffsets(GROUP, null).offsets.length, 1);
    ctx.clock.advance(ctx.config.offsetsRetentionMs + 1);
    await ctx.coordinator.expireOffsets();
    assert.equal(ctx.coordinator.fetchOffsets(GROUP, null).offsets.length, 0);
  });

  it('describes a stable group with members and assignments, and an unknown group as Dead', async () => {
    const { coordinator, results } = await stableGroup(2);
    const d = coordinator.describeGroup(GROUP);
    assert.equal(d.state, 'Stable');
    assert.equal(d.protocolName, 'range');
    assert.equal(d.members.length, 2);
    assert.ok(d.members.every((m) => m.assignment.toString() === `a-${m.memberId}`));
    assert.ok(results.every((r) => d.members.some((m) => m.memberId === r.memberId)));
    const unknown = coordinator.describeGroup('nope');
    assert.equal(unknown.state, 'Dead');
    assert.equal(unknown.errorCode, 0);
    assert.deepEqual(
      coordinator.listGroups(['stable']).map((g) => g.groupId),
      [GROUP],
    );
    assert.deepEqual(coordinator.listGroups(['empty']), []);
  });

  it('answers a commit that fails to persist with a retriable coordinator error', async () => {
    const { coordinator, log } = setup();
    log.failWith = Errors.NOT_LEADER_OR_FOLLOWER.code;
    const codes = await coordinator.commitOffsets('simple', '', null, -1, [
      { topic: 't', partition: 0, offset: 1n, leaderEpoch: -1, metadata: '', expireTimestampMs: -1 },
    ]);
    assert.deepEqual(codes, [Errors.NOT_COORDINATOR.code]);
    assert.equal(coordinator.fetchOffsets('simple', null).offsets.length, 0);
  });
});

describe('group coordinator: transactional offset commits (KIP-447)', () => {
  const producer = { producerId: 7n, producerEpoch: 2 };
  const transaction = { ...producer, transactionalId: 'tx', requestVersion: 3 };
  const offset = (value: bigint) => ({ topic: 't', partition: 0, offset: value, leaderEpoch: -1, metadata: '', expireTimestampMs: -1 });
  const fetch = (coordinator: GroupCoordinator, requireStable: boolean) =>
    coordinator.fetchOffsets(GROUP, [{ topic: 't', partition: 0 }], requireStable).offsets[0]!;

  it('holds a transactional commit pending until its marker: UNSTABLE_OFFSET_COMMIT for stable reads, then visible or dropped', async () => {
    const ctx = await stableGroup(1);
    const member = ctx.results[0]!;
    const partition = ctx.coordinator.partitionFor(GROUP);
    const identity = { memberId: member.memberId, groupInstanceId: null, generationId: member.generationId };
    assert.deepEqual(await ctx.coordinator.txnCommitOffsets(GROUP, transaction, identity, [offset(10n)]), [0]);
    const written = ctx.log.records.at(-1)!;
    assert.deepEqual(written.producer, producer, 'the record belongs to the producer transaction');
    assert.equal(fetch(ctx.coordinator, false).offset, -1n);
    assert.equal(fetch(ctx.coordinator, true).errorCode, Errors.UNSTABLE_OFFSET_COMMIT.code);
    ctx.coordinator.completeTransaction((partition + 1) % ctx.config.offsetsTopicPartitions, producer.producerId, true);
    assert.equal(fetch(ctx.coordinator, true).errorCode, Errors.UNSTABLE_OFFSET_COMMIT.code, "another partition's marker");
    ctx.coordinator.completeTransaction(partition, producer.producerId, true);
    assert.deepEqual([fetch(ctx.coordinator, true).errorCode, fetch(ctx.coordinator, true).offset], [0, 10n]);

    await ctx.coordinator.txnCommitOffsets(GROUP, transaction, identity, [offset(20n)]);
    ctx.coordinator.completeTransaction(partition, producer.producerId, false);
    assert.deepEqual([fetch(ctx.coordinator, true).errorCode, fetch(ctx.coordinator, true).offset], [0, 10n], 'aborted');
  });

  it('refuses a zombie (unknown member, stale generation); a producer outside the group commits to an empty one', async () => {
    const ctx = await stableGroup(1);
    const member = ctx.results[0]!;
    const as = (memberId: string, generationId: number, groupInstanceId: string | null = null) => ({
      memberId,
      generationId,
      groupInstanceId,
    });
    assert.deepEqual(await ctx.coordinator.txnCommitOffsets(GROUP, transaction, as('gone', member.generationId), [offset(1n)]), [
      Errors.UNKNOWN_MEMBER_ID.code,
    ]);
    assert.deepEqual(
      await ctx.coordinator.txnCommitOffsets(GROUP, transaction, as(member.memberId, member.generationId - 1), [offset(1n)]),
      [Errors.ILLEGAL_GENERATION.code],
    );
    assert.deepEqual(await ctx.coordinator.txnCommitOffsets('no-such-group', transaction, as('m', 3), [offset(1n)]), [
      Errors.ILLEGAL_GENERATION.code,
    ]);
    assert.deepEqual(await ctx.coordinator.txnCommitOffsets('no-such-group', transaction, as('', -1), [offset(1n)]), [0]);
  });

  it('reads pending offsets and markers back from the log, and applies a marker that reached a loading partition', async () => {
    const ctx = await stableGroup(1);
    const member = ctx.results[0]!;
    const partition = ctx.coordinator.partitionFor(GROUP);
    const identity = { memberId: member.memberId, groupInstanceId: null, generationId: member.generationId };
    await ctx.coordinator.txnCommitOffsets(GROUP, transaction, identity, [offset(30n)]);

    const load = (completeDuringLoad: boolean) => {
      const restarted = new GroupCoordinator(ctx.config, ctx.clock, new MemoryLog());
      restarted.beginLoading(partition);
      ctx.log.records.forEach((r, at) => {
        if (r.partition !== partition) return;
        restarted.replayLoading(partition, [r.record], undefined, {
          offsets: [at],
          transactionalProducerId: r.producer?.producerId ?? null,
        });
      });
      if (completeDuringLoad) restarted.completeTransaction(partition, producer.producerId, true);
      restarted.completeLoading(partition, []);
      return restarted;
    };
    assert.equal(fetch(load(false), true).errorCode, Errors.UNSTABLE_OFFSET_COMMIT.code);
    assert.equal(fetch(load(true), true).offset, 30n);
    const fromMarker = load(false);
    fromMarker.replayEndTransaction(partition, producer.producerId, true);
    assert.equal(fetch(fromMarker, true).offset, 30n);
  });

  it('KIP-890 part 1: refuses offsets of a transaction that does not hold the offsets partition, and appends nothing', async () => {
    const ctx = await stableGroup(1);
    const member = ctx.results[0]!;
    const identity = { memberId: member.memberId, groupInstanceId: null, generationId: member.generationId };
    const asked: unknown[] = [];
    ctx.log.verifyTransaction = async (...args) => {
      asked.push(args);
      return { errorCode: Errors.TRANSACTION_ABORTABLE.code, message: 'not in the transaction', fromCoordinator: true };
    };
    const before = ctx.log.records.length;
    assert.deepEqual(await ctx.coordinator.txnCommitOffsets(GROUP, transaction, identity, [offset(10n)]), [Errors.INVALID_TXN_STATE.code]);
    assert.deepEqual(await ctx.coordinator.txnCommitOffsets(GROUP, { ...transaction, requestVersion: 4 }, identity, [offset(10n)]), [
      Errors.TRANSACTION_ABORTABLE.code,
    ]);
    assert.deepEqual(asked[0], [ctx.coordinator.partitionFor(GROUP), 'tx', producer]);
    assert.equal(ctx.log.records.length, before, 'nothing appended');
    assert.equal(fetch(ctx.coordinator, true).errorCode, 0, 'no pending offsets hold stable reads');
  });
});
