// npm run fuzz -- --duration S [--seed N] [--out DIR] [--connections N] [--frames-per-connection N]
//                 [--max-frames N] [--restart-every S] [--no-heavy]
// Structured protocol fuzzing of a real `sluice dev` process (see runner.ts). Exits 1 when
// anything was found; reproducers are written to --out (default .cache/fuzz/).
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runFuzz, type FuzzSummary } from './runner.ts';

const USAGE = `usage: npm run fuzz -- [options]
  --duration S               how long to fuzz (default 60)
  --seed N                   the run's seed (default random; the summary names it)
  --out DIR                  where reproducers go (default .cache/fuzz)
  --connections N            concurrent connections per batch, half valid, half mutated (default 4)
  --frames-per-connection N  frames per valid connection per batch (default 48)
  --max-frames N             stop after this many frames even if time remains
  --restart-every S          restart the broker this often, to check what survives (default 60)
  --no-heavy                 leave out decompression bombs and the CreateTopics storm
Exits 1 when anything was found.`;

const OPTIONS = new Set(['duration', 'seed', 'out', 'connections', 'frames-per-connection', 'max-frames', 'restart-every', 'no-heavy']);

class UsageError extends Error {}

function parseArgs(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') out.set('help', 'true');
    if (out.has('help')) continue;
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument ${a}`);
    const [k, inline] = a.slice(2).split('=', 2) as [string, string | undefined];
    if (!OPTIONS.has(k)) throw new UsageError(`unknown option --${k}`);
    if (inline !== undefined) out.set(k, inline);
    else if (k.startsWith('no-')) out.set(k, 'true');
    else out.set(k, argv[++i] ?? '');
  }
  return out;
}

function num(args: Map<string, string>, key: string, fallback: number | undefined): number | undefined {
  const v = args.get(key);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${key} must be a non-negative number, got ${v}`);
  return n;
}

export function formatSummary(s: FuzzSummary): string {
  const lines = [
    `fuzz summary (seed ${s.seed})`,
    `  frames sent     ${s.framesSent}`,
    `  elapsed         ${s.elapsedS.toFixed(1)} s`,
    `  frames/s        ${s.framesPerSecond.toFixed(1)}`,
    `  batches         ${s.batches}`,
    `  broker restarts ${s.restarts}`,
    `  acked records   ${s.ackedRecords} tracked`,
    `  findings        ${s.findings.length}`,
  ];
  const bySig = new Map<string, { n: number; detail: string; file: string | null }>();
  for (const f of s.findings) {
    const e = bySig.get(f.signature);
    if (e) e.n++;
    else bySig.set(f.signature, { n: 1, detail: f.detail, file: f.file });
  }
  for (const [kind, n] of Object.entries(s.byKind).sort()) {
    lines.push(`    ${kind}: ${n}`);
    for (const [sig, e] of bySig) {
      if (!sig.startsWith(`${kind}|`)) continue;
      lines.push(`      ${e.n}× ${e.detail.split('\n')[0]!.slice(0, 200)}${e.file ? `  [${e.file}]` : ''}`);
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  let args: Map<string, string>;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`fuzz: ${err.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (args.has('help')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const summary = await runFuzz({
    durationS: num(args, 'duration', 60)!,
    seed: num(args, 'seed', Math.floor(Math.random() * 2 ** 31))!,
    outDir: resolve(args.get('out') ?? '.cache/fuzz'),
    connections: num(args, 'connections', undefined),
    framesPerConnection: num(args, 'frames-per-connection', undefined),
    maxFrames: num(args, 'max-frames', undefined),
    restartEveryS: num(args, 'restart-every', undefined),
    heavy: !args.has('no-heavy'),
  });
  process.stdout.write(`${formatSummary(summary)}\n`);
  process.exitCode = summary.findings.length > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();
