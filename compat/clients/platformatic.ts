import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { node22Path } from '../../test/helpers/runtimes.ts';
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
  OffsetSpec,
  ProduceOptions,
  ProducedRecord,
  TopicDescription,
  TransactionSpec,
  TransformOptions,
} from '../driver.ts';
import { CODECS } from '../driver.ts';
import type { Operations } from '../platformatic/driver.ts';
import { decode, encode, isReply } from '../platformatic/rpc.ts';
import type { Reply } from '../platformatic/rpc.ts';
import { stopProcess, tail } from '../support/process.ts';
import { ROOT } from '../targets.ts';

// @platformatic/kafka 2.x (the npm alias @platformatic/kafka-2), which needs Node >= 22.22.
// Each driver is a proxy for one long-lived Node 22 host process (compat/platformatic/host.ts,
// holding compat/platformatic/driver.ts) that answers its calls as JSON lines
// (compat/platformatic/rpc.ts); close() ends the host. The Node 20 integration tests keep
// @platformatic/kafka 1.35 in-process.

const INFO: DriverInfo = {
  client: 'platformatic',
  features: {
    recordTimestamps: true,
    recordHeaders: true,
    // Its producer takes headers as a Map: with Buffer keys two equal keys are two entries;
    // its consumer's headerEntries keeps both.
    duplicateHeaderKeys: true,
    // compatibilityPartitioner is its Java-compatible (murmur2) partitioner.
    murmur2: true,
    idempotence: true,
    transactions: true,
    admin: true,
    groups: true,
    listOffsets: true,
    pastEndTimestamp: 'none',
    // Measured against Apache Kafka 4.1.1: a 2.x consumer's waiting fetch returns as soon as a
    // record arrives (1.35's did not).
    wokenByAppend: true,
    // fallbackMode applies to an out-of-range position too (2.x; 1.35 failed the stream).
    resetsOutOfRange: true,
    // lz4 and snappy come from its WebAssembly codecs, zstd from Node 22's node:zlib.
    codecs: CODECS,
  },
  producerRequires: [],
  // Its consumer is always a group member.
  consumerRequires: ['groups'],
  errors: {
    unknownTopic: /Unknown topic/,
    messageTooLarge: /larger than the max message size the server will accept/,
  },
};

const HOST = join(ROOT, 'compat/platformatic/host.ts');
const CLOSE_TIMEOUT_MS = 20_000;

class PlatformaticHostDriver implements Driver {
  readonly client = INFO.client;
  readonly features = INFO.features;
  readonly producerRequires = INFO.producerRequires;
  readonly consumerRequires = INFO.consumerRequires;
  readonly errors = INFO.errors;
  private host: ChildProcessWithoutNullStreams | null = null;
  private exited: Promise<void> | null = null;
  private stderr = '';
  private nextId = 1;
  private readonly pending = new Map<number, { method: string; resolve: (value: unknown) => void; reject: (error: Error) => void }>();

  constructor(
    private readonly bootstrap: string,
    private readonly node: string,
  ) {}

  // The host starts with the first call.
  private started(): ChildProcessWithoutNullStreams {
    if (this.host) return this.host;
    const host = spawn(this.node, ['--import', 'tsx', HOST, this.bootstrap], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    this.host = host;
    host.stderr.setEncoding('utf8');
    host.stderr.on('data', (chunk: string) => {
      this.stderr = tail(this.stderr + chunk, 20_000);
    });
    createInterface({ input: host.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => this.received(line));
    // A write after the host died fails its call through the exit below.
    host.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      host.once('error', (error) => {
        this.failAll(`could not start ${this.node} ${HOST}: ${error.message}`);
        resolve();
      });
      // 'close' comes after the host's last reply has been read.
      host.once('close', (code, signal) => {
        this.failAll(`host exited with ${code ?? signal}: ${tail(this.stderr)}`);
        resolve();
      });
    });
    return host;
  }

  private received(line: string): void {
    let reply: unknown;
    try {
      reply = decode(line);
    } catch {
      reply = null;
    }
    if (!isReply(reply)) {
      this.stderr = tail(`${this.stderr}stdout: ${line}\n`, 20_000);
      return;
    }
    const call = this.pending.get(reply.id);
    if (!call) return;
    this.pending.delete(reply.id);
    if ('error' in reply) call.reject(remoteError(reply));
    else call.resolve(reply.result);
  }

