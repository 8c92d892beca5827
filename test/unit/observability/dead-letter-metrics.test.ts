import assert from 'node:assert/strict';
import { CompressionType } from '../../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import type { RecordHeader } from '../../../protocol/records/record.ts';
import { DEAD_LETTER_SERIES_MAX, OVERFLOW_LABEL } from '../../../src/observability/dead-letter-metrics.ts';
import { BrokerMetrics } from '../../../src/observability/metrics.ts';
import { idleMetricsSource } from '../../helpers/metrics-source.ts';
import { DeadLetterHeaders } from '../../../src/tools/dead-letters.ts';
import { parseExposition } from '../../helpers/prometheus.ts';

const headers = (fields: Record<string, string>): RecordHeader[] =>
  Object.entries(fields).map(([key, value]) => ({ key, value: Buffer.from(value) }));

function batch(records: Record<string, string>[], compression = CompressionType.None): Promise<Buffer> {
  return buildRecordBatch(
    { compression },
    records.map((h) => ({ timestamp: 1, value: Buffer.from('v'), headers: headers(h) })),
  );
}

async function scrape(metrics: BrokerMetrics) {
  return parseExposition((await metrics.exposition(false)).body);
}

describe('dead-letter and retry metrics', () => {
  it('counts dead letters by source topic and retries by source topic and group, from the headers', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    metrics.attach(idleMetricsSource());
    const dead = await batch([
      { [DeadLetterHeaders.originalTopic]: 'orders' },
      { [DeadLetterHeaders.originalTopic]: 'orders' },
      { [DeadLetterHeaders.originalTopic]: 'payments' },
    ]);
    metrics.appended('orders.dlq', 3, dead.length, [dead]);
    const retried = await batch(
      [
        { [DeadLetterHeaders.originalTopic]: 'orders', [DeadLetterHeaders.consumerGroup]: 'billing' },
        { [DeadLetterHeaders.originalTopic]: 'orders', [DeadLetterHeaders.consumerGroup]: 'shipping' },
        { [DeadLetterHeaders.originalTopic]: 'orders', [DeadLetterHeaders.consumerGroup]: 'billing' },
      ],
      CompressionType.Gzip,
    );
    metrics.appended('orders.retry.2', 3, retried.length, [retried]);
    const m = await scrape(metrics);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'orders' }), 2);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'payments' }), 1);
    assert.equal(m.value('sluice_retry_records_total', { topic: 'orders.retry.2', source_topic: 'orders', group: 'billing' }), 2);
    assert.equal(m.value('sluice_retry_records_total', { topic: 'orders.retry.2', source_topic: 'orders', group: 'shipping' }), 1);
  });

  it('takes the source topic from the name when the header is missing, and reads no other topic', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    metrics.attach(idleMetricsSource());
    const plain = await batch([{}, {}]);
    metrics.appended('audit.dlq', 2, plain.length, [plain]);
    metrics.appended('audit', 2, plain.length, [plain]);
    metrics.appended('audit.retry.x', 2, plain.length, [plain]);
    const m = await scrape(metrics);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'audit.dlq', source_topic: 'audit' }), 2);
    assert.deepEqual(
      m.all('sluice_dlq_records_total').map((s) => s.labels.topic),
      ['audit.dlq'],
    );
    assert.equal(m.all('sluice_retry_records_total').length, 0, 'audit.retry.x is not a retry topic by the naming');
  });

  it('copies the batches it reads later: the request buffer may be reused at once', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    metrics.attach(idleMetricsSource());
    const dead = await batch([{ [DeadLetterHeaders.originalTopic]: 'orders' }]);
    metrics.appended('orders.dlq', 1, dead.length, [dead]);
    dead.fill(0);
    const m = await scrape(metrics);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'orders' }), 1);
  });

  it('bounds its series: past the bound new source topics count under one overflow label', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    metrics.attach(idleMetricsSource());
    const records = Array.from({ length: DEAD_LETTER_SERIES_MAX + 5 }, (_, i) => ({ [DeadLetterHeaders.originalTopic]: `s${i}` }));
    const dead = await batch(records);
    metrics.appended('many.dlq', records.length, dead.length, [dead]);
    const m = await scrape(metrics);
    const samples = m.all('sluice_dlq_records_total');
    assert.equal(samples.length, DEAD_LETTER_SERIES_MAX + 1);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'many.dlq', source_topic: OVERFLOW_LABEL }), 5);
    assert.equal(
      samples.reduce((n, s) => n + s.value, 0),
      records.length,
      'every record is counted once',
    );
  });

  it('drops the series of a deleted dead-letter topic', async () => {
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10 });
    let exists = true;
    metrics.attach(idleMetricsSource(() => exists));
    const dead = await batch([{ [DeadLetterHeaders.originalTopic]: 'orders' }]);
    metrics.appended('orders.dlq', 1, dead.length, [dead]);
    assert.equal((await scrape(metrics)).all('sluice_dlq_records_total').length, 1);
    exists = false;
    assert.equal((await scrape(metrics)).all('sluice_dlq_records_total').length, 0);
    exists = true;
    metrics.appended('orders.dlq', 1, dead.length, [dead]);
    assert.equal((await scrape(metrics)).value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'orders' }), 1);
  });

  it('reports a batch it cannot read and counts on', async () => {
    const errors: string[] = [];
    const metrics = new BrokerMetrics({ partitionSeriesMax: 10, onCountError: (topic) => errors.push(topic) });
    metrics.attach(idleMetricsSource());
    const dead = await batch([{ [DeadLetterHeaders.originalTopic]: 'orders' }], CompressionType.Gzip);
    const broken = Buffer.from(dead);
    broken.fill(0xff, 61);
    metrics.appended('orders.dlq', 1, broken.length, [broken]);
    metrics.appended('orders.dlq', 1, dead.length, [dead]);
    const m = await scrape(metrics);
    assert.deepEqual(errors, ['orders.dlq']);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'orders' }), 1);
  });
});
