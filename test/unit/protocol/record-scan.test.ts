import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RecordBatch } from '../../../protocol/records/batch.ts';
import { buildUncompressedRecordBatch } from '../../../protocol/records/builder.ts';
import { RecordFault, RecordScanner, type RecordScanOptions } from '../../../protocol/records/scan.ts';

const BASE_TIMESTAMP = 1_700_000_000_000;

/** The values an arbitrary generates. */
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

const recordArb = fc.record({
  key: fc.option(fc.uint8Array({ maxLength: 40 }), { nil: null }),
  value: fc.option(fc.uint8Array({ maxLength: 300 }), { nil: null }),
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 8 }), value: fc.option(fc.uint8Array({ maxLength: 20 }), { nil: null }) }), {
    maxLength: 3,
  }),
  timestampDelta: fc.integer({ min: -5_000, max: 5_000 }),
  // Mostly the record's own index; sometimes offsets are skipped, which the scanner reports.
  offsetDeltaGap: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 }) }),
});

/** The records payload of one uncompressed batch of `records`. */
function payloadOf(records: Array<ValueOf<typeof recordArb>>): Uint8Array {
  let offsetDelta = -1;
  const batch = buildUncompressedRecordBatch(
    {},
    records.map((r) => {
      offsetDelta += 1 + r.offsetDeltaGap;
      return {
        key: r.key === null ? null : Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        headers: r.headers.map((h) => ({ key: h.key, value: h.value === null ? null : Buffer.from(h.value) })),
        timestamp: BASE_TIMESTAMP + r.timestampDelta,
        offsetDelta,
      };
    }),
  );
  return new RecordBatch(batch, 0).recordsPayload();
}

/** The damage a payload may take in transit or from a hostile client. */
const damageArb = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('grow' as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 6 }) }),
);

function damaged(payload: Uint8Array, d: ValueOf<typeof damageArb>): Uint8Array {
  const copy = Uint8Array.from(payload);
  if (d.kind === 'flip' && copy.length > 0) copy[d.at % copy.length]! ^= d.mask;
  if (d.kind === 'cut') return copy.subarray(0, d.at % (copy.length + 1));
  if (d.kind === 'grow') return Uint8Array.from([...copy, ...d.bytes]);
  return copy;
}

const optionsArb = fc.record({
  countShift: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: -2, max: 2 }) }),
  maxRecordBytes: fc.oneof({ weight: 8, arbitrary: fc.constant(1_048_588) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 400 }) }),
  maxTotalBytes: fc.oneof(
    { weight: 8, arbitrary: fc.constant(64 * 1_048_588) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 4_000 }) },
  ),
  requireKeys: fc.boolean(),
  // NaN bounds skip the timestamp check, as for LogAppendTime topics.
  bounds: fc.oneof(
    fc.constant<[number, number]>([Number.NaN, Number.NaN]),
    fc.constant<[number, number]>([0, Number.MAX_SAFE_INTEGER]),
    fc
      .tuple(fc.integer({ min: -6_000, max: 6_000 }), fc.integer({ min: -6_000, max: 6_000 }))
      .map(([a, b]): [number, number] => [BASE_TIMESTAMP + Math.min(a, b), BASE_TIMESTAMP + Math.max(a, b)]),
  ),
});

/** Everything a scan reports. */
function outcome(s: RecordScanner, ok: boolean): unknown {
  return {
    ok,
    error: s.error,
    records: s.records,
    totalBytes: s.totalBytes,
    maxTimestamp: s.maxTimestamp,
    faultIndexes: s.faultIndexes,
    faultKinds: s.faultKinds,
    faultValues: s.faultValues,
  };
}

function scanBothWays(payload: Uint8Array, o: RecordScanOptions): { whole: unknown; pushed: unknown } {
  const whole = new RecordScanner(o);
  const wholeOk = whole.scanWhole(payload);
  const pushed = new RecordScanner(o);
  pushed.feed(payload);
  const pushedOk = pushed.finish();
  return { whole: outcome(whole, wholeOk), pushed: outcome(pushed, pushedOk) };
}

/** Scan options for `recordCount` records whose first timestamp is `baseTimestamp`. */
function optionsFor(recordCount: number, o: ValueOf<typeof optionsArb>, baseTimestamp = BASE_TIMESTAMP): RecordScanOptions {
  return {
    recordCount: Math.max(0, recordCount + o.countShift),
    baseTimestamp,
    maxRecordBytes: o.maxRecordBytes,
    maxTotalBytes: o.maxTotalBytes,
    requireKeys: o.requireKeys,
    minTimestampMs: o.bounds[0],
    maxTimestampMs: o.bounds[1],
  };
}

