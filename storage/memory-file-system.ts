// A FileSystem in memory, for the simulation: the production storage code runs on it
// unchanged, and a crash loses what a real disk may lose.
//
// Durability of data: each file has its current bytes (the page cache) and its durable
// bytes (the platter); sync()/datasync()/fsyncSync() of a handle makes the current bytes
// durable. crash() puts back, per file, the durable bytes overlaid with a random prefix of
// the current ones, torn at an arbitrary byte: the page cache wrote back part of what had
// changed since the last fsync, from the start. Every byte after a crash is one that file
// held at that position, durably or not: nothing is invented.
//
// Durability of names (create, rename, unlink, mkdir, rm), by `nameDurability`:
// - 'journal' (the default, ext4's and XFS's behaviour): name changes are journaled in the
//   order they are made and any fsync, of a file or of a directory, commits all of them.
//   A crash keeps a prefix of the name changes: those before the last fsync.
// - 'directory-fsync' (POSIX at its strictest): a name change is durable only once its
//   directory is fsynced (opened 'r', then sync()); a fsync of the file it names is not
//   enough. Under this rule a crash takes a fsynced file whose name was not made durable,
//   which is why a log's flush fsyncs its directory after creating segments.
//
// Every asynchronous operation takes effect and settles inside a callback handed to
// `defer`, so the simulation decides when each I/O completes (and may complete them in any
// order, as a thread pool does). An operation still pending at a crash never settles; a
// handle opened before a crash fails with EBADF. Synchronous calls act at once.

import { posix } from 'node:path';
import type { DirEntry, FileHandle, FileStats, FileSystem, FileSystemStats, OpenFlags } from './file-system.ts';

export type NameDurability = 'journal' | 'directory-fsync';
export type InjectedErrno = 'ENOSPC' | 'EIO';

export interface MemoryFileSystemOptions {
  /** Runs an operation's completion; the default is the next microtask. */
  defer?: (complete: () => void) => void;
  /** The clock of files' modification times (ms since epoch). */
  now?: () => number;
  /** Bytes the files may hold in all before writes fail with ENOSPC (statfs reports it). */
  capacityBytes?: number;
  nameDurability?: NameDurability;
}

const BLOCK_BYTES = 4096;
const DEFAULT_CAPACITY_BYTES = 2 ** 40;
const FIRST_FD = 3;

const MESSAGES: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EEXIST: 'file already exists',
  ENOTDIR: 'not a directory',
  EISDIR: 'illegal operation on a directory',
  ENOTEMPTY: 'directory not empty',
  EBADF: 'bad file descriptor',
  EINVAL: 'invalid argument',
  ENOSPC: 'no space left on device',
  EIO: 'i/o error',
};

/** An error shaped as node's (`code`, `syscall`, `path`), so callers' errno checks hold. */
function errno(code: string, syscall: string, path?: string): NodeJS.ErrnoException {
  const where = path === undefined ? '' : ` '${path}'`;
  const err: NodeJS.ErrnoException = new Error(`${code}: ${MESSAGES[code] ?? code}, ${syscall}${where}`);
  err.code = code;
  err.syscall = syscall;
  if (path !== undefined) err.path = path;
  return err;
}

class FileNode {
  readonly kind = 'file';
  /** Current content: the first `length` bytes (the rest is room to grow). */
  bytes = Buffer.alloc(0);
  length = 0;
  durable = Buffer.alloc(0);
  durableLength = 0;
  /** Lowest position changed since the content was last made durable (Infinity: none). */
  dirtyFrom = Number.POSITIVE_INFINITY;
  /** Names the file has in the current tree (0 or 1: there are no hard links). */
  links = 0;
  openCount = 0;
  constructor(public mtimeMs: number) {}

  content(): Buffer {
    return this.bytes.subarray(0, this.length);
  }
}

class DirNode {
  readonly kind = 'dir';
  readonly entries = new Map<string, Node>();
  /** The entries a crash would leave. */
  readonly durableEntries = new Map<string, Node>();
  constructor(public mtimeMs: number) {}
}

type Node = FileNode | DirNode;

