import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stripVTControlCharacters } from 'node:util';
import { installProject, packSluice, repoVersion } from '../../helpers/packed-package.ts';
import { missingTool, node22Path } from '../../helpers/runtimes.ts';
import { REPO, ensureBuilt } from '../../helpers/sluice-cli.ts';

// README.md's "Embedding: a broker inside a test suite" shows one example per test runner. Each
// is taken from the README at test time (so the two cannot drift), written into an empty
// project that has the packed package, kafkajs and the runner installed, and run by the runner
// itself: it must exit 0, report exactly one passing test, and leave no process behind.

const SECTION = '## Embedding: a broker inside a test suite';

/**
 * The runners, at versions whose engines (and their dependencies': Vite 8 needs ^20.19) take
 * Node 20. Jest runs TypeScript test files through a transform; its documented way is Babel,
 * and @babel/preset-typescript alone is enough on Node 20 (preset-env only lowers syntax).
 * Babel 8 needs Node 22.18, so it is Babel 7. Mocha and node:test on Node 20 load TypeScript
 * through tsx, as this repo does; Node 22 strips the types itself.
 */
const RUNNERS = ['mocha@12.0.3', 'jest@30.5.2', '@babel/preset-typescript@7.29.7', 'vitest@4.1.12'];

const RUN_TIMEOUT_MS = 120_000;

