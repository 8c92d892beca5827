import { strict as assert } from 'node:assert';
import type { KafkaMessage } from 'kafkajs';
import { Kafka, logLevel } from 'kafkajs';
import { DeadLetterHeaders, ERROR_MESSAGE_MAX_CHARS } from '../../../../src/tools/dead-letters.ts';
import { NON_ERROR_THROWN, boundedMessage, describeFailure } from '../../../../src/tools/retry/failure.ts';
import { destinationAfter, forwardedHeaders } from '../../../../src/tools/retry/forward.ts';
import { resolveOptions } from '../../../../src/tools/retry/options.ts';
import { retriedRecord, sourceRecord } from '../../../../src/tools/retry/record.ts';

const kafka = new Kafka({ brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING });
const options = resolveOptions({
  kafka,
  topic: 'orders',
  groupId: 'billing',
  handler: () => undefined,
  maxAttempts: 5,
  inMemoryAttempts: 2,
  backoff: { initialMs: 100, multiplier: 2, maxMs: 300 },
});

function message(offset: string, headers: KafkaMessage['headers'] = {}): KafkaMessage {
  return { key: Buffer.from('k'), value: Buffer.from('v'), timestamp: '1700000000000', attributes: 0, offset, headers } as KafkaMessage;
}

class InvalidOrder extends Error {}
class NamedError extends Error {
  override name = 'PaymentDeclined';
}

