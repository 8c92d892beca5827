/**
 * A container engine for the Testcontainers tests. With DOCKER_HOST set, that engine; else
 * this process runs `podman system service` on a unix socket of its own for as long as some
 * test holds the engine (scripts/install-container-engine.sh installs and configures podman).
 * Locally a missing podman is a loud SKIP; under CI=true a failure.
 *
 * Testcontainers reads its environment once, at its first call, and keeps the client: the
 * socket path is the same for every start in one process, so a later suite that starts the
 * service again reaches it through the same cached client.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { request } from 'node:http';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { hasCommand, missingTool } from './runtimes.ts';
import { REPO } from './sluice-cli.ts';

const run = promisify(execFile);
const SOCKET = join(tmpdir(), `sluice-podman-${process.pid}.sock`);
const SERVICE_START_TIMEOUT_MS = 30_000;
const SERVICE_STOP_TIMEOUT_MS = 10_000;
/** A first build compiles zstd-napi's binding while installing the package: minutes, not seconds. */
const IMAGE_BUILD_TIMEOUT_MS = 15 * 60_000;

/**
 * Labels for every container a suite starts. Without Ryuk nothing removes a container whose
 * start() failed half-way (it has no started object to stop): release() removes them by label.
 */
export const TEST_CONTAINER_LABELS: Readonly<Record<string, string>> = { 'org.sluice.test-process': String(process.pid) };

export interface ContainerEngine {
  /** `unix:///...` as DOCKER_HOST gives it to Testcontainers. */
  readonly dockerHost: string;
  release(): Promise<void>;
}

let service: ChildProcess | null = null;
let holders = 0;

/** The engine for one suite: call release() in its after hook. */
export async function acquireContainerEngine(ctx: Mocha.Context): Promise<ContainerEngine> {
  // Ryuk, Testcontainers' reaper, is an image on Docker Hub, which these machines cannot
  // reach: the suites stop their own containers. Mapped ports are on the host's loopback.
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
  process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';
  if (process.env.DOCKER_HOST !== undefined && service === null) {
    return { dockerHost: process.env.DOCKER_HOST, release: removeTestContainers };
  }
  // Docker's default socket, which Testcontainers finds by itself.
  if (service === null && existsSync('/var/run/docker.sock'))
    return { dockerHost: 'unix:///var/run/docker.sock', release: removeTestContainers };
  if (!hasCommand('podman')) missingTool(ctx, 'podman', 'bash scripts/install-container-engine.sh');
  if (service === null) await startService();
  holders++;
  let released = false;
  return {
    dockerHost: `unix://${SOCKET}`,
    async release() {
      if (released) return;
      released = true;
      await removeTestContainers();
      if (--holders === 0) await stopService();
    },
  };
}

async function startService(): Promise<void> {
  rmSync(SOCKET, { force: true });
  const child = spawn('podman', ['system', 'service', '--time=0', `unix://${SOCKET}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let exited: string | null = null;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  service = child;
  const deadline = Date.now() + SERVICE_START_TIMEOUT_MS;
  while (!(await ping())) {
    if (exited !== null || Date.now() > deadline) {
      await stopService();
      throw new Error(
        `podman system service on ${SOCKET} ${exited ?? `did not answer /_ping within ${SERVICE_START_TIMEOUT_MS} ms`}: ${stderr.trim()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  process.env.DOCKER_HOST = `unix://${SOCKET}`;
}

async function stopService(): Promise<void> {
  const child = service;
  service = null;
  if (process.env.DOCKER_HOST === `unix://${SOCKET}`) delete process.env.DOCKER_HOST;
  if (child !== null && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), SERVICE_STOP_TIMEOUT_MS);
    });
    if ((await Promise.race([exited, late])) === 'late') {
      child.kill('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
  }
  child?.stderr?.destroy();
  rmSync(SOCKET, { force: true });
}

/** GET /_ping on the socket: "OK" once the service serves the Docker API. */
function ping(): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: SOCKET, path: '/_ping', method: 'GET', timeout: 1000, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(false));
    req.end();
  });
}

/** Removes what is left of this process's containers (reported, not thrown, when it cannot). */
async function removeTestContainers(): Promise<void> {
  const [label, value] = Object.entries(TEST_CONTAINER_LABELS)[0]!;
  try {
    const ids = (await containerCli(['ps', '--all', '--quiet', '--filter', `label=${label}=${value}`]))
      .split('\n')
      .filter((id) => id !== '');
    if (ids.length > 0) await containerCli(['rm', '--force', ...ids]);
  } catch (err) {
    console.error(`      could not remove the test containers labelled ${label}=${value}: ${(err as Error).message}`);
  }
}

/**
 * Runs the engine's CLI (podman, else docker; as scripts/container/build-image.sh chooses) for
 * what a test checks beside Testcontainers, and returns its stdout.
 */
export async function containerCli(args: readonly string[], timeoutMs = 60_000): Promise<string> {
  const cli = process.env.SLUICE_CONTAINER_ENGINE ?? (hasCommand('podman') ? 'podman' : 'docker');
  const { stdout } = await run(cli, [...args], { timeout: timeoutMs, maxBuffer: 16 << 20 });
  return stdout;
}

let image: Promise<string> | null = null;

/**
 * Sluice's image, built by scripts/container/build-image.sh once per process (the script
 * itself keeps an image built from the same packed tarball). Resolves to the image name.
 */
export function sluiceImage(timeoutMs = IMAGE_BUILD_TIMEOUT_MS): Promise<string> {
  image ??= buildImage(timeoutMs).catch((err: unknown) => {
    image = null;
    throw err;
  });
  return image;
}

function buildImage(timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // Its own process group, so that a timeout stops npm and podman under it too.
    const child = spawn('bash', [join(REPO, 'scripts', 'container', 'build-image.sh')], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-20_000);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      process.kill(-child.pid!, 'SIGKILL');
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      if (code === 0) {
        if (stderr.trim() !== '') process.stderr.write(`      ${stderr.trim()}\n`);
        resolve(stdout.trim().split('\n').at(-1)!);
      } else {
        const why = timedOut ? `did not finish within ${timeoutMs} ms` : `failed (exit ${code})`;
        reject(new Error(`scripts/container/build-image.sh ${why}: ${stderr.trim()}`));
      }
    });
  });
}
