/**
 * consumeWithRetries against a Sluice broker and against Apache Kafka: a handler that fails
 * every third record forever. Good records are handled once; each bad one is attempted exactly
 * maxAttempts times (in memory, then through the retry topics, each attempt after its backoff)
 * and lands once in the dead-letter topic with the contract's headers; the same holds when the
 * consumer is stopped in the middle and a new one takes over the group.
 */
import { strict as assert } from 'node:assert';
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { type ConsumerRecord, readPartition } from '../../../src/client/records.ts';
import { DeadLetterHeaders, SLUICE_HEADER_NAMES } from '../../../src/tools/dead-letters.ts';
import {
  type ConsumeWithRetriesOptions,
  type RetryConsumer,
  type RetryRecord,
  consumeWithRetries,
} from '../../../src/tools/retry/index.ts';
import { runDlqCommand } from '../../../src/cli/dlq.ts';
import { againstEachBroker, runCaptured } from '../../helpers/cli-targets.ts';
import { eventually } from '../../helpers/wait.ts';

const PARTITIONS = 3;
const RECORDS = 60;
const MAX_ATTEMPTS = 4;
const BACKOFF = { initialMs: 50, multiplier: 2, maxMs: 1000 };
/** Attempt k + 1 starts at least this long after attempt k did (the backoff schedule above). */
const MIN_GAP_MS = [50, 100, 200];

class PoisonRecord extends Error {}

const isBad = (i: number): boolean => i % 3 === 2;
/** Bad records fail two ways: an Error subclass, and a thrown string (no Error at all). */
const throwsString = (i: number): boolean => i % 6 === 5;
const indexOf = (value: Buffer | null): number => Number(value!.toString().split('-')[1]);
const expectedFailure = (i: number): { errorClass: string; errorMessage: string } =>
  throwsString(i)
    ? { errorClass: 'NonErrorThrown', errorMessage: `cannot parse record ${i}` }
    : { errorClass: 'PoisonRecord', errorMessage: `record ${i} is poison` };

interface Call {
  readonly record: RetryRecord;
  readonly atMs: number;
}

/** The handler under test: fails bad records forever, remembers every invocation. */
class Recorder {
  readonly calls = new Map<number, Call[]>();
  /** Called as each attempt starts. */
  onAttempt: ((i: number, record: RetryRecord) => void) | undefined;

  constructor(private readonly delayMs = 0) {}

  readonly handler = async (record: RetryRecord): Promise<void> => {
    const i = indexOf(record.value);
    const calls = this.calls.get(i) ?? [];
    calls.push({ record, atMs: Date.now() });
    this.calls.set(i, calls);
    this.onAttempt?.(i, record);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (!isBad(i)) return;
    if (throwsString(i)) throw `cannot parse record ${i}`;
    throw new PoisonRecord(`record ${i} is poison`);
  };

  get invocations(): number {
    let n = 0;
    for (const c of this.calls.values()) n += c.length;
    return n;
  }

  goodHandled(): number {
    return [...this.calls.keys()].filter((i) => !isBad(i)).length;
  }
}

/**
 * Stops `consumer` from inside the handler, while the attempt `pick` chooses is running; resolves
 * with that record's index once the stop is done.
 */
function stopDuring(recorder: Recorder, consumer: RetryConsumer, pick: (i: number, record: RetryRecord) => boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no attempt to stop during')), 30_000);
    recorder.onAttempt = (i, record) => {
      if (!pick(i, record)) return;
      recorder.onAttempt = undefined;
      clearTimeout(timer);
      consumer.stop().then(() => resolve(i), reject);
    };
  });
}

const header = (r: ConsumerRecord, name: string): string | undefined => r.headers.find((h) => h.key === name)?.value?.toString();

async function readTopic(cluster: KafkaCluster, topic: string): Promise<ConsumerRecord[]> {
  const all: ConsumerRecord[] = [];
  for (let p = 0; p < PARTITIONS; p++) all.push(...(await readPartition(cluster, topic, p, 0, 1000)).records);
  return all;
}

