import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DecodeError, Reader, Writer } from '../../../protocol/primitives.ts';
import { schemas } from '../../../protocol/messages/schemas.ts';
import type { MessageSchema } from '../../../protocol/messages/schemas.ts';
import { decodeMetadataRequest, encodeMetadataRequest, makeMetadataRequest } from '../../../protocol/messages/metadata.ts';
import { decodeProduceRequest } from '../../../protocol/messages/produce.ts';
import { decodeFetchRequest, encodeFetchRequest, makeFetchRequest } from '../../../protocol/messages/fetch.ts';
import {
  decodePartitionChangeRecord,
  encodePartitionChangeRecord,
  makePartitionChangeRecord,
} from '../../../protocol/messages/metadata/partition-change-record.ts';
import { messageArbitrary, versionsOf } from '../../helpers/arbitraries.ts';

type Decode = (r: Reader, version: number) => unknown;
type Encode = (w: Writer, msg: unknown, version: number) => void;

const modules = new Map<string, Record<string, unknown>>();
for (const schema of schemas) {
  if (!modules.has(schema.module)) {
    modules.set(
      schema.module,
      (await import(new URL(`../../../protocol/messages/${schema.module.slice(2)}`, import.meta.url).href)) as Record<string, unknown>,
    );
  }
}
const decoderOf = (s: MessageSchema) => modules.get(s.module)![`decode${s.name}`] as Decode;
const encoderOf = (s: MessageSchema) => modules.get(s.module)![`encode${s.name}`] as Encode;

function hex(text: string): Buffer {
  return Buffer.from(text.replace(/\s+/g, ''), 'hex');
}

function decodeFails(decode: Decode, buf: Buffer, version: number, pattern?: RegExp): void {
  assert.throws(
    () => decode(new Reader(buf), version),
    (e: unknown) => {
      assert.ok(e instanceof DecodeError, `expected a DecodeError, got ${String(e)}`);
      if (pattern) assert.match(e.message, pattern);
      return true;
    },
  );
}

const schemaAndVersion = fc
  .constantFrom(...schemas)
  .chain((schema) => fc.constantFrom(...versionsOf(schema)).map((version) => ({ schema, version })));

