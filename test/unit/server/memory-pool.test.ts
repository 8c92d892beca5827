import assert from 'node:assert/strict';
import { RequestMemoryPool } from '../../../src/server/memory-pool.ts';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('request memory pool (queued.max.request.bytes)', () => {
  it('admits a request while any memory is free, even one larger than what is free, as SimpleMemoryPool does', () => {
    const pool = new RequestMemoryPool(100);
    assert.ok(pool.tryReserve(60));
    assert.ok(pool.tryReserve(90), 'not in deficit: 40 bytes free admit 90');
    assert.equal(pool.usedBytes, 150);
    assert.ok(pool.exhausted);
    assert.equal(pool.tryReserve(1), false, 'in deficit: nothing more');
    assert.ok(pool.tryReserve(0), 'an empty frame needs no memory');
    pool.release(60);
    assert.equal(pool.exhausted, false);
    assert.equal(pool.peakUsedBytes, 150);
    pool.release(90);
    assert.equal(pool.usedBytes, 0);
  });

  it('is exhausted when exactly full', () => {
    const pool = new RequestMemoryPool(100);
    assert.ok(pool.tryReserve(100));
    assert.ok(pool.exhausted);
    assert.equal(pool.tryReserve(1), false);
  });

  it('wakes every waiter once a release brings it out of deficit, never inside the release', async () => {
    const pool = new RequestMemoryPool(10);
    assert.ok(pool.tryReserve(25));
    const woken: string[] = [];
    pool.whenAvailable(() => woken.push('a'));
    const cancel = pool.whenAvailable(() => woken.push('cancelled'));
    pool.whenAvailable(() => woken.push('b'));
    cancel();
    pool.release(10);
    await tick();
    assert.deepEqual(woken, [], 'still in deficit (15 of 10 used)');
    pool.release(10);
    assert.deepEqual(woken, [], 'woken on a later microtask');
    await tick();
    assert.deepEqual(woken, ['a', 'b']);
    assert.equal(pool.waitingCount, 0);
  });

  it('wakes a waiter that registers while memory is free', async () => {
    const pool = new RequestMemoryPool(10);
    let woken = false;
    pool.whenAvailable(() => {
      woken = true;
    });
    await tick();
    assert.ok(woken);
  });

  it('bounds nothing at zero or less (Kafka MemoryPool.NONE) but still counts', () => {
    const pool = new RequestMemoryPool(-1);
    assert.ok(pool.tryReserve(1 << 30));
    assert.ok(pool.tryReserve(1 << 30));
    assert.equal(pool.exhausted, false);
    assert.equal(pool.usedBytes, 2 ** 31);
    pool.release(1 << 30);
    pool.release(1 << 30);
    assert.equal(pool.usedBytes, 0);
  });

  it('refuses to be released more than was reserved: a double release is a bug', () => {
    const pool = new RequestMemoryPool(100);
    assert.ok(pool.tryReserve(10));
    pool.release(10);
    assert.throws(() => pool.release(10), /released more than reserved/);
  });
});
