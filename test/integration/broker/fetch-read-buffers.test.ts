// A fetch's records are read into buffers the broker reuses once the response has been written
// (storage/read-buffers.ts). A response still waiting for a slow reader holds its buffers: other
// fetches, reading meanwhile, must never be handed them. Real broker process; the slow reader
// is a client that stops reading its socket with a response of several socket buffers queued.
import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { decodeResponseHeader } from '../../../protocol/headers.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  decodeFetchResponse,
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import { Reader } from '../../../protocol/primitives.ts';
import { batchesIn } from '../../../protocol/records/batch.ts';
import { readRecords } from '../../../protocol/records/record.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call, frame } from '../../helpers/raw-requests.ts';

const MIB = 1024 * 1024;
const PARTITIONS = 4;
const VALUE_BYTES = 16 * 1024;
/** Per partition: the held fetch asks for all of it, more than loopback socket buffers take. */
const RECORDS_PER_PARTITION = 256;
const FETCH_VERSION = 11;

/** Every byte of a record's value names its topic, partition and offset. */
function recordValue(topicMark: number, partition: number, offset: number): Buffer {
  return Buffer.alloc(VALUE_BYTES, (topicMark * 31 + partition * 7 + offset) % 251);
}

function fetchAll(topic: string, partitionMaxBytes: number, fetchOffset = 0): ReturnType<typeof makeFetchRequest> {
  return makeFetchRequest({
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 64 * MIB,
    topics: [
      makeFetchRequestFetchTopic({
        topic,
        partitions: Array.from({ length: PARTITIONS }, (_, partition) =>
          makeFetchRequestFetchPartition({ partition, fetchOffset: BigInt(fetchOffset), partitionMaxBytes }),
        ),
      }),
    ],
  });
}

describe('fetch read buffers (real broker process)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;

  before(async () => {
    broker = await spawnBroker();
    const kafka = new Kafka({ clientId: 'fetch-read-buffers', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: ['held', 'busy'].map((topic) => ({ topic, numPartitions: PARTITIONS })), waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    for (const [mark, topic] of ['held', 'busy'].entries()) {
      for (let partition = 0; partition < PARTITIONS; partition++) {
        for (let from = 0; from < RECORDS_PER_PARTITION; from += 32) {
          await producer.send({
            topic,
            acks: -1,
            messages: Array.from({ length: 32 }, (_, i) => ({ partition, value: recordValue(mark, partition, from + i) })),
          });
        }
      }
    }
    await producer.disconnect();
  });

  after(async () => {
    await broker?.cleanup();
  });

  it('a response queued behind a slow reader arrives intact while other fetches reuse buffers', async () => {
    const slow = await RawClient.connect(broker.port, broker.host);
    const busy = await RawClient.connect(broker.port, broker.host);
    try {
      slow.socket.pause();
      const held = frame(ApiKey.Fetch, FETCH_VERSION, fetchAll('held', 8 * MIB));
      slow.send(held.bytes);
      // Meanwhile others read the same amounts from another topic, again and again, taking
      // any buffer the broker has been given back.
      for (let round = 0; round < 12; round++) {
        const r = await call<FetchResponse>(busy, ApiKey.Fetch, FETCH_VERSION, fetchAll('busy', 8 * MIB, (round * 16) % 128));
        for (const p of r.responses[0]!.partitions) assert.equal(p.errorCode, 0);
      }
      slow.socket.resume();
      const reader = new Reader(await slow.next());
      assert.equal(decodeResponseHeader(reader, ApiKey.Fetch, FETCH_VERSION), held.id);
      const response = decodeFetchResponse(reader, FETCH_VERSION);
      const partitions = response.responses[0]!.partitions;
      assert.equal(partitions.length, PARTITIONS);
      for (const p of partitions) {
        let next = 0;
        for (const batch of batchesIn(p.records!)) {
          assert.ok(batch.isCrcValid(), `partition ${p.partitionIndex}: batch at ${batch.baseOffset} arrived corrupt`);
          for (const record of await readRecords(batch)) {
            assert.equal(record.offset, next);
            assert.ok(record.value!.equals(recordValue(0, p.partitionIndex, next)), `partition ${p.partitionIndex} offset ${next}`);
            next++;
          }
        }
        assert.equal(next, RECORDS_PER_PARTITION, `partition ${p.partitionIndex} arrived whole`);
      }
    } finally {
      slow.close();
      busy.close();
    }
  });
});
