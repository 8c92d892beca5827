/**
 * What happens to one record: attempts in the source topic's consumer, then one attempt per
 * retry level, each failure sent on by the Forwarder. Consumers and offsets are the caller's
 * (consume-with-retries.ts); these steps say only whether the record is done with.
 */
import type { KafkaMessage } from 'kafkajs';
import { backoffDelayMs } from './backoff.ts';
import { describeFailure, type Failure } from './failure.ts';
import type { Forwarder } from './forward.ts';
import type { ResolvedOptions } from './options.ts';
import { type RetryRecord, retriedRecord, sourceRecord } from './record.ts';

/**
 * handled: the handler succeeded; forwarded: sent to a retry or dead-letter topic (commit soon,
 * so it is not sent twice); skipped: another group's retry record; interrupted: left for the
 * next fetch, not resolved.
 */
export type Outcome = 'handled' | 'forwarded' | 'skipped' | 'interrupted';

export interface AttemptContext {
  readonly options: ResolvedOptions;
  readonly forwarder: Pick<Forwarder, 'forward'>;
}

/** Runs the handler once: undefined when it succeeded, else what failed. */
async function attempt(options: ResolvedOptions, record: RetryRecord): Promise<Failure | undefined> {
  try {
    await options.handler(record);
    return undefined;
  } catch (err) {
    return describeFailure(err);
  }
}

/**
 * Attempts 1..inMemoryAttempts of a source-topic record, `pause` waiting the backoff between
 * them, then forwards it if they all failed. The pause is not cut short by a stop: once started,
 * a record's in-memory attempts all run and it is forwarded, so a graceful stop loses no attempt
 * count (a crash does: the record comes back with its in-memory attempts to do again).
 */
export async function attemptSourceRecord(
  ctx: AttemptContext,
  topic: string,
  partition: number,
  message: KafkaMessage,
  pause: (ms: number) => Promise<void>,
): Promise<Outcome> {
  const { options } = ctx;
  let failure: Failure | undefined;
  for (let n = 1; n <= options.inMemoryAttempts; n++) {
    if (n > 1) await pause(backoffDelayMs(options.backoff, n - 1));
    const record = sourceRecord(topic, partition, message, n);
    failure = await attempt(options, record);
    if (failure === undefined) return 'handled';
  }
  await ctx.forwarder.forward(sourceRecord(topic, partition, message, options.inMemoryAttempts), options.inMemoryAttempts, failure!);
  return 'forwarded';
}

/**
 * One attempt of a record from retry level `level`, once it is due. Retry topics are shared by
 * every group consuming the source topic: another group's records are skipped. `waitUntilDue`
 * answers false when the wait was interrupted; the record is then left unattempted.
 */
export async function attemptRetriedRecord(
  ctx: AttemptContext,
  level: number,
  partition: number,
  message: KafkaMessage,
  waitUntilDue: (dueMs: number) => Promise<boolean>,
): Promise<Outcome> {
  const { options } = ctx;
  const retried = retriedRecord(options.topic, partition, message, options.inMemoryAttempts + level - 1);
  if (retried.consumerGroup !== options.groupId) return 'skipped';
  // No record of ours is due later than one longest backoff from now: a header saying otherwise is not to be waited for.
  const dueMs = Math.min(retried.dueMs ?? 0, Date.now() + options.backoff.maxMs);
  if (!(await waitUntilDue(dueMs))) return 'interrupted';
  const failure = await attempt(options, retried.record);
  if (failure === undefined) return 'handled';
  await ctx.forwarder.forward(retried.record, retried.attemptsMade + 1, failure);
  return 'forwarded';
}
