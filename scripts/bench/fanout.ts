// Many readers and one hot writer, with real clients (librdkafka through confluent-kafka-python,
// scripts/bench/fanout_client.py), on Sluice and on Apache Kafka (scripts/kafka-reference.sh)
// running side by side, in alternating rounds so that a busy machine skews both alike. Both
// brokers run scripts/reference/broker-settings.properties.
//   fan-out        a 6-partition topic of 1 KiB records holding 2 GiB, written once per broker,
//                  is read from the start by one consumer group, then by 8 groups at once (each
//                  one librdkafka consumer process, default settings, auto.offset.reset=earliest,
//                  all released together once every group has its assignment). Egress is bytes
//                  read over the time from the first record to the last; the 8 groups' is their
//                  sum over the time from the first record any of them read to the last. Target:
//                  report aggregate egress against a single group's (8x is the ceiling), beside
//                  Kafka's; broker CPU seconds (utime + stime from /proc) per GiB served.
//   hot partition  a 24-partition topic; 2 librdkafka producer processes (default settings,
//                  acks=all; Python drives more load through librdkafka than kafkajs does)
//                  send as fast as the broker takes them, 80 % of the records to partition 0 and
//                  the rest round robin over the other 23, while a light producer (linger.ms 0,
//                  acks=all) sends 1 KiB records to the cold partitions at a fixed rate and times
//                  each from produce() to its acknowledgement. Target: the p99 of produce to the
//                  cold partitions while the hot one is saturated, beside Kafka's; the hot
//                  partition's acknowledged throughput.
// Ratios come first (Sluice / Kafka, and aggregate / single group), then the absolute numbers,
// each as the median with the range over the rounds. The clients share the machine's cores with
// the broker, so the fan-out ceiling is also theirs: compare each broker's ratio to the other's.
// Run: node --import tsx scripts/bench/fanout.ts [--rounds=N] [--gib=N] [--hot-seconds=N]
//      [--producers=N] [--no-kafka]
// (--gib=0.1 --rounds=1 --hot-seconds=5 is a smoke run of about a minute.)
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { kafkaInstalled } from '../../compat/targets.ts';
import { PYTHON } from '../../test/cluster/clients.ts';
import { REPO } from '../../test/helpers/sluice-cli.ts';
import { cpuSeconds, spread } from './measure.ts';
import { type Broker, lastJson, run as runCommand, startKafka, startSluice } from './side-by-side.ts';

const CLIENT = join(REPO, 'scripts/bench/fanout_client.py');
/** Writes the fan-out topic: the same producer as the consume bench's. */
const FILLER = join(REPO, 'scripts/bench/librdkafka_client.py');
const MIB = 1024 * 1024;
const GIB = 1024 * MIB;
const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number =>
  Number(argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const ROUNDS = option('rounds', 3);
const RECORD_BYTES = 1024;

const FANOUT_TOPIC = 'fanout';
const FANOUT_PARTITIONS = 6;
const FANOUT_GROUPS = 8;
const FANOUT_RECORDS = Math.round((option('gib', 2) * GIB) / RECORD_BYTES);

const HOT_TOPIC = 'hot-partition';
const HOT_PARTITIONS = 24;
const HOT_SHARE = 0.8;
const HOT_PRODUCERS = option('producers', 2);
const HOT_WARMUP_S = 3;
const HOT_MEASURE_S = option('hot-seconds', 10);
const PROBE_RATE_PER_S = 200;

/** Bounds every client process, whatever the broker does. */
const CLIENT_TIMEOUT_MS = 15 * 60_000;

interface FanoutRound {
  singleMibPerS: number;
  aggregateMibPerS: number;
  singleCpuSecondsPerGiB: number;
  aggregateCpuSecondsPerGiB: number;
}

interface HotRound {
  hotMibPerS: number;
  coldMibPerS: number;
  probeP50Ms: number;
  probeP99Ms: number;
  probeMaxMs: number;
  cpuSecondsPerGiB: number;
}

interface ConsumeResult {
  records: number;
  bytes: number;
  first: number;
  last: number;
}

interface HotProduceResult {
  hot_bytes: number;
  cold_bytes: number;
  all_bytes: number;
  seconds: number;
  errors: number;
  first_errors: string[];
}

interface ProbeResult {
  samples: number;
  measured: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  errors: number;
  first_errors: string[];
}

const run = (command: string, args: string[]): Promise<string> => runCommand(command, args, { timeoutMs: CLIENT_TIMEOUT_MS });

/** A client process that prints "ready", starts work on a line on stdin and ends with a JSON line. */
interface Client {
  child: ChildProcess;
  ready: Promise<void>;
  result: Promise<string>;
}

function startClient(args: string[]): Client {
  const child = spawn(PYTHON, ['-B', CLIENT, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  // A client that died is reported by its exit, not by the write of its start line.
  child.stdin!.on('error', () => undefined);
  child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-8000);
  });
  let readied: () => void = () => undefined;
  const ready = new Promise<void>((done) => {
    readied = done;
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line === 'ready') readied();
    else out += `${line}\n`;
  });
  const result = new Promise<string>((done, fail) => {
    child.once('exit', (code, signal) =>
      code === 0 ? done(out) : fail(new Error(`${args.slice(0, 3).join(' ')}: exited with ${code ?? signal}\n${err}`)),
    );
  });
  // A client that fails before it is ready fails the wait for readiness too.
  const readyOrFailed = Promise.race([ready, result.then(() => Promise.reject(new Error(`${args[0]} exited before ready\n${err}`)))]);
  readyOrFailed.catch(() => undefined);
  result.catch(() => undefined);
  return { child, ready: readyOrFailed, result };
}

