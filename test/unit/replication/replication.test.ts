import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import {
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
  type FetchResponse,
} from '../../../protocol/messages/fetch.ts';
import {
  makeListOffsetsRequest,
  makeListOffsetsRequestListOffsetsPartition,
  makeListOffsetsRequestListOffsetsTopic,
} from '../../../protocol/messages/list-offsets.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceResponse,
} from '../../../protocol/messages/produce.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { batchesIn } from '../../../protocol/records/batch.ts';
import { topicConfigLookup } from '../../../src/config/topic-config.ts';
import { handleFetch } from '../../../src/handlers/fetch.ts';
import { handleListOffsets } from '../../../src/handlers/list-offsets.ts';
import { handleProduce } from '../../../src/handlers/produce.ts';
import { FetchSessionCache } from '../../../src/replication/fetch-session.ts';
import { LAG_MS, MAX_WAIT_MS, TOPIC, TOPIC_ID, TestCluster, advanceUntil, eventually, records, settle } from './replication-harness.ts';

/** The whole log, batch after batch (a read stops at a segment's end). */
async function logOf(cluster: TestCluster, brokerId: number): Promise<Buffer> {
  const log = cluster.partition(brokerId).log;
  const chunks: Buffer[] = [];
  for (let offset = log.logStartOffset; offset < log.logEndOffset; ) {
    const read = await log.read(offset, 1 << 30, log.logEndOffset, true);
    const data = Buffer.concat(read.chunks as Buffer[]);
    if (data.length === 0) break;
    chunks.push(data);
    for (const b of batchesIn(data)) offset = b.nextOffset;
  }
  return Buffer.concat(chunks);
}

async function batchesOf(cluster: TestCluster, brokerId: number): Promise<[number, number, number][]> {
  return [...batchesIn(await logOf(cluster, brokerId), true)].map((b) => [b.baseOffset, b.lastOffset, b.partitionLeaderEpoch]);
}

function wire<T>(apiKey: number, response: T, version: number): T {
  const api = apis.get(apiKey)!;
  const w = new Writer();
  api.encodeResponse(w, response as never, version);
  return api.decodeResponse(new Reader(w.toBuffer()), version) as T;
}

