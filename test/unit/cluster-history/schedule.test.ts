/**
 * The fault suite's nemesis schedule (test/cluster/nemesis.ts): drawn from the seed alone, so a
 * failing run's seed replays its faults, and a short run sees every kind.
 */
import assert from 'node:assert/strict';
import { FAULT_KINDS, planSchedule } from '../../cluster/nemesis.ts';
import { Prng } from '../../cluster/prng.ts';

const options = { kinds: FAULT_KINDS, durationMs: 100_000, sessionTimeoutMs: 3000 };

describe('cluster fault schedule', () => {
  it('is the same for the same seed and differs for another', () => {
    assert.deepEqual(planSchedule(42, options), planSchedule(42, options));
    assert.notDeepEqual(planSchedule(42, options), planSchedule(43, options));
  });

  it('gives every kind once in its first steps, and at least minSteps steps', () => {
    for (const seed of [1, 2, 3, 99]) {
      const steps = planSchedule(seed, { ...options, durationMs: 1000, minSteps: FAULT_KINDS.length });
      assert.ok(steps.length >= FAULT_KINDS.length);
      assert.deepEqual(new Set(steps.slice(0, FAULT_KINDS.length).map((s) => s.primary.kind)), new Set(FAULT_KINDS));
    }
  });

  it('plans about the duration asked for, with pauses longer than the session timeout and some overlapping faults', () => {
    const steps = planSchedule(7, { ...options, durationMs: 600_000 });
    const plannedMs = steps.reduce(
      (t, s) => t + Math.max(s.primary.holdMs, s.secondary ? s.secondary.delayMs + s.secondary.holdMs : 0) + s.gapMs,
      0,
    );
    assert.ok(plannedMs >= 600_000 && plannedMs < 620_000, `planned ${plannedMs} ms`);
    for (const s of steps) if (s.primary.kind === 'pause') assert.ok(s.primary.holdMs > 3000);
    const overlapping = steps.filter((s) => s.secondary !== undefined).length;
    assert.ok(overlapping > steps.length / 10 && overlapping < steps.length / 2, `${overlapping} of ${steps.length} overlap`);
  });

  it('draws reproducible numbers, and independent ones per fork', () => {
    const a = new Prng(5);
    const b = new Prng(5);
    const drawn = Array.from({ length: 5 }, () => a.next());
    assert.deepEqual(
      drawn,
      Array.from({ length: 5 }, () => b.next()),
    );
    for (const x of drawn) assert.ok(x >= 0 && x < 1);
    assert.notEqual(new Prng(5).fork(0).next(), new Prng(5).fork(1).next());
  });
});
