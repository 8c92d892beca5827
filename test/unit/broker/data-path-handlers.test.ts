/**
 * The data-path handlers over a real ReplicaManager and storage, each response encoded and
 * decoded with the codec at the version asked, as the server would send it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import { apis, ApiKey } from '../../../protocol/messages/index.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  makeFetchRequestForgottenTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../../protocol/messages/produce.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
  type ListOffsetsResponse,
} from '../../../protocol/messages/list-offsets.ts';
import { makeInitProducerIdRequest } from '../../../protocol/messages/init-producer-id.ts';
import {
  makeDeleteRecordsRequest,
  makeDeleteRecordsRequestDeleteRecordsPartition,
  makeDeleteRecordsRequestDeleteRecordsTopic,
} from '../../../protocol/messages/delete-records.ts';
import { makeDescribeLogDirsRequest } from '../../../protocol/messages/describe-log-dirs.ts';
import {
  makeOffsetForLeaderEpochRequest,
  makeOffsetForLeaderEpochRequestOffsetForLeaderPartition,
  makeOffsetForLeaderEpochRequestOffsetForLeaderTopic,
} from '../../../protocol/messages/offset-for-leader-epoch.ts';
import { makeDescribeProducersRequest, makeDescribeProducersRequestTopicRequest } from '../../../protocol/messages/describe-producers.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { batchesIn, CompressionType } from '../../../protocol/records/batch.ts';
import { buildRecordBatch } from '../../../protocol/records/builder.ts';
import { buildLegacyMessageSet, legacyRecords, magicAt } from '../../../protocol/records/legacy.ts';
import { LogManager } from '../../../storage/log-manager.ts';
import { handleFetch } from '../../../src/handlers/fetch.ts';
import { handleProduce } from '../../../src/handlers/produce.ts';
import { handleListOffsets } from '../../../src/handlers/list-offsets.ts';
import { handleDeleteRecords } from '../../../src/handlers/delete-records.ts';
import { handleDescribeLogDirs } from '../../../src/handlers/log-dirs.ts';
import { handleOffsetForLeaderEpoch } from '../../../src/handlers/offset-for-leader-epoch.ts';
import { handleDescribeProducers, handleInitProducerId } from '../../../src/handlers/producer-id.ts';
import { FetchSessionCache } from '../../../src/replication/fetch-session.ts';
import type { DataPathServices } from '../../../src/replication/index.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import { ProducerIdManager } from '../../../src/replication/producer-id-manager.ts';
import { ReplicaManager } from '../../../src/replication/replica-manager.ts';
import { LogManagerProvider } from '../../../src/replication/storage-adapter.ts';
import { flipBits } from '../../helpers/bytes.ts';
import { BackgroundErrors, logConfig } from '../../helpers/storage.ts';

const TOPIC = 'events';
const TOPIC_ID = 'c2x1aWNlLXRvcGljLWlkMQ';

/** Encodes with the codec and decodes back: what a client would read. */
function wire<T>(apiKey: number, response: T, version: number): T {
  const api = apis.get(apiKey)!;
  const w = new Writer();
  api.encodeResponse(w, response as never, version);
  return api.decodeResponse(new Reader(w.toBuffer()), version) as T;
}