/**
 * Starts the clients, releases them together once all are ready and returns their JSON results
 * with the broker CPU seconds used from the release to the last exit.
 */
async function together<T>(broker: Broker, commands: string[][]): Promise<{ results: T[]; cpuSeconds: number }> {
  const clients = commands.map((args) => startClient([args[0]!, broker.bootstrap, ...args.slice(1)]));
  const timer = setTimeout(() => {
    for (const c of clients) c.child.kill('SIGKILL');
  }, CLIENT_TIMEOUT_MS);
  try {
    await Promise.all(clients.map((c) => c.ready));
    const cpuBefore = cpuSeconds(broker.pid);
    for (const c of clients) c.child.stdin!.end('go\n');
    const outs = await Promise.all(clients.map((c) => c.result));
    return { results: outs.map((o) => lastJson<T>(o)), cpuSeconds: cpuSeconds(broker.pid) - cpuBefore };
  } finally {
    clearTimeout(timer);
    for (const c of clients) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  }
}

async function fanoutRound(broker: Broker, round: number): Promise<FanoutRound> {
  const consume = (group: string): string[] => ['group-consume', FANOUT_TOPIC, group, String(FANOUT_RECORDS)];
  const single = await together<ConsumeResult>(broker, [consume(`fanout-${round}-single`)]);
  const all = await together<ConsumeResult>(
    broker,
    Array.from({ length: FANOUT_GROUPS }, (_, g) => consume(`fanout-${round}-${g}`)),
  );
  const s = single.results[0]!;
  const allBytes = all.results.reduce((sum, r) => sum + r.bytes, 0);
  const allSeconds = Math.max(...all.results.map((r) => r.last)) - Math.min(...all.results.map((r) => r.first));
  return {
    singleMibPerS: s.bytes / MIB / (s.last - s.first),
    aggregateMibPerS: allBytes / MIB / allSeconds,
    singleCpuSecondsPerGiB: single.cpuSeconds / (s.bytes / GIB),
    aggregateCpuSecondsPerGiB: all.cpuSeconds / (allBytes / GIB),
  };
}

