import assert from 'node:assert/strict';
import { Admin } from '@platformatic/kafka';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

// @platformatic/kafka's admin (newest API versions: CreateTopics v7, Metadata v12,
// DescribeConfigs v4, IncrementalAlterConfigs v1, topic ids) against the real process.

describe('metadata and admin APIs through @platformatic/kafka', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let admin: Admin;

  before(async () => {
    broker = await spawnBroker();
    admin = new Admin({ clientId: 'metadata-admin-platformatic', bootstrapBrokers: [broker.bootstrap], retries: 2 });
  });

  after(async () => {
    await admin?.close();
    await broker?.cleanup();
  });

  it('creates a topic and returns its id, partitions and configs', async () => {
    const [created] = await admin.createTopics({
      topics: ['pt-orders'],
      partitions: 3,
      replicas: 1,
      configs: [{ name: 'cleanup.policy', value: 'compact' }],
    });
    assert.equal(created!.name, 'pt-orders');
    assert.equal(created!.partitions, 3);
    assert.match(created!.id, /[0-9a-f-]{36}|[A-Za-z0-9_-]{22}/);
    assert.equal(created!.configuration['cleanup.policy'], 'compact');
    const metadata = await admin.metadata({ topics: ['pt-orders'] });
    const topic = metadata.topics.get('pt-orders')!;
    assert.equal(topic.partitionsCount, 3);
    assert.deepEqual(
      topic.partitions.map((p) => [p.leader, p.leaderEpoch, p.replicas, p.isr]),
      [
        [1, 0, [1], [1]],
        [1, 0, [1], [1]],
        [1, 0, [1], [1]],
      ],
    );
    assert.equal(metadata.controllerId, 1);
    assert.ok((await admin.listTopics()).includes('pt-orders'));
  });

  it('alters configs incrementally and describes them', async () => {
    await admin.incrementalAlterConfigs({
      resources: [{ resourceType: 2, resourceName: 'pt-orders', configs: [{ name: 'retention.ms', configOperation: 0, value: '120000' }] }],
    });
    const [described] = await admin.describeConfigs({
      resources: [{ resourceType: 2, resourceName: 'pt-orders', configurationKeys: ['retention.ms', 'cleanup.policy'] }],
      includeDocumentation: true,
    });
    const byName = new Map(described!.configs.map((c) => [c.name, c]));
    assert.equal(byName.get('retention.ms')!.value, '120000');
    assert.equal(byName.get('cleanup.policy')!.value, 'compact');
    assert.ok(byName.get('retention.ms')!.documentation);
  });

  it('grows and deletes the topic', async () => {
    await admin.createPartitions({ topics: [{ name: 'pt-orders', count: 4, assignments: [] }] });
    assert.equal((await admin.metadata({ topics: ['pt-orders'], forceUpdate: true })).topics.get('pt-orders')!.partitionsCount, 4);
    await admin.deleteTopics({ topics: ['pt-orders'] });
    assert.ok(!(await admin.listTopics()).includes('pt-orders'));
  });
});
