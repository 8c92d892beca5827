/**
 * `sluice produce TOPIC`: kafka-console-producer over the wire. Reads records from stdin, one
 * a line (see record-format.ts for text, hex and json lines), and writes them to the
 * partitions' leaders.
 *
 * Partitioning as Kafka's default partitioner does: a record's own partition (--partition or
 * json "partition"), else murmur2 of its key, else one partition for all keyless records of a
 * stdin read, moving to the next partition with the next read (the sticky partitioner).
 * Each stdin read is sent before the next is taken, so typed lines go out as they are entered.
 *
 * Acks: all (default) or 1. acks=0 is not offered: the broker answers nothing, and the
 * command could not report what was written. No idempotence: a retried Produce after a
 * lost answer may write twice, as with enable.idempotence=false.
 */
import { StringDecoder } from 'node:string_decoder';
import { parseArgs } from 'node:util';
import type { RecordHeader } from '../../protocol/records/record.ts';
import { UsageError, clusterTarget, parseIntFlag, parseKeyValue, parseOrUsage, stdio, withCluster, type Output } from './output.ts';
import { RecordLineError, parseRecordFormat, parseRecordLine, type LineOptions } from './record-format.ts';
import { TopicProducer, type ProducerRecord } from '../client/producer.ts';

export const PRODUCE_USAGE = `usage:
  sluice produce TOPIC [--bootstrap-server HOST:PORT,...] [--command-config FILE] [--format text|json|hex]
                       [--key KEY | --key-separator SEP] [--header name=value ...] [--partition P]
                       [--acks all|1] [--timeout-ms T]
  Records from stdin, one a line.`;

/** How long the broker may take to replicate a batch (the Produce request's timeout). */
const DEFAULT_TIMEOUT_MS = 30_000;
/** Splits stdin into lines across reads, handing each read's complete lines over at once. */
export async function* linesOf(input: AsyncIterable<Buffer | string>): AsyncGenerator<string[], void, undefined> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of input) {
    const text = rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk));
    const lines = text.split('\n');
    rest = lines.pop()!;
    if (lines.length > 0) yield lines.map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l));
  }
  rest += decoder.end();
  if (rest !== '') yield [rest.endsWith('\r') ? rest.slice(0, -1) : rest];
}

function parseProduceArgs(args: string[]) {
  const { values: v, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'bootstrap-server': { type: 'string' },
      'command-config': { type: 'string' },
      format: { type: 'string' },
      key: { type: 'string' },
      'key-separator': { type: 'string' },
      header: { type: 'string', multiple: true },
      partition: { type: 'string' },
      acks: { type: 'string' },
      'timeout-ms': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (v.help === true) return { help: true as const };
  if (positionals.length !== 1) throw new UsageError('produce takes one topic');
  if (v.key !== undefined && v['key-separator'] !== undefined) throw new UsageError('--key and --key-separator exclude each other');
  if (v['key-separator'] === '') throw new UsageError('--key-separator must not be empty');
  const acks = v.acks ?? 'all';
  if (acks !== 'all' && acks !== '-1' && acks !== '1') throw new UsageError(`--acks expects all, -1 or 1, got '${acks}'`);
  const format = parseRecordFormat(v.format);
  if (format === 'json' && v['key-separator'] !== undefined) throw new UsageError('--key-separator does not apply to json lines');
  const line: LineOptions = {
    format,
    keySeparator: v['key-separator'] ?? null,
    key: v.key ?? null,
    headers: (v.header ?? []).map((h): RecordHeader => {
      const [key, value] = parseKeyValue(h, '--header');
      return { key, value: Buffer.from(value, 'utf8') };
    }),
    partition: v.partition === undefined ? null : parseIntFlag(v.partition, '--partition'),
  };
  return {
    help: false as const,
    topic: positionals[0]!,
    ...clusterTarget(v),
    line,
    producer: {
      acks: acks === '1' ? 1 : -1,
      timeoutMs: v['timeout-ms'] === undefined ? DEFAULT_TIMEOUT_MS : parseIntFlag(v['timeout-ms'], '--timeout-ms', 1),
    },
  };
}

/** Entry point of `sluice produce ...`; argv may start with the word `produce`. */
export async function runProduceCommand(
  argv: string[],
  io: Output = stdio,
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<number> {
  const args = argv[0] === 'produce' ? argv.slice(1) : argv;
  const parsed = parseOrUsage(io, 'produce', PRODUCE_USAGE, () => parseProduceArgs(args));
  if (parsed === null) return 2;
  if (parsed.help) {
    io.out(PRODUCE_USAGE + '\n');
    return 0;
  }
  return withCluster(io, parsed, 'sluice-produce', async (cluster) => {
    const producer = new TopicProducer(cluster, parsed.topic, parsed.producer);
    await producer.open();
    let lineNumber = 0;
    try {
      for await (const lines of linesOf(stdin)) {
        const records: ProducerRecord[] = [];
        for (const line of lines) {
          lineNumber++;
          try {
            const r = parseRecordLine(line, parsed.line);
            if (r !== null) records.push(r);
          } catch (err) {
            if (!(err instanceof RecordLineError)) throw err;
            // The lines before the bad one are written, as kafka-console-producer would have.
            await producer.send(records);
            throw new RecordLineError(`stdin line ${lineNumber}: ${err.message}`);
          }
        }
        await producer.send(records);
      }
    } finally {
      io.err(`Produced ${producer.written} records to topic ${parsed.topic}.\n`);
    }
    return 0;
  });
}
