import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { decode, encode, isReply } from '../platformatic/rpc.ts';
import { tail } from '../support/process.ts';
import type { OperationRunner } from './process-driver.ts';

// Runs a driver's operations in one long-lived child process (compat/java/CompatDriver.java)
// that answers them as JSON lines (compat/platformatic/rpc.ts: one request {id, method,
// args: [parameters]} a line on its stdin, one reply a line on its stdout). The child starts
// with the first operation. One that exits or does not answer in time fails the operations it
// holds with the reason and its stderr, is killed, and a new one serves the next operation.
// It ends with close(), at the end of its stdin (the parent went away), and is killed when the
// parent exits.

const CLOSE_TIMEOUT_MS = 10_000;
const STDERR_KEPT_CHARS = 20_000;

interface PendingCall {
  operation: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Child {
  process: ChildProcessWithoutNullStreams;
  pending: Map<number, PendingCall>;
  stderr: string;
  exited: Promise<void>;
}

const running = new Set<ChildProcessWithoutNullStreams>();
let killOnExit = false;

// 'exit' handlers run synchronously: SIGKILL is the one way to be sure no child outlives us.
function track(child: ChildProcessWithoutNullStreams): void {
  running.add(child);
  child.once('close', () => running.delete(child));
  if (killOnExit) return;
  killOnExit = true;
  process.once('exit', () => {
    for (const c of running) c.kill('SIGKILL');
  });
}

export class ResidentProcess implements OperationRunner {
  private current: Child | null = null;
  private nextId = 1;

  constructor(
    private readonly client: string,
    private readonly command: () => Promise<[string, string[]]>,
  ) {}

  async call(operation: string, parameters: object, timeoutMs: number): Promise<unknown> {
    const [command, args] = await this.command();
    this.current ??= this.start(command, args);
    const child = this.current;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.pending.delete(id);
        reject(
          new Error(
            `${this.client} ${operation}: no answer within ${timeoutMs} ms; its process is killed and a new one serves ` +
              `the next operation\nstderr: ${tail(child.stderr)}`,
          ),
        );
        this.kill(child);
      }, timeoutMs);
      child.pending.set(id, {
        operation,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      child.process.stdin.write(`${encode({ id, method: operation, args: [parameters] })}\n`);
    });
  }

  // Ends the child's stdin, on which it exits; kills it if it has not within CLOSE_TIMEOUT_MS.
  async close(): Promise<void> {
    const child = this.current;
    if (!child) return;
    this.current = null;
    child.process.stdin.end();
    const timer = setTimeout(() => child.process.kill('SIGKILL'), CLOSE_TIMEOUT_MS);
    await child.exited;
    clearTimeout(timer);
  }

  private start(command: string, args: string[]): Child {
    const spawned = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    track(spawned);
    const child: Child = { process: spawned, pending: new Map(), stderr: '', exited: Promise.resolve() };
    spawned.stderr.setEncoding('utf8');
    spawned.stderr.on('data', (chunk: string) => {
      child.stderr = tail(child.stderr + chunk, STDERR_KEPT_CHARS);
    });
    createInterface({ input: spawned.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => this.received(child, line));
    // A write after the child died fails its call through the exit below.
    spawned.stdin.on('error', () => {});
    child.exited = new Promise((resolve) => {
      spawned.once('error', (error) => {
        this.ended(child, `could not start ${command}: ${error.message}`);
        resolve();
      });
      // 'close' comes after the child's last reply has been read.
      spawned.once('close', (code, signal) => {
        this.ended(child, `its process exited with ${code ?? signal}; a new one serves the next operation`);
        resolve();
      });
    });
    return child;
  }

  private received(child: Child, line: string): void {
    let reply: unknown;
    try {
      reply = decode(line);
    } catch {
      reply = null;
    }
    if (!isReply(reply)) {
      child.stderr = tail(`${child.stderr}stdout: ${line}\n`, STDERR_KEPT_CHARS);
      return;
    }
    const call = child.pending.get(reply.id);
    if (!call) return;
    child.pending.delete(reply.id);
    if ('error' in reply) {
      const { name, message, stack } = reply.error;
      call.reject(new Error(`${this.client} ${call.operation}: ${name}: ${message}\n${tail(stack ?? '', 2000)}`));
    } else {
      call.resolve(reply.result);
    }
  }

  private kill(child: Child): void {
    if (this.current === child) this.current = null;
    child.process.kill('SIGKILL');
  }

  private ended(child: Child, why: string): void {
    if (this.current === child) this.current = null;
    for (const [id, call] of child.pending) {
      child.pending.delete(id);
      call.reject(new Error(`${this.client} ${call.operation}: ${why}\nstderr: ${tail(child.stderr)}`));
    }
  }
}
