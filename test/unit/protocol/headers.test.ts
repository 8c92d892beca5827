import assert from 'node:assert/strict';
import { Reader, Writer, DecodeError } from '../../../protocol/primitives.ts';
import {
  decodeRequestHeader,
  decodeResponseHeader,
  encodeRequestHeader,
  encodeResponseHeader,
  requestHeaderVersion,
  responseHeaderVersion,
} from '../../../protocol/headers.ts';
import { readFileSync, readdirSync } from 'node:fs';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import type { RequestHeader } from '../../../protocol/headers.ts';
import { RecordBatch } from '../../../protocol/records/batch.ts';
import type { CreateTopicsRequest } from '../../../protocol/messages/create-topics.ts';
import type { FetchRequest } from '../../../protocol/messages/fetch.ts';
import type { FindCoordinatorRequest } from '../../../protocol/messages/find-coordinator.ts';
import type { JoinGroupRequest } from '../../../protocol/messages/join-group.ts';
import type { ListOffsetsRequest } from '../../../protocol/messages/list-offsets.ts';
import type { MetadataRequest } from '../../../protocol/messages/metadata.ts';
import type { OffsetFetchRequest } from '../../../protocol/messages/offset-fetch.ts';
import type { ProduceRequest } from '../../../protocol/messages/produce.ts';
import type { SyncGroupRequest } from '../../../protocol/messages/sync-group.ts';

function bytes(hex: string): Buffer {
  return Buffer.from(hex.replace(/\s+/g, ''), 'hex');
}

describe('request and response headers', () => {
  it('reads header v1 (classic client id) for a non-flexible version', () => {
    // Metadata v1, correlation 7, client id "ab"
    const r = new Reader(bytes('0003 0001 00000007 0002 6162 ff'));
    const h = decodeRequestHeader(r);
    assert.deepEqual(h, { requestApiKey: 3, requestApiVersion: 1, correlationId: 7, clientId: 'ab', headerVersion: 1 });
    assert.equal(r.remaining(), 1, 'the body starts right after the header');
  });

  it('reads header v2 with an int16 client id followed by tagged fields', () => {
    // Metadata v9 is flexible: client_id stays a classic nullable string, then tagged fields.
    const r = new Reader(bytes('0003 0009 0000002a 0003 6b6166 01 05 02 abcd'));
    const h = decodeRequestHeader(r);
    assert.equal(h.headerVersion, 2);
    assert.equal(h.clientId, 'kaf');
    assert.equal(h.correlationId, 42);
    assert.equal(r.remaining(), 0, 'unknown tagged field 5 skipped');
  });

  it('reads a null client id', () => {
    const h = decodeRequestHeader(new Reader(bytes('0012 0000 00000001 ffff')));
    assert.equal(h.clientId, null);
  });

  it('ControlledShutdown v0 has no client id (header v0)', () => {
    assert.equal(requestHeaderVersion(ApiKey.ControlledShutdown, 0), 0);
    assert.equal(requestHeaderVersion(ApiKey.ControlledShutdown, 1), 1);
    assert.equal(requestHeaderVersion(ApiKey.ControlledShutdown, 3), 2);
    const r = new Reader(bytes('0007 0000 00000009 00000001'));
    const h = decodeRequestHeader(r);
    assert.equal(h.headerVersion, 0);
    assert.equal(h.clientId, null);
    assert.equal(r.remaining(), 4);
  });

  it("chooses header versions from each API's flexible versions", () => {
    assert.equal(requestHeaderVersion(ApiKey.Produce, 8), 1);
    assert.equal(requestHeaderVersion(ApiKey.Produce, 9), 2);
    assert.equal(requestHeaderVersion(ApiKey.Fetch, 11), 1);
    assert.equal(requestHeaderVersion(ApiKey.Fetch, 12), 2);
    assert.equal(responseHeaderVersion(ApiKey.Fetch, 11), 0);
    assert.equal(responseHeaderVersion(ApiKey.Fetch, 12), 1);
    assert.equal(requestHeaderVersion(ApiKey.ApiVersions, 3), 2);
    // A version newer than we know still follows the API's open flexible range.
    assert.equal(requestHeaderVersion(ApiKey.ApiVersions, 100), 2);
    assert.equal(requestHeaderVersion(9999, 0), 1);
  });

  it('ApiVersions responses always use response header v0', () => {
    for (const v of [0, 3, 4]) {
      assert.equal(responseHeaderVersion(ApiKey.ApiVersions, v), 0);
      const w = new Writer();
      encodeResponseHeader(w, 5, ApiKey.ApiVersions, v);
      assert.deepEqual(w.toBuffer(), bytes('00000005'));
    }
  });

  it('flexible responses carry an empty tagged-field section', () => {
    const w = new Writer();
    encodeResponseHeader(w, 5, ApiKey.Metadata, 12);
    assert.deepEqual(w.toBuffer(), bytes('00000005 00'));
    assert.equal(decodeResponseHeader(new Reader(bytes('00000005 00')), ApiKey.Metadata, 12), 5);
  });

  it('request headers round-trip at every header version', () => {
    for (const [apiKey, apiVersion] of [
      [7, 0],
      [3, 1],
      [3, 12],
      [18, 3],
    ] as const) {
      const w = new Writer();
      encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: apiVersion, correlationId: -3, clientId: 'c' });
      const h = decodeRequestHeader(new Reader(w.toBuffer()));
      assert.equal(h.correlationId, -3);
      assert.equal(h.clientId, h.headerVersion === 0 ? null : 'c');
    }
  });

  it('refuses truncated headers with a DecodeError', () => {
    for (const hex of ['00', '0003 0009', '0003 0009 000000', '0003 0009 0000002a 0005 61', '0003 0009 0000002a 0001 61']) {
      assert.throws(() => decodeRequestHeader(new Reader(bytes(hex))), DecodeError, hex);
    }
  });
});

