// A produce request that spans socket reads is assembled in a buffer the broker reuses once the
// request has been answered (src/server/request-processor.ts). Its records must be in the log
// by then, whether written in place or copied by the thread pool: a buffer handed to the next
// request while a write still reads it would store that request's bytes instead. Real broker
// process; pipelined produces of large, distinct records, each written off the event loop,
// then every byte read back.
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

const PARTITIONS = 2;
/** Larger than the in-place write bound (256 KiB): each batch is copied by the thread pool. */
const VALUE_BYTES = 300 * 1024;
const SENDS = 40;

/** Every byte of a value names the send it came from. */
function sentValue(send: number): Buffer {
  const value = Buffer.alloc(VALUE_BYTES);
  for (let i = 0; i < VALUE_BYTES; i++) value[i] = (send * 37 + i) % 251;
  return value;
}

describe('produce frame buffers (real broker process)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;

  before(async () => {
    broker = await spawnBroker();
  });

  after(async () => {
    await broker?.cleanup();
  });

  it('stores each pipelined produce as sent while the buffers its requests arrived in are reused', async () => {
    const kafka = new Kafka({ clientId: 'produce-frame-buffers', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'frames', numPartitions: PARTITIONS }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer();
    await producer.connect();
    // All in flight at once on one connection: each request is queued while earlier ones are written.
    await Promise.all(
      Array.from({ length: SENDS }, (_, send) =>
        producer.send({
          topic: 'frames',
          acks: 1,
          messages: [{ partition: send % PARTITIONS, key: String(send), value: sentValue(send) }],
        }),
      ),
    );
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: 'frames-reader', maxBytesPerPartition: 8 * 1024 * 1024 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'frames', fromBeginning: true });
    const seen = new Map<number, Buffer>();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${seen.size} of ${SENDS} records`)), 60_000);
      consumer
        .run({
          eachMessage: async ({ message }) => {
            seen.set(Number(message.key!.toString()), message.value!);
            if (seen.size === SENDS) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();
    for (let send = 0; send < SENDS; send++)
      assert.ok(seen.get(send)?.equals(sentValue(send)), `the value of send ${send} is stored as sent`);
  });
});
