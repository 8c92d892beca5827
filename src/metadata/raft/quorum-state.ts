// The `quorum-state` file: Kafka's QuorumStateData (raft-records) as JSON, as Kafka's
// FileQuorumStateStore writes it, replaced atomically (write a temp file, fsync, rename,
// fsync the directory, as Kafka's atomicMoveWithFallback does) before a vote or an epoch
// change takes effect: a vote must survive an OS crash, or the node could vote twice in
// one epoch.

import { join } from 'node:path';
import { type FileSystem, nodeFileSystem } from '../../../storage/file-system.ts';
import type { QuorumStateData, QuorumStateStore } from './types.ts';

export const QUORUM_STATE_FILE = 'quorum-state';
const DATA_VERSION = 1;

export class FileQuorumStateStore implements QuorumStateStore {
  private readonly path: string;

  /** `unsafeBypassFsync` (unsafe.bypass.fsync): replaced atomically but never fsynced; a vote may not survive an OS crash. */
  constructor(
    private readonly dir: string,
    private readonly unsafeBypassFsync = false,
    private readonly fs: FileSystem = nodeFileSystem,
  ) {
    this.path = join(dir, QUORUM_STATE_FILE);
  }

  read(): QuorumStateData | null {
    let text: string;
    try {
      text = this.fs.readFileSync(this.path).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    const json = JSON.parse(text) as Record<string, unknown>;
    const int = (key: string): number => (typeof json[key] === 'number' ? (json[key] as number) : -1);
    return {
      leaderId: int('leaderId'),
      leaderEpoch: Math.max(0, int('leaderEpoch')),
      votedId: int('votedId'),
      votedDirectoryId: typeof json['votedDirectoryId'] === 'string' ? (json['votedDirectoryId'] as string) : 'AAAAAAAAAAAAAAAAAAAAAA',
    };
  }

  write(state: QuorumStateData): void {
    const fs = this.fs;
    const data = Buffer.from(JSON.stringify({ ...state, data_version: DATA_VERSION }));
    const tmp = `${this.path}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    try {
      let written = 0;
      while (written < data.length) written += fs.writeSync(fd, data, written, data.length - written, written);
      if (!this.unsafeBypassFsync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.path);
    if (this.unsafeBypassFsync) return;
    const dirFd = fs.openSync(this.dir, 'r');
    try {
      fs.fsyncSync(dirFd);
    } finally {
      fs.closeSync(dirFd);
    }
  }
}
