/**
 * The package as a user gets it: `npm pack` of this repo, installed from the tarball into an
 * empty project that has none of Sluice's dev dependencies.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './sluice-cli.ts';

const run = promisify(execFile);

/** `npm pack` into `dir` (its prepare step builds dist/ first); the tarball's path. */
export async function packSluice(dir: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: REPO, maxBuffer: 64 << 20 });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  assert.ok(packed, 'npm pack reported no tarball');
  return join(dir, packed.filename);
}

/** The version of `name` in this repo's node_modules, for installing the same one elsewhere. */
export async function repoVersion(name: string): Promise<string> {
  return (JSON.parse(await readFile(join(REPO, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * Creates `project` as an empty ES module project and installs `packages` (npm install specs:
 * a tarball path, `name@version`) into it, in one `npm install`.
 */
export async function installProject(project: string, packages: readonly string[], timeoutMs = 540_000): Promise<void> {
  await mkdir(project);
  // zstd-napi compiles its binding at install time: npm runs only the install scripts a
  // project allows (the README says so too).
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'a-project', private: true, type: 'module', allowScripts: { 'zstd-napi': true } }, null, 2),
  );
  await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', ...packages], {
    cwd: project,
    maxBuffer: 64 << 20,
    timeout: timeoutMs,
  });
}
