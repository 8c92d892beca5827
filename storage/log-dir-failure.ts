// Kafka's LogDirFailureChannel: the one place every file-system failure of a log directory
// reaches, whoever met it (an append, a read, a flush, a checkpoint, retention, the cleaner,
// creating a log). A directory is marked offline once and stays offline until the process
// restarts: a disk that returned EIO or ran out of space is not trusted again while running,
// since what it holds past the last fsync is unknown. Listeners (the LogManager, the
// ReplicaManager, the broker's heartbeat) stop using the directory when it is marked.

import { StorageIOError } from './errors.ts';

export type OfflineLogDirListener = (logDir: string) => void;

export class LogDirFailureChannel {
  private readonly offline = new Set<string>();
  private readonly listeners: OfflineLogDirListener[] = [];

  /**
   * @param onFailure where the first failure of each directory is reported (the broker logs
   *   it with the error and what was being done).
   */
  constructor(private readonly onFailure: (logDir: string, err: unknown, what: string) => void = () => {}) {}

  /**
   * Marks `logDir` offline when it is not already; the listeners learn it synchronously, in
   * the order they registered, before the caller's error propagates. Returns whether the
   * directory was newly marked.
   */
  maybeAddOfflineLogDir(logDir: string, err: unknown, what: string): boolean {
    if (this.offline.has(logDir)) return false;
    this.offline.add(logDir);
    report(() => this.onFailure(logDir, err, what));
    for (const listener of this.listeners) report(() => listener(logDir));
    return true;
  }

  isOffline(logDir: string): boolean {
    return this.offline.has(logDir);
  }

  offlineLogDirs(): string[] {
    return [...this.offline];
  }

  /** `listener` runs for each directory marked offline from now on. */
  onOfflineLogDir(listener: OfflineLogDirListener): void {
    this.listeners.push(listener);
  }
}

function report(fn: () => void): void {
  try {
    fn();
  } catch {
    // One listener that throws must not keep the others from learning of the failure.
  }
}

/**
 * Whether `err` says a log directory failed: a file-system error other than a missing file
 * (a file deleted under a concurrent reader, as retention does, says nothing about the disk).
 * Kafka treats every IOException so; format errors (corrupt batches, bad offsets) are not.
 */
export function isLogDirFailure(err: unknown): boolean {
  const code = err instanceof StorageIOError ? err.code : errnoCode(err);
  return code !== undefined && code !== 'ENOENT';
}

/** An errno name (EIO, ENOSPC, ...) as node's file-system calls set it. */
function errnoCode(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const { code } = err as NodeJS.ErrnoException;
  return typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
}
