// Zstandard frames, with or without the content size in the header: the Java client
// streams (no content size), librdkafka omits it too, one-shot encoders include it.
// zstd-napi offers only synchronous calls; frames are decoded through the streaming
// context so the output can be bounded even when the header does not declare its size.

import binding from 'zstd-napi/binding.js';
import { Compressor } from 'zstd-napi';
import { type ChunkSink, CompressionError, CompressionType, corrupt, tooLarge } from './types.ts';

/** Kafka's default compression.zstd.level. */
export const ZSTD_DEFAULT_LEVEL = 3;
const OUTPUT_CHUNK_BYTES = binding.dStreamOutSize();

const compressors = new Map<number, Compressor>();
const dctx = new binding.DCtx();

export function zstdCompress(data: Buffer, level = ZSTD_DEFAULT_LEVEL): Buffer {
  let compressor = compressors.get(level);
  if (!compressor) {
    compressor = new Compressor();
    compressor.setParameters({ compressionLevel: level });
    compressors.set(level, compressor);
  }
  return compressor.compress(data);
}

export function zstdDecompress(data: Buffer, maxOutputBytes: number): Buffer {
  try {
    return decompressFrames(data, maxOutputBytes);
  } catch (err) {
    if (err instanceof CompressionError) throw err;
    throw corrupt(CompressionType.Zstd, (err as Error).message, err);
  } finally {
    dctx.reset(binding.ResetDirective.sessionOnly);
  }
}

function decompressFrames(data: Buffer, maxOutputBytes: number): Buffer {
  const declared = declaredContentSize(data);
  if (declared !== null && declared > maxOutputBytes) throw tooLarge(CompressionType.Zstd, maxOutputBytes);
  const chunks: Buffer[] = [];
  let total = 0;
  let input = data;
  // Non-zero while a frame is incomplete or output is still buffered in the context; the
  // decoder may take all the input before it has flushed everything.
  let pending = 1;
  while (input.length > 0 || pending !== 0) {
    const wanted = total === 0 && declared !== null ? declared + 1 : Math.max(OUTPUT_CHUNK_BYTES, input.length * 4);
    // Room for one byte past the bound, so output beyond it is detected, not truncated.
    const chunk = Buffer.allocUnsafe(Math.min(wanted, maxOutputBytes - total + 1));
    const [hint, produced, consumed] = dctx.decompressStream(chunk, input);
    if (produced === 0 && consumed === 0) {
      throw corrupt(CompressionType.Zstd, input.length === 0 ? 'truncated frame' : 'no progress');
    }
    total += produced;
    if (total > maxOutputBytes) throw tooLarge(CompressionType.Zstd, maxOutputBytes);
    if (produced > 0) chunks.push(chunk.subarray(0, produced));
    input = input.subarray(consumed);
    pending = hint;
  }
  const [only] = chunks;
  return chunks.length === 1 && only !== undefined ? only : Buffer.concat(chunks, total);
}

/** The content size the first frame declares, or null when it does not. */
function declaredContentSize(data: Buffer): number | null {
  try {
    return binding.getFrameContentSize(data);
  } catch {
    return null;
  }
}

/** The output buffer of streaming decompression: sinks see it only during their call. */
let streamChunk: Buffer | null = null;

/**
 * Decompresses `data` through the streaming context into one reused output chunk, handing
 * each filled chunk to `sink`: memory stays at one chunk whatever the frames declare. Stops
 * when `sink` returns false or the output passes `maxOutputBytes`. Synchronous (the binding
 * is), so the shared context and chunk are never used by two calls at once.
 */
export function zstdDecompressStream(data: Buffer, sink: ChunkSink, maxOutputBytes: number): void {
  if (data.length === 0) throw corrupt(CompressionType.Zstd, 'empty payload');
  streamChunk ??= Buffer.allocUnsafe(OUTPUT_CHUNK_BYTES);
  const chunk = streamChunk;
  try {
    let total = 0;
    let input = data;
    let pending = 1;
    while (input.length > 0 || pending !== 0) {
      const [hint, produced, consumed] = dctx.decompressStream(chunk, input);
      if (produced === 0 && consumed === 0) {
        throw corrupt(CompressionType.Zstd, input.length === 0 ? 'truncated frame' : 'no progress');
      }
      total += produced;
      if (total > maxOutputBytes) throw tooLarge(CompressionType.Zstd, maxOutputBytes);
      input = input.subarray(consumed);
      pending = hint;
      if (produced > 0 && !sink(chunk.subarray(0, produced))) return;
    }
  } catch (err) {
    if (err instanceof CompressionError) throw err;
    throw corrupt(CompressionType.Zstd, (err as Error).message, err);
  } finally {
    dctx.reset(binding.ResetDirective.sessionOnly);
  }
}
