// A node must always restart after a crash: SIGKILL the real broker while topics are created
// and deleted, restart it, and check it says what it recovered and still serves every
// acknowledged record of the topics that were not deleted.
import assert from 'node:assert/strict';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { eventually } from '../../helpers/wait.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

const RECOVERY_LINE = /recovered \d+ partitions \(\d+ after an unclean stop\), truncated \d+ bytes, removed \d+ stray directories/g;

describe('crash and restart of the real broker', function () {
  this.timeout(240_000);
  let broker: BrokerProcess;

  after(async () => {
    await broker?.cleanup();
  });

  it('restarts after SIGKILL during topic churn, prints one recovery line, and serves every acknowledged record', async () => {
    broker = await spawnBroker();
    const acknowledged = new Map<string, number>();
    for (let round = 0; round < 3; round++) {
      const kafka = new Kafka({
        clientId: `crash-${round}`,
        brokers: [broker.bootstrap],
        logLevel: logLevel.NOTHING,
        retry: { retries: 2 },
      });
      const admin: Admin = kafka.admin();
      await admin.connect();
      const keep = `keep-${round}`;
      await admin.createTopics({ topics: [{ topic: keep, numPartitions: 2 }] });
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      for (let i = 0; i < 5; i++) {
        await producer.send({ topic: keep, acks: -1, messages: [{ key: 'k', value: `${round}-${i}`, partition: i % 2 }] });
      }
      acknowledged.set(keep, 5);
      await producer.disconnect();
      // Churn that the kill interrupts: creations and deletions in flight.
      const churn = (async () => {
        for (let i = 0; i < 20; i++) {
          const name = `churn-${round}-${i}`;
          await admin.createTopics({ topics: [{ topic: name, numPartitions: 3 }] }).catch(() => undefined);
          await admin.deleteTopics({ topics: [name] }).catch(() => undefined);
        }
      })();
      await new Promise((r) => setTimeout(r, 150 + round * 100));
      await broker.stop('SIGKILL');
      await churn.catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      broker = await broker.restart();
      const restarted = broker;
      // Log lines are written asynchronously: the ready line on stdout can come first.
      await eventually('the recovery line', () => new RegExp(RECOVERY_LINE.source).test(restarted.stderr()), 10_000).catch(() => undefined);
      const lines = broker.stderr().match(RECOVERY_LINE) ?? [];
      assert.equal(lines.length, 1, `expected one recovery line, stderr:\n${broker.stderr().slice(-4000)}`);
    }
    const kafka = new Kafka({ clientId: 'crash-check', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const topics = await admin.listTopics();
      for (const [topic, count] of acknowledged) {
        assert.ok(topics.includes(topic), `${topic} survived`);
        const offsets = await admin.fetchTopicOffsets(topic);
        const total = offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
        assert.equal(total, count, `${topic} holds every acknowledged record`);
      }
      const consumer = kafka.consumer({ groupId: 'crash-check' });
      try {
        await consumer.connect();
        const seen = new Set<string>();
        await consumer.subscribe({ topics: [...acknowledged.keys()], fromBeginning: true });
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`read ${seen.size} of 15 records`)), 60_000);
          void consumer.run({
            eachMessage: async ({ message }) => {
              seen.add(message.value!.toString());
              if (seen.size === 15) {
                clearTimeout(timer);
                resolve();
              }
            },
          });
        });
      } finally {
        // A consumer left running retries against the stopped broker and keeps the run alive.
        await consumer.disconnect();
      }
    } finally {
      await admin.disconnect();
    }
  });
});
