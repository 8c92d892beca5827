import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { FetchSessionCache, type SessionPartition } from '../../../src/replication/fetch-session.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

function part(topic: string, partition: number, fetchOffset = 0): SessionPartition {
  return { topic, topicId: `id-${topic}`, partition, fetchOffset, partitionMaxBytes: 1024, currentLeaderEpoch: -1, logStartOffset: -1 };
}

const quiet = { errorCode: 0, highWatermark: 10, logStartOffset: 0, recordsSizeBytes: 0 };

describe('FetchSessionCache (KIP-227)', () => {
  it('epoch -1 fetches without a session; epoch 0 opens one whose next epoch is 1', () => {
    const cache = new FetchSessionCache();
    const sessionless = cache.newContext(0, -1, [part('a', 0)], [], true);
    assert.equal(sessionless.kind, 'sessionless');
    const full = cache.newContext(0, 0, [part('a', 0), part('a', 1)], [], true);
    assert.equal(full.kind, 'full');
    const id = cache.createSession(false, true, [
      { request: part('a', 0), data: quiet },
      { request: part('a', 1), data: quiet },
    ]);
    assert.ok(id > 0);
    assert.equal(cache.get(id)?.epoch, 1);
  });

  it('an incremental fetch keeps the session partitions and answers only the changed ones', () => {
    const cache = new FetchSessionCache();
    const id = cache.createSession(false, true, [
      { request: part('a', 0), data: quiet },
      { request: part('a', 1), data: quiet },
    ]);
    const ctx = cache.newContext(id, 1, [part('a', 0, 5)], [], true);
    assert.equal(ctx.kind, 'incremental');
    if (ctx.kind !== 'incremental') return;
    assert.deepEqual(
      ctx.partitions.map((p) => [p.partition, p.fetchOffset]),
      [
        [0, 5],
        [1, 0],
      ],
    );
    assert.equal(FetchSessionCache.mustRespond(ctx.session, part('a', 1), quiet), false, 'unchanged partition omitted');
    assert.equal(FetchSessionCache.mustRespond(ctx.session, part('a', 0), { ...quiet, recordsSizeBytes: 100 }), true, 'new data sent');
    assert.equal(FetchSessionCache.mustRespond(ctx.session, part('a', 1), { ...quiet, highWatermark: 11 }), true, 'moved HW sent');
    assert.equal(FetchSessionCache.mustRespond(ctx.session, part('a', 1), { ...quiet, highWatermark: 11 }), false, 'then remembered');
    assert.equal(FetchSessionCache.mustRespond(ctx.session, part('a', 1), { ...quiet, logStartOffset: 3 }), true, 'moved log start sent');
    assert.equal(
      FetchSessionCache.mustRespond(ctx.session, part('a', 1), { ...quiet, logStartOffset: 3, errorCode: 6 }),
      true,
      'errors sent',
    );
    assert.equal(cache.get(id)?.epoch, 2);
  });

  it('answers FETCH_SESSION_ID_NOT_FOUND and INVALID_FETCH_SESSION_EPOCH', () => {
    const cache = new FetchSessionCache();
    const missing = cache.newContext(12345, 1, [], [], true);
    assert.deepEqual(missing, { kind: 'error', errorCode: Errors.FETCH_SESSION_ID_NOT_FOUND.code });
    const id = cache.createSession(false, true, [{ request: part('a', 0), data: quiet }]);
    const wrongEpoch = cache.newContext(id, 7, [], [], true);
    assert.deepEqual(wrongEpoch, { kind: 'error', errorCode: Errors.INVALID_FETCH_SESSION_EPOCH.code });
    const switched = cache.newContext(id, 1, [], [], false);
    assert.deepEqual(switched, { kind: 'error', errorCode: Errors.FETCH_SESSION_TOPIC_ID_ERROR.code });
  });

  it('forgotten topics leave the session; a session left empty is closed', () => {
    const cache = new FetchSessionCache();
    const id = cache.createSession(false, true, [
      { request: part('a', 0), data: quiet },
      { request: part('b', 0), data: quiet },
    ]);
    const ctx = cache.newContext(id, 1, [], [{ topic: 'a', topicId: 'id-a', partition: 0 }], true);
    assert.equal(ctx.kind, 'incremental');
    if (ctx.kind === 'incremental')
      assert.deepEqual(
        ctx.partitions.map((p) => p.topic),
        ['b'],
      );
    const closed = cache.newContext(id, 2, [], [{ topic: 'b', topicId: 'id-b', partition: 0 }], true);
    assert.equal(closed.kind, 'sessionless');
    assert.equal(cache.get(id), undefined);
  });

  it('a full fetch naming a session closes it', () => {
    const cache = new FetchSessionCache();
    const id = cache.createSession(false, true, [{ request: part('a', 0), data: quiet }]);
    cache.newContext(id, 0, [part('a', 0)], [], true);
    assert.equal(cache.get(id), undefined);
  });

  it('is bounded: when full, a stale session is evicted, else a weaker one, else no session is created', () => {
    const clock = new ManualClock();
    const cache = new FetchSessionCache({ maxSlots: 2, evictionMs: 1000, clock });
    const one = [{ request: part('a', 0), data: quiet }];
    const two = [...one, { request: part('a', 1), data: quiet }];
    const first = cache.createSession(false, true, one);
    const second = cache.createSession(false, true, two);
    assert.equal(cache.createSession(false, true, one), 0, 'no room and nothing weaker');
    assert.equal(cache.size, 2);
    const third = cache.createSession(false, true, two);
    assert.ok(third > 0, 'a bigger session evicts the smallest');
    assert.equal(cache.get(first), undefined);
    clock.advance(1001);
    const fourth = cache.createSession(false, true, one);
    assert.ok(fourth > 0, 'stale sessions make room');
    assert.equal(cache.get(second), undefined, 'the least recently used stale one went');
    assert.equal(cache.size, 2);
  });
});
