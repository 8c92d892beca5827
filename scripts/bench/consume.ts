// Consuming with a real client: librdkafka with its default consumer settings reads a freshly
// written topic (6 partitions, 1 KiB records, 200 MiB) from the start, from Sluice and from
// Apache Kafka (scripts/kafka-reference.sh) running side by side, in alternating rounds so that
// a busy machine skews both alike. Two librdkafka clients each round: kcat (C, librdkafka's
// simple consumer) and confluent-kafka-python (its high-level consumer, with assigned
// partitions). Figures: Sluice's throughput, first record to last, as a ratio to Kafka's
// (target >= 1.2; kcat's whole run, start to exit, beside it) and broker CPU seconds per GiB
// read (utime + stime of the broker process, every thread, from /proc), then the absolute
// numbers with their spread, the share of the broker's CPU time spent in the kernel (page-cache
// reads and socket writes) and how many cores the broker and the consumer kept busy: their CPU
// seconds per second of delivery, the broker's over the consumer's whole run and kcat's too
// (the Python client's from its first record to its last), so an upper bound. kcat keeps one
// fetch in flight per broker: its rate is that of fetch round trips in series, on the cores the
// broker and kcat share.
// Our own Fetch bench (broker.ts) asks for 4 MiB per partition with one request per partition
// in flight; librdkafka asks for 1 MiB per partition in one request per broker and decodes
// every record, which is what consumers of a broker meet.
// Run: node --import tsx scripts/bench/consume.ts [--rounds=N] [--mib=N] [--no-kafka]
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaInstalled } from '../../compat/targets.ts';
import { PYTHON } from '../../test/cluster/clients.ts';
import { REPO, sluiceCommand } from '../../test/helpers/sluice-cli.ts';
import { cpuTimes, spread } from './measure.ts';

