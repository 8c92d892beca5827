import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { AlterConfigOp, QuorumController, topicNameError } from '../../../src/metadata/controller.ts';
import { MetadataImage, imageToRecords } from '../../../src/metadata/image.ts';
import { decodeMetadataRecord, encodeMetadataRecord } from '../../../src/metadata/record-codec.ts';
import { ConfigResourceType } from '../../../src/metadata/records.ts';
import { registerBrokers } from '../../helpers/broker-registration.ts';
import { FakeClock } from './fake-cluster.ts';
import { ImageSink } from './image-sink.ts';

/** An active controller with `ids` registered and unfenced; on a clock that never moves, their sessions never expire. */
async function controllerWithBrokers(ids: number[]): Promise<{ sink: ImageSink; controller: QuorumController }> {
  const sink = new ImageSink();
  const controller = new QuorumController(sink, { defaultNumPartitions: () => 3, defaultReplicationFactor: () => 1 }, () => 0, {
    clock: new FakeClock(),
  });
  await controller.activate();
  await registerBrokers(controller, () => sink.image(), ids);
  return { sink, controller };
}

const topic = (name: string, fields: Partial<{ numPartitions: number; replicationFactor: number }> = {}) => ({
  name,
  numPartitions: fields.numPartitions ?? -1,
  replicationFactor: fields.replicationFactor ?? -1,
  assignments: [],
  configs: [],
});

