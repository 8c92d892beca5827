import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { DEFAULT_GROUP_COORDINATOR_CONFIG } from '../../../src/coordinator/config.ts';
import { GroupCoordinator } from '../../../src/coordinator/group-coordinator.ts';
import type { CoordinatorLog, JoinGroupParams } from '../../../src/coordinator/group-coordinator.ts';
import { GroupState } from '../../../src/coordinator/group.ts';
import type { JoinResult } from '../../../src/coordinator/group.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

// Members that got MEMBER_ID_REQUIRED (KIP-394 pending members) across a completed join:
// Kafka keeps them until they rejoin, leave or their session times out, whatever the
// generation does meanwhile.

const GROUP = 'pending';
const SESSION_MS = 10_000;

const nullLog: CoordinatorLog = { append: async () => 0, holdsLeadership: () => true };

function setup() {
  const clock = new ManualClock();
  const config = { ...DEFAULT_GROUP_COORDINATOR_CONFIG, offsetsTopicPartitions: 1, initialRebalanceDelayMs: 0 };
  const coordinator = new GroupCoordinator(config, clock, nullLog);
  coordinator.beginLoading(0);
  coordinator.completeLoading(0, []);
  return { clock, coordinator };
}

function joinParams(memberId: string): JoinGroupParams {
  return {
    groupId: GROUP,
    memberId,
    groupInstanceId: null,
    protocolType: 'consumer',
    protocols: [{ name: 'range', metadata: Buffer.from('sub') }],
    sessionTimeoutMs: SESSION_MS,
    rebalanceTimeoutMs: 30_000,
    clientId: 'client',
    clientHost: '/127.0.0.1',
    requireKnownMemberId: true,
    supportsSkipAssignment: true,
  };
}

async function memberIdRequired(coordinator: GroupCoordinator): Promise<string> {
  const first = await coordinator.joinGroup(joinParams(''));
  assert.equal(first.errorCode, Errors.MEMBER_ID_REQUIRED.code);
  return first.memberId;
}

describe('group coordinator: pending members (MEMBER_ID_REQUIRED)', () => {
  it('keeps a pending member across a join that completes without it, and lets it join the next generation', async () => {
    const { coordinator, clock } = setup();
    const a = await memberIdRequired(coordinator);
    const joinA = coordinator.joinGroup(joinParams(a));
    const b = await memberIdRequired(coordinator);
    // The initial delay (0 ms) runs out with b still pending: generation 1 holds a alone.
    clock.advance(0);
    const first: JoinResult = await joinA;
    assert.equal(first.errorCode, Errors.NONE.code);
    assert.equal(first.generationId, 1);
    assert.deepEqual(
      first.members.map((m) => m.memberId),
      [a],
    );

    // b rejoins with the id it was given: a new member, so the group rebalances.
    const joinB = coordinator.joinGroup(joinParams(b));
    assert.equal(coordinator.group(GROUP)!.state, GroupState.PreparingRebalance);
    const rejoinA = coordinator.joinGroup(joinParams(a));
    const [second, secondB] = await Promise.all([rejoinA, joinB]);
    assert.equal(secondB.errorCode, Errors.NONE.code, `b's rejoin answered error ${secondB.errorCode}`);
    assert.equal(second.generationId, 2);
    assert.equal(secondB.generationId, 2);
    const leader = [second, secondB].find((r) => r.leaderId === r.memberId)!;
    assert.deepEqual(leader.members.map((m) => m.memberId).sort(), [a, b].sort());
  });

  it('empties the group at once when its last member leaves, a pending member notwithstanding', async () => {
    const { coordinator, clock } = setup();
    const a = await memberIdRequired(coordinator);
    const joinA = coordinator.joinGroup(joinParams(a));
    await memberIdRequired(coordinator);
    clock.advance(0);
    const joined = await joinA;
    const sync = await coordinator.syncGroup({
      groupId: GROUP,
      generationId: joined.generationId,
      memberId: a,
      groupInstanceId: null,
      protocolType: 'consumer',
      protocolName: 'range',
      assignments: [{ memberId: a, assignment: Buffer.from('all') }],
    });
    assert.equal(sync.errorCode, Errors.NONE.code);
    assert.equal(coordinator.leaveGroup(GROUP, [{ memberId: a, groupInstanceId: null }]).members[0]!.errorCode, Errors.NONE.code);
    // With no member left there is no rebalance to wait for (Kafka's rebalance timeout of an
    // empty member list is 0), so the group can be deleted right away.
    assert.equal(coordinator.group(GROUP)!.state, GroupState.Empty);
  });

  it('still forgets a pending member whose session expires without a rejoin', async () => {
    const { coordinator, clock } = setup();
    const a = await memberIdRequired(coordinator);
    clock.advance(SESSION_MS);
    const late = await coordinator.joinGroup(joinParams(a));
    assert.equal(late.errorCode, Errors.UNKNOWN_MEMBER_ID.code);
  });
});
