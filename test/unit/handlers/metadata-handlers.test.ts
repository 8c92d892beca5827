import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { makeDescribeClusterRequest } from '../../../protocol/messages/describe-cluster.ts';
import {
  makeDescribeConfigsRequest,
  makeDescribeConfigsRequestDescribeConfigsResource,
} from '../../../protocol/messages/describe-configs.ts';
import {
  makeDescribeQuorumRequest,
  makeDescribeQuorumRequestPartitionData,
  makeDescribeQuorumRequestTopicData,
} from '../../../protocol/messages/describe-quorum.ts';
import {
  makeDescribeTopicPartitionsRequest,
  makeDescribeTopicPartitionsRequestCursor,
  makeDescribeTopicPartitionsRequestTopicRequest,
} from '../../../protocol/messages/describe-topic-partitions.ts';
import { makeDeleteTopicsRequest, makeDeleteTopicsRequestDeleteTopicState } from '../../../protocol/messages/delete-topics.ts';
import { makeCreateTopicsRequest, makeCreateTopicsRequestCreatableTopic } from '../../../protocol/messages/create-topics.ts';
import { makeFetchRequestFetchPartition } from '../../../protocol/messages/fetch.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { makeVoteRequest, makeVoteRequestPartitionData, makeVoteRequestTopicData } from '../../../protocol/messages/vote.ts';
import { METADATA_TOPIC } from '../../../protocol/internal-topics.ts';
import { Writer, ZERO_UUID } from '../../../protocol/primitives.ts';
import { BrokerConfig } from '../../../src/config/broker-config.ts';
import { handleDescribeCluster, handleDescribeTopicPartitions } from '../../../src/handlers/cluster.ts';
import { handleDescribeConfigs } from '../../../src/handlers/configs.ts';
import { handleMetadata, type MetadataRequestServices } from '../../../src/handlers/metadata.ts';
import { fetchMetadataPartition, handleDescribeQuorum, handleVote } from '../../../src/handlers/quorum.ts';
import { handleCreateTopics, handleDeleteTopics } from '../../../src/handlers/topics.ts';
import type { RequestContext } from '../../../src/server/session.ts';
import { AUTHORIZED_OPERATIONS_OMITTED, TOPIC_OPERATIONS } from '../../../src/metadata/describe.ts';
import { MetadataManager } from '../../../src/metadata/manager.ts';
import { decodeRaftBatches } from '../../../src/metadata/raft/log.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { type LocalBroker, startLocalBroker } from '../../helpers/broker-registration.ts';

// The handlers called directly on a real single-voter metadata quorum; every response is
// also encoded at every version of its API, as the server would.

const ctx = { session: { listenerName: 'PLAINTEXT' } } as unknown as RequestContext;

function encodesAtEveryVersion(apiKey: number, response: unknown, versions?: number[]): void {
  const api = apis.get(apiKey)!;
  for (let v = api.minVersion; v <= api.maxVersion; v++) {
    if (versions !== undefined && !versions.includes(v)) continue;
    assert.doesNotThrow(() => api.encodeResponse(new Writer(), response, v), `${api.name} v${v}`);
  }
}