const CLIENT = join(REPO, 'scripts/bench/librdkafka_client.py');
const MIB = 1024 * 1024;
const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number =>
  Number(argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const ROUNDS = option('rounds', 7);
const RECORD_BYTES = 1024;
const PARTITIONS = 6;
const RECORDS = Math.round((option('mib', 200) * MIB) / RECORD_BYTES);
const TOPIC = 'consume-bench';
/** The share of the bytes between which kcat's delivery is timed. */
const DELIVERY_FROM = 0.02;
const DELIVERY_TO = 0.98;

interface Broker {
  name: string;
  bootstrap: string;
  pid: number;
  stop(): Promise<void>;
}

interface Round {
  /** First record to last (kcat: 2 % to 98 % of the bytes). */
  mibPerS: number;
  /** Start to exit (kcat only). */
  wholeRunMibPerS: number | null;
  cpuSecondsPerGiB: number;
  /** The share of that CPU time spent in the kernel (stime): the page-cache reads and socket writes. */
  kernelShare: number;
  /** Cores the broker and the consumer kept busy between them while it read (CPU seconds per second of delivery). */
  busyCores: number;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((done, fail) => {
    execFile(command, args, { env, maxBuffer: 16 * MIB }, (err, stdout, stderr) =>
      err ? fail(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stderr}`)) : done(stdout),
    );
  });
}

type Consumer = 'kcat' | 'confluent-kafka-python';
const CONSUMERS: readonly Consumer[] = ['kcat', 'confluent-kafka-python'];

/**
 * What a consumer read: `seconds` first record to last; `wholeRunSeconds` start to exit, where
 * timed; `cpuSeconds` the consumer's own CPU time (every thread): kcat's over its whole run,
 * the Python client's from its first record to its last.
 */
interface Read {
  bytes: number;
  seconds: number;
  wholeRunSeconds?: number;
  cpuSeconds: number;
}

/**
 * kcat's consumer (librdkafka's defaults) from the start of every partition to its end. It
 * prints each record's value length (%S), not the value: a pipe taking every value into this
 * process moved about 230 MiB/s, less than either broker serves, and would have measured the
 * pipe. Timed two ways:
 * - delivery: from the moment 2 % of the bytes had arrived to the moment 98 % had, the rate
 *   the broker feeds the consumer at, as the Python client times first record to last. The
 *   ends are left out because kcat's stdout flushes in blocks of about 1,600 records and its
 *   last block only at exit;
 * - whole run: start to exit. That adds kcat's start and, at the end, one fetch for each
 *   partition at its end that the broker holds for fetch.wait.max.ms (500 ms) before kcat
 *   sees end-of-partition and exits: a constant of about 0.5 s on either broker, more than
 *   twice the delivery of 200 MiB.
 */
function kcatConsume(broker: Broker): Promise<Read> {
  const total = RECORDS * RECORD_BYTES;
  return new Promise((done, fail) => {
    const started = process.hrtime.bigint();
    const secondsSinceStart = (): number => Number(process.hrtime.bigint() - started) / 1e9;
    // Through a shell whose `times` prints the CPU time of its children (kcat) when it exits.
    const kcat = ['-C', '-b', broker.bootstrap, '-t', TOPIC, '-o', 'beginning', '-e', '-q', '-f', '%S\\n'];
    const child = spawn('sh', ['-c', 'kcat "$@"; status=$?; times >&2; exit $status', 'sh', ...kcat], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    let bytes = 0;
    let partial = '';
    let from: number | null = null;
    let to: number | null = null;
    child.stdout.on('data', (d: Buffer) => {
      const lines = (partial + d.toString('latin1')).split('\n');
      partial = lines.pop()!;
      for (const line of lines) bytes += Number(line);
      if (from === null && bytes >= DELIVERY_FROM * total) from = secondsSinceStart();
      if (to === null && bytes >= DELIVERY_TO * total) to = secondsSinceStart();
    });
    child.once('error', fail);
    child.once('close', (code) => {
      const seconds = secondsSinceStart();
      const cpuSeconds = childrenCpuSeconds(stderr);
      if (code !== 0) fail(new Error(`kcat exited with ${code}\n${stderr}`));
      else if (bytes !== total) fail(new Error(`kcat read ${bytes} bytes of ${total}`));
      else if (from === null || to === null || to <= from) fail(new Error('kcat delivered too few blocks to time its delivery'));
      else if (cpuSeconds === null) fail(new Error(`no CPU times for kcat in:\n${stderr}`));
      else done({ bytes, seconds: (to - from) / (DELIVERY_TO - DELIVERY_FROM), wholeRunSeconds: seconds, cpuSeconds });
    });
  });
}

/** The user + system seconds of the shell's children from the last line of `times` (`0m0.23s 0m0.15s`). */
function childrenCpuSeconds(timesOutput: string): number | null {
  const last = timesOutput.trim().split('\n').pop() ?? '';
  const m = /^(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s$/.exec(last.trim());
  return m === null ? null : Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]);
}

/** Runs the Python client; its last line of output is one JSON object. */
async function client(args: string[]): Promise<unknown> {
  const out = await run(PYTHON, ['-B', CLIENT, ...args]);
  return JSON.parse(out.trim().split('\n').pop()!);
}

function produce(broker: Broker): Promise<{ bytes: number; seconds: number }> {
  return client(['produce', broker.bootstrap, TOPIC, String(PARTITIONS), String(RECORDS), String(RECORD_BYTES)]) as Promise<{
    bytes: number;
    seconds: number;
  }>;
}

function pythonConsume(broker: Broker): Promise<Read> {
  return client(['consume', broker.bootstrap, TOPIC, String(PARTITIONS), String(RECORDS)]) as Promise<Read>;
}

function waitForListening(child: ChildProcess): Promise<string> {
  return new Promise((done, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`Sluice did not listen within 60 s\n${out}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on [A-Z_]+:\/\/([^:,\s]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        done(m[1]!);
      }
    });
    child.once('exit', (code) => fail(new Error(`Sluice exited with ${code}\n${out}`)));
  });
}

