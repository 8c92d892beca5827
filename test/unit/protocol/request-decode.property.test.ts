// Hostile bytes at the request decoders: whatever a client sends, decoding ends in a request
// or a DecodeError, never another exception (RangeError, TypeError, a huge allocation...).
// Every API key and every version is covered, with random bytes and with mutations (bit
// flips, truncations, overwritten lengths) of valid encodings.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { apis } from '../../../protocol/messages/index.ts';
import type { ApiDescriptor } from '../../../protocol/messages/index.ts';
import { schemas } from '../../../protocol/messages/schemas.ts';
import { decodeRequestHeader, encodeRequestHeader } from '../../../protocol/headers.ts';
import { DecodeError, Reader, Writer } from '../../../protocol/primitives.ts';
import { messageArbitrary } from '../../helpers/arbitraries.ts';

interface Target {
  api: ApiDescriptor;
  version: number;
}

// REQUEST_DECODE_RUNS_SCALE=20 for a longer local run.
const SCALE = Math.max(1, Number(process.env.REQUEST_DECODE_RUNS_SCALE ?? 1));
const runs = (n: number): number => n * SCALE;

const targets: Target[] = [];
for (const api of apis.values()) {
  for (let v = api.minVersion; v <= api.maxVersion; v++) targets.push({ api, version: v });
}

const requestSchema = new Map(schemas.filter((s) => s.type === 'request' && s.apiKey !== null).map((s) => [s.apiKey!, s]));

function describeInput(t: Target, buf: Buffer): string {
  return `${t.api.name} v${t.version} on ${buf.subarray(0, 256).toString('hex')}${buf.length > 256 ? '...' : ''}`;
}

/** Decodes; returns the exception if it is anything but a DecodeError. */
function decodeOnly(t: Target, buf: Buffer): void {
  try {
    t.api.decodeRequest(new Reader(buf), t.version);
  } catch (e) {
    if (!(e instanceof DecodeError)) assert.fail(`${describeInput(t, buf)}: ${(e as Error)?.stack ?? String(e)}`);
  }
}

function headerOnly(buf: Buffer): void {
  try {
    decodeRequestHeader(new Reader(buf));
  } catch (e) {
    if (!(e instanceof DecodeError)) assert.fail(`header ${buf.toString('hex')}: ${(e as Error)?.stack ?? String(e)}`);
  }
}

