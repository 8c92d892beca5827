import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { type ChunkSink, CompressionType, corrupt, tooLarge } from './types.ts';

const gzipAsync = promisify(zlib.gzip);
const gunzipAsync = promisify(zlib.gunzip);

export async function gzipCompress(data: Buffer, level = zlib.constants.Z_DEFAULT_COMPRESSION): Promise<Buffer> {
  return gzipAsync(data, { level });
}

export async function gzipDecompress(data: Buffer, maxOutputBytes: number): Promise<Buffer> {
  try {
    // zlib stops inflating at maxOutputLength, so a bomb costs at most the bound in memory.
    return await gunzipAsync(data, { maxOutputLength: Math.max(1, maxOutputBytes) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(CompressionType.Gzip, maxOutputBytes);
    throw corrupt(CompressionType.Gzip, (err as Error).message, err);
  }
}

/** zlib's output chunk: the most a streaming gunzip holds at once. */
const STREAM_CHUNK_BYTES = 64 * 1024;

/**
 * Inflates `data` as a stream, handing each output chunk to `sink` as it is produced, so
 * memory stays at one chunk whatever the output size. Stops (and releases zlib) as soon as
 * `sink` returns false or the output passes `maxOutputBytes`.
 */
export function gzipDecompressStream(data: Buffer, sink: ChunkSink, maxOutputBytes: number): Promise<void> {
  if (data.length === 0) return Promise.reject(corrupt(CompressionType.Gzip, 'empty payload'));
  return new Promise<void>((resolve, reject) => {
    const gunzip = zlib.createGunzip({ chunkSize: STREAM_CHUNK_BYTES });
    let total = 0;
    let settled = false;
    const settle = (err?: Error): void => {
      if (settled) return;
      settled = true;
      gunzip.destroy();
      if (err) reject(err);
      else resolve();
    };
    gunzip.on('data', (chunk: Buffer) => {
      if (settled) return;
      total += chunk.length;
      if (total > maxOutputBytes) settle(tooLarge(CompressionType.Gzip, maxOutputBytes));
      else if (!sink(chunk)) settle();
    });
    gunzip.on('error', (err) => settle(corrupt(CompressionType.Gzip, err.message, err)));
    gunzip.on('end', () => settle());
    gunzip.end(data);
  });
}
