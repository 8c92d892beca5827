import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO, ensureBuilt } from '../../helpers/sluice-cli.ts';
import { installProject, packSluice, repoVersion } from '../../helpers/packed-package.ts';
import { hasCommand, missingTool, node22Path } from '../../helpers/runtimes.ts';

// The package as a user gets it: `npm pack`, installed into an empty project that has none of
// Sluice's dev dependencies, then used from there the two ways the README shows.

const run = promisify(execFile);
const READY = /^sluice ready: .* listening on [A-Z_]+:\/\/([^:,\s]+):(\d+)/m;

const CONSUMER_TS = `import { startBroker, type EmbeddedBroker } from 'sluice';
import { consumeWithRetries } from 'sluice/retry';
import { Kafka, logLevel } from 'kafkajs';

const broker: EmbeddedBroker = await startBroker();
const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
const producer = kafka.producer();
await producer.connect();
const [result] = await producer.send({ topic: 'from-a-consumer', messages: [{ key: 'k', value: 'typed' }] });
await producer.disconnect();
await broker.close();
console.log(JSON.stringify({ bootstrap: broker.bootstrap, errorCode: result?.errorCode, baseOffset: result?.baseOffset, retry: typeof consumeWithRetries }));
`;

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    outDir: 'out',
    types: ['node'],
    typeRoots: [join(REPO, 'node_modules', '@types')],
  },
  files: ['consumer.ts'],
};

describe('the npm package, installed from its tarball', function () {
  this.timeout(600_000);
  let work: string;
  let project: string;

  before(async function () {
    ensureBuilt();
    work = await mkdtemp(join(tmpdir(), 'sluice-pack-'));
    const tarball = await packSluice(work);
    project = join(work, 'project');
    await installProject(project, [tarball, `kafkajs@${await repoVersion('kafkajs')}`]);
  });

  after(async function () {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it('ships compiled JavaScript and declarations, and none of the dev toolchain', async function () {
    const installed = join(project, 'node_modules');
    const names = await readdir(installed);
    for (const dev of ['tsx', 'typescript', 'mocha', 'fast-check', '@biomejs']) assert.ok(!names.includes(dev), `${dev} was installed`);
    const pkg = join(installed, 'sluice');
    assert.deepEqual((await readdir(pkg)).sort(), ['README.md', 'bin', 'dist', 'package.json']);
    assert.deepEqual((await readdir(join(pkg, 'dist'))).sort(), ['protocol', 'src', 'storage']);
    const index = await readdir(join(pkg, 'dist', 'src'));
    for (const file of ['index.js', 'index.d.ts', 'index.js.map']) assert.ok(index.includes(file), `dist/src/${file} missing`);
  });

  it('`npx sluice dev` serves kcat: a produced record is consumed back', async function () {
    if (!hasCommand('kcat')) missingTool(this, 'kcat', 'apt-get install -y kcat');
    const dataDir = join(work, 'npx-data');
    // Its own process group: npx runs the command under a shell, and the broker is a grandchild.
    const child = spawn('npx', ['--no-install', 'sluice', 'dev', '--port', '0', '--data-dir', dataDir], {
      cwd: project,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    try {
      const bootstrap = await readyAddress(child);
      await run('sh', ['-c', `printf 'k1:v1\\n' | kcat -b ${bootstrap} -P -t via-npx -K: -p 0`]);
      const { stdout } = await run('kcat', [
        '-b',
        bootstrap,
        '-C',
        '-t',
        'via-npx',
        '-p',
        '0',
        '-o',
        'beginning',
        '-c',
        '1',
        '-e',
        '-f',
        '%k=%s@%o',
      ]);
      assert.equal(stdout, 'k1=v1@0');
    } finally {
      await stop(child);
    }
  });

  it('a TypeScript file importing startBroker and sluice/retry type-checks and runs under plain node', async function () {
    await writeFile(join(project, 'consumer.ts'), CONSUMER_TS);
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
    await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: project });
    const expectAcknowledged = (stdout: string) => {
      const out = JSON.parse(stdout) as { bootstrap: string; errorCode: number; baseOffset: string; retry: string };
      assert.match(out.bootstrap, /^127\.0\.0\.1:\d+$/);
      assert.equal(out.retry, 'function', 'sluice/retry resolves to the retry library');
      assert.equal(out.errorCode, 0);
      assert.equal(out.baseOffset, '0');
    };
    // Node 20 runs what tsc emitted; Node 22 runs the .ts file itself (its type stripping
    // refuses files under node_modules: the package must be JavaScript for this to work).
    expectAcknowledged((await run(process.execPath, [join(project, 'out', 'consumer.js')], { cwd: project })).stdout);
    const node22 = node22Path();
    if (node22 === null) missingTool(this, 'Node 22', 'bash scripts/install-node22.sh');
    expectAcknowledged((await run(node22, [join(project, 'consumer.ts')], { cwd: project })).stdout);
  });
});

function readyAddress(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no ready line in 60 s\nstdout:\n${out}\nstderr:\n${err}`)), 60_000);
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = READY.exec(out);
      if (m === null) return;
      clearTimeout(timer);
      resolve(`${m[1]}:${m[2]}`);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before ready\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });
}

/** SIGTERM to npx's whole process group; done when every process holding its output is gone. */
async function stop(child: ChildProcess): Promise<void> {
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  if (child.pid !== undefined) {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }
  await closed;
}
