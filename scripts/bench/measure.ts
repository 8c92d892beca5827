// What the benches measure the same way: a process's CPU time from /proc, and the median and
// range of a figure over rounds.
import { readFileSync } from 'node:fs';

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