describe('metadata handlers', () => {
  let dir: string;
  let services: MetadataRequestServices;
  let broker: LocalBroker;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-handlers-'));
    const config = new BrokerConfig({
      overrides: new Map([
        ['node.id', '1'],
        ['process.roles', 'broker,controller'],
        ['listeners', 'PLAINTEXT://127.0.0.1:0'],
        ['controller.quorum.voters', '1@127.0.0.1:0'],
        ['log.dirs', dir],
        ['num.partitions', '2'],
      ]),
    });
    const metadata = new MetadataManager({ config, logger: createLogger({ quiet: true }) });
    await metadata.start();
    broker = await startLocalBroker(metadata, config);
    services = { nodeId: 1, config, metadata, createTopics: (topics) => metadata.controller.createTopics([...topics], false) };
    const created = await handleCreateTopics(
      services,
      makeCreateTopicsRequest({
        topics: ['alpha', 'beta', 'gamma'].map((name) =>
          makeCreateTopicsRequestCreatableTopic({ name, numPartitions: 3, replicationFactor: 1 }),
        ),
      }),
      7,
    );
    assert.deepEqual(
      created.topics.map((t) => t.errorCode),
      [0, 0, 0],
    );
    assert.ok(created.topics[0]!.configs!.some((c) => c.name === 'retention.ms'));
    encodesAtEveryVersion(ApiKey.CreateTopics, created);
  });

  after(async () => {
    await broker.close();
    await services.metadata.close();
    await rm(dir, { recursive: true, force: true });
  });

  const metadataAt = (version: number, fields: Parameters<typeof makeMetadataRequest>[0]) =>
    handleMetadata(services, ctx, makeMetadataRequest(fields), version) as Promise<MetadataResponse>;

  it('lists every topic for null topics (v1+) and for an empty list at v0 only', async () => {
    const all = await metadataAt(1, { topics: null });
    assert.deepEqual(all.topics.map((t) => t.name).sort(), ['alpha', 'beta', 'gamma']);
    assert.equal((await metadataAt(0, { topics: [] })).topics.length, 3);
    assert.equal((await metadataAt(1, { topics: [] })).topics.length, 0);
    assert.deepEqual(
      all.brokers.map((b) => [b.nodeId, b.host, b.port]),
      [[1, '127.0.0.1', 9092]],
    );
    assert.equal(all.controllerId, 1);
    encodesAtEveryVersion(ApiKey.Metadata, all);
  });

  it('reports partitions with leader, epoch, replicas and ISR, and topic ids', async () => {
    const r = await metadataAt(12, { topics: [makeMetadataRequestTopic({ name: 'alpha' })], includeTopicAuthorizedOperations: true });
    const t = r.topics[0]!;
    assert.equal(t.topicId, services.metadata.image().topic('alpha')!.id);
    assert.equal(t.topicAuthorizedOperations, TOPIC_OPERATIONS);
    assert.deepEqual(
      t.partitions.map((p) => [p.partitionIndex, p.leaderId, p.leaderEpoch, p.replicaNodes, p.isrNodes, p.offlineReplicas]),
      [
        [0, 1, 0, [1], [1], []],
        [1, 1, 0, [1], [1], []],
        [2, 1, 0, [1], [1], []],
      ],
    );
    const byId = await metadataAt(12, { topics: [makeMetadataRequestTopic({ name: null, topicId: t.topicId })] });
    assert.equal(byId.topics[0]!.name, 'alpha');
    const unknownId = await metadataAt(12, { topics: [makeMetadataRequestTopic({ name: null, topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' })] });
    assert.equal(unknownId.topics[0]!.errorCode, Errors.UNKNOWN_TOPIC_ID.code);
    assert.equal((await metadataAt(9, { topics: null })).topics[0]!.topicAuthorizedOperations, AUTHORIZED_OPERATIONS_OMITTED);
  });

  it('auto-creates unknown topics only when allowed, and never with an illegal name', async () => {
    const refused = await metadataAt(4, { topics: [makeMetadataRequestTopic({ name: 'not-allowed' })], allowAutoTopicCreation: false });
    assert.equal(refused.topics[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
    assert.equal(services.metadata.image().topic('not-allowed'), undefined);
    const v3 = await metadataAt(3, { topics: [makeMetadataRequestTopic({ name: 'old-client' })], allowAutoTopicCreation: false });
    assert.equal(v3.topics[0]!.errorCode, Errors.NONE.code, 'before v4 every request may auto-create');
    assert.equal(v3.topics[0]!.partitions.length, 2, 'num.partitions');
    const invalid = await metadataAt(9, { topics: [makeMetadataRequestTopic({ name: 'no way' })], allowAutoTopicCreation: true });
    assert.equal(invalid.topics[0]!.errorCode, Errors.INVALID_TOPIC_EXCEPTION.code);
    encodesAtEveryVersion(ApiKey.Metadata, invalid);
  });

  it('pages DescribeTopicPartitions with a cursor', async () => {
    const first = handleDescribeTopicPartitions(
      services,
      makeDescribeTopicPartitionsRequest({ topics: [], responsePartitionLimit: 4, cursor: null }),
    );
    assert.deepEqual(
      first.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)]),
      [
        ['alpha', [0, 1, 2]],
        ['beta', [0]],
      ],
    );
    assert.deepEqual(first.nextCursor, { topicName: 'beta', partitionIndex: 1 });
    const second = handleDescribeTopicPartitions(
      services,
      makeDescribeTopicPartitionsRequest({
        topics: ['beta', 'gamma', 'missing'].map((name) => makeDescribeTopicPartitionsRequestTopicRequest({ name })),
        responsePartitionLimit: 100,
        cursor: makeDescribeTopicPartitionsRequestCursor({ topicName: 'beta', partitionIndex: 1 }),
      }),
    );
    assert.deepEqual(
      second.topics.map((t) => [t.name, t.errorCode, t.partitions.map((p) => p.partitionIndex)]),
      [
        ['beta', 0, [1, 2]],
        ['gamma', 0, [0, 1, 2]],
        ['missing', Errors.UNKNOWN_TOPIC_OR_PARTITION.code, []],
      ],
    );
    assert.equal(second.nextCursor, null);
    encodesAtEveryVersion(ApiKey.DescribeTopicPartitions, first);
  });

  it('describes the cluster and the quorum', () => {
    const cluster = handleDescribeCluster(services, ctx, makeDescribeClusterRequest({ endpointType: 1 }), 1);
    assert.equal(cluster.clusterId, services.metadata.clusterId);
    assert.equal(cluster.controllerId, 1);
    assert.deepEqual(
      cluster.brokers.map((b) => b.brokerId),
      [1],
    );
    encodesAtEveryVersion(ApiKey.DescribeCluster, cluster);
    const controllers = handleDescribeCluster(services, ctx, makeDescribeClusterRequest({ endpointType: 2 }), 1);
    assert.equal(controllers.errorCode, Errors.UNSUPPORTED_ENDPOINT_TYPE.code);
    const quorum = handleDescribeQuorum(
      services.metadata,
      makeDescribeQuorumRequest({
        topics: [
          makeDescribeQuorumRequestTopicData({
            topicName: '__cluster_metadata',
            partitions: [makeDescribeQuorumRequestPartitionData({ partitionIndex: 0 })],
          }),
        ],
      }),
    );
    const p = quorum.topics[0]!.partitions[0]!;
    assert.equal(p.leaderId, 1);
    assert.equal(p.highWatermark, BigInt(services.metadata.raft.highWatermarkOffset));
    assert.deepEqual(
      p.currentVoters.map((v) => v.replicaId),
      [1],
    );
    encodesAtEveryVersion(ApiKey.DescribeQuorum, quorum);
  });

  it('describes topic configs with documentation and synonyms when asked', () => {
    const r = handleDescribeConfigs(
      services,
      makeDescribeConfigsRequest({
        resources: [
          makeDescribeConfigsRequestDescribeConfigsResource({
            resourceType: 2,
            resourceName: 'alpha',
            configurationKeys: ['retention.ms'],
          }),
        ],
        includeSynonyms: true,
        includeDocumentation: true,
      }),
      4,
    );
    const c = r.results[0]!.configs[0]!;
    assert.equal(c.name, 'retention.ms');
    assert.equal(c.value, '604800000');
    assert.equal(c.configType, 5, 'LONG');
    assert.ok(c.documentation && c.documentation.length > 20);
    assert.ok(c.synonyms.some((s) => s.name === 'log.retention.hours'));
    const v0 = handleDescribeConfigs(
      services,
      makeDescribeConfigsRequest({
        resources: [makeDescribeConfigsRequestDescribeConfigsResource({ resourceType: 2, resourceName: 'alpha', configurationKeys: null })],
      }),
      0,
    );
    // The one config not at its default: the cluster-level min.insync.replicas that a new
    // cluster with eligible leader replicas gets at bootstrap, as Kafka 4.1+ writes it.
    assert.deepEqual(
      v0.results[0]!.configs.filter((x) => !x.isDefault).map((x) => x.name),
      ['min.insync.replicas'],
    );
    encodesAtEveryVersion(ApiKey.DescribeConfigs, v0, [0]);
    encodesAtEveryVersion(ApiKey.DescribeConfigs, r, [1, 2, 3, 4]);
    const missing = handleDescribeConfigs(
      services,
      makeDescribeConfigsRequest({
        resources: [makeDescribeConfigsRequestDescribeConfigsResource({ resourceType: 2, resourceName: 'nope', configurationKeys: null })],
      }),
      4,
    );
    assert.equal(missing.results[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
  });

  it('deletes topics by id (v6) and reports the name', async () => {
    const id = services.metadata.image().topic('gamma')!.id;
    const r = await handleDeleteTopics(
      services,
      makeDeleteTopicsRequest({ topics: [makeDeleteTopicsRequestDeleteTopicState({ name: null, topicId: id })] }),
      6,
    );
    assert.deepEqual([r.responses[0]!.name, r.responses[0]!.errorCode], ['gamma', 0]);
    const old = await handleDeleteTopics(services, makeDeleteTopicsRequest({ topicNames: ['gone-already'] }), 1);
    assert.equal(old.responses[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code);
    encodesAtEveryVersion(ApiKey.DeleteTopics, old, [0, 1, 2, 3, 4, 5]);
    assert.equal(r.responses[0]!.topicId, id);
    assert.notEqual(id, ZERO_UUID);
  });

  it('serves the metadata log to a follower through Fetch of __cluster_metadata-0', async () => {
    const data = await fetchMetadataPartition(
      services.metadata,
      services.metadata.clusterId,
      2,
      makeFetchRequestFetchPartition({
        partition: 0,
        currentLeaderEpoch: services.metadata.raft.currentEpoch,
        fetchOffset: 0n,
        lastFetchedEpoch: -1,
        partitionMaxBytes: 1 << 20,
      }),
      0,
    );
    assert.equal(data.errorCode, 0);
    const batches = decodeRaftBatches(data.records!);
    assert.equal(batches[0]!.baseOffset, 0);
    assert.ok(batches[0]!.control, 'the log starts with a LeaderChange control batch');
    assert.equal(data.highWatermark, BigInt(services.metadata.raft.highWatermarkOffset));
  });

  it('refuses a quorum request whose offset or position is beyond 2^53 with INVALID_REQUEST', async () => {
    const fetchAt = (fetchOffset: bigint) =>
      fetchMetadataPartition(
        services.metadata,
        services.metadata.clusterId,
        2,
        makeFetchRequestFetchPartition({
          partition: 0,
          currentLeaderEpoch: services.metadata.raft.currentEpoch,
          fetchOffset,
          lastFetchedEpoch: -1,
          partitionMaxBytes: 1 << 20,
        }),
        0,
      );
    const refused = (err: unknown) => err instanceof KafkaError && err.error === Errors.INVALID_REQUEST;
    for (const offset of [2n ** 60n, 2n ** 53n, -(2n ** 60n)]) await assert.rejects(fetchAt(offset), refused, `fetch offset ${offset}`);
    const vote = (lastOffset: bigint) =>
      handleVote(
        services.metadata,
        makeVoteRequest({
          clusterId: services.metadata.clusterId,
          topics: [
            makeVoteRequestTopicData({
              topicName: METADATA_TOPIC,
              partitions: [
                makeVoteRequestPartitionData({ partitionIndex: 0, candidateEpoch: 0, candidateId: 2, lastOffsetEpoch: 0, lastOffset }),
              ],
            }),
          ],
        }),
      );
    assert.throws(() => vote(2n ** 62n), refused);
    assert.equal((await fetchAt(0n)).errorCode, 0, 'the quorum serves on');
  });
});
