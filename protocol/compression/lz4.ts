// LZ4 frame format (lz4_Frame_format.md), as Kafka uses it for codec 3.
//
// Writing follows Kafka's Lz4BlockOutputStream: 64 KiB independent blocks, no block or
// content checksums, no content size, a block stored uncompressed when compression does not
// shrink it. Java readers refuse dependent blocks, so every writer Kafka talks to uses
// independent ones. Message format v0 wrote a broken header checksum (KAFKA-3160: the hash
// covered the magic number too); `brokenHeaderChecksum` reproduces it for v0 wrappers.
//
// Reading accepts what real clients write: librdkafka's frames (no checksums, no content
// size), Java's, and frames with block/content checksums, content size or dependent blocks
// (verified by lz4-napi). Each frame is scanned first so the output can be bounded before
// anything is inflated.

import * as lz4 from 'lz4-napi';
import { type ChunkSink, CompressionType, corrupt, tooLarge } from './types.ts';
import { xxhash32 } from './xxhash32.ts';

const FRAME_MAGIC = 0x184d2204;
const SKIPPABLE_MAGIC_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const INCOMPRESSIBLE_BIT = 0x80000000;
const FLG_VERSION_01 = 0x40;
const FLG_BLOCK_INDEPENDENCE = 0x20;
const FLG_BLOCK_CHECKSUM = 0x10;
const FLG_CONTENT_SIZE = 0x08;
const FLG_CONTENT_CHECKSUM = 0x04;
const FLG_DICT_ID = 0x01;
const BD_64KB = 4 << 4;
export const LZ4_BLOCK_BYTES = 64 * 1024;

function headerChecksum(frame: Buffer, descriptorEnd: number, broken: boolean): number {
  return (xxhash32(frame.subarray(broken ? 0 : 4, descriptorEnd)) >>> 8) & 0xff;
}

export async function lz4Compress(data: Buffer, brokenHeaderChecksum = false): Promise<Buffer> {
  const blocks: Buffer[] = [];
  for (let at = 0; at < data.length; at += LZ4_BLOCK_BYTES) blocks.push(data.subarray(at, at + LZ4_BLOCK_BYTES));
  // lz4-napi's block output carries a 4-byte little-endian uncompressed size first.
  const compressed = await Promise.all(blocks.map((b) => lz4.compress(b)));
  let size = 7 + 4;
  const bodies = blocks.map((block, i) => {
    const c = compressed[i]!.subarray(4);
    const stored = c.length >= block.length ? block : c;
    size += 4 + stored.length;
    return stored;
  });
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(FRAME_MAGIC, 0);
  out[4] = FLG_VERSION_01 | FLG_BLOCK_INDEPENDENCE;
  out[5] = BD_64KB;
  out[6] = headerChecksum(out, 6, brokenHeaderChecksum);
  let pos = 7;
  bodies.forEach((body, i) => {
    const raw = body === blocks[i];
    pos = out.writeUInt32LE(raw ? (body.length | INCOMPRESSIBLE_BIT) >>> 0 : body.length, pos);
    pos += body.copy(out, pos);
  });
  out.writeUInt32LE(0, pos);
  return out;
}

interface ScannedFrame {
  /** The frame's bytes, with Kafka's broken descriptor checksum replaced by the right one. */
  bytes: Buffer;
  /** Most bytes the frame can inflate to. */
  bound: number;
  contentSizeBytes: number;
}

function scanFrame(data: Buffer, start: number): ScannedFrame {
  const need = (pos: number, n: number, what: string): void => {
    if (pos + n > data.length) throw corrupt(CompressionType.Lz4, `truncated frame: ${what}`);
  };
  need(start, 7, 'descriptor');
  const flg = data[start + 4]!;
  const bd = data[start + 5]!;
  if ((flg & 0xc0) !== FLG_VERSION_01) throw corrupt(CompressionType.Lz4, `unsupported frame version in FLG ${flg}`);
  if (flg & 0x02 || bd & 0x8f) throw corrupt(CompressionType.Lz4, 'reserved descriptor bits set');
  // Kafka never writes a preset dictionary and cannot read one: its decompression fails and
  // the batch is corrupt.
  if (flg & FLG_DICT_ID) throw corrupt(CompressionType.Lz4, 'frames with a preset dictionary id');
  const blockSizeId = (bd >> 4) & 0x07;
  if (blockSizeId < 4) throw corrupt(CompressionType.Lz4, `invalid block size id ${blockSizeId}`);
  const blockMaxBytes = 1 << (2 * blockSizeId + 8);
  let pos = start + 6;
  let contentSizeBytes = -1;
  if (flg & FLG_CONTENT_SIZE) {
    need(pos, 9, 'content size');
    const declared = data.readBigUInt64LE(pos);
    contentSizeBytes = declared > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(declared);
    pos += 8;
  }
  const descriptor = data.subarray(start, pos);
  const checksumAt = pos - start;
  const checksum = data[pos]!;
  const expected = headerChecksum(descriptor, descriptor.length, false);
  const broken = checksum !== expected;
  if (broken && checksum !== headerChecksum(descriptor, descriptor.length, true)) {
    throw corrupt(CompressionType.Lz4, 'frame descriptor checksum mismatch');
  }
  pos += 1;
  const blockChecksumBytes = flg & FLG_BLOCK_CHECKSUM ? 4 : 0;
  let blocks = 0;
  for (;;) {
    need(pos, 4, 'block size');
    const word = data.readUInt32LE(pos);
    pos += 4;
    if (word === 0) break;
    const length = word & ~INCOMPRESSIBLE_BIT;
    if (length > blockMaxBytes) throw corrupt(CompressionType.Lz4, `block of ${length} bytes exceeds ${blockMaxBytes}`);
    need(pos, length + blockChecksumBytes, 'block');
    pos += length + blockChecksumBytes;
    blocks++;
  }
  if (flg & FLG_CONTENT_CHECKSUM) {
    need(pos, 4, 'content checksum');
    pos += 4;
  }
  let bytes = data.subarray(start, pos);
  if (broken) {
    bytes = Buffer.from(bytes);
    bytes[checksumAt] = expected;
  }
  return { bytes, bound: contentSizeBytes >= 0 ? contentSizeBytes : blocks * blockMaxBytes, contentSizeBytes };
}

