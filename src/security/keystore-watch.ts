/**
 * Notices that a key store or trust store file was replaced, so that a listener can rebuild its
 * TLS context with the new certificates (Kafka checks a store's modification time when its
 * SSL configs are altered; here the files are polled). The content hash decides: a touch that
 * changes only the time is no change, and an editor's replace-by-rename is one.
 */
import { createHash } from 'node:crypto';
import { nodeFileSystem, type FileSystem } from '../../storage/file-system.ts';
import { systemClock, type Clock } from '../runtime/clock.ts';
import { schedulePeriodic } from '../runtime/guard.ts';

export interface KeystoreWatchOptions {
  intervalMs?: number;
  onError?: (err: Error) => void;
  clock?: Clock;
  fileSystem?: FileSystem;
}

interface FileState {
  /** size and modification time: when they are unchanged, the content is not read again */
  stamp: string | null;
  hash: string | null;
}

/** Calls onChange (debounced, once per change burst) when any file's content hash changes; polls every intervalMs (default 1000) with fs.stat + a content hash, so an editor's replace-by-rename is seen. stop() ends it. Never throws from the poll; a read error is passed to onError. */
export function watchKeystores(files: string[], onChange: () => void, options: KeystoreWatchOptions = {}): { stop(): void } {
  const fs = options.fileSystem ?? nodeFileSystem;
  const onError = options.onError ?? (() => {});
  const states = new Map<string, FileState>(files.map((f) => [f, { stamp: null, hash: null }]));
  let changePending = false;
  let stopped = false;

  /** Reads what changed since the last poll; true when some file's content differs. */
  const poll = async (): Promise<boolean> => {
    let changed = false;
    for (const [file, state] of states) {
      try {
        const stats = await fs.stat(file);
        const stamp = `${stats.size}:${stats.mtimeMs}`;
        if (stamp === state.stamp) continue;
        const hash = createHash('sha256')
          .update(await fs.readFile(file))
          .digest('hex');
        if (hash !== state.hash) changed = true;
        state.stamp = stamp;
        state.hash = hash;
      } catch (err) {
        // A file being replaced may be missing for a moment; the next poll sees the new one.
        onError(err as Error);
      }
    }
    return changed;
  };

  // The first poll records what the files hold when the watch starts.
  const baseline = poll();
  // A change is reported on the first poll that finds nothing new after it, so that a burst of
  // writes (a key store, then its trust store) gives one rebuild.
  const tick = async (): Promise<void> => {
    await baseline;
    const changed = await poll();
    if (stopped) return;
    if (changed) {
      changePending = true;
    } else if (changePending) {
      changePending = false;
      onChange();
    }
  };

  const cancel = schedulePeriodic(
    options.clock ?? systemClock,
    options.intervalMs ?? 1000,
    (err) => onError(err as Error),
    'key store watch',
    tick,
  );
  return {
    stop() {
      stopped = true;
      cancel();
    },
  };
}
