// Mutations of valid frames. Bodies are encoded by a Writer that remembers where every
// length, count and scalar went, so a mutation can aim at "every length field" instead of
// flipping bits blindly; record batches are corrupted and then re-sealed with a valid
// CRC-32C so the damage reaches the decompressor and record parser.
import { gzipSync } from 'node:zlib';
import { apis } from '../../protocol/messages/index.ts';
import { Writer } from '../../protocol/primitives.ts';
import { crc32c } from '../../protocol/crc.ts';
import { compress } from '../../protocol/compression/index.ts';
import {
  ATTRIBUTES,
  BATCH_LENGTH,
  COMPRESSION_MASK,
  CompressionType,
  CRC,
  LAST_OFFSET_DELTA,
  MAGIC,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT,
  TRANSACTIONAL_BIT,
  BASE_TIMESTAMP,
} from '../../protocol/records/index.ts';
import type { Prng } from './prng.ts';

export type MarkKind = 'len16' | 'len32' | 'uvarlen' | 'uvarint' | 'int8' | 'int16' | 'int32' | 'int64' | 'blob';

/** Where a value was written in the body. */
export interface Mark {
  at: number;
  size: number;
  kind: MarkKind;
}

function uvarintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** A Writer that records the position of every length prefix, count and scalar it writes. */
export class TracingWriter extends Writer {
  readonly marks: Mark[] = [];
  private depth = 0;

  private traced(kind: MarkKind, size: (at: number) => number, write: () => void): this {
    if (this.depth > 0) {
      write();
      return this;
    }
    const at = this.length;
    this.depth++;
    try {
      write();
    } finally {
      this.depth--;
    }
    this.marks.push({ at, size: size(at), kind });
    return this;
  }

  override int8(v: number): this {
    return this.traced(
      'int8',
      () => 1,
      () => super.int8(v),
    );
  }
  override int16(v: number): this {
    return this.traced(
      'int16',
      () => 2,
      () => super.int16(v),
    );
  }
  override int32(v: number): this {
    return this.traced(
      'int32',
      () => 4,
      () => super.int32(v),
    );
  }
  override int64(v: bigint): this {
    return this.traced(
      'int64',
      () => 8,
      () => super.int64(v),
    );
  }
  override uvarint(v: number): this {
    return this.traced(
      'uvarint',
      () => uvarintSize(v),
      () => super.uvarint(v),
    );
  }
  override string(v: string): this {
    return this.traced(
      'len16',
      () => 2,
      () => super.string(v),
    );
  }
  override nullableString(v: string | null): this {
    return this.traced(
      'len16',
      () => 2,
      () => super.nullableString(v),
    );
  }
  override compactString(v: string): this {
    return this.traced(
      'uvarlen',
      () => uvarintSize(Buffer.byteLength(v) + 1),
      () => super.compactString(v),
    );
  }
  override compactNullableString(v: string | null): this {
    return this.traced(
      'uvarlen',
      () => (v === null ? 1 : uvarintSize(Buffer.byteLength(v) + 1)),
      () => super.compactNullableString(v),
    );
  }
  override bytes(v: Buffer): this {
    this.blob(4, v);
    return this.traced(
      'len32',
      () => 4,
      () => super.bytes(v),
    );
  }
  override nullableBytes(v: Buffer | null): this {
    if (v) this.blob(4, v);
    return this.traced(
      'len32',
      () => 4,
      () => super.nullableBytes(v),
    );
  }
  override compactBytes(v: Buffer): this {
    this.blob(uvarintSize(v.length + 1), v);
    return this.traced(
      'uvarlen',
      () => uvarintSize(v.length + 1),
      () => super.compactBytes(v),
    );
  }
  override compactNullableBytes(v: Buffer | null): this {
    if (v) this.blob(uvarintSize(v.length + 1), v);
    return this.traced(
      'uvarlen',
      () => (v === null ? 1 : uvarintSize(v.length + 1)),
      () => super.compactNullableBytes(v),
    );
  }
  override arrayLength(n: number): this {
    return this.traced(
      'len32',
      () => 4,
      () => super.arrayLength(n),
    );
  }
  override compactArrayLength(n: number): this {
    return this.traced(
      'uvarlen',
      () => uvarintSize(n + 1),
      () => super.compactArrayLength(n),
    );
  }

