// A response is encoded into memory the broker reuses once the socket has sent it
// (src/server/request-processor.ts). A fetch over many partitions holding a few small batches
// each copies those batches into that memory. Responses queued behind a slow reader hold
// theirs: fetches answered meanwhile on another connection must never be handed it. Real
// broker process; the slow reader is a client that stops reading with many such responses
// pipelined, more than loopback socket buffers take.
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

/** Enough partitions that one response copies well over 64 KiB of batches (the pooled size). */
const PARTITIONS = 600;
const VALUE_BYTES = 200;
/** Pipelined by the slow reader: about 20 MB of responses. */
const HELD_FETCHES = 80;
const FETCH_VERSION = 11;
const TOPICS = ['held', 'busy'];

/** Every byte of a record's value names its topic and partition. */
function recordValue(topicMark: number, partition: number): Buffer {
  return Buffer.alloc(VALUE_BYTES, (topicMark * 101 + partition * 7) % 251);
}

function fetchAll(topic: string): ReturnType<typeof makeFetchRequest> {
  return makeFetchRequest({
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 64 * 1024 * 1024,
    topics: [
      makeFetchRequestFetchTopic({
        topic,
        partitions: Array.from({ length: PARTITIONS }, (_, partition) =>
          makeFetchRequestFetchPartition({ partition, fetchOffset: 0n, partitionMaxBytes: 1024 * 1024 }),
        ),
      }),
    ],
  });
}

async function assertRecords(response: FetchResponse, topicMark: number): Promise<void> {
  const partitions = response.responses[0]!.partitions;
  assert.equal(partitions.length, PARTITIONS);
  for (const p of partitions) {
    assert.equal(p.errorCode, 0);
    const values = [];
    for (const batch of batchesIn(p.records!)) {
      assert.ok(batch.isCrcValid(), `partition ${p.partitionIndex}: batch at ${batch.baseOffset} arrived corrupt`);
      for (const record of await readRecords(batch)) values.push(record.value!);
    }
    assert.equal(values.length, 1, `partition ${p.partitionIndex} holds one record`);
    assert.ok(values[0]!.equals(recordValue(topicMark, p.partitionIndex)), `partition ${p.partitionIndex} arrived as stored`);
  }
}

describe('response memory (real broker process)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;

  before(async () => {
    broker = await spawnBroker();
    const kafka = new Kafka({ clientId: 'response-memory', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: TOPICS.map((topic) => ({ topic, numPartitions: PARTITIONS })), waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    for (const [mark, topic] of TOPICS.entries()) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, value: recordValue(mark, partition) })),
      });
    }
    await producer.disconnect();
  });

  after(async () => {
    await broker?.cleanup();
  });

  it('responses queued behind a slow reader arrive intact while other fetches reuse response memory', async () => {
    const slow = await RawClient.connect(broker.port, broker.host);
    const busy = await RawClient.connect(broker.port, broker.host);
    try {
      slow.socket.pause();
      const held = Array.from({ length: HELD_FETCHES }, () => frame(ApiKey.Fetch, FETCH_VERSION, fetchAll('held')));
      for (const request of held) slow.send(request.bytes);
      for (let round = 0; round < 40; round++) {
        await assertRecords(await call<FetchResponse>(busy, ApiKey.Fetch, FETCH_VERSION, fetchAll('busy')), 1);
      }
      slow.socket.resume();
      for (const request of held) {
        const reader = new Reader(await slow.next());
        assert.equal(decodeResponseHeader(reader, ApiKey.Fetch, FETCH_VERSION), request.id);
        await assertRecords(decodeFetchResponse(reader, FETCH_VERSION), 0);
      }
    } finally {
      slow.close();
      busy.close();
    }
  });
});
