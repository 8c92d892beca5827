import type { Consumer, Kafka } from 'kafkajs';

/**
 * Joins `groupId` with a kafkajs consumer, reads `topic` from the beginning (or the group's
 * commit) until `count` records arrived, and returns the consumer still running: the caller
 * disconnects it (committing its offsets) or inspects the group while it is a member.
 */
export async function consumeRecords(kafka: Kafka, groupId: string, topic: string, count: number): Promise<Consumer> {
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  await new Promise<void>((resolve) => {
    void consumer.run({
      eachMessage: async () => {
        if (++seen === count) resolve();
      },
    });
  });
  return consumer;
}