  private blob(prefix: number, v: Buffer): void {
    if (this.depth === 0 && v.length >= RECORD_BATCH_OVERHEAD) this.marks.push({ at: this.length + prefix, size: v.length, kind: 'blob' });
  }
}

export function encodeTraced(apiKey: number, version: number, msg: unknown): { body: Buffer; marks: Mark[] } {
  const w = new TracingWriter(256);
  apis.get(apiKey)!.encodeRequest(w, msg, version);
  return { body: w.toBuffer(), marks: w.marks };
}

const LEN16_EDGES = [-1, -2, 0, 0x7fff, -0x8000];
const LEN32_EDGES = [-1, -2, 0, 0x7fffffff, -0x80000000, 0x10000000];
const UVAR_EDGES = [
  Buffer.from([0x00]),
  Buffer.from([0x01]),
  Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
  Buffer.from([0xfe, 0xff, 0xff, 0xff, 0x0f]),
  Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
  Buffer.from([0xff, 0xff, 0x03]),
  Buffer.from([0x80]),
];
const INT_EDGES: Record<string, readonly number[]> = {
  int8: [-128, 127, -1],
  int16: [-32768, 32767, -1, 0],
  int32: [-1, 0, 0x7fffffff, -0x80000000],
};
const INT64_EDGES = [2n ** 60n, -1n, -2n, 2n ** 63n - 1n, -(2n ** 63n)];

export interface MutatedFrame {
  bytes: Buffer;
  mutation: string;
}

/** Writes size + header + body. `sizeDelta` makes the size prefix lie. */
function assemble(header: Buffer, body: Buffer, sizeOverride?: number): Buffer {
  const size = Buffer.allocUnsafe(4);
  size.writeInt32BE((sizeOverride ?? header.length + body.length) | 0, 0);
  return Buffer.concat([size, header, body]);
}

/** Applies one mutation to a body; returns the new body and a description. */
function mutateBody(rng: Prng, body: Buffer, marks: Mark[]): { body: Buffer; what: string } {
  const lens = marks.filter((m) => m.kind === 'len16' || m.kind === 'len32' || m.kind === 'uvarlen');
  const scalars = marks.filter(
    (m) => m.kind === 'int8' || m.kind === 'int16' || m.kind === 'int32' || m.kind === 'int64' || m.kind === 'uvarint',
  );
  const blobs = marks.filter((m) => m.kind === 'blob');
  const choice = rng.int(10);
  const out = Buffer.from(body);
  if (choice <= 2 && lens.length > 0) {
    const m = rng.pick(lens);
    if (m.kind === 'len16') {
      const v = rng.pick(LEN16_EDGES);
      out.writeInt16BE(v, m.at);
      return { body: out, what: `len16@${m.at}=${v}` };
    }
    if (m.kind === 'len32') {
      const v = rng.pick(LEN32_EDGES);
      out.writeInt32BE(v, m.at);
      return { body: out, what: `len32@${m.at}=${v}` };
    }
    const v = rng.pick(UVAR_EDGES);
    return { body: Buffer.concat([out.subarray(0, m.at), v, out.subarray(m.at + m.size)]), what: `uvarlen@${m.at}=${v.toString('hex')}` };
  }
  if (choice <= 4 && scalars.length > 0) {
    const m = rng.pick(scalars);
    if (m.kind === 'int64') {
      const v = rng.pick(INT64_EDGES);
      out.writeBigInt64BE(v, m.at);
      return { body: out, what: `int64@${m.at}=${v}` };
    }
    if (m.kind === 'uvarint') {
      const v = rng.pick(UVAR_EDGES);
      return { body: Buffer.concat([out.subarray(0, m.at), v, out.subarray(m.at + m.size)]), what: `uvarint@${m.at}=${v.toString('hex')}` };
    }
    const v = rng.pick(INT_EDGES[m.kind]!);
    if (m.kind === 'int8') out.writeInt8(v, m.at);
    else if (m.kind === 'int16') out.writeInt16BE(v, m.at);
    else out.writeInt32BE(v, m.at);
    return { body: out, what: `${m.kind}@${m.at}=${v}` };
  }
  if (choice === 5 && blobs.length > 0) {
    const m = rng.pick(blobs);
    const batch = out.subarray(m.at, m.at + m.size);
    const what = corruptBatchInPlace(rng, batch);
    return { body: out, what: `batch@${m.at}:${what}` };
  }
  if (choice === 6 && body.length > 0) {
    const at = rng.int(body.length);
    return { body: out.subarray(0, at), what: `truncate@${at}` };
  }
  if (choice === 7) {
    const n = rng.range(1, 8);
    for (let i = 0; i < n && out.length > 0; i++) out[rng.int(out.length)]! ^= 1 << rng.int(8);
    return { body: out, what: `flip×${n}` };
  }
  if (choice === 8) {
    const at = rng.int(body.length + 1);
    const ins = rng.bytes(rng.range(1, 16));
    return { body: Buffer.concat([out.subarray(0, at), ins, out.subarray(at)]), what: `insert@${at}+${ins.length}` };
  }
  return { body: rng.bytes(rng.range(0, 200)), what: 'random-body' };
}