  private failAll(why: string): void {
    for (const [id, call] of this.pending) {
      this.pending.delete(id);
      call.reject(new Error(`platformatic ${call.method}: ${why}`));
    }
  }

  private call<T>(method: keyof Operations | 'close', ...args: unknown[]): Promise<T> {
    const host = this.started();
    if (host.exitCode !== null || host.signalCode !== null) {
      return Promise.reject(
        new Error(`platformatic ${method}: host exited with ${host.exitCode ?? host.signalCode}: ${tail(this.stderr)}`),
      );
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve as (value: unknown) => void, reject });
      host.stdin.write(`${encode({ id, method, args })}\n`);
    });
  }

  metadata(): Promise<ClusterInfo> {
    return this.call('metadata');
  }

  describeTopic(topic: string): Promise<TopicDescription> {
    return this.call('describeTopic', topic);
  }

  createTopic(topic: string, partitions: number, configs: Record<string, string>): Promise<void> {
    return this.call('createTopic', topic, partitions, configs);
  }

  listTopics(): Promise<string[]> {
    return this.call('listTopics');
  }

  createPartitions(topic: string, totalCount: number): Promise<void> {
    return this.call('createPartitions', topic, totalCount);
  }

  describeConfigs(topic: string): Promise<Record<string, string>> {
    return this.call('describeConfigs', topic);
  }

  alterConfigs(topic: string, configs: Record<string, string>): Promise<void> {
    return this.call('alterConfigs', topic, configs);
  }

  deleteTopic(topic: string): Promise<void> {
    return this.call('deleteTopic', topic);
  }

  produce(topic: string, records: ProducedRecord[], options: ProduceOptions): Promise<Delivery[]> {
    return this.call('produce', topic, records, options);
  }

  consume(options: ConsumeOptions): Promise<ConsumedRecord[]> {
    return this.call('consume', options);
  }

  async produceTransactions(topic: string, transactionalId: string, transactions: TransactionSpec[]): Promise<void> {
    await this.call('produceTransactions', topic, transactionalId, transactions);
  }

  async transformInTransaction(options: TransformOptions): Promise<void> {
    await this.call('transformInTransaction', options);
  }

  listOffset(topic: string, partition: number, spec: OffsetSpec): Promise<number | null> {
    return this.call('listOffset', topic, partition, spec);
  }

  groupConsume(options: GroupConsumeOptions): Promise<GroupConsumeResult> {
    return this.call('groupConsume', options);
  }

  committedOffsets(group: string, topic: string, partitions: number): Promise<(number | null)[]> {
    return this.call('committedOffsets', group, topic, partitions);
  }

  // Asks the host to close its clients and exit, ends its stdin (which alone also ends it),
  // and kills it if it has not exited within CLOSE_TIMEOUT_MS.
  async close(): Promise<void> {
    const host = this.host;
    if (!host) return;
    let failure: unknown = null;
    if (host.exitCode === null && host.signalCode === null) {
      const closed = this.call('close').catch((error: unknown) => {
        // The host exiting before it answers is a close too.
        if (!/host exited with 0\b/.test(String(error))) failure = error;
      });
      host.stdin.end();
      const timer = setTimeout(() => void stopProcess(host, 2000), CLOSE_TIMEOUT_MS);
      await Promise.all([closed, this.exited]);
      clearTimeout(timer);
    }
    await this.exited;
    this.host = null;
    if (failure) throw failure;
  }
}

function remoteError(reply: Extract<Reply, { error: unknown }>): Error {
  const error = new Error(reply.error.message);
  error.name = reply.error.name;
  // Its own stack, then where the host threw it.
  error.stack = `${error.stack}\n    --- in the Node 22 host:\n${reply.error.stack ?? ''}`;
  return error;
}

export const platformatic: DriverFactory = {
  info: INFO,
  unavailable: () => (node22Path() ? null : 'Node 22 is not installed (bash scripts/install-node22.sh), @platformatic/kafka 2.x needs it'),
  create(bootstrap) {
    const node = node22Path();
    if (!node) throw new Error('Node 22 is not installed (bash scripts/install-node22.sh)');
    return new PlatformaticHostDriver(bootstrap, node);
  },
};
