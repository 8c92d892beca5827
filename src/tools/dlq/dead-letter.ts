/**
 * What a record of a dead-letter topic says about itself, read from the headers of the
 * contract (src/tools/dead-letters.ts). Header values come from whoever wrote the record, so
 * each one is read defensively: a missing, null or malformed value reads as null, never throws.
 */
import type { RecordHeader } from '../../../protocol/records/record.ts';
import type { ConsumerRecord } from '../../client/records.ts';
import { DeadLetterHeaders, SLUICE_HEADER_NAMES } from '../dead-letters.ts';

export interface DeadLetter {
  originalTopic: string | null;
  originalPartition: number | null;
  originalOffset: number | null;
  originalTimestampMs: number | null;
  attempts: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  consumerGroup: string | null;
  /** Times the record was replayed before it was dead-lettered again (0 when never). */
  replayCount: number;
}

/** The value of the last header named `name` as UTF-8, as Kafka's `Headers.lastHeader` picks it. */
export function lastHeader(headers: readonly RecordHeader[], name: string): string | null {
  for (let i = headers.length - 1; i >= 0; i--) {
    const h = headers[i]!;
    if (h.key === name) return h.value === null ? null : h.value.toString('utf8');
  }
  return null;
}

/** A decimal integer header (at least `min`), or null when it is anything else. */
export function integerHeader(headers: readonly RecordHeader[], name: string, min = 0): number | null {
  const text = lastHeader(headers, name);
  if (text === null || !/^-?\d{1,16}$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) && n >= min ? n : null;
}

export function readDeadLetter(headers: readonly RecordHeader[]): DeadLetter {
  return {
    originalTopic: lastHeader(headers, DeadLetterHeaders.originalTopic),
    originalPartition: integerHeader(headers, DeadLetterHeaders.originalPartition),
    originalOffset: integerHeader(headers, DeadLetterHeaders.originalOffset),
    originalTimestampMs: integerHeader(headers, DeadLetterHeaders.originalTimestamp),
    attempts: integerHeader(headers, DeadLetterHeaders.attempts),
    errorClass: lastHeader(headers, DeadLetterHeaders.errorClass),
    errorMessage: lastHeader(headers, DeadLetterHeaders.errorMessage),
    consumerGroup: lastHeader(headers, DeadLetterHeaders.consumerGroup),
    replayCount: integerHeader(headers, DeadLetterHeaders.replayCount) ?? 0,
  };
}

/** A record is a dead letter when it says where it came from. */
export function isDeadLetter(d: DeadLetter): d is DeadLetter & { originalTopic: string } {
  return d.originalTopic !== null;
}

/** The sluice.* headers a record carries, by name, in the order they were written (the last of a repeated one wins). */
export function sluiceHeaders(headers: readonly RecordHeader[]): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const h of headers) {
    if (SLUICE_HEADER_NAMES.has(h.key)) out[h.key] = h.value === null ? null : h.value.toString('utf8');
  }
  return out;
}

/** `topic/partition/offset`: how a replayed record names the dead letter it came from. */
export function positionOf(r: Pick<ConsumerRecord, 'topic' | 'partition' | 'offset'>): string {
  return `${r.topic}/${r.partition}/${r.offset}`;
}
