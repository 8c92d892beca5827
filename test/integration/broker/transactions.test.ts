// Transactions end to end against the real broker process: transactional producers of kafkajs,
// confluent-kafka-python and kcat (librdkafka) commit and abort through the transaction coordinator,
// which writes the markers; read_committed consumers see committed records only. A second
// instance of a transactional id fences the first and aborts its open transaction; the
// coordinator aborts a transaction past its timeout; a coordinator restarted by SIGKILL
// mid-transaction still holds the transaction open, and a new instance aborts it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Kafka, logLevel, type Producer, type Transaction } from 'kafkajs';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeDescribeTransactionsRequest, type DescribeTransactionsResponse } from '../../../protocol/messages/describe-transactions.ts';
import { makeListTransactionsRequest, type ListTransactionsResponse } from '../../../protocol/messages/list-transactions.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
  type ListOffsetsResponse,
} from '../../../protocol/messages/list-offsets.ts';
import { makeOffsetFetchRequest, type OffsetFetchResponse } from '../../../protocol/messages/offset-fetch.ts';
import { makeAddPartitionsToTxnRequest, type AddPartitionsToTxnResponse } from '../../../protocol/messages/add-partitions-to-txn.ts';
import { makeEndTxnRequest, type EndTxnResponse } from '../../../protocol/messages/end-txn.ts';
import { makeInitProducerIdRequest, type InitProducerIdResponse } from '../../../protocol/messages/init-producer-id.ts';
import { buildRecordBatch } from '../../../protocol/records/index.ts';
import { makeTxnOffsetCommitRequest, type TxnOffsetCommitResponse } from '../../../protocol/messages/txn-offset-commit.ts';
import { JVM_OPTIONS, javaClasspath, javaUnavailable } from '../../../compat/clients/java.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { kafkaTransactions } from '../../helpers/kafka-transactions.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call, produceToPartition0 } from '../../helpers/raw-requests.ts';
import { hasCommand, missingTool } from '../../helpers/runtimes.ts';
import { eventually } from '../../helpers/wait.ts';

const PYTHON = '/usr/bin/python3';
const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;

