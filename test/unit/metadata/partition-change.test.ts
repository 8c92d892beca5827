import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { PartitionImage } from '../../../src/metadata/image.ts';
import {
  buildPartitionChange,
  LeaderRecoveryState,
  NO_LEADER,
  NO_LEADER_CHANGE,
  type PartitionChangeTarget,
} from '../../../src/metadata/partition-change.ts';
import type { PartitionChangeRecord } from '../../../src/metadata/records.ts';

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

function partition(fields: Partial<PartitionImage> = {}): PartitionImage {
  return {
    partitionId: 0,
    replicas: [1, 2, 3],
    isr: [1, 2, 3],
    removingReplicas: [],
    addingReplicas: [],
    leader: 1,
    leaderEpoch: 5,
    partitionEpoch: 9,
    leaderRecoveryState: LeaderRecoveryState.RECOVERED,
    elr: [],
    lastKnownElr: [],
    ...fields,
  };
}

/** The partition after `record`, as the image applies it (Kafka's PartitionRegistration.merge). */
function apply(p: PartitionImage, record: PartitionChangeRecord | null): PartitionImage {
  if (record === null) return p;
  const leaderChanged = record.leader !== NO_LEADER_CHANGE;
  return {
    ...p,
    replicas: record.replicas ?? p.replicas,
    isr: record.isr ?? p.isr,
    removingReplicas: record.removingReplicas ?? p.removingReplicas,
    addingReplicas: record.addingReplicas ?? p.addingReplicas,
    leader: leaderChanged ? record.leader : p.leader,
    leaderEpoch: leaderChanged ? p.leaderEpoch + 1 : p.leaderEpoch,
    partitionEpoch: p.partitionEpoch + 1,
    leaderRecoveryState: record.leaderRecoveryState === -1 ? p.leaderRecoveryState : record.leaderRecoveryState,
    elr: record.eligibleLeaderReplicas ?? p.elr,
    lastKnownElr: record.lastKnownElr ?? p.lastKnownElr,
  };
}

const alive =
  (...ids: number[]) =>
  (r: number): boolean =>
    ids.includes(r);

function elrChange(p: PartitionImage, target: Omit<PartitionChangeTarget, 'eligibleLeaderReplicasEnabled' | 'minIsr'>, minIsr = 2) {
  return buildPartitionChange(p, TOPIC_ID, { ...target, eligibleLeaderReplicasEnabled: true, minIsr });
}