async function hotRound(broker: Broker): Promise<HotRound> {
  const timing = [String(HOT_WARMUP_S), String(HOT_MEASURE_S)];
  const shape = [HOT_TOPIC, String(HOT_PARTITIONS), String(RECORD_BYTES)];
  const hot = ['hot-produce', ...shape, String(HOT_SHARE), ...timing];
  const probe = ['probe', ...shape, String(PROBE_RATE_PER_S), ...timing];
  const { results, cpuSeconds: cpuUsed } = await together<HotProduceResult | ProbeResult>(broker, [
    probe,
    ...Array<string[]>(HOT_PRODUCERS).fill(hot),
  ]);
  const p = results[0] as ProbeResult;
  const producers = results.slice(1) as HotProduceResult[];
  const errors = [p, ...producers].filter((r) => r.errors > 0);
  for (const r of errors) process.stderr.write(`  ${broker.name}: ${r.errors} produce errors, first ${JSON.stringify(r.first_errors)}\n`);
  if (p.samples < p.measured)
    process.stderr.write(`  ${broker.name}: ${p.measured - p.samples} of ${p.measured} probe records unacknowledged\n`);
  const sum = (f: (r: HotProduceResult) => number): number => producers.reduce((total, r) => total + f(r), 0);
  return {
    hotMibPerS: sum((r) => r.hot_bytes) / MIB / HOT_MEASURE_S,
    coldMibPerS: sum((r) => r.cold_bytes) / MIB / HOT_MEASURE_S,
    probeP50Ms: p.p50_ms,
    probeP99Ms: p.p99_ms,
    probeMaxMs: p.max_ms,
    cpuSecondsPerGiB: cpuUsed / (sum((r) => r.all_bytes) / GIB),
  };
}

async function prepare(broker: Broker): Promise<void> {
  const wrote = lastJson<{ bytes: number; seconds: number }>(
    await run(PYTHON, [
      '-B',
      FILLER,
      'produce',
      broker.bootstrap,
      FANOUT_TOPIC,
      String(FANOUT_PARTITIONS),
      String(FANOUT_RECORDS),
      String(RECORD_BYTES),
    ]),
  );
  process.stderr.write(`  ${broker.name}: wrote ${(wrote.bytes / MIB).toFixed(0)} MiB in ${wrote.seconds.toFixed(1)} s\n`);
  await run(PYTHON, ['-B', CLIENT, 'create', broker.bootstrap, HOT_TOPIC, String(HOT_PARTITIONS)]);
}

const of = <R extends Record<K, number>, K extends keyof R>(rs: R[], key: K): number[] => rs.map((r) => r[key]);
const versus = <R extends Record<K, number>, K extends keyof R>(a: R[], b: R[], key: K): number[] => a.map((r, i) => r[key] / b[i]![key]);