describe('retry records and dead-letter headers', () => {
  describe('describeFailure', () => {
    it("names an error by its name, or by its class when the name is the inherited 'Error'", () => {
      assert.deepEqual(describeFailure(new TypeError('bad type')), { errorClass: 'TypeError', errorMessage: 'bad type' });
      assert.deepEqual(describeFailure(new InvalidOrder('no items')), { errorClass: 'InvalidOrder', errorMessage: 'no items' });
      assert.deepEqual(describeFailure(new NamedError('card expired')), { errorClass: 'PaymentDeclined', errorMessage: 'card expired' });
      assert.deepEqual(describeFailure(new Error('plain')), { errorClass: 'Error', errorMessage: 'plain' });
    });

    it('gives a thrown non-Error a class of its own and a readable message', () => {
      assert.deepEqual(describeFailure('boom'), { errorClass: NON_ERROR_THROWN, errorMessage: 'boom' });
      assert.deepEqual(describeFailure({ code: 7 }), { errorClass: NON_ERROR_THROWN, errorMessage: '{"code":7}' });
      assert.deepEqual(describeFailure(undefined), { errorClass: NON_ERROR_THROWN, errorMessage: 'undefined' });
      assert.deepEqual(describeFailure(12n), { errorClass: NON_ERROR_THROWN, errorMessage: '12' });
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      assert.deepEqual(describeFailure(cyclic), { errorClass: NON_ERROR_THROWN, errorMessage: '[object Object]' });
      assert.deepEqual(describeFailure(Object.create(null)), { errorClass: NON_ERROR_THROWN, errorMessage: '{}' });
    });

    it('cuts a long message to ERROR_MESSAGE_MAX_CHARS characters ending in an ellipsis, never inside a character', () => {
      const long = describeFailure(new Error('x'.repeat(5000))).errorMessage;
      assert.equal(long.length, ERROR_MESSAGE_MAX_CHARS);
      assert.ok(long.endsWith('…'));
      assert.equal(boundedMessage('y'.repeat(ERROR_MESSAGE_MAX_CHARS)), 'y'.repeat(ERROR_MESSAGE_MAX_CHARS));
      const emoji = boundedMessage('😀'.repeat(ERROR_MESSAGE_MAX_CHARS + 1));
      assert.equal(Array.from(emoji).length, ERROR_MESSAGE_MAX_CHARS);
      assert.equal(emoji, '😀'.repeat(ERROR_MESSAGE_MAX_CHARS - 1) + '…');
      // Under the limit in code points though over it in UTF-16 units: kept whole.
      const fits = '😀'.repeat(ERROR_MESSAGE_MAX_CHARS - 10);
      assert.equal(boundedMessage(fits), fits);
    });
  });

  describe('where a failed record goes', () => {
    it('goes to level attempts + 1 - inMemoryAttempts, due one backoff delay later, then to the dead-letter topic', () => {
      assert.deepEqual(destinationAfter(options, 2, 1000), { kind: 'retry', level: 1, topic: 'orders.retry.1', dueMs: 1200 });
      assert.deepEqual(destinationAfter(options, 3, 1000), { kind: 'retry', level: 2, topic: 'orders.retry.2', dueMs: 1300 });
      assert.deepEqual(destinationAfter(options, 4, 1000), { kind: 'retry', level: 3, topic: 'orders.retry.3', dueMs: 1300 });
      assert.deepEqual(destinationAfter(options, 5, 1000), { kind: 'dead-letter', topic: 'orders.dlq' });
      assert.deepEqual(destinationAfter(options, 9, 1000), { kind: 'dead-letter', topic: 'orders.dlq' });
    });

    it('goes straight to the dead-letter topic when every attempt is in memory', () => {
      const allInMemory = { ...options, maxAttempts: 2, retryTopics: [] };
      assert.deepEqual(destinationAfter(allInMemory, 2, 0), { kind: 'dead-letter', topic: 'orders.dlq' });
    });
  });

  describe('headers', () => {
    it('a forwarded record keeps its own headers and carries the contract ones; only a retry record has a due time', () => {
      const record = sourceRecord('orders', 3, message('41', { trace: Buffer.from('t-1') }), 2);
      const failure = { errorClass: 'InvalidOrder', errorMessage: 'no items' };
      const retry = forwardedHeaders(record, 2, failure, 'billing', { kind: 'retry', level: 1, topic: 'orders.retry.1', dueMs: 1234 });
      assert.deepEqual(retry, {
        trace: Buffer.from('t-1'),
        [DeadLetterHeaders.originalTopic]: 'orders',
        [DeadLetterHeaders.originalPartition]: '3',
        [DeadLetterHeaders.originalOffset]: '41',
        [DeadLetterHeaders.originalTimestamp]: '1700000000000',
        [DeadLetterHeaders.attempts]: '2',
        [DeadLetterHeaders.errorClass]: 'InvalidOrder',
        [DeadLetterHeaders.errorMessage]: 'no items',
        [DeadLetterHeaders.consumerGroup]: 'billing',
        [DeadLetterHeaders.retryDueMs]: '1234',
      });
      const dead = forwardedHeaders(record, 4, failure, 'billing', { kind: 'dead-letter', topic: 'orders.dlq' });
      assert.equal(dead[DeadLetterHeaders.retryDueMs], undefined);
      assert.equal(dead[DeadLetterHeaders.attempts], '4');
    });

    it('a retry record read back gives the handler its source coordinates, own headers and the next attempt number', () => {
      const record = sourceRecord(
        'orders',
        3,
        message('41', { trace: Buffer.from('t-1'), [DeadLetterHeaders.replayCount]: Buffer.from('1') }),
        2,
      );
      const headers = forwardedHeaders(record, 3, { errorClass: 'E', errorMessage: 'm' }, 'billing', {
        kind: 'retry',
        level: 2,
        topic: 'orders.retry.2',
        dueMs: 99,
      });
      const asConsumed = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(String(v))]));
      const back = retriedRecord('orders', 0, message('7', asConsumed), 3);
      assert.equal(back.consumerGroup, 'billing');
      assert.equal(back.dueMs, 99);
      assert.equal(back.attemptsMade, 3);
      assert.deepEqual(
        { ...back.record, headers: Object.keys(back.record.headers) },
        {
          topic: 'orders',
          partition: 3,
          offset: '41',
          timestamp: '1700000000000',
          key: Buffer.from('k'),
          value: Buffer.from('v'),
          // A replay's count is the record's own: it survives another round of retries.
          headers: ['trace', DeadLetterHeaders.replayCount],
          attempt: 4,
        },
      );
    });

    it('a retry record without the headers (not written here) falls back to its own coordinates and its level', () => {
      const back = retriedRecord('orders', 2, message('17', { [DeadLetterHeaders.originalPartition]: Buffer.from('-1') }), 3);
      assert.equal(back.consumerGroup, undefined);
      assert.equal(back.dueMs, undefined);
      assert.equal(back.attemptsMade, 3);
      assert.deepEqual([back.record.topic, back.record.partition, back.record.offset, back.record.attempt], ['orders', 2, '17', 4]);
    });
  });
});
