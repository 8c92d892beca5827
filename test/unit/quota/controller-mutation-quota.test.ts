import assert from 'node:assert/strict';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { ControllerMutationQuotaManager, ThrottlingQuotaExceededError } from '../../../src/quota/controller-mutation-quota.ts';
import { quotaSource } from './quota-source.ts';

const WINDOW = { samples: 10, windowMs: 1000 };
const client = { user: 'ANONYMOUS', clientId: 'test-client' };

function managerWithClock(quota: number) {
  const clock = { nowMs: 1_000_000, monotonicMs: () => clock.nowMs };
  const source = quotaSource([{ user: 'ANONYMOUS', 'client-id': 'test-client' }, { controller_mutation_rate: quota }]);
  return { clock, manager: new ControllerMutationQuotaManager(WINDOW, source, clock) };
}

describe('ControllerMutationQuotaManager (KIP-599)', () => {
  it('strict: admits any amount within the quota, then refuses until the bucket refills (Kafka StrictControllerMutationQuotaTest)', () => {
    const { clock, manager } = managerWithClock(10);
    const quota = manager.newQuotaFor(client, true);
    // The bucket holds 10 * 1 s * 10 = 100 tokens.
    quota.record(90);
    assert.equal(quota.throttleTimeMs(), 0);
    quota.record(90);
    assert.equal(quota.throttleTimeMs(), 0, 'admitted while not yet exceeded, down to -80 tokens');
    assert.throws(
      () => quota.record(90),
      (e: unknown) =>
        e instanceof ThrottlingQuotaExceededError &&
        e instanceof KafkaError &&
        e.code === Errors.THROTTLING_QUOTA_EXCEEDED.code &&
        e.message === 'The throttling quota has been exceeded.' &&
        e.throttleTimeMs === 8000,
    );
    assert.equal(quota.throttleTimeMs(), 8000);
    clock.nowMs += 5000;
    assert.equal(quota.throttleTimeMs(), 3000, 'less the time since it was computed');
    clock.nowMs += 10_000;
    assert.equal(quota.throttleTimeMs(), 0);
  });

  it('permissive: records everything and throttles once exceeded (Kafka PermissiveControllerMutationQuotaTest)', () => {
    const { clock, manager } = managerWithClock(10);
    const quota = manager.newQuotaFor(client, false);
    quota.record(90);
    assert.equal(quota.throttleTimeMs(), 0);
    quota.record(90);
    assert.equal(quota.throttleTimeMs(), 8000);
    quota.record(90);
    assert.equal(quota.throttleTimeMs(), 17_000);
    clock.nowMs += 5000;
    assert.equal(quota.throttleTimeMs(), 12_000);
  });

  it('shares the bucket across requests of the same entity (Kafka testControllerMutationQuotaViolation)', () => {
    const { clock, manager } = managerWithClock(10);
    for (let i = 0; i < 10; i++) {
      manager.newQuotaFor(client, true).record(10);
      clock.nowMs += 1000;
    }
    manager.newQuotaFor(client, true).record(110);
    const refused = manager.newQuotaFor(client, true);
    assert.throws(() => refused.record(110), ThrottlingQuotaExceededError);
    assert.equal(refused.throttleTimeMs(), 1000);
    clock.nowMs += 1000;
    const retried = manager.newQuotaFor(client, true);
    retried.record(110);
    assert.equal(retried.throttleTimeMs(), 0);
    assert.equal(manager.sensorCount, 1);
  });

  it('is unbounded while no controller_mutation_rate quota exists', () => {
    const manager = new ControllerMutationQuotaManager(WINDOW, quotaSource([{ user: null }, { producer_byte_rate: 10 }]));
    for (const strict of [true, false]) {
      const quota = manager.newQuotaFor(client, strict);
      quota.record(1e9);
      quota.record(1e9);
      assert.equal(quota.throttleTimeMs(), 0);
    }
    assert.equal(manager.sensorCount, 0);
  });

  it('is unlimited for a client no quota applies to', () => {
    const { manager } = managerWithClock(10);
    const quota = manager.newQuotaFor({ user: 'bob', clientId: 'x' }, true);
    quota.record(1e9);
    quota.record(1e9);
    assert.equal(quota.throttleTimeMs(), 0);
  });

  it('applies a quota update to a request already holding its quota', () => {
    const { clock, manager } = managerWithClock(10);
    const quota = manager.newQuotaFor(client, false);
    quota.record(120);
    assert.equal(quota.throttleTimeMs(), 2000);
    manager.updateQuotas(quotaSource([{ user: 'ANONYMOUS', 'client-id': 'test-client' }, { controller_mutation_rate: 20 }]));
    clock.nowMs += 1000;
    // Refilled at the new 20 per second: -20 + 20 = 0, then 10 spent.
    quota.record(10);
    assert.equal(quota.throttleTimeMs(), 500);
  });
});