async function startSluice(): Promise<Broker> {
  const dataDir = await mkdtemp(join(tmpdir(), 'consume-bench-sluice-'));
  const cmd = sluiceCommand(['dev', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--override', 'log.level=warn']);
  const child = spawn(cmd.command, cmd.args, { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  const bootstrap = await waitForListening(child);
  return {
    name: 'Sluice',
    bootstrap,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((done) => child.once('exit', done));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function startKafka(): Promise<Broker> {
  const state = await mkdtemp(join(tmpdir(), 'consume-bench-kafka-'));
  const env = { ...process.env, KAFKA_REFERENCE_STATE: state };
  const script = join(REPO, 'scripts/kafka-reference.sh');
  const bootstrap = (await run('bash', [script, 'start'], env)).trim().split('\n').pop()!;
  return {
    name: 'Kafka',
    bootstrap,
    pid: Number((await readFile(join(state, 'pid'), 'utf8')).trim()),
    async stop() {
      await run('bash', [script, 'stop'], env).catch(() => undefined);
      await rm(state, { recursive: true, force: true });
    },
  };
}

async function consumeRound(broker: Broker, consumer: Consumer): Promise<Round> {
  const before = cpuTimes(broker.pid);
  const read = consumer === 'kcat' ? await kcatConsume(broker) : await pythonConsume(broker);
  const after = cpuTimes(broker.pid);
  const user = after.userSeconds - before.userSeconds;
  const system = after.systemSeconds - before.systemSeconds;
  return {
    mibPerS: read.bytes / MIB / read.seconds,
    wholeRunMibPerS: read.wholeRunSeconds === undefined ? null : read.bytes / MIB / read.wholeRunSeconds,
    cpuSecondsPerGiB: (user + system) / (read.bytes / (1024 * MIB)),
    kernelShare: user + system > 0 ? system / (user + system) : 0,
    busyCores: (user + system + read.cpuSeconds) / read.seconds,
  };
}

async function main(): Promise<void> {
  const brokers: Broker[] = [await startSluice()];
  if (!argv.includes('--no-kafka') && kafkaInstalled()) brokers.push(await startKafka());
  else process.stderr.write('consume: Apache Kafka is not installed (scripts/install-test-clients.sh): Sluice alone\n');
  const key = (broker: Broker, consumer: Consumer): string => `${broker.name} ${consumer}`;
  const rounds = new Map<string, Round[]>(brokers.flatMap((b) => CONSUMERS.map((c) => [key(b, c), []])));
  try {
    for (const broker of brokers) {
      const wrote = await produce(broker);
      process.stderr.write(`  ${broker.name}: wrote ${(wrote.bytes / MIB).toFixed(0)} MiB in ${wrote.seconds.toFixed(1)} s\n`);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const consumer of CONSUMERS) {
        for (const broker of round % 2 === 0 ? brokers : [...brokers].reverse()) {
          const r = await consumeRound(broker, consumer);
          rounds.get(key(broker, consumer))!.push(r);
          process.stderr.write(
            `  round ${round + 1} ${key(broker, consumer)}: ${r.mibPerS.toFixed(0)} MiB/s` +
              (r.wholeRunMibPerS === null ? '' : ` (whole run ${r.wholeRunMibPerS.toFixed(0)} MiB/s)`) +
              `, ${r.cpuSecondsPerGiB.toFixed(2)} CPU s/GiB (${(r.kernelShare * 100).toFixed(0)} % in the kernel), ` +
              `${r.busyCores.toFixed(2)} cores busy\n`,
          );
        }
      }
    }
  } finally {
    for (const broker of brokers) await broker.stop();
  }
  const lines = [
    '',
    `== librdkafka consumers, default settings: ${PARTITIONS} partitions, ${RECORDS} records of ${RECORD_BYTES} B, ${ROUNDS} rounds`,
  ];
  for (const consumer of CONSUMERS) {
    const sluice = rounds.get(`Sluice ${consumer}`)!;
    const kafka = rounds.get(`Kafka ${consumer}`);
    if (kafka === undefined) continue;
    const ratios = sluice.map((s, i) => s.mibPerS / kafka[i]!.mibPerS);
    const cpuRatios = sluice.map((s, i) => s.cpuSecondsPerGiB / kafka[i]!.cpuSecondsPerGiB);
    lines.push(`  ${consumer}: throughput, Sluice / Kafka        ${spread(ratios, 2)} (target >= 1.2)`);
    if (consumer === 'kcat') {
      const wholeRun = sluice.map((s, i) => s.wholeRunMibPerS! / kafka[i]!.wholeRunMibPerS!);
      lines.push(`  ${consumer}: whole run, Sluice / Kafka         ${spread(wholeRun, 2)}`);
    }
    lines.push(`  ${consumer}: broker CPU per GiB, Sluice / Kafka ${spread(cpuRatios, 2)} (target < 1.0)`);
  }
  lines.push('', '== absolute');
  for (const [name, rs] of rounds) {
    lines.push(
      `  ${name}: ${spread(
        rs.map((r) => r.mibPerS),
        0,
      )} MiB/s${
        rs[0]!.wholeRunMibPerS === null
          ? ''
          : ` (whole run ${spread(
              rs.map((r) => r.wholeRunMibPerS!),
              0,
            )})`
      }; broker CPU ${spread(
        rs.map((r) => r.cpuSecondsPerGiB),
        2,
      )} s per GiB, ${spread(
        rs.map((r) => r.kernelShare * 100),
        0,
      )} % of it in the kernel; broker and consumer together ${spread(
        rs.map((r) => r.busyCores),
        2,
      )} of ${availableParallelism()} cores busy while it read`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n');
}

await main();
