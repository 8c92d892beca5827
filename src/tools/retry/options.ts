/** The options of consumeWithRetries, their defaults, and the checks that reject bad ones before anything connects. */
import type { ConsumerConfig, Kafka } from 'kafkajs';
import { deadLetterTopicName, retryTopicName } from '../dead-letters.ts';
import { type Backoff, DEFAULT_BACKOFF } from './backoff.ts';
import type { RetryHandler } from './record.ts';

/** Where the library reports forwarded and dead-lettered records (a kafkajs Logger fits). */
export interface RetryLogger {
  info(message: string, extra?: object): void;
  warn(message: string, extra?: object): void;
  error(message: string, extra?: object): void;
}

export interface ConsumeWithRetriesOptions {
  /** The kafkajs client the consumers, the producer and the admin client are made from. */
  readonly kafka: Kafka;
  /** The source topic. */
  readonly topic: string;
  /** The consumer group of the source topic; retry level N consumes as `<groupId>.retry.<N>`. */
  readonly groupId: string;
  readonly handler: RetryHandler;
  /** Handler invocations per record, the first included, before it is dead-lettered. Default 4. */
  readonly maxAttempts?: number;
  /** Of those, how many run at once in the source topic's consumer (1..maxAttempts). Default 2 (maxAttempts when less). */
  readonly inMemoryAttempts?: number;
  /** Default { initialMs: 200, multiplier: 2, maxMs: 30000 }; a partial one fills in the rest. */
  readonly backoff?: Partial<Backoff>;
  /** Default `<topic>.dlq`. */
  readonly deadLetterTopic?: string;
  /** Where the source group starts when it has no committed offset: the earliest record, or (default) new ones only. */
  readonly fromBeginning?: boolean;
  /** kafkajs consumer settings for every consumer (session timeout, heartbeat interval, ...). */
  readonly consumerConfig?: Omit<ConsumerConfig, 'groupId'>;
  /** Partitions each consumer works on at once (kafkajs partitionsConsumedConcurrently). Default 1. */
  readonly partitionsConsumedConcurrently?: number;
  /** Default: the kafkajs client's logger. */
  readonly logger?: RetryLogger;
}

export interface ResolvedOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  readonly groupId: string;
  readonly handler: RetryHandler;
  readonly maxAttempts: number;
  readonly inMemoryAttempts: number;
  readonly backoff: Backoff;
  readonly deadLetterTopic: string;
  /** `<topic>.retry.<N>` for N = 1..maxAttempts - inMemoryAttempts, in level order. */
  readonly retryTopics: readonly string[];
  readonly fromBeginning: boolean;
  readonly consumerConfig: Omit<ConsumerConfig, 'groupId'>;
  readonly partitionsConsumedConcurrently: number;
  readonly logger: RetryLogger;
}

export const DEFAULT_MAX_ATTEMPTS = 4;
export const DEFAULT_IN_MEMORY_ATTEMPTS = 2;

function invalid(what: string, got: unknown): never {
  throw new RangeError(`consumeWithRetries: ${what}, got ${typeof got === 'string' ? JSON.stringify(got) : String(got)}`);
}

function positiveInteger(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) invalid(`${name} must be a positive integer`, value);
  return value;
}

function nonEmptyString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) invalid(`${name} must be a non-empty string`, value);
  return value;
}

function resolveBackoff(given: Partial<Backoff> | undefined): Backoff {
  const set = Object.fromEntries(Object.entries(given ?? {}).filter(([, v]) => v !== undefined));
  const backoff = { ...DEFAULT_BACKOFF, ...set } as Backoff;
  const { initialMs, multiplier, maxMs } = backoff;
  if (typeof initialMs !== 'number' || !Number.isSafeInteger(initialMs) || initialMs < 0) {
    invalid('backoff.initialMs must be a non-negative integer', initialMs);
  }
  if (typeof multiplier !== 'number' || !Number.isFinite(multiplier) || multiplier < 1)
    invalid('backoff.multiplier must be a number >= 1', multiplier);
  if (typeof maxMs !== 'number' || !Number.isSafeInteger(maxMs) || maxMs < initialMs) {
    invalid(`backoff.maxMs must be an integer >= backoff.initialMs (${initialMs})`, maxMs);
  }
  return backoff;
}

function isKafkaClient(kafka: unknown): kafka is Kafka {
  const k = kafka as Partial<Record<'consumer' | 'producer' | 'admin' | 'logger', unknown>> | null;
  return (
    typeof k === 'object' &&
    k !== null &&
    typeof k.consumer === 'function' &&
    typeof k.producer === 'function' &&
    typeof k.admin === 'function' &&
    typeof k.logger === 'function'
  );
}

/** The options with defaults filled in; throws a RangeError naming the first bad one. */
export function resolveOptions(options: ConsumeWithRetriesOptions): ResolvedOptions {
  if (!isKafkaClient(options.kafka)) invalid('kafka must be a kafkajs Kafka instance', options.kafka);
  const topic = nonEmptyString('topic', options.topic);
  const groupId = nonEmptyString('groupId', options.groupId);
  if (typeof options.handler !== 'function') invalid('handler must be a function', options.handler);
  const maxAttempts = positiveInteger('maxAttempts', options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
  const inMemoryAttempts = positiveInteger(
    'inMemoryAttempts',
    options.inMemoryAttempts ?? Math.min(DEFAULT_IN_MEMORY_ATTEMPTS, maxAttempts),
  );
  if (inMemoryAttempts > maxAttempts) invalid(`inMemoryAttempts must be at most maxAttempts (${maxAttempts})`, inMemoryAttempts);
  const backoff = resolveBackoff(options.backoff);
  const retryTopics = Array.from({ length: maxAttempts - inMemoryAttempts }, (_, i) => retryTopicName(topic, i + 1));
  const deadLetterTopic = nonEmptyString('deadLetterTopic', options.deadLetterTopic ?? deadLetterTopicName(topic));
  if (deadLetterTopic === topic || retryTopics.includes(deadLetterTopic)) {
    invalid('deadLetterTopic must differ from the source topic and its retry topics', deadLetterTopic);
  }
  const partitionsConsumedConcurrently = positiveInteger('partitionsConsumedConcurrently', options.partitionsConsumedConcurrently ?? 1);
  return {
    kafka: options.kafka,
    topic,
    groupId,
    handler: options.handler,
    maxAttempts,
    inMemoryAttempts,
    backoff,
    deadLetterTopic,
    retryTopics,
    fromBeginning: options.fromBeginning ?? false,
    consumerConfig: options.consumerConfig ?? {},
    partitionsConsumedConcurrently,
    logger: options.logger ?? options.kafka.logger(),
  };
}
