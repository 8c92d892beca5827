// Metadata requests a client may not send at their version, over a socket to the real broker
// process: each is refused as Kafka's KafkaApis.handleTopicMetadataRequest refuses it
// (INVALID_REQUEST for every topic named, in an answered response), the connection keeps
// serving and the process lives on.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import type { ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

describe('Metadata requests refused at their version (real broker process)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let conn: KafkaConnection;

  before(async () => {
    broker = await spawnBroker();
    conn = await KafkaConnection.connect(broker.host, broker.port);
  });

  after(async () => {
    conn?.close();
    await broker?.cleanup();
  });

  for (const version of [10, 11]) {
    it(`answers Metadata v${version} with a null topic name with INVALID_REQUEST and keeps serving`, async () => {
      const request = makeMetadataRequest({
        topics: [makeMetadataRequestTopic({ name: null }), makeMetadataRequestTopic({ name: 'named' })],
      });
      const response = await conn.send<MetadataResponse>(ApiKey.Metadata, request, version);
      assert.deepEqual(
        response.topics.map((t) => [t.name, t.errorCode]),
        [
          ['', Errors.INVALID_REQUEST.code],
          ['named', Errors.INVALID_REQUEST.code],
        ],
      );
      const versions = await conn.send<ApiVersionsResponse>(ApiKey.ApiVersions, {}, 0);
      assert.equal(versions.errorCode, Errors.NONE.code);
      assert.equal(broker.child.exitCode, null, 'the broker process is alive');
    });
  }

  it('answers Metadata v11 naming a topic by id with INVALID_REQUEST', async () => {
    const request = makeMetadataRequest({ topics: [makeMetadataRequestTopic({ name: 'by-id', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' })] });
    const response = await conn.send<MetadataResponse>(ApiKey.Metadata, request, 11);
    assert.deepEqual(
      response.topics.map((t) => t.errorCode),
      [Errors.INVALID_REQUEST.code],
    );
    assert.doesNotMatch(broker.stderr() + broker.stdout(), /EncodeError|request handling failed/);
  });

  it('still serves Metadata v12 by topic id with a null name', async () => {
    const request = makeMetadataRequest({ topics: [makeMetadataRequestTopic({ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' })] });
    const response = await conn.send<MetadataResponse>(ApiKey.Metadata, request, 12);
    assert.deepEqual(
      response.topics.map((t) => [t.name, t.errorCode]),
      [[null, Errors.UNKNOWN_TOPIC_ID.code]],
    );
  });
});