describe("the README's test-runner examples, run by each runner against the installed package", function () {
  this.timeout(600_000);
  let examples: Examples;
  let work: string;
  let project: string;

  before(async function () {
    examples = readmeExamples(await readFile(join(REPO, 'README.md'), 'utf8'));
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'sluice-runners-'));
    const tarball = await packSluice(work);
    project = join(work, 'project');
    const tools = [`kafkajs@${await repoVersion('kafkajs')}`, `tsx@${await repoVersion('tsx')}`];
    await installProject(project, [tarball, ...tools, ...RUNNERS]);
  });

  after(async function () {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('mocha: 1 passing', async function () {
    this.timeout(RUN_TIMEOUT_MS + 30_000);
    const dir = await write(project, 'mocha', { 'orders.test.ts': examples.mocha });
    // No --exit: mocha ends only once the broker and the producer have let go of the event loop.
    const out = await runToEnd(
      process.execPath,
      [bin(project, 'mocha/bin/mocha.js'), '--node-option', 'import=tsx', 'orders.test.ts'],
      dir,
    );
    assert.match(out, /^\s*1 passing\b/m, out);
  });

  it('Jest: 1 passed', async function () {
    this.timeout(RUN_TIMEOUT_MS + 30_000);
    const dir = await write(project, 'jest', {
      'orders.test.ts': examples.jest,
      'babel.config.json': JSON.stringify({ presets: ['@babel/preset-typescript'] }),
      // The cache in the temp dir, not in the machine's /tmp, so that it goes with it.
      'jest.config.json': JSON.stringify({ extensionsToTreatAsEsm: ['.ts'], cacheDirectory: join(project, 'jest', '.cache') }),
    });
    // As the README runs it: NODE_OPTIONS=--experimental-vm-modules npx jest
    const out = await runToEnd(process.execPath, [bin(project, 'jest/bin/jest.js')], dir, { NODE_OPTIONS: '--experimental-vm-modules' });
    assert.match(out, /^Tests:\s+1 passed, 1 total$/m, out);
  });

  it('Vitest: 1 passed', async function () {
    this.timeout(RUN_TIMEOUT_MS + 30_000);
    // The README names the config's one setting: test.globalSetup.
    const config = `import { defineConfig } from 'vitest/config';\n\nexport default defineConfig({ test: { globalSetup: './vitest.global-setup.ts' } });\n`;
    const dir = await write(project, 'vitest', { ...examples.vitest, 'vitest.config.ts': config });
    const out = await runToEnd(process.execPath, [bin(project, 'vitest/vitest.mjs'), 'run'], dir);
    assert.match(out, /^\s*Tests\s+1 passed \(1\)$/m, out);
  });

  it('node:test on Node 20 (through tsx): 1 pass', async function () {
    this.timeout(RUN_TIMEOUT_MS + 30_000);
    const dir = await write(project, 'node-test-20', { 'orders.test.ts': examples.nodeTest });
    const out = await runToEnd(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', 'orders.test.ts'], dir);
    assertOneTapPass(out);
  });

  it('node:test on Node 22 (its own type stripping): 1 pass', async function () {
    this.timeout(RUN_TIMEOUT_MS + 30_000);
    const node22 = node22Path();
    if (node22 === null) missingTool(this, 'Node 22', 'bash scripts/install-node22.sh');
    const dir = await write(project, 'node-test-22', { 'orders.test.ts': examples.nodeTest });
    const out = await runToEnd(node22, ['--test', '--test-reporter=tap', 'orders.test.ts'], dir);
    assertOneTapPass(out);
  });
});

interface Examples {
  mocha: string;
  jest: string;
  /** File name (from the block's `// name.ts` comments) to contents. */
  vitest: Record<string, string>;
  nodeTest: string;
}

/** The fenced ```ts block after each runner's line in the README's embedding section. */
function readmeExamples(readme: string): Examples {
  const lines = readme.split('\n');
  const start = lines.indexOf(SECTION);
  assert.notEqual(start, -1, `README.md has no "${SECTION}" section`);
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  const section = lines.slice(start + 1, end === -1 ? undefined : end);

  const blockAfter = (label: string): string => {
    let fence: string | null = null;
    const at: number[] = [];
    section.forEach((line, i) => {
      if (line.startsWith('```')) fence = fence === null ? line : null;
      else if (fence === null && line.startsWith(label)) at.push(i);
    });
    assert.equal(at.length, 1, `README.md's embedding section has ${at.length} lines starting "${label}", not one`);
    const open = section.findIndex((line, i) => i > at[0]! && line.startsWith('```'));
    assert.equal(section[open], '```ts', `the first code block after "${label}" is not a \`\`\`ts block`);
    const close = section.findIndex((line, i) => i > open && line === '```');
    assert.notEqual(close, -1, `the code block after "${label}" is not closed`);
    return `${section.slice(open + 1, close).join('\n')}\n`;
  };

  // The Vitest block is two files, each starting with a comment line that names it.
  const vitest: Record<string, string> = {};
  let name: string | null = null;
  for (const line of blockAfter('Vitest').split('\n')) {
    const header = /^\/\/ ([\w.-]+\.ts)\b/.exec(line);
    if (header !== null) {
      name = header[1]!;
      vitest[name] = '';
    }
    assert.ok(name !== null || line === '', `the Vitest block has code before its first "// <file>.ts" comment: ${line}`);
    if (name !== null) vitest[name] += `${line}\n`;
  }
  for (const file of Object.keys(vitest)) vitest[file] = `${vitest[file]!.trimEnd()}\n`;
  assert.deepEqual(Object.keys(vitest), ['vitest.global-setup.ts', 'orders.test.ts'], 'the files the Vitest block names');

  return { mocha: blockAfter('mocha:'), jest: blockAfter('Jest'), vitest, nodeTest: blockAfter('node:test:') };
}

function bin(project: string, path: string): string {
  return join(project, 'node_modules', path);
}

/** Writes `files` into a new directory `name` of the project; its path. */
async function write(project: string, name: string, files: Record<string, string>): Promise<string> {
  const dir = join(project, name);
  await mkdir(dir);
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  return dir;
}

function assertOneTapPass(out: string): void {
  assert.match(out, /^# tests 1$/m, out);
  assert.match(out, /^# pass 1$/m, out);
}

/**
 * Runs a test runner in its own process group, bounded by RUN_TIMEOUT_MS; its stdout and stderr,
 * without colours. Fails unless it exits 0 and, once it has, nothing is left in its group.
 */
async function runToEnd(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  const { NODE_OPTIONS: _, ...inherited } = process.env;
  const child = spawn(command, args, {
    cwd,
    // No cache of tsx's left in the machine's temp dir.
    env: { ...inherited, NO_COLOR: '1', FORCE_COLOR: '0', TSX_DISABLE_CACHE: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid!);
  }, RUN_TIMEOUT_MS);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c, s) => resolve([c, s]));
  }).finally(() => clearTimeout(timer));
  // The runner has exited: whatever is still in its process group, it left behind.
  const leftBehind = !(await groupGone(child.pid!, 5_000));
  if (leftBehind) killGroup(child.pid!);
  await closed;
  const output = stripVTControlCharacters(out);
  const ran = `${command} ${args.join(' ')} (in ${cwd})`;
  assert.ok(!timedOut, `${ran} still running after ${RUN_TIMEOUT_MS} ms: killed\n${output}`);
  assert.ok(!leftBehind, `${ran} exited but left processes behind: killed\n${output}`);
  assert.equal(code, 0, `${ran} exited with ${code ?? signal}\n${output}`);
  return output;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** Whether process group `pid` is empty within `ms`. */
async function groupGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      process.kill(-pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return true;
      throw err;
    }
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
}
