// The partition side of transactions against the real broker process: transactional batches
// written over a raw socket, ended by WriteTxnMarkers as a transaction coordinator ends them,
// then read back by real consumers. An aborted transaction is invisible to read_committed
// (kafkajs and librdkafka by default) and visible to read_uncommitted; an open one holds the
// last stable offset; both survive a restart (SIGTERM and SIGKILL).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Kafka, logLevel } from 'kafkajs';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import { makeInitProducerIdRequest, type InitProducerIdResponse } from '../../../protocol/messages/init-producer-id.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
  type ListOffsetsResponse,
} from '../../../protocol/messages/list-offsets.ts';
import {
  makeWriteTxnMarkersRequest,
  makeWriteTxnMarkersRequestWritableTxnMarker,
  makeWriteTxnMarkersRequestWritableTxnMarkerTopic,
  type WriteTxnMarkersResponse,
} from '../../../protocol/messages/write-txn-markers.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { javaUnavailable } from '../../../compat/clients/java.ts';
import { kafkaTransactions } from '../../helpers/kafka-transactions.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { autoCreateTopic, call, produceToPartition0 } from '../../helpers/raw-requests.ts';
import { hasCommand, missingTool } from '../../helpers/runtimes.ts';

const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;

interface Producer {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  sequence: number;
}

