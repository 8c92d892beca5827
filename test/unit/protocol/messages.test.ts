import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Reader, Writer, ZERO_COPY_BYTES } from '../../../protocol/primitives.ts';
import { schemas } from '../../../protocol/messages/schemas.ts';
import type { MessageSchema } from '../../../protocol/messages/schemas.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { messageArbitrary, versionsOf } from '../../helpers/arbitraries.ts';
import { EncodeError } from '../../../protocol/primitives.ts';
import { decodeProduceRequest, encodeProduceRequest, makeProduceRequest } from '../../../protocol/messages/produce.ts';
import {
  encodeMetadataRequest,
  makeMetadataRequest,
  decodeMetadataResponse,
  encodeMetadataResponse,
  makeMetadataResponse,
} from '../../../protocol/messages/metadata.ts';
import { decodeFetchResponse, encodeFetchResponse, makeFetchResponse } from '../../../protocol/messages/fetch.ts';
import { decodeApiVersionsRequest, encodeApiVersionsRequest } from '../../../protocol/messages/api-versions.ts';
import {
  decodePartitionChangeRecord,
  encodePartitionChangeRecord,
  makePartitionChangeRecord,
} from '../../../protocol/messages/metadata/partition-change-record.ts';
import { RecordType, recordsByType } from '../../../protocol/messages/metadata/index.ts';
import { Errors, KafkaError, errorByCode, isKnownErrorCode } from '../../../protocol/errors.ts';

type Encode = (w: Writer, msg: unknown, version: number) => void;
type Decode = (r: Reader, version: number) => unknown;

function hex(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'hex');
}

function bytesOf(write: (w: Writer) => void): Buffer {
  const w = new Writer();
  write(w);
  return w.toBuffer();
}

const modules = new Map<string, Record<string, unknown>>();
for (const schema of schemas) {
  if (!modules.has(schema.module)) {
    modules.set(
      schema.module,
      (await import(new URL(`../../../protocol/messages/${schema.module.slice(2)}`, import.meta.url).href)) as Record<string, unknown>,
    );
  }
}

function codec(schema: MessageSchema): { encode: Encode; decode: Decode } {
  const mod = modules.get(schema.module)!;
  const encode = mod[`encode${schema.name}`] as Encode | undefined;
  const decode = mod[`decode${schema.name}`] as Decode | undefined;
  assert.ok(encode && decode, `${schema.module} exports encode/decode${schema.name}`);
  return { encode, decode };
}

/** Every Buffer in a message, at any depth. */
function buffersIn(value: unknown): Buffer[] {
  if (Buffer.isBuffer(value)) return [value];
  if (Array.isArray(value)) return value.flatMap(buffersIn);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(buffersIn);
  return [];
}

/** The message with each byte field long enough to be written by reference. */
function withLargeBytes(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return Buffer.alloc(ZERO_COPY_BYTES + 476, value[0] ?? 1);
  if (Array.isArray(value)) return value.map(withLargeBytes);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withLargeBytes(v)]));
  }
  return value;
}

function contiguous(a: Buffer, b: Buffer): boolean {
  return a.buffer === b.buffer && a.byteOffset + a.length === b.byteOffset;
}

function encode(schema: MessageSchema, msg: unknown, version: number): Buffer {
  const w = new Writer();
  codec(schema).encode(w, msg, version);
  return w.toBuffer();
}

