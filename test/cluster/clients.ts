/**
 * The real clients the fault suite runs while the nemesis works: each workload is an
 * idempotent acks=all producer (values `<name>-<seq>`, round robin over the partitions) and a
 * consumer group that commits, reporting into the Recorder.
 *
 * - kafkajs, in process: two producers and a group of two members.
 * - librdkafka through confluent-kafka-python (test/cluster/fault_client.py) and Kafka's Java
 *   client (test/cluster/java/FaultClient.java, compiled against the Kafka jars that
 *   scripts/install-test-clients.sh caches, as compat/ compiles its drivers): one child process
 *   each, a producer and a group member, one JSON line per event.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import kafkajs, { type Consumer, type Kafka, type Producer } from 'kafkajs';
import { JVM_OPTIONS } from '../../compat/clients/java.ts';
import { kafkaLibs, kafkaVersion } from '../../compat/targets.ts';
import { REPO } from '../helpers/sluice-cli.ts';
import type { Recorder } from './recorder.ts';

const { logLevel } = kafkajs;

/** Debian's interpreter: python3-confluent-kafka is installed for it, not for a pyenv python3. */
export const PYTHON = '/usr/bin/python3';
/** The consumers' session timeout: a group must be Stable this long after the cluster healed. */
export const CONSUMER_SESSION_TIMEOUT_MS = 10_000;

export interface Workload {
  readonly name: string;
  /** The consumer group its members join. */
  readonly group: string;
  /** The producers' names (the prefixes of their values). */
  readonly producers: readonly string[];
  /** How many members its group has. */
  readonly members: number;
  start(): Promise<void>;
  /** Stops sending; resolves once every record sent is acknowledged or given up on. */
  stopProducing(timeoutMs: number): Promise<void>;
  /** Closes the consumers (a last commit, LeaveGroup). */
  close(timeoutMs: number): Promise<void>;
  /** Last resort, synchronous. */
  kill(): void;
}

export interface WorkloadContext {
  readonly bootstrap: readonly string[];
  readonly topic: string;
  readonly partitions: number;
  readonly recorder: Recorder;
  /** Pause between two sends of one producer. */
  readonly intervalMs: number;
}

