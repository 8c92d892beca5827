// Record compression codecs (codec ids of the batch attributes). Every call is async so
// callers stay codec-agnostic; gzip, snappy and lz4 run on the libuv thread pool, zstd
// (whose binding is synchronous only) on the calling thread.

import { gzipCompress, gzipDecompress, gzipDecompressStream } from './gzip.ts';
import { lz4Compress, lz4Decompress, lz4DecompressStream } from './lz4.ts';
import { snappyCompress, snappyDecompress, snappyDecompressStream, type SnappyFraming } from './snappy.ts';
import { type ChunkSink, CompressionError, CompressionType } from './types.ts';
import { zstdCompress, zstdDecompress, zstdDecompressStream } from './zstd.ts';

export { type ChunkSink, CompressionError, CompressionType, type CompressionErrorKind } from './types.ts';
export { isXerialFramed, XERIAL_CHUNK_BYTES, type SnappyFraming } from './snappy.ts';
export { LZ4_BLOCK_BYTES } from './lz4.ts';
export { ZSTD_DEFAULT_LEVEL } from './zstd.ts';
export { xxhash32 } from './xxhash32.ts';

/**
 * Default bound on one decompressed payload. Generous against real batches (producers
 * cap requests at 1 MiB by default) while keeping a hostile batch from inflating to gigabytes.
 */
export const DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024;

export interface CompressOptions {
  /** gzip: zlib level (-1 default, 1-9); zstd: level (Kafka's default 3). Ignored by other codecs. */
  level?: number;
  /** Snappy: 'xerial' (the Java client's framing, Kafka's own; the default) or 'raw' (librdkafka). */
  snappyFraming?: SnappyFraming;
  /** LZ4: write the descriptor checksum message format v0 used (KAFKA-3160). */
  lz4BrokenHeaderChecksum?: boolean;
}

export async function compress(type: CompressionType, data: Buffer, options: CompressOptions = {}): Promise<Buffer> {
  switch (type) {
    case CompressionType.None:
      return data;
    case CompressionType.Gzip:
      return gzipCompress(data, options.level);
    case CompressionType.Snappy:
      return snappyCompress(data, options.snappyFraming);
    case CompressionType.Lz4:
      return lz4Compress(data, options.lz4BrokenHeaderChecksum);
    case CompressionType.Zstd:
      return zstdCompress(data, options.level);
    default:
      throw new CompressionError('unsupported', type, 'unknown compression type');
  }
}

/**
 * Decompresses `data`, refusing with a CompressionError of kind 'too-large' any output
 * beyond `maxOutputBytes`, and with kind 'corrupt' anything that is not a valid stream.
 */
export async function decompress(type: CompressionType, data: Buffer, maxOutputBytes = DEFAULT_MAX_DECOMPRESSED_BYTES): Promise<Buffer> {
  switch (type) {
    case CompressionType.None:
      if (data.length > maxOutputBytes) throw new CompressionError('too-large', type, `${data.length} bytes exceed ${maxOutputBytes}`);
      return data;
    case CompressionType.Gzip:
      return gzipDecompress(data, maxOutputBytes);
    case CompressionType.Snappy:
      return snappyDecompress(data, maxOutputBytes);
    case CompressionType.Lz4:
      return lz4Decompress(data, maxOutputBytes);
    case CompressionType.Zstd:
      return zstdDecompress(data, maxOutputBytes);
    default:
      throw new CompressionError('unsupported', type, 'unknown compression type');
  }
}

/**
 * Decompresses `data` as a stream, handing the output to `sink` a chunk at a time and never
 * holding it whole: gzip and zstd hold one output chunk (64 KiB / ~128 KiB), snappy one
 * xerial chunk or raw block, lz4 one frame, each bounded by `maxOutputBytes` before it is
 * inflated. Stops as soon as `sink` returns false; refuses output beyond `maxOutputBytes`
 * (CompressionError 'too-large') and anything that is not a valid stream, an empty payload
 * included ('corrupt'). Nothing is recompressed or kept.
 */
export async function decompressChunks(type: CompressionType, data: Buffer, sink: ChunkSink, maxOutputBytes: number): Promise<void> {
  switch (type) {
    case CompressionType.None:
      if (data.length > maxOutputBytes) throw new CompressionError('too-large', type, `${data.length} bytes exceed ${maxOutputBytes}`);
      sink(data);
      return;
    case CompressionType.Gzip:
      return gzipDecompressStream(data, sink, maxOutputBytes);
    case CompressionType.Snappy:
      return snappyDecompressStream(data, sink, maxOutputBytes);
    case CompressionType.Lz4:
      return lz4DecompressStream(data, sink, maxOutputBytes);
    case CompressionType.Zstd:
      return zstdDecompressStream(data, sink, maxOutputBytes);
    default:
      throw new CompressionError('unsupported', type, 'unknown compression type');
  }
}