/** One journaled name change: `name` in `dir` now refers to `node` (null: removed). */
interface NameChange {
  dir: DirNode;
  name: string;
  node: Node | null;
}

interface OpenFile {
  node: Node;
  path: string;
  flags: OpenFlags;
}

function statsOf(node: Node): FileStats {
  const isFile = node.kind === 'file';
  return {
    size: isFile ? node.length : BLOCK_BYTES,
    mtimeMs: node.mtimeMs,
    isFile: () => isFile,
    isDirectory: () => !isFile,
  };
}

class MemoryFileHandle implements FileHandle {
  constructor(
    private readonly fs: MemoryFileSystem,
    readonly fd: number,
  ) {}
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return this.fs.handleRead(this.fd, buffer, offset, length, position);
  }
  write(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }> {
    return this.fs.handleWrite(this.fd, buffer, offset, length, position);
  }
  writeFile(data: Buffer): Promise<void> {
    return this.fs.handleWriteFile(this.fd, data);
  }
  stat(): Promise<FileStats> {
    return this.fs.handleStat(this.fd);
  }
  truncate(length: number): Promise<void> {
    return this.fs.handleTruncate(this.fd, length);
  }
  sync(): Promise<void> {
    return this.fs.handleSync(this.fd);
  }
  datasync(): Promise<void> {
    return this.fs.handleSync(this.fd);
  }
  close(): Promise<void> {
    return this.fs.handleClose(this.fd);
  }
}

export class MemoryFileSystem implements FileSystem {
  /** Bytes the files may hold in all; lowering it below `usedBytes` makes every growing write fail. */
  capacityBytes: number;
  readonly nameDurability: NameDurability;
  private readonly defer: (complete: () => void) => void;
  private readonly now: () => number;
  private readonly root: DirNode;
  private readonly openFiles = new Map<number, OpenFile>();
  private nextFd = FIRST_FD;
  private journal: NameChange[] = [];
  /** Bumped by crash(): operations begun before it never complete. */
  private epoch = 0;
  private used = 0;
  private readonly failures = new Map<string, InjectedErrno>();

  constructor(options: MemoryFileSystemOptions = {}) {
    this.defer = options.defer ?? queueMicrotask;
    this.now = options.now ?? Date.now;
    this.capacityBytes = options.capacityBytes ?? DEFAULT_CAPACITY_BYTES;
    this.nameDurability = options.nameDurability ?? 'journal';
    this.root = new DirNode(this.now());
  }

  /** Bytes the files hold (current content, unlinked files still open included). */
  get usedBytes(): number {
    return this.used;
  }

  /**
   * From now on, operations on paths under `pathPrefix` (all paths without one) fail with
   * `code`: with ENOSPC those that write or create, with EIO every one but close. `null`
   * heals the prefix (every prefix without one).
   */
  failWith(code: InjectedErrno | null, pathPrefix?: string): void {
    const prefix = pathPrefix === undefined ? '/' : this.normalize(pathPrefix);
    if (code !== null) this.failures.set(prefix, code);
    else if (pathPrefix === undefined) this.failures.clear();
    else this.failures.delete(prefix);
  }

  /**
   * An OS crash: names and file contents go back to what was durable, each file keeping a
   * random prefix of what had changed since (`random` returns [0, 1)). Open handles become
   * invalid and pending operations never complete.
   */
  crash(random: () => number): void {
    this.epoch++;
    this.openFiles.clear();
    this.journal = [];
    this.used = 0;
    const visited = new Set<Node>();
    const restore = (dir: DirNode): void => {
      dir.entries.clear();
      for (const name of [...dir.durableEntries.keys()].sort()) {
        const node = dir.durableEntries.get(name) as Node;
        dir.entries.set(name, node);
        if (visited.has(node)) continue;
        visited.add(node);
        if (node.kind === 'dir') restore(node);
        else this.restoreFile(node, random);
      }
    };
    restore(this.root);
  }

