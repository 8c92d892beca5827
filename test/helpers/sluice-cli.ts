/**
 * The `sluice` command as a user installs it: `bin/sluice.js` running the compiled `dist/`.
 * Integration tests, the compat suite, the fuzzer and the benchmarks start the broker through
 * `sluiceCommand()`, so they run the code `npm pack` ships, not the TypeScript sources.
 *
 * `npm test` builds first (its pretest step); a test file run on its own rebuilds `dist/` here
 * when a source is newer than the last build, so it never runs stale code.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmdirSync, statSync, utimesSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BROKER_NODE_FLAGS } from '../../src/cli/node-flags.ts';

export const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const SOURCE_DIRS = ['src', 'protocol', 'storage'];
const CONSOLE_PROJECT = join('src', 'observability', 'console', 'tsconfig.json');
const BUILD_INFO = join(REPO, 'dist', '.tsbuildinfo');
const LOCK = join(REPO, '.cache', 'dist-build.lock');
const LOCK_WAIT_MS = 120_000;

/** The command line that runs `sluice <args>` from the built package. */
export function sluiceCommand(args: readonly string[]): { command: string; args: string[] } {
  ensureBuilt();
  return { command: process.execPath, args: [...BROKER_NODE_FLAGS, join(REPO, 'bin', 'sluice.js'), ...args] };
}

let checked = false;

/** Runs `npm run build`'s compiler when `dist/` is missing or older than a source file. */
export function ensureBuilt(): void {
  if (checked) return;
  withLock(() => {
    if (builtAtMs() >= newestSourceMs()) return;
    // tsc emits JavaScript even where it reports type errors: those are `npm run typecheck`'s
    // (and `npm test`'s build step's) to fail on, so a test run on its own only shows them.
    const tsc = join(REPO, 'node_modules', 'typescript', 'bin', 'tsc');
    // The web console's script is compiled on its own (for the browser), as `npm run build` does.
    for (const project of ['tsconfig.build.json', CONSOLE_PROJECT]) {
      const build = spawnSync(process.execPath, [tsc, '-p', project], { cwd: REPO, encoding: 'utf8' });
      if (build.error !== undefined) throw build.error;
      if (build.status !== 0) process.stderr.write(`sluice-cli: the build of ${project} reported errors:\n${build.stdout}${build.stderr}`);
    }
    // tsc leaves its build info alone when the main project did not change (only the console's
    // script did): stamped here, the build is not made again by every test process after.
    const now = new Date();
    utimesSync(BUILD_INFO, now, now);
  });
  checked = true;
}

function builtAtMs(): number {
  try {
    return statSync(BUILD_INFO).mtimeMs;
  } catch {
    return 0;
  }
}

function newestSourceMs(): number {
  let newest = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const dir of SOURCE_DIRS) walk(join(REPO, dir));
  return Math.max(newest, statSync(join(REPO, 'tsconfig.build.json')).mtimeMs);
}

/** Several test processes may start at once: one builds, the others wait for it. */
function withLock(fn: () => void): void {
  const deadline = Date.now() + LOCK_WAIT_MS;
  mkdirSync(join(REPO, '.cache'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (Date.now() > deadline) throw new Error(`${LOCK} held for over ${LOCK_WAIT_MS} ms: remove it if no build is running`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
  try {
    fn();
  } finally {
    rmdirSync(LOCK);
  }
}
