// Kafka's text checkpoint files: a version line ("0"), an entry count line, then one entry
// per line with space-separated fields. Written to a temp file, fsynced, renamed over the
// old file and the directory fsynced, so a crash leaves either the old or the new file.

import { dirname, resolve } from 'node:path';
import { StorageIOError, toStorageIOError } from './errors.ts';
import type { FileSystem } from './file-system.ts';

const VERSION = 0;

/**
 * Where atomic replacements go: the file system, and the replacement in flight per path.
 * One per owner of the files (a LogManager's or a Raft log's FileHandlePool), so the queue
 * ends with its owner: a node restarted over the same disk after a crash does not wait for
 * writes the crash took.
 */
export interface FileContext {
  readonly fileSystem: FileSystem;
  /** The last replacement queued per path (an entry lives only while writes are queued or running). */
  readonly replacing: Map<string, Promise<void>>;
}

/**
 * Writes a checkpoint file. With `dirMayVanish` (files inside a partition directory, which a
 * topic deletion renames away at any time) a directory that no longer exists makes the write
 * a no-op that resolves false instead of failing: there is nothing left to checkpoint.
 * `sync: false` (unsafe.bypass.fsync only) fsyncs neither the file nor its directory.
 */
export async function writeCheckpointLines(
  files: FileContext,
  path: string,
  entries: readonly string[],
  dirMayVanish = false,
  sync = true,
): Promise<boolean> {
  try {
    await writeFileAtomically(files, path, checkpointFileBytes(entries), sync);
    return true;
  } catch (err) {
    if (dirMayVanish && (err as { code?: string }).code === 'ENOENT' && !(await exists(files.fileSystem, dirname(path)))) return false;
    throw err;
  }
}

async function exists(fs: FileSystem, path: string): Promise<boolean> {
  return fs.stat(path).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return false;
      throw err;
    },
  );
}

/** Returns the entry lines, or null if the file does not exist. Malformed files throw. */
export async function readCheckpointLines(fs: FileSystem, path: string): Promise<string[][] | null> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
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
export async function writeOffsetCheckpoint(files: FileContext, path: string, offsets: ReadonlyMap<string, number>): Promise<void> {
  await writeCheckpointLines(files, path, offsetCheckpointLines(offsets));
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
export async function readOffsetCheckpoint(fs: FileSystem, path: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const lines = await readCheckpointLines(fs, path);
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
export function writeFileAtomically(files: FileContext, path: string, data: Buffer, sync = true): Promise<void> {
  return queueReplace(files, path, data, sync, sync);
}

/**
 * Replaces several files of the directory `dir` as writeFileAtomically does, the files
 * written and fsynced at once and the directory fsynced once for all their renames: a
 * crash leaves each file either old or new (as writing them one after another would). Every
 * write has settled when this settles; the first failure is thrown. `sync: false`
 * (unsafe.bypass.fsync only) fsyncs nothing.
 */
export async function writeFilesAtomically(
  context: FileContext,
  dir: string,
  files: readonly { path: string; data: Buffer }[],
  sync = true,
): Promise<void> {
  const results = await Promise.allSettled(files.map((f) => queueReplace(context, f.path, f.data, sync, false)));
  // The renames that did happen are made durable even when another write failed.
  if (sync && results.some((r) => r.status === 'fulfilled')) {
    try {
      await fsyncDir(context.fileSystem, dir);
    } catch (err) {
      throw toStorageIOError(err, `fsync ${dir}`);
    }
  }
  for (const r of results) if (r.status === 'rejected') throw r.reason;
}

function queueReplace(files: FileContext, path: string, data: Buffer, syncFile: boolean, syncDir: boolean): Promise<void> {
  // Writes of one file share its temp name, so they run one after another: two interleaved
  // writers would truncate each other's temp file and the second rename would find none.
  const inFlight = files.replacing;
  const previous = inFlight.get(path) ?? Promise.resolve();
  const write = previous.then(() => replaceFile(files.fileSystem, path, data, syncFile, syncDir));
  const settled = write.catch(() => undefined);
  inFlight.set(path, settled);
  void settled.then(() => {
    if (inFlight.get(path) === settled) inFlight.delete(path);
  });
  return write;
}

async function replaceFile(fs: FileSystem, path: string, data: Buffer, syncFile: boolean, syncDir: boolean): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    const fh = await fs.open(tmp, 'w');
    try {
      await fh.writeFile(data);
      if (syncFile) await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, path);
    if (syncDir) await fsyncDir(fs, dirname(path));
  } catch (err) {
    // Leave no temp file behind (start-up removes one anyway; the directory may be gone).
    await fs.unlink(tmp).catch(() => undefined);
    throw toStorageIOError(err, `writing ${path}`);
  }
}

export async function fsyncDir(fs: FileSystem, dir: string): Promise<void> {
  const fh = await fs.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * Creates `dir` and its missing parents; when it created any, fsyncs the directory holding
 * each one created, so that the new names survive a crash (Kafka's LogManager flushes the
 * parent of a log dir it creates; a log dir that vanished would take every partition's
 * flushed records with it). `sync: false` (unsafe.bypass.fsync only) fsyncs nothing.
 */
export async function createDirectory(fs: FileSystem, dir: string, sync = true): Promise<void> {
  const first = await fs.mkdir(dir, { recursive: true });
  if (first === undefined || !sync) return;
  const top = resolve(first);
  // From the deepest level created up to the first: each one's name is in its parent.
  for (let created = resolve(dir); ; ) {
    const parent = dirname(created);
    await fsyncDir(fs, parent);
    if (created === top || parent === created) return;
    created = parent;
  }
}
