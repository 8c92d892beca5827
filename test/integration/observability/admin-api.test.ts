import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { runApplyCommand } from '../../../src/cli/apply.ts';
import type { GroupDescription } from '../../../src/client/groups.ts';
import type { TopicDescription, TopicListing } from '../../../src/client/topics.ts';
import type { TopicTrafficTotals } from '../../../src/observability/metrics.ts';
import { consumeRecords } from '../../helpers/consume-records.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { runCaptured } from '../../helpers/cli-targets.ts';

interface Reply<T> {
  status: number;
  body: T;
}

interface ShownRecord {
  offset: number;
  timestamp: number;
  key: unknown;
  value: unknown;
  headers: { key: string; value: unknown }[];
}

interface Browse {
  highWatermark: number;
  logStartOffset: number;
  nextOffset: number;
  records: ShownRecord[];
}

describe('admin HTTP API (real broker; what it shows checked with kafkajs)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;

  const call = async <T = { error?: string; kafkaError?: string }>(method: string, path: string, body?: unknown): Promise<Reply<T>> => {
    const res = await fetch(`${broker.httpUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };

  before(async () => {
    broker = await spawnBroker();
  });

  after(async () => {
    await broker?.cleanup();
  });

  it('creates, describes, reconfigures and deletes a topic', async () => {
    const created = await call<TopicDescription>('POST', '/api/v1/topics', {
      name: 'orders',
      partitions: 3,
      replicationFactor: 1,
      configs: { 'retention.ms': 3_600_000 },
    });
    assert.equal(created.status, 201);
    assert.equal(created.body.partitionCount, 3);
    assert.equal(created.body.configs['retention.ms'], '3600000');
    assert.equal((await call('POST', '/api/v1/topics', { name: 'orders', partitions: 1 })).status, 409);

    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const seen = await admin.fetchTopicMetadata({ topics: ['orders'] });
      assert.equal(seen.topics[0]?.partitions.length, 3);

      const listed = await call<{ topics: TopicListing[] }>('GET', '/api/v1/topics');
      assert.deepEqual(
        listed.body.topics.map((t) => t.name),
        ['orders'],
      );

      const altered = await call<TopicDescription>('PATCH', '/api/v1/topics/orders/configs', {
        set: { 'cleanup.policy': 'compact' },
        delete: ['retention.ms'],
      });
      assert.equal(altered.status, 200);
      assert.deepEqual(altered.body.configs, { 'cleanup.policy': 'compact' });
      const configs = await admin.describeConfigs({ resources: [{ type: 2, name: 'orders' }], includeSynonyms: false });
      assert.equal(configs.resources[0]?.configEntries.find((c) => c.configName === 'cleanup.policy')?.configValue, 'compact');

      assert.deepEqual((await call('DELETE', '/api/v1/topics/orders')).body, { deleted: ['orders'] });
      assert.deepEqual(await admin.listTopics(), []);
    } finally {
      await admin.disconnect();
    }
    assert.equal((await call('GET', '/api/v1/topics/orders')).status, 404);
    assert.equal((await call('DELETE', '/api/v1/topics/orders')).status, 404);
  });

  it('produces records and browses them from an offset or a timestamp, as text, JSON or hex', async () => {
    await call('POST', '/api/v1/topics', { name: 'events', partitions: 1 });
    const first = await call<{ partition: number; offset: number }>('POST', '/api/v1/topics/events/records', {
      key: 'k1',
      value: 'hello',
      headers: { source: 'test' },
    });
    assert.equal(first.status, 201);
    assert.deepEqual(first.body, { topic: 'events', partition: 0, offset: 0 });
    const between = Date.now();
    await new Promise((r) => setTimeout(r, 20));
    await call('POST', '/api/v1/topics/events/records', { key: 'k2', value: { amount: 12, currency: 'EUR' }, format: 'json' });
    await call('POST', '/api/v1/topics/events/records', { value: 'ff00', format: 'hex' });

    // What a Kafka consumer reads is what was produced.
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({ groupId: 'browse-check' });
    await consumer.connect();
    await consumer.subscribe({ topic: 'events', fromBeginning: true });
    const values: (string | undefined)[] = [];
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value?.toString('hex'));
          if (values.length === 3) resolve();
        },
      });
    });
    await consumer.disconnect();
    const withInternal = await call<{ topics: TopicListing[] }>('GET', '/api/v1/topics?internal=true');
    assert.ok(withInternal.body.topics.some((t) => t.name === '__consumer_offsets' && t.internal));
    assert.deepEqual(values, [Buffer.from('hello').toString('hex'), Buffer.from('{"amount":12,"currency":"EUR"}').toString('hex'), 'ff00']);

    const text = await call<Browse>('GET', '/api/v1/topics/events/partitions/0/records');
    assert.equal(text.status, 200);
    assert.equal(text.body.highWatermark, 3);
    assert.equal(text.body.nextOffset, 3);
    assert.deepEqual(
      text.body.records.map((r) => [r.offset, r.key, r.value]),
      [
        [0, 'k1', 'hello'],
        [1, 'k2', '{"amount":12,"currency":"EUR"}'],
        [2, null, Buffer.from('ff00', 'hex').toString('utf8')],
      ],
    );
    assert.deepEqual(text.body.records[0]!.headers, [{ key: 'source', value: 'test' }]);

    const json = await call<Browse>('GET', '/api/v1/topics/events/partitions/0/records?offset=1&limit=1&format=json');
    assert.deepEqual(
      json.body.records.map((r) => r.value),
      [{ amount: 12, currency: 'EUR' }],
    );
    assert.equal(json.body.nextOffset, 2);

    const hex = await call<Browse>('GET', '/api/v1/topics/events/partitions/0/records?offset=2&format=hex');
    assert.deepEqual(
      hex.body.records.map((r) => r.value),
      ['ff00'],
    );

    const since = await call<Browse>('GET', `/api/v1/topics/events/partitions/0/records?timestamp=${new Date(between).toISOString()}`);
    assert.deepEqual(
      since.body.records.map((r) => r.offset),
      [1, 2],
    );
    const future = await call<Browse>('GET', `/api/v1/topics/events/partitions/0/records?timestamp=${Date.now() + 3_600_000}`);
    assert.deepEqual(future.body.records, []);
    assert.equal(future.body.nextOffset, 3);

    const traffic = await call<{ topics: TopicTrafficTotals[] }>('GET', '/api/v1/traffic');
    const events = traffic.body.topics.find((t) => t.topic === 'events');
    assert.equal(events?.messagesIn, 3);
    assert.ok(events!.bytesOut > 0);
  });

  it('resets the offsets of a group (planned, then executed) and deletes the group, refusing both while it has members', async () => {
    await call('POST', '/api/v1/topics', { name: 'ledger', partitions: 2 });
    for (let i = 0; i < 10; i++) await call('POST', '/api/v1/topics/ledger/records', { value: `entry ${i}`, partition: i % 2 });
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const consumer = await consumeRecords(kafka, 'auditors', 'ledger', 10);
    const active = await call('POST', '/api/v1/groups/auditors/offsets/reset', { to: 'earliest' });
    assert.equal(active.status, 409);
    assert.match(active.body.error ?? '', /can only be reset if the group 'auditors' is inactive, but the current state is Stable/);
    assert.equal((await call('DELETE', '/api/v1/groups/auditors')).body.kafkaError, 'NON_EMPTY_GROUP');
    await consumer.disconnect();

    type Reset = { executed: boolean; partitions: { topic: string; partition: number; currentOffset: number; newOffset: number }[] };
    const committed = async () =>
      (await call<GroupDescription>('GET', '/api/v1/groups/auditors')).body.partitions.map((p) => p.committedOffset);
    const plan = await call<Reset>('POST', '/api/v1/groups/auditors/offsets/reset', { to: { shiftBy: -2 } });
    assert.equal(plan.status, 200);
    assert.equal(plan.body.executed, false);
    assert.deepEqual(
      plan.body.partitions.map((p) => [p.partition, p.currentOffset, p.newOffset]),
      [
        [0, 5, 3],
        [1, 5, 3],
      ],
    );
    assert.deepEqual(await committed(), [5, 5]);
    const done = await call<Reset>('POST', '/api/v1/groups/auditors/offsets/reset', {
      to: 'earliest',
      topics: [{ topic: 'ledger', partitions: [1] }],
      execute: true,
    });
    assert.equal(done.body.executed, true);
    assert.deepEqual(await committed(), [5, 0]);
    const admin = kafka.admin();
    await admin.connect();
    const seenByKafkajs = await admin.fetchOffsets({ groupId: 'auditors', topics: ['ledger'] });
    await admin.disconnect();
    assert.deepEqual(seenByKafkajs[0]!.partitions.map((p) => p.offset).sort(), ['0', '5']);
    assert.equal((await call('POST', '/api/v1/groups/auditors/offsets/reset', { to: 'sideways' })).status, 400);

    assert.deepEqual((await call('DELETE', '/api/v1/groups/auditors')).body, { deleted: ['auditors'] });
    assert.equal((await call('GET', '/api/v1/groups/auditors')).status, 404);
  });

  it('answers mistakes with 4xx and a message, and serves on', async () => {
    assert.equal((await call('POST', '/api/v1/topics', { partitions: 1 })).status, 400);
    assert.equal((await call('POST', '/api/v1/topics', [1, 2])).status, 400);
    assert.equal((await call('GET', '/api/v1/topics/events/partitions/x/records')).status, 400);
    assert.equal((await call('GET', '/api/v1/topics/events/partitions/0/records?format=yaml')).status, 400);
    assert.equal((await call('GET', '/api/v1/topics/events/partitions/0/records?offset=1&timestamp=5')).status, 400);
    const unknown = await call('GET', '/api/v1/topics/events/partitions/7/records?offset=0');
    assert.equal(unknown.status, 404);
    assert.equal((await call('POST', '/api/v1/topics/nowhere/records', { value: 'x' })).status, 404);
    assert.equal((await call('POST', '/api/v1/topics/events/records', { value: 'zz', format: 'hex' })).status, 400);
    const bad = await call('PATCH', '/api/v1/topics/events/configs', { set: { 'cleanup.policy': 'sideways' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.kafkaError, 'INVALID_CONFIG');
    assert.equal((await call('GET', '/health/ready')).status, 200);
  });

  it('shows with a topic the policy sluice apply stored for it, null for a topic apply does not manage', async () => {
    const policy = {
      name: 'described',
      partitions: 1,
      key_schema: 'order_id',
      value_schema: 'order_event_v2',
      delivery_contract: 'at_least_once',
    };
    const dir = await mkdtemp(join(tmpdir(), 'sluice-admin-api-'));
    try {
      await writeFile(join(dir, 'policy.json'), JSON.stringify({ topic_policy: policy }));
      const applied = await runCaptured((io) =>
        runApplyCommand(['-f', join(dir, 'policy.json'), '--bootstrap-server', broker.bootstrap], io),
      );
      assert.equal(applied.code, 0, applied.stderr);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const described = await call<TopicDescription & { policy: unknown }>('GET', '/api/v1/topics/described');
    assert.equal(described.status, 200);
    assert.deepEqual(described.body.policy, policy);
    assert.equal((await call<{ policy: unknown }>('GET', '/api/v1/topics/events')).body.policy, null);
  });
});
