import assert from 'node:assert/strict';
import { CompressionTypes, Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { DeadLetterHeaders } from '../../../src/tools/dead-letters.ts';
import { consumeRecords } from '../../helpers/consume-records.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { parseExposition, type Exposition } from '../../helpers/prometheus.ts';
import { eventually } from '../../helpers/wait.ts';
import type { ClusterDescription } from '../../../src/client/admin.ts';
import type { GroupDescription, GroupListing } from '../../../src/client/groups.ts';
import type { LagSample } from '../../../src/observability/lag-sampler.ts';

async function scrape(broker: BrokerProcess): Promise<Exposition> {
  const res = await fetch(`${broker.httpUrl}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

async function getJson<T = unknown>(broker: BrokerProcess, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${broker.httpUrl}${path}`);
  return { status: res.status, body: (await res.json()) as T };
}

const sum = (samples: { value: number }[]) => samples.reduce((n, s) => n + s.value, 0);

describe('metrics and health over HTTP (real broker, kafkajs)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;
  let kafka: Kafka;
  let admin: Admin;
  let producer: Producer;

  before(async () => {
    broker = await spawnBroker({ overrides: { 'metrics.lag.sample.interval.ms': 1000 } });
    assert.ok(broker.httpUrl, `no http listener in the ready line:\n${broker.stdout()}`);
    kafka = new Kafka({ clientId: 'metrics-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    admin = kafka.admin();
    await admin.connect();
    producer = kafka.producer();
    await producer.connect();
  });

  after(async () => {
    await producer?.disconnect();
    await admin?.disconnect();
    await broker?.cleanup();
  });

  it('answers the health checks', async () => {
    assert.deepEqual(await getJson(broker, '/health/live'), { status: 200, body: { status: 'live' } });
    assert.deepEqual(await getJson(broker, '/health/ready'), { status: 200, body: { status: 'ready' } });
    assert.equal((await getJson(broker, '/nothing/here')).status, 404);
  });

  it('counts the records and bytes of known traffic, and reports the partitions they made', async () => {
    await admin.createTopics({ topics: [{ topic: 'metered', numPartitions: 3 }], waitForLeaders: true });
    for (let i = 0; i < 6; i++) {
      await producer.send({
        topic: 'metered',
        messages: Array.from({ length: 5 }, (_, j) => ({ key: `k${i}-${j}`, value: 'x'.repeat(100) })),
      });
    }
    const m = await scrape(broker);
    assert.equal(m.value('sluice_topic_messages_in_total', { topic: 'metered' }), 30);
    const leo = m.all('sluice_partition_log_end_offset', { topic: 'metered' });
    assert.equal(leo.length, 3);
    assert.equal(sum(leo), 30);
    assert.equal(sum(m.all('sluice_partition_high_watermark', { topic: 'metered' })), 30);
    // Every byte appended is in the log files: the two counts meet exactly.
    const bytesIn = m.value('sluice_topic_bytes_in_total', { topic: 'metered' })!;
    assert.ok(bytesIn > 30 * 100, `bytes in ${bytesIn}`);
    assert.equal(sum(m.all('sluice_log_size_bytes', { topic: 'metered' })), bytesIn);
    assert.ok(m.value('sluice_request_duration_seconds_count', { api: 'Produce' })! >= 6);
    assert.ok(m.value('sluice_partitions', { state: 'online' })! >= 3);
    assert.equal(m.value('sluice_partitions', { state: 'under_replicated' }), 0);
    assert.equal(m.value('sluice_partitions', { state: 'offline' }), 0);
    assert.ok(m.value('sluice_connections', { listener: 'PLAINTEXT' })! >= 1);
    assert.equal(m.value('sluice_raft_leader'), 1);
    assert.ok(m.value('sluice_raft_commit_offset')! > 0);
    assert.ok(m.value('sluice_process_resident_memory_bytes')! > 0);
    assert.ok(m.all('sluice_nodejs_eventloop_lag_seconds').length > 0);
    assert.equal(m.types.get('sluice_request_duration_seconds'), 'histogram');
  });

  it('counts error codes by api and error', async () => {
    const impatient = kafka.admin({ retry: { retries: 0 } });
    await impatient.connect();
    await assert.rejects(impatient.deleteTopics({ topics: ['no-such-topic'], timeout: 2000 }));
    await impatient.disconnect();
    const m = await scrape(broker);
    assert.ok(m.value('sluice_request_errors_total', { api: 'DeleteTopics', error: 'UNKNOWN_TOPIC_OR_PARTITION' })! >= 1);
  });

  it('reports the lag of a group that stopped halfway, in records and in a time that grows while it is stopped', async () => {
    const consumer = await consumeRecords(kafka, 'halfway', 'metered', 30);
    await eventually('a stable group in the metrics', async () => {
      const m = await scrape(broker);
      return (
        m.value('sluice_consumer_group_state', { group: 'halfway', state: 'Stable' }) === 1 &&
        m.value('sluice_consumer_group_members', { group: 'halfway' }) === 1
      );
    });
    await consumer.disconnect();
    const bytesOut = (await scrape(broker)).value('sluice_topic_bytes_out_total', { topic: 'metered' })!;
    assert.ok(bytesOut >= 30 * 100, `bytes out ${bytesOut}`);

    const producedAt = Date.now();
    await producer.send({ topic: 'metered', messages: Array.from({ length: 30 }, (_, i) => ({ key: `late-${i}`, value: 'y' })) });
    let first: Exposition | undefined;
    await eventually('lag of 30 records sampled', async () => {
      first = await scrape(broker);
      return sum(first.all('sluice_consumer_group_lag', { group: 'halfway' })) === 30;
    });
    assert.equal(first!.value('sluice_consumer_group_state', { group: 'halfway', state: 'Empty' }), 1);
    assert.equal(first!.value('sluice_consumer_group_members', { group: 'halfway' }), 0);
    const ages = first!.all('sluice_consumer_group_lag_seconds', { group: 'halfway' });
    const oldest = Math.max(...ages.map((s) => s.value));
    assert.ok(oldest > 0 && oldest <= (Date.now() - producedAt) / 1000 + 1, `lag seconds ${oldest}`);

    await new Promise((r) => setTimeout(r, 1500));
    const later = await scrape(broker);
    const olderNow = Math.max(...later.all('sluice_consumer_group_lag_seconds', { group: 'halfway' }).map((s) => s.value));
    assert.ok(olderNow >= oldest + 1.2, `lag seconds went from ${oldest} to ${olderNow}`);

    // The admin API reports the same lag as the metrics.
    const described = await getJson<GroupDescription>(broker, '/api/v1/groups/halfway');
    assert.equal(described.status, 200);
    assert.equal(described.body.state, 'Empty');
    assert.equal(
      described.body.partitions.reduce((n, p) => n + (p.lag ?? 0), 0),
      30,
    );
    const history = await getJson<{ samples: LagSample[] }>(broker, '/api/v1/groups/halfway/lag-history');
    assert.ok(history.body.samples.length >= 1);
    const lastSample = history.body.samples.at(-1)!;
    assert.equal(
      lastSample.partitions.reduce((n, p) => n + p.lag, 0),
      30,
    );

    // Caught up again: lag and its age go to 0.
    const catchUp = await consumeRecords(kafka, 'halfway', 'metered', 30);
    await catchUp.disconnect();
    await eventually('lag back to 0', async () => {
      const m = await scrape(broker);
      const lag = m.all('sluice_consumer_group_lag', { group: 'halfway' });
      return lag.length === 3 && sum(lag) === 0 && sum(m.all('sluice_consumer_group_lag_seconds', { group: 'halfway' })) === 0;
    });
  });

  it('counts the records written to retry and dead-letter topics, by source topic and group', async () => {
    await admin.createTopics({
      topics: [
        { topic: 'orders.retry.1', numPartitions: 2 },
        { topic: 'orders.dlq', numPartitions: 2 },
      ],
      waitForLeaders: true,
    });
    const failed = (group: string) => ({
      [DeadLetterHeaders.originalTopic]: 'orders',
      [DeadLetterHeaders.consumerGroup]: group,
      [DeadLetterHeaders.attempts]: '2',
    });
    await producer.send({
      topic: 'orders.retry.1',
      compression: CompressionTypes.GZIP,
      messages: [
        { key: 'a', value: 'x', headers: failed('billing') },
        { key: 'b', value: 'x', headers: failed('billing') },
        { key: 'c', value: 'x', headers: failed('shipping') },
      ],
    });
    await producer.send({
      topic: 'orders.dlq',
      messages: [
        { key: 'a', value: 'x', headers: failed('billing') },
        { key: 'b', value: 'x', headers: { ...failed('billing'), [DeadLetterHeaders.originalTopic]: 'refunds' } },
      ],
    });
    const m = await scrape(broker);
    assert.equal(m.value('sluice_retry_records_total', { topic: 'orders.retry.1', source_topic: 'orders', group: 'billing' }), 2);
    assert.equal(m.value('sluice_retry_records_total', { topic: 'orders.retry.1', source_topic: 'orders', group: 'shipping' }), 1);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'orders' }), 1);
    assert.equal(m.value('sluice_dlq_records_total', { topic: 'orders.dlq', source_topic: 'refunds' }), 1);
    assert.equal(m.all('sluice_dlq_records_total', { topic: 'metered' }).length, 0);
  });

  it('serves OpenMetrics when asked', async () => {
    const res = await fetch(`${broker.httpUrl}/metrics`, { headers: { accept: 'application/openmetrics-text; version=1.0.0' } });
    assert.match(res.headers.get('content-type') ?? '', /^application\/openmetrics-text; version=1\.0\.0/);
    const text = await res.text();
    assert.ok(text.endsWith('# EOF\n'), text.slice(-200));
    assert.match(text, /^sluice_topic_messages_in_total\{topic="metered"\} \d+/m);
    // The Prometheus format afterwards names the series as before.
    assert.ok((await scrape(broker)).value('sluice_topic_messages_in_total', { topic: 'metered' })! >= 60);
  });

  it('drops the series of a deleted topic', async () => {
    await admin.createTopics({ topics: [{ topic: 'short-lived', numPartitions: 1 }], waitForLeaders: true });
    await producer.send({ topic: 'short-lived', messages: [{ value: 'a' }] });
    const before = await scrape(broker);
    assert.equal(before.value('sluice_topic_messages_in_total', { topic: 'short-lived' }), 1);
    await admin.deleteTopics({ topics: ['short-lived'] });
    await eventually('no series of the deleted topic', async () => {
      const m = await scrape(broker);
      return m.samples.every((s) => s.labels.topic !== 'short-lived');
    });
  });

  it('describes the cluster over the admin API', async () => {
    const { status, body } = await getJson<ClusterDescription>(broker, '/api/v1/cluster');
    assert.equal(status, 200);
    assert.deepEqual(
      body.brokers.map((b: { nodeId: number }) => b.nodeId),
      [1],
    );
    assert.equal(body.controllerId, 1);
    assert.equal(body.quorum?.leaderId, 1);
    assert.equal(body.quorum?.voters.length, 1);
    const groups = await getJson<{ groups: GroupListing[] }>(broker, '/api/v1/groups');
    assert.ok(groups.body.groups.some((g: { groupId: string }) => g.groupId === 'halfway'));
    assert.equal((await getJson(broker, '/api/v1/groups/never-seen')).status, 404);
  });
});

describe('metrics.partition.series.max', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;

  before(async () => {
    broker = await spawnBroker({ overrides: { 'metrics.partition.series.max': 2 } });
  });

  after(async () => {
    await broker?.cleanup();
  });

  it('leaves per-partition series out above the limit and keeps the broker-wide ones', async () => {
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'wide', numPartitions: 3 }], waitForLeaders: true });
    await admin.disconnect();
    const m = await scrape(broker);
    assert.equal(m.all('sluice_partition_log_end_offset').length, 0);
    assert.equal(m.all('sluice_log_size_bytes').length, 0);
    assert.ok(m.value('sluice_partitions', { state: 'online' })! >= 3);
  });

  it('is off without an HTTP listener', async () => {
    const quiet = await spawnBroker({ httpPort: -1 });
    try {
      assert.equal(quiet.httpUrl, null);
    } finally {
      await quiet.cleanup();
    }
  });
});
