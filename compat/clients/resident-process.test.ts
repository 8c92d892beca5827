import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { missingTool } from '../../test/helpers/runtimes.ts';
import { sleep } from '../support/process.ts';
import { ROOT } from '../targets.ts';
import { JVM_OPTIONS, javaClasspath, javaUnavailable } from './java.ts';
import { ResidentProcess } from './resident-process.ts';

// A stand-in client process speaking the protocol of compat/platformatic/rpc.ts: "pid" answers
// its process id, "fail" a client error, "exit" exits with status 7, "hang" never answers.
// With the argument "stay" it outlives the end of its stdin, as a stuck client would.
const STUB = `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const { id, method } = JSON.parse(line);
  if (method === 'pid') console.log(JSON.stringify({ id, result: process.pid }));
  if (method === 'fail') console.log(JSON.stringify({ id, error: { name: 'Boom', message: 'bad input', stack: 'Boom: bad input at stub' } }));
  if (method === 'exit') process.exit(7);
});
rl.on('close', () => { if (process.argv[1] !== 'stay') process.exit(0); else setInterval(() => {}, 1000); });
`;

function stub(...args: string[]): ResidentProcess {
  return new ResidentProcess('stub', async () => [process.execPath, ['-e', STUB, ...args]]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && alive(pid); i++) await sleep(100);
  return !alive(pid);
}

describe('compat: a resident client process', function () {
  it('serves every operation from one process', async function () {
    const runner = stub();
    try {
      const first = await runner.call('pid', {}, 10_000);
      assert.equal(await runner.call('pid', {}, 10_000), first);
    } finally {
      await runner.close();
    }
  });

  it("rejects a client error with the error's name and message, and serves on", async function () {
    const runner = stub();
    try {
      const before = await runner.call('pid', {}, 10_000);
      await assert.rejects(runner.call('fail', {}, 10_000), /^Error: stub fail: Boom: bad input\nBoom: bad input at stub$/);
      assert.equal(await runner.call('pid', {}, 10_000), before);
    } finally {
      await runner.close();
    }
  });

  it('fails the operation of a process that exits, and a new process serves the next', async function () {
    const runner = stub();
    try {
      const before = await runner.call('pid', {}, 10_000);
      await assert.rejects(runner.call('exit', {}, 10_000), /stub exit: its process exited with 7; a new one serves the next operation/);
      const after = await runner.call('pid', {}, 10_000);
      assert.notEqual(after, before);
    } finally {
      await runner.close();
    }
  });

  it('kills a process that does not answer in time, and a new process serves the next operation', async function () {
    const runner = stub();
    try {
      const before = (await runner.call('pid', {}, 10_000)) as number;
      await assert.rejects(runner.call('hang', {}, 300), /stub hang: no answer within 300 ms; its process is killed/);
      assert.ok(await gone(before), `process ${before} still runs`);
      assert.notEqual(await runner.call('pid', {}, 10_000), before);
    } finally {
      await runner.close();
    }
  });

  it('ends its process on close', async function () {
    const runner = stub();
    const pid = (await runner.call('pid', {}, 10_000)) as number;
    await runner.close();
    assert.equal(alive(pid), false);
  });

  it('kills a process that outlives the end of its stdin on close', async function () {
    this.timeout(30_000);
    const runner = stub('stay');
    const pid = (await runner.call('pid', {}, 10_000)) as number;
    await runner.close();
    assert.equal(alive(pid), false);
  });

  it('leaves no process running when its parent exits without closing it', async function () {
    const parent = `
      import { ResidentProcess } from ${JSON.stringify(join(ROOT, 'compat/clients/resident-process.ts'))};
      const runner = new ResidentProcess('stub', async () => [process.execPath, ['-e', ${JSON.stringify(STUB)}, 'stay']]);
      console.log(await runner.call('pid', {}, 10_000));
      process.exit(0);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', parent], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const [code] = await once(child, 'close');
    assert.equal(code, 0);
    const pid = Number(stdout.trim());
    assert.ok(pid > 0, `no pid printed: ${stdout}`);
    assert.ok(await gone(pid), `process ${pid} outlived its parent`);
  });
});

describe('compat: the Java client driver (CompatDriver)', function () {
  it('answers each request line on stdout, logs lines that are not requests, and exits at the end of stdin', async function () {
    this.timeout(120_000);
    const why = javaUnavailable();
    if (why !== null) missingTool(this, `the Java client (${why})`, 'scripts/install-test-clients.sh');
    const classpath = await javaClasspath('CompatDriver');
    // Nothing listens on port 1: the requests below never reach a client.
    const jvm = spawn('java', [...JVM_OPTIONS, '-cp', classpath, 'CompatDriver', '127.0.0.1:1'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    jvm.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const replies = createInterface({ input: jvm.stdout })[Symbol.asyncIterator]();
    jvm.stdin.write('not json\n{"method":"metadata"}\n');
    jvm.stdin.write('{"id":7,"method":"rebalance","args":[{}]}\n');
    const first = await replies.next();
    jvm.stdin.write('{"id":8,"method":"describeTopic","args":[{}]}\n');
    const second = await replies.next();
    jvm.stdin.end();
    const [code] = await once(jvm, 'close');

    const reply = JSON.parse(first.value as string);
    assert.equal(reply.id, 7);
    assert.equal(reply.error.name, 'IllegalArgumentException');
    assert.equal(reply.error.message, 'unknown operation rebalance');
    assert.match(reply.error.stack, /^java\.lang\.IllegalArgumentException: unknown operation rebalance\n\tat CompatDriver/);
    // A request without its parameters is the operation's error, not the JVM's end.
    assert.equal(JSON.parse(second.value as string).id, 8);
    assert.equal(JSON.parse(second.value as string).error.name, 'NullPointerException');
    assert.equal(code, 0);
    assert.match(stderr, /CompatDriver: not a request: not json\n/);
    assert.match(stderr, /CompatDriver: not a request: \{"method":"metadata"\}\n/);
  });
});
