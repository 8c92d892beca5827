/**
 * The eachBatch of every consumer here. Offsets are resolved record by record and committed
 * explicitly: after each forwarded record (so it is not forwarded twice), at the end of each
 * batch, and before a stop or a rebalance lets the partition go, so a graceful stop never runs a
 * handled record again.
 */
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { type AttemptContext, type Outcome, attemptRetriedRecord, attemptSourceRecord } from './attempts.ts';
import type { RetryLogger } from './options.ts';
import { waitUntil } from './pacing.ts';

/**
 * Heartbeats while a record is in hand. A failed heartbeat (kafkajs throws there when the group
 * rebalances) is kept for after the record is resolved and committed, so its attempts count.
 */
export class Heartbeats {
  private failure: { error: unknown } | undefined;

  constructor(private readonly send: () => Promise<void>) {}

  get failed(): boolean {
    return this.failure !== undefined;
  }

  readonly beat = async (): Promise<void> => {
    if (this.failure !== undefined) return;
    try {
      await this.send();
    } catch (error) {
      this.failure = { error };
    }
  };

  rethrow(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }
}

export type RecordStep = (message: KafkaMessage, payload: EachBatchPayload, heartbeats: Heartbeats) => Promise<Outcome>;

function commitResolved(payload: EachBatchPayload): Promise<void> {
  return payload.commitOffsetsIfNecessary(payload.uncommittedOffsets());
}

/** Records in order, each resolved when done with; stops early on a stop, a rebalance or an interrupted wait. */
export function eachBatch(step: RecordStep, stopping: AbortSignal, logger: RetryLogger): (payload: EachBatchPayload) => Promise<void> {
  return async (payload) => {
    const { batch } = payload;
    try {
      for (const message of batch.messages) {
        if (stopping.aborted || !payload.isRunning() || payload.isStale()) break;
        const heartbeats = new Heartbeats(payload.heartbeat);
        const outcome = await step(message, payload, heartbeats);
        if (outcome !== 'interrupted') payload.resolveOffset(message.offset);
        if (outcome === 'forwarded') await commitResolved(payload);
        heartbeats.rethrow();
        if (outcome === 'interrupted') break;
        await payload.heartbeat();
      }
    } catch (err) {
      await commitResolved(payload).catch((commitError: unknown) =>
        logger.error('could not commit before giving the partition up: its uncommitted records will run again', {
          topic: batch.topic,
          partition: batch.partition,
          error: commitError instanceof Error ? commitError.message : String(commitError),
        }),
      );
      throw err;
    }
    await commitResolved(payload);
  };
}

/** A source-topic record's in-memory attempts; the pauses between them heartbeat but are not cut short. */
export function sourceStep(ctx: AttemptContext): RecordStep {
  return (message, { batch }, heartbeats) =>
    attemptSourceRecord(ctx, batch.topic, batch.partition, message, async (ms) => {
      await waitUntil(Date.now() + ms, { heartbeat: heartbeats.beat, interrupted: () => false });
    });
}

/** A retry level's record: its wait ends early on a stop, a rebalance or a moved partition. */
export function retryStep(ctx: AttemptContext, level: number, stopping: AbortSignal): RecordStep {
  return (message, payload, heartbeats) =>
    attemptRetriedRecord(ctx, level, payload.batch.partition, message, (dueMs) =>
      waitUntil(dueMs, {
        heartbeat: heartbeats.beat,
        interrupted: () => stopping.aborted || heartbeats.failed || !payload.isRunning() || payload.isStale(),
        signal: stopping,
      }),
    );
}
