import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sluiceCommand } from '../../helpers/sluice-cli.ts';
import { hasCommand, missingTool } from '../../helpers/runtimes.ts';

// `sluice dev` logs text for a person at a terminal and JSON lines for a pipe, unless
// --log-format says otherwise. The terminal is a real pseudo-terminal: util-linux's `script`.

// Built from a string: a control character in a regex literal reads as a mistake.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const TEXT_LINE = /^\d\d:\d\d:\d\d\.\d{3} INFO {2}.*listening/m;

interface Run {
  output: string;
}

/**
 * Runs `sluice dev` until it has logged its listener (the log is written asynchronously, so
 * after the ready line), stops it with SIGTERM, returns what it printed.
 */
async function runUntilReady(args: string[], terminal: boolean): Promise<Run> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-log-format-'));
  const cmd = sluiceCommand(['dev', '--port', '0', '--data-dir', dataDir, ...args]);
  const quoted = [cmd.command, ...cmd.args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const child = terminal
    ? spawn('script', ['-qfec', quoted, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], detached: true })
    : spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const collect = (d: Buffer) => {
    output += d.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready and listening lines in 30 s:\n${output}`)), 30_000);
      const check = () => {
        if (!output.includes('sluice ready:') || !/listening\b/.test(output.replace('listening on', ''))) return;
        clearTimeout(timer);
        resolve();
      };
      child.stdout?.on('data', check);
      child.stderr?.on('data', check);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with ${code} before ready:\n${output}`));
      });
    });
    await stopGroup(child);
  } finally {
    await stopGroup(child, 'SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
  }
  return { output };
}

async function stopGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  try {
    process.kill(-(child.pid ?? 0), signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  await closed;
}

describe('sluice dev log format', function () {
  this.timeout(60_000);

  it('prints coloured text lines on a terminal', async function () {
    if (!hasCommand('script')) missingTool(this, 'script (util-linux)', 'apt-get install -y util-linux');
    const { output } = await runUntilReady([], true);
    assert.match(output, ANSI, 'coloured');
    assert.match(output.replace(ANSI, ''), TEXT_LINE);
    assert.doesNotMatch(output, /^\{"level"/m);
  });

  it('prints JSON lines on a terminal with --log-format json', async function () {
    if (!hasCommand('script')) missingTool(this, 'script (util-linux)', 'apt-get install -y util-linux');
    const { output } = await runUntilReady(['--log-format', 'json'], true);
    const json = output.split(/\r?\n/).filter((l) => l.startsWith('{'));
    assert.ok(
      json.some((l) => (JSON.parse(l) as { msg: string }).msg === 'listening'),
      output,
    );
  });

  it('prints JSON lines to a pipe, and uncoloured text with --log-format pretty', async () => {
    const piped = await runUntilReady([], false);
    assert.ok(piped.output.split('\n').some((l) => l.startsWith('{') && (JSON.parse(l) as { msg: string }).msg === 'listening'));
    const pretty = await runUntilReady(['--log-format', 'pretty'], false);
    assert.match(pretty.output, TEXT_LINE);
    assert.doesNotMatch(pretty.output, ANSI);
  });

  it('refuses an unknown --log-format with usage and exit code 2', async () => {
    const cmd = sluiceCommand(['dev', '--log-format', 'xml']);
    const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    assert.equal(code, 2);
    assert.match(stderr, /invalid --log-format xml/);
  });
});
