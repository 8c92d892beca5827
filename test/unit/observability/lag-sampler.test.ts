import assert from 'node:assert/strict';
import type { PartitionLag } from '../../../src/client/groups.ts';
import { ConsumerLagSampler } from '../../../src/observability/lag-sampler.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

function lag(topic: string, partition: number, lagRecords: number | null, oldest: number | null): PartitionLag {
  return {
    topic,
    partition,
    committedOffset: lagRecords === null ? -1 : 10,
    logEndOffset: 10 + (lagRecords ?? 0),
    lag: lagRecords,
    lagMs: null,
    oldestUnconsumedTimestampMs: oldest,
    memberId: null,
    host: null,
    clientId: null,
  };
}

describe('ConsumerLagSampler', () => {
  it('keeps the newest samples of each group within the history, and forgets groups that are gone', async () => {
    const clock = new ManualClock(1_000_000);
    let groups = ['a', 'b'];
    const sampler = new ConsumerLagSampler({
      groups: () => groups,
      describe: async (groupId) => {
        if (groupId === 'b' && clock.now() > 1_000_000 + 3000) throw new Error('group b moved');
        return [lag('t', 0, 5, clock.now() - 2000), lag('t', 1, null, null)];
      },
      clock,
      intervalMs: 1000,
      historyMs: 3000,
      onError: (err) => assert.fail(err as Error),
    });
    for (let i = 0; i < 5; i++) {
      await sampler.sample();
      clock.advance(1000);
    }
    const history = sampler.history('a');
    assert.deepEqual(
      history.map((s) => s.atMs),
      [1_002_000, 1_003_000, 1_004_000],
    );
    // Partitions without a committed offset have no lag to sample.
    assert.deepEqual(history[0]!.partitions, [{ topic: 't', partition: 0, lag: 5, lagMs: 2000 }]);
    assert.deepEqual(sampler.history('b'), []);
    assert.deepEqual(
      sampler.points().map((p) => p.group),
      ['a'],
    );
    groups = [];
    await sampler.sample();
    assert.deepEqual(sampler.points(), []);
    assert.deepEqual(sampler.history('a'), []);
  });

  it('samples on its interval once started, and not after it stopped', async () => {
    const clock = new ManualClock(0);
    let described = 0;
    const sampler = new ConsumerLagSampler({
      groups: () => ['g'],
      describe: async () => {
        described++;
        return [lag('t', 0, 1, 0)];
      },
      clock,
      intervalMs: 1000,
      historyMs: 60_000,
      onError: (err) => assert.fail(err as Error),
    });
    sampler.start();
    clock.advance(1000);
    await new Promise((r) => setImmediate(r));
    clock.advance(1000);
    await new Promise((r) => setImmediate(r));
    assert.equal(described, 2);
    sampler.stop();
    clock.advance(5000);
    await new Promise((r) => setImmediate(r));
    assert.equal(described, 2);
  });
});
