/**
 * The partition of a keyed record as Kafka's default partitioner computes it
 * (BuiltInPartitioner.partitionForKey): murmur2 of the key bytes, made positive by masking the
 * sign bit, modulo the partition count. Records written with the same key by the Java client,
 * librdkafka's murmur2 partitioner or kafkajs land in the same partition as ours.
 */

/** Kafka's Utils.murmur2: 32-bit MurmurHash2 with seed 0x9747b28c, as a signed int32. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  const m = 0x5bd1e995;
  const r = 24;
  let h = 0x9747b28c ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4]! | (data[i4 + 1]! << 8) | (data[i4 + 2]! << 16) | (data[i4 + 3]! << 24);
    k = Math.imul(k, m);
    k ^= k >>> r;
    k = Math.imul(k, m);
    h = Math.imul(h, m);
    h ^= k;
  }
  // The Java original's switch falls through: three tail bytes mix all three in.
  const tail = length & ~3;
  const remaining = length & 3;
  if (remaining >= 3) h ^= data[tail + 2]! << 16;
  if (remaining >= 2) h ^= data[tail + 1]! << 8;
  if (remaining >= 1) {
    h ^= data[tail]!;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition Kafka's default partitioner picks for `key` among `numPartitions`. */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions <= 0) throw new RangeError(`invalid partition count ${numPartitions}`);
  return (murmur2(key) & 0x7fffffff) % numPartitions;
}
