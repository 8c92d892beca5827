/**
 * Reads records back with a kafkajs consumer in a group of its own, from the start of a
 * topic: what the cluster tests check acknowledged records against.
 */
import assert from 'node:assert/strict';
import type { Kafka } from 'kafkajs';

export interface ReadRecord {
  readonly partition: number;
  readonly offset: string;
  readonly value: string;
  /** The producer id and epoch of the batch the record was stored in (-1 and -1 for none). */
  readonly producerId: string;
  readonly producerEpoch: number;
}

/** What kafkajs puts on each message it decodes from a v2 batch, beyond its published types. */
interface BatchContext {
  readonly producerId?: string;
  readonly producerEpoch?: number;
}

/**
 * The first `count` records delivered (of `partition` only, when given), in delivery order;
 * rejects when they do not all arrive within `timeoutMs`.
 */
export async function readRecords(
  kafka: Kafka,
  topic: string,
  count: number,
  partition?: number,
  timeoutMs = 60_000,
): Promise<ReadRecord[]> {
  const consumer = kafka.consumer({ groupId: `reader-${topic}-${Date.now()}` });
  const read: ReadRecord[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${read.length} of ${count} records`)), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ partition: p, message }) => {
            if ((partition !== undefined && p !== partition) || read.length >= count) return;
            const batch = (message as { batchContext?: BatchContext }).batchContext;
            read.push({
              partition: p,
              offset: message.offset,
              value: message.value!.toString(),
              producerId: batch?.producerId ?? '-1',
              producerEpoch: batch?.producerEpoch ?? -1,
            });
            if (read.length >= count) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return read;
}

/** The records as offset -> value, asserting that each offset was delivered once. */
export function byOffset(records: readonly ReadRecord[]): Map<string, string> {
  const seen = new Map<string, string>();
  for (const r of records) {
    assert.ok(!seen.has(r.offset), `offset ${r.offset} delivered once`);
    seen.set(r.offset, r.value);
  }
  return seen;
}