describe('generated messages', () => {
  it('cover every API key of the spec with request and response', () => {
    const requests = schemas.filter((s) => s.type === 'request');
    assert.ok(requests.length >= 80);
    for (const req of requests) {
      const api = apis.get(req.apiKey!);
      assert.ok(api, `api ${req.name}`);
      assert.equal(api.minVersion, req.validVersions[0]);
      assert.equal(api.maxVersion, req.validVersions[1]);
      assert.equal(api.flexibleMinVersion, req.flexibleVersions ? req.flexibleVersions[0] : -1);
    }
    assert.equal(ApiKey.Produce, 0);
    assert.equal(ApiKey.ApiVersions, 18);
    assert.equal(apis.get(ApiKey.Fetch)!.name, 'Fetch');
  });

  for (const schema of schemas) {
    it(`${schema.name}: every version round-trips (decode(encode(m)) = m, encode(decode(b)) = b)`, () => {
      const { decode } = codec(schema);
      for (const version of versionsOf(schema)) {
        fc.assert(
          fc.property(messageArbitrary(schema, version), (msg) => {
            const bytes = encode(schema, msg, version);
            const r = new Reader(bytes);
            const decoded = decode(r, version);
            assert.equal(r.remaining(), 0, `v${version}: ${r.remaining()} bytes left`);
            assert.deepStrictEqual(decoded, msg, `v${version}`);
            assert.ok(encode(schema, decoded, version).equals(bytes), `v${version}: re-encoding differs`);
          }),
          { numRuns: 20 },
        );
      }
    });
  }

  // A root encoder reserves its message's footprint before writing: every byte it copies
  // lands in one chunk allocated once, exactly as large as needed, and byte fields of
  // ZERO_COPY_BYTES or more are chunks of their own, uncopied.
  for (const schema of schemas) {
    it(`${schema.name}: every version is written into exactly the room it reserves`, () => {
      const { decode } = codec(schema);
      for (const version of versionsOf(schema)) {
        fc.assert(
          fc.property(messageArbitrary(schema, version), fc.boolean(), (generated, large) => {
            const msg = large ? withLargeBytes(generated) : generated;
            const referenced = new Set(buffersIn(msg).filter((b) => b.length >= ZERO_COPY_BYTES));
            const w = new Writer(0);
            codec(schema).encode(w, msg, version);
            w.int8(0);
            const chunks = w.toChunks();
            const copied = chunks.slice(0, -1).filter((c) => !referenced.has(c));
            for (let i = 1; i < copied.length; i++) {
              assert.ok(contiguous(copied[i - 1]!, copied[i]!), `v${version}: the copied bytes grew into a second chunk`);
            }
            const last = copied.at(-1);
            assert.ok(last === undefined || !contiguous(last, chunks.at(-1)!), `v${version}: more room was reserved than written`);
            assert.ok(chunks.filter((c) => referenced.has(c)).length === referenced.size, `v${version}: a large byte field was copied`);
            if (large) {
              const bytes = Buffer.concat(chunks.slice(0, -1));
              assert.deepStrictEqual(decode(new Reader(bytes), version), msg, `v${version}`);
            }
          }),
          { numRuns: 10 },
        );
      }
    });
  }

  describe("Kafka's encoding rules", () => {
    it('refuses a non-default value in a version lacking a non-ignorable field', () => {
      const msg = makeProduceRequest({ transactionalId: 'tx' });
      assert.throws(
        () => encodeProduceRequest(new Writer(), msg, 2),
        (e: unknown) => e instanceof EncodeError && /transactionalId/.test(e.message),
      );
      // The default (null) is fine at v2, and a non-default value is fine from v3.
      encodeProduceRequest(new Writer(), makeProduceRequest(), 2);
      encodeProduceRequest(new Writer(), msg, 3);
      // MetadataRequest.allowAutoTopicCreation (v4+, default true, not ignorable)
      assert.throws(() => encodeMetadataRequest(new Writer(), makeMetadataRequest({ allowAutoTopicCreation: false }), 3), EncodeError);
    });

    it('silently drops an ignorable field the version lacks', () => {
      const msg = makeMetadataResponse({ throttleTimeMs: 500, clusterId: 'c', controllerId: 4 });
      const bytes = bytesOf((w) => encodeMetadataResponse(w, msg, 0));
      assert.deepEqual(bytes, hex('00000000 00000000'));
      const back = decodeMetadataResponse(new Reader(bytes), 0);
      assert.equal(back.throttleTimeMs, 0);
      assert.equal(back.clusterId, null);
      assert.equal(back.controllerId, -1);
    });

    it('refuses null where the version is not nullable', () => {
      assert.throws(() => encodeMetadataRequest(new Writer(), makeMetadataRequest({ topics: null }), 0), EncodeError);
      assert.deepEqual(
        bytesOf((w) => encodeMetadataRequest(w, makeMetadataRequest({ topics: null }), 1)),
        hex('ffffffff'),
      );
    });

    it('writes tagged fields only when they differ from their default, in tag order', () => {
      const base = makePartitionChangeRecord({ partitionId: 7 });
      const plain = bytesOf((w) => encodePartitionChangeRecord(w, base, 0));
      assert.deepEqual(plain, hex('00000007 00000000000000000000000000000000 00'));
      const changed = bytesOf((w) => encodePartitionChangeRecord(w, { ...base, leader: 3, isr: [1, 2] }, 0));
      // two tagged fields: tag 0 (isr: compact array of 2) and tag 1 (leader int32)
      assert.deepEqual(changed, hex('00000007 00000000000000000000000000000000 02 00 09 03 00000001 00000002 01 04 00000003'));
      assert.deepEqual(decodePartitionChangeRecord(new Reader(changed), 0), { ...base, leader: 3, isr: [1, 2] });
    });

    it('decodes fields a version lacks to their Kafka defaults', () => {
      const r = decodeFetchResponse(
        new Reader(
          bytesOf((w) =>
            encodeFetchResponse(
              w,
              makeFetchResponse({
                responses: [{ topic: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: [] }],
              }),
              4,
            ),
          ),
        ),
        4,
      );
      assert.equal(r.errorCode, 0);
      assert.equal(r.sessionId, 0);
      assert.equal(r.responses[0]!.topic, 't');
      assert.deepEqual(r.nodeEndpoints, []);
    });

    it('keeps records as a slice of the input, without copying', () => {
      const records = Buffer.alloc(8192, 7);
      const frame = bytesOf((w) =>
        encodeProduceRequest(
          w,
          makeProduceRequest({
            acks: -1,
            timeoutMs: 30000,
            topicData: [{ name: 't', partitionData: [{ index: 0, records }] }],
          }),
          9,
        ),
      );
      const decoded = decodeProduceRequest(new Reader(frame), 9);
      const slice = decoded.topicData[0]!.partitionData[0]!.records!;
      assert.equal(slice.buffer, frame.buffer, 'same memory as the frame');
      assert.ok(slice.equals(records));
    });

    it('carries int64 fields as bigint', () => {
      const bytes = bytesOf((w) =>
        encodeFetchResponse(
          w,
          makeFetchResponse({
            responses: [
              {
                topic: 't',
                topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
                partitions: [
                  {
                    partitionIndex: 0,
                    errorCode: 0,
                    highWatermark: 2n ** 62n,
                    lastStableOffset: -1n,
                    logStartOffset: 0n,
                    divergingEpoch: { epoch: -1, endOffset: -1n },
                    currentLeader: { leaderId: -1, leaderEpoch: -1 },
                    snapshotId: { endOffset: -1n, epoch: -1 },
                    abortedTransactions: null,
                    preferredReadReplica: -1,
                    records: null,
                  },
                ],
              },
            ],
          }),
          11,
        ),
      );
      assert.equal(decodeFetchResponse(new Reader(bytes), 11).responses[0]!.partitions[0]!.highWatermark, 2n ** 62n);
    });

    it('encodes ApiVersionsRequest v3 as Kafka does', () => {
      const msg = { clientSoftwareName: 'sluice', clientSoftwareVersion: '1.0' };
      const bytes = bytesOf((w) => encodeApiVersionsRequest(w, msg, 3));
      assert.deepEqual(bytes, Buffer.concat([hex('07'), Buffer.from('sluice'), hex('04'), Buffer.from('1.0'), hex('00')]));
      assert.deepEqual(decodeApiVersionsRequest(new Reader(bytes), 3), msg);
      // v0-v2 have an empty body and drop the ignorable client software fields
      assert.equal(bytesOf((w) => encodeApiVersionsRequest(w, msg, 2)).length, 0);
    });

    it('indexes metadata records by their type id', () => {
      assert.equal(RecordType.PartitionChangeRecord, 5);
      assert.equal(recordsByType.get(5)!.name, 'PartitionChangeRecord');
      assert.equal(recordsByType.get(RecordType.TopicRecord)!.maxVersion >= 0, true);
    });
  });
});

