// Transactions with a real client: librdkafka (confluent-kafka-python, scripts/bench/librdkafka_client.py)
// writes 1 KiB records to a 6-partition topic from a transactional producer committing every
// 100 or every 1000 records, and from an idempotent producer (acks=all, no transactions) as the
// ceiling, on Sluice and on Apache Kafka (scripts/kafka-reference.sh) side by side, in alternating
// rounds so that a busy machine skews both alike; then librdkafka's default consumer
// (read_committed) reads the topic of 1000-record transactions back from the start.
// Figures: Sluice / Kafka for transactional produce (records/s) at each transaction size and for
// the read_committed consume (MiB/s); each broker's transactional / idempotent throughput (what
// transactions cost on it); then the absolute numbers. Each as the median with the range over
// the rounds. The client shares the machine's cores with the broker.
// Run: node --import tsx scripts/bench/transactions.ts [--rounds=N] [--records=N] [--no-kafka]
import { join } from 'node:path';
import { kafkaInstalled } from '../../compat/targets.ts';
import { PYTHON } from '../../test/cluster/clients.ts';
import { REPO } from '../../test/helpers/sluice-cli.ts';
import { spread } from './measure.ts';
import { type Broker, lastJson, run, startKafka, startSluice } from './side-by-side.ts';

const MIB = 1024 * 1024;
const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number =>
  Number(argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const ROUNDS = option('rounds', 3);
const RECORDS = option('records', 50_000);
const RECORD_BYTES = 1024;
const PARTITIONS = 6;
const CLIENT_TIMEOUT_MS = 10 * 60_000;
const CLIENT = join(REPO, 'scripts/bench/librdkafka_client.py');

/** Records per transaction; 0: an idempotent producer without transactions (the ceiling). */
const MODES = [0, 1000, 100] as const;
type Mode = (typeof MODES)[number];
const label = (mode: Mode): string => (mode === 0 ? 'idempotent, no transactions' : `transactions of ${mode}`);

interface Produced {
  records: number;
  bytes: number;
  transactions: number;
  seconds: number;
}

async function produce(broker: Broker, topic: string, mode: Mode): Promise<Produced> {
  const args = [
    '-B',
    CLIENT,
    'produce-eos',
    broker.bootstrap,
    topic,
    String(PARTITIONS),
    String(RECORDS),
    String(RECORD_BYTES),
    String(mode),
  ];
  return lastJson<Produced>(await run(PYTHON, args, { timeoutMs: CLIENT_TIMEOUT_MS }));
}

async function consume(broker: Broker, topic: string): Promise<{ bytes: number; seconds: number }> {
  const args = ['-B', CLIENT, 'consume', broker.bootstrap, topic, String(PARTITIONS), String(RECORDS)];
  return lastJson(await run(PYTHON, args, { timeoutMs: CLIENT_TIMEOUT_MS }));
}

async function main(): Promise<void> {
  const brokers: Broker[] = [await startSluice('transactions')];
  if (!argv.includes('--no-kafka') && kafkaInstalled()) brokers.push(await startKafka('transactions'));
  else process.stderr.write('transactions: Apache Kafka is not installed (scripts/install-test-clients.sh): Sluice alone\n');
  /** records/s by broker and mode; MiB/s of the read_committed consume by broker. */
  const produced = new Map<string, number[]>();
  const consumed = new Map<string, number[]>();
  const add = (map: Map<string, number[]>, key: string, value: number) => map.set(key, [...(map.get(key) ?? []), value]);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const broker of round % 2 === 0 ? brokers : [...brokers].reverse()) {
        for (const mode of MODES) {
          const topic = `txn-bench-${mode}-${round}`;
          const p = await produce(broker, topic, mode);
          add(produced, `${broker.name} ${mode}`, p.records / p.seconds);
          process.stderr.write(`  round ${round + 1} ${broker.name} ${label(mode)}: ${(p.records / p.seconds).toFixed(0)} records/s\n`);
          if (mode === 1000) {
            const c = await consume(broker, topic);
            add(consumed, broker.name, c.bytes / MIB / c.seconds);
            process.stderr.write(
              `  round ${round + 1} ${broker.name} read_committed consume: ${(c.bytes / MIB / c.seconds).toFixed(0)} MiB/s\n`,
            );
          }
        }
      }
    }
  } catch (err) {
    for (const broker of brokers) process.stderr.write(`--- ${broker.name} log ---\n${await broker.logTail()}\n`);
    throw err;
  } finally {
    for (const broker of brokers) await broker.stop();
  }
  const ratio = (a: number[], b: number[]): number[] => a.map((x, i) => x / b[i]!);
  const lines = ['', `== librdkafka, ${PARTITIONS} partitions, ${RECORDS} records of ${RECORD_BYTES} B per run, ${ROUNDS} rounds`];
  if (brokers.length > 1) {
    for (const mode of MODES) {
      lines.push(
        `  produce, ${label(mode)}: Sluice / Kafka ${spread(ratio(produced.get(`Sluice ${mode}`)!, produced.get(`Kafka ${mode}`)!), 2)}`,
      );
    }
    lines.push(`  read_committed consume: Sluice / Kafka ${spread(ratio(consumed.get('Sluice')!, consumed.get('Kafka')!), 2)}`);
  }
  for (const broker of brokers) {
    for (const mode of MODES.filter((m) => m !== 0)) {
      const cost = ratio(produced.get(`${broker.name} ${mode}`)!, produced.get(`${broker.name} 0`)!);
      lines.push(`  ${broker.name}: ${label(mode)} / idempotent ${spread(cost, 2)}`);
    }
  }
  lines.push('', '== absolute');
  for (const broker of brokers) {
    for (const mode of MODES)
      lines.push(`  ${broker.name} ${label(mode)}: ${spread(produced.get(`${broker.name} ${mode}`)!, 0)} records/s`);
    lines.push(`  ${broker.name} read_committed consume: ${spread(consumed.get(broker.name)!, 0)} MiB/s`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

await main();
