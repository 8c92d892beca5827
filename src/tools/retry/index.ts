/**
 * `sluice/retry`: retries and dead letters for kafkajs consumers, against any Kafka-compatible
 * cluster. Needs kafkajs (an optional peer dependency of sluice).
 *
 *   const consumer = await consumeWithRetries({ kafka, topic: 'orders', groupId: 'billing', handler });
 *   ...
 *   await consumer.stop();
 */
export { type Backoff, DEFAULT_BACKOFF, backoffDelayMs } from './backoff.ts';
export { type RetryConsumer, consumeWithRetries, retryGroupId } from './consume-with-retries.ts';
export {
  DEFAULT_MAX_KEYS,
  type DedupeOptions,
  InMemoryProcessedKeys,
  type ProcessedKeys,
  dedupe,
  keyByHeader,
  keyByOffset,
} from './dedupe.ts';
export { NON_ERROR_THROWN } from './failure.ts';
export { type ConsumeWithRetriesOptions, DEFAULT_IN_MEMORY_ATTEMPTS, DEFAULT_MAX_ATTEMPTS, type RetryLogger } from './options.ts';
export type { RetryHandler, RetryRecord } from './record.ts';
export { DeadLetterHeaders, deadLetterTopicName, retryTopicName } from '../dead-letters.ts';
