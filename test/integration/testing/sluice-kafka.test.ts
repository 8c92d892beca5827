import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { SluiceKafka, type StartedSluiceKafka } from '../../../src/index.ts';

// SluiceKafka is what a suite uses in place of Testcontainers' KafkaContainer when it cannot
// run containers: the same calls on the started object, a broker in this process behind them.

function kafkaAt(started: StartedSluiceKafka): Kafka {
  // Exactly what a KafkaContainer user writes.
  return new Kafka({
    clientId: 'sluice-kafka-test',
    brokers: [`${started.getHost()}:${started.getMappedPort(9093)}`],
    logLevel: logLevel.NOTHING,
  });
}

/** Consumes `count` values of `topic` from the beginning, or fails after `timeoutMs`. */
async function consume(kafka: Kafka, topic: string, groupId: string, count: number, timeoutMs = 20_000): Promise<string[]> {
  const consumer = kafka.consumer({ groupId });
  const values: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`consumed ${values.length} of ${count} records of ${topic} in ${timeoutMs} ms`)),
        timeoutMs,
      );
      consumer
        .run({
          eachMessage: async ({ message }) => {
            values.push(message.value?.toString() ?? '');
            if (values.length === count) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    clearTimeout(timer);
    await consumer.disconnect();
  }
  return values;
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('SluiceKafka (an in-process KafkaContainer)', function () {
  this.timeout(60_000);

  it('serves kafkajs at getHost():getMappedPort(9093) and closes when an `await using` block ends', async () => {
    let port: number;
    let dataDir: string;
    {
      await using kafka = await new SluiceKafka().start();
      port = kafka.getMappedPort(9093);
      dataDir = kafka.broker.dataDir;
      assert.equal(kafka.getHost(), '127.0.0.1');
      assert.equal(kafka.getFirstMappedPort(), port);
      assert.equal(kafka.getBootstrapServers(), `127.0.0.1:${port}`);

      const client = kafkaAt(kafka);
      const producer = client.producer();
      await producer.connect();
      const sent = Array.from({ length: 5 }, (_, i) => `value-${i}`);
      const [ack] = await producer.send({ topic: 'in-process', messages: sent.map((value, i) => ({ key: `k${i}`, value })) });
      await producer.disconnect();
      assert.equal(ack!.errorCode, 0);
      assert.deepEqual(await consume(client, 'in-process', 'in-process-readers', sent.length), sent);
    }
    assert.equal(await refusesConnections(port), true, 'the broker still accepts connections after asyncDispose');
    assert.equal(existsSync(dataDir), false, 'the temp data dir is still there after asyncDispose');
  });

  it('throws for a container port it does not map, as a started container does', async () => {
    const kafka = await new SluiceKafka().start();
    try {
      assert.equal(kafka.getMappedPort('9093/tcp'), kafka.getFirstMappedPort());
      assert.throws(() => kafka.getMappedPort(9092), { message: 'No port binding found for :9092/tcp' });
      assert.throws(() => kafka.getMappedPort(9093, 'udp'), { message: 'No port binding found for :9093/udp' });
    } finally {
      await kafka.stop();
    }
  });

  it('stop() closes the broker, and a second stop() is harmless', async () => {
    const kafka = await new SluiceKafka().withBrokerConfig({ 'num.partitions': 3 }).start();
    const port = kafka.getMappedPort(9093);
    const admin = kafkaAt(kafka).admin();
    await admin.connect();
    // The broker properties reach the broker: an auto-created topic gets num.partitions.
    const producer = kafkaAt(kafka).producer();
    await producer.connect();
    await producer.send({ topic: 'three-partitions', messages: [{ value: 'x' }] });
    await producer.disconnect();
    const [topic] = (await admin.fetchTopicMetadata({ topics: ['three-partitions'] })).topics;
    await admin.disconnect();
    assert.equal(topic!.partitions.length, 3);

    await kafka.stop();
    await kafka.stop();
    assert.equal(await refusesConnections(port), true);
  });
});