/**
 * One mutated frame from a valid (header, body). Mostly body mutations with a matching
 * size prefix; sometimes the header or the size prefix itself.
 */
export function mutateFrame(rng: Prng, header: Buffer, body: Buffer, marks: Mark[]): MutatedFrame {
  const r = rng.float();
  if (r < 0.06) {
    const h = Buffer.from(header);
    const what = rng.pick(['version', 'key', 'flip']);
    if (what === 'version') h.writeInt16BE(rng.pick([-1, 999, 32767, -32768, h.readInt16BE(2) + 1]), 2);
    else if (what === 'key') h.writeInt16BE(rng.pick([-1, 999, 32767, 1000 + rng.int(100)]), 0);
    else h[rng.int(h.length)]! ^= 1 << rng.int(8);
    return { bytes: assemble(h, body), mutation: `header-${what}` };
  }
  if (r < 0.1) {
    const lie = rng.pick([
      0x7fffffff,
      -1,
      0,
      1,
      3,
      header.length + body.length + 1,
      Math.max(0, header.length + body.length - 1),
      200 * 1024 * 1024,
    ]);
    return { bytes: assemble(header, body, lie), mutation: `size=${lie}` };
  }
  if (r < 0.13) return { bytes: assemble(header.subarray(0, rng.int(header.length)), Buffer.alloc(0)), mutation: 'header-truncated' };
  let b = body;
  const whats: string[] = [];
  const n = rng.chance(0.7) ? 1 : rng.range(2, 3);
  for (let i = 0; i < n; i++) {
    const m = mutateBody(rng, b, i === 0 ? marks : []);
    b = m.body;
    whats.push(m.what);
  }
  return { bytes: assemble(header, b), mutation: whats.join('+') };
}

/** Re-seals a batch's CRC-32C after an edit. */
export function resealCrc(batch: Buffer): void {
  batch.writeUInt32BE(crc32c(batch.subarray(ATTRIBUTES)), CRC);
}

/**
 * Corrupts a v2 batch in place (payload bytes, header counts, attributes) and, mostly,
 * re-seals the CRC so the corruption has to be found by decoding. Returns a description.
 */
