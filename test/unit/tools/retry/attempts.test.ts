import { strict as assert } from 'node:assert';
import type { KafkaMessage } from 'kafkajs';
import { Kafka, logLevel } from 'kafkajs';
import { DeadLetterHeaders } from '../../../../src/tools/dead-letters.ts';
import { type AttemptContext, attemptRetriedRecord, attemptSourceRecord } from '../../../../src/tools/retry/attempts.ts';
import type { Failure } from '../../../../src/tools/retry/failure.ts';
import { resolveOptions } from '../../../../src/tools/retry/options.ts';
import type { RetryHandler, RetryRecord } from '../../../../src/tools/retry/record.ts';

const kafka = new Kafka({ brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING });

interface Forwarded {
  record: RetryRecord;
  attemptsMade: number;
  failure: Failure;
}

function context(handler: RetryHandler, inMemoryAttempts = 3): { ctx: AttemptContext; forwarded: Forwarded[] } {
  const options = resolveOptions({
    kafka,
    topic: 'orders',
    groupId: 'billing',
    handler,
    maxAttempts: 5,
    inMemoryAttempts,
    backoff: { initialMs: 10, multiplier: 3, maxMs: 1000 },
  });
  const forwarded: Forwarded[] = [];
  const forwarder = {
    forward: async (record: RetryRecord, attemptsMade: number, failure: Failure) => {
      forwarded.push({ record, attemptsMade, failure });
      return { kind: 'dead-letter' as const, topic: 'orders.dlq' };
    },
  };
  return { ctx: { options, forwarder }, forwarded };
}

const message = (headers: KafkaMessage['headers'] = {}): KafkaMessage =>
  ({ key: null, value: Buffer.from('v'), timestamp: '5', attributes: 0, offset: '12', headers }) as KafkaMessage;

function retryHeaders(group: string, attempts: number, dueMs: number): KafkaMessage['headers'] {
  return {
    [DeadLetterHeaders.originalTopic]: Buffer.from('orders'),
    [DeadLetterHeaders.originalPartition]: Buffer.from('1'),
    [DeadLetterHeaders.originalOffset]: Buffer.from('40'),
    [DeadLetterHeaders.originalTimestamp]: Buffer.from('5'),
    [DeadLetterHeaders.attempts]: Buffer.from(String(attempts)),
    [DeadLetterHeaders.consumerGroup]: Buffer.from(group),
    [DeadLetterHeaders.retryDueMs]: Buffer.from(String(dueMs)),
  };
}

describe('retry attempts of one record', () => {
  it('a source record succeeding at once is handled with attempt 1 and no pause', async () => {
    const attempts: number[] = [];
    const { ctx, forwarded } = context((r) => {
      attempts.push(r.attempt);
    });
    const pauses: number[] = [];
    const outcome = await attemptSourceRecord(ctx, 'orders', 0, message(), async (ms) => {
      pauses.push(ms);
    });
    assert.equal(outcome, 'handled');
    assert.deepEqual(attempts, [1]);
    assert.deepEqual(pauses, []);
    assert.equal(forwarded.length, 0);
  });

  it('a source record failing then succeeding is retried in memory after the backoff delay', async () => {
    const attempts: number[] = [];
    const { ctx, forwarded } = context((r) => {
      attempts.push(r.attempt);
      if (r.attempt < 3) throw new Error('not yet');
    });
    const pauses: number[] = [];
    const outcome = await attemptSourceRecord(ctx, 'orders', 0, message(), async (ms) => {
      pauses.push(ms);
    });
    assert.equal(outcome, 'handled');
    assert.deepEqual(attempts, [1, 2, 3]);
    assert.deepEqual(pauses, [10, 30]);
    assert.equal(forwarded.length, 0);
  });

  it('a source record failing every in-memory attempt is forwarded with that count and the last failure', async () => {
    const { ctx, forwarded } = context((r) => {
      throw new RangeError(`attempt ${r.attempt}`);
    });
    const outcome = await attemptSourceRecord(ctx, 'orders', 2, message(), async () => undefined);
    assert.equal(outcome, 'forwarded');
    assert.equal(forwarded.length, 1);
    assert.equal(forwarded[0]!.attemptsMade, 3);
    assert.deepEqual(forwarded[0]!.failure, { errorClass: 'RangeError', errorMessage: 'attempt 3' });
    assert.deepEqual([forwarded[0]!.record.topic, forwarded[0]!.record.partition, forwarded[0]!.record.offset], ['orders', 2, '12']);
  });

  it("a retry record of this group runs once when due, as the attempt after its header's count", async () => {
    const seen: RetryRecord[] = [];
    const { ctx, forwarded } = context((r) => {
      seen.push(r);
      throw 'still broken';
    });
    const waitedFor: number[] = [];
    const dueMs = Date.now() + 200;
    const outcome = await attemptRetriedRecord(ctx, 1, 4, message(retryHeaders('billing', 3, dueMs)), async (due) => {
      waitedFor.push(due);
      return true;
    });
    assert.equal(outcome, 'forwarded');
    assert.deepEqual(waitedFor, [dueMs]);
    assert.equal(seen.length, 1);
    assert.deepEqual([seen[0]!.topic, seen[0]!.partition, seen[0]!.offset, seen[0]!.attempt], ['orders', 1, '40', 4]);
    assert.equal(forwarded[0]!.attemptsMade, 4);
    assert.deepEqual(forwarded[0]!.failure, { errorClass: 'NonErrorThrown', errorMessage: 'still broken' });
  });

  it("another group's retry record is skipped unattempted", async () => {
    let calls = 0;
    const { ctx, forwarded } = context(() => {
      calls++;
    });
    const outcome = await attemptRetriedRecord(ctx, 1, 0, message(retryHeaders('shipping', 3, 0)), async () => true);
    assert.equal(outcome, 'skipped');
    assert.equal(calls, 0);
    assert.equal(forwarded.length, 0);
  });

  it('an interrupted wait leaves the retry record unattempted', async () => {
    let calls = 0;
    const { ctx } = context(() => {
      calls++;
    });
    const outcome = await attemptRetriedRecord(ctx, 1, 0, message(retryHeaders('billing', 3, Date.now() + 60_000)), async () => false);
    assert.equal(outcome, 'interrupted');
    assert.equal(calls, 0);
  });

  it('does not wait longer than the longest backoff for a record claiming to be due far ahead', async () => {
    const { ctx } = context(() => undefined);
    let waitedFor = 0;
    const before = Date.now();
    await attemptRetriedRecord(ctx, 1, 0, message(retryHeaders('billing', 3, Date.now() + 86_400_000)), async (due) => {
      waitedFor = due;
      return true;
    });
    assert.ok(waitedFor >= before + 1000 && waitedFor <= Date.now() + 1000, `waits until ${waitedFor - before} ms from the start`);
  });
});
