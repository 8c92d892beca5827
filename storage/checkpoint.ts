// Kafka's text checkpoint files: a version line ("0"), an entry count line, then one entry
// per line with space-separated fields. Written to a temp file, fsynced, renamed over the
// old file and the directory fsynced, so a crash leaves either the old or the new file.

import { open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StorageIOError, toStorageIOError } from './errors.ts';

const VERSION = 0;

/**
 * Writes a checkpoint file. With `dirMayVanish` (files inside a partition directory, which a
 * topic deletion renames away at any time) a directory that no longer exists makes the write
 * a no-op that resolves false instead of failing: there is nothing left to checkpoint.
 * `sync: false` (unsafe.bypass.fsync only) fsyncs neither the file nor its directory.
 */
export async function writeCheckpointLines(path: string, entries: readonly string[], dirMayVanish = false, sync = true): Promise<boolean> {
  try {
    await writeFileAtomically(path, checkpointFileBytes(entries), sync);
    return true;
  } catch (err) {
    if (dirMayVanish && (err as { code?: string }).code === 'ENOENT' && !(await exists(dirname(path)))) return false;
    throw err;
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return false;
      throw err;
    },
  );
}

/** Returns the entry lines, or null if the file does not exist. Malformed files throw. */
export async function readCheckpointLines(path: string): Promise<string[][] | null> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw toStorageIOError(err, `reading ${path}`);
  }
  const lines = text.split('\n').filter((l) => l.length > 0);
  if (lines.length < 2 || Number(lines[0]) !== VERSION) {
    throw new StorageIOError(`malformed checkpoint file ${path}`, 'EINVAL');
  }
  const count = Number(lines[1]);
  if (!Number.isInteger(count) || lines.length !== count + 2) {
    throw new StorageIOError(`checkpoint file ${path} has ${lines.length - 2} entries, expected ${count}`, 'EINVAL');
  }
  return lines.slice(2).map((l) => l.trim().split(/\s+/));
}

export interface TopicPartitionKey {
  topic: string;
  partition: number;
}

/** A checkpoint file's content: the version line, the entry count, one line per entry. */
export function checkpointFileBytes(entries: readonly string[]): Buffer {
  return Buffer.from(`${VERSION}\n${entries.length}\n${entries.map((e) => `${e}\n`).join('')}`, 'utf8');
}

/** recovery-point-offset-checkpoint, log-start-offset-checkpoint, replication-offset-checkpoint. */
export async function writeOffsetCheckpoint(path: string, offsets: ReadonlyMap<string, number>): Promise<void> {
  await writeCheckpointLines(path, offsetCheckpointLines(offsets));
}

/** The entry lines of an offset checkpoint; keys are partition directory names (`topic-partition`). */
export function offsetCheckpointLines(offsets: ReadonlyMap<string, number>): string[] {
  const lines: string[] = [];
  for (const [name, offset] of offsets) {
    const tp = parseTopicPartition(name);
    if (tp === null) continue;
    lines.push(`${tp.topic} ${tp.partition} ${offset}`);
  }
  return lines;
}

/** Keys are partition directory names (`topic-partition`). */
export async function readOffsetCheckpoint(path: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const lines = await readCheckpointLines(path);
  if (lines === null) return out;
  for (const fields of lines) {
    if (fields.length !== 3) throw new StorageIOError(`malformed entry in ${path}: ${fields.join(' ')}`, 'EINVAL');
    out.set(`${fields[0]}-${fields[1]}`, Number(fields[2]));
  }
  return out;
}

/** `topic-partition` -> {topic, partition}; topics may contain '-', the partition is after the last one. */
export function parseTopicPartition(name: string): TopicPartitionKey | null {
  const dash = name.lastIndexOf('-');
  if (dash <= 0) return null;
  const partition = Number(name.slice(dash + 1));
  if (!Number.isInteger(partition) || partition < 0 || name.slice(dash + 1) !== String(partition)) return null;
  return { topic: name.slice(0, dash), partition };
}

/**
 * Replaces `path` by `data` through a temp file and a rename. With `sync` (the default) the
 * file and its directory are fsynced; without it a crash may leave a torn file, which is
 * only acceptable for files whose readers verify a checksum and have a fallback.
 */
export function writeFileAtomically(path: string, data: Buffer, sync = true): Promise<void> {
  return queueReplace(path, data, sync, sync);
}

/**
 * Replaces several files of the directory `dir` as writeFileAtomically does, the files
 * written and fsynced at once and the directory fsynced once for all their renames: a
 * crash leaves each file either old or new (as writing them one after another would). Every
 * write has settled when this settles; the first failure is thrown. `sync: false`
 * (unsafe.bypass.fsync only) fsyncs nothing.
 */
export async function writeFilesAtomically(dir: string, files: readonly { path: string; data: Buffer }[], sync = true): Promise<void> {
  const results = await Promise.allSettled(files.map((f) => queueReplace(f.path, f.data, sync, false)));
  // The renames that did happen are made durable even when another write failed.
  if (sync && results.some((r) => r.status === 'fulfilled')) {
    try {
      await fsyncDir(dir);
    } catch (err) {
      throw toStorageIOError(err, `fsync ${dir}`);
    }
  }
  for (const r of results) if (r.status === 'rejected') throw r.reason;
}

function queueReplace(path: string, data: Buffer, syncFile: boolean, syncDir: boolean): Promise<void> {
  // Writes of one file share its temp name, so they run one after another: two interleaved
  // writers would truncate each other's temp file and the second rename would find none.
  const previous = writesInFlight.get(path) ?? Promise.resolve();
  const write = previous.then(() => replaceFile(path, data, syncFile, syncDir));
  const settled = write.catch(() => undefined);
  writesInFlight.set(path, settled);
  void settled.then(() => {
    if (writesInFlight.get(path) === settled) writesInFlight.delete(path);
  });
  return write;
}

/** The last write queued per path (an entry lives only while writes are queued or running). */
const writesInFlight = new Map<string, Promise<void>>();

async function replaceFile(path: string, data: Buffer, syncFile: boolean, syncDir: boolean): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(data);
      if (syncFile) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
    if (syncDir) await fsyncDir(dirname(path));
  } catch (err) {
    // Leave no temp file behind (start-up removes one anyway; the directory may be gone).
    await unlink(tmp).catch(() => undefined);
    throw toStorageIOError(err, `writing ${path}`);
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