describe('replication', function () {
  let cluster: TestCluster;
  afterEach(async () => {
    await cluster?.close();
  });

  async function twoBrokers(options: ConstructorParameters<typeof TestCluster>[0] = {}): Promise<void> {
    cluster = new TestCluster(options);
    await cluster.addBroker(1);
    await cluster.addBroker(2);
  }

  it('a follower catches up from its leader and takes the leader high watermark as far as its log reaches', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] }, 0, [1]);
    for (let i = 0; i < 3; i++) await cluster.produce(1, await records(2), 1);
    const leader = cluster.partition(1);
    assert.equal(leader.logEndOffset, 6);
    assert.equal(leader.highWatermark, 0, 'the follower has nothing yet');

    await cluster.publish(0, [2]);
    const follower = cluster.partition(2);
    await eventually('the follower to catch up', () => follower.logEndOffset === 6);
    await eventually('the leader high watermark to reach the log end', () => leader.highWatermark === 6);
    assert.deepEqual(await logOf(cluster, 2), await logOf(cluster, 1), 'the same bytes, offsets and leader epochs');
    assert.deepEqual(await batchesOf(cluster, 2), [
      [0, 1, 1],
      [2, 3, 1],
      [4, 5, 1],
    ]);
    // The follower learns the leader's high watermark with the answer to its next fetch
    // (each answer carries the one before that fetch), here after max wait.
    assert.ok(follower.highWatermark < 6);
    cluster.clock.advance(MAX_WAIT_MS);
    await eventually('the follower high watermark', () => follower.highWatermark === 6);
    assert.equal(cluster.broker(2).rm.replicaFetcherManager?.fetchingFrom(follower.key), 1);
    const state = leader.followerState(2)!;
    assert.equal(state.logEndOffset, 6);
    assert.equal(state.brokerEpoch, 102n, 'Fetch v15+ carries the replica state');
  });

  it('moves the high watermark only once every ISR member holds the offset; a refused connection is retried after the backoff', async () => {
    cluster = new TestCluster();
    for (const id of [1, 2, 3]) await cluster.addBroker(id);
    cluster.block(3, 1);
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2, 3], isr: [1, 2, 3] });
    await cluster.produce(1, await records(2), 1);
    await eventually('broker 2 to catch up', () => cluster.partition(2).logEndOffset === 2);
    await settle();
    const leader = cluster.partition(1);
    assert.equal(leader.highWatermark, 0, 'broker 3 has not fetched in this leader epoch');
    assert.equal(leader.followerState(3)!.logEndOffset, -1);

    cluster.unblock(3, 1);
    const attempts = cluster.connectAttempts;
    await settle();
    assert.equal(cluster.connectAttempts, attempts, 'no attempt before the backoff');
    await advanceUntil(cluster.clock, 'broker 3 to catch up', () => cluster.partition(3).logEndOffset === 2);
    assert.ok(cluster.connectAttempts > attempts);
    await eventually('the high watermark', () => leader.highWatermark === 2);
  });

  it('truncates a divergent tail after a leader change and replicates the new leader (KIP-101)', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] });
    const [a] = await cluster.produce(1, await records(2, {}, 'a'), -1);
    assert.equal(a!.errorCode, Errors.NONE.code);
    await eventually('the follower to hold the committed batch', () => cluster.partition(2).logEndOffset === 2);

    // The old leader writes a tail its follower never gets, then loses leadership.
    cluster.block(2, 1);
    await cluster.produce(1, await records(3, {}, 'b'), 1);
    assert.equal(cluster.partition(1).logEndOffset, 5);
    await cluster.setState({ leaderId: 2, leaderEpoch: 2, isr: [2] }, 0, [2]);
    const [c] = await cluster.produce(2, await records(1, {}, 'c'), 1);
    assert.equal(c!.baseOffset, 2);

    // The old leader follows now: its fetch at 5 with lastFetchedEpoch 1 is answered with the
    // end of epoch 1 on the new leader (offset 2), where it truncates.
    await cluster.publish(0, [1]);
    await eventually('the old leader to converge', async () => (await logOf(cluster, 1)).equals(await logOf(cluster, 2)));
    assert.deepEqual(await batchesOf(cluster, 1), [
      [0, 1, 1],
      [2, 2, 2],
    ]);
    assert.equal(cluster.partition(1).log.latestEpoch(), 2);
    assert.deepEqual(cluster.partition(1).log.endOffsetForEpoch(1), { leaderEpoch: 1, endOffset: 2 });
    // Caught up in the new leader epoch, it joins the ISR again.
    await eventually('the ISR to expand', () => cluster.state().isr.includes(1));
  });

  it('a new leader answers no latest offset until its high watermark reaches its leader epoch start, so it never goes back', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] });
    const [acked] = await cluster.produce(1, await records(4), -1);
    assert.equal(acked!.errorCode, Errors.NONE.code);
    const latest = async (brokerId: number, replicaId = -1) => cluster.broker(brokerId).rm.listOffset(TOPIC, 0, -1, 0, -1, replicaId);
    assert.equal((await latest(1)).offset, 4, 'the old leader answered 4');

    // The follower holds the records but learned only the high watermark before them; it is
    // elected before its old leader fetches from it.
    cluster.block(2, 1);
    const follower = cluster.partition(2);
    assert.equal(follower.logEndOffset, 4);
    assert.ok(follower.highWatermark < 4);
    await cluster.setState({ leaderId: 2, leaderEpoch: 2 }, 0, [2]);
    assert.equal(follower.leaderEpochStartOffset, 4);
    assert.equal((await latest(2)).errorCode, Errors.OFFSET_NOT_AVAILABLE.code);
    const byTime = await cluster.broker(2).rm.listOffset(TOPIC, 0, 1_700_000_000_003, 0, -1, -1);
    assert.equal(byTime.errorCode, Errors.OFFSET_NOT_AVAILABLE.code, 'a timestamp past the high watermark waits too');
    assert.equal((await cluster.broker(2).rm.listOffset(TOPIC, 0, -2, 0, -1, -1)).offset, 0, 'the earliest offset does not wait');
    assert.deepEqual(
      await latest(2, 1),
      { errorCode: Errors.NONE.code, timestampMs: -1, offset: 4, leaderEpoch: 2 },
      'a replica gets the log end',
    );
    // KafkaApis: before v5 the error is LEADER_NOT_AVAILABLE.
    for (const [version, code] of [
      [1, Errors.LEADER_NOT_AVAILABLE.code],
      [5, Errors.OFFSET_NOT_AVAILABLE.code],
    ] as const) {
      const request = makeListOffsetsRequest({
        replicaId: -1,
        topics: [
          makeListOffsetsRequestListOffsetsTopic({
            name: TOPIC,
            partitions: [makeListOffsetsRequestListOffsetsPartition({ partitionIndex: 0, timestamp: -1n })],
          }),
        ],
      });
      const response = await handleListOffsets({ replicaManager: cluster.broker(2).rm }, request, version);
      assert.equal(response.topics[0]!.partitions[0]!.errorCode, code, `v${version}`);
    }

    // Once the old leader follows and fetches, the high watermark passes the epoch start.
    await cluster.publish(0, [1]);
    await eventually('the new leader high watermark', () => follower.highWatermark >= 4);
    assert.deepEqual(await latest(2), { errorCode: Errors.NONE.code, timestampMs: -1, offset: 4, leaderEpoch: 2 });
  });

  it('shrinks the ISR when a follower has not caught up for replica.lag.time.max.ms and expands it when it has', async () => {
    await twoBrokers();
    cluster.block(2, 1);
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] });
    await cluster.produce(1, await records(1), 1);
    const leader = cluster.partition(1);

    // Checked every lag/2; the follower counts as caught up at the election for lag ms.
    cluster.clock.advance(LAG_MS / 2);
    cluster.clock.advance(LAG_MS / 2);
    await settle();
    assert.equal(cluster.alterPartitionRequests.length, 0);
    cluster.clock.advance(LAG_MS / 2);
    await eventually('the ISR to shrink', () => cluster.state().isr.length === 1);
    const shrink = cluster.alterPartitionRequests[0]!;
    assert.equal(shrink.brokerId, 1);
    assert.equal(shrink.brokerEpoch, 101n);
    assert.equal(shrink.topics[0]!.topicId, TOPIC_ID);
    assert.deepEqual(shrink.topics[0]!.partitions[0], {
      partitionIndex: 0,
      leaderEpoch: 1,
      newIsr: [],
      newIsrWithEpochs: [{ brokerId: 1, brokerEpoch: 101n }],
      leaderRecoveryState: 0,
      partitionEpoch: 0,
    });
    assert.deepEqual(leader.isr, [1]);
    assert.equal(leader.partitionEpoch, 1);
    assert.equal(leader.highWatermark, 1, 'the ISR is the leader alone');

    cluster.unblock(2, 1);
    await advanceUntil(cluster.clock, 'the ISR to expand', () => cluster.state().isr.length === 2);
    const expand = cluster.alterPartitionRequests[1]!;
    assert.deepEqual(expand.topics[0]!.partitions[0]!.newIsrWithEpochs, [
      { brokerId: 1, brokerEpoch: 101n },
      { brokerId: 2, brokerEpoch: 102n },
    ]);
    assert.equal(expand.topics[0]!.partitions[0]!.partitionEpoch, 1);
    await eventually('the leader to apply the answer', () => leader.isr.length === 2 && leader.partitionEpoch === 2);
    assert.equal(cluster.alterPartitionRequests.length, 2);
  });

  it('acks=all waits for the follower, times out, and below min.insync.replicas refuses writes and holds the high watermark', async () => {
    await twoBrokers({ topicConfig: { 'min.insync.replicas': '2' } });
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] });
    const [replicated] = await cluster.produce(1, await records(1), -1);
    assert.equal(replicated!.errorCode, Errors.NONE.code);
    assert.equal(cluster.partition(1).highWatermark, 1);

    cluster.block(2, 1);
    const timedOut = cluster.produce(1, await records(1), -1, 200);
    await settle();
    cluster.clock.advance(200);
    const [late] = await timedOut;
    assert.equal(late!.errorCode, Errors.REQUEST_TIMED_OUT.code);

    const waiting = cluster.produce(1, await records(1), -1, 2 * LAG_MS);
    await settle();
    // The ISR shrinks to the leader: below min ISR the high watermark stays (KAFKA-15583), so the batch never commits.
    await advanceUntil(cluster.clock, 'the ISR to shrink', () => cluster.partition(1).isr.length === 1);
    assert.equal(cluster.partition(1).highWatermark, 1);
    cluster.clock.advance(2 * LAG_MS);
    const [uncommitted] = await waiting;
    assert.equal(uncommitted!.errorCode, Errors.REQUEST_TIMED_OUT.code);

    const end = cluster.partition(1).logEndOffset;
    const [refused] = await cluster.produce(1, await records(1), -1);
    assert.equal(refused!.errorCode, Errors.NOT_ENOUGH_REPLICAS.code);
    assert.equal(cluster.partition(1).logEndOffset, end, 'nothing written');
    const [acks1] = await cluster.produce(1, await records(1), 1);
    assert.equal(acks1!.errorCode, Errors.NONE.code, 'acks=1 answers after the local append');
    assert.equal(cluster.partition(1).highWatermark, 1, 'but what it wrote is not committed');

    cluster.unblock(2, 1);
    await advanceUntil(cluster.clock, 'the ISR to expand', () => cluster.partition(1).isr.length === 2);
    await eventually(
      'the high watermark to reach the log end',
      () => cluster.partition(1).highWatermark === cluster.partition(1).logEndOffset,
    );
  });

  it('a new leader keeps deduplicating a retried idempotent batch the old leader wrote', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] });
    const producer = { producerId: 7000n, producerEpoch: 0 };
    const first = await records(2, { ...producer, baseSequence: 0 });
    const second = await records(2, { ...producer, baseSequence: 2 });
    assert.equal((await cluster.produce(1, first, -1))[0]!.baseOffset, 0);
    assert.equal((await cluster.produce(1, second, -1))[0]!.baseOffset, 2);
    await eventually('the follower to hold both', () => cluster.partition(2).logEndOffset === 4);

    cluster.block(2, 1);
    await cluster.setState({ leaderId: 2, leaderEpoch: 2, isr: [2] }, 0, [2]);
    // The producer did not see the answer to `second` and retries it on the new leader.
    const [retried] = await cluster.produce(2, second, -1);
    assert.equal(retried!.errorCode, Errors.NONE.code);
    assert.equal(retried!.baseOffset, 2, 'answered with its original offset');
    assert.equal(cluster.partition(2).logEndOffset, 4, 'not written twice');
    const [next] = await cluster.produce(2, await records(1, { ...producer, baseSequence: 4 }), -1);
    assert.equal(next!.baseOffset, 4);
    const [gap] = await cluster.produce(2, await records(1, { ...producer, baseSequence: 9 }), -1);
    assert.equal(gap!.errorCode, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code);
  });

  it('a broker that becomes follower answers parked produces and fetches and refuses produce, naming the new leader (KIP-951)', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] }, 0, [1]);
    const rm1 = cluster.broker(1).rm;
    const parkedProduce = cluster.produce(1, await records(1), -1);
    const parkedFetch = rm1.fetchMessages({
      replicaId: -1,
      maxWaitMs: 60_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [{ topic: TOPIC, partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1 }],
    });
    await settle();
    assert.equal(rm1.producePurgatory.size, 1);
    assert.equal(rm1.fetchPurgatory.size, 1);

    await cluster.setState({ leaderId: 2, leaderEpoch: 2 }, 0, [1]);
    const [produced] = await parkedProduce;
    assert.equal(produced!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);
    assert.deepEqual([produced!.leaderId, produced!.leaderEpoch], [2, 2]);
    const [fetched] = await parkedFetch;
    assert.equal(fetched!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);
    assert.deepEqual([fetched!.leaderId, fetched!.leaderEpoch], [2, 2]);
    const [refused] = await cluster.produce(1, await records(1), 1);
    assert.equal(refused!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);

    const services = {
      replicaManager: rm1,
      fetchSessions: new FetchSessionCache(),
      topicNameOf: (id: string) => (id === TOPIC_ID ? TOPIC : undefined),
      topicIdOf: (name: string) => (name === TOPIC ? TOPIC_ID : undefined),
      fetchMaxBytes: () => 1 << 20,
      requestTimeoutMs: () => 30_000,
      nodeEndpoint: (id: number, listener: string) =>
        listener === 'CLIENTS' ? { nodeId: id, host: `broker${id}`, port: 9092, rack: null } : undefined,
    };
    const produceRequest = makeProduceRequest({
      acks: 1,
      timeoutMs: 1000,
      topicData: [
        makeProduceRequestTopicProduceData({
          name: TOPIC,
          partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records: await records(1) })],
        }),
      ],
    });
    const v10 = wire<ProduceResponse>(ApiKey.Produce, (await handleProduce(services, produceRequest, 10, null, () => {}, 'CLIENTS'))!, 10);
    const p10 = v10.responses[0]!.partitionResponses[0]!;
    assert.equal(p10.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);
    assert.deepEqual(p10.currentLeader, { leaderId: 2, leaderEpoch: 2 });
    assert.deepEqual(v10.nodeEndpoints, [{ nodeId: 2, host: 'broker2', port: 9092, rack: null }]);
    const v9 = wire<ProduceResponse>(ApiKey.Produce, (await handleProduce(services, produceRequest, 9, null, () => {}, 'CLIENTS'))!, 9);
    assert.equal(v9.responses[0]!.partitionResponses[0]!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code);

    for (const version of [11, 12, 16]) {
      const request = makeFetchRequest({
        maxWaitMs: 0,
        topics: [
          makeFetchRequestFetchTopic({
            topic: TOPIC,
            topicId: TOPIC_ID,
            partitions: [makeFetchRequestFetchPartition({ partition: 0, partitionMaxBytes: 1 << 20, currentLeaderEpoch: 2 })],
          }),
        ],
      });
      const response = wire<FetchResponse>(ApiKey.Fetch, await handleFetch(services, request, version, 'CLIENTS'), version);
      const p = response.responses[0]!.partitions[0]!;
      assert.equal(p.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code, `v${version}: no fetch from followers`);
      assert.deepEqual(p.currentLeader, version >= 12 ? { leaderId: 2, leaderEpoch: 2 } : { leaderId: -1, leaderEpoch: -1 });
      assert.equal(response.nodeEndpoints.length, version >= 16 ? 1 : 0);
    }
  });

  it('ignores stale metadata and resets follower state on a new leader epoch', async () => {
    cluster = new TestCluster();
    for (const id of [1, 2, 3]) await cluster.addBroker(id);
    await cluster.setState({ leaderId: 1, leaderEpoch: 4, partitionEpoch: 7, replicas: [1, 2, 3], isr: [1, 2] }, 0, [1]);
    const leader = cluster.partition(1);
    const electedAt = cluster.clock.now();
    assert.deepEqual(
      [leader.followerState(2)!.logEndOffset, leader.followerState(2)!.lastCaughtUpTimeMs],
      [-1, electedAt],
      'an ISR member gets replica.lag.time.max.ms from the election',
    );
    assert.equal(leader.followerState(3)!.lastCaughtUpTimeMs, 0, 'an out-of-sync replica does not hold the high watermark');
    assert.equal(leader.leaderEpochStartOffset, 0);

    await cluster
      .broker(1)
      .rm.applyPartitionState({ ...cluster.partitionState(), leaderId: 2, leaderEpoch: 5, partitionEpoch: 6 }, topicConfigLookup({}));
    assert.ok(leader.isLeader, 'a lower partition epoch changes nothing');
    assert.equal(leader.leaderEpoch, 4);

    await cluster.publish(0, [2]);
    await eventually('broker 2 to fetch', () => leader.followerState(2)!.logEndOffset === 0);
    // Re-elected (leader epoch bump while leading): the followers' positions are kept.
    cluster.clock.advance(1);
    await cluster.setState({ leaderEpoch: 5 }, 0, [1]);
    assert.equal(leader.followerState(2)!.logEndOffset, 0);
    assert.equal(leader.followerState(2)!.lastCaughtUpTimeMs, cluster.clock.now());
  });

  it('a follower below the leader log start restarts its log there (OFFSET_OUT_OF_RANGE)', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1] }, 0, [1]);
    for (let i = 0; i < 3; i++) await cluster.produce(1, await records(2), 1);
    assert.deepEqual(await cluster.broker(1).rm.deleteRecords(TOPIC, 0, 4), { errorCode: 0, lowWatermark: 4 });

    await cluster.publish(0, [2]);
    const follower = cluster.partition(2);
    await eventually('the follower to catch up from the leader log start', () => follower.logEndOffset === 6);
    assert.equal(follower.logStartOffset, 4);
    assert.deepEqual(await batchesOf(cluster, 2), [[4, 5, 1]]);
  });

  it('a follower past the leader end truncates to it (OFFSET_OUT_OF_RANGE, Fetch below v12 has no epochs)', async () => {
    await twoBrokers({ maxFetchVersion: 11 });
    await cluster.setState({ leaderId: 2, leaderEpoch: 1, replicas: [1, 2], isr: [2] }, 0, [2]);
    await cluster.produce(2, await records(3), 1);
    // An unclean election: broker 1 leads with an empty log.
    await cluster.setState({ leaderId: 1, leaderEpoch: 2, isr: [1] }, 0, [1]);
    await cluster.produce(1, await records(1, {}, 'new'), 1);
    await cluster.publish(0, [2]);
    await eventually('the follower to take the leader log', async () => (await logOf(cluster, 2)).equals(await logOf(cluster, 1)));
    assert.deepEqual(await batchesOf(cluster, 2), [[0, 0, 2]]);
  });

  it('a follower with an older leader epoch is fenced until its metadata catches up', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 2, replicas: [1, 2], isr: [1, 2] });
    await settle();
    await cluster.setState({ leaderEpoch: 3 }, 0, [1]);
    await cluster.produce(1, await records(1), 1);
    await settle(100);
    assert.equal(cluster.partition(2).logEndOffset, 0, 'FENCED_LEADER_EPOCH: nothing replicated');
    await cluster.publish(0, [2]);
    await eventually('the follower to catch up in epoch 3', () => cluster.partition(2).logEndOffset === 1);
  });

  it('answers a divergingEpoch only from v12 and leaves the follower position alone when it does', async () => {
    await twoBrokers();
    await cluster.setState({ leaderId: 1, leaderEpoch: 3, replicas: [1, 2], isr: [1] }, 0, [1]);
    await cluster.produce(1, await records(2), 1);
    const rm1 = cluster.broker(1).rm;
    const fetch = (lastFetchedEpoch: number, fetchOffset: number) =>
      rm1.fetchMessages({
        replicaId: 2,
        replicaEpoch: 102n,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        partitions: [
          {
            topic: TOPIC,
            partition: 0,
            fetchOffset,
            partitionMaxBytes: 1 << 20,
            currentLeaderEpoch: 3,
            lastFetchedEpoch,
            logStartOffset: 0,
          },
        ],
      });
    // The follower claims offsets 0-4 of epoch 2; the leader has no epoch 2 and its epoch 3 starts at 0.
    const [diverged] = await fetch(2, 5);
    assert.deepEqual(diverged!.divergingEpoch, { epoch: 2, endOffset: 0 });
    assert.equal(diverged!.errorCode, Errors.NONE.code);
    assert.equal(diverged!.records.length, 0);
    assert.equal(cluster.partition(1).followerState(2)!.logEndOffset, -1, 'a diverging fetch records no position');
    const [inLog] = await fetch(3, 1);
    assert.equal(inLog!.divergingEpoch, null);
    assert.ok(inLog!.records.length > 0);
    const [notReplica] = await rm1.fetchMessages({
      replicaId: 9,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [{ topic: TOPIC, partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20, currentLeaderEpoch: 3 }],
    });
    assert.equal(notReplica!.errorCode, Errors.UNKNOWN_LEADER_EPOCH.code);
    const [stale] = await rm1.fetchMessages({
      replicaId: 2,
      replicaEpoch: 50n,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [{ topic: TOPIC, partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20, currentLeaderEpoch: 3 }],
    });
    assert.equal(stale!.errorCode, Errors.NOT_LEADER_OR_FOLLOWER.code, 'a previous incarnation of broker 2');
  });

  describe('AlterPartition outcomes', function () {
    async function laggingFollower(options: ConstructorParameters<typeof TestCluster>[0] = {}): Promise<void> {
      await twoBrokers(options);
      cluster.block(2, 1);
      await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1, 2] });
      await cluster.produce(1, await records(1), 1);
    }
    const expire = () => {
      for (let i = 0; i < 3; i++) cluster.clock.advance(LAG_MS / 2);
    };

    it('FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION keep the change pending until the metadata moves', async () => {
      await laggingFollower();
      cluster.alterPartitionError = Errors.FENCED_LEADER_EPOCH.code;
      expire();
      await eventually('the shrink to be answered', () => cluster.alterPartitionRequests.length === 1);
      await settle();
      const leader = cluster.partition(1);
      assert.notEqual(leader.pendingIsrChange, null);
      cluster.clock.advance(LAG_MS);
      await settle();
      assert.equal(cluster.alterPartitionRequests.length, 1, 'no new proposal while one is pending');
      cluster.alterPartitionError = null;
      await cluster.setState({}, 0, [1]);
      assert.equal(leader.pendingIsrChange, null, 'the metadata replaced it');
      cluster.clock.advance(LAG_MS / 2);
      await eventually('the shrink to be proposed again and applied', () => cluster.state().isr.length === 1);
    });

    it('OPERATION_NOT_ATTEMPTED returns to the committed ISR; an unexpected error is retried after a backoff', async () => {
      await laggingFollower();
      cluster.alterPartitionError = Errors.OPERATION_NOT_ATTEMPTED.code;
      expire();
      await eventually('the first answer', () => cluster.alterPartitionRequests.length === 1);
      await settle();
      const leader = cluster.partition(1);
      assert.equal(leader.pendingIsrChange, null);
      assert.deepEqual(leader.isr, [1, 2]);

      cluster.alterPartitionError = Errors.UNKNOWN_SERVER_ERROR.code;
      cluster.clock.advance(LAG_MS / 2);
      await eventually('the second proposal', () => cluster.alterPartitionRequests.length === 2);
      await settle();
      assert.notEqual(leader.pendingIsrChange, null);
      cluster.alterPartitionError = null;
      cluster.clock.advance(50);
      await eventually('the retry to commit', () => leader.isr.length === 1);
      assert.equal(cluster.alterPartitionRequests.length, 3);
    });

    it('while an expansion is in flight the high watermark waits for the joining replica', async () => {
      await twoBrokers({ holdAlterPartition: true });
      await cluster.setState({ leaderId: 1, leaderEpoch: 1, replicas: [1, 2], isr: [1] });
      await cluster.produce(1, await records(1), 1);
      const leader = cluster.partition(1);
      await eventually('the expansion to be proposed', () => cluster.heldAlterPartitions === 1);
      await eventually('the follower to hold offset 0', () => leader.highWatermark === 1);
      assert.deepEqual(leader.maximalIsr, [1, 2]);
      assert.deepEqual(leader.isr, [1]);
      cluster.block(2, 1);
      await cluster.produce(1, await records(1), 1);
      assert.equal(leader.highWatermark, 1, 'the joining follower holds offset 1 only');
      assert.equal(cluster.heldAlterPartitions, 1, 'one AlterPartition in flight');
      cluster.releaseAlterPartition();
      await eventually('the expansion to commit', () => leader.isr.length === 2);
    });
  });
});
