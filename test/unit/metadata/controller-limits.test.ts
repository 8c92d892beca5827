import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  EXCESSIVE_BATCH_MESSAGE,
  EXCESSIVE_PARTITIONS_MESSAGE,
  MAX_RECORDS_PER_USER_OP,
  QuorumController,
} from '../../../src/metadata/controller.ts';
import { validateTopicConfig } from '../../../src/config/topic-config.ts';
import { registerBrokers } from '../../helpers/broker-registration.ts';
import { FakeClock } from './fake-cluster.ts';
import { ImageSink } from './image-sink.ts';

async function controller(): Promise<{ sink: ImageSink; controller: QuorumController }> {
  const sink = new ImageSink();
  const c = new QuorumController(sink, { defaultNumPartitions: () => 1, defaultReplicationFactor: () => 1 }, () => 0, {
    clock: new FakeClock(),
  });
  await c.activate();
  await registerBrokers(c, () => sink.image(), [1]);
  return { sink, controller: c };
}

const topic = (name: string, numPartitions: number, configs: { name: string; value: string }[] = []) => ({
  name,
  numPartitions,
  replicationFactor: 1,
  assignments: [],
  configs,
});

describe('controller limits (Kafka MAX_RECORDS_PER_USER_OP, MAX_PARTITIONS_PER_BATCH)', () => {
  it('refuses a CreateTopics asking for more than 10000 partitions with POLICY_VIOLATION, before placing any', async () => {
    const { sink, controller: c } = await controller();
    const before = sink.written.length;
    for (const validateOnly of [false, true]) {
      const results = await c.createTopics([topic('a', 6000), topic('b', 5000), topic('c', 1)], validateOnly);
      assert.deepEqual(
        results.map((r) => [r.name, r.errorCode, r.errorMessage]),
        [
          ['a', Errors.POLICY_VIOLATION.code, EXCESSIVE_PARTITIONS_MESSAGE],
          ['b', Errors.POLICY_VIOLATION.code, EXCESSIVE_PARTITIONS_MESSAGE],
          ['c', Errors.POLICY_VIOLATION.code, EXCESSIVE_PARTITIONS_MESSAGE],
        ],
      );
    }
    // 2^31-1 partitions must be refused at once, not placed.
    const huge = await c.createTopics([topic('huge', 2_147_483_647)], false);
    assert.equal(huge[0]!.errorCode, Errors.POLICY_VIOLATION.code);
    assert.equal(sink.written.length, before);
  });

  it('refuses an operation that would write more than 10000 records as a whole', async () => {
    const { sink, controller: c } = await controller();
    // 10000 partitions pass the partition check, but with the TopicRecords they exceed the record bound.
    const results = await c.createTopics([topic('x', 5000), topic('y', 5000)], false);
    assert.deepEqual(
      results.map((r) => [r.errorCode, r.errorMessage]),
      [
        [Errors.POLICY_VIOLATION.code, EXCESSIVE_BATCH_MESSAGE],
        [Errors.POLICY_VIOLATION.code, EXCESSIVE_BATCH_MESSAGE],
      ],
    );
    assert.equal(sink.current.topic('x'), undefined);
    const ok = await c.createTopics([topic('x', MAX_RECORDS_PER_USER_OP - 1)], false);
    assert.equal(ok[0]!.errorCode, Errors.NONE.code);
    assert.equal(sink.current.topic('x')!.partitions.size, MAX_RECORDS_PER_USER_OP - 1);
  });

  it('refuses CreatePartitions with a huge count with POLICY_VIOLATION, for every topic of the request', async () => {
    const { sink, controller: c } = await controller();
    await c.createTopics([topic('p', 1), topic('q', 1)], false);
    const records = sink.written.length;
    const results = await c.createPartitions(
      [
        { name: 'p', count: 3, assignments: null },
        { name: 'q', count: 2_147_483_647, assignments: null },
      ],
      false,
    );
    assert.deepEqual(
      results.map((r) => [r.name, r.errorCode, r.errorMessage]),
      [
        ['p', Errors.POLICY_VIOLATION.code, EXCESSIVE_BATCH_MESSAGE],
        ['q', Errors.POLICY_VIOLATION.code, EXCESSIVE_BATCH_MESSAGE],
      ],
    );
    assert.equal(sink.written.length, records);
    assert.equal(sink.current.topic('p')!.partitions.size, 1);
    const grown = await c.createPartitions([{ name: 'q', count: 10_001, assignments: null }], false);
    assert.equal(grown[0]!.errorCode, Errors.NONE.code);
  });

  it('applies a 10000-partition topic in time linear in its partitions', async () => {
    const { sink, controller: c } = await controller();
    const started = performance.now();
    await c.createTopics([topic('big', 9_999)], false);
    const elapsedMs = performance.now() - started;
    assert.equal(sink.current.topic('big')!.partitions.size, 9_999);
    // Quadratic copying (a partition map copied per record) took seconds here; linear takes tens of ms.
    assert.ok(elapsedMs < 1_500, `creating 9999 partitions took ${elapsedMs.toFixed(0)} ms`);
  });

  it('validates segment.bytes and segment.index.bytes against Kafka 4 ranges', () => {
    assert.throws(() => validateTopicConfig('segment.bytes', '14'), /at least 1048576/);
    validateTopicConfig('segment.bytes', '1048576');
    assert.throws(() => validateTopicConfig('segment.index.bytes', '3'));
    assert.throws(() => validateTopicConfig('segment.bytes', '2147483648'));
  });
});
