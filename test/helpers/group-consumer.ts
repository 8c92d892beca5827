/**
 * A kafkajs group consumer run as its own process, so a test can kill it without it leaving
 * the group. Prints one JSON line per event on stdout:
 *   {"event":"assigned","partitions":[...]}  and  {"event":"record","partition":p,"offset":"o"}
 *
 *   node --import tsx test/helpers/group-consumer.ts BOOTSTRAP GROUP TOPIC
 */
import { Kafka, logLevel } from 'kafkajs';

const [bootstrap, groupId, topic] = process.argv.slice(2) as [string, string, string];
const kafka = new Kafka({ brokers: [bootstrap], clientId: 'group-consumer', logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000 });

const emit = (line: object): void => {
  process.stdout.write(JSON.stringify(line) + '\n');
};
consumer.on(consumer.events.GROUP_JOIN, (e) => {
  emit({ event: 'assigned', partitions: e.payload.memberAssignment[topic] ?? [] });
});
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: true });
await consumer.run({
  eachMessage: async ({ partition, message }) => emit({ event: 'record', partition, offset: message.offset }),
});
