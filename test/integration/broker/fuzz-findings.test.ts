// Requests the protocol fuzzer found failing inside the broker (answered UNKNOWN_SERVER_ERROR,
// a stack trace logged at error level), sent as they were to the real broker process: each
// is now answered with Kafka's code, logged at info at most, and the connection serves the
// next request.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { makeAlterClientQuotasRequest, type AlterClientQuotasResponse } from '../../../protocol/messages/alter-client-quotas.ts';
import { makeCreatePartitionsRequest, type CreatePartitionsResponse } from '../../../protocol/messages/create-partitions.ts';
import { makeCreateTopicsRequest, type CreateTopicsResponse } from '../../../protocol/messages/create-topics.ts';
import { makeDescribeConfigsRequest, type DescribeConfigsResponse } from '../../../protocol/messages/describe-configs.ts';
import { makeDescribeTransactionsRequest } from '../../../protocol/messages/describe-transactions.ts';
import { makeFindCoordinatorRequest, type FindCoordinatorResponse } from '../../../protocol/messages/find-coordinator.ts';
import { makeJoinGroupRequest, type JoinGroupResponse } from '../../../protocol/messages/join-group.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import { MAX_STRING_BYTES, utf8Length } from '../../../protocol/primitives.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
} from '../../../protocol/messages/produce.ts';
import { buildRecordBatch, legacyRecords, NO_TIMESTAMP } from '../../../protocol/records/index.ts';
import {
  makeWriteTxnMarkersRequest,
  makeWriteTxnMarkersRequestWritableTxnMarker,
  makeWriteTxnMarkersRequestWritableTxnMarkerTopic,
  type WriteTxnMarkersResponse,
} from '../../../protocol/messages/write-txn-markers.ts';
import { completeLines, errorLines } from '../../../scripts/fuzz/broker-log.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { autoCreateTopic, call, frame, produceToPartition0 } from '../../helpers/raw-requests.ts';
import { negativeTimestampBatch, timestampedBatch } from '../../helpers/record-batches.ts';
import { eventually } from '../../helpers/wait.ts';

const TOPIC = 'fuzz-findings';
/** A name as long as a string may be: an error message quoting it cannot be. */
const LONGEST_NAME = 'x'.repeat(MAX_STRING_BYTES);

