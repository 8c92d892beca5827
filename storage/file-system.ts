// The file I/O seam: every file operation of storage and of the metadata log goes through a
// FileSystem. `nodeFileSystem` is the real disk (node:fs, unchanged: its handles are
// node's own FileHandles, so the hot paths cost one interface call and no copy);
// MemoryFileSystem (memory-file-system.ts) is the simulated disk, with crashes that lose
// what was not fsynced. The shapes mirror node:fs, the subset storage uses, so a node
// errno error (`code` ENOENT, ENOSPC, EIO, ...) means the same from either.

import { closeSync, fsyncSync, openSync, readFileSync, readSync, renameSync, writeSync } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, stat, statfs, truncate, unlink, writeFile } from 'node:fs/promises';

/**
 * How a file is opened, as node's flags: 'r' read (a directory, to fsync it), 'r+'
 * read-write, 'w' / 'w+' create or truncate, 'a' create if missing and append.
 */
export type OpenFlags = 'r' | 'r+' | 'w' | 'w+' | 'a';

export interface FileStats {
  readonly size: number;
  readonly mtimeMs: number;
  isFile(): boolean;
  isDirectory(): boolean;
}

export interface DirEntry {
  readonly name: string;
  isFile(): boolean;
  isDirectory(): boolean;
}

/** A file system's capacity (statfs): `blocks` and `bavail` counted in `bsize`-byte blocks. */
export interface FileSystemStats {
  readonly bsize: number;
  readonly blocks: number;
  /** Blocks available to an unprivileged writer. */
  readonly bavail: number;
}

/** An open file. `fd` names it to the FileSystem's sync calls (readSync, writeSync, fsyncSync). */
export interface FileHandle {
  readonly fd: number;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }>;
  /** Replaces the whole file's content. */
  writeFile(data: Buffer): Promise<void>;
  stat(): Promise<FileStats>;
  truncate(length: number): Promise<void>;
  /** fsync: data and metadata durable; of a directory opened 'r': its entries. */
  sync(): Promise<void>;
  datasync(): Promise<void>;
  close(): Promise<void>;
}

export interface FileSystem {
  open(path: string, flags: OpenFlags): Promise<FileHandle>;
  readFile(path: string): Promise<Buffer>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  writeFile(path: string, data: Buffer | string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** `recursive` removes a directory's content too; `force` ignores a path that is not there. */
  rm(path: string, options: { recursive: boolean; force: boolean }): Promise<void>;
  mkdir(path: string, options: { recursive: true }): Promise<string | undefined>;
  readdir(path: string): Promise<string[]>;
  readdir(path: string, options: { withFileTypes: true }): Promise<DirEntry[]>;
  stat(path: string): Promise<FileStats>;
  truncate(path: string, length: number): Promise<void>;
  statfs(path: string): Promise<FileSystemStats>;

  // In place, on the calling thread: small reads and appends (FileHandlePool.read and
  // writeSync) and the Raft quorum-state file, which a vote must have replaced before it is
  // answered.
  openSync(path: string, flags: OpenFlags): number;
  /** Reads up to `length` bytes at `position` into `buffer` from `offset`; returns the bytes read (0 at the end). */
  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  /** Writes up to `length` bytes of `buffer` from `offset` at `position`; returns the bytes written. */
  writeSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  fsyncSync(fd: number): void;
  closeSync(fd: number): void;
  readFileSync(path: string): Buffer;
  renameSync(from: string, to: string): void;
}

/** The real disk, through node:fs. */
export const nodeFileSystem: FileSystem = {
  open,
  readFile,
  writeFile,
  rename,
  unlink,
  rm,
  mkdir,
  readdir,
  stat,
  truncate,
  statfs,
  openSync,
  readSync,
  writeSync,
  fsyncSync,
  closeSync,
  readFileSync,
  renameSync,
};
