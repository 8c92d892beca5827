import { spawn } from 'node:child_process';
import type {
  ClusterInfo,
  ConsumeOptions,
  ConsumedRecord,
  Delivery,
  Driver,
  DriverFactory,
  DriverInfo,
  GroupConsumeOptions,
  GroupConsumeResult,
  Header,
  OffsetSpec,
  ProduceOptions,
  ProducedRecord,
  TopicDescription,
} from '../driver.ts';
import { CODECS } from '../driver.ts';
import { commandExists, run, runOk, sleep, stopProcess, tail } from '../support/process.ts';

// kcat (librdkafka 2.0.2 on Debian 12): a process per operation, JSON output (-J).

const KEY_DELIMITER = '|';

interface KcatMessage {
  partition: number;
  offset: number;
  ts: number;
  headers?: string[] | null;
  key: string | null;
  payload: string | null;
}

function toRecord(line: string): ConsumedRecord {
  const m = JSON.parse(line) as KcatMessage;
  const headers: Header[] = [];
  const flat = m.headers ?? [];
  for (let i = 0; i + 1 < flat.length; i += 2) headers.push([flat[i]!, flat[i + 1]!]);
  return { partition: m.partition, offset: m.offset, key: m.key, value: m.payload ?? '', headers, timestamp: m.ts };
}

function offsetArg(from: ConsumeOptions['from']): string {
  if (from === 'earliest') return 'beginning';
  if (from === 'latest') return 'end';
  return String(from.offset);
}

const INFO: DriverInfo = {
  client: 'kcat',
  features: {
    recordTimestamps: false,
    recordHeaders: false,
    duplicateHeaderKeys: true,
    murmur2: true,
    idempotence: true,
    transactions: false,
    admin: false,
    groups: true,
    listOffsets: true,
    pastEndTimestamp: 'none',
    wokenByAppend: true,
    resetsOutOfRange: true,
    codecs: CODECS,
  },
  producerRequires: [],
  consumerRequires: [],
  errors: {
    unknownTopic: /Broker: Unknown topic or partition/,
    messageTooLarge: /Broker: Message size too large/,
  },
};

class KcatDriver implements Driver {
  readonly client = INFO.client;
  readonly features = INFO.features;
  readonly producerRequires = INFO.producerRequires;
  readonly consumerRequires = INFO.consumerRequires;
  readonly errors = INFO.errors;

  constructor(private readonly bootstrap: string) {}

  private kcat(args: string[], input = '', timeoutMs = 60_000) {
    return runOk('kcat', ['-b', this.bootstrap, ...args], { input, timeoutMs });
  }

  private async listing(topic?: string) {
    const result = await this.kcat(['-L', '-J', ...(topic ? ['-t', topic] : [])]);
    return JSON.parse(result.stdout) as {
      controllerid: number;
      brokers: { id: number; name: string }[];
      topics: { topic: string; error?: string; partitions: unknown[] }[];
    };
  }

  async metadata(): Promise<ClusterInfo> {
    const listing = await this.listing();
    return {
      brokers: listing.brokers.map((b) => {
        const at = b.name.lastIndexOf(':');
        return { id: b.id, host: b.name.slice(0, at), port: Number(b.name.slice(at + 1)) };
      }),
      controllerId: listing.controllerid,
      topics: listing.topics.map((t) => t.topic),
    };
  }

  async describeTopic(topic: string): Promise<TopicDescription> {
    const listing = await this.listing(topic);
    const found = listing.topics.find((t) => t.topic === topic);
    if (!found) throw new Error(`${topic} not in metadata`);
    if (found.error) throw new Error(found.error);
    return { partitions: found.partitions.length };
  }

  async produce(topic: string, records: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]> {
    // kcat applies -H headers to every record it produces in one run.
    const headers = records[0]?.headers ?? [];
    for (const r of records) {
      if (JSON.stringify(r.headers) !== JSON.stringify(headers)) throw new Error('kcat gives every record the same headers');
    }
    const keyed = records.every((r) => r.key !== null);
    const input = records.map((r) => (keyed ? `${r.key}${KEY_DELIMITER}${r.value}` : r.value)).join('\n') + '\n';
    const args = [
      '-P',
      '-t',
      topic,
      ...(keyed ? ['-K', KEY_DELIMITER] : []),
      ...headers.flatMap(([k, v]) => ['-H', `${k}=${v}`]),
      '-z',
      options.codec,
      '-X',
      'acks=all',
      '-X',
      `enable.idempotence=${options.idempotent}`,
      '-X',
      `partitioner=${options.murmur2 ? 'murmur2_random' : 'consistent_random'}`,
    ];
    const result = await run('kcat', ['-b', this.bootstrap, ...args], { input, timeoutMs: 60_000 });
    // kcat reports failed deliveries on stderr (and exits non-zero once they are counted).
    if (result.code !== 0 || /Delivery failed|ERROR/.test(result.stderr)) {
      throw new Error(`kcat -P failed (${result.code}): ${tail(result.stderr)}`);
    }
    return [];
  }

