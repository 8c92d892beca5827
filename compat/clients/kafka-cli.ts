import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
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
import { run, runOk, sleep, stopProcess, tail } from '../support/process.ts';
import type { RunResult } from '../support/process.ts';
import { kafkaLibs } from '../targets.ts';
import { JVM_OPTIONS, javaClasspath, javaUnavailable } from './java.ts';
import { ResidentProcess } from './resident-process.ts';

// Kafka's own command-line tools (kafka-topics, kafka-configs, kafka-console-producer and
// -consumer, kafka-consumer-groups, kafka-get-offsets, kafka-broker-api-versions), run by
// their main classes from the jars scripts/install-test-clients.sh cached, as the bin/
// scripts of a Kafka distribution do. The tools that read no stdin and end by themselves run
// one after another in one long-lived JVM per driver (compat/java/ToolHost.java, each command
// with its own stdout, stderr and exit status); the console producer and consumers read stdin
// or are stopped by a signal, so each of them keeps a JVM of its own.

const TOOLS = {
  topics: 'org.apache.kafka.tools.TopicCommand',
  configs: 'kafka.admin.ConfigCommand',
  producer: 'org.apache.kafka.tools.ConsoleProducer',
  consumer: 'org.apache.kafka.tools.consumer.ConsoleConsumer',
  groups: 'org.apache.kafka.tools.consumer.group.ConsumerGroupCommand',
  offsets: 'org.apache.kafka.tools.GetOffsetShell',
  apiVersions: 'org.apache.kafka.tools.BrokerApiVersionsCommand',
} as const;

type Tool = keyof typeof TOOLS;
type HostedTool = Exclude<Tool, 'producer' | 'consumer'>;

const KEY_SEPARATOR = '|';
const PRINT = ['print.timestamp', 'print.partition', 'print.offset', 'print.headers', 'print.key'].flatMap((p) => [
  '--property',
  `${p}=true`,
]);

const INFO: DriverInfo = {
  client: 'kafka-cli',
  features: {
    recordTimestamps: false,
    recordHeaders: true,
    duplicateHeaderKeys: true,
    murmur2: true,
    idempotence: true,
    transactions: false,
    admin: true,
    groups: true,
    listOffsets: true,
    pastEndTimestamp: 'none',
    wokenByAppend: false,
    resetsOutOfRange: true,
    codecs: CODECS,
  },
  // The console producer is the Java producer: idempotent by default.
  producerRequires: ['idempotence'],
  // The console consumer reads several partitions only as a group member.
  consumerRequires: ['groups'],
  errors: {
    unknownTopic: /Topic '.*' does not exist as expected/,
    messageTooLarge: /RecordTooLargeException/,
  },
};

// One line of the console consumer with every print.* property on:
// CreateTime:<ts> \t Partition:<p> \t Offset:<o> \t <headers or NO_HEADERS> \t <key> \t <value>
function parseLine(line: string): ConsumedRecord {
  const [time, partition, offset, headers, key, ...value] = line.split('\t');
  const parsedHeaders: Header[] =
    headers === 'NO_HEADERS'
      ? []
      : headers!.split(',').map((h) => {
          const at = h.indexOf(':');
          return [h.slice(0, at), h.slice(at + 1)];
        });
  return {
    timestamp: Number(time!.split(':')[1]),
    partition: Number(partition!.split(':')[1]),
    offset: Number(offset!.split(':')[1]),
    headers: parsedHeaders,
    key: key === 'null' ? null : key!,
    value: value.join('\t'),
  };
}

// Complete lines only: a running consumer's last line may still be partial.
function records(stdout: string): ConsumedRecord[] {
  return stdout
    .split('\n')
    .slice(0, -1)
    .filter((l) => l.startsWith('CreateTime:'))
    .map(parseLine);
}

class KafkaCliDriver implements Driver {
  readonly client = INFO.client;
  readonly features = INFO.features;
  readonly producerRequires = INFO.producerRequires;
  readonly consumerRequires = INFO.consumerRequires;
  readonly errors = INFO.errors;

  private readonly toolHost: ResidentProcess;

  constructor(private readonly bootstrap: string) {
    this.toolHost = new ResidentProcess(INFO.client, async () => [
      'java',
      [...JVM_OPTIONS, '-cp', await javaClasspath('ToolHost'), 'ToolHost'],
    ]);
  }

  private args(tool: Tool, args: string[]): string[] {
    return [...JVM_OPTIONS, '-cp', `${kafkaLibs()}/*`, TOOLS[tool], '--bootstrap-server', this.bootstrap, ...args];
  }

