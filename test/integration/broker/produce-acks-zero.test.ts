// acks=0 Produce over a raw socket against the real broker: a successful one is silent and the
// connection keeps serving; a failed one closes the connection, as Kafka does, so the client
// notices, reconnects and refreshes its metadata.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import type { ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../../protocol/messages/produce.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { startBroker, type EmbeddedBroker } from '../../../src/index.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call, frame } from '../../helpers/raw-requests.ts';

const TOPIC = 'acks-zero';
const PRODUCE_VERSION = 9;
async function produceRequest(acks: number, topic: string, partition: number): Promise<unknown> {
  const records = await buildRecordBatch({}, [{ key: Buffer.from('k'), value: Buffer.from('v'), timestamp: Date.now() }]);
  return makeProduceRequest({
    acks,
    timeoutMs: 5000,
    topicData: [
      makeProduceRequestTopicProduceData({
        name: topic,
        partitionData: [makeProduceRequestPartitionProduceData({ index: partition, records })],
      }),
    ],
  });
}

describe('Produce with acks=0 (raw socket, real broker)', function () {
  this.timeout(30_000);
  let broker: EmbeddedBroker;

  before(async () => {
    broker = await startBroker();
    const client = await RawClient.connect(broker.port);
    try {
      const metadata = await call<MetadataResponse>(
        client,
        ApiKey.Metadata,
        9,
        makeMetadataRequest({
          topics: [makeMetadataRequestTopic({ name: TOPIC })],
          allowAutoTopicCreation: true,
        }),
      );
      assert.equal(metadata.topics[0]!.errorCode, Errors.NONE.code);
      // The auto-created partition takes its leader from the next metadata change.
      for (;;) {
        const res = await call<ProduceResponse>(client, ApiKey.Produce, PRODUCE_VERSION, await produceRequest(1, TOPIC, 0));
        const code = res.responses[0]!.partitionResponses[0]!.errorCode;
        if (code === Errors.NONE.code) break;
        assert.ok(Errors.NOT_LEADER_OR_FOLLOWER.code === code || Errors.UNKNOWN_TOPIC_OR_PARTITION.code === code, `error ${code}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      client.close();
    }
  });

  after(async () => {
    await broker?.close();
  });

  it('sends nothing for a successful acks=0 produce and keeps answering the connection in order', async () => {
    const client = await RawClient.connect(broker.port);
    try {
      client.send(frame(ApiKey.Produce, PRODUCE_VERSION, await produceRequest(0, TOPIC, 0)).bytes);
      const res = await call<ProduceResponse>(client, ApiKey.Produce, PRODUCE_VERSION, await produceRequest(1, TOPIC, 0));
      const p = res.responses[0]!.partitionResponses[0]!;
      assert.equal(p.errorCode, Errors.NONE.code);
      assert.equal(p.baseOffset, 2n, 'the acks=0 batch was appended before it (offset 1)');
      assert.equal(client.closed, false);
    } finally {
      client.close();
    }
  });

  for (const [what, topic, partition] of [
    ['an unknown topic', 'no-such-topic', 0],
    ['an unknown partition', TOPIC, 7],
  ] as const) {
    it(`closes the connection after an acks=0 produce to ${what}, dropping the requests behind it`, async () => {
      const client = await RawClient.connect(broker.port);
      const bystander = await RawClient.connect(broker.port);
      try {
        // Pipelined: the ApiVersions behind the failed produce is never answered.
        client.send(frame(ApiKey.Produce, PRODUCE_VERSION, await produceRequest(0, topic, partition)).bytes);
        client.send(frame(ApiKey.ApiVersions, 2, {}).bytes);
        await client.whenClosed();
        await assert.rejects(client.next(), /connection closed/);
        // Other connections are unaffected.
        const versions = await call<ApiVersionsResponse>(bystander, ApiKey.ApiVersions, 2, {});
        assert.equal(versions.errorCode, Errors.NONE.code);
      } finally {
        client.close();
        bystander.close();
      }
    });
  }

  it('answers the same failure with acks=1 instead of closing', async () => {
    const client = await RawClient.connect(broker.port);
    try {
      const res = await call<ProduceResponse>(client, ApiKey.Produce, PRODUCE_VERSION, await produceRequest(1, 'no-such-topic', 0));
      assert.equal(res.responses[0]!.partitionResponses[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
      assert.equal(client.closed, false);
    } finally {
      client.close();
    }
  });
});
