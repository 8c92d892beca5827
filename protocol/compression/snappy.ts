// Snappy as Kafka clients write it: librdkafka sends one raw Snappy block; the Java client
// (snappy-java's SnappyOutputStream) sends the xerial framing:
//
//   0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00 | version int32 (1) | compatible version int32 (1) |
//   { chunk length int32 | raw snappy chunk }...
//
// A raw block starts with the varint of its uncompressed length, and a raw block whose
// first bytes spelled the xerial magic would begin with a back-reference into an empty
// output, which is invalid; so the magic alone tells the two apart.

import * as snappy from 'snappy';
import { type ChunkSink, CompressionType, corrupt, tooLarge } from './types.ts';

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
const XERIAL_VERSION = 1;
const XERIAL_COMPATIBLE_VERSION = 1;
/** snappy-java's default block size, used by Kafka's SnappyOutputStream. */
export const XERIAL_CHUNK_BYTES = 32 * 1024;

export type SnappyFraming = 'xerial' | 'raw';

export function isXerialFramed(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER_BYTES && data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC);
}

export async function snappyCompress(data: Buffer, framing: SnappyFraming = 'xerial'): Promise<Buffer> {
  if (framing === 'raw') return snappy.compress(data);
  const chunks: Promise<Buffer>[] = [];
  for (let at = 0; at < data.length; at += XERIAL_CHUNK_BYTES) {
    chunks.push(snappy.compress(data.subarray(at, at + XERIAL_CHUNK_BYTES)));
  }
  const compressed = await Promise.all(chunks);
  const size = compressed.reduce((sum, c) => sum + 4 + c.length, XERIAL_HEADER_BYTES);
  const out = Buffer.allocUnsafe(size);
  XERIAL_MAGIC.copy(out, 0);
  out.writeInt32BE(XERIAL_VERSION, 8);
  out.writeInt32BE(XERIAL_COMPATIBLE_VERSION, 12);
  let pos = XERIAL_HEADER_BYTES;
  for (const c of compressed) {
    pos = out.writeInt32BE(c.length, pos);
    pos += c.copy(out, pos);
  }
  return out;
}

export async function snappyDecompress(data: Buffer, maxOutputBytes: number): Promise<Buffer> {
  if (!isXerialFramed(data)) return rawDecompress(data, maxOutputBytes);
  const chunks: Buffer[] = [];
  let declared = 0;
  for (const chunk of xerialChunks(data)) {
    declared += uncompressedLength(chunk);
    if (declared > maxOutputBytes) throw tooLarge(CompressionType.Snappy, maxOutputBytes);
    chunks.push(chunk);
  }
  const parts = await Promise.all(chunks.map((c) => uncompress(c)));
  const [only] = parts;
  return parts.length === 1 && only !== undefined ? only : Buffer.concat(parts, declared);
}

/** The raw chunks of a xerial-framed payload, each checked to lie within it. */
function* xerialChunks(data: Buffer): Generator<Buffer> {
  for (let pos = XERIAL_HEADER_BYTES; pos < data.length; ) {
    if (pos + 4 > data.length) throw corrupt(CompressionType.Snappy, 'truncated xerial chunk length');
    const length = data.readInt32BE(pos);
    pos += 4;
    if (length < 0 || pos + length > data.length) {
      throw corrupt(CompressionType.Snappy, `xerial chunk of ${length} bytes overruns the input`);
    }
    yield data.subarray(pos, pos + length);
    pos += length;
  }
}

async function rawDecompress(data: Buffer, maxOutputBytes: number): Promise<Buffer> {
  if (uncompressedLength(data) > maxOutputBytes) throw tooLarge(CompressionType.Snappy, maxOutputBytes);
  return uncompress(data);
}

/** The uncompressed length a raw block declares in its varint preamble. */
function uncompressedLength(block: Buffer): number {
  let value = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const b = block[i]!;
    value += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return value;
  }
  throw corrupt(CompressionType.Snappy, 'invalid length preamble');
}

async function uncompress(block: Buffer): Promise<Buffer> {
  try {
    return (await snappy.uncompress(block, { asBuffer: true })) as Buffer;
  } catch (err) {
    throw corrupt(CompressionType.Snappy, (err as Error).message, err);
  }
}

/**
 * Decompresses `data` one xerial chunk at a time (a raw block is one chunk), handing each to
 * `sink`: memory stays at one chunk, whose size is declared, and checked against what is
 * left of `maxOutputBytes`, before it is decompressed. Stops when `sink` returns false.
 */
export async function snappyDecompressStream(data: Buffer, sink: ChunkSink, maxOutputBytes: number): Promise<void> {
  if (data.length === 0) throw corrupt(CompressionType.Snappy, 'empty payload');
  if (!isXerialFramed(data)) {
    sink(await rawDecompress(data, maxOutputBytes));
    return;
  }
  let declared = 0;
  for (const chunk of xerialChunks(data)) {
    const size = uncompressedLength(chunk);
    declared += size;
    if (declared > maxOutputBytes) throw tooLarge(CompressionType.Snappy, maxOutputBytes);
    const out = await uncompress(chunk);
    if (out.length !== size) throw corrupt(CompressionType.Snappy, `chunk inflated to ${out.length} bytes, not the ${size} it declares`);
    if (!sink(out)) return;
  }
}