function report(fanout: Map<string, FanoutRound[]>, hot: Map<string, HotRound[]>): string {
  const gib = (FANOUT_RECORDS * RECORD_BYTES) / GIB;
  const row = (label: string, xs: number[], digits: number, unit = ''): string => `  ${label.padEnd(40)} ${spread(xs, digits)}${unit}`;
  const lines = [
    '',
    `== fan-out: ${FANOUT_GROUPS} consumer groups at once vs 1, librdkafka default consumer settings; ` +
      `${gib.toFixed(2)} GiB in ${FANOUT_PARTITIONS} partitions of ${RECORD_BYTES} B records; ${ROUNDS} rounds`,
  ];
  for (const [name, rs] of fanout) {
    const gain = rs.map((r) => r.aggregateMibPerS / r.singleMibPerS);
    lines.push(row(`aggregate / single group, ${name}`, gain, 2, ` (ceiling ${FANOUT_GROUPS})`));
  }
  const sf = fanout.get('Sluice')!;
  const kf = fanout.get('Kafka');
  if (kf !== undefined) {
    lines.push(
      row('aggregate egress, Sluice / Kafka', versus(sf, kf, 'aggregateMibPerS'), 2),
      row('single-group egress, Sluice / Kafka', versus(sf, kf, 'singleMibPerS'), 2),
      row(`CPU per GiB served (${FANOUT_GROUPS}), Sluice / Kafka`, versus(sf, kf, 'aggregateCpuSecondsPerGiB'), 2),
    );
  }
  lines.push(
    '',
    `== hot partition: ${HOT_PARTITIONS} partitions, ${HOT_PRODUCERS} librdkafka producers (acks=all) as fast as the broker takes, ` +
      `${HOT_SHARE * 100} % to one; ${PROBE_RATE_PER_S}/s probe (linger.ms 0, acks=all) to the cold ones; ${HOT_MEASURE_S} s; ${ROUNDS} rounds`,
  );
  const sh = hot.get('Sluice')!;
  const kh = hot.get('Kafka');
  if (kh !== undefined) {
    lines.push(
      row('cold produce p99, Sluice / Kafka', versus(sh, kh, 'probeP99Ms'), 2),
      row('cold produce p50, Sluice / Kafka', versus(sh, kh, 'probeP50Ms'), 2),
      row('hot partition throughput, Sluice / Kafka', versus(sh, kh, 'hotMibPerS'), 2),
    );
  }
  lines.push('', '== absolute');
  for (const [name, rs] of fanout) {
    const hs = hot.get(name)!;
    lines.push(
      `  ${name}`,
      row(`  fan-out aggregate egress (${FANOUT_GROUPS} groups)`, of(rs, 'aggregateMibPerS'), 0, ' MiB/s'),
      row('  single-group egress', of(rs, 'singleMibPerS'), 0, ' MiB/s'),
      row(`  broker CPU per GiB served (${FANOUT_GROUPS})`, of(rs, 'aggregateCpuSecondsPerGiB'), 2, ' s'),
      row('  broker CPU per GiB served (1)', of(rs, 'singleCpuSecondsPerGiB'), 2, ' s'),
      row('  cold produce p50', of(hs, 'probeP50Ms'), 2, ' ms'),
      row('  cold produce p99', of(hs, 'probeP99Ms'), 2, ' ms'),
      row('  cold produce max', of(hs, 'probeMaxMs'), 1, ' ms'),
      row('  hot partition throughput', of(hs, 'hotMibPerS'), 0, ' MiB/s'),
      row('  cold partitions (same producers)', of(hs, 'coldMibPerS'), 0, ' MiB/s'),
      row('  broker CPU per GiB produced', of(hs, 'cpuSecondsPerGiB'), 2, ' s'),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Names the broker and the step in a failure. */
const on = <T>(broker: Broker, step: string, work: Promise<T>): Promise<T> =>
  work.catch((err: Error) => {
    throw new Error(`${broker.name}, ${step}: ${err.message}`);
  });

async function main(): Promise<void> {
  const brokers: Broker[] = [];
  const stopAll = async (): Promise<void> => {
    for (const broker of brokers.splice(0)) await broker.stop();
  };
  const interrupted = (): void => {
    void stopAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const fanout = new Map<string, FanoutRound[]>();
  const hot = new Map<string, HotRound[]>();
  try {
    brokers.push(await startSluice('fanout'));
    if (!argv.includes('--no-kafka') && kafkaInstalled()) brokers.push(await startKafka('fanout'));
    else process.stderr.write('fanout: Apache Kafka is not installed (scripts/install-test-clients.sh): Sluice alone\n');
    const order = (round: number): Broker[] => (round % 2 === 0 ? brokers : [...brokers].reverse());
    for (const broker of brokers) {
      fanout.set(broker.name, []);
      hot.set(broker.name, []);
      await on(broker, 'writing the topics', prepare(broker));
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const broker of order(round)) {
        const r = await on(broker, `fan-out round ${round + 1}`, fanoutRound(broker, round));
        fanout.get(broker.name)!.push(r);
        process.stderr.write(
          `  fan-out round ${round + 1} ${broker.name}: ${FANOUT_GROUPS} groups ${r.aggregateMibPerS.toFixed(0)} MiB/s ` +
            `(${r.aggregateCpuSecondsPerGiB.toFixed(2)} CPU s/GiB), 1 group ${r.singleMibPerS.toFixed(0)} MiB/s\n`,
        );
      }
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const broker of order(round)) {
        const r = await on(broker, `hot round ${round + 1}`, hotRound(broker));
        hot.get(broker.name)!.push(r);
        process.stderr.write(
          `  hot round ${round + 1} ${broker.name}: hot ${r.hotMibPerS.toFixed(0)} MiB/s, cold probe ` +
            `p50 ${r.probeP50Ms.toFixed(2)} ms p99 ${r.probeP99Ms.toFixed(2)} ms\n`,
        );
      }
    }
  } catch (err) {
    for (const broker of brokers) process.stderr.write(`\n== ${broker.name} log, last lines\n${await broker.logTail()}\n`);
    throw err;
  } finally {
    await stopAll();
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  process.stdout.write(report(fanout, hot));
}

await main();
