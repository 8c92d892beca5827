import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

// Runs a command to completion. A command still running at timeoutMs is killed and reported
// as an error that carries what it printed, so a hung client fails its cell with a reason.
export function run(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const result = {
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      };
      if (timedOut) {
        reject(
          new Error(
            `${command} ${args.join(' ')} did not finish within ${options.timeoutMs} ms\n` +
              `stdout: ${tail(result.stdout)}\nstderr: ${tail(result.stderr)}`,
          ),
        );
      } else {
        resolve(result);
      }
    });
    child.stdin.on('error', () => {
      // A client that exits before reading all of its input is reported through its exit code.
    });
    child.stdin.end(options.input ?? '');
  });
}

// Like run, but a non-zero exit is an error carrying the command's output.
export async function runOk(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited with ${result.code ?? result.signal}\n` +
        `stdout: ${tail(result.stdout)}\nstderr: ${tail(result.stderr)}`,
    );
  }
  return result;
}

export function tail(text: string, chars = 3000): string {
  return text.length > chars ? `...${text.slice(-chars)}` : text;
}

export function stopProcess(child: ChildProcess, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function commandExists(command: string): boolean {
  const dirs = (process.env.PATH ?? '').split(':');
  return command.startsWith('/') ? existsSync(command) : dirs.some((dir) => existsSync(`${dir}/${command}`));
}