/** Creates the source topic and writes the records, keyed, each with a header of its own. */
async function produceSource(kafka: Kafka, admin: Admin, topic: string): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true });
  const producer = kafka.producer();
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: RECORDS }, (_, i) => ({
        key: `key-${i}`,
        value: `${isBad(i) ? 'bad' : 'good'}-${i}`,
        headers: { trace: `trace-${i}` },
      })),
    });
  } finally {
    await producer.disconnect();
  }
}

function options(kafka: Kafka, topic: string, groupId: string, recorder: Recorder): ConsumeWithRetriesOptions {
  return {
    kafka,
    topic,
    groupId,
    handler: recorder.handler,
    maxAttempts: MAX_ATTEMPTS,
    inMemoryAttempts: 2,
    backoff: BACKOFF,
    fromBeginning: true,
    consumerConfig: { sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 250 },
  };
}

/**
 * Waits until each recorder handled every good record and the dead-letter topic holds every bad
 * one once per recorder (group), then a little longer for strays; returns the dead letters.
 */
async function awaitAllSettled(cluster: KafkaCluster, recorders: readonly Recorder[], deadLetterTopic: string): Promise<ConsumerRecord[]> {
  const bad = Array.from({ length: RECORDS }, (_, i) => i).filter(isBad).length;
  const invocations = (): number => recorders.reduce((n, r) => n + r.invocations, 0);
  await eventually(
    `${RECORDS - bad} good records handled and ${bad} dead letters, per group`,
    async () =>
      recorders.every((r) => r.goodHandled() === RECORDS - bad) &&
      (await readTopic(cluster, deadLetterTopic)).length >= bad * recorders.length,
    40_000,
  );
  // Anything still in flight (an extra attempt, a second dead letter) shows within a few backoffs.
  const settled = invocations();
  await new Promise((r) => setTimeout(r, 4 * BACKOFF.maxMs));
  assert.equal(invocations(), settled, 'no invocation after every record was settled');
  return readTopic(cluster, deadLetterTopic);
}

/** The assertions both scenarios share: once for good records, exactly MAX_ATTEMPTS for bad ones, the right dead letters. */
function assertSettled(
  source: readonly ConsumerRecord[],
  recorder: Recorder,
  dead: readonly ConsumerRecord[],
  topic: string,
  groupId: string,
): void {
  const original = new Map(source.map((r) => [indexOf(r.value), r]));
  assert.equal(original.size, RECORDS);

  for (const [i, src] of original) {
    const calls = recorder.calls.get(i) ?? [];
    const where = `record ${i} (${topic}/${src.partition}/${src.offset})`;
    assert.deepEqual(
      calls.map((c) => c.record.attempt),
      isBad(i) ? [1, 2, 3, 4] : [1],
      `${where}: attempts`,
    );
    for (const { record } of calls) {
      assert.deepEqual(
        [record.topic, record.partition, record.offset, record.timestamp, record.key?.toString()],
        [topic, src.partition, String(src.offset), String(src.timestamp), `key-${i}`],
        `${where}: the handler sees the original record on attempt ${record.attempt}`,
      );
      assert.deepEqual(Object.keys(record.headers), ['trace'], `${where}: only its own headers`);
      assert.equal(record.headers.trace?.toString(), `trace-${i}`);
    }
    for (let k = 1; k < calls.length; k++) {
      const gap = calls[k]!.atMs - calls[k - 1]!.atMs;
      assert.ok(gap >= MIN_GAP_MS[k - 1]!, `${where}: attempt ${k + 1} came ${gap} ms after attempt ${k}, before its backoff`);
    }
  }

  const badIndexes = [...original.keys()].filter(isBad).sort((a, b) => a - b);
  const ours = dead.filter((d) => header(d, DeadLetterHeaders.consumerGroup) === groupId);
  assert.deepEqual(
    ours.map((r) => indexOf(r.value)).sort((a, b) => a - b),
    badIndexes,
    `the dead-letter topic holds each bad record once for ${groupId}, and nothing else`,
  );
  for (const d of ours) {
    const i = indexOf(d.value);
    const src = original.get(i)!;
    assert.equal(d.key?.toString(), `key-${i}`);
    assert.deepEqual(
      {
        topic: header(d, DeadLetterHeaders.originalTopic),
        partition: header(d, DeadLetterHeaders.originalPartition),
        offset: header(d, DeadLetterHeaders.originalOffset),
        timestamp: header(d, DeadLetterHeaders.originalTimestamp),
        attempts: header(d, DeadLetterHeaders.attempts),
        errorClass: header(d, DeadLetterHeaders.errorClass),
        errorMessage: header(d, DeadLetterHeaders.errorMessage),
        group: header(d, DeadLetterHeaders.consumerGroup),
        due: header(d, DeadLetterHeaders.retryDueMs),
        trace: header(d, 'trace'),
      },
      {
        topic,
        partition: String(src.partition),
        offset: String(src.offset),
        timestamp: String(src.timestamp),
        attempts: String(MAX_ATTEMPTS),
        ...expectedFailure(i),
        group: groupId,
        due: undefined,
        trace: `trace-${i}`,
      },
      `dead letter of record ${i}`,
    );
    assert.equal(d.headers.filter((h) => !SLUICE_HEADER_NAMES.has(h.key)).length, 1, 'its own header kept once');
  }
}

