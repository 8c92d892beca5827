/**
 * The fault suite's bad disks, each a node's whole log dir (log.dirs; its metadata log stays
 * on the ordinary disk, so the disk fault hits partitions, not the Raft log):
 *
 * - FullDisk: a small tmpfs; fill() writes a filler file until ENOSPC, drain() deletes it.
 * - EioDisk: the EIO filesystem of scripts/faults/eiofs (a FUSE pass-through over a backing
 *   dir, run in the foreground): SIGUSR1 makes every later write, fsync, read and create fail
 *   with EIO, SIGUSR2 heals, SIGTERM unmounts.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO } from '../helpers/sluice-cli.ts';
import { pidAlive } from './topology.ts';

function mounted(mountPoint: string): boolean {
  return readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .some((line) => line.split(' ')[1] === mountPoint);
}

/**
 * Unmounts the fault disks of earlier runs that died without cleaning up: mounts under
 * `<tmp>/sluice-faults-<pid>-*` whose pid is gone.
 */
export function removeStaleMounts(tmp: string): void {
  const pattern = new RegExp(`^${tmp.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/sluice-faults-(\\d+)-`);
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
    const mountPoint = line.split(' ')[1];
    const m = mountPoint === undefined ? null : pattern.exec(mountPoint);
    if (m === null || pidAlive(Number(m[1]))) continue;
    const tmpfs = line.startsWith('tmpfs ');
    spawnSync(tmpfs ? 'umount' : 'fusermount3', [tmpfs ? '-l' : '-uz', mountPoint!], { stdio: 'ignore' });
  }
}

export class FullDisk {
  private readonly filler: string;
  private active = false;

  private constructor(
    readonly mountPoint: string,
    readonly sizeMb: number,
  ) {
    this.filler = join(mountPoint, '.filler');
  }

  /** Mounts a `sizeMb` tmpfs at `mountPoint` (created). */
  static mount(mountPoint: string, sizeMb: number): FullDisk {
    mkdirSync(mountPoint, { recursive: true });
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', mountPoint], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mount tmpfs on ${mountPoint}: ${r.stderr}`);
    return new FullDisk(mountPoint, sizeMb);
  }

  get full(): boolean {
    return this.active;
  }

  /** Fills the filesystem to the last block: the node's next append or new segment fails with ENOSPC. */
  fill(): void {
    this.active = true;
    // dd stops at ENOSPC (and says so on stderr, with a non-zero status): that is the point.
    spawnSync('dd', ['if=/dev/zero', `of=${this.filler}`, 'bs=1M', `count=${this.sizeMb}`], { stdio: 'ignore', timeout: 30_000 });
  }

  async drain(): Promise<void> {
    await rm(this.filler, { force: true });
    this.active = false;
  }

  unmount(): void {
    if (mounted(this.mountPoint)) spawnSync('umount', ['-l', this.mountPoint], { stdio: 'ignore' });
  }
}

/** The EIO filesystem binary (scripts/faults/eiofs/build.sh builds it), or null when it is not built. */
export function eiofsBinary(): string | null {
  const dir = join(REPO, 'scripts', 'faults', 'eiofs');
  const binary = join(dir, 'eiofs');
  if (existsSync(binary)) return binary;
  const build = join(dir, 'build.sh');
  if (!existsSync(build)) return null;
  const r = spawnSync('bash', [build], { encoding: 'utf8', timeout: 300_000 });
  return r.status === 0 && existsSync(binary) ? binary : null;
}

export class EioDisk {
  private failing = false;
  private exited = false;

  private constructor(
    readonly mountPoint: string,
    private readonly child: ChildProcess,
  ) {
    child.once('exit', () => {
      this.exited = true;
    });
  }

  /** Mounts `binary` over `backingDir` at `mountPoint` and waits until the mount is there. */
  static async mount(binary: string, backingDir: string, mountPoint: string): Promise<EioDisk> {
    mkdirSync(backingDir, { recursive: true });
    mkdirSync(mountPoint, { recursive: true });
    let stderr = '';
    const child = spawn(binary, [backingDir, mountPoint], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const disk = new EioDisk(mountPoint, child);
    const deadline = Date.now() + 10_000;
    while (!mounted(mountPoint)) {
      if (disk.exited || Date.now() > deadline) {
        disk.unmount();
        throw new Error(`eiofs did not mount ${mountPoint}: ${stderr.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return disk;
  }

  get broken(): boolean {
    return this.failing;
  }

  /** Every later write, fsync, read and create fails with EIO. */
  fail(): void {
    this.failing = true;
    this.child.kill('SIGUSR1');
  }

  heal(): void {
    this.child.kill('SIGUSR2');
    this.failing = false;
  }

  unmount(): void {
    if (!this.exited) this.child.kill('SIGTERM');
    // A mount the process could not take down (it died, or a file is still open) goes lazily.
    const deadline = Date.now() + 5_000;
    while (mounted(this.mountPoint) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    if (mounted(this.mountPoint)) spawnSync('fusermount3', ['-uz', this.mountPoint], { stdio: 'ignore' });
    if (!this.exited) this.child.kill('SIGKILL');
  }
}
