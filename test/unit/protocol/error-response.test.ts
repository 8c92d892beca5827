import assert from 'node:assert/strict';
import { Reader, Writer, ZERO_UUID } from '../../../protocol/primitives.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { Errors } from '../../../protocol/errors.ts';
import { errorResponseFor } from '../../../protocol/error-response.ts';
import { decodeMetadataResponse, makeMetadataRequest, makeMetadataRequestTopic } from '../../../protocol/messages/metadata.ts';
import {
  decodeProduceResponse,
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
} from '../../../protocol/messages/produce.ts';
import {
  decodeFetchResponse,
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
} from '../../../protocol/messages/fetch.ts';
import { decodeJoinGroupResponse, makeJoinGroupRequest } from '../../../protocol/messages/join-group.ts';

function roundTrip<T>(apiKey: number, version: number, body: unknown, decode: (r: Reader, v: number) => T): T {
  const w = new Writer();
  apis.get(apiKey)!.encodeResponse(w, body, version);
  const r = new Reader(w.toBuffer());
  const decoded = decode(r, version);
  assert.equal(r.remaining(), 0);
  return decoded;
}

describe('error responses derived from the schemas', () => {
  it('encodes for every api key and version, with and without the request to mirror', () => {
    for (const api of apis.values()) {
      for (let v = api.minVersion; v <= api.maxVersion; v++) {
        for (const request of [null, {}]) {
          const body = errorResponseFor(api.apiKey, v, request, Errors.UNKNOWN_SERVER_ERROR.code, null);
          const w = new Writer();
          assert.doesNotThrow(() => api.encodeResponse(w, body, v), `${api.name} v${v}`);
        }
      }
    }
  });

  it('answers Metadata v10 naming a null topic with INVALID_REQUEST for that topic, its name empty', () => {
    const request = makeMetadataRequest({
      topics: [makeMetadataRequestTopic({ name: null }), makeMetadataRequestTopic({ name: 'orders' })],
    });
    const body = errorResponseFor(ApiKey.Metadata, 10, request, Errors.INVALID_REQUEST.code, 'Topic name can not be null for version 10');
    const response = roundTrip(ApiKey.Metadata, 10, body, decodeMetadataResponse);
    assert.deepEqual(
      response.topics.map((t) => [t.name, t.errorCode, t.partitions.length]),
      [
        ['', Errors.INVALID_REQUEST.code, 0],
        ['orders', Errors.INVALID_REQUEST.code, 0],
      ],
    );
  });

  it('lists every partition of a Produce with the error, as ProduceRequest.getErrorResponse does', () => {
    const request = makeProduceRequest({
      acks: 1,
      topicData: [
        makeProduceRequestTopicProduceData({
          name: 'orders',
          partitionData: [0, 3].map((index) => makeProduceRequestPartitionProduceData({ index, records: Buffer.alloc(0) })),
        }),
      ],
    });
    const response = roundTrip(
      ApiKey.Produce,
      9,
      errorResponseFor(ApiKey.Produce, 9, request, Errors.UNKNOWN_SERVER_ERROR.code, null),
      decodeProduceResponse,
    );
    assert.equal(response.responses[0]!.name, 'orders');
    assert.deepEqual(
      response.responses[0]!.partitionResponses.map((p) => [p.index, p.errorCode, p.baseOffset]),
      [
        [0, Errors.UNKNOWN_SERVER_ERROR.code, -1n],
        [3, Errors.UNKNOWN_SERVER_ERROR.code, -1n],
      ],
    );
  });

  it('answers each fetched partition with the error and an empty, non-null record set', () => {
    const request = makeFetchRequest({
      topics: [
        makeFetchRequestFetchTopic({ topic: 'orders', topicId: ZERO_UUID, partitions: [makeFetchRequestFetchPartition({ partition: 2 })] }),
      ],
    });
    const response = roundTrip(
      ApiKey.Fetch,
      11,
      errorResponseFor(ApiKey.Fetch, 11, request, Errors.UNKNOWN_SERVER_ERROR.code, null),
      decodeFetchResponse,
    );
    const partition = response.responses[0]!.partitions[0]!;
    assert.equal(response.responses[0]!.topic, 'orders');
    assert.equal(partition.partitionIndex, 2);
    assert.equal(partition.errorCode, Errors.UNKNOWN_SERVER_ERROR.code);
    assert.equal(partition.records?.length, 0);
    assert.equal(partition.highWatermark, -1n);
  });

  it('puts the error at the top level where the response has only one', () => {
    const request = makeJoinGroupRequest({ groupId: 'g', memberId: 'm-1' });
    const response = roundTrip(
      ApiKey.JoinGroup,
      5,
      errorResponseFor(ApiKey.JoinGroup, 5, request, Errors.UNKNOWN_SERVER_ERROR.code, null),
      decodeJoinGroupResponse,
    );
    assert.equal(response.errorCode, Errors.UNKNOWN_SERVER_ERROR.code);
    assert.equal(response.memberId, 'm-1');
  });
});