  private restoreFile(file: FileNode, random: () => number): void {
    const unchanged = Math.min(file.dirtyFrom, file.durableLength, file.length);
    const kept = unchanged + Math.floor(random() * (file.length - unchanged + 1));
    const tail = kept < file.durableLength ? file.durable.subarray(kept, file.durableLength) : Buffer.alloc(0);
    const bytes = Buffer.concat([file.bytes.subarray(0, kept), tail]);
    file.bytes = bytes;
    file.length = bytes.length;
    file.durable = Buffer.from(bytes);
    file.durableLength = bytes.length;
    file.dirtyFrom = Number.POSITIVE_INFINITY;
    file.links = 1;
    file.openCount = 0;
    this.used += bytes.length;
  }

  // ---- FileSystem: asynchronous ----

  open(path: string, flags: OpenFlags): Promise<FileHandle> {
    return this.later(() => new MemoryFileHandle(this, this.openSync(path, flags)));
  }

  readFile(path: string): Promise<Buffer>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  readFile(path: string, encoding?: 'utf8'): Promise<Buffer | string> {
    return this.later(() => {
      const bytes = this.readFileSync(path);
      return encoding === undefined ? bytes : bytes.toString(encoding);
    });
  }

  writeFile(path: string, data: Buffer | string): Promise<void> {
    return this.later(() => {
      const fd = this.openSync(path, 'w');
      try {
        this.replaceContent(this.openFile(fd, 'write'), typeof data === 'string' ? Buffer.from(data) : data);
      } finally {
        this.closeSync(fd);
      }
    });
  }

  rename(from: string, to: string): Promise<void> {
    return this.later(() => this.renameSync(from, to));
  }

  unlink(path: string): Promise<void> {
    return this.later(() => {
      const p = this.normalize(path);
      this.check(p, 'unlink', 'mutate');
      const { dir, name, node } = this.lookupEntry(p, 'unlink');
      if (node.kind === 'dir') throw errno('EISDIR', 'unlink', p);
      this.removeEntry(dir, name);
    });
  }

  rm(path: string, options: { recursive: boolean; force: boolean }): Promise<void> {
    return this.later(() => {
      const p = this.normalize(path);
      this.check(p, 'rm', 'mutate');
      const parent = this.parentOf(p, 'rm', options.force);
      const name = posix.basename(p);
      const node = parent?.entries.get(name);
      if (parent === null || node === undefined) {
        if (options.force) return;
        throw errno('ENOENT', 'rm', p);
      }
      if (node.kind === 'dir' && !options.recursive) throw errno('EISDIR', 'rm', p);
      this.removeEntry(parent, name);
    });
  }

  mkdir(path: string, _options: { recursive: true }): Promise<string | undefined> {
    return this.later(() => {
      const p = this.normalize(path);
      this.check(p, 'mkdir', 'read');
      let dir = this.root;
      let first: string | undefined;
      let at = '/';
      for (const part of p.split('/').filter((s) => s.length > 0)) {
        at = posix.join(at, part);
        const existing = dir.entries.get(part);
        if (existing === undefined) {
          this.check(at, 'mkdir', 'create');
          const made = new DirNode(this.now());
          this.addEntry(dir, part, made);
          first ??= at;
          dir = made;
        } else if (existing.kind === 'dir') {
          dir = existing;
        } else {
          throw errno('EEXIST', 'mkdir', at);
        }
      }
      return first;
    });
  }

  readdir(path: string): Promise<string[]>;
  readdir(path: string, options: { withFileTypes: true }): Promise<DirEntry[]>;
  readdir(path: string, options?: { withFileTypes: true }): Promise<string[] | DirEntry[]> {
    return this.later(() => {
      const p = this.normalize(path);
      this.check(p, 'scandir', 'read');
      const node = this.lookup(p, 'scandir');
      if (node.kind !== 'dir') throw errno('ENOTDIR', 'scandir', p);
      const names = [...node.entries.keys()].sort();
      if (options === undefined) return names;
      return names.map((name) => {
        const isFile = (node.entries.get(name) as Node).kind === 'file';
        return { name, isFile: () => isFile, isDirectory: () => !isFile };
      });
    });
  }

  stat(path: string): Promise<FileStats> {
    return this.later(() => {
      const p = this.normalize(path);
      this.check(p, 'stat', 'read');
      return statsOf(this.lookup(p, 'stat'));
    });
  }