  private async hosted(tool: HostedTool, args: string[], timeoutMs = 60_000): Promise<RunResult> {
    const result = (await this.toolHost.call(TOOLS[tool], { args: ['--bootstrap-server', this.bootstrap, ...args] }, timeoutMs)) as {
      code: number;
      stdout: string;
      stderr: string;
    };
    return { ...result, signal: null };
  }

  private async tool(tool: HostedTool, args: string[]): Promise<string> {
    const result = await this.hosted(tool, args);
    if (result.code !== 0) {
      throw new Error(
        `${TOOLS[tool]} ${args.join(' ')} exited with ${result.code}\nstdout: ${tail(result.stdout)}\nstderr: ${tail(result.stderr)}`,
      );
    }
    return result.stdout;
  }

  async metadata(): Promise<ClusterInfo> {
    const out = await this.tool('apiVersions', []);
    const brokers = [...out.matchAll(/^(\S+):(\d+) \(id: (\d+)/gm)].map((m) => ({
      id: Number(m[3]),
      host: m[1]!,
      port: Number(m[2]),
    }));
    if (!/ApiVersions\(18\)/.test(out)) throw new Error(`no ApiVersions listed: ${tail(out)}`);
    return { brokers, controllerId: null, topics: await this.listTopics() };
  }

  async describeTopic(topic: string): Promise<TopicDescription> {
    const result = await this.hosted('topics', ['--describe', '--topic', topic]);
    if (result.code !== 0) throw new Error(`kafka-topics --describe: ${result.stdout}${tail(result.stderr)}`);
    const match = /PartitionCount: (\d+)/.exec(result.stdout);
    if (!match) throw new Error(`unexpected kafka-topics output: ${result.stdout}`);
    return { partitions: Number(match[1]) };
  }

  async createTopic(topic: string, partitions: number, configs: Record<string, string>): Promise<void> {
    const configArgs = Object.entries(configs).flatMap(([k, v]) => ['--config', `${k}=${v}`]);
    const args = ['--create', '--topic', topic, '--partitions', String(partitions), '--replication-factor', '1'];
    await this.tool('topics', [...args, ...configArgs]);
  }

  async listTopics(): Promise<string[]> {
    return (await this.tool('topics', ['--list'])).split('\n').filter((l) => l.trim());
  }

  async createPartitions(topic: string, totalCount: number): Promise<void> {
    await this.tool('topics', ['--alter', '--topic', topic, '--partitions', String(totalCount)]);
  }

  async describeConfigs(topic: string): Promise<Record<string, string>> {
    const out = await this.tool('configs', ['--describe', '--entity-type', 'topics', '--entity-name', topic, '--all']);
    const configs: Record<string, string> = {};
    for (const m of out.matchAll(/^\s+([\w.]+)=(.*?) sensitive=/gm)) configs[m[1]!] = m[2]!;
    return configs;
  }

  async alterConfigs(topic: string, configs: Record<string, string>): Promise<void> {
    const add = Object.entries(configs)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    await this.tool('configs', ['--alter', '--entity-type', 'topics', '--entity-name', topic, '--add-config', add]);
  }

  async deleteTopic(topic: string): Promise<void> {
    await this.tool('topics', ['--delete', '--topic', topic]);
  }

  async produce(topic: string, recs: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]> {
    const withHeaders = recs.some((r) => r.headers.length > 0);
    const lines = recs.map((r) => {
      const record = `${r.key}${KEY_SEPARATOR}${r.value}`;
      return withHeaders ? `${r.headers.map(([k, v]) => `${k}:${v}`).join(',')}\t${record}` : record;
    });
    const args = ['--topic', topic, '--property', 'parse.key=true', '--property', `key.separator=${KEY_SEPARATOR}`];
    if (withHeaders) args.push('--property', 'parse.headers=true');
    if (options.codec !== 'none') args.push('--compression-codec', options.codec);
    if (options.idempotent) args.push('--producer-property', 'enable.idempotence=true');
    const result = await run('java', this.args('producer', args), { input: `${lines.join('\n')}\n`, timeoutMs: 90_000 });
    // The console producer logs failed sends and carries on.
    if (result.code !== 0 || /Error when sending message|ERROR/.test(result.stderr)) {
      throw new Error(`kafka-console-producer failed (${result.code}): ${tail(result.stderr)}`);
    }
    return [];
  }

  async consume(options: ConsumeOptions): Promise<ConsumedRecord[]> {
    const args = ['--topic', options.topic, '--max-messages', String(options.count), '--timeout-ms', String(options.timeoutMs)];
    if (options.partitions.length === 1) {
      const from = options.from;
      args.push('--partition', String(options.partitions[0]));
      args.push('--offset', typeof from === 'object' ? String(from.offset) : from);
    } else if (options.from === 'earliest') {
      args.push('--from-beginning');
    } else {
      throw new Error('the console consumer starts several partitions only from the beginning or the end');
    }
    args.push('--consumer-property', `auto.offset.reset=${options.autoOffsetReset}`);
    if (options.maxWaitMs) args.push('--consumer-property', `fetch.max.wait.ms=${options.maxWaitMs}`);
    const result = await runOk('java', this.args('consumer', [...args, ...PRINT]), { timeoutMs: options.timeoutMs + 30_000 });
    return records(result.stdout);
  }

  async listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<number | null> {
    const time = spec === 'earliest' ? '-2' : spec === 'latest' ? '-1' : String(spec.timestamp);
    const out = await this.tool('offsets', ['--topic', topic, '--partitions', String(partition), '--time', time]);
    const match = new RegExp(`^${topic}:${partition}:(-?\\d+)$`, 'm').exec(out);
    return match ? Number(match[1]) : null;
  }

  private async groupRows(group: string, what: '--offsets' | '--members'): Promise<string[][]> {
    const args = ['--describe', '--group', group, what, ...(what === '--members' ? ['--verbose'] : [])];
    const result = await this.hosted('groups', args);
    if (/GroupIdNotFoundException|does not exist/.test(result.stdout + result.stderr)) return [];
    if (result.code !== 0) throw new Error(`kafka-consumer-groups failed: ${tail(result.stderr)}`);
    return result.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((cols) => cols[0] === group);
  }

  async committedOffsets(group: string, topic: string, partitions: number): Promise<(number | null)[]> {
    const rows = await this.groupRows(group, '--offsets');
    return Array.from({ length: partitions }, (_, p) => {
      const row = rows.find((r) => r[1] === topic && r[2] === String(p));
      return row && row[3] !== '-' ? Number(row[3]) : null;
    });
  }

  // Members are console consumers in the group. The group is done once it has every record,
  // kafka-consumer-groups shows each member with its own partitions, and the committed
  // offsets (auto-commit) reach the end; the members then stop and leave.
  async groupConsume(options: GroupConsumeOptions): Promise<GroupConsumeResult> {
    const args = [
      '--topic',
      options.topic,
      '--group',
      options.group,
      '--from-beginning',
      '--consumer-property',
      'auto.commit.interval.ms=200',
      '--consumer-property',
      `client.id=compat-${randomUUID()}`,
      ...PRINT,
    ];
    const members = Array.from({ length: options.members }, () => {
      const child = spawn('java', this.args('consumer', args), { stdio: ['ignore', 'pipe', 'pipe'] });
      const member = { child, stdout: '', stderr: '' };
      child.stdout.on('data', (chunk: Buffer) => (member.stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (member.stderr += chunk.toString('utf8')));
      return member;
    });
    const consumed = () => {
      const unique = new Map<string, ConsumedRecord>();
      for (const m of members) for (const r of records(m.stdout)) unique.set(`${r.partition}:${r.offset}`, r);
      return [...unique.values()];
    };
    try {
      const deadline = Date.now() + options.timeoutMs;
      const check = (what: string) => {
        if (Date.now() > deadline) {
          throw new Error(`group ${what} (${consumed().length} records): ${members.map((m) => tail(m.stderr, 500)).join('\n')}`);
        }
      };
      while (consumed().length < options.count) {
        check(`did not receive ${options.count} records`);
        await sleep(100);
      }
      let assignments: number[][] = [];
      for (;;) {
        const rows = await this.groupRows(options.group, '--members');
        assignments = rows.map((r) => {
          const match = new RegExp(`${options.topic}:([\\d,]+)`).exec(r.join(' '));
          return match
            ? match[1]!
                .split(',')
                .map(Number)
                .sort((a, b) => a - b)
            : [];
        });
        const all = assignments.flat();
        const settled =
          assignments.length === options.members && assignments.every((a) => a.length > 0) && new Set(all).size === all.length;
        const offsets = await this.groupRows(options.group, '--offsets');
        const caughtUp = offsets.length > 0 && offsets.every((r) => r[5] === '0');
        if (settled && caughtUp) break;
        check(`did not settle: ${JSON.stringify(assignments)}`);
      }
      return { assignments, records: consumed() };
    } finally {
      await Promise.all(members.map((m) => stopProcess(m.child, 20_000)));
    }
  }

  close(): Promise<void> {
    return this.toolHost.close();
  }
}

export const kafkaCli: DriverFactory = {
  info: INFO,
  // ToolHost is compiled with javac.
  unavailable: javaUnavailable,
  create: (bootstrap) => new KafkaCliDriver(bootstrap),
};
