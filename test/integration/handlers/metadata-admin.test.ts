import assert from 'node:assert/strict';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

// kafkajs admin against the real `sluice` process: topic lifecycle, configs, auto-creation
// and restarts (clean and SIGKILL) that must bring every topic back from the metadata log.

function adminFor(broker: BrokerProcess): Admin {
  return new Kafka({
    clientId: 'metadata-admin-test',
    brokers: [broker.bootstrap],
    logLevel: logLevel.NOTHING,
    retry: { retries: 3 },
  }).admin();
}

describe('metadata and admin APIs through kafkajs', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let admin: Admin;

  before(async () => {
    broker = await spawnBroker({ overrides: { 'num.partitions': 4 } });
    admin = adminFor(broker);
    await admin.connect();
  });

  after(async () => {
    await admin?.disconnect();
    await broker?.cleanup();
  });

  it('creates topics with configs and describes them in Metadata', async () => {
    const created = await admin.createTopics({
      topics: [{ topic: 'orders', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '3600000' }] }, { topic: 'defaults' }],
    });
    assert.equal(created, true);
    const metadata = await admin.fetchTopicMetadata({ topics: ['orders', 'defaults'] });
    const orders = metadata.topics.find((t) => t.name === 'orders')!;
    assert.equal(orders.partitions.length, 3);
    for (const p of orders.partitions) {
      assert.equal(p.leader, 1);
      assert.deepEqual(p.replicas, [1]);
      assert.deepEqual(p.isr, [1]);
      assert.equal(p.partitionErrorCode, 0);
    }
    assert.equal(metadata.topics.find((t) => t.name === 'defaults')!.partitions.length, 4, 'num.partitions applies');
    const topics = await admin.listTopics();
    assert.ok(topics.includes('orders') && topics.includes('defaults'));
  });

  it('answers a second create of the same topic with TOPIC_ALREADY_EXISTS', async () => {
    await assert.rejects(
      admin.createTopics({ topics: [{ topic: 'orders', numPartitions: 1 }] }).then(async (ok) => {
        // kafkajs resolves false when every topic already exists.
        if (!ok) throw Object.assign(new Error('exists'), { type: 'TOPIC_ALREADY_EXISTS' });
      }),
      (err: { type?: string; errors?: { type: string }[] }) =>
        err.type === 'TOPIC_ALREADY_EXISTS' || err.errors?.[0]?.type === 'TOPIC_ALREADY_EXISTS',
    );
  });

  it('refuses an illegal name, a bad config and a replication factor above the live brokers', async () => {
    const attempt = (topic: object) => admin.createTopics({ topics: [topic as { topic: string }] });
    await assert.rejects(
      attempt({ topic: 'bad/name' }),
      (err: { errors?: { type: string }[] }) => err.errors?.[0]?.type === 'INVALID_TOPIC_EXCEPTION',
    );
    await assert.rejects(
      attempt({ topic: 'bad-config', configEntries: [{ name: 'retention.ms', value: 'x' }] }),
      (err: { errors?: { type: string }[] }) => err.errors?.[0]?.type === 'INVALID_CONFIG',
    );
    await assert.rejects(
      attempt({ topic: 'bad-rf', replicationFactor: 3 }),
      (err: { errors?: { type: string }[] }) => err.errors?.[0]?.type === 'INVALID_REPLICATION_FACTOR',
    );
  });

  it('describes every topic config with its source, and alters them', async () => {
    const describe = async () => {
      const { resources } = await admin.describeConfigs({ resources: [{ type: 2, name: 'orders' }], includeSynonyms: true });
      return new Map(resources[0]!.configEntries.map((e) => [e.configName, e]));
    };
    let configs = await describe();
    assert.equal(configs.get('retention.ms')!.configValue, '3600000');
    assert.equal(configs.get('retention.ms')!.configSource, 1, 'DYNAMIC_TOPIC_CONFIG');
    assert.equal(configs.get('cleanup.policy')!.configValue, 'delete');
    assert.equal(configs.get('cleanup.policy')!.configSource, 5, 'DEFAULT_CONFIG');
    assert.ok(configs.size >= 20, `every topic config listed (${configs.size})`);
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: 2, name: 'orders', configEntries: [{ name: 'segment.ms', value: '60000' }] }],
    });
    configs = await describe();
    assert.equal(configs.get('segment.ms')!.configValue, '60000');
    assert.equal(configs.get('retention.ms')!.configSource, 5, 'legacy AlterConfigs replaced the whole set');
  });

  it('describes the broker resource with static and default sources', async () => {
    const { resources } = await admin.describeConfigs({ resources: [{ type: 4, name: '1' }], includeSynonyms: false });
    const configs = new Map(resources[0]!.configEntries.map((e) => [e.configName, e]));
    assert.equal(configs.get('num.partitions')!.configValue, '4');
    assert.equal(configs.get('num.partitions')!.configSource, 4, 'STATIC_BROKER_CONFIG');
    assert.equal(configs.get('auto.create.topics.enable')!.configValue, 'true');
  });

  it('adds partitions and deletes topics', async () => {
    await admin.createPartitions({ topicPartitions: [{ topic: 'orders', count: 5 }] });
    const metadata = await admin.fetchTopicMetadata({ topics: ['orders'] });
    assert.equal(metadata.topics[0]!.partitions.length, 5);
    await assert.rejects(
      admin.createPartitions({ topicPartitions: [{ topic: 'orders', count: 2 }] }),
      /INVALID_PARTITIONS|Number of partitions is invalid/,
    );
    await admin.deleteTopics({ topics: ['defaults'] });
    assert.ok(!(await admin.listTopics()).includes('defaults'));
  });

  it('auto-creates a topic a producer writes to, with num.partitions partitions', async () => {
    const kafka = new Kafka({ clientId: 'auto-create', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ allowAutoTopicCreation: true });
    await producer.connect();
    try {
      await producer.send({ topic: 'auto-made', messages: [{ value: 'x' }] });
    } finally {
      await producer.disconnect();
    }
    const metadata = await admin.fetchTopicMetadata({ topics: ['auto-made'] });
    assert.equal(metadata.topics[0]!.partitions.length, 4);
  });

  it('brings back topics, partitions and configs after SIGTERM and after SIGKILL', async () => {
    const before = await admin.fetchTopicMetadata();
    const shape = (m: typeof before) =>
      m.topics.map((t) => [t.name, t.partitions.length] as const).sort((a, b) => a[0].localeCompare(b[0]));
    await admin.disconnect();
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      await broker.stop(signal);
      broker = await broker.restart();
      admin = adminFor(broker);
      await admin.connect();
      assert.deepEqual(shape(await admin.fetchTopicMetadata()), shape(before), `after ${signal}`);
      const { resources } = await admin.describeConfigs({
        resources: [{ type: 2, name: 'orders', configNames: ['segment.ms'] }],
        includeSynonyms: false,
      });
      assert.equal(resources[0]!.configEntries[0]!.configValue, '60000', `config after ${signal}`);
      if (signal === 'SIGTERM') await admin.disconnect();
    }
  });
});