describe('Transactions through the transaction coordinator (real broker process, real clients)', function () {
  this.timeout(180_000);
  let broker: BrokerProcess;
  let kafka: Kafka;
  let client: RawClient;
  const producers: Producer[] = [];

  before(async () => {
    broker = await spawnBroker({ overrides: { 'transaction.abort.timed.out.transaction.cleanup.interval.ms': 200 } });
    kafka = new Kafka({ clientId: 'txn-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    client = await RawClient.connect(broker.port, broker.host);
  });

  afterEach(async () => {
    for (const p of producers.splice(0)) await p.disconnect().catch(() => undefined);
  });

  after(async () => {
    client?.close();
    await broker?.cleanup();
  });

  async function reconnect(): Promise<void> {
    client.close();
    client = await RawClient.connect(broker.port, broker.host);
    kafka = new Kafka({ clientId: 'txn-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  }

  async function createTopic(topic: string, numPartitions: number): Promise<void> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
  }

  async function transactionalProducer(transactionalId: string, transactionTimeout = 60_000): Promise<Producer> {
    const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout });
    producers.push(producer);
    await producer.connect();
    return producer;
  }

  async function offsets(topic: string, partitions: number, isolationLevel: number): Promise<number[]> {
    const res = await call<ListOffsetsResponse>(
      client,
      ApiKey.ListOffsets,
      7,
      makeListOffsetsRequest({
        replicaId: -1,
        isolationLevel,
        topics: [
          makeListOffsetsRequestListOffsetsTopic({
            name: topic,
            partitions: Array.from({ length: partitions }, (_, partitionIndex) =>
              makeListOffsetsRequestListOffsetsPartition({ partitionIndex, timestamp: -1n }),
            ),
          }),
        ],
      }),
    );
    return res.topics[0]!.partitions.sort((a, b) => a.partitionIndex - b.partitionIndex).map((p) => {
      assert.equal(p.errorCode, Errors.NONE.code);
      return Number(p.offset);
    });
  }

  async function describe(transactionalId: string): Promise<DescribeTransactionsResponse['transactionStates'][number]> {
    const res = await call<DescribeTransactionsResponse>(
      client,
      ApiKey.DescribeTransactions,
      0,
      makeDescribeTransactionsRequest({ transactionalIds: [transactionalId] }),
    );
    return res.transactionStates[0]!;
  }

  /** Every value a kafkajs consumer of its own group reads from the start within `waitMs` of quiet. */
  async function readValues(topic: string, readUncommitted: boolean, expectedCount: number): Promise<string[]> {
    const consumer = kafka.consumer({ groupId: `reader-${topic}-${readUncommitted}-${Date.now()}`, readUncommitted, maxWaitTimeInMs: 100 });
    const values: string[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value!.toString());
        },
      });
      await eventually(`${expectedCount} records read (have ${values.length})`, () => values.length >= expectedCount, 30_000);
      // Anything beyond what is expected would arrive with the same fetches: give it a moment.
      await new Promise((resolve) => setTimeout(resolve, 500));
    } finally {
      await consumer.disconnect();
    }
    return values.sort();
  }

  it('kafkajs: committed transactions reach read_committed consumers, aborted ones only read_uncommitted ones, over every partition', async () => {
    const topic = 'txn-kafkajs';
    await createTopic(topic, 3);
    const producer = await transactionalProducer('kafkajs-tx');
    const messages = (prefix: string) => Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: `${prefix}-${i}` }));
    let txn = await producer.transaction();
    await txn.send({ topic, messages: messages('committed-a') });
    await txn.commit();
    txn = await producer.transaction();
    await txn.send({ topic, messages: messages('aborted') });
    await txn.abort();
    txn = await producer.transaction();
    await txn.send({ topic, messages: messages('committed-b') });
    await txn.commit();

    const committed = [...messages('committed-a'), ...messages('committed-b')].map((m) => m.value).sort();
    assert.deepEqual(await readValues(topic, false, 12), committed);
    assert.deepEqual(await readValues(topic, true, 18), [...committed, ...messages('aborted').map((m) => m.value)].sort());
    // Every marker is written: nothing holds the last stable offset back.
    assert.deepEqual(await offsets(topic, 3, READ_COMMITTED), await offsets(topic, 3, READ_UNCOMMITTED));

    const state = await describe('kafkajs-tx');
    assert.equal(state.errorCode, Errors.NONE.code);
    assert.equal(state.transactionState, 'CompleteCommit');
    assert.deepEqual(state.topics, []);
    const listed = await call<ListTransactionsResponse>(
      client,
      ApiKey.ListTransactions,
      1,
      makeListTransactionsRequest({ stateFilters: ['CompleteCommit', 'NoSuchState'], producerIdFilters: [], durationFilter: -1n }),
    );
    assert.ok(listed.transactionStates.some((t) => t.transactionalId === 'kafkajs-tx' && t.transactionState === 'CompleteCommit'));
    assert.deepEqual(listed.unknownStateFilters, ['NoSuchState']);
    assert.equal((await describe('no-such-transactional-id')).errorCode, Errors.TRANSACTIONAL_ID_NOT_FOUND.code);
  });

  it('a second instance of a transactional id fences the first and aborts its open transaction', async () => {
    const topic = 'txn-fencing';
    await createTopic(topic, 1);
    const first = await transactionalProducer('fenced-tx');
    const open = await first.transaction();
    await open.send({ topic, messages: [{ value: 'from-the-fenced-instance' }] });
    const [held] = await offsets(topic, 1, READ_COMMITTED);
    assert.equal(held, 0, 'the open transaction holds the last stable offset');

    const second = await transactionalProducer('fenced-tx');
    const txn = await second.transaction();
    await txn.send({ topic, messages: [{ value: 'from-the-new-instance' }] });
    await txn.commit();
    await assert.rejects(open.commit(), /fenced|epoch/i);
    assert.deepEqual(await readValues(topic, false, 1), ['from-the-new-instance']);
  });

  it('kafka-transactions (KIP-664) lists and describes an open transaction (ListTransactions, DescribeTransactions)', async function () {
    const why = javaUnavailable();
    if (why !== null) missingTool(this, `Kafka's tools (${why})`, 'scripts/install-test-clients.sh');
    const topic = 'txn-tool';
    await createTopic(topic, 2);
    const producer = await transactionalProducer('tool-tx');
    const open = await producer.transaction();
    await open.send({ topic, messages: [{ key: 'a', value: 'pending' }] });
    const listed = kafkaTransactions(broker.bootstrap, 'list');
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /tool-tx\s+\d+\s+\d+\s+Ongoing/);
    const described = kafkaTransactions(broker.bootstrap, 'describe', '--transactional-id', 'tool-tx');
    assert.equal(described.status, 0, described.stderr);
    assert.match(described.stdout, /Ongoing/);
    assert.match(described.stdout, new RegExp(`${topic}-\\d`));
    await open.abort();
  });

  it('the coordinator aborts a transaction left open past transaction.timeout.ms', async () => {
    const topic = 'txn-timeout';
    await createTopic(topic, 1);
    const producer = await transactionalProducer('timed-out-tx', 1000);
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ value: 'never-committed' }] });
    await eventually(
      'the timed-out transaction is aborted',
      async () => (await describe('timed-out-tx')).transactionState === 'CompleteAbort',
      20_000,
    );
    const [stable] = await offsets(topic, 1, READ_COMMITTED);
    const [end] = await offsets(topic, 1, READ_UNCOMMITTED);
    assert.equal(stable, end);
    await assert.rejects(txn.commit(), /fenced|epoch/i);
  });

  it('confluent-kafka-python (librdkafka): commit and abort, read back by its read_committed consumer', async function () {
    if (spawnSync(PYTHON, ['-c', 'import confluent_kafka'], { stdio: 'ignore' }).status !== 0) {
      const why = `${PYTHON} cannot import confluent_kafka (apt-get install -y python3-confluent-kafka)`;
      if (process.env.CI === 'true') throw new Error(why);
      console.error(`\n    !!!!! SKIP: ${why} !!!!!\n`);
      this.skip();
    }
    const topic = 'txn-librdkafka';
    await createTopic(topic, 2);
    const script = `
import sys, json
from confluent_kafka import Producer, Consumer
bootstrap, topic = sys.argv[1], sys.argv[2]
p = Producer({'bootstrap.servers': bootstrap, 'transactional.id': 'librdkafka-tx'})
p.init_transactions(30)
for name, commit in (('committed-1', True), ('aborted', False), ('committed-2', True)):
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, key=str(i), value='%s-%d' % (name, i))
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'librdkafka-reader', 'auto.offset.reset': 'earliest', 'enable.partition.eof': True})
c.subscribe([topic])
values, eofs = [], set()
while len(eofs) < 2:
    m = c.poll(30)
    if m is None:
        raise SystemExit('no message within 30 s')
    if m.error():
        if m.error().code() == -191:
            eofs.add(m.partition())
            continue
        raise SystemExit(str(m.error()))
    values.append(m.value().decode())
c.close()
print(json.dumps(sorted(values)))
`;
    const run = spawnSync(PYTHON, ['-c', script, broker.bootstrap, topic], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, run.stderr);
    const expected = ['committed-1', 'committed-2'].flatMap((name) => [0, 1, 2, 3].map((i) => `${name}-${i}`)).sort();
    assert.deepEqual(JSON.parse(run.stdout.trim().split('\n').pop()!), expected);
  });

  it('kcat (librdkafka): -X transactional.id sends its input in one transaction, committed at its end', async function () {
    if (!hasCommand('kcat')) missingTool(this, 'kcat', 'apt-get install kcat');
    const topic = 'txn-kcat';
    await createTopic(topic, 1);
    const run = spawnSync('kcat', ['-b', broker.bootstrap, '-P', '-t', topic, '-X', 'transactional.id=kcat-tx'], {
      input: 'line-1\nline-2\nline-3\n',
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(await readValues(topic, false, 3), ['line-1', 'line-2', 'line-3']);
    assert.equal((await describe('kcat-tx')).transactionState, 'CompleteCommit');
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`${signal} mid-transaction: the restarted coordinator still holds it open, and a new instance aborts it`, async () => {
      const topic = `txn-restart-${signal.toLowerCase()}`;
      const transactionalId = `restart-tx-${signal.toLowerCase()}`;
      await createTopic(topic, 2);
      const first = await transactionalProducer(transactionalId);
      const open = await first.transaction();
      await open.send({
        topic,
        messages: [
          { key: 'a', value: 'lost-1' },
          { key: 'b', value: 'lost-2' },
        ],
      });
      producers.splice(0);

      await broker.stop(signal);
      broker = await broker.restart();
      await reconnect();

      await eventually(
        'the transaction is loaded again',
        async () => (await describe(transactionalId)).errorCode === Errors.NONE.code,
        30_000,
      );
      assert.equal((await describe(transactionalId)).transactionState, 'Ongoing');
      assert.deepEqual(await offsets(topic, 2, READ_COMMITTED), [0, 0], 'the open transaction still holds the last stable offset');
      assert.equal(
        (await offsets(topic, 2, READ_UNCOMMITTED)).reduce((a, b) => a + b, 0),
        2,
      );
      const second = await transactionalProducer(transactionalId);
      const txn = await second.transaction();
      await txn.send({ topic, messages: [{ key: 'a', value: 'kept' }] });
      await txn.commit();
      assert.deepEqual(await readValues(topic, false, 1), ['kept']);
      assert.deepEqual(await offsets(topic, 2, READ_COMMITTED), await offsets(topic, 2, READ_UNCOMMITTED));
    });
  }

  /** OffsetFetch v7 of one partition: its error code and offset, with or without requireStable. */
  async function fetchCommitted(groupId: string, topic: string, requireStable: boolean): Promise<[number, number]> {
    const res = await call<OffsetFetchResponse>(
      client,
      ApiKey.OffsetFetch,
      7,
      makeOffsetFetchRequest({ groupId, topics: [{ name: topic, partitionIndexes: [0] }], requireStable }),
    );
    assert.equal(res.errorCode, Errors.NONE.code);
    const p = res.topics[0]!.partitions[0]!;
    return [p.errorCode, Number(p.committedOffset)];
  }

  it('kafkajs sendOffsets: the group offsets commit with the transaction, stay out of an aborted one, and survive a SIGKILL while pending', async () => {
    const input = 'ctp-in';
    const output = 'ctp-out';
    const groupId = 'ctp-group';
    await createTopic(input, 1);
    await createTopic(output, 1);
    const process = async (producer: Producer, from: number, to: number, open?: Transaction) => {
      const txn = open ?? (await producer.transaction());
      await txn.send({
        topic: output,
        messages: Array.from({ length: to - from }, (_, i) => ({ value: `out-${from + i}` })),
      });
      await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition: 0, offset: String(to) }] }] });
      return txn;
    };

    // EndTxn is answered once the commit is prepared; the offsets become stable with the markers.
    const stable = async (offset: number) => {
      await eventually(
        `offset ${offset} committed and stable`,
        async () => (await fetchCommitted(groupId, input, true))[0] === Errors.NONE.code,
        30_000,
      );
      assert.deepEqual(await fetchCommitted(groupId, input, true), [Errors.NONE.code, offset]);
    };
    const producer = await transactionalProducer('ctp-tx');
    await (await process(producer, 0, 5)).commit();
    await stable(5);

    const aborted = await process(producer, 5, 10);
    assert.deepEqual(await fetchCommitted(groupId, input, true), [Errors.UNSTABLE_OFFSET_COMMIT.code, -1]);
    assert.deepEqual(await fetchCommitted(groupId, input, false), [Errors.NONE.code, 5], 'without requireStable: the committed offset');
    await aborted.abort();
    await stable(5);

    await process(producer, 5, 10);
    producers.splice(0);
    await broker.stop('SIGKILL');
    broker = await broker.restart();
    await reconnect();
    await eventually(
      'the pending offsets are loaded again',
      async () => {
        try {
          return (await fetchCommitted(groupId, input, true))[0] === Errors.UNSTABLE_OFFSET_COMMIT.code;
        } catch {
          return false;
        }
      },
      30_000,
    );
    const next = await transactionalProducer('ctp-tx');
    // kafkajs initializes the transactional id with its first transaction: that fences the old instance.
    const fencing = await next.transaction();
    await stable(5);
    await (await process(next, 5, 10, fencing)).commit();
    await stable(10);
    assert.deepEqual(await readValues(output, false, 10), Array.from({ length: 10 }, (_, i) => `out-${i}`).sort());
  });

  /** Runs compat/java/TransformProcessor; resolves with the process and the events it prints, as they come. */
  async function transformProcessor(
    args: string[],
  ): Promise<{ child: ChildProcess; events: { event: string; records: number }[]; stderr: () => string }> {
    const classpath = await javaClasspath('TransformProcessor');
    const child = spawn('java', [...JVM_OPTIONS, '-cp', classpath, 'TransformProcessor', broker.bootstrap, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const events: { event: string; records: number }[] = [];
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith('{')) events.push(JSON.parse(line) as { event: string; records: number });
    });
    return { child, events, stderr: () => stderr };
  }

  it("Java's consume-transform-produce loop (sendOffsetsToTransaction, read_committed): a SIGKILLed instance is fenced, its transaction aborted, every input record is output once", async function () {
    const why = javaUnavailable();
    if (why !== null) missingTool(this, `the Java client (${why})`, 'scripts/install-test-clients.sh');
    const input = 'eos-in';
    const output = 'eos-out';
    const records = 30;
    await createTopic(input, 3);
    await createTopic(output, 3);
    const plain = kafka.producer();
    await plain.connect();
    await plain.send({ topic: input, messages: Array.from({ length: records }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) });
    await plain.disconnect();

    const zombie = await transformProcessor([input, output, 'eos-group', 'eos-tx', 'open', String(records)]);
    await eventually('the first instance holds a transaction open', () => zombie.events.some((e) => e.event === 'open'), 60_000);
    const inFlight = zombie.events.find((e) => e.event === 'open')!.records;
    assert.ok(inFlight > 0);
    zombie.child.kill('SIGKILL');
    assert.deepEqual(await offsets(output, 3, READ_COMMITTED), [0, 0, 0], 'nothing of the open transaction is stable');

    const successor = await transformProcessor([input, output, 'eos-group', 'eos-tx', 'run', String(records)]);
    const exitCode = await new Promise<number | null>((resolve) => successor.child.on('exit', resolve));
    assert.equal(exitCode, 0, successor.stderr());
    assert.deepEqual(successor.events.at(-1), { event: 'done', records });

    const expected = Array.from({ length: records }, (_, i) => `v${i}-out`).sort();
    assert.deepEqual(await readValues(output, false, records), expected, 'read_committed: every input record exactly once');
    const uncommitted = await readValues(output, true, records + inFlight);
    assert.equal(uncommitted.length, records + inFlight, 'read_uncommitted also sees the aborted transaction');
    const admin = kafka.admin();
    await admin.connect();
    try {
      const [committed] = await admin.fetchOffsets({ groupId: 'eos-group', topics: [input] });
      const total = committed!.partitions.reduce((n, p) => n + Number(p.offset), 0);
      assert.equal(total, records, "the group's offsets committed with the output are at the end of the input");
    } finally {
      await admin.disconnect();
    }
  });

  it('KIP-890 part 1: a transactional produce to a partition not in the transaction is refused, so no transaction is left hanging', async () => {
    const topic = 'txn-verify';
    await createTopic(topic, 1);
    const transactionalId = 'verify-tx';
    let producer = { producerId: -1n, producerEpoch: -1 };
    await eventually(
      'InitProducerId for the transactional id',
      async () => {
        const res = await call<InitProducerIdResponse>(
          client,
          ApiKey.InitProducerId,
          4,
          makeInitProducerIdRequest({ transactionalId, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 }),
        );
        producer = res;
        return res.errorCode === Errors.NONE.code;
      },
      30_000,
    );
    let sequence = 0;
    const produce = async (version: number): Promise<number> => {
      const records = await buildRecordBatch(
        { producerId: producer.producerId, producerEpoch: producer.producerEpoch, baseSequence: sequence, isTransactional: true },
        [{ key: null, value: Buffer.from(`v${sequence}`), timestamp: Date.now() }],
      );
      const code = await produceToPartition0(client, topic, records, { transactionalId, version });
      if (code === Errors.NONE.code) sequence++;
      return code;
    };
    const addPartition = async () =>
      (
        await call<AddPartitionsToTxnResponse>(
          client,
          ApiKey.AddPartitionsToTxn,
          3,
          makeAddPartitionsToTxnRequest({
            v3AndBelowTransactionalId: transactionalId,
            v3AndBelowProducerId: producer.producerId,
            v3AndBelowProducerEpoch: producer.producerEpoch,
            v3AndBelowTopics: [{ name: topic, partitions: [0] }],
          }),
        )
      ).resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode;
    const endTxn = async (committed: boolean) =>
      (
        await call<EndTxnResponse>(
          client,
          ApiKey.EndTxn,
          3,
          makeEndTxnRequest({ transactionalId, producerId: producer.producerId, producerEpoch: producer.producerEpoch, committed }),
        )
      ).errorCode;

    assert.equal(await produce(9), Errors.INVALID_TXN_STATE.code, 'not added: refused (INVALID_TXN_STATE before Produce v11)');
    // Offsets of a transaction that never added the group's offsets partition (no AddOffsetsToTxn).
    let offsetCommitError = -1;
    await eventually(
      'the group coordinator answers TxnOffsetCommit',
      async () => {
        const res = await call<TxnOffsetCommitResponse>(
          client,
          ApiKey.TxnOffsetCommit,
          3,
          makeTxnOffsetCommitRequest({
            transactionalId,
            groupId: 'verify-group',
            producerId: producer.producerId,
            producerEpoch: producer.producerEpoch,
            generationId: -1,
            memberId: '',
            topics: [
              { name: topic, partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: '' }] },
            ],
          }),
        );
        offsetCommitError = res.topics[0]!.partitions[0]!.errorCode;
        return ![Errors.COORDINATOR_NOT_AVAILABLE.code, Errors.NOT_COORDINATOR.code, Errors.COORDINATOR_LOAD_IN_PROGRESS.code].includes(
          offsetCommitError,
        );
      },
      30_000,
    );
    assert.equal(offsetCommitError, Errors.INVALID_TXN_STATE.code);
    assert.deepEqual(await fetchCommitted('verify-group', topic, true), [Errors.NONE.code, -1], 'nothing pending holds the group');
    assert.equal(await produce(11), Errors.TRANSACTION_ABORTABLE.code, 'Produce v11 knows TRANSACTION_ABORTABLE');
    assert.equal(await addPartition(), Errors.NONE.code);
    assert.equal(await produce(9), Errors.NONE.code);
    assert.equal(await endTxn(false), Errors.NONE.code);
    await eventually('the abort completes', async () => (await describe(transactionalId)).transactionState === 'CompleteAbort', 10_000);
    // A batch of the ended transaction that arrives late would open a transaction no marker ends.
    assert.equal(await produce(9), Errors.INVALID_TXN_STATE.code);
    const [stable] = await offsets(topic, 1, READ_COMMITTED);
    const [end] = await offsets(topic, 1, READ_UNCOMMITTED);
    assert.equal(stable, end, 'nothing holds the last stable offset');
  });
});