describe('metadata image and controller', () => {
  it('applies Kafka’s topic name rules', () => {
    assert.equal(topicNameError('orders.v1-x_y'), null);
    assert.match(topicNameError('')!, /empty/);
    assert.match(topicNameError('..')!, /"\." or "\.\."/);
    assert.match(topicNameError('a'.repeat(250))!, /249/);
    assert.equal(topicNameError('a'.repeat(249)), null);
    assert.match(topicNameError('bad/name')!, /illegal/);
  });

  it('registers and unfences brokers and writes metadata.version first', async () => {
    const { sink } = await controllerWithBrokers([1, 2]);
    assert.deepEqual(
      sink
        .records()
        .slice(0, 2)
        .map((r) => r.type),
      ['NoOpRecord', 'FeatureLevelRecord'],
    );
    assert.equal(sink.current.features.get('metadata.version'), 23);
    assert.equal(sink.current.features.get('eligible.leader.replicas.version'), 1, 'ELR on, as Kafka 4.1 starts a cluster');
    assert.deepEqual(
      sink.current.liveBrokers().map((b) => b.id),
      [1, 2],
    );
    assert.equal(sink.current.brokers.get(2)!.endpoints[0]!.port, 9002);
  });

  it('creates a topic as a TopicRecord, PartitionRecords and ConfigRecords', async () => {
    const { sink, controller } = await controllerWithBrokers([1, 2, 3]);
    const [result] = await controller.createTopics(
      [{ ...topic('orders', { numPartitions: 6, replicationFactor: 2 }), configs: [{ name: 'retention.ms', value: '1000' }] }],
      false,
    );
    assert.equal(result!.errorCode, Errors.NONE.code);
    assert.notEqual(result!.topicId, ZERO_UUID);
    const types = sink.written.at(-1)!.map((r) => r.type);
    assert.deepEqual(types, ['TopicRecord', ...Array(6).fill('PartitionRecord'), 'ConfigRecord']);
    const image = sink.current;
    const t = image.topic('orders')!;
    assert.equal(t.id, result!.topicId);
    assert.equal(image.topicById(t.id), t);
    assert.equal(t.partitions.size, 6);
    const leaders = new Set<number>();
    for (const p of t.partitions.values()) {
      assert.equal(p.replicas.length, 2);
      assert.deepEqual(p.isr, p.replicas);
      assert.equal(p.leader, p.replicas[0]);
      assert.equal(p.leaderEpoch, 0);
      leaders.add(p.leader);
    }
    assert.equal(leaders.size, 3, 'leaders spread over the brokers');
    assert.equal(image.topicConfigs('orders').get('retention.ms'), '1000');
    const delta = sink.deltas.at(-1)!;
    assert.deepEqual(
      delta.topicsCreated.map((x) => x.name),
      ['orders'],
    );
    assert.equal(delta.partitionsChanged.length, 6);
    assert.deepEqual(delta.topicConfigsChanged, ['orders']);
  });

  it('answers CreateTopics problems per topic with Kafka’s errors', async () => {
    const { controller } = await controllerWithBrokers([1]);
    await controller.createTopics([topic('taken')], false);
    const results = await controller.createTopics(
      [
        topic('taken'),
        topic('bad name'),
        topic('zero', { numPartitions: 0 }),
        topic('too-many-replicas', { replicationFactor: 3 }),
        { ...topic('bad-config'), configs: [{ name: 'no.such.config', value: '1' }] },
        { ...topic('bad-value'), configs: [{ name: 'retention.ms', value: 'soon' }] },
        topic('fine'),
      ],
      false,
    );
    assert.deepEqual(
      results.map((r) => [r.name, r.errorCode]),
      [
        ['taken', Errors.TOPIC_ALREADY_EXISTS.code],
        ['bad name', Errors.INVALID_TOPIC_EXCEPTION.code],
        ['zero', Errors.INVALID_PARTITIONS.code],
        ['too-many-replicas', Errors.INVALID_REPLICATION_FACTOR.code],
        ['bad-config', Errors.INVALID_CONFIG.code],
        ['bad-value', Errors.INVALID_CONFIG.code],
        ['fine', Errors.NONE.code],
      ],
    );
    assert.match(results[3]!.errorMessage!, /only 1 broker/);
  });

  it('refuses names that collide on . and _', async () => {
    const { controller } = await controllerWithBrokers([1]);
    await controller.createTopics([topic('a.b')], false);
    const [r] = await controller.createTopics([topic('a_b')], false);
    assert.equal(r!.errorCode, Errors.INVALID_TOPIC_EXCEPTION.code);
    assert.match(r!.errorMessage!, /collides/);
  });

  it('validate_only checks without writing', async () => {
    const { sink, controller } = await controllerWithBrokers([1]);
    const before = sink.written.length;
    const [r] = await controller.createTopics([topic('dry', { numPartitions: 2 })], true);
    assert.equal(r!.errorCode, Errors.NONE.code);
    assert.equal(r!.numPartitions, 2);
    assert.equal(sink.written.length, before);
    assert.equal(sink.current.topic('dry'), undefined);
  });

  it('takes manual assignments and checks them', async () => {
    const { sink, controller } = await controllerWithBrokers([1, 2]);
    const [ok, bad] = await controller.createTopics(
      [
        {
          ...topic('manual'),
          assignments: [
            { partitionIndex: 0, brokerIds: [2, 1] },
            { partitionIndex: 1, brokerIds: [1, 2] },
          ],
        },
        { ...topic('unknown-broker'), assignments: [{ partitionIndex: 0, brokerIds: [7] }] },
      ],
      false,
    );
    assert.equal(ok!.errorCode, Errors.NONE.code);
    assert.equal(bad!.errorCode, Errors.INVALID_REPLICA_ASSIGNMENT.code);
    assert.deepEqual(sink.current.partition('manual', 0)!.replicas, [2, 1]);
    assert.equal(sink.current.partition('manual', 0)!.leader, 2);
  });

  it('deletes topics by name and by id, and their configs with them', async () => {
    const { sink, controller } = await controllerWithBrokers([1]);
    const [a] = await controller.createTopics([{ ...topic('a'), configs: [{ name: 'cleanup.policy', value: 'compact' }] }], false);
    await controller.createTopics([topic('b')], false);
    const results = await controller.deleteTopics([
      { name: 'a', topicId: ZERO_UUID },
      { name: null, topicId: sink.current.topic('b')!.id },
      { name: 'missing', topicId: ZERO_UUID },
      { name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAg' },
    ]);
    assert.deepEqual(
      results.map((r) => r.errorCode),
      [Errors.NONE.code, Errors.NONE.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code, Errors.UNKNOWN_TOPIC_ID.code],
    );
    assert.equal(results[1]!.name, 'b');
    assert.equal(sink.current.topicsByName.size, 0);
    assert.equal(sink.current.topicConfigs('a').size, 0);
    assert.deepEqual(
      sink.deltas
        .at(-1)!
        .topicsDeleted.map((t) => t.id)
        .sort(),
      [a!.topicId, results[1]!.topicId].sort(),
    );
  });

  it('adds partitions and refuses decreases', async () => {
    const { sink, controller } = await controllerWithBrokers([1, 2]);
    await controller.createTopics([topic('grow', { numPartitions: 2, replicationFactor: 2 })], false);
    const results = await controller.createPartitions(
      [
        { name: 'grow', count: 5, assignments: null },
        { name: 'missing', count: 2, assignments: null },
      ],
      false,
    );
    assert.deepEqual(
      results.map((r) => r.errorCode),
      [Errors.NONE.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code],
    );
    assert.equal(sink.current.topic('grow')!.partitions.size, 5);
    assert.equal(sink.current.partition('grow', 4)!.replicas.length, 2);
    const [same] = await controller.createPartitions([{ name: 'grow', count: 5, assignments: null }], false);
    assert.equal(same!.errorCode, Errors.INVALID_PARTITIONS.code);
    const [less] = await controller.createPartitions([{ name: 'grow', count: 1, assignments: null }], false);
    assert.match(less!.errorMessage!, /would not be an increase/);
  });

  it('alters configs incrementally: SET, DELETE, APPEND and SUBTRACT on lists', async () => {
    const { sink, controller } = await controllerWithBrokers([1]);
    await controller.createTopics([topic('t')], false);
    const ref = { resourceType: ConfigResourceType.TOPIC, resourceName: 't' };
    let [r] = await controller.incrementalAlterConfigs(
      [
        {
          ...ref,
          configs: [
            { name: 'retention.ms', configOperation: AlterConfigOp.SET, value: '5000' },
            { name: 'cleanup.policy', configOperation: AlterConfigOp.APPEND, value: 'compact' },
          ],
        },
      ],
      false,
    );
    assert.equal(r!.errorCode, Errors.NONE.code);
    assert.equal(sink.current.topicConfigs('t').get('cleanup.policy'), 'delete,compact');
    [r] = await controller.incrementalAlterConfigs(
      [
        {
          ...ref,
          configs: [
            { name: 'retention.ms', configOperation: AlterConfigOp.DELETE, value: null },
            { name: 'cleanup.policy', configOperation: AlterConfigOp.SUBTRACT, value: 'delete' },
          ],
        },
      ],
      false,
    );
    assert.equal(r!.errorCode, Errors.NONE.code);
    assert.deepEqual([...sink.current.topicConfigs('t')], [['cleanup.policy', 'compact']]);
    [r] = await controller.incrementalAlterConfigs(
      [{ ...ref, configs: [{ name: 'retention.ms', configOperation: AlterConfigOp.APPEND, value: '1' }] }],
      false,
    );
    assert.equal(r!.errorCode, Errors.INVALID_CONFIG.code);
    const [missing] = await controller.incrementalAlterConfigs(
      [{ resourceType: ConfigResourceType.TOPIC, resourceName: 'nope', configs: [] }],
      false,
    );
    assert.equal(missing!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });

  it('legacy AlterConfigs replaces the whole set of dynamic configs', async () => {
    const { sink, controller } = await controllerWithBrokers([1]);
    await controller.createTopics([{ ...topic('t'), configs: [{ name: 'retention.ms', value: '1' }] }], false);
    await controller.legacyAlterConfigs(
      [{ resourceType: ConfigResourceType.TOPIC, resourceName: 't', configs: [{ name: 'segment.ms', value: '60000' }] }],
      false,
    );
    assert.deepEqual([...sink.current.topicConfigs('t')], [['segment.ms', '60000']]);
  });

  it('hands out producer id blocks of 1000 that never overlap', async () => {
    const { sink, controller } = await controllerWithBrokers([1]);
    const a = await controller.allocateProducerIdBlock(1);
    const b = await controller.allocateProducerIdBlock(1);
    assert.deepEqual([a.firstProducerId, a.size, b.firstProducerId], [0n, 1000, 1000n]);
    assert.equal(sink.current.nextProducerId, 2000n);
  });

  it('answers NOT_CONTROLLER when this node does not lead the quorum', async () => {
    const { sink, controller } = await controllerWithBrokers([1]);
    sink.active = false;
    const [r] = await controller.createTopics([topic('x')], false);
    assert.equal(r!.errorCode, Errors.NOT_CONTROLLER.code);
  });

  it('a partition leader change bumps the leader epoch; every change bumps the partition epoch', async () => {
    const { sink, controller } = await controllerWithBrokers([1, 2]);
    const [t] = await controller.createTopics([topic('p', { numPartitions: 1, replicationFactor: 2 })], false);
    const before = sink.current.partition('p', 0)!;
    const other = before.replicas.find((id) => id !== before.leader)!;
    const { image } = sink.current.apply(
      [
        {
          type: 'PartitionChangeRecord',
          data: {
            partitionId: 0,
            topicId: t!.topicId,
            isr: [other],
            leader: other,
            replicas: null,
            removingReplicas: null,
            addingReplicas: null,
            leaderRecoveryState: -1,
            directories: null,
            eligibleLeaderReplicas: null,
            lastKnownElr: null,
          },
        },
        {
          type: 'PartitionChangeRecord',
          data: {
            partitionId: 0,
            topicId: t!.topicId,
            isr: [other, before.leader],
            leader: -2,
            replicas: null,
            removingReplicas: null,
            addingReplicas: null,
            leaderRecoveryState: -1,
            directories: null,
            eligibleLeaderReplicas: null,
            lastKnownElr: null,
          },
        },
      ],
      100,
      1,
    );
    const after = image.partition('p', 0)!;
    assert.equal(after.leader, other);
    assert.equal(after.leaderEpoch, 1);
    assert.equal(after.partitionEpoch, 2);
    assert.deepEqual(after.isr, [other, before.leader]);
  });

  it('rebuilds an identical image from its snapshot records', async () => {
    const { sink, controller } = await controllerWithBrokers([1, 2]);
    await controller.createTopics(
      [{ ...topic('s', { numPartitions: 4, replicationFactor: 2 }), configs: [{ name: 'retention.ms', value: '9' }] }],
      false,
    );
    await controller.allocateProducerIdBlock(1);
    const records = imageToRecords(sink.current).map((r) => decodeMetadataRecord(encodeMetadataRecord(r))!);
    const rebuilt = MetadataImage.EMPTY.apply(records, 10, 1).image;
    assert.deepEqual(rebuilt.topicsByName, sink.current.topicsByName);
    assert.deepEqual(rebuilt.brokers, sink.current.brokers);
    assert.deepEqual(rebuilt.allConfigs(), sink.current.allConfigs());
    assert.equal(rebuilt.nextProducerId, sink.current.nextProducerId);
    assert.deepEqual(rebuilt.features, sink.current.features);
  });
});