describe('partition change: eligible leader replicas (KIP-966)', () => {
  it('an ISR shrinking below min ISR keeps the members it loses as the ELR', () => {
    const p = partition({ isr: [1, 2] });
    const record = elrChange(p, { isAcceptableLeader: alive(1, 3), isr: [1] });
    assert.deepEqual(record?.isr, [1]);
    assert.deepEqual(record?.eligibleLeaderReplicas, [2]);
    assert.equal(record?.leader, NO_LEADER_CHANGE);
  });

  it('at or above min ISR there is no ELR', () => {
    const p = partition({ isr: [1], elr: [2] });
    const record = elrChange(p, { isAcceptableLeader: alive(1, 2, 3), isr: [1, 2] });
    assert.deepEqual(record?.isr, [1, 2]);
    assert.deepEqual(record?.eligibleLeaderReplicas, []);
  });

  it('the last ISR member leaves the ISR into the ELR and the partition remembers its last leader', () => {
    const p = partition({ isr: [1], elr: [2] });
    const record = elrChange(p, { isAcceptableLeader: alive(3), isr: [] });
    assert.deepEqual(record?.isr, []);
    assert.equal(record?.leader, NO_LEADER);
    assert.deepEqual([...(record?.eligibleLeaderReplicas ?? [])].sort(), [1, 2]);
    assert.deepEqual(record?.lastKnownElr, [1]);
  });

  it('with an empty ISR a live ELR member is elected cleanly and starts the ISR again', () => {
    const p = partition({ isr: [], elr: [1, 2], leader: NO_LEADER, lastKnownElr: [1] });
    const record = elrChange(p, { isAcceptableLeader: alive(2) });
    assert.equal(record?.leader, 2);
    assert.deepEqual(record?.isr, [2]);
    assert.deepEqual(record?.eligibleLeaderReplicas, [1]);
    assert.equal(record?.leaderRecoveryState, -1, 'a clean election');
    assert.deepEqual(record?.lastKnownElr, [], 'a partition with a leader forgets its last known leader');
  });

  it('a replica outside ISR and ELR is elected only by an unclean election', () => {
    const p = partition({ isr: [], elr: [1], leader: NO_LEADER, lastKnownElr: [1] });
    assert.equal(elrChange(p, { isAcceptableLeader: alive(3) }), null);
    const unclean = elrChange(p, { isAcceptableLeader: alive(3), election: 'UNCLEAN' });
    assert.equal(unclean?.leader, 3);
    assert.deepEqual(unclean?.isr, [3]);
    assert.deepEqual(unclean?.eligibleLeaderReplicas, [], 'an unclean election clears the ELR');
    assert.equal(unclean?.leaderRecoveryState, LeaderRecoveryState.RECOVERING);
  });

  it('with ISR and ELR empty the last known leader is elected, as an unclean election', () => {
    const p = partition({ isr: [], elr: [], leader: NO_LEADER, lastKnownElr: [2] });
    const record = elrChange(p, { isAcceptableLeader: alive(2, 3) });
    assert.equal(record?.leader, 2);
    assert.deepEqual(record?.isr, [2]);
    assert.equal(record?.leaderRecoveryState, LeaderRecoveryState.RECOVERING);
  });

  it('a broker back from an unclean shutdown leaves the ELR', () => {
    const p = partition({ isr: [1], elr: [2, 3] });
    const record = elrChange(p, { isAcceptableLeader: alive(1), uncleanShutdownReplicas: [3], isr: [1] });
    assert.deepEqual(record?.eligibleLeaderReplicas, [2]);
  });

  it('without ELR the last ISR member stays and no ELR is written', () => {
    const p = partition({ isr: [1] });
    const leaderless = buildPartitionChange(p, TOPIC_ID, { isAcceptableLeader: alive(2, 3), isr: [], minIsr: 2 });
    assert.equal(leaderless?.leader, NO_LEADER);
    assert.equal(leaderless?.isr, null, 'the ISR keeps its last member');
    assert.equal(leaderless?.eligibleLeaderReplicas, null);
    const shrink = buildPartitionChange(partition({ isr: [1, 2] }), TOPIC_ID, { isAcceptableLeader: alive(1), isr: [1], minIsr: 2 });
    assert.deepEqual(shrink?.isr, [1]);
    assert.equal(shrink?.eligibleLeaderReplicas, null);
  });

  it('any sequence of fences, unfences, unclean restarts and ISR changes keeps the ELR invariants', () => {
    const replicas = [1, 2, 3, 4];
    const event = fc.oneof(
      fc.record({ kind: fc.constant('fence' as const), broker: fc.constantFrom(...replicas) }),
      fc.record({ kind: fc.constant('unfence' as const), broker: fc.constantFrom(...replicas) }),
      fc.record({ kind: fc.constant('uncleanRestart' as const), broker: fc.constantFrom(...replicas) }),
      fc.record({ kind: fc.constant('alterIsr' as const), followers: fc.subarray(replicas) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(event, { minLength: 1, maxLength: 30 }), (minIsr, events) => {
        let p = partition({ replicas, isr: [...replicas] });
        const live = new Set(replicas);
        for (const e of events) {
          const before = p;
          let target: Omit<PartitionChangeTarget, 'eligibleLeaderReplicasEnabled' | 'minIsr'>;
          if (e.kind === 'fence') {
            // The controller's handleBrokerFenced: out of the ISR, and no longer a leader.
            live.delete(e.broker);
            target = { isAcceptableLeader: (r) => live.has(r), isr: p.isr.filter((r) => r !== e.broker) };
          } else if (e.kind === 'unfence') {
            live.add(e.broker);
            target = { isAcceptableLeader: (r) => live.has(r) };
          } else if (e.kind === 'uncleanRestart') {
            live.delete(e.broker);
            target = {
              isAcceptableLeader: (r) => live.has(r),
              isr: p.isr.filter((r) => r !== e.broker),
              uncleanShutdownReplicas: [e.broker],
            };
          } else {
            // The leader's AlterPartition: itself and live followers.
            if (!live.has(p.leader)) continue;
            const isr = [p.leader, ...e.followers.filter((r) => r !== p.leader && live.has(r))];
            target = { isAcceptableLeader: (r) => live.has(r), isr };
          }
          const record = elrChange(p, target, minIsr);
          p = apply(p, record);
          const where = `after ${JSON.stringify(e)}: ISR ${p.isr}, ELR ${p.elr}, leader ${p.leader}, min ISR ${minIsr}`;
          assert.ok(
            p.elr.every((r) => !p.isr.includes(r)),
            `ELR and ISR are disjoint ${where}`,
          );
          const electedFromElr = record !== null && before.elr.includes(record.leader);
          if (p.isr.length >= minIsr && !electedFromElr) assert.deepEqual(p.elr, [], `no ELR at min ISR ${where}`);
          assert.ok(
            p.elr.every((r) => before.isr.includes(r) || before.elr.includes(r)),
            `the ELR holds only former ISR or ELR members ${where}`,
          );
          if (e.kind === 'uncleanRestart') assert.ok(!p.elr.includes(e.broker), `an uncleanly restarted broker is not eligible ${where}`);
          if (p.leader !== NO_LEADER) assert.ok(p.isr.includes(p.leader), `the leader is in the ISR ${where}`);
          // An unclean election leaves the leader RECOVERING (or finds it so).
          const clean = p.leaderRecoveryState === LeaderRecoveryState.RECOVERED;
          if (record !== null && record.leader >= 0 && record.leader !== before.leader && clean) {
            const candidates = [...before.isr, ...before.elr, ...(target.isr ?? [])];
            assert.ok(candidates.includes(record.leader), `a clean election picks from ISR or ELR ${where}`);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
