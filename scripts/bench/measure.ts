// What the benches measure the same way: a process's CPU time from /proc, the median and range
// of a figure over rounds, and the page cache state a timed phase that writes starts from.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

/** Kernel clock ticks per second, the unit of /proc/<pid>/stat's utime and stime. */
const CLOCK_TICKS_PER_S = 100;

/** utime and stime of every thread of `pid`, live and exited, in seconds. */
export function cpuTimes(pid: number): { userSeconds: number; systemSeconds: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count from its closing parenthesis, where
  // field 3 starts; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { userSeconds: Number(fields[11]) / CLOCK_TICKS_PER_S, systemSeconds: Number(fields[12]) / CLOCK_TICKS_PER_S };
}

/** utime + stime of every thread of `pid`, live and exited, in seconds. */
export function cpuSeconds(pid: number): number {
  const { userSeconds, systemSeconds } = cpuTimes(pid);
  return userSeconds + systemSeconds;
}

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** `median M (min A, max B)` with `digits` decimals. */
export const spread = (xs: number[], digits: number): string =>
  `median ${median(xs).toFixed(digits)} (min ${Math.min(...xs).toFixed(digits)}, max ${Math.max(...xs).toFixed(digits)})`;

/**
 * Writes dirty pages back and, where the bench may (root), drops the page cache, so that each
 * timed phase that writes starts from the same state. On this kind of machine, once a few GiB of
 * page cache are held, every page written must first be reclaimed and raw writes fall tenfold:
 * a phase that came after others' gigabytes would measure the machine, not the broker.
 */
export function settlePageCache(): void {
  spawnSync('sync');
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '1');
  } catch {
    // Not root: the phases then include the machine's page reclaim.
  }
}