againstEachBroker('consumeWithRetries', (bootstrap) => {
  let kafka: Kafka;
  let admin: Admin;
  let cluster: KafkaCluster;
  const running: RetryConsumer[] = [];

  before(async () => {
    kafka = new Kafka({ brokers: [bootstrap()], clientId: 'retry-test', logLevel: logLevel.NOTHING });
    admin = kafka.admin();
    await admin.connect();
    cluster = new KafkaCluster([bootstrap()]);
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
  });

  after(async () => {
    await admin?.disconnect();
    await cluster?.close();
  });

  it('handles good records once and dead-letters each bad one after exactly maxAttempts, with its origin and failure', async () => {
    const topic = 'orders-retry-a';
    await produceSource(kafka, admin, topic);
    // Two groups of one topic share its retry and dead-letter topics: each attempts only its own records.
    const groups = ['billing-a', 'audit-a'];
    const recorders = groups.map(() => new Recorder());
    const consumers: RetryConsumer[] = [];
    for (const [g, groupId] of groups.entries()) {
      const consumer = await consumeWithRetries(options(kafka, topic, groupId, recorders[g]!));
      running.push(consumer);
      consumers.push(consumer);
    }
    const [consumer] = consumers as [RetryConsumer];
    assert.deepEqual(consumer.retryTopics, [`${topic}.retry.1`, `${topic}.retry.2`]);
    assert.equal(consumer.deadLetterTopic, `${topic}.dlq`);

    const { topics } = await admin.fetchTopicMetadata({ topics: [...consumer.retryTopics, consumer.deadLetterTopic] });
    assert.deepEqual(
      topics.map((t) => t.partitions.length),
      [PARTITIONS, PARTITIONS, PARTITIONS],
      'retry and dead-letter topics created with the partitions of the source topic',
    );

    const dead = await awaitAllSettled(cluster, recorders, consumer.deadLetterTopic);
    const source = await readTopic(cluster, topic);
    for (const [g, groupId] of groups.entries()) assertSettled(source, recorders[g]!, dead, topic, groupId);
    assert.equal(dead.length, 2 * (RECORDS / 3), 'no dead letter of any other group');
  });

  it('loses nothing and repeats no attempt across graceful stops in the middle and restarts in the same group', async () => {
    const topic = 'orders-retry-b';
    const groupId = 'billing-b';
    await produceSource(kafka, admin, topic);
    const recorder = new Recorder(10);
    const assertQuiet = async (what: string): Promise<void> => {
      const invocations = recorder.invocations;
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(recorder.invocations, invocations, `${what}: a stopped consumer attempts nothing more`);
    };

    // Stopped during a bad record's first attempt: its in-memory attempts finish and it is forwarded.
    const first = await consumeWithRetries(options(kafka, topic, groupId, recorder));
    running.push(first);
    const inMemory = await stopDuring(recorder, first, (i, r) => isBad(i) && r.attempt === 1 && recorder.calls.size >= RECORDS / 4);
    assert.deepEqual(
      recorder.calls.get(inMemory)!.map((c) => c.record.attempt),
      [1, 2],
      'the record being retried in memory at the stop finished its in-memory attempts',
    );
    await assertQuiet('first stop');

    // Stopped while a good record is handled: it is committed before the group is left.
    const second = await consumeWithRetries(options(kafka, topic, groupId, recorder));
    running.push(second);
    const good = await stopDuring(recorder, second, (i) => !isBad(i) && recorder.calls.size >= (RECORDS * 2) / 3);
    await assertQuiet('second stop');
    const settled = recorder.goodHandled() + (await readTopic(cluster, second.deadLetterTopic)).length;
    assert.ok(settled < RECORDS, `stopped with work left (${settled} of ${RECORDS} records settled)`);

    const invocationsBefore = recorder.invocations;
    const third = await consumeWithRetries(options(kafka, topic, groupId, recorder));
    running.push(third);
    const dead = await awaitAllSettled(cluster, [recorder], third.deadLetterTopic);
    assert.ok(recorder.invocations > invocationsBefore, 'the last consumer took over');
    assert.equal(recorder.calls.get(good)!.length, 1, `record ${good}, handled as the consumer stopped, is not handled again`);
    assertSettled(await readTopic(cluster, topic), recorder, dead, topic, groupId);
  });

  it('after a fix, sluice dlq replay sends the dead letters back and the group handles each once', async () => {
    const topic = 'orders-retry-c';
    const groupId = 'billing-c';
    await produceSource(kafka, admin, topic);
    let fixed = false;
    const replayed = new Map<number, RetryRecord[]>();
    const recorder = new Recorder();
    const handler = async (record: RetryRecord): Promise<void> => {
      if (!fixed) return recorder.handler(record);
      const i = indexOf(record.value);
      replayed.set(i, [...(replayed.get(i) ?? []), record]);
    };
    const consumer = await consumeWithRetries({ ...options(kafka, topic, groupId, recorder), handler });
    running.push(consumer);
    const dead = await awaitAllSettled(cluster, [recorder], consumer.deadLetterTopic);
    const badIndexes = dead.map((d) => indexOf(d.value)).sort((a, b) => a - b);
    assert.equal(badIndexes.length, RECORDS / 3);

    fixed = true;
    const run = await runCaptured((io) => runDlqCommand(['replay', consumer.deadLetterTopic, '--bootstrap-server', bootstrap()], io));
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`replayed ${badIndexes.length} of ${badIndexes.length} dead letters to ${topic}`));

    await eventually(`${badIndexes.length} replayed records handled`, async () => replayed.size === badIndexes.length, 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    assert.deepEqual(
      [...replayed.keys()].sort((a, b) => a - b),
      badIndexes,
      'exactly the dead letters came back',
    );
    for (const [i, records] of replayed) {
      assert.equal(records.length, 1, `replayed record ${i} handled once`);
      const [record] = records as [RetryRecord];
      assert.equal(record.attempt, 1, 'a replayed record starts its attempts afresh');
      assert.equal(record.key?.toString(), `key-${i}`);
      assert.equal(record.headers.trace?.toString(), `trace-${i}`);
      assert.equal(record.headers[DeadLetterHeaders.replayCount]?.toString(), '1');
      assert.match(record.headers[DeadLetterHeaders.replayedFrom]?.toString() ?? '', new RegExp(`^${topic}\\.dlq/\\d+/\\d+$`));
    }
  });
});