const errorText = (err: unknown): string => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class KafkajsWorkload implements Workload {
  readonly name = 'kafkajs';
  readonly group = 'kafkajs-group';
  readonly producers = ['kafkajs-a', 'kafkajs-b'];
  readonly members = 2;
  private readonly kafka: Kafka;
  private readonly consumers: Consumer[] = [];
  private loops: Promise<void>[] = [];
  private producing = true;

  constructor(private readonly ctx: WorkloadContext) {
    this.kafka = new kafkajs.Kafka({
      clientId: 'fault-kafkajs',
      brokers: [...ctx.bootstrap],
      logLevel: logLevel.NOTHING,
      // Long enough to ride through a fault (a session timeout and an election).
      retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 2000 },
      connectionTimeout: 3000,
      requestTimeout: 10_000,
    });
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.members; i++) this.consumers.push(await this.member(i));
    this.loops = this.producers.map((name) => this.produce(name));
  }

  private async member(i: number): Promise<Consumer> {
    const consumer = this.kafka.consumer({
      groupId: this.group,
      sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS,
      heartbeatInterval: 1000,
      rebalanceTimeout: CONSUMER_SESSION_TIMEOUT_MS,
      retry: { retries: 1000, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    consumer.on(consumer.events.COMMIT_OFFSETS, ({ payload }) => {
      for (const t of payload.topics)
        for (const p of t.partitions) this.ctx.recorder.commit(this.group, Number(p.partition), Number(p.offset), `kafkajs member ${i}`);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      this.ctx.recorder.clientError(`kafkajs member ${i} crashed (restart: ${payload.restart}): ${errorText(payload.error)}`);
    });
    await consumer.connect();
    await consumer.subscribe({ topic: this.ctx.topic, fromBeginning: true });
    await consumer.run({
      autoCommitInterval: 500,
      eachMessage: async ({ partition, message }) => {
        this.ctx.recorder.record(this.group, partition, Number(message.offset), message.value!.toString());
      },
    });
    return consumer;
  }

  /**
   * One record per send, awaited: the producer's order is its send order. A failed send
   * (retries exhausted) leaves a producer whose sequence numbers may be out of step, so a new
   * one (a new producer id) takes over; a value is never sent twice.
   */
  private async produce(name: string): Promise<void> {
    let producer: Producer | null = null;
    for (let seq = 0; this.producing; seq++) {
      try {
        if (producer === null) {
          producer = this.kafka.producer({
            idempotent: true,
            maxInFlightRequests: 1,
            retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 2000 },
          });
          await producer.connect();
        }
        const partition = seq % this.ctx.partitions;
        const [meta] = await producer.send({
          topic: this.ctx.topic,
          acks: -1,
          timeout: 10_000,
          messages: [{ value: `${name}-${seq}`, partition }],
        });
        this.ctx.recorder.ack(name, seq, meta!.partition, Number(meta!.baseOffset));
      } catch (err) {
        this.ctx.recorder.failed(name, seq, errorText(err));
        await producer?.disconnect().catch(() => {});
        producer = null;
        await sleep(500);
      }
      await sleep(this.ctx.intervalMs);
    }
    await producer?.disconnect().catch(() => {});
  }

  async stopProducing(timeoutMs: number): Promise<void> {
    this.producing = false;
    await Promise.race([Promise.all(this.loops), sleep(timeoutMs)]);
  }

  async close(timeoutMs: number): Promise<void> {
    await Promise.race([Promise.all(this.consumers.map((c) => c.disconnect().catch(() => {}))), sleep(timeoutMs)]);
  }

  kill(): void {
    this.producing = false;
    for (const c of this.consumers) void c.disconnect().catch(() => {});
  }
}

interface ClientEvent {
  event: string;
  seq?: number;
  partition?: number;
  offset?: number;
  value?: string;
  error?: string;
  sent?: number;
}

/** A client child process speaking fault_client.py's protocol. */
export class ProcessWorkload implements Workload {
  readonly group: string;
  readonly producers: readonly string[];
  readonly members = 1;
  private child: ChildProcess | null = null;
  private done: Promise<void> = Promise.resolve();
  private exited: Promise<void> = Promise.resolve();
  private stderr = '';

  constructor(
    readonly name: string,
    private readonly ctx: WorkloadContext,
    private readonly command: () => Promise<[string, string[]]>,
  ) {
    this.group = `${name}-group`;
    this.producers = [name];
  }

  async start(): Promise<void> {
    const [cmd, prefix] = await this.command();
    const args = [
      ...prefix,
      this.ctx.bootstrap.join(','),
      this.ctx.topic,
      String(this.ctx.partitions),
      this.name,
      this.group,
      String(this.ctx.intervalMs),
    ];
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child = child;
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-8000);
    });
    let onDone = (): void => {};
    this.done = new Promise((resolve) => {
      onDone = resolve;
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        if (code !== 0) this.ctx.recorder.clientError(`${this.name} exited with ${code ?? signal}: ${this.stderr.slice(-2000)}`);
        onDone();
        resolve();
      }),
    );
    const rec = this.ctx.recorder;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let e: ClientEvent;
      try {
        e = JSON.parse(line) as ClientEvent;
      } catch {
        rec.clientError(`${this.name}: ${line.slice(0, 300)}`);
        return;
      }
      if (e.event === 'ack')
        rec.ack(this.name, e.seq!, e.partition!, e.offset === undefined || e.offset === null || e.offset < 0 ? null : e.offset);
      else if (e.event === 'error') rec.failed(this.name, e.seq!, e.error ?? '');
      else if (e.event === 'record') rec.record(this.group, e.partition!, e.offset!, e.value!);
      else if (e.event === 'commit') rec.commit(this.group, e.partition!, e.offset!, this.name);
      else if (e.event === 'commit-error') rec.clientError(`${this.name} commit: ${e.error}`);
      else if (e.event === 'done') onDone();
    });
  }

  async stopProducing(timeoutMs: number): Promise<void> {
    this.child?.stdin?.write('stop-producing\n');
    await Promise.race([this.done, sleep(timeoutMs)]);
  }

  async close(timeoutMs: number): Promise<void> {
    this.child?.stdin?.end();
    const timer = setTimeout(() => this.kill(), timeoutMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  kill(): void {
    const c = this.child;
    if (c !== null && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

export function pythonUnavailable(): string | null {
  const ok = spawnSync(PYTHON, ['-c', 'import confluent_kafka'], { stdio: 'ignore' }).status === 0;
  return ok ? null : `${PYTHON} module confluent_kafka`;
}

export function librdkafkaWorkload(ctx: WorkloadContext): Workload {
  return new ProcessWorkload('librdkafka', ctx, async () => [PYTHON, ['-B', join(REPO, 'test/cluster/fault_client.py')]]);
}

export function javaWorkload(ctx: WorkloadContext): Workload {
  return new ProcessWorkload('java', ctx, async () => ['java', [...JVM_OPTIONS, '-cp', await faultClientClasspath(), 'FaultClient']]);
}

/** Compiles test/cluster/java/FaultClient.java once per source (cached in .cache/fault-java/<hash>); resolves with its classpath. */
async function faultClientClasspath(): Promise<string> {
  const source = join(REPO, 'test/cluster/java/FaultClient.java');
  const hash = createHash('sha256').update(readFileSync(source)).update(kafkaVersion()).digest('hex').slice(0, 16);
  const classes = join(REPO, '.cache', 'fault-java', hash);
  if (!existsSync(join(classes, 'FaultClient.class'))) {
    const partial = `${classes}.partial`;
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    const r = spawnSync('javac', ['-nowarn', '-cp', `${kafkaLibs()}/*`, '-d', partial, source], { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`javac FaultClient.java: ${r.stdout}${r.stderr}`);
    rmSync(classes, { recursive: true, force: true });
    renameSync(partial, classes);
  }
  return `${classes}:${kafkaLibs()}/*`;
}
