/**
 * `sluice dlq inspect`: what a dead-letter topic holds, in one pass over it. Counts by error
 * class and by source topic, the oldest and newest dead letters (by when they were
 * dead-lettered, the record timestamp, and by when the original record was written,
 * sluice.original.timestamp), and a few samples. Memory is bounded by the number of distinct
 * error classes and source topics, not by the topic's size.
 */
import type { KafkaCluster } from '../../client/cluster.ts';
import type { ConsumerRecord } from '../../client/records.ts';
import { type DeadLetter, isDeadLetter, readDeadLetter, sluiceHeaders } from './dead-letter.ts';
import { type BytesPreview, cutText, previewBytes } from './preview.ts';
import { type PartitionRange, WHOLE_TOPIC, partitionRanges, readRanges } from './read.ts';

export const DEFAULT_SAMPLES = 3;

/** The error class a dead letter without sluice.error.class is counted under. */
export const NO_ERROR_CLASS = '(none)';

export interface RecordPosition {
  partition: number;
  offset: number;
}

export interface TimedPosition extends RecordPosition {
  timestampMs: number;
}

export interface Count {
  name: string;
  count: number;
}

export interface Sample extends RecordPosition {
  timestampMs: number;
  key: BytesPreview | null;
  value: BytesPreview | null;
  /** The sluice.* headers, values cut as previews are. */
  headers: Record<string, string | null>;
}

export interface DeadLetterReport {
  topic: string;
  partitions: PartitionRange[];
  /** Records read, dead letters or not. */
  records: number;
  deadLetters: number;
  /** Records without sluice.original.topic, and where the first of them is. */
  notDeadLetters: { count: number; first: RecordPosition | null };
  /** Most frequent first. */
  byErrorClass: Count[];
  bySourceTopic: Count[];
  oldest: TimedPosition | null;
  newest: TimedPosition | null;
  oldestOriginal: TimedPosition | null;
  newestOriginal: TimedPosition | null;
  samples: Sample[];
}

function cutHeader(value: string | null): string | null {
  if (value === null) return null;
  const cut = cutText(value);
  return cut.truncated ? `${cut.text}...` : cut.text;
}

function sample(r: ConsumerRecord): Sample {
  const headers = Object.fromEntries(Object.entries(sluiceHeaders(r.headers)).map(([k, v]) => [k, cutHeader(v)]));
  return {
    partition: r.partition,
    offset: r.offset,
    timestampMs: r.timestamp,
    key: previewBytes(r.key),
    value: previewBytes(r.value),
    headers,
  };
}

function byCount(counts: ReadonlyMap<string, number>): Count[] {
  return [...counts].map(([name, count]) => ({ name, count })).sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
}

/** Running totals of a dead-letter topic's records, fed in partition/offset order. */
export class DeadLetterTally {
  private records = 0;
  private deadLetters = 0;
  private notDeadLetters = 0;
  private firstNotDeadLetter: RecordPosition | null = null;
  private readonly errorClasses = new Map<string, number>();
  private readonly sourceTopics = new Map<string, number>();
  private oldest: TimedPosition | null = null;
  private newest: TimedPosition | null = null;
  private oldestOriginal: TimedPosition | null = null;
  private newestOriginal: TimedPosition | null = null;
  /** The first dead letter of each error class, then the first dead letters: samples are chosen from these. */
  private readonly firstOfClass = new Map<string, Sample>();
  private readonly first: Sample[] = [];

  constructor(private readonly samples: number) {}

  add(r: ConsumerRecord): void {
    this.records++;
    const d = readDeadLetter(r.headers);
    if (!isDeadLetter(d)) {
      this.notDeadLetters++;
      this.firstNotDeadLetter ??= { partition: r.partition, offset: r.offset };
      return;
    }
    this.deadLetters++;
    const errorClass = d.errorClass ?? NO_ERROR_CLASS;
    this.errorClasses.set(errorClass, (this.errorClasses.get(errorClass) ?? 0) + 1);
    this.sourceTopics.set(d.originalTopic, (this.sourceTopics.get(d.originalTopic) ?? 0) + 1);
    this.noteTimes(r, d);
    this.noteSample(r, errorClass);
  }

  private noteTimes(r: ConsumerRecord, d: DeadLetter): void {
    if (r.timestamp >= 0) {
      const at = { partition: r.partition, offset: r.offset, timestampMs: r.timestamp };
      if (this.oldest === null || at.timestampMs < this.oldest.timestampMs) this.oldest = at;
      if (this.newest === null || at.timestampMs >= this.newest.timestampMs) this.newest = at;
    }
    if (d.originalTimestampMs !== null) {
      const at = { partition: r.partition, offset: r.offset, timestampMs: d.originalTimestampMs };
      if (this.oldestOriginal === null || at.timestampMs < this.oldestOriginal.timestampMs) this.oldestOriginal = at;
      if (this.newestOriginal === null || at.timestampMs >= this.newestOriginal.timestampMs) this.newestOriginal = at;
    }
  }

  private noteSample(r: ConsumerRecord, errorClass: string): void {
    if (this.firstOfClass.size < this.samples && !this.firstOfClass.has(errorClass)) this.firstOfClass.set(errorClass, sample(r));
    if (this.first.length < this.samples) this.first.push(sample(r));
  }

  /** Samples show each error class first (up to the count asked for), then the earliest others, in partition/offset order. */
  private chosenSamples(): Sample[] {
    const chosen = [...this.firstOfClass.values()];
    const taken = new Set(chosen.map((s) => `${s.partition}/${s.offset}`));
    for (const s of this.first) {
      if (chosen.length >= this.samples) break;
      if (!taken.has(`${s.partition}/${s.offset}`)) chosen.push(s);
    }
    return chosen.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  }

  report(topic: string, partitions: PartitionRange[]): DeadLetterReport {
    return {
      topic,
      partitions,
      records: this.records,
      deadLetters: this.deadLetters,
      notDeadLetters: { count: this.notDeadLetters, first: this.firstNotDeadLetter },
      byErrorClass: byCount(this.errorClasses),
      bySourceTopic: byCount(this.sourceTopics),
      oldest: this.oldest,
      newest: this.newest,
      oldestOriginal: this.oldestOriginal,
      newestOriginal: this.newestOriginal,
      samples: this.chosenSamples(),
    };
  }
}

/** Reads the whole topic, as it was when the read began; an unknown topic throws UnknownTopicError. */
export async function inspectDeadLetters(cluster: KafkaCluster, topic: string, samples = DEFAULT_SAMPLES): Promise<DeadLetterReport> {
  const ranges = await partitionRanges(cluster, topic, WHOLE_TOPIC);
  const tally = new DeadLetterTally(samples);
  for await (const chunk of readRanges(cluster, topic, ranges)) {
    for (const r of chunk) tally.add(r);
  }
  return tally.report(topic, ranges);
}
