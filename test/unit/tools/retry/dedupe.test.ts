import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { InMemoryProcessedKeys, dedupe, keyByHeader, keyByOffset } from '../../../../src/tools/retry/dedupe.ts';
import type { RetryRecord } from '../../../../src/tools/retry/record.ts';

function record(offset: number, attempt = 1, headers: RetryRecord['headers'] = {}): RetryRecord {
  return { topic: 'orders', partition: 1, offset: String(offset), timestamp: '0', key: null, value: null, headers, attempt };
}

describe('retry deduplication', () => {
  describe('InMemoryProcessedKeys', () => {
    it('forgets the oldest key once it holds more than maxKeys', () => {
      const keys = new InMemoryProcessedKeys({ maxKeys: 2 });
      keys.add('a');
      keys.add('b');
      keys.add('a');
      assert.equal(keys.size, 2);
      keys.add('c');
      assert.deepEqual(
        ['a', 'b', 'c'].map((k) => keys.has(k)),
        [false, true, true],
      );
    });

    it('rejects a maxKeys that is not a positive integer', () => {
      assert.throws(() => new InMemoryProcessedKeys({ maxKeys: 0 }), /maxKeys must be a positive integer, got 0/);
      assert.throws(() => new InMemoryProcessedKeys({ maxKeys: 1.5 }), RangeError);
    });

    it('holds exactly the last maxKeys distinct keys added, whatever the sequence', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 8 }),
          fc.array(fc.integer({ min: 0, max: 20 }).map(String), { maxLength: 60 }),
          (maxKeys, adds) => {
            const keys = new InMemoryProcessedKeys({ maxKeys });
            // The model: distinct keys in first-added order, the oldest dropped past maxKeys.
            const model: string[] = [];
            for (const k of adds) {
              keys.add(k);
              if (!model.includes(k)) model.push(k);
              if (model.length > maxKeys) model.shift();
            }
            assert.equal(keys.size, model.length);
            for (let k = 0; k <= 20; k++) assert.equal(keys.has(String(k)), model.includes(String(k)), `key ${k}`);
          },
        ),
      );
    });
  });

  describe('dedupe', () => {
    it('handles a key once: a second delivery of a processed record is skipped', async () => {
      const handled: string[] = [];
      const handler = dedupe((r) => void handled.push(r.offset), { keyOf: keyByOffset, store: new InMemoryProcessedKeys() });
      await handler(record(1));
      await handler(record(2));
      await handler(record(1, 2));
      assert.deepEqual(handled, ['1', '2']);
    });

    it('remembers nothing for a failed attempt, so the next attempt runs', async () => {
      const store = new InMemoryProcessedKeys();
      const attempts: number[] = [];
      const handler = dedupe(
        (r) => {
          attempts.push(r.attempt);
          if (r.attempt === 1) throw new Error('transient');
        },
        { keyOf: keyByOffset, store },
      );
      await assert.rejects(Promise.resolve(handler(record(5, 1))), /transient/);
      assert.equal(store.has('orders/1/5'), false);
      await handler(record(5, 2));
      await handler(record(5, 3));
      assert.deepEqual(attempts, [1, 2]);
      assert.equal(store.has('orders/1/5'), true);
    });

    it('runs records without a key every time', async () => {
      let calls = 0;
      const handler = dedupe(() => void calls++, { keyOf: keyByHeader('event-id'), store: new InMemoryProcessedKeys() });
      await handler(record(1));
      await handler(record(1));
      await handler(record(2, 1, { 'event-id': Buffer.from('e-9') }));
      await handler(record(3, 1, { 'event-id': 'e-9' }));
      assert.equal(calls, 3);
    });

    it('runs concurrent deliveries of one key one after the other, so only the first handles it', async () => {
      let running = 0;
      let handled = 0;
      const handler = dedupe(
        async () => {
          running++;
          assert.equal(running, 1, 'one at a time');
          await new Promise((r) => setTimeout(r, 20));
          handled++;
          running--;
        },
        { keyOf: () => 'same', store: new InMemoryProcessedKeys() },
      );
      await Promise.all([handler(record(1)), handler(record(1)), handler(record(1))]);
      assert.equal(handled, 1);
    });

    it('works with an asynchronous store, and a store that fails to add fails the attempt', async () => {
      const saved = new Set<string>();
      let failAdd = true;
      const store = {
        has: async (k: string) => saved.has(k),
        add: async (k: string) => {
          if (failAdd) throw new Error('store down');
          saved.add(k);
        },
      };
      let calls = 0;
      const handler = dedupe(() => void calls++, { keyOf: keyByOffset, store });
      await assert.rejects(Promise.resolve(handler(record(8))), /store down/);
      failAdd = false;
      await handler(record(8, 2));
      await handler(record(8, 3));
      assert.equal(calls, 2);
    });
  });
});
