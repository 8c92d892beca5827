// The codec ids of the low three attribute bits, shared by record batch v2 and the legacy
// message formats (implementation.html "Record Batch").
export enum CompressionType {
  None = 0,
  Gzip = 1,
  Snappy = 2,
  Lz4 = 3,
  Zstd = 4,
}

export type CompressionErrorKind =
  /** The input is not a valid stream of its codec. */
  | 'corrupt'
  /** Decompressing would exceed the caller's output bound (a decompression bomb guard). */
  | 'too-large'
  /** The codec id is unknown, or the codec cannot be used here (zstd in message format v0/v1). */
  | 'unsupported';

export class CompressionError extends Error {
  override name = 'CompressionError';
  constructor(
    readonly kind: CompressionErrorKind,
    readonly codec: CompressionType,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${CompressionType[codec] ?? `codec ${codec}`}: ${message}`, options);
  }
}

export function corrupt(codec: CompressionType, message: string, cause?: unknown): CompressionError {
  return new CompressionError('corrupt', codec, message, cause === undefined ? undefined : { cause });
}

export function tooLarge(codec: CompressionType, limitBytes: number): CompressionError {
  return new CompressionError('too-large', codec, `decompressed data would exceed ${limitBytes} bytes`);
}

/**
 * Receives decompressed output a chunk at a time and returns false to stop decompressing.
 * A chunk is valid only during the call: decompressors may reuse its memory.
 */
export type ChunkSink = (chunk: Uint8Array) => boolean;
