// Produce validation against the real broker process over a raw socket: batches whose CRC is
// valid but whose contents are garbage (bad compressed streams, bad varints, a decompression
// bomb, inconsistent producer fields, keyless records on a compacted topic) are refused with
// Kafka's error code, nothing of them is stored, and the broker keeps serving.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as zlib from 'node:zlib';
import { compress } from '../../../protocol/compression/index.ts';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsRequestCreatableTopicConfig,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
  type ListOffsetsResponse,
} from '../../../protocol/messages/list-offsets.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
  type ProduceResponsePartitionProduceResponse,
} from '../../../protocol/messages/produce.ts';
import { ATTRIBUTES, CompressionType, RECORD_BATCH_OVERHEAD, TRANSACTIONAL_BIT } from '../../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { resealCrc, sealBatch } from '../../helpers/record-batches.ts';
import { eventually } from '../../helpers/wait.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call, frame } from '../../helpers/raw-requests.ts';

const TOPIC = 'produce-validation';
const COMPACTED = 'produce-validation-compacted';
const PRODUCE_VERSION = 9;
async function produce(
  client: RawClient,
  topic: string,
  records: Buffer,
  transactionalId: string | null = null,
): Promise<ProduceResponsePartitionProduceResponse> {
  const res = await call<ProduceResponse>(
    client,
    ApiKey.Produce,
    PRODUCE_VERSION,
    makeProduceRequest({
      transactionalId,
      acks: -1,
      timeoutMs: 5000,
      topicData: [
        makeProduceRequestTopicProduceData({ name: topic, partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records })] }),
      ],
    }),
  );
  return res.responses[0]!.partitionResponses[0]!;
}

async function endOffset(client: RawClient, topic: string): Promise<bigint> {
  const res = await call<ListOffsetsResponse>(
    client,
    ApiKey.ListOffsets,
    7,
    makeListOffsetsRequest({
      replicaId: -1,
      topics: [
        makeListOffsetsRequestListOffsetsTopic({
          name: topic,
          partitions: [makeListOffsetsRequestListOffsetsPartition({ partitionIndex: 0, timestamp: -1n })],
        }),
      ],
    }),
  );
  const p = res.topics[0]!.partitions[0]!;
  assert.equal(p.errorCode, Errors.NONE.code);
  return p.offset;
}

function records(
  n: number,
  key: (i: number) => Buffer | null = (i) => Buffer.from(`k${i}`),
  compression = CompressionType.None,
): Promise<Buffer> {
  const now = Date.now();
  return buildRecordBatch(
    { compression },
    Array.from({ length: n }, (_, i) => ({ key: key(i), value: Buffer.from(`v${i}`), timestamp: now })),
  );
}

/** 200 MiB of one record's value, gzipped to ~200 KB, behind a record header that declares it. */
async function gzipBomb(): Promise<Buffer> {
  const valueBytes = 200 * 1024 * 1024;
  const zigzag = (v: number): number[] => {
    let u = v * 2;
    const out: number[] = [];
    while (u >= 0x80) {
      out.push((u & 0x7f) | 0x80);
      u = Math.floor(u / 128);
    }
    out.push(u);
    return out;
  };
  const valueLength = zigzag(valueBytes);
  const header = Buffer.from([...zigzag(valueBytes + 5 + valueLength.length), 0, 0, 0, 1, ...valueLength]);
  const gzip = zlib.createGzip({ level: 9 });
  const parts: Buffer[] = [];
  gzip.on('data', (c: Buffer) => parts.push(c));
  const done = once(gzip, 'end');
  gzip.write(header);
  const zeros = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < 200; i++) if (!gzip.write(zeros)) await once(gzip, 'drain');
  gzip.end(Buffer.from([0]));
  await done;
  return Buffer.concat(parts);
}

