/**
 * consumeWithRetries: a kafkajs consumer of the source topic that runs a handler per record,
 * retries a failing record a few times in memory, then through retry topics that delay it
 * without blocking its partition, and dead-letters it after its last attempt.
 *
 * One kafkajs consumer per retry level, each in its own group (`<groupId>.retry.<N>`): kafkajs
 * fetches again only once every batch of a fetch is processed, so one consumer waiting for a
 * level-2 record to be due would hold up level 1 too; and its assigners hand out every topic any
 * member subscribed to, so the levels cannot share one group with different subscriptions. A
 * group per level also shows each level's lag on its own.
 */
import type { Consumer } from 'kafkajs';
import type { AttemptContext } from './attempts.ts';
import { type RecordStep, eachBatch, retryStep, sourceStep } from './batch.ts';
import { Forwarder } from './forward.ts';
import { type ConsumeWithRetriesOptions, type ResolvedOptions, resolveOptions } from './options.ts';
import { ensureTopics } from './topics.ts';

export interface RetryConsumer {
  /** The retry topics, level 1 first, and the dead-letter topic: created if they were missing. */
  readonly retryTopics: readonly string[];
  readonly deadLetterTopic: string;
  /**
   * Stops every consumer: a record in its in-memory attempts finishes them and is forwarded,
   * waits for retry records due later end at once (those records stay for the next run), offsets
   * are committed, the groups left. Resolves when all is done; calling it again is harmless.
   */
  stop(): Promise<void>;
}

/** The consumer group of retry level `level` of `groupId`. */
export function retryGroupId(groupId: string, level: number): string {
  return `${groupId}.retry.${level}`;
}

interface ConsumerSpec {
  readonly groupId: string;
  readonly topic: string;
  readonly fromBeginning: boolean;
  readonly step: RecordStep;
}

function consumerSpecs(options: ResolvedOptions, ctx: AttemptContext, stopping: AbortSignal): ConsumerSpec[] {
  return [
    { groupId: options.groupId, topic: options.topic, fromBeginning: options.fromBeginning, step: sourceStep(ctx) },
    // A retry group with no committed offset yet must see the records forwarded before it joined.
    ...options.retryTopics.map((topic, i) => ({
      groupId: retryGroupId(options.groupId, i + 1),
      topic,
      fromBeginning: true,
      step: retryStep(ctx, i + 1, stopping),
    })),
  ];
}

async function startConsumer(consumer: Consumer, spec: ConsumerSpec, options: ResolvedOptions, stopping: AbortSignal): Promise<void> {
  await consumer.connect();
  await consumer.subscribe({ topic: spec.topic, fromBeginning: spec.fromBeginning });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    eachBatch: eachBatch(spec.step, stopping, options.logger),
  });
}

async function stopAll(consumers: readonly Consumer[], forwarder: Forwarder, stopping: AbortController): Promise<void> {
  stopping.abort();
  const stopped = await Promise.allSettled(consumers.map((c) => c.disconnect()));
  await forwarder.disconnect();
  const failed = stopped.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/**
 * Validates the options, creates the missing retry and dead-letter topics, and starts the source
 * topic's consumer and one consumer per retry level. Resolves once every consumer has joined its
 * group; rejects (having cleaned up) when the options are wrong or the cluster cannot be reached.
 */
export async function consumeWithRetries(options: ConsumeWithRetriesOptions): Promise<RetryConsumer> {
  const resolved = resolveOptions(options);
  const admin = resolved.kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, resolved.topic, [...resolved.retryTopics, resolved.deadLetterTopic]);
  } finally {
    await admin.disconnect();
  }

  const forwarder = await Forwarder.connect(resolved);
  const stopping = new AbortController();
  const specs = consumerSpecs(resolved, { options: resolved, forwarder }, stopping.signal);
  const consumers = specs.map((spec) => resolved.kafka.consumer({ ...resolved.consumerConfig, groupId: spec.groupId }));
  const started = await Promise.allSettled(specs.map((spec, i) => startConsumer(consumers[i]!, spec, resolved, stopping.signal)));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed !== undefined) {
    await stopAll(consumers, forwarder, stopping).catch(() => undefined);
    throw failed.reason;
  }

  let stopped: Promise<void> | undefined;
  return {
    retryTopics: resolved.retryTopics,
    deadLetterTopic: resolved.deadLetterTopic,
    stop: () => {
      stopped ??= stopAll(consumers, forwarder, stopping);
      return stopped;
    },
  };
}