  async consume(options: ConsumeOptions): Promise<ConsumedRecord[]> {
    const args = [
      '-C',
      '-J',
      '-t',
      options.topic,
      ...(options.partitions.length === 1 ? ['-p', String(options.partitions[0])] : []),
      '-o',
      offsetArg(options.from),
      '-c',
      String(options.count),
      '-X',
      `auto.offset.reset=${options.autoOffsetReset}`,
      ...(options.maxWaitMs ? ['-X', `fetch.wait.max.ms=${options.maxWaitMs}`] : []),
    ];
    const result = await this.kcat(args, '', options.timeoutMs);
    return result.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map(toRecord);
  }

  async listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<number | null> {
    const time = spec === 'earliest' ? -2 : spec === 'latest' ? -1 : spec.timestamp;
    const result = await this.kcat(['-Q', '-t', `${topic}:${partition}:${time}`]);
    const match = /offset (-?\d+)/.exec(result.stdout);
    if (!match) throw new Error(`unexpected kcat -Q output: ${result.stdout}`);
    const offset = Number(match[1]);
    return offset < 0 ? null : offset;
  }

  // Each member is a `kcat -G` process; they leave (and commit) on SIGTERM once the group has
  // received every record, settled on an assignment that covers the topic once, and each
  // member has read its partitions to the end.
  async groupConsume(options: GroupConsumeOptions): Promise<GroupConsumeResult> {
    const members = Array.from({ length: options.members }, () => {
      const child = spawn(
        'kcat',
        ['-b', this.bootstrap, '-G', options.group, '-J', '-u', '-X', 'auto.offset.reset=earliest', options.topic],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const member = { child, stdout: '', stderr: '', assignment: [] as number[], atEnd: new Set<number>() };
      let pending = '';
      child.stdout.on('data', (chunk: Buffer) => (member.stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => {
        member.stderr += chunk.toString('utf8');
        const lines = (pending + chunk.toString('utf8')).split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          if (/rebalanced .*assigned:/.test(line)) {
            member.assignment = [...line.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
            member.atEnd.clear();
          } else if (/rebalanced .*revoked/.test(line)) {
            member.assignment = [];
          } else if (/Reached end of topic/.test(line)) {
            member.atEnd.add(Number(/\[(\d+)\]/.exec(line)![1]));
          }
        }
      });
      return member;
    });
    const records = () => {
      const unique = new Map<string, ConsumedRecord>();
      for (const m of members) {
        for (const line of m.stdout.split('\n')) {
          if (!line.startsWith('{') || !line.endsWith('}')) continue;
          const r = toRecord(line);
          unique.set(`${r.partition}:${r.offset}`, r);
        }
      }
      return [...unique.values()];
    };
    const settled = () => {
      const all = members.flatMap((m) => m.assignment);
      return members.every((m) => m.assignment.length > 0 && m.assignment.every((p) => m.atEnd.has(p))) && new Set(all).size === all.length;
    };
    try {
      const deadline = Date.now() + options.timeoutMs;
      while (records().length < options.count || !settled()) {
        if (Date.now() > deadline) {
          throw new Error(
            `group did not settle or receive ${options.count} records (got ${records().length}): ` +
              members.map((m) => tail(m.stderr, 800)).join('\n'),
          );
        }
        await sleep(50);
      }
      return { assignments: members.map((m) => m.assignment), records: records() };
    } finally {
      await Promise.all(members.map((m) => stopProcess(m.child, 20_000)));
    }
  }

  async close(): Promise<void> {}
}

export const kcat: DriverFactory = {
  info: INFO,
  unavailable: () => (commandExists('kcat') ? null : 'kcat is not installed (scripts/install-test-clients.sh)'),
  create: (bootstrap) => new KcatDriver(bootstrap),
};
