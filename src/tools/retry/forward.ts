/**
 * Sends a failed record on: to the next retry topic with the time its next attempt is due, or,
 * once its attempts are spent, to the dead-letter topic. The record keeps its key, value and own
 * headers; the headers of dead-letters.ts say where it came from and why it failed. Sends are
 * acknowledged by all in-sync replicas before the consumer commits past the record.
 */
import { type IHeaders, Partitioners, type Producer } from 'kafkajs';
import { DeadLetterHeaders } from '../dead-letters.ts';
import { backoffDelayMs } from './backoff.ts';
import type { Failure } from './failure.ts';
import type { ResolvedOptions } from './options.ts';
import type { RetryRecord } from './record.ts';

export type Destination = { kind: 'retry'; level: number; topic: string; dueMs: number } | { kind: 'dead-letter'; topic: string };

/**
 * Where a record goes after `attemptsMade` failed attempts: level L of the retry topics runs
 * attempt inMemoryAttempts + L, due one backoff delay from `nowMs`.
 */
export function destinationAfter(options: ResolvedOptions, attemptsMade: number, nowMs: number): Destination {
  const level = attemptsMade + 1 - options.inMemoryAttempts;
  if (attemptsMade >= options.maxAttempts || level > options.retryTopics.length)
    return { kind: 'dead-letter', topic: options.deadLetterTopic };
  const clamped = Math.max(1, level);
  return {
    kind: 'retry',
    level: clamped,
    topic: options.retryTopics[clamped - 1]!,
    dueMs: nowMs + backoffDelayMs(options.backoff, attemptsMade),
  };
}

/** The headers of the record sent on: its own, then the contract's. */
export function forwardedHeaders(
  record: RetryRecord,
  attemptsMade: number,
  failure: Failure,
  groupId: string,
  destination: Destination,
): IHeaders {
  const headers: IHeaders = {
    ...record.headers,
    [DeadLetterHeaders.originalTopic]: record.topic,
    [DeadLetterHeaders.originalPartition]: String(record.partition),
    [DeadLetterHeaders.originalOffset]: record.offset,
    [DeadLetterHeaders.originalTimestamp]: record.timestamp,
    [DeadLetterHeaders.attempts]: String(attemptsMade),
    [DeadLetterHeaders.errorClass]: failure.errorClass,
    [DeadLetterHeaders.errorMessage]: failure.errorMessage,
    [DeadLetterHeaders.consumerGroup]: groupId,
  };
  if (destination.kind === 'retry') headers[DeadLetterHeaders.retryDueMs] = String(destination.dueMs);
  return headers;
}

export class Forwarder {
  private constructor(
    private readonly producer: Producer,
    private readonly options: ResolvedOptions,
  ) {}

  static async connect(options: ResolvedOptions): Promise<Forwarder> {
    // Idempotent: a send kafkajs retries after a lost answer must not become an extra attempt.
    const producer = options.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    return new Forwarder(producer, options);
  }

  /** Sends `record` on after `attemptsMade` failed attempts; resolves once acknowledged. */
  async forward(record: RetryRecord, attemptsMade: number, failure: Failure): Promise<Destination> {
    const destination = destinationAfter(this.options, attemptsMade, Date.now());
    const headers = forwardedHeaders(record, attemptsMade, failure, this.options.groupId, destination);
    await this.producer.send({ topic: destination.topic, acks: -1, messages: [{ key: record.key, value: record.value, headers }] });
    this.report(record, attemptsMade, failure, destination);
    return destination;
  }

  private report(record: RetryRecord, attemptsMade: number, failure: Failure, destination: Destination): void {
    const context = {
      groupId: this.options.groupId,
      record: `${record.topic}/${record.partition}/${record.offset}`,
      attempts: attemptsMade,
      errorClass: failure.errorClass,
      errorMessage: failure.errorMessage,
      to: destination.topic,
    };
    if (destination.kind === 'retry') this.options.logger.info('record failed: sent to a retry topic', context);
    else this.options.logger.warn('record failed its last attempt: dead-lettered', context);
  }

  disconnect(): Promise<void> {
    return this.producer.disconnect();
  }
}