describe('decoding hostile input', () => {
  it('every truncation of a valid message is a DecodeError', () => {
    fc.assert(
      fc.property(
        schemaAndVersion.chain(({ schema, version }) => messageArbitrary(schema, version).map((msg) => ({ schema, version, msg }))),
        ({ schema, version, msg }) => {
          const w = new Writer();
          encoderOf(schema)(w, msg, version);
          const bytes = w.toBuffer();
          for (let n = 0; n < bytes.length; n++) {
            let err: unknown;
            try {
              const r = new Reader(bytes, 0, n);
              decoderOf(schema)(r, version);
            } catch (e) {
              err = e;
            }
            // A prefix may itself be a complete, shorter message (e.g. empty arrays); what must
            // never happen is an error other than DecodeError.
            if (err !== undefined) assert.ok(err instanceof DecodeError, `${schema.name} v${version} cut at ${n}: ${String(err)}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('random bytes into every decoder raise nothing but DecodeError', () => {
    fc.assert(
      fc.property(schemaAndVersion, fc.uint8Array({ maxLength: 64 }), ({ schema, version }, bytes) => {
        try {
          decoderOf(schema)(new Reader(Buffer.from(bytes)), version);
        } catch (e) {
          assert.ok(e instanceof DecodeError, `${schema.name} v${version} on ${Buffer.from(bytes).toString('hex')}: ${String(e)}`);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('a truncated Produce frame is a DecodeError', () => {
    // v3: transactional id null, acks -1, timeout, 1 topic "t", 1 partition, records of 100 bytes with 3 present
    decodeFails(decodeProduceRequest, hex('ffff ffff 00001388 00000001 0001 74 00000001 00000000 00000064 010203'), 3, /bytes/);
  });

  it('negative string, bytes and array lengths are DecodeErrors', () => {
    // Metadata v1: topics array of 1 with a string of length -2
    decodeFails(decodeMetadataRequest, hex('00000001 fffe'), 1, /negative length/);
    // Metadata v1: array count -2
    decodeFails(decodeMetadataRequest, hex('fffffffe'), 1, /negative length/);
    // Produce v3 records with length -7
    decodeFails(decodeProduceRequest, hex('ffff ffff 00001388 00000001 0001 74 00000001 00000000 fffffff9'), 3, /negative length/);
    // A non-nullable array sent as null (-1)
    decodeFails(decodeProduceRequest, hex('ffff ffff 00001388 ffffffff'), 3, /null/);
  });

  it('array counts in the billions are refused before anything is allocated', () => {
    const before = process.memoryUsage().heapUsed;
    decodeFails(decodeMetadataRequest, hex('7fffffff 0001 61'), 1, /cannot fit/);
    // Compact (flexible) count: uvarint 0xfffffffe -> 4294967293 elements
    decodeFails(decodeMetadataRequest, hex('feffffff0f 00'), 12, /cannot fit/);
    // Fetch v4 topics: 2^31-1 topics of at least 6 bytes each in 10 bytes
    decodeFails(decodeFetchRequest, hex('ffffffff 00000000 00000000 00000000 00 7fffffff 0000000000000000'), 4, /cannot fit/);
    assert.ok(process.memoryUsage().heapUsed - before < 50 * 1024 * 1024);
  });

  it('varints longer than 5 bytes and varlongs longer than 10 are DecodeErrors', () => {
    assert.throws(() => new Reader(hex('ffffffffff01')).uvarint(), DecodeError);
    assert.throws(() => new Reader(hex('8080808080808080808001')).uvarlong(), DecodeError);
    // A flexible message whose array length is a 6-byte varint
    decodeFails(decodeMetadataRequest, hex('818080808000'), 12, /uvarint/);
  });

  it('unknown tagged fields are skipped', () => {
    const w = new Writer();
    encodeMetadataRequest(w, makeMetadataRequest({ topics: null, allowAutoTopicCreation: true }), 12);
    const plain = w.toBuffer();
    // Replace the final empty tagged section (00) by two unknown tags: 7 (2 bytes) and 90 (0 bytes).
    const tagged = Buffer.concat([plain.subarray(0, plain.length - 1), hex('02 07 02 abcd 5a 00')]);
    const m = decodeMetadataRequest(new Reader(tagged), 12);
    assert.equal(m.topics, null);
    assert.equal(m.allowAutoTopicCreation, true);
  });

  it('known tagged fields decode, and out-of-order or duplicate tags are DecodeErrors', () => {
    const w = new Writer();
    encodePartitionChangeRecord(w, makePartitionChangeRecord({ partitionId: 1, leader: 3, isr: [1, 2] }), 0);
    const bytes = w.toBuffer();
    const m = decodePartitionChangeRecord(new Reader(bytes), 0);
    assert.equal(m.leader, 3);
    assert.deepEqual(m.isr, [1, 2]);
    assert.equal(m.replicas, null);
    // header: int32 partition id + 16-byte uuid, then the tagged section
    const head = bytes.subarray(0, 20);
    // tag 1 (leader = 3) before tag 0 (isr = [1])
    decodeFails(decodePartitionChangeRecord, Buffer.concat([head, hex('02 01 04 00000003 00 03 02 00000001')]), 0, /out of order/);
    decodeFails(decodePartitionChangeRecord, Buffer.concat([head, hex('02 01 04 00000003 01 04 00000003')]), 0, /out of order/);
  });

  it('a known tag in a version where its field is not tagged is a DecodeError, as in Kafka', () => {
    const replicaState = hex('01 01 0d 00000001 0000000000000002 00');
    for (const [version, ok] of [
      [12, false],
      [15, true],
    ] as const) {
      const plain = new Writer();
      encodeFetchRequest(plain, makeFetchRequest(), version);
      const bytes = plain.toBuffer();
      const withTag = Buffer.concat([bytes.subarray(0, bytes.length - 1), replicaState]);
      if (ok) {
        assert.deepEqual(decodeFetchRequest(new Reader(withTag), version).replicaState, { replicaId: 1, replicaEpoch: 2n });
      } else {
        decodeFails(decodeFetchRequest, withTag, version, /tag 1 is not valid for version 12/);
      }
    }
  });

  it('a tagged field whose size disagrees with its content is a DecodeError', () => {
    const head = hex('00000001 00000000000000000000000000000000');
    // leader declared as 5 bytes but an int32 takes 4
    decodeFails(decodePartitionChangeRecord, Buffer.concat([head, hex('01 01 05 0000000300')]), 0, /left over/);
    // leader declared as 2 bytes
    decodeFails(decodePartitionChangeRecord, Buffer.concat([head, hex('01 01 02 0000')]), 0, /int32/);
    // a size beyond the end of the buffer
    decodeFails(decodePartitionChangeRecord, Buffer.concat([head, hex('01 01 7f 00000003')]), 0, /tagged field/);
    // a tag count larger than the bytes left
    decodeFails(decodePartitionChangeRecord, Buffer.concat([head, hex('7f 01 04 00000003')]), 0);
  });

  it('unsupported versions are refused on both sides', () => {
    decodeFails(decodeFetchRequest, hex('00'), 99, /unsupported version/);
    assert.throws(() => encodeFetchRequest(new Writer(), makeFetchRequest(), -1), /unsupported version/);
  });
});
