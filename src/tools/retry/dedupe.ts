/**
 * Deduplication for handlers whose effect must happen once though Kafka may deliver a record
 * again (a crash or a rebalance before its offset was committed): the handler's wrapper skips
 * a record whose key a store of processed keys already holds, and adds the key after the handler
 * succeeds.
 */
import type { RetryHandler, RetryRecord } from './record.ts';
import { headerText } from './record.ts';

/** Remembers processed keys: in memory, or shared and durable (a database table, a Redis set). */
export interface ProcessedKeys {
  has(key: string): Promise<boolean> | boolean;
  add(key: string): Promise<void> | void;
}

export interface DedupeOptions {
  /** What identifies the record's effect; undefined runs the handler without deduplication. */
  keyOf(record: RetryRecord): string | undefined;
  store: ProcessedKeys;
}

/**
 * The record's source coordinates, `topic/partition/offset`: the same on every attempt and
 * every redelivery of that record, whichever retry topic it comes from.
 */
export function keyByOffset(record: RetryRecord): string {
  return `${record.topic}/${record.partition}/${record.offset}`;
}

/** The value of header `name` (an event id its producer set); records without it are not deduplicated. */
export function keyByHeader(name: string): (record: RetryRecord) => string | undefined {
  return (record) => headerText(record.headers, name);
}

/**
 * `handler`, skipping records whose key `store` holds. A failed handler adds nothing, so the
 * record is attempted again; a store that fails to add makes the attempt fail too. Records with
 * the same key are handled one after the other within this process (the source consumer and the
 * retry levels run side by side), so the second sees the first one's key.
 */
export function dedupe(handler: RetryHandler, { keyOf, store }: DedupeOptions): RetryHandler {
  const inFlight = new Map<string, Promise<void>>();
  const once = async (key: string, record: RetryRecord): Promise<void> => {
    if (await store.has(key)) return;
    await handler(record);
    await store.add(key);
  };
  return async (record) => {
    const key = keyOf(record);
    if (key === undefined) return handler(record);
    for (let prior = inFlight.get(key); prior !== undefined; prior = inFlight.get(key)) await prior.catch(() => undefined);
    const run = once(key, record);
    inFlight.set(key, run);
    try {
      await run;
    } finally {
      if (inFlight.get(key) === run) inFlight.delete(key);
    }
  };
}

export const DEFAULT_MAX_KEYS = 100_000;

/** Processed keys in memory, the `maxKeys` most recently added: the oldest is forgotten first. */
export class InMemoryProcessedKeys implements ProcessedKeys {
  readonly maxKeys: number;
  /** A Set iterates in insertion order: its first key is the oldest. */
  private readonly keys = new Set<string>();

  constructor({ maxKeys = DEFAULT_MAX_KEYS }: { maxKeys?: number } = {}) {
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1)
      throw new RangeError(`InMemoryProcessedKeys: maxKeys must be a positive integer, got ${maxKeys}`);
    this.maxKeys = maxKeys;
  }

  get size(): number {
    return this.keys.size;
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  add(key: string): void {
    if (this.keys.has(key)) return;
    this.keys.add(key);
    if (this.keys.size > this.maxKeys) this.keys.delete(this.keys.values().next().value!);
  }
}
