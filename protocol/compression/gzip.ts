import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { CompressionType, corrupt, tooLarge } from './types.ts';

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
