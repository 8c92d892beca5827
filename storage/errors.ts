// Typed storage errors. The broker maps them to Kafka error codes (CorruptRecordError ->
// CORRUPT_MESSAGE, RecordTooLargeError -> MESSAGE_TOO_LARGE, OffsetOutOfRangeError ->
// OFFSET_OUT_OF_RANGE, StorageIOError -> KAFKA_STORAGE_ERROR, ProducerStateError -> its code).
// And where the failures go that no caller awaits: the BackgroundErrorSink.

import type { FileSystem } from './file-system.ts';

/**
 * Where storage reports a failure nobody awaits: background flushes, retention, checkpoints,
 * the cleaner, deferred file deletions, unreadable snapshots skipped. Storage cannot reach
 * the broker's logger: the broker passes its sink in (the shape of its guard's FailureSink).
 * `what` names what failed and the file or partition it concerns.
 */
export type BackgroundErrorSink = (err: unknown, what: string) => void;

export class StorageError extends Error {
  override name = 'StorageError';
}

/** A batch failed framing, magic or CRC-32C checks; nothing of the append was written. */
export class CorruptRecordError extends StorageError {
  override name = 'CorruptRecordError';
  constructor(
    message: string,
    readonly kind: 'corrupt' | 'truncated' | 'unsupported-magic' | 'invalid',
  ) {
    super(message);
  }
}

/** A batch is larger than max.message.bytes (MESSAGE_TOO_LARGE). */
export class RecordTooLargeError extends StorageError {
  override name = 'RecordTooLargeError';
}

export class OffsetOutOfRangeError extends StorageError {
  override name = 'OffsetOutOfRangeError';
  constructor(
    readonly offset: number,
    readonly logStartOffset: number,
    readonly logEndOffset: number,
  ) {
    super(`offset ${offset} is outside [${logStartOffset}, ${logEndOffset}]`);
  }
}

/** A follower append whose first offset is below the log end (Kafka's UnexpectedAppendOffsetException). */
export class UnexpectedAppendOffsetError extends StorageError {
  override name = 'UnexpectedAppendOffsetError';
}

/** The log was closed or deleted while an operation was pending. */
export class LogClosedError extends StorageError {
  override name = 'LogClosedError';
}

/**
 * A file-system failure. `code` is the errno name (ENOSPC, EIO, EDQUOT, ...). When raised by
 * an append, the partial write has been truncated away and the log is still consistent.
 */
export class StorageIOError extends StorageError {
  override name = 'StorageIOError';
  constructor(
    message: string,
    readonly code: string,
    override readonly cause?: unknown,
  ) {
    super(message);
  }
}

export type ProducerErrorCode =
  | 'OUT_OF_ORDER_SEQUENCE_NUMBER'
  | 'INVALID_PRODUCER_EPOCH'
  | 'TRANSACTION_COORDINATOR_FENCED'
  | 'INVALID_TXN_STATE';

/** An idempotent/transactional batch refused by the producer state (Kafka's error names). */
export class ProducerStateError extends StorageError {
  override name = 'ProducerStateError';
  constructor(
    readonly code: ProducerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function toStorageIOError(err: unknown, what: string): StorageIOError {
  if (err instanceof StorageIOError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'EIO';
  const message = err instanceof Error ? err.message : String(err);
  return new StorageIOError(`${what}: ${message}`, code, err);
}

/** Whether a file-system error says the file (or its directory) is not there. */
export function isMissingFile(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
}

/**
 * Deletes a file no caller waits for (leftovers, superseded snapshots): one already gone is
 * fine, any other failure is reported to `onError` and the file stays.
 */
export async function removeFile(fs: FileSystem, path: string, onError: BackgroundErrorSink): Promise<void> {
  try {
    await fs.unlink(path);
  } catch (err) {
    if (!isMissingFile(err)) onError(err, `deleting ${path}`);
  }
}
