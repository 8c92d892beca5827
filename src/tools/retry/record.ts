/**
 * The record a handler sees: where it was first consumed (its source topic, partition, offset
 * and timestamp, carried in headers once it travels through retry topics), its key, value and
 * own headers, and which attempt this is.
 */
import type { IHeaders, KafkaMessage } from 'kafkajs';
import { DeadLetterHeaders } from '../dead-letters.ts';

export interface RetryRecord {
  /** The source topic, partition and offset the record was first consumed from. */
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  /** The original record's timestamp (ms since the epoch, as kafkajs gives it: text). */
  readonly timestamp: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** The record's own headers: without the ones this library adds on its way through retry topics. */
  readonly headers: IHeaders;
  /** This invocation's attempt: 1 for the first, up to maxAttempts. */
  readonly attempt: number;
}

/** Processes one record; a throw (or a rejected promise) is a failed attempt. */
export type RetryHandler = (record: RetryRecord) => Promise<void> | void;

/**
 * The headers this library writes on retry and dead-letter records. A replay's headers are not
 * among them: a replayed record that fails again keeps its replay count.
 */
const WRITTEN_HEADERS: ReadonlySet<string> = new Set([
  DeadLetterHeaders.originalTopic,
  DeadLetterHeaders.originalPartition,
  DeadLetterHeaders.originalOffset,
  DeadLetterHeaders.originalTimestamp,
  DeadLetterHeaders.attempts,
  DeadLetterHeaders.errorClass,
  DeadLetterHeaders.errorMessage,
  DeadLetterHeaders.consumerGroup,
  DeadLetterHeaders.retryDueMs,
]);

/** A record's headers without the ones this library writes. */
export function ownHeaders(headers: IHeaders | undefined): IHeaders {
  const own: IHeaders = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined && !WRITTEN_HEADERS.has(name)) own[name] = value;
  }
  return own;
}

/** A header's value as text (the last one when the name repeats); undefined when absent. */
export function headerText(headers: IHeaders | undefined, name: string): string | undefined {
  const value = headers?.[name];
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  if (last === undefined) return undefined;
  return typeof last === 'string' ? last : last.toString('utf8');
}

/** A non-negative integer header (a partition, an offset, a count, a time); undefined when absent or malformed. */
export function headerInteger(headers: IHeaders | undefined, name: string): number | undefined {
  const text = headerText(headers, name);
  if (text === undefined || !/^[0-9]{1,16}$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A record as consumed from the source topic, for attempt `attempt`. */
export function sourceRecord(topic: string, partition: number, message: KafkaMessage, attempt: number): RetryRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    timestamp: message.timestamp,
    key: message.key,
    value: message.value,
    headers: ownHeaders(message.headers),
    attempt,
  };
}

/** What a retry topic's record says about its past: where it came from, attempts made, for which group, when due. */
export interface RetriedRecord {
  readonly record: RetryRecord;
  readonly attemptsMade: number;
  readonly consumerGroup: string | undefined;
  readonly dueMs: number | undefined;
}

/**
 * Reads a record consumed from retry topic level `level` of `sourceTopic`. Headers missing or
 * malformed (a record this library did not write) fall back to what the record and its level
 * imply: its own partition, offset and timestamp, and the attempts that lead to that level.
 */
export function retriedRecord(sourceTopic: string, partition: number, message: KafkaMessage, impliedAttemptsMade: number): RetriedRecord {
  const h = message.headers;
  const attemptsMade = headerInteger(h, DeadLetterHeaders.attempts) ?? impliedAttemptsMade;
  return {
    record: {
      topic: headerText(h, DeadLetterHeaders.originalTopic) ?? sourceTopic,
      partition: headerInteger(h, DeadLetterHeaders.originalPartition) ?? partition,
      offset: String(headerInteger(h, DeadLetterHeaders.originalOffset) ?? message.offset),
      timestamp: String(headerInteger(h, DeadLetterHeaders.originalTimestamp) ?? message.timestamp),
      key: message.key,
      value: message.value,
      headers: ownHeaders(h),
      attempt: attemptsMade + 1,
    },
    attemptsMade,
    consumerGroup: headerText(h, DeadLetterHeaders.consumerGroup),
    dueMs: headerInteger(h, DeadLetterHeaders.retryDueMs),
  };
}
