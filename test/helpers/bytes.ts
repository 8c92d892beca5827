/** XORs one byte of `buf` with `mask` in place: how the tests corrupt a frame or a batch. */
export function flipBits(buf: Uint8Array, index: number, mask: number): void {
  const byte = buf[index];
  if (byte === undefined) throw new RangeError(`index ${index} outside a buffer of ${buf.length} bytes`);
  buf[index] = byte ^ mask;
}