  truncate(path: string, length: number): Promise<void> {
    return this.later(() => {
      const fd = this.openSync(path, 'r+');
      try {
        this.resize(this.openFile(fd, 'ftruncate'), length);
      } finally {
        this.closeSync(fd);
      }
    });
  }

  statfs(path: string): Promise<FileSystemStats> {
    return this.later(() => {
      const p = this.normalize(path);
      this.check(p, 'statfs', 'read');
      this.lookup(p, 'statfs');
      return {
        bsize: BLOCK_BYTES,
        blocks: Math.floor(this.capacityBytes / BLOCK_BYTES),
        bavail: Math.floor(Math.max(0, this.capacityBytes - this.used) / BLOCK_BYTES),
      };
    });
  }

  // ---- FileSystem: synchronous ----

  openSync(path: string, flags: OpenFlags): number {
    const p = this.normalize(path);
    const creates = flags !== 'r' && flags !== 'r+';
    this.check(p, 'open', 'read');
    const parent = this.parentOf(p, 'open', false) as DirNode;
    const name = posix.basename(p);
    let node = p === '/' ? this.root : parent.entries.get(name);
    if (node === undefined) {
      if (!creates) throw errno('ENOENT', 'open', p);
      this.check(p, 'open', 'create');
      node = new FileNode(this.now());
      this.addEntry(parent, name, node);
    } else if (node.kind === 'dir') {
      if (flags !== 'r') throw errno('EISDIR', 'open', p);
    } else if (flags === 'w' || flags === 'w+') {
      this.check(p, 'open', 'mutate');
      this.resize(node, 0);
    }
    if (node.kind === 'file') node.openCount++;
    const fd = this.nextFd++;
    this.openFiles.set(fd, { node, path: p, flags });
    return fd;
  }

  writeSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    return this.writeTo(fd, buffer, offset, length, position);
  }

  fsyncSync(fd: number): void {
    const f = this.openFiles.get(fd);
    if (f === undefined) throw errno('EBADF', 'fsync');
    this.check(f.path, 'fsync', 'read');
    if (f.node.kind === 'file') this.makeDurable(f.node);
    this.commitNames(f.node);
  }

  closeSync(fd: number): void {
    const f = this.openFiles.get(fd);
    if (f === undefined) throw errno('EBADF', 'close');
    this.openFiles.delete(fd);
    if (f.node.kind === 'file') {
      f.node.openCount--;
      if (f.node.openCount === 0 && f.node.links === 0) this.used -= f.node.length;
    }
  }

  readFileSync(path: string): Buffer {
    const p = this.normalize(path);
    this.check(p, 'open', 'read');
    const node = this.lookup(p, 'open');
    if (node.kind === 'dir') throw errno('EISDIR', 'read', p);
    return Buffer.from(node.content());
  }

  renameSync(from: string, to: string): void {
    const src = this.normalize(from);
    const dst = this.normalize(to);
    this.check(src, 'rename', 'mutate');
    this.check(dst, 'rename', 'mutate');
    const { dir: fromDir, name: fromName, node } = this.lookupEntry(src, 'rename');
    const toDir = this.parentOf(dst, 'rename', false) as DirNode;
    const toName = posix.basename(dst);
    if (src === dst) return;
    if (node.kind === 'dir' && (dst + '/').startsWith(src + '/')) throw errno('EINVAL', 'rename', src);
    const replaced = toDir.entries.get(toName);
    if (replaced !== undefined) {
      if (replaced.kind === 'dir' && node.kind === 'file') throw errno('EISDIR', 'rename', dst);
      if (replaced.kind === 'file' && node.kind === 'dir') throw errno('ENOTDIR', 'rename', dst);
      if (replaced.kind === 'dir' && replaced.entries.size > 0) throw errno('ENOTEMPTY', 'rename', dst);
      this.removeEntry(toDir, toName);
    }
    fromDir.entries.delete(fromName);
    this.journal.push({ dir: fromDir, name: fromName, node: null });
    this.addEntry(toDir, toName, node);
    if (node.kind === 'file') node.links--;
  }

  // ---- handle operations (MemoryFileHandle) ----

  handleRead(fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return this.later(() => ({ bytesRead: this.readSync(fd, buffer, offset, length, position) }));
  }

  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    const file = this.openFile(fd, 'read');
    const end = Math.min(file.length, position + length);
    const bytesRead = Math.max(0, end - position);
    if (bytesRead > 0) file.bytes.copy(buffer, offset, position, end);
    return bytesRead;
  }

  handleWrite(fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesWritten: number }> {
    return this.later(() => ({ bytesWritten: this.writeTo(fd, buffer, offset, length, position) }));
  }

  handleWriteFile(fd: number, data: Buffer): Promise<void> {
    return this.later(() => this.replaceContent(this.openFile(fd, 'write'), data));
  }

  handleStat(fd: number): Promise<FileStats> {
    return this.later(() => {
      const f = this.openFiles.get(fd);
      if (f === undefined) throw errno('EBADF', 'fstat');
      this.check(f.path, 'fstat', 'read');
      return statsOf(f.node);
    });
  }

  handleTruncate(fd: number, length: number): Promise<void> {
    return this.later(() => this.resize(this.openFile(fd, 'ftruncate'), length));
  }

  handleSync(fd: number): Promise<void> {
    return this.later(() => this.fsyncSync(fd));
  }

  handleClose(fd: number): Promise<void> {
    return this.later(() => this.closeSync(fd));
  }

  // ---- internals ----

  /** Runs `op` when `defer` says the I/O completes; never, if a crash came first. */
  private later<T>(op: () => T): Promise<T> {
    const epoch = this.epoch;
    return new Promise<T>((resolve, reject) => {
      this.defer(() => {
        if (epoch !== this.epoch) return;
        try {
          resolve(op());
        } catch (err) {
          reject(err);
        }
      });
    });
  }

  private normalize(path: string): string {
    return posix.resolve('/', path);
  }

  /**
   * Throws the injected errno for `path`, if any applies: EIO to every kind of operation,
   * ENOSPC to those that write data or create names.
   */
  private check(path: string, syscall: string, kind: 'read' | 'mutate' | 'create' | 'write'): void {
    if (this.failures.size === 0) return;
    for (const [prefix, code] of this.failures) {
      if (prefix !== '/' && path !== prefix && !path.startsWith(`${prefix}/`)) continue;
      if (code === 'EIO' || kind === 'create' || kind === 'write') throw errno(code, syscall, path);
    }
  }

  private lookup(path: string, syscall: string): Node {
    let node: Node = this.root;
    for (const part of path.split('/').filter((s) => s.length > 0)) {
      if (node.kind !== 'dir') throw errno('ENOTDIR', syscall, path);
      const next = node.entries.get(part);
      if (next === undefined) throw errno('ENOENT', syscall, path);
      node = next;
    }
    return node;
  }

  /** The directory holding `path`; null if it is missing and `missingOk`. */
  private parentOf(path: string, syscall: string, missingOk: boolean): DirNode | null {
    let node: Node;
    try {
      node = this.lookup(posix.dirname(path), syscall);
    } catch (err) {
      if (missingOk) return null;
      throw errno((err as NodeJS.ErrnoException).code ?? 'ENOENT', syscall, path);
    }
    if (node.kind !== 'dir') throw errno('ENOTDIR', syscall, path);
    return node;
  }

  private lookupEntry(path: string, syscall: string): { dir: DirNode; name: string; node: Node } {
    const dir = this.parentOf(path, syscall, false) as DirNode;
    const name = posix.basename(path);
    const node = dir.entries.get(name);
    if (node === undefined || path === '/') throw errno(path === '/' ? 'EBUSY' : 'ENOENT', syscall, path);
    return { dir, name, node };
  }

  private addEntry(dir: DirNode, name: string, node: Node): void {
    dir.entries.set(name, node);
    dir.mtimeMs = this.now();
    this.journal.push({ dir, name, node });
    if (node.kind === 'file') node.links++;
  }

  private removeEntry(dir: DirNode, name: string): void {
    const node = dir.entries.get(name);
    if (node === undefined) return;
    dir.entries.delete(name);
    dir.mtimeMs = this.now();
    this.journal.push({ dir, name, node: null });
    this.released(node);
  }

  /** Gives back the space of a node no name reaches any more (an open file keeps it until closed). */
  private released(node: Node): void {
    if (node.kind === 'file') {
      node.links--;
      if (node.links === 0 && node.openCount === 0) this.used -= node.length;
      return;
    }
    for (const child of node.entries.values()) this.released(child);
  }

  /** The file open as `fd`, for an operation of `syscall`'s kind. */
  private openFile(fd: number, syscall: 'read' | 'write' | 'ftruncate'): FileNode {
    return this.openEntry(fd, syscall).node as FileNode;
  }

  private openEntry(fd: number, syscall: 'read' | 'write' | 'ftruncate'): OpenFile {
    const f = this.openFiles.get(fd);
    if (f === undefined) throw errno('EBADF', syscall);
    if (f.node.kind === 'dir') throw errno('EISDIR', syscall, f.path);
    if (syscall !== 'read' && f.flags === 'r') throw errno('EBADF', syscall, f.path);
    this.check(f.path, syscall, syscall === 'read' ? 'read' : syscall === 'write' ? 'write' : 'mutate');
    return f;
  }

  /** A positioned write through `fd`; on a file opened 'a' it appends wherever `position` says, as on Linux. */
  private writeTo(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    const f = this.openEntry(fd, 'write');
    const file = f.node as FileNode;
    return this.writeAt(file, buffer, offset, length, f.flags === 'a' ? file.length : position);
  }

  private writeAt(file: FileNode, buffer: Buffer, offset: number, length: number, position: number): number {
    const growth = Math.max(0, position + length - file.length);
    const room = Math.max(0, this.capacityBytes - this.used);
    // A disk that fills up mid-write takes what fits, as write(2) does; the next write fails.
    const n = growth > room ? length - (growth - room) : length;
    if (n <= 0 && length > 0) throw errno('ENOSPC', 'write');
    const end = position + n;
    if (end > file.length) this.resize(file, end);
    buffer.copy(file.bytes, position, offset, offset + n);
    file.dirtyFrom = Math.min(file.dirtyFrom, position);
    file.mtimeMs = this.now();
    return n;
  }

  private replaceContent(file: FileNode, data: Buffer): void {
    this.resize(file, 0);
    let written = 0;
    while (written < data.length) written += this.writeAt(file, data, written, data.length - written, written);
  }

  private resize(file: FileNode, length: number): void {
    if (length > file.bytes.length) {
      const bigger = Buffer.alloc(Math.max(length, file.bytes.length * 2, 64));
      file.bytes.copy(bigger, 0, 0, file.length);
      file.bytes = bigger;
    } else if (length > file.length) {
      file.bytes.fill(0, file.length, length);
    }
    if (file.links > 0 || file.openCount > 0) this.used += length - file.length;
    file.dirtyFrom = Math.min(file.dirtyFrom, file.length, length);
    file.length = length;
    file.mtimeMs = this.now();
  }

  private makeDurable(file: FileNode): void {
    if (file.dirtyFrom === Number.POSITIVE_INFINITY && file.durableLength === file.length) return;
    if (file.durable.length < file.length) {
      const bigger = Buffer.alloc(Math.max(file.length, file.durable.length * 2));
      file.durable.copy(bigger, 0, 0, Math.min(file.durableLength, file.length));
      file.durable = bigger;
    }
    const from = Math.min(file.dirtyFrom, file.length);
    file.bytes.copy(file.durable, from, from, file.length);
    file.durableLength = file.length;
    file.dirtyFrom = Number.POSITIVE_INFINITY;
  }

  /** The name changes a fsync of `node` makes durable (see nameDurability). */
  private commitNames(node: Node): void {
    if (this.journal.length === 0) return;
    if (this.nameDurability === 'journal') {
      for (const change of this.journal) apply(change);
      this.journal = [];
      return;
    }
    if (node.kind !== 'dir') return;
    this.journal = this.journal.filter((change) => {
      if (change.dir !== node) return true;
      apply(change);
      return false;
    });
  }
}

function apply(change: NameChange): void {
  if (change.node === null) change.dir.durableEntries.delete(change.name);
  else change.dir.durableEntries.set(change.name, change.node);
}