describe('Produce validation (raw socket, real broker process)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let client: RawClient;

  before(async () => {
    broker = await spawnBroker();
    client = await RawClient.connect(broker.port, broker.host);
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
    const created = await call<CreateTopicsResponse>(
      client,
      ApiKey.CreateTopics,
      5,
      makeCreateTopicsRequest({
        timeoutMs: 10_000,
        topics: [
          makeCreateTopicsRequestCreatableTopic({
            name: COMPACTED,
            numPartitions: 1,
            replicationFactor: 1,
            configs: [makeCreateTopicsRequestCreatableTopicConfig({ name: 'cleanup.policy', value: 'compact' })],
          }),
        ],
      }),
    );
    assert.equal(created.topics[0]!.errorCode, Errors.NONE.code, created.topics[0]!.errorMessage ?? '');
    // A partition takes its leader from the next metadata change: produce until it is there.
    for (const topic of [TOPIC, COMPACTED]) {
      for (;;) {
        const p = await produce(client, topic, await records(1));
        if (p.errorCode === Errors.NONE.code) break;
        assert.ok(
          [Errors.NOT_LEADER_OR_FOLLOWER.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code].includes(p.errorCode),
          `error ${p.errorCode}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  });

  after(async () => {
    client?.close();
    await broker?.cleanup();
  });

  /** Sends `batch`, expects `errorCode`, nothing stored, and a broker that still answers. */
  async function refused(
    topic: string,
    batch: Buffer,
    errorCode: number,
    transactionalId: string | null = null,
  ): Promise<ProduceResponsePartitionProduceResponse> {
    const before = await endOffset(client, topic);
    const p = await produce(client, topic, batch, transactionalId);
    assert.equal(p.errorCode, errorCode, `expected ${errorCode}, got ${p.errorCode}: ${p.errorMessage}`);
    assert.equal(p.baseOffset, -1n);
    assert.equal(await endOffset(client, topic), before, 'the refused batch was stored');
    assert.equal(broker.child.exitCode, null, 'the broker exited');
    const versions = await call<ApiVersionsResponse>(
      client,
      ApiKey.ApiVersions,
      3,
      makeApiVersionsRequest({
        clientSoftwareName: 'produce-validation-test',
        clientSoftwareVersion: '1',
      }),
    );
    assert.equal(versions.errorCode, Errors.NONE.code);
    return p;
  }

  for (const codec of [CompressionType.Gzip, CompressionType.Snappy, CompressionType.Lz4, CompressionType.Zstd]) {
    it(`refuses garbage, empty and truncated ${CompressionType[codec]} payloads with CORRUPT_MESSAGE`, async () => {
      const good = await records(20, undefined, codec);
      const payload = good.subarray(RECORD_BATCH_OVERHEAD);
      await refused(TOPIC, sealBatch(good, Buffer.from('definitely not a compressed record stream'), codec), Errors.CORRUPT_MESSAGE.code);
      await refused(TOPIC, sealBatch(good, Buffer.alloc(0), codec), Errors.CORRUPT_MESSAGE.code);
      await refused(TOPIC, sealBatch(good, payload.subarray(0, payload.length - 4), codec), Errors.CORRUPT_MESSAGE.code);
      // Valid compression of invalid records: the stream decompresses, the records do not parse.
      const bad = await compress(codec, Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0]));
      await refused(TOPIC, sealBatch(good, bad, codec, 1), Errors.INVALID_RECORD.code);
    });
  }

  it('refuses a record whose length varint is longer than 5 bytes with INVALID_RECORD', async () => {
    const template = await records(1);
    const p = await refused(
      TOPIC,
      sealBatch(template, Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0, 0, 1, 1, 0]), CompressionType.None, 1),
      Errors.INVALID_RECORD.code,
    );
    assert.match(p.errorMessage ?? '', /varint longer than 5 bytes/);
  });

  it('refuses a 200 KB gzip bomb that inflates to 200 MiB without holding it', async () => {
    const bomb = await gzipBomb();
    assert.ok(bomb.length < 400 * 1024, `bomb is ${bomb.length} bytes`);
    const template = await records(1);
    const started = Date.now();
    await refused(TOPIC, sealBatch(template, bomb, CompressionType.Gzip, 1), Errors.INVALID_RECORD.code);
    assert.ok(Date.now() - started < 5000, 'the bomb was inflated');
    // A bomb of zeros (no valid record at all) stops at its first record too.
    const zeros = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024));
    await refused(TOPIC, sealBatch(template, zeros, CompressionType.Gzip, 1), Errors.INVALID_RECORD.code);
  });

  it('refuses transactional records in a request without a transactional id with TRANSACTIONAL_ID_AUTHORIZATION_FAILED', async () => {
    const b = await records(1);
    b.writeInt16BE(b.readInt16BE(ATTRIBUTES) | TRANSACTIONAL_BIT, ATTRIBUTES);
    await refused(TOPIC, resealCrc(b), Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code);
  });

  it('closes the connection of an acks=0 produce refused as a whole, logs it and lives on', async () => {
    const b = await records(1);
    b.writeInt16BE(b.readInt16BE(ATTRIBUTES) | TRANSACTIONAL_BIT, ATTRIBUTES);
    const other = await RawClient.connect(broker.port, broker.host);
    other.send(
      frame(
        ApiKey.Produce,
        PRODUCE_VERSION,
        makeProduceRequest({
          acks: 0,
          timeoutMs: 5000,
          topicData: [
            makeProduceRequestTopicProduceData({
              name: TOPIC,
              partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records: resealCrc(b) })],
            }),
          ],
        }),
        'acks-zero',
      ).bytes,
    );
    await other.whenClosed();
    const refusal = /TRANSACTIONAL_ID_AUTHORIZATION_FAILED|Transactional records were sent without a transactional id/;
    await eventually('the refusal in the log', () => refusal.test(broker.stderr()), 10_000).catch(() => undefined);
    assert.equal(broker.child.exitCode, null, 'the broker exited');
    assert.match(broker.stdout() + broker.stderr(), refusal);
    const versions = await call<ApiVersionsResponse>(
      client,
      ApiKey.ApiVersions,
      3,
      makeApiVersionsRequest({
        clientSoftwareName: 'produce-validation-test',
        clientSoftwareVersion: '1',
      }),
    );
    assert.equal(versions.errorCode, Errors.NONE.code);
  });

  it('refuses a transactional batch without a producer id with INVALID_RECORD', async () => {
    const b = await records(1);
    b.writeInt16BE(b.readInt16BE(ATTRIBUTES) | TRANSACTIONAL_BIT, ATTRIBUTES);
    const p = await refused(TOPIC, resealCrc(b), Errors.INVALID_RECORD.code, 'txn-1');
    assert.match(p.errorMessage ?? '', /Cannot write transactional messages without a valid producer ID/);
  });

  it('lists every keyless record of a batch to a compacted topic (KIP-467), as librdkafka test 0011 expects', async () => {
    const b = await records(100, (i) => (i === 0 || i === 2 || i === 4 ? null : Buffer.from(`k${i}`)));
    const p = await refused(COMPACTED, b, Errors.INVALID_RECORD.code);
    assert.deepEqual(
      p.recordErrors.map((e) => e.batchIndex),
      [0, 2, 4],
    );
    for (const e of p.recordErrors) {
      assert.equal(e.batchIndexErrorMessage, `Compacted topic cannot accept message without key in topic partition ${COMPACTED}-0`);
    }
    assert.match(p.errorMessage ?? '', /^One or more records have been rejected due to 3 record errors in total/);
    // The same batch with keys everywhere is stored.
    const ok = await produce(client, COMPACTED, await records(100));
    assert.equal(ok.errorCode, Errors.NONE.code);
  });
});
