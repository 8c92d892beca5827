// A Fetch that asks for more than fetch.max.bytes gets at most fetch.max.bytes (or the one
// first batch, when it alone is larger), as KafkaApis bounds it: what one request makes the
// broker read into memory does not follow the client's numbers. Real broker process, raw
// requests over a socket.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../../protocol/messages/produce.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { eventually } from '../../helpers/wait.ts';

const TOPIC = 'fetch-bounds';
const FETCH_MAX_BYTES = 4096;

describe('Fetch bounded by fetch.max.bytes (real broker process)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let conn: KafkaConnection;

  before(async () => {
    broker = await spawnBroker({ overrides: { 'fetch.max.bytes': FETCH_MAX_BYTES, 'num.partitions': 1 } });
    conn = await KafkaConnection.connect(broker.host, broker.port);
    await eventually('the topic exists', async () => {
      const m = await conn.send<MetadataResponse>(
        ApiKey.Metadata,
        makeMetadataRequest({ topics: [makeMetadataRequestTopic({ name: TOPIC })], allowAutoTopicCreation: true }),
        9,
      );
      return m.topics[0]?.errorCode === Errors.NONE.code && m.topics[0].partitions.length === 1;
    });
    for (let i = 0; i < 20; i++) {
      const records = await buildRecordBatch({}, [{ key: null, value: Buffer.alloc(1000, i), timestamp: Date.now() }]);
      const response = await conn.send<ProduceResponse>(
        ApiKey.Produce,
        makeProduceRequest({
          acks: 1,
          timeoutMs: 5000,
          topicData: [
            makeProduceRequestTopicProduceData({
              name: TOPIC,
              partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records })],
            }),
          ],
        }),
        9,
      );
      assert.equal(response.responses[0]!.partitionResponses[0]!.errorCode, Errors.NONE.code);
    }
  });

  after(async () => {
    conn?.close();
    await broker?.cleanup();
  });

  it('returns at most fetch.max.bytes to a Fetch asking for 2 GiB', async () => {
    const response = await conn.send<FetchResponse>(
      ApiKey.Fetch,
      makeFetchRequest({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0x7fffffff,
        maxBytes: 0x7fffffff,
        sessionEpoch: -1,
        topics: [
          makeFetchRequestFetchTopic({
            topic: TOPIC,
            partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: 0n, partitionMaxBytes: 0x7fffffff })],
          }),
        ],
      }),
      11,
    );
    const partition = response.responses[0]!.partitions[0]!;
    assert.equal(partition.errorCode, Errors.NONE.code);
    assert.ok(partition.records !== null && partition.records.length > 0, 'some records come back');
    assert.ok(partition.records.length <= FETCH_MAX_BYTES, `${partition.records.length} bytes returned`);
    assert.equal(partition.highWatermark, 20n);
  });
});