export async function lz4Decompress(data: Buffer, maxOutputBytes: number): Promise<Buffer> {
  const frames = scanFrames(data, maxOutputBytes);
  const parts = await Promise.all(frames.map(decodeFrame));
  const [only] = parts;
  return parts.length === 1 && only !== undefined ? only : Buffer.concat(parts);
}

async function decodeFrame(frame: ScannedFrame): Promise<Buffer> {
  let out: Buffer;
  try {
    out = await lz4.decompressFrame(frame.bytes);
  } catch (err) {
    throw corrupt(CompressionType.Lz4, String((err as Error).message ?? err), err);
  }
  if (out.length > frame.bound || (frame.contentSizeBytes >= 0 && out.length !== frame.contentSizeBytes)) {
    throw corrupt(CompressionType.Lz4, `frame inflated to ${out.length} bytes, which its descriptor does not allow`);
  }
  return out;
}

/**
 * Decompresses `data` frame by frame, handing each frame's output to `sink`. Every frame's
 * bound (its block count times its block size, or its content size) is checked against
 * `maxOutputBytes` before anything is inflated, so memory stays within one frame's bound.
 * Stops when `sink` returns false.
 */
export async function lz4DecompressStream(data: Buffer, sink: ChunkSink, maxOutputBytes: number): Promise<void> {
  if (data.length === 0) throw corrupt(CompressionType.Lz4, 'empty payload');
  const frames = scanFrames(data, maxOutputBytes);
  for (const frame of frames) {
    const flg = frame.bytes[4]!;
    if (!(flg & FLG_BLOCK_INDEPENDENCE)) {
      // Dependent blocks need the whole frame's history: decode it at once (within its bound).
      if (!sink(await decodeFrame(frame))) return;
      continue;
    }
    if (!(await streamBlocks(frame, flg, sink))) return;
  }
}

/**
 * Independent blocks one at a time: a stored block is handed over as it is, a compressed one
 * is decoded as a one-block frame, so memory stays at one block (64 KiB in Kafka's frames).
 */
async function streamBlocks(frame: ScannedFrame, flg: number, sink: ChunkSink): Promise<boolean> {
  const bytes = frame.bytes;
  const blockChecksumBytes = flg & FLG_BLOCK_CHECKSUM ? 4 : 0;
  const descriptor = Buffer.from([0x04, 0x22, 0x4d, 0x18, flg & ~(FLG_CONTENT_SIZE | FLG_CONTENT_CHECKSUM), bytes[5]!, 0]);
  descriptor[6] = headerChecksum(descriptor, 6, false);
  let total = 0;
  for (let pos = 7 + (flg & FLG_CONTENT_SIZE ? 8 : 0); ; ) {
    const word = bytes.readUInt32LE(pos);
    if (word === 0) break;
    const length = word & ~INCOMPRESSIBLE_BIT;
    const block = bytes.subarray(pos + 4, pos + 4 + length);
    let out: Buffer;
    if (word & INCOMPRESSIBLE_BIT) {
      out = block;
    } else {
      const one = Buffer.concat([descriptor, bytes.subarray(pos, pos + 4 + length + blockChecksumBytes), Buffer.alloc(4)]);
      out = await decodeFrame({ bytes: one, bound: frame.bound, contentSizeBytes: -1 });
    }
    pos += 4 + length + blockChecksumBytes;
    total += out.length;
    if (total > frame.bound || (frame.contentSizeBytes >= 0 && total > frame.contentSizeBytes)) {
      throw corrupt(CompressionType.Lz4, `frame inflated beyond the ${frame.bound} bytes its descriptor allows`);
    }
    if (!sink(out)) return false;
  }
  if (frame.contentSizeBytes >= 0 && total !== frame.contentSizeBytes) {
    throw corrupt(CompressionType.Lz4, `frame inflated to ${total} bytes, not the ${frame.contentSizeBytes} it declares`);
  }
  return true;
}

function scanFrames(data: Buffer, maxOutputBytes: number): ScannedFrame[] {
  const frames: ScannedFrame[] = [];
  let bound = 0;
  for (let pos = 0; pos < data.length; ) {
    if (pos + 4 > data.length) throw corrupt(CompressionType.Lz4, 'truncated frame magic');
    const magic = data.readUInt32LE(pos);
    if ((magic & SKIPPABLE_MAGIC_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      if (pos + 8 > data.length) throw corrupt(CompressionType.Lz4, 'truncated skippable frame');
      pos += 8 + data.readUInt32LE(pos + 4);
      continue;
    }
    if (magic !== FRAME_MAGIC) throw corrupt(CompressionType.Lz4, `bad frame magic 0x${magic.toString(16)}`);
    const frame = scanFrame(data, pos);
    bound += frame.bound;
    if (bound > maxOutputBytes) throw tooLarge(CompressionType.Lz4, maxOutputBytes);
    frames.push(frame);
    pos += frame.bytes.length;
  }
  if (frames.length === 0) throw corrupt(CompressionType.Lz4, 'no frame');
  return frames;
}
