import { strict as assert } from 'node:assert';
import type { Batch, EachBatchPayload, KafkaMessage, Offsets } from 'kafkajs';
import { Kafka, logLevel } from 'kafkajs';
import { DeadLetterHeaders } from '../../../../src/tools/dead-letters.ts';
import type { AttemptContext } from '../../../../src/tools/retry/attempts.ts';
import { eachBatch, retryStep, sourceStep } from '../../../../src/tools/retry/batch.ts';
import { type RetryLogger, resolveOptions } from '../../../../src/tools/retry/options.ts';
import type { RetryHandler, RetryRecord } from '../../../../src/tools/retry/record.ts';

const kafka = new Kafka({ brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING });
const quiet: RetryLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

function context(handler: RetryHandler): { ctx: AttemptContext; forwarded: { offset: string; attemptsMade: number }[] } {
  const options = resolveOptions({
    kafka,
    topic: 'orders',
    groupId: 'billing',
    handler,
    maxAttempts: 4,
    inMemoryAttempts: 2,
    backoff: { initialMs: 20, multiplier: 2, maxMs: 100 },
    logger: quiet,
  });
  const forwarded: { offset: string; attemptsMade: number }[] = [];
  const forwarder = {
    forward: async (record: RetryRecord, attemptsMade: number) => {
      forwarded.push({ offset: record.offset, attemptsMade });
      return { kind: 'dead-letter' as const, topic: 'orders.dlq' };
    },
  };
  return { ctx: { options, forwarder }, forwarded };
}

const message = (offset: number, headers: KafkaMessage['headers'] = {}): KafkaMessage =>
  ({ key: null, value: Buffer.from(`v${offset}`), timestamp: '1', attributes: 0, offset: String(offset), headers }) as KafkaMessage;

/** A kafkajs eachBatch payload over `messages` that records what is resolved and committed. */
function payload(topic: string, messages: KafkaMessage[], heartbeat: () => Promise<void> = async () => undefined) {
  let resolvedNext: string | undefined;
  let committedNext: string | undefined;
  const commits: string[] = [];
  const resolved: string[] = [];
  const p = {
    batch: { topic, partition: 0, messages } as unknown as Batch,
    resolveOffset: (offset: string) => {
      resolved.push(offset);
      resolvedNext = String(Number(offset) + 1);
    },
    heartbeat,
    pause: () => () => undefined,
    uncommittedOffsets: () => ({
      topics: resolvedNext === committedNext ? [] : [{ topic, partitions: [{ partition: 0, offset: resolvedNext! }] }],
    }),
    commitOffsetsIfNecessary: async (offsets?: Offsets) => {
      for (const t of offsets?.topics ?? []) for (const part of t.partitions) commits.push(part.offset);
      committedNext = resolvedNext;
    },
    isRunning: () => true,
    isStale: () => false,
  } satisfies EachBatchPayload;
  return { payload: p, resolved, commits };
}

describe('retry consumers: a batch', () => {
  it('resolves each handled record and commits at the end of the batch, and right after each forwarded one', async () => {
    const { ctx, forwarded } = context((r) => {
      if (r.offset === '11') throw new Error('bad');
    });
    const { payload: p, resolved, commits } = payload('orders', [message(10), message(11), message(12)]);
    await eachBatch(sourceStep(ctx), new AbortController().signal, quiet)(p);
    assert.deepEqual(resolved, ['10', '11', '12']);
    assert.deepEqual(forwarded, [{ offset: '11', attemptsMade: 2 }]);
    // Next offsets committed: 12 once record 11 was forwarded, 13 at the end.
    assert.deepEqual(commits, ['12', '13']);
  });

  it('a rebalance during in-memory retries lets the record finish, be forwarded and committed, then gives the partition up', async () => {
    const attempts: string[] = [];
    const { ctx, forwarded } = context((r) => {
      attempts.push(`${r.offset}#${r.attempt}`);
      throw new Error('bad');
    });
    let beats = 0;
    const rebalance = new Error('The group is rebalancing, so a rejoin is needed');
    const {
      payload: p,
      resolved,
      commits,
    } = payload('orders', [message(10), message(11)], async () => {
      beats++;
      throw rebalance;
    });
    await assert.rejects(eachBatch(sourceStep(ctx), new AbortController().signal, quiet)(p), (err) => err === rebalance);
    assert.deepEqual(attempts, ['10#1', '10#2'], 'record 11 is left for whoever gets the partition');
    assert.deepEqual(forwarded, [{ offset: '10', attemptsMade: 2 }]);
    assert.deepEqual(resolved, ['10']);
    assert.deepEqual(commits, ['11']);
    assert.equal(beats, 1, 'no heartbeat after the first failed one');
  });

  it('a stop between records leaves the rest unresolved and commits what was done', async () => {
    const stopping = new AbortController();
    const { ctx } = context((r) => {
      if (r.offset === '21') stopping.abort();
    });
    const { payload: p, resolved, commits } = payload('orders', [message(20), message(21), message(22)]);
    await eachBatch(sourceStep(ctx), stopping.signal, quiet)(p);
    assert.deepEqual(resolved, ['20', '21']);
    assert.deepEqual(commits, ['22']);
  });

  it('a stop while a retry record waits to be due leaves it unattempted and unresolved', async () => {
    let calls = 0;
    const { ctx } = context(() => {
      calls++;
    });
    const headers = (dueMs: number) => ({
      [DeadLetterHeaders.consumerGroup]: Buffer.from('billing'),
      [DeadLetterHeaders.attempts]: Buffer.from('2'),
      [DeadLetterHeaders.retryDueMs]: Buffer.from(String(dueMs)),
    });
    const stopping = new AbortController();
    const { payload: p, resolved, commits } = payload('orders.retry.1', [message(5, headers(0)), message(6, headers(Date.now() + 60_000))]);
    setTimeout(() => stopping.abort(), 50);
    const start = Date.now();
    await eachBatch(retryStep(ctx, 1, stopping.signal), stopping.signal, quiet)(p);
    assert.ok(Date.now() - start < 1000, 'the wait ended with the stop');
    assert.equal(calls, 1);
    assert.deepEqual(resolved, ['5']);
    assert.deepEqual(commits, ['6']);
  });

  it("a retry consumer skips and commits another group's records", async () => {
    let calls = 0;
    const { ctx } = context(() => {
      calls++;
    });
    const other = { [DeadLetterHeaders.consumerGroup]: Buffer.from('shipping'), [DeadLetterHeaders.attempts]: Buffer.from('2') };
    const { payload: p, resolved, commits } = payload('orders.retry.1', [message(0, other), message(1, other)]);
    await eachBatch(retryStep(ctx, 1, new AbortController().signal), new AbortController().signal, quiet)(p);
    assert.equal(calls, 0);
    assert.deepEqual(resolved, ['0', '1']);
    assert.deepEqual(commits, ['2']);
  });
});
