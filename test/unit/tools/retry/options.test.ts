import { strict as assert } from 'node:assert';
import { Kafka, logLevel } from 'kafkajs';
import { type ConsumeWithRetriesOptions, resolveOptions } from '../../../../src/tools/retry/options.ts';

// A client that is never connected: resolving options must not touch the network.
const kafka = new Kafka({ brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING });
const base: ConsumeWithRetriesOptions = { kafka, topic: 'orders', groupId: 'billing', handler: () => undefined };

function rejects(over: Record<string, unknown>, message: RegExp): void {
  assert.throws(
    () => resolveOptions({ ...base, ...over } as ConsumeWithRetriesOptions),
    (err: unknown) => {
      assert.ok(err instanceof RangeError, `a RangeError, got ${String(err)}`);
      assert.match(err.message, message);
      return true;
    },
  );
}

describe('consumeWithRetries options', () => {
  it('fills in the documented defaults', () => {
    const r = resolveOptions(base);
    assert.equal(r.maxAttempts, 4);
    assert.equal(r.inMemoryAttempts, 2);
    assert.deepEqual(r.backoff, { initialMs: 200, multiplier: 2, maxMs: 30_000 });
    assert.equal(r.deadLetterTopic, 'orders.dlq');
    assert.deepEqual(r.retryTopics, ['orders.retry.1', 'orders.retry.2']);
    assert.equal(r.fromBeginning, false);
    assert.equal(r.partitionsConsumedConcurrently, 1);
  });

  it('has one retry topic per attempt beyond the in-memory ones, and none when all are in memory', () => {
    assert.deepEqual(resolveOptions({ ...base, maxAttempts: 5, inMemoryAttempts: 1 }).retryTopics, [
      'orders.retry.1',
      'orders.retry.2',
      'orders.retry.3',
      'orders.retry.4',
    ]);
    assert.deepEqual(resolveOptions({ ...base, maxAttempts: 3, inMemoryAttempts: 3 }).retryTopics, []);
  });

  it('defaults inMemoryAttempts to maxAttempts when that is below 2', () => {
    const r = resolveOptions({ ...base, maxAttempts: 1 });
    assert.equal(r.inMemoryAttempts, 1);
    assert.deepEqual(r.retryTopics, []);
  });

  it('completes a partial backoff with the defaults', () => {
    assert.deepEqual(resolveOptions({ ...base, backoff: { initialMs: 50 } }).backoff, { initialMs: 50, multiplier: 2, maxMs: 30_000 });
    assert.deepEqual(resolveOptions({ ...base, backoff: { multiplier: 3, maxMs: undefined } }).backoff, {
      initialMs: 200,
      multiplier: 3,
      maxMs: 30_000,
    });
  });

  it('takes the dead-letter topic given', () => {
    assert.equal(resolveOptions({ ...base, deadLetterTopic: 'billing-dead' }).deadLetterTopic, 'billing-dead');
  });

  it('rejects attempts that are not positive integers', () => {
    rejects({ maxAttempts: 0 }, /maxAttempts must be a positive integer, got 0/);
    rejects({ maxAttempts: 2.5 }, /maxAttempts must be a positive integer, got 2.5/);
    rejects({ maxAttempts: '4' }, /maxAttempts must be a positive integer, got "4"/);
    rejects({ inMemoryAttempts: 0 }, /inMemoryAttempts must be a positive integer/);
    rejects({ maxAttempts: Number.NaN }, /maxAttempts must be a positive integer, got NaN/);
  });

  it('rejects more in-memory attempts than attempts', () => {
    rejects({ maxAttempts: 3, inMemoryAttempts: 4 }, /inMemoryAttempts must be at most maxAttempts \(3\), got 4/);
  });

  it('rejects a backoff that is negative, shrinking or capped below its start', () => {
    rejects({ backoff: { initialMs: -1 } }, /backoff.initialMs must be a non-negative integer, got -1/);
    rejects({ backoff: { multiplier: 0.5 } }, /backoff.multiplier must be a number >= 1, got 0.5/);
    rejects({ backoff: { multiplier: Number.POSITIVE_INFINITY } }, /backoff.multiplier/);
    rejects({ backoff: { initialMs: 500, maxMs: 100 } }, /backoff.maxMs must be an integer >= backoff.initialMs \(500\), got 100/);
  });

  it('rejects a missing client, topic, group or handler', () => {
    rejects({ kafka: {} }, /kafka must be a kafkajs Kafka instance/);
    rejects({ topic: '' }, /topic must be a non-empty string, got ""/);
    rejects({ groupId: undefined }, /groupId must be a non-empty string, got undefined/);
    rejects({ handler: 'log it' }, /handler must be a function/);
    rejects({ partitionsConsumedConcurrently: 0 }, /partitionsConsumedConcurrently must be a positive integer/);
  });

  it('rejects a dead-letter topic that is the source topic or one of its retry topics', () => {
    rejects({ deadLetterTopic: 'orders' }, /deadLetterTopic must differ/);
    rejects({ deadLetterTopic: 'orders.retry.2' }, /deadLetterTopic must differ/);
    rejects({ deadLetterTopic: '' }, /deadLetterTopic must be a non-empty string/);
  });
});
