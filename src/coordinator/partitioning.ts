/** Java's String.hashCode over UTF-16 code units, as Kafka computes it. */
export function javaStringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return h;
}

/** Kafka's Utils.abs: Math.abs, except Integer.MIN_VALUE maps to 0. */
function kafkaAbs(n: number): number {
  return n === -2147483648 ? 0 : Math.abs(n);
}

/**
 * The partition of an internal topic (`__consumer_offsets`, `__transaction_state`) that
 * holds a key: its leader is the key's coordinator.
 */
export function coordinatorPartitionFor(key: string, partitionCount: number): number {
  return kafkaAbs(javaStringHashCode(key)) % partitionCount;
}