describe('record scanner: a whole payload at once', () => {
  it('reports exactly what feeding the payload and finishing reports, for any records, damage and limits', () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 12 }), damageArb, optionsArb, (records, damage, options) => {
        const payload = damaged(payloadOf(records), damage);
        // The builder writes timestamps as deltas from the first record's.
        const o = optionsFor(records.length, options, BASE_TIMESTAMP + records[0]!.timestampDelta);
        const { whole, pushed } = scanBothWays(payload, o);
        assert.deepEqual(whole, pushed);
      }),
      { numRuns: 3_000 },
    );
  });

  it('reports exactly what the push scanner reports for arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 0, max: 6 }), optionsArb, (bytes, count, options) => {
        const { whole, pushed } = scanBothWays(bytes, optionsFor(count, options));
        assert.deepEqual(whole, pushed);
      }),
      { numRuns: 3_000 },
    );
  });

  it('agrees with the push scanner on varints at and past their longest (10 bytes for the timestamp delta, 5 for the rest)', () => {
    const continued = (n: number): number[] => [...Array<number>(n).fill(0x80), 0x00];
    /** One record: attributes, timestamp delta, offset delta 0, key, null value, no headers. */
    const record = (timestampDelta: number[], keyLength: number[]): Uint8Array => {
      const body = [0x00, ...timestampDelta, 0x00, ...keyLength, 0x01, 0x00];
      return Uint8Array.from([body.length * 2, ...body]);
    };
    const options = optionsFor(1, {
      countShift: 0,
      maxRecordBytes: 1_000,
      maxTotalBytes: 10_000,
      requireKeys: false,
      bounds: [0, Number.MAX_SAFE_INTEGER],
    });
    const cases: Array<[Uint8Array, RegExp | null]> = [
      [record(continued(9), [0x01]), null],
      [record(continued(10), [0x01]), /varlong longer than 10 bytes/],
      [record([0x00], continued(4)), null],
      [record([0x00], continued(5)), /varint longer than 5 bytes/],
    ];
    for (const [payload, error] of cases) {
      const { whole, pushed } = scanBothWays(payload, options);
      assert.deepEqual(whole, pushed);
      const s = new RecordScanner(options);
      assert.equal(s.scanWhole(payload), error === null);
      if (error !== null) assert.match(s.error ?? '', error);
    }
  });

  it('passes well-formed records and gives their largest timestamp', () => {
    const payload = payloadOf([
      { key: null, value: new Uint8Array(10), headers: [], timestampDelta: 0, offsetDeltaGap: 0 },
      { key: new Uint8Array(3), value: null, headers: [{ key: 'h', value: null }], timestampDelta: 2_000, offsetDeltaGap: 0 },
      { key: new Uint8Array(1), value: new Uint8Array(1), headers: [], timestampDelta: 1_000, offsetDeltaGap: 0 },
    ]);
    const s = new RecordScanner(
      optionsFor(3, {
        countShift: 0,
        maxRecordBytes: 1_000,
        maxTotalBytes: 10_000,
        requireKeys: false,
        bounds: [0, Number.MAX_SAFE_INTEGER],
      }),
    );
    assert.equal(s.scanWhole(payload), true);
    assert.equal(s.error, null);
    assert.equal(s.records, 3);
    assert.equal(s.totalBytes, payload.length);
    assert.equal(s.maxTimestamp, BASE_TIMESTAMP + 2_000);
  });

  it('names the record a compacted topic refuses for its null key, as the push scanner does', () => {
    const payload = payloadOf([
      { key: new Uint8Array(1), value: null, headers: [], timestampDelta: 0, offsetDeltaGap: 0 },
      { key: null, value: new Uint8Array(4), headers: [], timestampDelta: 0, offsetDeltaGap: 0 },
    ]);
    const s = new RecordScanner(
      optionsFor(2, { countShift: 0, maxRecordBytes: 1_000, maxTotalBytes: 10_000, requireKeys: true, bounds: [Number.NaN, Number.NaN] }),
    );
    assert.equal(s.scanWhole(payload), true);
    assert.deepEqual(s.faultIndexes, [1]);
    assert.deepEqual(s.faultKinds, [RecordFault.NullKey]);
  });

  it('stops at a record whose fields run past the length it declares', () => {
    const payload = payloadOf([{ key: null, value: new Uint8Array(20), headers: [], timestampDelta: 0, offsetDeltaGap: 0 }]);
    // The record's length varint (its first byte, 20 + 7 field bytes, zigzag) made 4 smaller.
    const shrunk = Uint8Array.from(payload);
    shrunk[0] = shrunk[0]! - 8;
    const s = new RecordScanner(
      optionsFor(1, { countShift: 0, maxRecordBytes: 1_000, maxTotalBytes: 10_000, requireKeys: false, bounds: [Number.NaN, Number.NaN] }),
    );
    assert.equal(s.scanWhole(shrunk), false);
    assert.match(s.error ?? '', /take more than the \d+ bytes it declares/);
  });
});
