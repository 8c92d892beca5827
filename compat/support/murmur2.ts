// Kafka's default partitioner for keyed records (Java's Utils.murmur2 and toPositive), used to
// check that clients offering a Java-compatible partitioner place keys where Java would.

export function murmur2(data: Buffer): number {
  const length = data.length;
  const seed = 0x9747b28c;
  const m = 0x5bd1e995;
  const r = 24;
  let h = (seed ^ length) | 0;
  const length4 = length >> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4]! & 0xff) + ((data[i4 + 1]! & 0xff) << 8) + ((data[i4 + 2]! & 0xff) << 16) + ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  const index = length4 * 4;
  const rest = length % 4;
  if (rest === 3) h ^= (data[index + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[index + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[index]! & 0xff;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

export function murmur2Partition(key: Buffer, partitions: number): number {
  return (murmur2(key) & 0x7fffffff) % partitions;
}