describe('requests the fuzzer found failing inside the broker (real broker process)', function () {
  this.timeout(60_000);
  let broker: BrokerProcess;
  let client: RawClient;

  before(async () => {
    broker = await spawnBroker();
    client = await RawClient.connect(broker.port, broker.host);
    await autoCreateTopic(client, TOPIC, Buffer.from('first'));
  });

  after(async () => {
    client?.close();
    await broker?.cleanup();
  });

  /** The broker's log once `line` shows in it (the log is written asynchronously). */
  async function logThrough(line: RegExp): Promise<string[]> {
    await eventually(`a log line matching ${line}`, () => line.test(broker.stderr()), 10_000);
    return completeLines(broker.stderr(), 0).lines;
  }

  async function servesNext(): Promise<void> {
    const versions = await call<ApiVersionsResponse>(
      client,
      ApiKey.ApiVersions,
      3,
      makeApiVersionsRequest({ clientSoftwareName: 'sluice-test', clientSoftwareVersion: '1.0' }),
    );
    assert.equal(versions.errorCode, Errors.NONE.code);
    assert.equal(broker.child.exitCode, null, 'the broker process is alive');
  }

  /** Fetch v2 (message format v1) of partition 0 of `topic` from `fetchOffset`, without waiting. */
  const fetchV2 = (topic: string, fetchOffset: bigint) =>
    call<FetchResponse>(
      client,
      ApiKey.Fetch,
      2,
      makeFetchRequest({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        topics: [
          makeFetchRequestFetchTopic({
            topic,
            partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset, partitionMaxBytes: 1 << 20 })],
          }),
        ],
      }),
    );

  const marker = (producerId: bigint, producerEpoch: number, partitionIndexes: number[]) =>
    makeWriteTxnMarkersRequestWritableTxnMarker({
      producerId,
      producerEpoch,
      transactionResult: true,
      coordinatorEpoch: 0,
      topics: [makeWriteTxnMarkersRequestWritableTxnMarkerTopic({ name: TOPIC, partitionIndexes })],
    });

  for (const version of [0, 1]) {
    it(`WriteTxnMarkers v${version}: a marker with producer id -1 or without an epoch is answered INVALID_REQUEST, the valid marker beside them is written`, async () => {
      const request = makeWriteTxnMarkersRequest({
        markers: [marker(-1n, 0, [0]), marker(4242n + BigInt(version), -1, [0]), marker(77n + BigInt(version), 0, [0])],
      });
      const response = await call<WriteTxnMarkersResponse>(client, ApiKey.WriteTxnMarkers, version, request);
      assert.deepEqual(
        response.markers.map((m) => [m.producerId, m.topics[0]!.partitions[0]!.errorCode]),
        [
          [-1n, Errors.INVALID_REQUEST.code],
          [4242n + BigInt(version), Errors.INVALID_REQUEST.code],
          [77n + BigInt(version), Errors.NONE.code],
        ],
      );
      await servesNext();
      const lines = await logThrough(
        new RegExp(`"client":"[^"]+:${client.socket.localPort}","error":"INVALID_REQUEST","refusedMarkers":2,`),
      );
      assert.deepEqual(
        errorLines(lines).map((l) => l.raw),
        [],
      );
    });
  }

  /** The error messages of a response, each within what a string holds and cut where it quoted the long name. */
  function assertCut(messages: (string | null)[]): void {
    for (const message of messages) {
      assert.ok(message !== null && Buffer.byteLength(message) <= MAX_STRING_BYTES, `message of ${message?.length} characters`);
      assert.match(message, /x\.\.\.$/);
    }
  }

  it('CreateTopics v6 with a topic name of 32767 bytes: INVALID_TOPIC_EXCEPTION, its message cut to fit', async () => {
    const request = makeCreateTopicsRequest({
      topics: [
        {
          name: LONGEST_NAME,
          numPartitions: 1,
          replicationFactor: -1,
          assignments: [],
          configs: [{ name: LONGEST_NAME, value: 'delete' }],
        },
      ],
      timeoutMs: 339,
    });
    const response = await call<CreateTopicsResponse>(client, ApiKey.CreateTopics, 6, request);
    assert.deepEqual(
      response.topics.map((t) => [t.name.length, t.errorCode]),
      [[MAX_STRING_BYTES, Errors.INVALID_TOPIC_EXCEPTION.code]],
    );
    assertCut(response.topics.map((t) => t.errorMessage));
    await servesNext();
  });

  it('CreatePartitions v3 with a topic name of 32767 bytes: its code, its message cut to fit', async () => {
    const request = makeCreatePartitionsRequest({ topics: [{ name: LONGEST_NAME, count: -1, assignments: [] }], timeoutMs: 156 });
    const response = await call<CreatePartitionsResponse>(client, ApiKey.CreatePartitions, 3, request);
    assert.deepEqual(
      response.results.map((r) => [r.name.length, r.errorCode]),
      [[MAX_STRING_BYTES, Errors.UNKNOWN_TOPIC_OR_PARTITION.code]],
    );
    assertCut(response.results.map((r) => r.errorMessage));
    await servesNext();
  });

  it('DescribeConfigs v3 of a topic named with 32767 bytes: its code, its message cut to fit', async () => {
    const request = makeDescribeConfigsRequest({
      resources: [{ resourceType: 2, resourceName: LONGEST_NAME, configurationKeys: ['', 'fuzz'] }],
      includeDocumentation: true,
    });
    const response = await call<DescribeConfigsResponse>(client, ApiKey.DescribeConfigs, 3, request);
    assert.deepEqual(
      response.results.map((r) => [r.resourceName.length, r.errorCode]),
      [[MAX_STRING_BYTES, Errors.INVALID_TOPIC_EXCEPTION.code]],
    );
    assertCut(response.results.map((r) => r.errorMessage));
    await servesNext();
  });

  it('AlterClientQuotas v0 with an entity type of 32767 bytes: its code, its message cut to fit', async () => {
    const request = makeAlterClientQuotasRequest({
      entries: [
        { entity: [{ entityType: LONGEST_NAME, entityName: null }], ops: [{ key: 'producer_byte_rate', value: 1024, remove: false }] },
      ],
    });
    const response = await call<AlterClientQuotasResponse>(client, ApiKey.AlterClientQuotas, 0, request);
    assert.deepEqual(
      response.entries.map((e) => e.errorCode),
      [Errors.INVALID_REQUEST.code],
    );
    assertCut(response.entries.map((e) => e.errorMessage));
    await servesNext();
  });

  it('DescribeTransactions v0 with a transactional id of 32767 bytes of invalid UTF-8: the connection is closed as for a malformed request, the broker serves the next', async () => {
    const { bytes } = frame(ApiKey.DescribeTransactions, 0, makeDescribeTransactionsRequest({ transactionalIds: [LONGEST_NAME] }));
    const at = bytes.indexOf(LONGEST_NAME);
    bytes.fill(0xff, at, at + MAX_STRING_BYTES);
    const own = await RawClient.connect(broker.port, broker.host);
    try {
      own.send(bytes);
      await own.whenClosed();
    } finally {
      own.close();
    }
    await servesNext();
    await logThrough(/"apiKey":65,"apiVersion":0,"reason":"malformed request: string: 32767 bytes that are not UTF-8/);
  });

  it('Produce v5 with acks=0 of transactional records without a transactional id: the connection is closed, as Kafka tells an acks=0 producer, and logged at info', async () => {
    const records = await buildRecordBatch({ isTransactional: true, producerId: 5n, producerEpoch: 0, baseSequence: 0 }, [
      { value: Buffer.from('no transactional id'), timestamp: Date.now() },
    ]);
    const request = makeProduceRequest({
      transactionalId: null,
      acks: 0,
      timeoutMs: 5000,
      topicData: [
        makeProduceRequestTopicProduceData({ name: TOPIC, partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records })] }),
      ],
    });
    const own = await RawClient.connect(broker.port, broker.host);
    try {
      own.send(frame(ApiKey.Produce, 5, request).bytes);
      await own.whenClosed();
    } finally {
      own.close();
    }
    await servesNext();
    await logThrough(
      /"apiKey":0,"apiVersion":5,"error":"TRANSACTIONAL_ID_AUTHORIZATION_FAILED","reason":"Transactional records were sent without a transactional id","msg":"closing connection: a request without a response was refused"/,
    );
  });

  it('Fetch v2 of records with a timestamp below 0 (accepted from a producer, as Kafka does): down-converted with no timestamp, nothing lost', async () => {
    const topic = `${TOPIC}-timestamps`;
    await autoCreateTopic(client, topic, Buffer.from('first'));
    assert.equal(await produceToPartition0(client, topic, await negativeTimestampBatch()), Errors.NONE.code);
    const response = await fetchV2(topic, 1n);
    const partition = response.responses[0]!.partitions[0]!;
    assert.equal(partition.errorCode, Errors.NONE.code);
    const messages = await legacyRecords(partition.records ?? Buffer.alloc(0));
    assert.deepEqual(
      messages.map((m) => [m.offset, m.timestamp, m.value?.toString()]),
      [
        [1, NO_TIMESTAMP, 'before the epoch'],
        [2, 0, 'at the epoch'],
      ],
    );
    await servesNext();
  });

  it('Produce of a timestamp an hour or more ahead: INVALID_TIMESTAMP by default (Kafka 4), and where a topic allows it, Fetch v2 carries it exactly', async () => {
    const farAhead = 4611686018427387904n + 1n;
    const bounded = `${TOPIC}-future-bounded`;
    await autoCreateTopic(client, bounded, Buffer.from('first'));
    assert.equal(
      await produceToPartition0(client, bounded, await timestampedBatch(BigInt(Date.now() + 2 * 3_600_000))),
      Errors.INVALID_TIMESTAMP.code,
    );
    assert.equal(await produceToPartition0(client, bounded, await timestampedBatch(BigInt(Date.now() + 60_000))), Errors.NONE.code);

    const unbounded = `${TOPIC}-future-unbounded`;
    const created = await call<CreateTopicsResponse>(
      client,
      ApiKey.CreateTopics,
      6,
      makeCreateTopicsRequest({
        topics: [
          {
            name: unbounded,
            numPartitions: 1,
            replicationFactor: -1,
            assignments: [],
            configs: [{ name: 'message.timestamp.after.max.ms', value: '9223372036854775807' }],
          },
        ],
        timeoutMs: 5000,
      }),
    );
    assert.equal(created.topics[0]!.errorCode, Errors.NONE.code);
    await eventually(
      'the topic takes a record',
      async () => (await produceToPartition0(client, unbounded, await timestampedBatch(farAhead))) === Errors.NONE.code,
      10_000,
    );
    const response = await fetchV2(unbounded, 0n);
    const partition = response.responses[0]!.partitions[0]!;
    assert.equal(partition.errorCode, Errors.NONE.code);
    const set = partition.records ?? Buffer.alloc(0);
    // A magic 1 message: offset int64, size int32, crc int32, magic int8, attributes int8, then its timestamp.
    const timestamps: bigint[] = [];
    for (let at = 0; at + 12 <= set.length; at += 12 + set.readInt32BE(at + 8)) timestamps.push(set.readBigInt64BE(at + 18));
    assert.deepEqual(timestamps.slice(0, 2), [farAhead, farAhead + 1n]);
    await servesNext();
  });

  it('JoinGroup v5 from a client id of 32767 bytes: its member id fits a string, and the member joins with it', async () => {
    const longClientId = 'c'.repeat(MAX_STRING_BYTES);
    const join = (memberId: string) =>
      call<JoinGroupResponse>(
        client,
        ApiKey.JoinGroup,
        5,
        makeJoinGroupRequest({
          groupId: `${TOPIC}-group`,
          sessionTimeoutMs: 10_000,
          rebalanceTimeoutMs: 1000,
          memberId,
          protocolType: 'consumer',
          protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
        }),
        longClientId,
      );
    // FindCoordinator creates __consumer_offsets; the coordinator answers once it leads the group's partition.
    await eventually('a group coordinator', async () => {
      const found = await call<FindCoordinatorResponse>(
        client,
        ApiKey.FindCoordinator,
        3,
        makeFindCoordinatorRequest({ key: `${TOPIC}-group`, keyType: 0 }),
      );
      return found.errorCode === Errors.NONE.code;
    });
    const first = await join('');
    assert.equal(first.errorCode, Errors.MEMBER_ID_REQUIRED.code);
    assert.ok(utf8Length(first.memberId) <= MAX_STRING_BYTES);
    assert.match(first.memberId, /^c+-[0-9a-f-]{36}$/);
    const joined = await join(first.memberId);
    assert.equal(joined.errorCode, Errors.NONE.code);
    assert.equal(joined.leader, first.memberId);
    await servesNext();
  });

  it('logged none of these requests at error level', () => {
    // The log is written in order, and the lines of the requests above were waited for.
    assert.deepEqual(
      errorLines(completeLines(broker.stderr(), 0).lines).map((l) => l.raw),
      [],
    );
  });
});
