import { crc32c as nativeCrc32c } from '@node-rs/crc32';

/** CRC-32C (Castagnoli) as used by record batch v2, computed in native code. */
export function crc32c(data: Buffer): number {
  return nativeCrc32c(data) >>> 0;
}
