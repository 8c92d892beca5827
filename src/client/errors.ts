/**
 * What the client's admin and data calls share: Kafka's errors with the broker's message, the
 * retrying of retriable ones, and an unknown topic worded as Kafka's tools word it.
 */
import { KafkaError, errorByCode } from '../../protocol/errors.ts';

const RETRY_BACKOFF_MS = 200;

/** A topic the cluster does not have, worded as Kafka's tools word it. */
export class UnknownTopicError extends Error {
  constructor(readonly topic: string) {
    super(`Topic '${topic}' does not exist.`);
    this.name = 'UnknownTopicError';
  }
}

/** `await sleep(ms)`: the back-off between retries of a retriable error. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A Kafka error code with the broker's message when it sent one. */
export function brokerError(code: number, message: string | null, context: string): KafkaError {
  const e = errorByCode(code);
  return new KafkaError(e, `${context}: ${e.name} (${message || e.message || 'no message'})`);
}

const kafkaRetriable = (err: KafkaError): boolean => err.error.retriable;

/**
 * Runs `attempt` again while it fails with an error Kafka calls retriable (a coordinator still
 * loading, a leader election under way), or that `retriable` accepts, for at most `timeoutMs`.
 */
export async function withRetries<T>(
  timeoutMs: number,
  attempt: () => Promise<T>,
  retriable: (err: KafkaError) => boolean = kafkaRetriable,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof KafkaError && retriable(err)) || Date.now() >= deadline) throw err;
      await sleep(RETRY_BACKOFF_MS);
    }
  }
}
