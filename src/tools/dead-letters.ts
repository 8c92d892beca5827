/**
 * The contract between the retry/dead-letter consumer library (src/tools/retry), `sluice dlq`
 * (src/tools/dlq) and the broker's dead-letter metrics: the names of retry and dead-letter
 * topics and the headers a retried or dead-lettered record carries. A record keeps its key,
 * value and own headers; these headers are added beside them, values UTF-8 text.
 */

/** Where a failed record waits for attempt `level + 1` (levels start at 1): `<topic>.retry.<level>`. */
export function retryTopicName(sourceTopic: string, level: number): string {
  return `${sourceTopic}.retry.${level}`;
}

/** The default dead-letter topic of a source topic: `<topic>.dlq`. */
export function deadLetterTopicName(sourceTopic: string): string {
  return `${sourceTopic}.dlq`;
}

const RETRY_TOPIC = /^(.+)\.retry\.([1-9][0-9]*)$/;
const DEAD_LETTER_TOPIC = /^(.+)\.dlq$/;

/** What a topic's name says it is, by the naming above. */
export type TopicRole =
  | { kind: 'retry'; sourceTopic: string; level: number }
  | { kind: 'dead-letter'; sourceTopic: string }
  | { kind: 'other' };

export function topicRole(topic: string): TopicRole {
  const retry = RETRY_TOPIC.exec(topic);
  if (retry) return { kind: 'retry', sourceTopic: retry[1]!, level: Number(retry[2]) };
  const dead = DEAD_LETTER_TOPIC.exec(topic);
  if (dead) return { kind: 'dead-letter', sourceTopic: dead[1]! };
  return { kind: 'other' };
}

export const DeadLetterHeaders = {
  /** The topic, partition, offset and timestamp (ms) the record was first consumed from. */
  originalTopic: 'sluice.original.topic',
  originalPartition: 'sluice.original.partition',
  originalOffset: 'sluice.original.offset',
  originalTimestamp: 'sluice.original.timestamp',
  /** Handler attempts made so far (on a dead letter: all of them). */
  attempts: 'sluice.attempts',
  /** The last failure: the error's class (its `name`) and message. */
  errorClass: 'sluice.error.class',
  errorMessage: 'sluice.error.message',
  /** The consumer group whose handler failed. */
  consumerGroup: 'sluice.consumer.group',
  /** On a retry record: when (ms since the epoch) its next attempt is due. */
  retryDueMs: 'sluice.retry.due.ms',
  /** On a replayed record: how many times it was replayed, and the dead letter it came from (`topic/partition/offset`). */
  replayCount: 'sluice.replay.count',
  replayedFrom: 'sluice.replayed.from',
} as const;

/** Every header name above: what a replay strips before re-publishing (it then adds the replay ones). */
export const SLUICE_HEADER_NAMES: ReadonlySet<string> = new Set(Object.values(DeadLetterHeaders));

/** Longest error message a header carries, in characters; longer ones are cut, ending in an ellipsis. */
export const ERROR_MESSAGE_MAX_CHARS = 1024;