// Values a hostile length field takes: negative, zero, one past, huge.
const HOSTILE_INT32 = [-1, -2, 0, 1, 0x7fff, 0x8000, 0xffff, 0x7fffffff, -0x80000000];
const HOSTILE_UVARINT = [
  Buffer.from([0x00]),
  Buffer.from([0x7f]),
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
  Buffer.from([0xfe, 0xff, 0xff, 0xff, 0x0f]),
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
  Buffer.from([0x80, 0x80, 0x80, 0x80, 0x10]),
];

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'int32'; at: number; value: number }
  | { kind: 'int16'; at: number; value: number }
  | { kind: 'uvarint'; at: number; which: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('int32' as const), at: fc.nat(), value: fc.constantFrom(...HOSTILE_INT32) }),
  fc.record({ kind: fc.constant('int16' as const), at: fc.nat(), value: fc.constantFrom(-1, -2, 0, 0x7fff, -0x8000) }),
  fc.record({ kind: fc.constant('uvarint' as const), at: fc.nat(), which: fc.nat({ max: HOSTILE_UVARINT.length - 1 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
);

function mutate(valid: Buffer, m: Mutation): Buffer {
  if (valid.length === 0) return m.kind === 'insert' ? Buffer.from(m.bytes) : valid;
  const at = m.at % valid.length;
  const out = Buffer.from(valid);
  switch (m.kind) {
    case 'flip':
      out[at]! ^= 1 << m.bit;
      return out;
    case 'truncate':
      return out.subarray(0, at);
    case 'int32':
      if (at + 4 <= out.length) out.writeInt32BE(m.value, at);
      return out;
    case 'int16':
      if (at + 2 <= out.length) out.writeInt16BE(m.value, at);
      return out;
    case 'uvarint':
      return Buffer.concat([out.subarray(0, at), HOSTILE_UVARINT[m.which]!, out.subarray(at + 1)]);
    case 'insert':
      return Buffer.concat([out.subarray(0, at), Buffer.from(m.bytes), out.subarray(at)]);
  }
}

describe('request decoders on hostile bytes', () => {
  it('covers every API key and version', () => {
    assert.ok(targets.length > 300, `${targets.length} (api, version) pairs`);
    for (const api of apis.values()) assert.ok(requestSchema.has(api.apiKey), `no request schema for ${api.name}`);
  });

  it('random bytes into every request decoder, every version, end in a request or a DecodeError', () => {
    for (const t of targets) {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 96 }), (bytes) => decodeOnly(t, Buffer.from(bytes))),
        { numRuns: runs(40) },
      );
    }
  });

  it('mutated valid encodings (bit flips, truncations, hostile lengths) end in a request or a DecodeError', () => {
    for (const t of targets) {
      const schema = requestSchema.get(t.api.apiKey)!;
      const arb = messageArbitrary(schema, t.version).map((msg) => {
        const w = new Writer();
        t.api.encodeRequest(w, msg, t.version);
        return w.toBuffer();
      });
      fc.assert(
        fc.property(arb, fc.array(mutationArb, { minLength: 1, maxLength: 4 }), (valid, mutations) => {
          let buf = valid;
          for (const m of mutations) buf = mutate(buf, m);
          decodeOnly(t, buf);
        }),
        { numRuns: runs(25) },
      );
    }
  });

  it('every prefix of a valid encoding ends in a request or a DecodeError', () => {
    for (const t of targets) {
      const schema = requestSchema.get(t.api.apiKey)!;
      fc.assert(
        fc.property(messageArbitrary(schema, t.version), (msg) => {
          const w = new Writer();
          t.api.encodeRequest(w, msg, t.version);
          const bytes = w.toBuffer();
          for (let n = 0; n < bytes.length; n++) decodeOnly(t, bytes.subarray(0, n));
        }),
        { numRuns: runs(3) },
      );
    }
  });

  it('huge declared lengths cost no memory', () => {
    const before = process.memoryUsage().heapUsed;
    const big = [Buffer.from('7fffffff', 'hex'), Buffer.from('feffffff0f', 'hex'), Buffer.from('7fff', 'hex')];
    for (const t of targets) {
      for (const prefix of big) {
        for (let pad = 0; pad < 12; pad += 3) decodeOnly(t, Buffer.concat([Buffer.alloc(pad, 0), prefix, Buffer.alloc(16, 0x41)]));
      }
    }
    assert.ok(process.memoryUsage().heapUsed - before < 64 * 1024 * 1024);
  });
});

describe('decodeRequestHeader on hostile bytes', () => {
  it('random bytes end in a header or a DecodeError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => headerOnly(Buffer.from(bytes))),
      { numRuns: runs(5000) },
    );
  });

  it('any api key and version, with a random tail, end in a header or a DecodeError', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -32768, max: 32767 }),
        fc.integer({ min: -32768, max: 32767 }),
        fc.uint8Array({ maxLength: 40 }),
        (apiKey, apiVersion, tail) => {
          const head = Buffer.alloc(4);
          head.writeInt16BE(apiKey, 0);
          head.writeInt16BE(apiVersion, 2);
          headerOnly(Buffer.concat([head, Buffer.from(tail)]));
        },
      ),
      { numRuns: runs(5000) },
    );
  });

  it('mutated valid headers for every API key and version end in a header or a DecodeError', () => {
    for (const t of targets) {
      fc.assert(
        fc.property(
          fc.integer(),
          fc.option(fc.string({ maxLength: 20 }), { nil: null }),
          fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
          (correlationId, clientId, mutations) => {
            const w = new Writer();
            encodeRequestHeader(w, { requestApiKey: t.api.apiKey, requestApiVersion: t.version, correlationId, clientId });
            let buf = w.toBuffer();
            for (const m of mutations) buf = mutate(buf, m);
            headerOnly(buf);
          },
        ),
        { numRuns: runs(10) },
      );
    }
  });

  it('a header read from a Reader over a sub-range never reads past its end', () => {
    // A frame inside a larger buffer: the header decoder must honour Reader.end, not buf.length.
    const w = new Writer();
    encodeRequestHeader(w, { requestApiKey: 3, requestApiVersion: 12, correlationId: 7, clientId: 'abc' });
    const header = w.toBuffer();
    const backing = Buffer.concat([Buffer.alloc(3, 0xee), header, Buffer.alloc(8, 0xee)]);
    for (let n = 0; n < header.length; n++) {
      const r = new Reader(backing, 3, 3 + n);
      assert.throws(() => decodeRequestHeader(r), DecodeError, `cut at ${n}`);
    }
    const h = decodeRequestHeader(new Reader(backing, 3, 3 + header.length));
    assert.equal(h.correlationId, 7);
    assert.equal(h.clientId, 'abc');
  });
});
