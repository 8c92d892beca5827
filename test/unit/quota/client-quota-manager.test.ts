import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ClientQuotaEntity } from '../../../src/quota/entity.ts';
import { ClientQuotaManager } from '../../../src/quota/client-quota-manager.ts';
import { type QuotaEntry, quotaSource } from './quota-source.ts';

// Kafka's defaults: quota.window.num=11, quota.window.size.seconds=1.
const WINDOW = { samples: 11, windowMs: 1000 };
const T0 = 1_000_000;

const anonymous = { user: 'ANONYMOUS', clientId: 'unknown' };
const producerQuota = (entity: ClientQuotaEntity, producerByteRate: number): QuotaEntry => [
  entity,
  { producer_byte_rate: producerByteRate },
];

describe('ClientQuotaManager', () => {
  describe('throttle time', () => {
    it('delays an overrun until the rate is back at the quota (Kafka ClientQuotaManagerTest.testQuotaViolation)', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ 'client-id': null }, 500)));
      let t = T0;
      for (let i = 0; i < 10; i++, t += 1000) assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 400, t), 0);
      // 400 * 10 + 2300 = 6300 bytes over 10.5 s = 600 B/s; (600 - 500) / 500 * 10.5 s = 2100 ms.
      t += 500;
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 2300, t), 2100);
      t += 2100;
      for (let i = 0; i < 10; i++, t += 1000) manager.recordAndGetThrottleTimeMs(anonymous, 400, t);
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 0, t), 0, 'the burst has rolled out of the window');
    });

    it('rounds as Java Math.round does', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: null }, 300)));
      // 4001 bytes over 10 s = 400.1 B/s: (400.1 - 300) / 300 * 10000 ms = 3336.67 ms.
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 4001, T0), 3337);
    });

    it('saturates at the largest int32 where Kafka would wrap', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: null }, 1)));
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 1e9, T0), 2 ** 31 - 1);
    });

    it('floors fractional milliseconds as Kafka times are whole', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: null }, 100)));
      manager.recordAndGetThrottleTimeMs(anonymous, 1000, 0.9);
      // Rate at 0 = 2000 / 10 s: (200 - 100) / 100 * 10000.
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 1000, 0.2), 10_000);
    });
  });

  describe('request_percentage (KIP-124)', () => {
    it('converts thread time to a percentage and bounds the throttle by one window (Kafka ClientRequestQuotaManagerTest)', () => {
      const client = { user: 'ANONYMOUS', clientId: 'test-client' };
      const manager = new ClientQuotaManager(
        'request_percentage',
        WINDOW,
        quotaSource([{ user: 'ANONYMOUS', 'client-id': 'test-client' }, { request_percentage: 1 }]),
      );
      let t = T0;
      for (let i = 0; i < 10; i++, t += 1000) assert.equal(manager.recordAndGetThrottleTimeMs(client, 4, t), 0);
      // 1% is 10 ms per second; 4 * 10 + 67.1 = 107.1 ms over 10.5 s = 10.2 ms/s: (10.2 - 10) / 10 * 10.5 s = 210 ms.
      t += 500;
      assert.equal(manager.recordAndGetThrottleTimeMs(client, 67.1, t), 210);
      t += 210;
      for (let i = 0; i < 11; i++, t += 1000) manager.recordAndGetThrottleTimeMs(client, 4, t);
      assert.equal(manager.recordAndGetThrottleTimeMs(client, 0, t), 0);
      // 500 ms would need 40 s to pay back: throttled one window at a time until it rolls out.
      assert.equal(manager.recordAndGetThrottleTimeMs(client, 500, t), 1000);
      for (let i = 0; i < 10; i++) {
        t += 1000;
        assert.equal(manager.recordAndGetThrottleTimeMs(client, 0, t), 1000);
      }
      t += 1000;
      assert.equal(manager.recordAndGetThrottleTimeMs(client, 0, t), 0);
    });

    it('does not bound byte-rate throttles', () => {
      const manager = new ClientQuotaManager('consumer_byte_rate', WINDOW, quotaSource([{ user: null }, { consumer_byte_rate: 100 }]));
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 3000, T0), 20_000);
    });
  });

  describe('resolution: the 8 levels of user/client-id precedence', () => {
    const client = { user: 'alice', clientId: 'app' };
    // In Kafka's order of precedence.
    const levels: ClientQuotaEntity[] = [
      { user: 'alice', 'client-id': 'app' },
      { user: 'alice', 'client-id': null },
      { user: 'alice' },
      { user: null, 'client-id': 'app' },
      { user: null, 'client-id': null },
      { user: null },
      { 'client-id': 'app' },
      { 'client-id': null },
    ];
    // Entities that never apply to alice/app, present to prove they are not picked up.
    const others: ClientQuotaEntity[] = [
      { user: 'bob', 'client-id': 'app' },
      { user: 'bob' },
      { 'client-id': 'other' },
      { user: 'alice', 'client-id': 'other' },
    ];

    it('the most specific configured entity wins (property)', () => {
      fc.assert(
        fc.property(
          fc.uniqueArray(fc.integer({ min: 0, max: levels.length - 1 }), { maxLength: levels.length }),
          fc.subarray(others),
          (configured, distractors) => {
            const entries = [
              ...configured.map((level) => producerQuota(levels[level] as ClientQuotaEntity, 1000 * (level + 1))),
              ...distractors.map((entity) => producerQuota(entity, 7)),
            ];
            const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(...entries));
            const winner = configured.length === 0 ? undefined : Math.min(...configured);
            const expected = winner === undefined ? undefined : 1000 * (winner + 1);
            if (expected === undefined) {
              assert.equal(manager.maxValueInQuotaWindow(client), Number.POSITIVE_INFINITY);
              assert.equal(manager.recordAndGetThrottleTimeMs(client, 1e12, T0), 0);
            } else {
              assert.equal(manager.maxValueInQuotaWindow(client), expected * 10);
              // Twice the quota over the 10 s window: exactly one more window to wait.
              assert.equal(manager.recordAndGetThrottleTimeMs(client, 2 * expected * 10, T0), 10_000);
            }
          },
        ),
      );
    });

    it('refuses an invalid window at construction', () => {
      assert.throws(() => new ClientQuotaManager('producer_byte_rate', { samples: 0, windowMs: 1000 }, quotaSource()), RangeError);
    });

    it('is enabled only while some entity has a quota of its type', () => {
      const source = quotaSource([{ user: 'alice' }, { consumer_byte_rate: 10 }]);
      const producer = new ClientQuotaManager('producer_byte_rate', WINDOW, source);
      assert.equal(producer.enabled, false);
      assert.equal(producer.recordAndGetThrottleTimeMs(client, 1e12, T0), 0);
      assert.equal(producer.sensorCount, 0, 'nothing recorded while disabled');
      assert.equal(producer.maxValueInQuotaWindow(client), Number.POSITIVE_INFINITY);
      assert.equal(new ClientQuotaManager('consumer_byte_rate', WINDOW, source).enabled, true);
    });

    it('looks for <user, client-id> quotas only with a non-empty client id, as Kafka', () => {
      const manager = new ClientQuotaManager(
        'producer_byte_rate',
        WINDOW,
        quotaSource(producerQuota({ user: 'alice', 'client-id': null }, 100), producerQuota({ user: null }, 300)),
      );
      assert.equal(manager.maxValueInQuotaWindow(client), 1000);
      assert.equal(manager.maxValueInQuotaWindow({ user: 'alice', clientId: '' }), 3000);
    });
  });

  describe('sensors shared per resolved entity', () => {
    const overrun = (manager: ClientQuotaManager, clients: { user: string; clientId: string }[]): number[] =>
      clients.map((c) => manager.recordAndGetThrottleTimeMs(c, 1000, T0));

    it('a user quota is shared by all the user’s client ids', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: 'alice' }, 100)));
      // 1000 bytes is exactly 100 B/s over 10 s; the second client pushes the shared rate to 200 B/s.
      assert.deepEqual(
        overrun(manager, [
          { user: 'alice', clientId: 'a' },
          { user: 'alice', clientId: 'b' },
        ]),
        [0, 10_000],
      );
      assert.equal(manager.sensorCount, 1);
    });

    it('a <default> client-id quota under a user is per client id', () => {
      const manager = new ClientQuotaManager(
        'producer_byte_rate',
        WINDOW,
        quotaSource(producerQuota({ user: 'alice', 'client-id': null }, 100)),
      );
      assert.deepEqual(
        overrun(manager, [
          { user: 'alice', clientId: 'a' },
          { user: 'alice', clientId: 'b' },
        ]),
        [0, 0],
      );
      assert.equal(manager.sensorCount, 2);
    });

    it('the <default> user quota is per user', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: null }, 100)));
      const clients = [
        { user: 'alice', clientId: 'a' },
        { user: 'alice', clientId: 'b' },
        { user: 'bob', clientId: 'a' },
      ];
      assert.deepEqual(overrun(manager, clients), [0, 10_000, 0]);
      assert.equal(manager.sensorCount, 2);
    });

    it('a client-id quota is shared across users', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ 'client-id': null }, 100)));
      const clients = [
        { user: 'alice', clientId: 'app' },
        { user: 'bob', clientId: 'app' },
        { user: 'bob', clientId: 'other' },
      ];
      assert.deepEqual(overrun(manager, clients), [0, 10_000, 0]);
      assert.equal(manager.sensorCount, 2);
    });

    it('drops a sensor after an hour without recording', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ 'client-id': null }, 100)));
      for (const clientId of ['a', 'b', 'c']) manager.recordAndGetThrottleTimeMs({ user: 'u', clientId }, 1, T0);
      manager.recordAndGetThrottleTimeMs({ user: 'u', clientId: 'c' }, 1, T0 + 3_600_000);
      assert.equal(manager.sensorCount, 3, 'an hour exactly is not yet inactive');
      manager.recordAndGetThrottleTimeMs({ user: 'u', clientId: 'c' }, 1, T0 + 3_630_000);
      assert.equal(manager.sensorCount, 1);
    });

    it('keeps memory bounded across many short-lived client ids', () => {
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ 'client-id': null }, 100)));
      for (let i = 0; i < 8000; i++) manager.recordAndGetThrottleTimeMs({ user: 'u', clientId: `c${i}` }, 1, T0 + i * 1000);
      assert.ok(manager.sensorCount <= 3_631, `${manager.sensorCount} sensors live`);
    });
  });

  describe('quota updates', () => {
    it('re-bounds a live sensor, keeping its history (Kafka testQuotaParsing)', () => {
      const alice = { user: 'alice', clientId: 'app' };
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: 'alice' }, 2000)));
      assert.ok(manager.recordAndGetThrottleTimeMs(alice, 2500 * 11, T0) > 0);
      manager.updateQuotas(quotaSource(producerQuota({ user: 'alice' }, 3000)));
      assert.equal(manager.recordAndGetThrottleTimeMs(alice, 0, T0), 0);
      manager.updateQuotas(quotaSource(producerQuota({ user: 'alice' }, 500)));
      assert.ok(manager.recordAndGetThrottleTimeMs(alice, 0, T0) > 0);
      manager.updateQuotas(quotaSource(producerQuota({ user: 'bob' }, 500)));
      assert.equal(manager.recordAndGetThrottleTimeMs(alice, 0, T0), 0, 'a removed quota no longer throttles');
    });

    it('moves a client to the sensor of a more specific entity when one is added', () => {
      const alice = { user: 'alice', clientId: 'app' };
      const manager = new ClientQuotaManager('producer_byte_rate', WINDOW, quotaSource(producerQuota({ user: 'alice' }, 100)));
      manager.recordAndGetThrottleTimeMs(alice, 1000, T0);
      manager.updateQuotas(quotaSource(producerQuota({ user: 'alice' }, 100), producerQuota({ user: 'alice', 'client-id': 'app' }, 100)));
      assert.equal(manager.maxValueInQuotaWindow(alice), 1000);
      assert.equal(manager.recordAndGetThrottleTimeMs(alice, 1000, T0), 0, 'a fresh sensor for <alice, app>');
      assert.equal(manager.sensorCount, 2);
    });
  });

  describe('unrecord and maxValueInQuotaWindow', () => {
    it('unrecord takes back a throttled fetch', () => {
      const manager = new ClientQuotaManager('consumer_byte_rate', WINDOW, quotaSource([{ user: null }, { consumer_byte_rate: 100 }]));
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 2000, T0), 10_000);
      manager.unrecord(anonymous, 2000, T0);
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 1000, T0 + 10), 0, 'only these 1000 bytes count');
    });

    it('recordNoThrottle counts against the next request', () => {
      const manager = new ClientQuotaManager('request_percentage', WINDOW, quotaSource([{ user: null }, { request_percentage: 1 }]));
      // 200 ms of network thread time is 20%, 2%/s over 10 s: twice the quota.
      manager.recordNoThrottle(anonymous, 200, T0);
      assert.equal(manager.recordAndGetThrottleTimeMs(anonymous, 0, T0), 1000);
    });

    it('bounds a fetch to quota * (samples - 1) * window seconds', () => {
      const source = quotaSource([{ user: 'alice' }, { consumer_byte_rate: 1024 }]);
      const alice = { user: 'alice', clientId: 'c' };
      assert.equal(new ClientQuotaManager('consumer_byte_rate', WINDOW, source).maxValueInQuotaWindow(alice), 10_240);
      assert.equal(new ClientQuotaManager('consumer_byte_rate', { samples: 3, windowMs: 2000 }, source).maxValueInQuotaWindow(alice), 4096);
      const manager = new ClientQuotaManager('consumer_byte_rate', WINDOW, source);
      assert.equal(manager.maxValueInQuotaWindow({ user: 'bob', clientId: 'c' }), Number.POSITIVE_INFINITY);
      assert.equal(manager.recordAndGetThrottleTimeMs(alice, 10_240, T0), 0, 'the bound itself is within the quota');
      assert.equal(manager.recordAndGetThrottleTimeMs({ user: 'alice', clientId: 'd' }, 1, T0), 1, 'one byte more is throttled');
    });
  });
});
