/**
 * `sluice dlq replay`: re-publishes dead letters to the topic they came from once the cause of
 * their failure is fixed. Each matching dead letter, in partition/offset order, is written to
 * its sluice.original.topic (or the topic asked for) with its key, value and own headers; the
 * dead-letter headers are dropped and two are added: sluice.replay.count (one more than the
 * dead letter carried) and sluice.replayed.from (`topic/partition/offset` of the dead letter).
 * The key chooses the partition as Kafka's default partitioner does, so records of one key
 * keep their order; acks=all.
 *
 * Kafka topics are append-only: a replay neither deletes nor marks the dead letters, and
 * replaying them again publishes them again.
 */
import type { RecordHeader } from '../../../protocol/records/record.ts';
import type { KafkaCluster } from '../../client/cluster.ts';
import { type ProducerRecord, TopicProducer } from '../../client/producer.ts';
import type { ConsumerRecord } from '../../client/records.ts';
import { DeadLetterHeaders, SLUICE_HEADER_NAMES } from '../dead-letters.ts';
import { type DeadLetter, positionOf, readDeadLetter } from './dead-letter.ts';
import type { RecordFilter } from './filter.ts';
import type { Count, RecordPosition } from './inspect.ts';
import { type ReadScope, partitionRanges, readRanges } from './read.ts';

/** How long a Produce may wait for the in-sync replicas, and retriable errors are retried. */
const PRODUCE_TIMEOUT_MS = 30_000;
/** Bytes of records one Produce carries: well under Kafka's default max.message.bytes (1 MiB). */
const SEND_MAX_BYTES = 512 * 1024;
/** Per-record framing beyond key, value and headers, for sizing sends. */
const RECORD_OVERHEAD_BYTES = 32;

export const NO_ORIGINAL_TOPIC = 'not a dead letter (no sluice.original.topic header); --to TOPIC replays it';

/** The headers a replayed record carries: its own, without the sluice.* ones, and the replay's. */
export function replayHeaders(record: ConsumerRecord, d: DeadLetter): RecordHeader[] {
  return [
    ...record.headers.filter((h) => !SLUICE_HEADER_NAMES.has(h.key)),
    { key: DeadLetterHeaders.replayCount, value: Buffer.from(String(d.replayCount + 1), 'utf8') },
    { key: DeadLetterHeaders.replayedFrom, value: Buffer.from(positionOf(record), 'utf8') },
  ];
}

/** The record a dead letter is replayed as; its timestamp is the time of the replay. */
export function replayRecord(record: ConsumerRecord, d: DeadLetter): ProducerRecord {
  return { key: record.key, value: record.value, headers: replayHeaders(record, d), partition: null, timestamp: null };
}

export interface ReplayOptions {
  /** The dead-letter topic. */
  topic: string;
  /** Where to replay instead of each record's sluice.original.topic. */
  to: string | null;
  filter: RecordFilter;
  scope: ReadScope;
  dryRun: boolean;
}

export interface PlannedReplay extends RecordPosition {
  key: Buffer | null;
  errorClass: string | null;
  to: string;
}

export interface SkippedRecord extends RecordPosition {
  reason: string;
}

/** Told of each record as it is taken or skipped, in order, so a caller can print as the replay goes. */
export interface ReplayListener {
  planned?(r: PlannedReplay): void;
  skipped?(r: SkippedRecord): void;
}

export interface ReplayResult {
  topic: string;
  dryRun: boolean;
  /** Records read from the dead-letter topic. */
  read: number;
  /** Records the filters took, skipped ones included. */
  matched: number;
  /** Records acknowledged by the target topics (0 in a dry run). */
  replayed: number;
  skipped: number;
  /** Records taken for each target topic. */
  targets: Count[];
}

/** A replay that failed after writing some records: says how many, since running it again writes those again. */
export class ReplayInterruptedError extends Error {
  constructor(
    cause: unknown,
    readonly replayed: number,
  ) {
    const reason = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
    super(`${reason}; ${replayed} dead letters were replayed before the failure (replaying again re-publishes them)`, { cause });
    this.name = 'ReplayInterruptedError';
  }
}

function recordBytes(r: ProducerRecord): number {
  let bytes = RECORD_OVERHEAD_BYTES + (r.key?.length ?? 0) + (r.value?.length ?? 0);
  for (const h of r.headers) bytes += h.key.length + (h.value?.length ?? 0);
  return bytes;
}

/** Sends in order, in Produce requests of at most SEND_MAX_BYTES (or one record, when larger). */
async function sendBounded(producer: TopicProducer, records: readonly ProducerRecord[]): Promise<void> {
  let batch: ProducerRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = recordBytes(r);
    if (batch.length > 0 && bytes + size > SEND_MAX_BYTES) {
      await producer.send(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(r);
    bytes += size;
  }
  await producer.send(batch);
}

/**
 * Replays the matching dead letters of the scope read, as the topic was when the replay began.
 * A target topic that does not exist fails the replay (in a dry run too) with UnknownTopicError:
 * a --to topic before anything is written; an original topic when the first dead letter for it
 * is met, after the chunks before it were replayed (the error says how many).
 */
export async function replayDeadLetters(cluster: KafkaCluster, o: ReplayOptions, listener: ReplayListener = {}): Promise<ReplayResult> {
  const ranges = await partitionRanges(cluster, o.topic, o.scope);
  const producers = new Map<string, TopicProducer>();
  const targets = new Map<string, number>();
  const result = { topic: o.topic, dryRun: o.dryRun, read: 0, matched: 0, replayed: 0, skipped: 0 };
  const producerFor = async (topic: string): Promise<void> => {
    if (producers.has(topic)) return;
    const producer = new TopicProducer(cluster, topic, { acks: -1, timeoutMs: PRODUCE_TIMEOUT_MS });
    await producer.open();
    producers.set(topic, producer);
  };
  const acknowledged = (): number => [...producers.values()].reduce((n, p) => n + p.written, 0);
  try {
    // A --to topic that does not exist fails the replay before anything is read.
    if (o.to !== null) await producerFor(o.to);
    for await (const chunk of readRanges(cluster, o.topic, ranges)) {
      const outgoing = new Map<string, ProducerRecord[]>();
      for (const r of chunk) {
        result.read++;
        const d = readDeadLetter(r.headers);
        if (!o.filter.matches(r, d)) continue;
        result.matched++;
        const to = o.to ?? d.originalTopic;
        if (to === null) {
          result.skipped++;
          listener.skipped?.({ partition: r.partition, offset: r.offset, reason: NO_ORIGINAL_TOPIC });
          continue;
        }
        await producerFor(to);
        targets.set(to, (targets.get(to) ?? 0) + 1);
        listener.planned?.({ partition: r.partition, offset: r.offset, key: r.key, errorClass: d.errorClass, to });
        const records = outgoing.get(to) ?? [];
        records.push(replayRecord(r, d));
        outgoing.set(to, records);
      }
      if (o.dryRun) continue;
      for (const [to, records] of outgoing) await sendBounded(producers.get(to)!, records);
    }
  } catch (err) {
    const replayed = acknowledged();
    if (replayed > 0) throw new ReplayInterruptedError(err, replayed);
    throw err;
  }
  return {
    ...result,
    replayed: acknowledged(),
    targets: [...targets].map(([name, count]) => ({ name, count })),
  };
}
