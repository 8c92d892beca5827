import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeProduceResponse, type ProduceResponse } from '../../../protocol/messages/produce.ts';
import { BrokerMetrics, forEachErrorCode } from '../../../src/observability/metrics.ts';
import { idleMetricsSource } from '../../helpers/metrics-source.ts';
import { parseExposition } from '../../helpers/prometheus.ts';

/** A response-shaped tree: objects and arrays, error codes at any depth, byte fields beside them. */
interface Tree {
  errorCode?: number;
  records?: Buffer;
  children?: Tree[];
}

const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.record(
    {
      errorCode: fc.integer({ min: -1, max: 120 }),
      records: fc.uint8Array({ maxLength: 8 }).map((a) => Buffer.from(a)),
      children: fc.array(tie('node'), { maxLength: 3 }),
    },
    { requiredKeys: [] },
  ),
})).node;

function expectedErrors(t: Tree): number[] {
  const own = t.errorCode !== undefined && t.errorCode !== 0 ? [t.errorCode] : [];
  return [...own, ...(t.children ?? []).flatMap(expectedErrors)];
}

describe('BrokerMetrics', () => {
  it('finds every non-zero error code of a response, at any depth, once each', () => {
    fc.assert(
      fc.property(tree, (t) => {
        const found: number[] = [];
        forEachErrorCode(t, (code) => found.push(code));
        assert.deepEqual(found.sort(), expectedErrors(t).sort());
      }),
    );
  });

  it('counts a response error per partition under the api and error names', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    metrics.attach(idleMetricsSource());
    const response: ProduceResponse = makeProduceResponse({
      responses: [
        {
          name: 't',
          partitionResponses: [0, 1, 2].map((index) => ({
            index,
            errorCode: index === 0 ? Errors.NONE.code : Errors.NOT_LEADER_OR_FOLLOWER.code,
            baseOffset: -1n,
            logAppendTimeMs: -1n,
            logStartOffset: -1n,
            recordErrors: [],
            errorMessage: null,
            currentLeader: { leaderId: -1, leaderEpoch: -1 },
          })),
        },
      ],
    });
    metrics.completed(ApiKey.Produce, performance.now(), response);
    metrics.completed(ApiKey.Produce, performance.now(), null);
    const m = parseExposition((await metrics.exposition(false)).body);
    assert.equal(m.value('sluice_request_errors_total', { api: 'Produce', error: 'NOT_LEADER_OR_FOLLOWER' }), 2);
    assert.equal(m.value('sluice_request_duration_seconds_count', { api: 'Produce' }), 2);
  });

  it("exports prom-client's process and Node.js metrics, all but the per-collection GC histogram", async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    const types = (await metrics.exposition(false)).body
      .split('\n')
      .filter((l) => l.startsWith('# TYPE sluice_process') || l.startsWith('# TYPE sluice_nodejs'));
    for (const name of [
      'sluice_process_cpu_seconds_total',
      'sluice_process_resident_memory_bytes',
      'sluice_process_open_fds',
      'sluice_nodejs_eventloop_lag_seconds',
      'sluice_nodejs_heap_size_used_bytes',
      'sluice_nodejs_heap_space_size_used_bytes',
      'sluice_nodejs_active_handles',
      'sluice_nodejs_version_info',
    ]) {
      assert.ok(
        types.some((t) => t.startsWith(`# TYPE ${name} `)),
        name,
      );
    }
    assert.ok(!types.some((t) => t.includes('gc_duration')));
  });

  it('names counters the same in both formats, whichever was scraped before', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    metrics.attach(idleMetricsSource());
    metrics.appended('t', 3, 300, []);
    const [text, open, again] = await Promise.all([metrics.exposition(false), metrics.exposition(true), metrics.exposition(false)]);
    const sluiceLines = (body: string) => body.split('\n').filter((l) => l.startsWith('sluice_topic'));
    assert.deepEqual(sluiceLines(again.body), sluiceLines(text.body));
    assert.match(open.body, /^sluice_topic_messages_in_total\{topic="t"\} 3$/m);
    assert.match(open.body, /^# TYPE sluice_topic_messages_in counter$/m);
    assert.equal(parseExposition(again.body).value('sluice_topic_messages_in_total', { topic: 't' }), 3);
  });

  it("counts every append and fetch of every topic exactly, and drops a deleted topic's series", async () => {
    const traffic = fc.array(
      fc.record({
        topic: fc.constantFrom('a', 'b', 'c'),
        fetch: fc.boolean(),
        records: fc.integer({ min: 1, max: 500 }),
        bytes: fc.integer({ min: 0, max: 2 ** 30 }),
      }),
      { maxLength: 100 },
    );
    await fc.assert(
      fc.asyncProperty(traffic, fc.constantFrom('a', 'b', 'c'), async (events, deleted) => {
        const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
        let exists = (_: string) => true;
        metrics.attach(idleMetricsSource((topic) => exists(topic)));
        const expected = new Map<string, { messagesIn?: number; bytesIn?: number; bytesOut?: number }>();
        for (const e of events) {
          const t = expected.get(e.topic) ?? {};
          expected.set(e.topic, t);
          if (e.fetch) {
            metrics.fetched(e.topic, e.bytes);
            if (e.bytes > 0) t.bytesOut = (t.bytesOut ?? 0) + e.bytes;
          } else {
            metrics.appended(e.topic, e.records, e.bytes, []);
            t.messagesIn = (t.messagesIn ?? 0) + e.records;
            t.bytesIn = (t.bytesIn ?? 0) + e.bytes;
          }
        }
        const m = parseExposition((await metrics.exposition(false)).body);
        for (const topic of ['a', 'b', 'c']) {
          const t = expected.get(topic) ?? {};
          assert.equal(m.value('sluice_topic_messages_in_total', { topic }), t.messagesIn);
          assert.equal(m.value('sluice_topic_bytes_in_total', { topic }), t.bytesIn);
          assert.equal(m.value('sluice_topic_bytes_out_total', { topic }), t.bytesOut);
        }
        exists = (topic) => topic !== deleted;
        const after = parseExposition((await metrics.exposition(false)).body);
        for (const name of ['sluice_topic_messages_in_total', 'sluice_topic_bytes_in_total', 'sluice_topic_bytes_out_total']) {
          assert.deepEqual(after.all(name, { topic: deleted }), []);
          assert.deepEqual(
            after.all(name).map((s) => s.labels.topic),
            m
              .all(name)
              .map((s) => s.labels.topic)
              .filter((topic) => topic !== deleted),
          );
        }
      }),
    );
  });

  it('keeps per-partition series within metrics.partition.series.max', async () => {
    const partitions = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ topic: 't', partition: i, logEndOffset: i, highWatermark: i, sizeBytes: i }));
    for (const [hosted, expected] of [
      [2, 2],
      [3, 0],
    ] as const) {
      const metrics = new BrokerMetrics({ partitionSeriesMax: 2 });
      metrics.attach({ ...idleMetricsSource(), hostedPartitions: () => partitions(hosted) });
      const m = parseExposition((await metrics.exposition(false)).body);
      assert.equal(m.all('sluice_partition_high_watermark').length, expected);
    }
  });
});
