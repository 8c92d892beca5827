// XXH32, the checksum of the LZ4 frame format. Only frame descriptors (a few bytes) are
// hashed here, so a plain JS version is enough.

const PRIME1 = 0x9e3779b1;
const PRIME2 = 0x85ebca77;
const PRIME3 = 0xc2b2ae3d;
const PRIME4 = 0x27d4eb2f;
const PRIME5 = 0x165667b1;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function round(acc: number, input: number): number {
  return Math.imul(rotl((acc + Math.imul(input, PRIME2)) | 0, 13), PRIME1);
}

export function xxhash32(data: Uint8Array, seed = 0): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const length = data.length;
  let i = 0;
  let h: number;
  if (length >= 16) {
    let v1 = (seed + PRIME1 + PRIME2) | 0;
    let v2 = (seed + PRIME2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - PRIME1) | 0;
    for (; i <= length - 16; i += 16) {
      v1 = round(v1, view.getUint32(i, true));
      v2 = round(v2, view.getUint32(i + 4, true));
      v3 = round(v3, view.getUint32(i + 8, true));
      v4 = round(v4, view.getUint32(i + 12, true));
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else {
    h = (seed + PRIME5) | 0;
  }
  h = (h + length) | 0;
  for (; i + 4 <= length; i += 4) {
    h = Math.imul(rotl((h + Math.imul(view.getUint32(i, true), PRIME3)) | 0, 17), PRIME4);
  }
  for (; i < length; i++) {
    h = Math.imul(rotl((h + Math.imul(data[i]!, PRIME5)) | 0, 11), PRIME1);
  }
  h ^= h >>> 15;
  h = Math.imul(h, PRIME2);
  h ^= h >>> 13;
  h = Math.imul(h, PRIME3);
  h ^= h >>> 16;
  return h >>> 0;
}