export function corruptBatchInPlace(rng: Prng, batch: Buffer): string {
  if (batch.length < RECORD_BATCH_OVERHEAD) return 'too-short';
  const what = rng.pick(['payload', 'payload', 'payload', 'count', 'lastOffsetDelta', 'codec', 'length', 'timestamp', 'magic']);
  switch (what) {
    case 'payload': {
      const n = rng.range(1, 4);
      if (batch.length > RECORD_BATCH_OVERHEAD) {
        for (let i = 0; i < n; i++) batch[RECORD_BATCH_OVERHEAD + rng.int(batch.length - RECORD_BATCH_OVERHEAD)]! ^= 1 << rng.int(8);
      }
      break;
    }
    case 'count':
      batch.writeInt32BE(rng.pick([0, -1, 0x7fffffff, (batch.readInt32BE(RECORDS_COUNT) + 1) | 0]), RECORDS_COUNT);
      break;
    case 'lastOffsetDelta':
      batch.writeInt32BE(rng.pick([-1, 0x7fffffff, (batch.readInt32BE(LAST_OFFSET_DELTA) + 3) | 0]), LAST_OFFSET_DELTA);
      break;
    case 'codec': {
      const attrs = batch.readInt16BE(ATTRIBUTES);
      batch.writeInt16BE((attrs & ~COMPRESSION_MASK) | rng.pick([1, 2, 3, 4, 5, 7]), ATTRIBUTES);
      break;
    }
    case 'length':
      batch.writeInt32BE(rng.pick([0, -1, 0x7fffffff, batch.length]), BATCH_LENGTH);
      break;
    case 'timestamp':
      batch.writeBigInt64BE(rng.pick([-5n, 2n ** 62n]), BASE_TIMESTAMP);
      break;
    case 'magic':
      batch.writeInt8(rng.pick([0, 1, 3, -1]), MAGIC);
      break;
  }
  const reseal = rng.chance(0.85);
  if (reseal) resealCrc(batch);
  return `${what}${reseal ? '+crc' : ''}`;
}

/** A v2 batch header around an arbitrary (compressed) payload, CRC sealed. */
export function batchAround(payload: Buffer, codec: CompressionType, recordCount: number, attributesExtra = 0): Buffer {
  const out = Buffer.alloc(RECORD_BATCH_OVERHEAD + payload.length);
  out.writeBigInt64BE(0n, 0);
  out.writeInt32BE(out.length - 12, BATCH_LENGTH);
  out.writeInt32BE(-1, 12);
  out.writeInt8(2, MAGIC);
  out.writeInt16BE(codec | attributesExtra, ATTRIBUTES);
  out.writeInt32BE(recordCount - 1, LAST_OFFSET_DELTA);
  const now = BigInt(Date.now());
  out.writeBigInt64BE(now, BASE_TIMESTAMP);
  out.writeBigInt64BE(now, BASE_TIMESTAMP + 8);
  out.writeBigInt64BE(-1n, 43);
  out.writeInt16BE(-1, 51);
  out.writeInt32BE(-1, 53);
  out.writeInt32BE(recordCount, RECORDS_COUNT);
  payload.copy(out, RECORD_BATCH_OVERHEAD);
  resealCrc(out);
  return out;
}

export interface Bomb {
  codec: CompressionType;
  batch: Buffer;
  inflatedBytes: number;
}

let bombCache: Bomb[] | null = null;

/**
 * Decompression bombs: a few hundred KB (or less) that inflate to hundreds of MiB. Built
 * once per process (compressing 200 MiB takes about a second), a chunk at a time.
 */
export async function bombs(): Promise<Bomb[]> {
  if (bombCache) return bombCache;
  const out: Bomb[] = [];
  const gzipBytes = 200 * 1024 * 1024;
  out.push({
    codec: CompressionType.Gzip,
    batch: batchAround(gzipSync(Buffer.alloc(gzipBytes), { level: 9 }), CompressionType.Gzip, 1),
    inflatedBytes: gzipBytes,
  });
  const zstdBytes = 300 * 1024 * 1024;
  out.push({
    codec: CompressionType.Zstd,
    batch: batchAround(await compress(CompressionType.Zstd, Buffer.alloc(zstdBytes), { level: 19 }), CompressionType.Zstd, 1),
    inflatedBytes: zstdBytes,
  });
  const lz4Bytes = 64 * 1024 * 1024;
  out.push({
    codec: CompressionType.Lz4,
    batch: batchAround(await compress(CompressionType.Lz4, Buffer.alloc(lz4Bytes)), CompressionType.Lz4, 1),
    inflatedBytes: lz4Bytes,
  });
  const snappyBytes = 32 * 1024 * 1024;
  out.push({
    codec: CompressionType.Snappy,
    batch: batchAround(
      await compress(CompressionType.Snappy, Buffer.alloc(snappyBytes), { snappyFraming: 'xerial' }),
      CompressionType.Snappy,
      1,
    ),
    inflatedBytes: snappyBytes,
  });
  bombCache = out;
  return out;
}

export { TRANSACTIONAL_BIT };