describe('frames captured from kafkajs', () => {
  const dir = new URL('../../fixtures/frames/kafkajs/', import.meta.url);

  function decodeFrame(file: string): { header: RequestHeader; body: unknown; rest: number } {
    const r = new Reader(readFileSync(new URL(file, dir)));
    const header = decodeRequestHeader(r);
    const body = apis.get(header.requestApiKey)!.decodeRequest(r, header.requestApiVersion);
    return { header, body, rest: r.remaining() };
  }

  it('every captured frame decodes completely with the client id kafkajs sent', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.bin'));
    assert.ok(files.length >= 5);
    for (const file of files) {
      const { header, rest } = decodeFrame(file);
      assert.equal(rest, 0, `${file}: bytes left after the body`);
      assert.equal(header.clientId, 'frames', file);
      assert.equal(`${kebab(apis.get(header.requestApiKey)!.name)}-v${header.requestApiVersion}.bin`, file);
    }
  });

  it('ApiVersions v2, Metadata v6 and CreateTopics v3', () => {
    assert.equal(decodeFrame('api-versions-v2.bin').header.headerVersion, 1);
    const metadata = decodeFrame('metadata-v6.bin').body as MetadataRequest;
    assert.deepEqual(
      metadata.topics!.map((t) => t.name),
      ['frames'],
    );
    assert.equal(metadata.allowAutoTopicCreation, true);
    const create = decodeFrame('create-topics-v3.bin').body as CreateTopicsRequest;
    assert.equal(create.topics[0]!.name, 'frames');
    assert.equal(create.topics[0]!.numPartitions, 1);
    assert.equal(create.topics[0]!.replicationFactor, 1);
    assert.equal(create.validateOnly, false);
  });

  it('Produce v7 carries one v2 record batch as a slice', () => {
    const produce = decodeFrame('produce-v7.bin').body as ProduceRequest;
    assert.equal(produce.acks, -1);
    assert.equal(produce.transactionalId, null);
    const partition = produce.topicData[0]!.partitionData[0]!;
    assert.equal(produce.topicData[0]!.name, 'frames');
    assert.equal(partition.index, 0);
    const batch = new RecordBatch(partition.records!, 0);
    assert.equal(batch.magic, 2);
    assert.equal(batch.recordCount, 1);
    assert.equal(batch.baseTimestamp, 1700000000000);
    assert.ok(batch.isCrcValid());
    assert.equal(batch.sizeInBytes, partition.records!.length);
  });

  it('Fetch v11 and the consumer group requests', () => {
    const fetch = decodeFrame('fetch-v11.bin').body as FetchRequest;
    assert.equal(fetch.replicaId, -1);
    assert.equal(fetch.maxWaitMs, 100);
    assert.equal(fetch.isolationLevel, 1);
    assert.equal(fetch.topics[0]!.topic, 'frames');
    assert.equal(fetch.topics[0]!.partitions[0]!.fetchOffset, 0n);
    assert.equal(fetch.rackId, '');
    const join = decodeFrame('join-group-v5.bin').body as JoinGroupRequest;
    assert.equal(join.groupId, 'frames-group');
    assert.equal(join.protocolType, 'consumer');
    assert.ok(join.protocols.length >= 1);
    const sync = decodeFrame('sync-group-v3.bin').body as SyncGroupRequest;
    assert.equal(sync.generationId, 1);
    assert.equal(sync.assignments[0]!.memberId, 'member-1');
    const find = decodeFrame('find-coordinator-v2.bin').body as FindCoordinatorRequest;
    assert.equal(find.key, 'frames-group');
    const offsets = decodeFrame('offset-fetch-v4.bin').body as OffsetFetchRequest;
    assert.equal(offsets.groupId, 'frames-group');
    const list = decodeFrame('list-offsets-v3.bin').body as ListOffsetsRequest;
    assert.equal(list.topics[0]!.partitions[0]!.timestamp, -2n);
  });
});

function kebab(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}