describe('data-path handlers', function () {
  let dir: string;
  let logs: LogManager;
  let services: DataPathServices;
  let blocks: number;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-dp-'));
    logs = await LogManager.startup({ logDirs: [dir], defaultConfig: logConfig(), onBackgroundError: new BackgroundErrors().sink });
    const replicaManager = new ReplicaManager({ brokerId: 1, logs: new LogManagerProvider(logs) });
    for (const partition of [0, 1]) {
      await replicaManager.applyPartitionState(
        {
          topic: TOPIC,
          topicId: TOPIC_ID,
          partition,
          leaderId: 1,
          leaderEpoch: 0,
          partitionEpoch: 0,
          replicas: [1],
          isr: [1],
        },
        topicConfigLookup({}),
      );
    }
    blocks = 0;
    services = {
      replicaManager,
      fetchSessions: new FetchSessionCache(),
      producerIds: new ProducerIdManager(async () => ({ firstProducerId: BigInt(1000 * blocks++), size: 1000 })),
      topicNameOf: (id) => (id === TOPIC_ID ? TOPIC : undefined),
      topicIdOf: (name) => (name === TOPIC ? TOPIC_ID : undefined),
      fetchMaxBytes: () => 57_671_680,
      requestTimeoutMs: () => 30_000,
    };
  });

  afterEach(async () => {
    services.replicaManager.shutdown();
    await logs.shutdown();
    await rm(dir, { recursive: true, force: true });
  });

  async function produce(records: Buffer, version = 9, acks = 1, partition = 0): Promise<ProduceResponse | null> {
    const response = await handleProduce(
      services,
      makeProduceRequest({
        acks,
        timeoutMs: 5000,
        topicData: [
          makeProduceRequestTopicProduceData({
            name: TOPIC,
            partitionData: [makeProduceRequestPartitionProduceData({ index: partition, records })],
          }),
        ],
      }),
      version,
      'app',
      () => {},
      'PLAINTEXT',
    );
    return response === null ? null : wire(ApiKey.Produce, response, version);
  }

  function fetchRequest(version: number, fetchOffset = 0, more: Parameters<typeof makeFetchRequest>[0] = {}) {
    return makeFetchRequest({
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [
        makeFetchRequestFetchTopic({
          topic: TOPIC,
          topicId: TOPIC_ID,
          partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: BigInt(fetchOffset), partitionMaxBytes: 1 << 20 })],
        }),
      ],
      ...more,
    });
  }

  async function fetch(version: number, request = fetchRequest(version)): Promise<FetchResponse> {
    return wire(ApiKey.Fetch, await handleFetch(services, request, version, 'PLAINTEXT'), version);
  }

  const sample = (n = 3, compression = CompressionType.None) =>
    buildRecordBatch(
      { compression },
      Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`), timestamp: Date.now() + i })),
    );

  it('Produce answers each partition with its base offset at every version from v3', async () => {
    for (let version = 3; version <= 11; version++) {
      const r = await produce(await sample(2), version);
      const p = r!.responses[0]!.partitionResponses[0]!;
      assert.equal(p.errorCode, Errors.NONE.code, `v${version}`);
      assert.equal(p.baseOffset, BigInt((version - 3) * 2), `v${version}`);
    }
  });

  it('Produce v0-v2 message sets are stored as v2 batches', async () => {
    const v0 = await buildLegacyMessageSet({ magic: 0 }, [{ value: Buffer.from('a') }, { value: Buffer.from('b') }]);
    const v1 = await buildLegacyMessageSet({ magic: 1, compression: CompressionType.Gzip }, [
      { value: Buffer.from('c'), timestamp: Date.now() },
    ]);
    const r0 = await produce(v0, 0);
    const r2 = await produce(v1, 2);
    assert.equal(r0!.responses[0]!.partitionResponses[0]!.baseOffset, 0n);
    assert.equal(r2!.responses[0]!.partitionResponses[0]!.baseOffset, 2n);
    const p = (await fetch(4)).responses[0]!.partitions[0]!;
    const batches = [...batchesIn(p.records!, true)];
    assert.deepEqual(
      batches.map((b) => [b.magic, b.baseOffset, b.recordCount]),
      [
        [2, 0, 2],
        [2, 2, 1],
      ],
    );
  });

  it('Produce to an internal topic is INVALID_TOPIC_EXCEPTION for ordinary clients', async () => {
    const request = makeProduceRequest({
      acks: 1,
      timeoutMs: 1000,
      topicData: [
        makeProduceRequestTopicProduceData({
          name: '__consumer_offsets',
          partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records: await sample(1) })],
        }),
      ],
    });
    const r = (await handleProduce(services, request, 9, 'app', () => {}, 'PLAINTEXT'))!;
    assert.equal(r.responses[0]!.partitionResponses[0]!.errorCode, Errors.INVALID_TOPIC_EXCEPTION.code);
  });

  it('Produce with acks=0 sends no response but appends', async () => {
    assert.equal(await produce(await sample(1), 9, 0), null);
    assert.equal(services.replicaManager.getPartition(TOPIC, 0)!.logEndOffset, 1);
  });

  it('Produce v8+ carries the error message and record errors of a refused batch', async () => {
    const r = await produce(await sample(1), 9, 1, 7);
    assert.equal(r!.responses[0]!.partitionResponses[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
    const bad = await sample(2);
    flipBits(bad, bad.length - 1, 1);
    const corrupt = await produce(bad, 9);
    const p = corrupt!.responses[0]!.partitionResponses[0]!;
    assert.equal(p.errorCode, Errors.CORRUPT_MESSAGE.code);
    assert.match(p.errorMessage ?? '', /corrupt|CRC/i);
  });

  it('a retried idempotent batch is answered with its original base offset and not appended twice', async () => {
    const init = wire(
      ApiKey.InitProducerId,
      await handleInitProducerId(services, makeInitProducerIdRequest({ transactionalId: null, producerId: -1n, producerEpoch: -1 }), 4),
      4,
    );
    assert.equal(init.errorCode, Errors.NONE.code);
    const batch = await buildRecordBatch({ producerId: init.producerId, producerEpoch: init.producerEpoch, baseSequence: 0 }, [
      { value: Buffer.from('once'), timestamp: Date.now() },
    ]);
    await produce(await sample(2));
    const first = await produce(Buffer.from(batch));
    const retry = await produce(Buffer.from(batch));
    assert.equal(first!.responses[0]!.partitionResponses[0]!.baseOffset, 2n);
    assert.equal(retry!.responses[0]!.partitionResponses[0]!.baseOffset, 2n);
    assert.equal(retry!.responses[0]!.partitionResponses[0]!.errorCode, Errors.NONE.code);
    assert.equal(services.replicaManager.getPartition(TOPIC, 0)!.logEndOffset, 3);
    const producers = await handleDescribeProducers(
      services,
      makeDescribeProducersRequest({
        topics: [makeDescribeProducersRequestTopicRequest({ name: TOPIC, partitionIndexes: [0] })],
      }),
    );
    const state = producers.topics[0]!.partitions[0]!.activeProducers;
    assert.deepEqual(
      state.map((s) => [s.producerId, s.producerEpoch, s.lastSequence]),
      [[init.producerId, 0, 0]],
    );
  });

  it('Fetch returns stored batches with every offset field, at v4 through v17 (topic ids from v13)', async () => {
    await produce(await sample(3, CompressionType.Gzip));
    for (let version = 4; version <= 17; version++) {
      const r = await fetch(version);
      const topic = r.responses[0]!;
      if (version >= 13) assert.equal(topic.topicId, TOPIC_ID);
      else assert.equal(topic.topic, TOPIC);
      const p = topic.partitions[0]!;
      assert.equal(p.errorCode, Errors.NONE.code, `v${version}`);
      assert.equal(p.highWatermark, 3n);
      assert.equal(p.lastStableOffset, 3n);
      if (version >= 5) assert.equal(p.logStartOffset, 0n);
      if (version >= 11) assert.equal(p.preferredReadReplica, -1);
      const batches = [...batchesIn(p.records!, true)];
      assert.deepEqual(
        batches.map((b) => [b.baseOffset, b.recordCount, b.compression]),
        [[0, 3, CompressionType.Gzip]],
      );
    }
  });

  it('Fetch at the log end returns zero-length records, not null', async () => {
    for (const version of [4, 11, 12, 16]) {
      const p = (await fetch(version)).responses[0]!.partitions[0]!;
      assert.ok(p.records !== null && p.records.length === 0, `v${version}`);
    }
  });

  it('Fetch v0-v3 down-converts to magic 0 and 1', async () => {
    await produce(await sample(2));
    for (const [version, magic] of [
      [0, 0],
      [1, 0],
      [2, 1],
      [3, 1],
    ] as const) {
      const p = (await fetch(version)).responses[0]!.partitions[0]!;
      assert.equal(p.errorCode, Errors.NONE.code);
      assert.equal(magicAt(p.records!), magic, `v${version}`);
      const messages = await legacyRecords(p.records!);
      assert.deepEqual(
        messages.map((m) => [m.offset, m.value?.toString()]),
        [
          [0, 'v0'],
          [1, 'v1'],
        ],
      );
    }
  });

  it('Fetch v13+ answers UNKNOWN_TOPIC_ID for an id it does not know', async () => {
    const request = fetchRequest(13);
    request.topics[0]!.topicId = 'AAAAAAAAAAAAAAAAAAAAAw';
    const p = (await fetch(13, request)).responses[0]!.partitions[0]!;
    assert.equal(p.errorCode, Errors.UNKNOWN_TOPIC_ID.code);
    assert.equal(p.highWatermark, -1n);
  });

  it('fetch sessions: a full fetch opens one; incremental fetches send only what changed', async () => {
    await produce(await sample(1));
    const full = await fetch(12, fetchRequest(12, 0, { sessionId: 0, sessionEpoch: 0 }));
    assert.ok(full.sessionId > 0);
    assert.equal(full.responses[0]!.partitions.length, 1);
    const sessionId = full.sessionId;

    // The client moves its position past what it got; the session remembers it.
    const moved = await fetch(12, fetchRequest(12, 1, { sessionId, sessionEpoch: 1 }));
    assert.equal(moved.errorCode, Errors.NONE.code);
    assert.equal(moved.sessionId, sessionId);
    assert.equal(moved.responses.length, 0, 'no new data, same high watermark: nothing sent');
    const quiet = await fetch(12, makeFetchRequest({ maxWaitMs: 0, minBytes: 1, sessionId, sessionEpoch: 2 }));
    assert.equal(quiet.responses.length, 0);
    await produce(await sample(2));
    const news = await fetch(12, makeFetchRequest({ maxWaitMs: 0, minBytes: 1, sessionId, sessionEpoch: 3 }));
    const p = news.responses[0]!.partitions[0]!;
    assert.equal(p.highWatermark, 3n);
    assert.equal([...batchesIn(p.records!)][0]!.baseOffset, 1);

    const stale = await fetch(12, makeFetchRequest({ sessionId, sessionEpoch: 3 }));
    assert.equal(stale.errorCode, Errors.INVALID_FETCH_SESSION_EPOCH.code);
    const unknown = await fetch(12, makeFetchRequest({ sessionId: sessionId + 1, sessionEpoch: 1 }));
    assert.equal(unknown.errorCode, Errors.FETCH_SESSION_ID_NOT_FOUND.code);

    const forget = await fetch(
      12,
      makeFetchRequest({
        sessionId,
        sessionEpoch: 4,
        topics: [
          makeFetchRequestFetchTopic({
            topic: TOPIC,
            partitions: [makeFetchRequestFetchPartition({ partition: 1, fetchOffset: 0n, partitionMaxBytes: 1024 })],
          }),
        ],
        forgottenTopicsData: [makeFetchRequestForgottenTopic({ topic: TOPIC, partitions: [0] })],
      }),
    );
    assert.deepEqual(
      forget.responses[0]!.partitions.map((x) => x.partitionIndex),
      [1],
    );
    assert.deepEqual([...services.fetchSessions.get(sessionId)!.partitions.keys()], [`${TOPIC}:1`]);
  });

  it('a long-poll Fetch is answered when a produce arrives', async () => {
    const pending = handleFetch(services, fetchRequest(11, 0, { maxWaitMs: 60_000 }), 11, 'PLAINTEXT');
    await new Promise((r) => setImmediate(r));
    await produce(await sample(1));
    const r = wire(ApiKey.Fetch, await pending, 11);
    assert.equal([...batchesIn(r.responses[0]!.partitions[0]!.records!)].length, 1);
  });

  it('ListOffsets answers v0 with old-style offsets and later versions with offset and epoch', async () => {
    await produce(await sample(4));
    const request = (timestamp: bigint) =>
      makeListOffsetsRequest({
        replicaId: -1,
        topics: [
          makeListOffsetsRequestListOffsetsTopic({
            name: TOPIC,
            partitions: [makeListOffsetsRequestListOffsetsPartition({ partitionIndex: 0, timestamp, maxNumOffsets: 1 })],
          }),
        ],
      });
    const v0 = wire<ListOffsetsResponse>(ApiKey.ListOffsets, await handleListOffsets(services, request(-1n), 0), 0);
    assert.deepEqual(v0.topics[0]!.partitions[0]!.oldStyleOffsets, [4n]);
    for (let version = 1; version <= 10; version++) {
      const r = wire<ListOffsetsResponse>(ApiKey.ListOffsets, await handleListOffsets(services, request(-1n), version), version);
      assert.equal(r.topics[0]!.partitions[0]!.offset, 4n, `v${version}`);
    }
    const v7 = wire<ListOffsetsResponse>(ApiKey.ListOffsets, await handleListOffsets(services, request(-2n), 7), 7);
    assert.deepEqual([v7.topics[0]!.partitions[0]!.offset, v7.topics[0]!.partitions[0]!.leaderEpoch], [0n, 0]);
    const max = wire<ListOffsetsResponse>(ApiKey.ListOffsets, await handleListOffsets(services, request(-3n), 7), 7);
    assert.equal(max.topics[0]!.partitions[0]!.offset, 3n);
  });

  it('DeleteRecords, DescribeLogDirs and OffsetForLeaderEpoch answer per partition', async () => {
    await produce(await sample(5));
    const del = await handleDeleteRecords(
      services,
      makeDeleteRecordsRequest({
        timeoutMs: 1000,
        topics: [
          makeDeleteRecordsRequestDeleteRecordsTopic({
            name: TOPIC,
            partitions: [
              makeDeleteRecordsRequestDeleteRecordsPartition({ partitionIndex: 0, offset: 3n }),
              makeDeleteRecordsRequestDeleteRecordsPartition({ partitionIndex: 1, offset: 1n }),
            ],
          }),
        ],
      }),
    );
    assert.deepEqual(
      del.topics[0]!.partitions.map((p) => [p.lowWatermark, p.errorCode]),
      [
        [3n, 0],
        [-1n, Errors.OFFSET_OUT_OF_RANGE.code],
      ],
    );

    const dirs = wire(ApiKey.DescribeLogDirs, await handleDescribeLogDirs(services, makeDescribeLogDirsRequest({ topics: null })), 4);
    assert.equal(dirs.results[0]!.logDir, dir);
    assert.ok(dirs.results[0]!.totalBytes > 0n);
    assert.deepEqual(
      dirs.results[0]!.topics[0]!.partitions.map((p) => p.partitionIndex),
      [0, 1],
    );

    const epochs = handleOffsetForLeaderEpoch(
      services,
      makeOffsetForLeaderEpochRequest({
        topics: [
          makeOffsetForLeaderEpochRequestOffsetForLeaderTopic({
            topic: TOPIC,
            partitions: [makeOffsetForLeaderEpochRequestOffsetForLeaderPartition({ partition: 0, leaderEpoch: 0, currentLeaderEpoch: 0 })],
          }),
        ],
      }),
    );
    assert.deepEqual(epochs.topics[0]!.partitions[0]!.endOffset, 5n);
  });

  // Offsets and timestamps are JS numbers inside the broker, exact to 2^53: a wire value beyond
  // that is answered with Kafka's error for a value outside the log, never rounded into one.
  const UNSAFE = [2n ** 60n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 60n), -(2n ** 63n)];

  it('Fetch answers an offset beyond 2^53 with OFFSET_OUT_OF_RANGE once the partition is checked', async () => {
    await produce(await sample(3));
    for (const fetchOffset of UNSAFE) {
      const request = makeFetchRequest({
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          makeFetchRequestFetchTopic({
            topic: TOPIC,
            topicId: TOPIC_ID,
            partitions: [0, 7].map((partition) => makeFetchRequestFetchPartition({ partition, fetchOffset, partitionMaxBytes: 1 << 20 })),
          }),
        ],
      });
      for (const version of [4, 12, 17]) {
        const [known, unknown] = (await fetch(version, request)).responses[0]!.partitions;
        assert.equal(known!.errorCode, Errors.OFFSET_OUT_OF_RANGE.code, `offset ${fetchOffset} v${version}`);
        assert.equal(known!.highWatermark, 3n, 'the answer carries the partition state, as any OFFSET_OUT_OF_RANGE does');
        assert.equal(known!.records!.length, 0);
        assert.equal(unknown!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code, 'the partition is checked first');
      }
    }
    assert.equal((await fetch(12)).responses[0]!.partitions[0]!.errorCode, Errors.NONE.code, 'later fetches are served');
  });

  it('a follower fetch at an offset beyond 2^53 does not move the high watermark', async () => {
    await services.replicaManager.applyPartitionState(
      { topic: TOPIC, topicId: TOPIC_ID, partition: 2, leaderId: 1, leaderEpoch: 0, partitionEpoch: 0, replicas: [1, 2], isr: [1, 2] },
      topicConfigLookup({}),
    );
    await produce(await sample(3), 9, 1, 2);
    const partition = services.replicaManager.getPartition(TOPIC, 2)!;
    assert.equal(partition.highWatermark, 0, 'the follower has not fetched yet');
    const followerFetch = (fetchOffset: bigint) =>
      makeFetchRequest({
        replicaId: 2,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          makeFetchRequestFetchTopic({
            topic: TOPIC,
            topicId: TOPIC_ID,
            partitions: [makeFetchRequestFetchPartition({ partition: 2, fetchOffset, partitionMaxBytes: 1 << 20 })],
          }),
        ],
      });
    for (const fetchOffset of UNSAFE) {
      const p = (await fetch(12, followerFetch(fetchOffset))).responses[0]!.partitions[0]!;
      assert.equal(p.errorCode, Errors.OFFSET_OUT_OF_RANGE.code, `offset ${fetchOffset}`);
      assert.equal(partition.highWatermark, 0, `offset ${fetchOffset} is no follower position`);
    }
    await fetch(12, followerFetch(3n));
    assert.equal(partition.highWatermark, 3, 'a real follower position moves it');
  });

  it('ListOffsets answers a timestamp beyond 2^53 as a timestamp no record reaches, or as a bad negative one', async () => {
    await produce(await sample(2));
    const request = (timestamp: bigint) =>
      makeListOffsetsRequest({
        replicaId: -1,
        topics: [
          makeListOffsetsRequestListOffsetsTopic({
            name: TOPIC,
            partitions: [0, 7].map((partitionIndex) =>
              makeListOffsetsRequestListOffsetsPartition({ partitionIndex, timestamp, maxNumOffsets: 1 }),
            ),
          }),
        ],
      });
    for (const timestamp of UNSAFE) {
      for (const version of [0, 1, 7]) {
        const r = wire<ListOffsetsResponse>(ApiKey.ListOffsets, await handleListOffsets(services, request(timestamp), version), version);
        const [known, unknown] = r.topics[0]!.partitions;
        const what = `timestamp ${timestamp} v${version}`;
        assert.equal(known!.errorCode, timestamp > 0n ? Errors.NONE.code : Errors.INVALID_REQUEST.code, what);
        if (version === 0) assert.deepEqual(known!.oldStyleOffsets, [], what);
        else assert.deepEqual([known!.offset, known!.timestamp], [-1n, -1n], what);
        assert.equal(unknown!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code, what);
      }
    }
  });

  it('DeleteRecords answers an offset beyond 2^53 with OFFSET_OUT_OF_RANGE once the partition is checked', async () => {
    await produce(await sample(2));
    for (const offset of UNSAFE) {
      const r = await handleDeleteRecords(
        services,
        makeDeleteRecordsRequest({
          timeoutMs: 1000,
          topics: [
            makeDeleteRecordsRequestDeleteRecordsTopic({
              name: TOPIC,
              partitions: [0, 7].map((partitionIndex) => makeDeleteRecordsRequestDeleteRecordsPartition({ partitionIndex, offset })),
            }),
          ],
        }),
      );
      assert.deepEqual(
        r.topics[0]!.partitions.map((p) => [p.lowWatermark, p.errorCode]),
        [
          [-1n, Errors.OFFSET_OUT_OF_RANGE.code],
          [-1n, Errors.UNKNOWN_TOPIC_OR_PARTITION.code],
        ],
        `offset ${offset}`,
      );
    }
    assert.equal(services.replicaManager.getPartition(TOPIC, 0)!.logStartOffset, 0, 'nothing was deleted');
  });

  it('InitProducerId hands out fresh ids at epoch 0 from controller blocks; transactional ids wait for the coordinator', async () => {
    const ids: bigint[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await handleInitProducerId(
        services,
        makeInitProducerIdRequest({ transactionalId: null, producerId: -1n, producerEpoch: -1 }),
        4,
      );
      assert.equal(r.producerEpoch, 0);
      ids.push(r.producerId);
    }
    assert.deepEqual(ids, [0n, 1n, 2n]);
    const again = await handleInitProducerId(
      services,
      makeInitProducerIdRequest({ transactionalId: null, producerId: 0n, producerEpoch: 0 }),
      4,
    );
    assert.equal(again.producerId, 3n, 'a non-transactional producer gets a new id, as Kafka does');
    const mismatched = await handleInitProducerId(
      services,
      makeInitProducerIdRequest({ transactionalId: null, producerId: 5n, producerEpoch: -1 }),
      4,
    );
    assert.equal(mismatched.errorCode, Errors.INVALID_REQUEST.code);
    const txn = await handleInitProducerId(
      services,
      makeInitProducerIdRequest({ transactionalId: 'tx', producerId: -1n, producerEpoch: -1 }),
      4,
    );
    assert.equal(txn.errorCode, Errors.COORDINATOR_NOT_AVAILABLE.code);
  });
});