describe('Kafka error codes', () => {
  it("holds every code from -1 to the newest exactly once, with Kafka's names", () => {
    const codes = Object.values(Errors)
      .map((e) => e.code)
      .sort((a, b) => a - b);
    assert.equal(new Set(codes).size, codes.length);
    assert.deepEqual(
      codes,
      Array.from({ length: codes.length }, (_, i) => i - 1),
      'no gaps between -1 and the newest code',
    );
    assert.ok(codes.length > 130);
    assert.equal(Errors.UNKNOWN_TOPIC_OR_PARTITION.code, 3);
    assert.equal(Errors.NOT_LEADER_OR_FOLLOWER.code, 6);
    assert.equal(Errors.UNSUPPORTED_VERSION.code, 35);
    assert.equal(Errors.FETCH_SESSION_ID_NOT_FOUND.code, 70);
    assert.equal(Errors.UNKNOWN_TOPIC_ID.code, 100);
    for (const [name, e] of Object.entries(Errors)) assert.equal(e.name, name);
  });

  it("marks retriable errors as Kafka's client does", () => {
    for (const e of [
      Errors.NOT_LEADER_OR_FOLLOWER,
      Errors.REQUEST_TIMED_OUT,
      Errors.NOT_ENOUGH_REPLICAS,
      Errors.COORDINATOR_LOAD_IN_PROGRESS,
      Errors.CORRUPT_MESSAGE,
    ]) {
      assert.equal(e.retriable, true, e.name);
    }
    for (const e of [
      Errors.NONE,
      Errors.UNKNOWN_SERVER_ERROR,
      Errors.OFFSET_OUT_OF_RANGE,
      Errors.PRODUCER_FENCED,
      Errors.REBALANCE_IN_PROGRESS,
    ]) {
      assert.equal(e.retriable, false, e.name);
    }
  });

  it('looks codes up, mapping unknown ones to UNKNOWN_SERVER_ERROR', () => {
    assert.equal(errorByCode(3), Errors.UNKNOWN_TOPIC_OR_PARTITION);
    assert.equal(errorByCode(0), Errors.NONE);
    assert.equal(errorByCode(9999), Errors.UNKNOWN_SERVER_ERROR);
    assert.equal(isKnownErrorCode(9999), false);
    const err = new KafkaError(Errors.NOT_COORDINATOR);
    assert.equal(err.code, 16);
    assert.equal(err.retriable, true);
    assert.equal(err.message, 'This is not the correct coordinator.');
    assert.equal(new KafkaError(Errors.INVALID_REQUEST, 'bad').message, 'bad');
  });
});
