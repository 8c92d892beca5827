import assert from 'node:assert/strict';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { SluiceContainer } from '../../../src/testcontainers/index.ts';
import {
  TEST_CONTAINER_LABELS,
  acquireContainerEngine,
  containerCli,
  sluiceImage,
  type ContainerEngine,
} from '../../helpers/container-engine.ts';

// SluiceContainer: the same image through Testcontainers' GenericContainer, with Sluice's
// own broker properties.

describe('SluiceContainer (sluice/testcontainers)', function () {
  this.timeout(20 * 60_000);
  let engine: ContainerEngine | undefined;
  let image: string;

  before(async function () {
    engine = await acquireContainerEngine(this);
    image = await sluiceImage();
  });

  after(async function () {
    await engine?.release();
  });

  it('starts with the broker properties it is given, and stops when an `await using` block ends', async function () {
    this.timeout(5 * 60_000);
    let id: string;
    {
      await using sluice = await new SluiceContainer(image)
        .withLabels(TEST_CONTAINER_LABELS)
        .withBrokerConfig({ 'num.partitions': 3, 'log.level': 'warn' })
        .start();
      id = sluice.getId();
      assert.equal(sluice.getBootstrapServers(), `${sluice.getHost()}:${sluice.getMappedPort(9093)}`);
      const kafka = new Kafka({ clientId: 'sluice-container-test', brokers: [sluice.getBootstrapServers()], logLevel: logLevel.NOTHING });
      const producer = kafka.producer();
      await producer.connect();
      const [ack] = await producer.send({ topic: 'auto-created', acks: -1, messages: [{ key: 'k', value: 'hello' }] });
      await producer.disconnect();
      assert.equal(ack!.errorCode, 0);

      const admin = kafka.admin();
      await admin.connect();
      try {
        // num.partitions reached the broker: the topic the produce created has three.
        const [topic] = (await admin.fetchTopicMetadata({ topics: ['auto-created'] })).topics;
        assert.equal(topic!.partitions.length, 3);
        const [resource] = (
          await admin.describeConfigs({
            resources: [{ type: ConfigResourceTypes.BROKER, name: '1', configNames: ['num.partitions'] }],
            includeSynonyms: false,
          })
        ).resources;
        assert.equal(resource!.configEntries[0]!.configValue, '3');
      } finally {
        await admin.disconnect();
      }
    }
    const left = (await containerCli(['ps', '--all', '--quiet', '--filter', `id=${id}`])).trim();
    assert.equal(left, '', `container ${id} is still there after asyncDispose`);
  });
});
