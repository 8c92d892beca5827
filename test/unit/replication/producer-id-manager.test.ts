import assert from 'node:assert/strict';
import { ProducerIdManager, type ProducerIdBlock } from '../../../src/replication/producer-id-manager.ts';

describe('ProducerIdManager', () => {
  it('hands out ids from controller blocks in order, fetching the next block before the current runs out', async () => {
    const requested: number[] = [];
    let next = 0n;
    const manager = new ProducerIdManager(async () => {
      requested.push(Number(next));
      const block: ProducerIdBlock = { firstProducerId: next, size: 10 };
      next += 10n;
      return block;
    });
    const ids: bigint[] = [];
    for (let i = 0; i < 25; i++) ids.push(await manager.generateProducerId());
    assert.deepEqual(
      ids,
      Array.from({ length: 25 }, (_, i) => BigInt(i)),
    );
    assert.deepEqual(requested, [0, 10, 20], 'one block per ten ids');
  });

  it('concurrent callers never get the same id and share block requests', async () => {
    let next = 100n;
    let requests = 0;
    const manager = new ProducerIdManager(async () => {
      requests++;
      await new Promise((r) => setTimeout(r, 5));
      const block = { firstProducerId: next, size: 3 };
      next += 3n;
      return block;
    });
    const ids = await Promise.all(Array.from({ length: 10 }, () => manager.generateProducerId()));
    assert.equal(new Set(ids).size, 10);
    assert.ok(requests <= 5, `${requests} block requests for 10 ids in blocks of 3`);
  });

  it('a failed allocation surfaces to the caller and the next call retries', async () => {
    let fail = true;
    const manager = new ProducerIdManager(async () => {
      if (fail) throw new Error('no active controller');
      return { firstProducerId: 5n, size: 10 };
    });
    await assert.rejects(manager.generateProducerId(), /no active controller/);
    fail = false;
    assert.equal(await manager.generateProducerId(), 5n);
  });
});
