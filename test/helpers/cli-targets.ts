/**
 * Runs a CLI scenario against both brokers the client-side commands must work with: a Sluice
 * broker process and the Apache Kafka reference broker (scripts/kafka-reference.sh). Outside
 * CI a missing Kafka install skips loudly; under CI=true it fails.
 *
 *   againstEachBroker('sluice topics', (bootstrap) => { it('...', async () => { ... bootstrap() ... }); });
 *   const io = capture(); await runTopicsCommand([...], io); io.stdout();
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Output } from '../../src/cli/output.ts';
import { spawnBroker, type BrokerProcess } from './broker-process.ts';
import { REPO } from './sluice-cli.ts';

export interface CapturedOutput extends Output {
  stdout(): string;
  stderr(): string;
}

export function capture(): CapturedOutput {
  let out = '';
  let err = '';
  return {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    stdout: () => out,
    stderr: () => err,
  };
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command entry point with captured output. */
export async function runCaptured(run: (io: Output) => Promise<number>): Promise<CommandResult> {
  const io = capture();
  const code = await run(io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

function kafkaInstalled(): boolean {
  const cache = join(REPO, '.cache');
  return existsSync(cache) && readdirSync(cache).some((d) => d.startsWith('kafka-') && existsSync(join(cache, d, 'libs', '.complete')));
}

function referenceScript(action: 'start' | 'stop', stateDir: string): Promise<string> {
  return new Promise((resolveRun, reject) => {
    execFile(
      'bash',
      [join(REPO, 'scripts/kafka-reference.sh'), action],
      { env: { ...process.env, KAFKA_REFERENCE_STATE: stateDir } },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolveRun(stdout.trim())),
    );
  });
}

/** Defines `scenario` twice: against a spawned Sluice broker and against Apache Kafka. */
export function againstEachBroker(title: string, scenario: (bootstrap: () => string) => void): void {
  describe(`${title} against Sluice`, function () {
    this.timeout(60_000);
    let broker: BrokerProcess | undefined;

    before(async () => {
      broker = await spawnBroker({ overrides: { 'group.initial.rebalance.delay.ms': 0, 'offsets.topic.num.partitions': 5 } });
    });

    after(async () => {
      await broker?.cleanup();
    });

    scenario(() => broker!.bootstrap);
  });

  describe(`${title} against the Apache Kafka reference broker`, function () {
    this.timeout(60_000);
    let stateDir: string | undefined;
    let bootstrap = '';

    before(async function () {
      if (!kafkaInstalled()) {
        if (process.env.CI === 'true') {
          throw new Error('the Apache Kafka reference broker is not installed (scripts/install-test-clients.sh)');
        }
        console.error(`*** SKIP: ${title} against Kafka: the reference broker is not installed (bash scripts/install-test-clients.sh) ***`);
        this.skip();
      }
      this.timeout(180_000);
      stateDir = await mkdtemp(join(tmpdir(), 'sluice-cli-kafka-'));
      bootstrap = (await referenceScript('start', stateDir)).split('\n').pop()!;
    });

    after(async function () {
      this.timeout(60_000);
      if (stateDir === undefined) return;
      await referenceScript('stop', stateDir).catch(() => undefined);
      await rm(stateDir, { recursive: true, force: true });
    });

    scenario(() => bootstrap);
  });
}