describe('Transactions, partition side: markers, LSO, read_committed (real broker process)', function () {
  this.timeout(120_000);
  let broker: BrokerProcess;
  let client: RawClient;

  before(async () => {
    // These tests write transactional batches and markers themselves, with no transaction
    // coordinator behind them, so KIP-890's verification (which would ask it) is off.
    broker = await spawnBroker({ overrides: { 'transaction.partition.verification.enable': false } });
    client = await RawClient.connect(broker.port, broker.host);
  });

  after(async () => {
    client?.close();
    await broker?.cleanup();
  });

  async function reconnect(): Promise<void> {
    client.close();
    client = await RawClient.connect(broker.port, broker.host);
  }

  function createTopic(topic: string): Promise<void> {
    return autoCreateTopic(client, topic, Buffer.from('warm-up'));
  }

  async function newProducer(): Promise<Producer> {
    const res = await call<InitProducerIdResponse>(
      client,
      ApiKey.InitProducerId,
      4,
      makeInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 60_000 }),
    );
    assert.equal(res.errorCode, Errors.NONE.code);
    return { producerId: res.producerId, producerEpoch: res.producerEpoch, sequence: 0 };
  }

  function plain(...values: string[]): Promise<Buffer> {
    return buildRecordBatch(
      {},
      values.map((v) => ({ key: null, value: Buffer.from(v), timestamp: Date.now() })),
    );
  }

  async function transactional(p: Producer, ...values: string[]): Promise<Buffer> {
    const batch = await buildRecordBatch(
      { producerId: p.producerId, producerEpoch: p.producerEpoch, baseSequence: p.sequence, isTransactional: true },
      values.map((v) => ({ key: null, value: Buffer.from(v), timestamp: Date.now() })),
    );
    p.sequence += values.length;
    return batch;
  }

  function produce(topic: string, transactionalId: string | null, records: Buffer): Promise<number> {
    return produceToPartition0(client, topic, records, { transactionalId });
  }

  async function endTxn(
    topic: string,
    p: Producer,
    commit: boolean,
    coordinatorEpoch = 0,
    producerEpoch = p.producerEpoch,
  ): Promise<number> {
    const res = await call<WriteTxnMarkersResponse>(
      client,
      ApiKey.WriteTxnMarkers,
      1,
      makeWriteTxnMarkersRequest({
        markers: [
          makeWriteTxnMarkersRequestWritableTxnMarker({
            producerId: p.producerId,
            producerEpoch,
            transactionResult: commit,
            coordinatorEpoch,
            topics: [makeWriteTxnMarkersRequestWritableTxnMarkerTopic({ name: topic, partitionIndexes: [0] })],
          }),
        ],
      }),
    );
    assert.equal(res.markers[0]!.producerId, p.producerId);
    return res.markers[0]!.topics[0]!.partitions[0]!.errorCode;
  }

  async function latestOffset(topic: string, isolationLevel: number): Promise<number> {
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
            partitions: [makeListOffsetsRequestListOffsetsPartition({ partitionIndex: 0, timestamp: -1n })],
          }),
        ],
      }),
    );
    const p = res.topics[0]!.partitions[0]!;
    assert.equal(p.errorCode, Errors.NONE.code);
    return Number(p.offset);
  }

  async function rawFetch(topic: string, isolationLevel: number): Promise<FetchResponse['responses'][number]['partitions'][number]> {
    const res = await call<FetchResponse>(
      client,
      ApiKey.Fetch,
      11,
      makeFetchRequest({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        isolationLevel,
        topics: [
          makeFetchRequestFetchTopic({
            topic,
            partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 })],
          }),
        ],
      }),
    );
    return res.responses[0]!.partitions[0]!;
  }

  /** The values a kafkajs consumer in a group of its own reads from the start, up to the record at `lastOffset`. */
  async function kafkajsValues(topic: string, lastOffset: number, readUncommitted: boolean): Promise<string[]> {
    const kafka = new Kafka({ clientId: 'txn-reader', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({
      groupId: `txn-reader-${topic}-${readUncommitted}-${Date.now()}`,
      readUncommitted,
      maxWaitTimeInMs: 100,
    });
    const values: { offset: number; value: string }[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`kafkajs read ${JSON.stringify(values)}, not the record at ${lastOffset}`)),
          30_000,
        );
        consumer
          .run({
            eachMessage: async ({ message }) => {
              const offset = Number(message.offset);
              values.push({ offset, value: message.value!.toString() });
              if (offset >= lastOffset) {
                clearTimeout(timer);
                resolve();
              }
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
    return values.map((v) => v.value);
  }

  /** What kcat (librdkafka, read_committed by default) reads from the start up to the end it sees. */
  function kcatValues(topic: string, isolation: 'read_committed' | 'read_uncommitted'): string[] {
    const run = spawnSync(
      'kcat',
      [
        '-b',
        broker.bootstrap,
        '-C',
        '-t',
        topic,
        '-p',
        '0',
        '-o',
        'beginning',
        '-e',
        '-q',
        '-f',
        '%s\\n',
        '-X',
        `isolation.level=${isolation}`,
      ],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    assert.equal(run.status, 0, run.stderr);
    return run.stdout.split('\n').filter((l) => l !== '');
  }

  it('kafka-transactions (KIP-664) finds a hanging transaction with DescribeProducers and ListTransactions, and aborts it with WriteTxnMarkers', async function () {
    const why = javaUnavailable();
    if (why !== null) missingTool(this, `Kafka's tools (${why})`, 'scripts/install-test-clients.sh');
    const topic = 'txn-hanging';
    await createTopic(topic);
    // With verification off, a producer no coordinator knows can open a transaction here: a hanging one.
    const ghost = await newProducer();
    assert.equal(await produce(topic, 'ghost-tx', await transactional(ghost, 'g1')), Errors.NONE.code);
    assert.equal(await latestOffset(topic, READ_COMMITTED), 1, 'the hanging transaction holds the last stable offset');

    const producers = kafkaTransactions(broker.bootstrap, 'describe-producers', '--topic', topic, '--partition', '0');
    assert.equal(producers.status, 0, producers.stderr);
    assert.match(producers.stdout, new RegExp(`\\b${ghost.producerId}\\b`));

    const hanging = kafkaTransactions(broker.bootstrap, 'find-hanging', '--broker-id', '1', '--max-transaction-timeout', '0');
    assert.equal(hanging.status, 0, hanging.stderr);
    assert.match(hanging.stdout, new RegExp(`${topic}\\s+0\\s+${ghost.producerId}`), hanging.stdout);

    const abort = kafkaTransactions(broker.bootstrap, 'abort', '--topic', topic, '--partition', '0', '--start-offset', '1');
    assert.equal(abort.status, 0, abort.stderr);
    assert.equal(await latestOffset(topic, READ_COMMITTED), await latestOffset(topic, READ_UNCOMMITTED), 'aborted: the LSO moves on');
    assert.equal(await produce(topic, null, await plain('after')), Errors.NONE.code);
    assert.deepEqual(await kafkajsValues(topic, 3, false), ['warm-up', 'after'], 'the aborted record is not read');
  });

  it('WriteTxnMarkers is advertised on the broker listener', async () => {
    const versions = await call<ApiVersionsResponse>(
      client,
      ApiKey.ApiVersions,
      3,
      makeApiVersionsRequest({ clientSoftwareName: 'txn-test', clientSoftwareVersion: '1' }),
    );
    const api = versions.apiKeys.find((k) => k.apiKey === ApiKey.WriteTxnMarkers);
    assert.deepEqual(api && [api.minVersion, api.maxVersion], [0, 1]);
  });

  it('an aborted transaction is invisible to read_committed and visible to read_uncommitted; markers are never records', async function () {
    const topic = 'txn-visibility';
    await createTopic(topic);
    const a = await newProducer();
    const b = await newProducer();
    assert.equal(await produce(topic, 'tx-a', await transactional(a, 'a1', 'a2')), Errors.NONE.code);
    assert.equal(await produce(topic, null, await plain('p1')), Errors.NONE.code);
    assert.equal(await produce(topic, 'tx-b', await transactional(b, 'b1')), Errors.NONE.code);
    assert.equal(await produce(topic, 'tx-a', await transactional(a, 'a3')), Errors.NONE.code);
    // Both open: a read_committed reader stops at the first of them.
    assert.equal(await latestOffset(topic, READ_COMMITTED), 1);
    assert.equal(await latestOffset(topic, READ_UNCOMMITTED), 6);
    assert.equal(await endTxn(topic, a, false), Errors.NONE.code);
    // a's abort leaves b open: the LSO moves to b's first offset only.
    assert.equal(await latestOffset(topic, READ_COMMITTED), 4);
    assert.equal(await endTxn(topic, b, true), Errors.NONE.code);
    assert.equal(await produce(topic, null, await plain('p2')), Errors.NONE.code);
    const end = await latestOffset(topic, READ_UNCOMMITTED);
    assert.equal(end, 9);
    assert.equal(await latestOffset(topic, READ_COMMITTED), end);

    const committed = await rawFetch(topic, READ_COMMITTED);
    assert.equal(committed.lastStableOffset, BigInt(end));
    assert.deepEqual(
      committed.abortedTransactions?.map((t) => [t.producerId, t.firstOffset]),
      [[a.producerId, 1n]],
    );
    const uncommitted = await rawFetch(topic, READ_UNCOMMITTED);
    assert.equal(uncommitted.abortedTransactions, null);

    assert.deepEqual(await kafkajsValues(topic, 8, false), ['warm-up', 'p1', 'b1', 'p2']);
    assert.deepEqual(await kafkajsValues(topic, 8, true), ['warm-up', 'a1', 'a2', 'p1', 'b1', 'a3', 'p2']);
    if (!hasCommand('kcat')) missingTool(this, 'kcat', 'apt-get install kcat');
    assert.deepEqual(kcatValues(topic, 'read_committed'), ['warm-up', 'p1', 'b1', 'p2']);
    assert.deepEqual(kcatValues(topic, 'read_uncommitted'), ['warm-up', 'a1', 'a2', 'p1', 'b1', 'a3', 'p2']);
  });

  it('refuses a marker from a fenced producer epoch or an older coordinator, and one for a partition it does not have', async () => {
    const topic = 'txn-fencing';
    await createTopic(topic);
    const p = await newProducer();
    assert.equal(await produce(topic, 'tx-f', await transactional(p, 'f1')), Errors.NONE.code);
    assert.equal(await endTxn(topic, p, false, 4), Errors.NONE.code);
    assert.equal(await endTxn(topic, p, false, 3), Errors.TRANSACTION_COORDINATOR_FENCED.code);
    // A bumped epoch (a new instance of the transactional id) fences the old one.
    const bumped = { ...p, producerEpoch: p.producerEpoch + 1, sequence: 0 };
    assert.equal(await endTxn(topic, bumped, false, 4), Errors.NONE.code);
    assert.equal(await endTxn(topic, p, true, 4), Errors.INVALID_PRODUCER_EPOCH.code);
    assert.equal(await endTxn('txn-no-such-topic', p, true, 4), Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`an open transaction still holds the LSO, and an aborted one stays filtered, after a ${signal} restart`, async () => {
      const topic = `txn-restart-${signal.toLowerCase()}`;
      await createTopic(topic);
      const aborted = await newProducer();
      const open = await newProducer();
      assert.equal(await produce(topic, 'tx-x', await transactional(aborted, 'x1')), Errors.NONE.code);
      assert.equal(await endTxn(topic, aborted, false), Errors.NONE.code);
      assert.equal(await produce(topic, null, await plain('q1')), Errors.NONE.code);
      assert.equal(await produce(topic, 'tx-y', await transactional(open, 'y1', 'y2')), Errors.NONE.code);
      assert.equal(await produce(topic, null, await plain('q2')), Errors.NONE.code);
      assert.equal(await latestOffset(topic, READ_COMMITTED), 4);

      await broker.stop(signal);
      broker = await broker.restart();
      await reconnect();

      assert.equal(await latestOffset(topic, READ_COMMITTED), 4);
      assert.equal(await latestOffset(topic, READ_UNCOMMITTED), 7);
      assert.equal(await endTxn(topic, open, true), Errors.NONE.code);
      const end = await latestOffset(topic, READ_UNCOMMITTED);
      assert.equal(await latestOffset(topic, READ_COMMITTED), end);
      assert.deepEqual(await kafkajsValues(topic, 6, false), ['warm-up', 'q1', 'y1', 'y2', 'q2']);
    });
  }
});
