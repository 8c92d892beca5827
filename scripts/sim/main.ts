// npm run sim -- --seeds N [--seed S] [--also S1,S2] [--jobs J] [--level raft|cluster] [--steps K] [--duration MS] [--no-power] [--keep-going] [--verbose]
// Runs N seeds (S, S+1, ...; or the one seed S when --seeds is absent) of the deterministic
// simulation and prints one line per seed, a violation's seed and trace, and at the end
// `N seeds, V violations`. Exits 1 when any seed found a violation. --also adds seeds outside
// the range, run after it: those a longer run once found failing, kept as regressions.
//
// --level raft runs the metadata quorum alone (three RaftClients); cluster (the default)
// runs whole Brokers with producers and consumers. The same seed replays the same run.
// A seed stops at its first violation (its trace then ends there); --keep-going runs it to
// the end, to see whether, say, a replica behind the high watermark ends in a lost record.
// --jobs J runs J seeds at a time, each in a worker thread (seed-worker.ts); a seed's line
// then comes when it ends, not in seed order.
// --no-power replaces machine crashes (which lose what was not fsynced) by process kills.
// SIM_LOG_LEVEL=info (or debug) puts the brokers' log lines at that level into the trace;
// SIM_TRACE_EVENTS=N keeps the last N events of a cluster seed's trace (default 1000).

import { Worker } from 'node:worker_threads';
import type { SimResult } from './result.ts';
import { runSeed, type Level, type SeedOptions } from './run.ts';

/** A worker thread's entry: Node 20 does not pass --import tsx's hooks to a worker's own first module. */
const WORKER_BOOTSTRAP = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./seed-worker.ts', import.meta.url).href)}); })`;

/**
 * Runs `seeds` on `jobs` worker threads, calling `report` as each ends. Each worker takes the
 * next seed as it finishes one; the workers end with the seeds.
 */
async function runOnWorkers(
  seeds: readonly number[],
  jobs: number,
  level: Level,
  options: Omit<SeedOptions, 'seed'>,
  report: (seed: number, r: SimResult, ms: number) => void,
): Promise<void> {
  let next = 0;
  const worker = () =>
    new Promise<void>((resolve, reject) => {
      const w = new Worker(WORKER_BOOTSTRAP, { eval: true, workerData: { level, options } });
      let startedMs = 0;
      const take = () => {
        if (next >= seeds.length) {
          w.terminate().then(() => resolve(), reject);
          return;
        }
        startedMs = Date.now();
        w.postMessage(seeds[next++]);
      };
      w.on('message', (m: { seed: number; result?: SimResult; error?: string }) => {
        if (m.error !== undefined) {
          w.terminate();
          reject(new Error(`seed ${m.seed}: ${m.error}`));
          return;
        }
        report(m.seed, m.result!, Date.now() - startedMs);
        take();
      });
      w.on('error', reject);
      take();
    });
  await Promise.all(Array.from({ length: Math.min(jobs, seeds.length) }, worker));
}

function parseArgs(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [k, inline] = a.slice(2).split('=', 2) as [string, string | undefined];
    if (inline !== undefined) out.set(k, inline);
    else if (k === 'verbose' || k === 'no-power' || k === 'keep-going') out.set(k, 'true');
    else out.set(k, argv[++i] ?? '');
  }
  return out;
}

function int(args: Map<string, string>, key: string): number | undefined {
  const v = args.get(key);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${key} must be a non-negative integer, got ${v}`);
  return n;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const level = (args.get('level') ?? 'cluster') as Level;
  if (level !== 'raft' && level !== 'cluster') throw new Error(`--level must be raft or cluster, got ${level}`);
  const first = int(args, 'seed') ?? 1;
  const count = int(args, 'seeds') ?? 1;
  const maxSteps = int(args, 'steps');
  const durationMs = int(args, 'duration');
  const verbose = args.has('verbose');
  const jobs = int(args, 'jobs') ?? 1;
  if (jobs < 1) throw new Error(`--jobs must be 1 or more, got ${jobs}`);
  let violations = 0;
  const startedMs = Date.now();
  const also = (args.get('also') ?? '')
    .split(',')
    .filter((s) => s !== '')
    .map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 0) throw new Error(`--also takes seeds (non-negative integers), got ${s}`);
      return n;
    });
  const seeds = [...Array.from({ length: count }, (_, i) => first + i), ...also.filter((s) => s < first || s >= first + count)];
  const options = {
    ...(maxSteps !== undefined ? { maxSteps } : {}),
    ...(durationMs !== undefined ? { durationMs } : {}),
    powerFailures: !args.has('no-power'),
    keepGoing: args.has('keep-going'),
  };
  const report = (seed: number, r: SimResult, ms: number) => {
    const status = r.violations.length === 0 ? 'ok' : `${r.violations.length} VIOLATIONS`;
    console.log(
      `seed ${seed} ${r.level}: ${status}  hash ${r.hash}  ${r.steps} events, ${(r.virtualMs / 1000).toFixed(1)} s virtual in ${(ms / 1000).toFixed(1)} s; ${r.summary}`,
    );
    if (r.violations.length > 0) {
      violations += r.violations.length;
      for (const v of r.violations) console.log(`  VIOLATION (seed ${seed}) at ${v.atMs.toFixed(1)} ms: ${v.invariant}: ${v.detail}`);
      console.log(`  trace of seed ${seed} (replay: npm run sim -- --level ${level} --seed ${seed}):\n${r.trace}`);
    } else if (verbose) {
      console.log(r.trace);
    }
  };
  if (jobs > 1) {
    await runOnWorkers(seeds, jobs, level, options, report);
  } else {
    for (const seed of seeds) {
      const seedStartMs = Date.now();
      const r = await runSeed(level, { ...options, seed });
      report(seed, r, Date.now() - seedStartMs);
    }
  }
  const minutes = (Date.now() - startedMs) / 60_000;
  console.log(`(${(seeds.length / minutes).toFixed(1)} seeds per minute)`);
  console.log(`${seeds.length} seeds, ${violations} violations`);
  process.exitCode = violations === 0 ? 0 : 1;
}

await main();
