import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import type { ReplicaView } from '../../../scripts/sim/invariants.ts';
import { PowerLossBound } from '../../../scripts/sim/power-bound.ts';

function leader(brokerId: number, leaderEpoch: number, isr: number[], partition = 0): ReplicaView {
  return {
    brokerId,
    incarnation: 0,
    topic: 't',
    partition,
    isLeader: true,
    leaderEpoch,
    highWatermark: 0,
    logStartOffset: 0,
    logEndOffset: 0,
    isr,
  };
}

describe('simulation: the power-loss bound (KIP-966)', () => {
  it('holds back a second broker while the first that lost power is still in the ISR it had before', () => {
    const bound = new PowerLossBound();
    bound.observe([leader(1, 3, [1, 2, 3])]);
    bound.shutDownUncleanly(2, true);
    assert.equal(bound.allows(2, true), true);
    assert.equal(bound.allows(3, true), false);
    assert.equal(bound.allows(3, false), false, 'a kill of another broker is a second unclean shutdown');
    // The leader has not heard of the failure yet: broker 2 is still in its ISR, without its records.
    bound.observe([leader(1, 3, [1, 2, 3])]);
    assert.deepEqual(bound.uncleanBrokers, [2]);
  });

  it('lets another broker lose power once the first has left and rejoined the ISR of every partition', () => {
    const bound = new PowerLossBound();
    bound.observe([leader(1, 3, [1, 2, 3], 0), leader(3, 5, [1, 2, 3], 1)]);
    bound.shutDownUncleanly(2, true);
    bound.observe([leader(1, 3, [1, 3], 0), leader(3, 6, [1, 3], 1)]);
    bound.observe([leader(1, 3, [1, 2, 3], 0)]);
    assert.equal(bound.allows(3, true), false, 'partition 1 has not taken broker 2 back yet');
    bound.observe([leader(3, 6, [1, 2, 3], 1)]);
    assert.equal(bound.allows(3, true), true);
    assert.deepEqual(bound.uncleanBrokers, []);
  });

  it('does not believe the ISR of a leader from an older epoch than one already seen', () => {
    const bound = new PowerLossBound();
    bound.observe([leader(1, 3, [1, 2, 3])]);
    bound.shutDownUncleanly(2, true);
    bound.observe([leader(1, 4, [1, 3])]);
    // A restarted broker replaying old metadata believes it leads epoch 3, with broker 2 in the ISR.
    bound.observe([leader(3, 3, [1, 2, 3])]);
    assert.deepEqual(bound.uncleanBrokers, [2]);
    bound.observe([leader(1, 4, [1, 2, 3])]);
    assert.deepEqual(bound.uncleanBrokers, []);
  });

  it('takes a partition first seen after the failure as rejoined once its ISR holds the broker', () => {
    const bound = new PowerLossBound();
    bound.observe([leader(1, 3, [1, 2, 3], 0)]);
    bound.shutDownUncleanly(2, true);
    bound.observe([leader(1, 4, [1, 3], 0), leader(1, 0, [1, 2, 3], 1)]);
    assert.deepEqual(bound.uncleanBrokers, [2]);
    bound.observe([leader(1, 4, [1, 2, 3], 0)]);
    assert.deepEqual(bound.uncleanBrokers, []);
  });

  it('lets brokers be killed while others back from a kill rejoin, but powers none off meanwhile', () => {
    const bound = new PowerLossBound();
    bound.observe([leader(1, 3, [1, 2, 3])]);
    bound.shutDownUncleanly(2, false);
    assert.equal(bound.allows(3, false), true);
    assert.equal(bound.allows(3, true), false);
    assert.equal(bound.allows(2, true), true);
  });
});
