import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { makeAddPartitionsToTxnRequest } from '../../../protocol/messages/add-partitions-to-txn.ts';
import { makeCreateTopicsRequest, makeCreateTopicsResponse } from '../../../protocol/messages/create-topics.ts';
import { makeDeleteTopicsRequest, makeDeleteTopicsResponse } from '../../../protocol/messages/delete-topics.ts';
import { makeDescribeConfigsRequest, makeDescribeConfigsResponse } from '../../../protocol/messages/describe-configs.ts';
import { makeDescribeGroupsRequest, makeDescribeGroupsResponse } from '../../../protocol/messages/describe-groups.ts';
import { makeFetchRequest, makeFetchResponse, type FetchRequest } from '../../../protocol/messages/fetch.ts';
import { makeFindCoordinatorRequest, makeFindCoordinatorResponse } from '../../../protocol/messages/find-coordinator.ts';
import { ApiKey, type ApiRequest, type ApiResponse } from '../../../protocol/messages/index.ts';
import { makeInitProducerIdRequest, makeInitProducerIdResponse } from '../../../protocol/messages/init-producer-id.ts';
import { makeJoinGroupRequest, makeJoinGroupResponse } from '../../../protocol/messages/join-group.ts';
import { makeListGroupsRequest, makeListGroupsResponse } from '../../../protocol/messages/list-groups.ts';
import { makeListOffsetsRequest, makeListOffsetsResponse } from '../../../protocol/messages/list-offsets.ts';
import { makeListTransactionsRequest, makeListTransactionsResponse } from '../../../protocol/messages/list-transactions.ts';
import { makeMetadataRequest, makeMetadataResponse, makeMetadataResponseTopic } from '../../../protocol/messages/metadata.ts';
import { makeOffsetCommitRequest, makeOffsetCommitResponse } from '../../../protocol/messages/offset-commit.ts';
import { makeOffsetFetchRequest, makeOffsetFetchResponse } from '../../../protocol/messages/offset-fetch.ts';
import { makeOffsetForLeaderEpochRequest, makeOffsetForLeaderEpochResponse } from '../../../protocol/messages/offset-for-leader-epoch.ts';
import { makeProduceRequest, makeProduceResponse, type ProduceRequest } from '../../../protocol/messages/produce.ts';
import { makeTxnOffsetCommitRequest } from '../../../protocol/messages/txn-offset-commit.ts';
import { makeVoteRequest, makeVoteResponse } from '../../../protocol/messages/vote.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { authorizing, authorizingClusterAction, type TopicLookup } from '../../../src/handlers/authorization.ts';
import type { ApiHandler } from '../../../src/handlers/registry.ts';
import {
  AclOperation as Op,
  CLUSTER_RESOURCE_NAME,
  ResourceType as Type,
  type Authorizer,
  type RequestIdentity,
} from '../../../src/security/acl-types.ts';
import type { ListenerRole, RequestContext } from '../../../src/server/session.ts';

const TAF = Errors.TOPIC_AUTHORIZATION_FAILED.code;
const GAF = Errors.GROUP_AUTHORIZATION_FAILED.code;
const CAF = Errors.CLUSTER_AUTHORIZATION_FAILED.code;
const TIAF = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code;

type Grant = readonly [operation: number, resourceType: number, name: string];

/** Allows exactly the granted (operation, resource type, name) tuples and records who asked. */
class FakeAuthorizer implements Authorizer {
  readonly identities: RequestIdentity[] = [];
  private readonly allowed: Set<string>;

  constructor(grants: readonly Grant[]) {
    this.allowed = new Set(grants.map(([op, type, name]) => `${op}/${type}/${name}`));
  }

  authorize(identity: RequestIdentity, operation: number, resourceType: number, resourceName: string): boolean {
    this.identities.push(identity);
    return this.allowed.has(`${operation}/${resourceType}/${resourceName}`);
  }

  authorizeAny(_identity: RequestIdentity, operation: number, resourceType: number): boolean {
    return [...this.allowed].some((key) => key.startsWith(`${operation}/${resourceType}/`));
  }

  authorizedOperations(_identity: RequestIdentity, resourceType: number, resourceName: string): number {
    let bits = 0;
    for (let op = 0; op <= 14; op++) if (this.allowed.has(`${op}/${resourceType}/${resourceName}`)) bits |= 1 << op;
    return bits;
  }
}

const cluster = (op: number): Grant => [op, Type.CLUSTER, CLUSTER_RESOURCE_NAME];
const topic = (op: number, name: string): Grant => [op, Type.TOPIC, name];
const group = (op: number, name: string): Grant => [op, Type.GROUP, name];
const txnId = (op: number, name: string): Grant => [op, Type.TRANSACTIONAL_ID, name];

function context(apiKey: number, role: ListenerRole = 'broker', clientAddress = '10.0.0.7:51234') {
  const closed: string[] = [];
  const ctx = {
    session: { principal: 'User:alice', clientAddress, listenerRole: role },
    apiKey,
    closeConnection: (reason: string) => closed.push(reason),
  } as unknown as RequestContext;
  return { ctx, closed };
}

/** A handler that records each request it was called with and answers with `answer(request)`. */
function recording<K extends ApiKey>(answer: (request: ApiRequest<K>) => ApiResponse<K> | null) {
  const seen: ApiRequest<K>[] = [];
  const handler: ApiHandler<K> = (_ctx, request) => {
    seen.push(request);
    return answer(request);
  };
  return { handler, seen };
}

const TOPICS: TopicLookup = {
  topicName: (id) => ({ IDa: 'a', IDb: 'b', IDc: 'c' })[id],
  topicExists: (name) => ['a', 'b', 'c', 'd'].includes(name),
  autoCreateTopicsEnable: () => true,
};

async function call<K extends ApiKey>(
  apiKey: K,
  handler: ApiHandler<K>,
  grants: readonly Grant[],
  request: ApiRequest<K>,
  version: number,
  role: ListenerRole = 'broker',
) {
  const authorizer = new FakeAuthorizer(grants);
  const { ctx, closed } = context(apiKey, role);
  const response = await authorizing(apiKey, handler, () => authorizer, TOPICS)(ctx, request, version);
  return { response, closed, authorizer };
}

// --- Produce ---

function produceRequest(topics: string[], fields: Partial<ProduceRequest> = {}): ProduceRequest {
  return makeProduceRequest({
    acks: -1,
    topicData: topics.map((name) => ({ name, partitionData: [0, 1].map((index) => ({ index, records: null })) })),
    ...fields,
  });
}

const produceAnswer = (request: ProduceRequest) =>
  makeProduceResponse({
    responses: request.topicData.map((t) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((p) => ({
        index: p.index,
        errorCode: 0,
        baseOffset: 5n,
        logAppendTimeMs: -1n,
        logStartOffset: 0n,
        recordErrors: [],
        errorMessage: null,
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
      })),
    })),
  });

/** One v2 batch header whose attributes carry the transactional bit. */
function transactionalBatch(): Buffer {
  const batch = Buffer.alloc(61);
  batch.writeInt32BE(49, 8);
  batch[16] = 2;
  batch.writeInt16BE(0x10, 21);
  return batch;
}

describe('authorizing', () => {
  it('leaves ApiVersions and the SASL exchange unwrapped', () => {
    const handler: ApiHandler<ApiKey.ApiVersions> = () => null;
    assert.equal(
      authorizing(ApiKey.ApiVersions, handler, () => new FakeAuthorizer([])),
      handler,
    );
    const sasl: ApiHandler<ApiKey.SaslAuthenticate> = () => null;
    assert.equal(
      authorizing(ApiKey.SaslAuthenticate, sasl, () => new FakeAuthorizer([])),
      sasl,
    );
  });

  it('runs the handler on the request itself when no authorizer is configured', async () => {
    const { handler, seen } = recording<ApiKey.Produce>(produceAnswer);
    const request = produceRequest(['a']);
    const { ctx } = context(ApiKey.Produce);
    const response = await authorizing(ApiKey.Produce, handler, () => null)(ctx, request, 9);
    assert.equal(seen[0], request);
    assert.deepEqual(response, produceAnswer(request));
  });

  it('asks for the principal and the client host without its port', async () => {
    for (const [address, host] of [
      ['10.0.0.7:51234', '10.0.0.7'],
      ['[::1]:9092', '::1'],
    ]) {
      const authorizer = new FakeAuthorizer([]);
      const { ctx } = context(ApiKey.Vote, 'controller', address);
      await authorizing(
        ApiKey.Vote,
        () => makeVoteResponse(),
        () => authorizer,
      )(ctx, makeVoteRequest(), 1);
      assert.deepEqual(authorizer.identities[0], { principal: 'User:alice', host });
    }
  });

  it('needs a TopicLookup for the APIs that resolve topics first', () => {
    assert.throws(
      () =>
        authorizing(
          ApiKey.Metadata,
          () => null,
          () => null,
        ),
      /TopicLookup/,
    );
    assert.throws(
      () =>
        authorizing(
          ApiKey.Fetch,
          () => null,
          () => null,
        ),
      /TopicLookup/,
    );
  });

  it('has a policy for every API the broker and the controller serve', () => {
    const served = [
      'AddOffsetsToTxn',
      'AddPartitionsToTxn',
      'AddRaftVoter',
      'AllocateProducerIds',
      'AlterConfigs',
      'AlterPartition',
      'AlterPartitionReassignments',
      'AlterUserScramCredentials',
      'BeginQuorumEpoch',
      'BrokerHeartbeat',
      'BrokerRegistration',
      'CreatePartitions',
      'CreateTopics',
      'DeleteGroups',
      'DeleteRecords',
      'DeleteTopics',
      'DescribeCluster',
      'DescribeConfigs',
      'DescribeGroups',
      'DescribeLogDirs',
      'DescribeProducers',
      'DescribeQuorum',
      'DescribeTopicPartitions',
      'DescribeTransactions',
      'DescribeUserScramCredentials',
      'ElectLeaders',
      'EndQuorumEpoch',
      'EndTxn',
      'Fetch',
      'FetchSnapshot',
      'FindCoordinator',
      'Heartbeat',
      'IncrementalAlterConfigs',
      'InitProducerId',
      'JoinGroup',
      'LeaveGroup',
      'ListGroups',
      'ListOffsets',
      'ListPartitionReassignments',
      'ListTransactions',
      'Metadata',
      'OffsetCommit',
      'OffsetDelete',
      'OffsetFetch',
      'OffsetForLeaderEpoch',
      'Produce',
      'RemoveRaftVoter',
      'SyncGroup',
      'TxnOffsetCommit',
      'UpdateRaftVoter',
      'Vote',
      'WriteTxnMarkers',
      'CreateAcls',
      'DescribeAcls',
      'DeleteAcls',
      'DescribeClientQuotas',
      'AlterClientQuotas',
    ] as const;
    for (const name of served) {
      const handler = () => null;
      assert.notEqual(
        authorizing(ApiKey[name], handler, () => null, TOPICS),
        handler,
        name,
      );
    }
  });
});

describe('authorizing Produce', () => {
  it('sends the handler only the topics the principal may WRITE and answers the others TOPIC_AUTHORIZATION_FAILED in request order', async () => {
    const { handler, seen } = recording<ApiKey.Produce>(produceAnswer);
    const request = produceRequest(['a', 'b', 'c']);
    const { response } = await call(ApiKey.Produce, handler, [topic(Op.WRITE, 'a'), topic(Op.WRITE, 'c')], request, 9);
    assert.deepEqual(
      seen[0]!.topicData.map((t) => t.name),
      ['a', 'c'],
    );
    assert.deepEqual(request.topicData.length, 3, 'the request itself is left as it was');
    assert.deepEqual(
      response!.responses.map((t) => [t.name, t.partitionResponses.map((p) => [p.index, p.errorCode, p.baseOffset])]),
      [
        [
          'a',
          [
            [0, 0, 5n],
            [1, 0, 5n],
          ],
        ],
        [
          'b',
          [
            [0, TAF, -1n],
            [1, TAF, -1n],
          ],
        ],
        [
          'c',
          [
            [0, 0, 5n],
            [1, 0, 5n],
          ],
        ],
      ],
    );
  });

  it('does not call the handler when no topic is authorized', async () => {
    const { handler, seen } = recording<ApiKey.Produce>(produceAnswer);
    const { response } = await call(ApiKey.Produce, handler, [], produceRequest(['a']), 9);
    assert.equal(seen.length, 0);
    assert.deepEqual(
      response!.responses[0]!.partitionResponses.map((p) => p.errorCode),
      [TAF, TAF],
    );
  });

  it('refuses transactional records without WRITE on the transactional id, whole', async () => {
    const { handler, seen } = recording<ApiKey.Produce>(produceAnswer);
    const request = produceRequest(['a'], { transactionalId: 'tx' });
    request.topicData[0]!.partitionData[0]!.records = transactionalBatch();
    const { response } = await call(ApiKey.Produce, handler, [topic(Op.WRITE, 'a')], request, 9);
    assert.equal(seen.length, 0);
    assert.deepEqual(
      response!.responses[0]!.partitionResponses.map((p) => p.errorCode),
      [TIAF, TIAF],
    );
    const allowed = await call(ApiKey.Produce, handler, [topic(Op.WRITE, 'a'), txnId(Op.WRITE, 'tx')], request, 9);
    assert.equal(seen.length, 1);
    assert.equal(allowed.response!.responses[0]!.partitionResponses[0]!.errorCode, 0);
  });

  it('closes the connection of an acks=0 produce with a refused topic', async () => {
    const { handler, seen } = recording<ApiKey.Produce>(() => null);
    const { response, closed } = await call(ApiKey.Produce, handler, [topic(Op.WRITE, 'a')], produceRequest(['a', 'b'], { acks: 0 }), 9);
    assert.equal(response, null);
    assert.equal(closed.length, 1);
    assert.deepEqual(
      seen[0]!.topicData.map((t) => t.name),
      ['a'],
    );
  });

  it('keeps every topic in request order, refusing exactly the unauthorized ones, which the handler never sees', async () => {
    const names = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    await fc.assert(
      fc.asyncProperty(fc.array(names, { maxLength: 8 }), fc.subarray(['a', 'b', 'c', 'd', 'e']), async (topics, allowed) => {
        const { handler, seen } = recording<ApiKey.Produce>(produceAnswer);
        const request = produceRequest(topics);
        const { response } = await call(
          ApiKey.Produce,
          handler,
          allowed.map((t) => topic(Op.WRITE, t)),
          request,
          9,
        );
        assert.deepEqual(
          response!.responses.map((t) => t.name),
          topics,
        );
        for (const t of response!.responses) {
          const expected = allowed.includes(t.name) ? 0 : TAF;
          assert.ok(t.partitionResponses.every((p) => p.errorCode === expected));
        }
        for (const r of seen) assert.ok(r.topicData.every((t) => allowed.includes(t.name)));
      }),
    );
  });
});

// --- Fetch ---

function fetchRequest(topics: string[], fields: Partial<FetchRequest> = {}): FetchRequest {
  return makeFetchRequest({
    replicaId: -1,
    topics: topics.map((t) => ({
      topic: t,
      topicId: ZERO_UUID,
      partitions: [{ partition: 0 }, { partition: 1 }] as FetchRequest['topics'][number]['partitions'],
    })),
    ...fields,
  });
}

const fetchAnswer = (request: FetchRequest) =>
  makeFetchResponse({
    sessionId: 0,
    responses: request.topics.map((t) => ({
      topic: t.topic,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partition,
        errorCode: 0,
        highWatermark: 10n,
        lastStableOffset: 10n,
        logStartOffset: 0n,
        divergingEpoch: { epoch: -1, endOffset: -1n },
        currentLeader: { leaderId: -1, leaderEpoch: -1 },
        snapshotId: { endOffset: -1n, epoch: -1 },
        abortedTransactions: [],
        preferredReadReplica: -1,
        records: Buffer.from('data'),
      })),
    })),
  });

describe('authorizing Fetch', () => {
  it('answers topics the consumer may not READ with no records and high watermark -1', async () => {
    const { handler, seen } = recording<ApiKey.Fetch>(fetchAnswer);
    const { response } = await call(ApiKey.Fetch, handler, [topic(Op.READ, 'b')], fetchRequest(['a', 'b']), 12);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.topic),
      ['b'],
    );
    const [a, b] = response!.responses;
    assert.equal(a!.topic, 'a');
    assert.deepEqual(
      a!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.highWatermark, p.records!.length]),
      [
        [0, TAF, -1n, 0],
        [1, TAF, -1n, 0],
      ],
    );
    assert.deepEqual(
      b!.partitions.map((p) => p.errorCode),
      [0, 0],
    );
  });

  it('authorizes again the partitions an incremental fetch session answers from its cache', async () => {
    // The session cached 'a' while it was readable; this request names only 'b'.
    const { handler, seen } = recording<ApiKey.Fetch>(() => fetchAnswer(fetchRequest(['a', 'b'])));
    const request = fetchRequest(['b'], { sessionId: 5, sessionEpoch: 2 });
    const { response } = await call(ApiKey.Fetch, handler, [topic(Op.READ, 'b')], request, 12);
    assert.deepEqual(seen[0], request);
    assert.deepEqual(
      response!.responses.map((t) => [t.topic, t.partitions.map((p) => [p.errorCode, p.records!.length])]),
      [
        [
          'b',
          [
            [0, 4],
            [0, 4],
          ],
        ],
        [
          'a',
          [
            [TAF, 0],
            [TAF, 0],
          ],
        ],
      ],
    );
  });

  it('refuses every partition of a follower without CLUSTER_ACTION, and lets one with it fetch anything', async () => {
    const { handler, seen } = recording<ApiKey.Fetch>(fetchAnswer);
    const request = fetchRequest(['a'], { replicaId: 2 });
    const refused = await call(ApiKey.Fetch, handler, [topic(Op.READ, 'a')], request, 12);
    assert.equal(seen.length, 0);
    assert.deepEqual(
      refused.response!.responses[0]!.partitions.map((p) => p.errorCode),
      [TAF, TAF],
    );
    const allowed = await call(ApiKey.Fetch, handler, [cluster(Op.CLUSTER_ACTION)], request, 12);
    assert.equal(seen[0], request);
    assert.deepEqual(
      allowed.response!.responses[0]!.partitions.map((p) => p.errorCode),
      [0, 0],
    );
  });

  it('reads the follower from the replica state from v15', async () => {
    const { handler, seen } = recording<ApiKey.Fetch>(fetchAnswer);
    const request = fetchRequest([], { replicaState: { replicaId: 3, replicaEpoch: 1n } });
    request.topics = [
      { topic: '', topicId: 'IDa', partitions: [{ partition: 0 } as FetchRequest['topics'][number]['partitions'][number]] },
    ];
    const { response } = await call(ApiKey.Fetch, handler, [topic(Op.READ, 'a')], request, 15);
    assert.equal(seen.length, 0);
    assert.equal(response!.responses[0]!.partitions[0]!.errorCode, TAF);
  });

  it('resolves topic ids from v13: unknown ids answer UNKNOWN_TOPIC_ID, known ones need READ on their name', async () => {
    const { handler, seen } = recording<ApiKey.Fetch>(fetchAnswer);
    const request = fetchRequest([]);
    request.topics = ['IDa', 'IDx', 'IDb'].map((topicId) => ({
      topic: '',
      topicId,
      partitions: [{ partition: 0 } as FetchRequest['topics'][number]['partitions'][number]],
    }));
    const { response } = await call(ApiKey.Fetch, handler, [topic(Op.READ, 'b')], request, 13);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.topicId),
      ['IDb'],
    );
    assert.deepEqual(
      response!.responses.map((t) => [t.topicId, t.partitions[0]!.errorCode]),
      [
        ['IDa', TAF],
        ['IDx', Errors.UNKNOWN_TOPIC_ID.code],
        ['IDb', 0],
      ],
    );
  });

  it('keeps every topic in request order, refusing exactly the unauthorized ones, which the handler never sees', async () => {
    const names = fc.constantFrom('a', 'b', 'c', 'd');
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(names, { maxLength: 4 }), fc.subarray(['a', 'b', 'c', 'd']), async (topics, allowed) => {
        const { handler, seen } = recording<ApiKey.Fetch>(fetchAnswer);
        const { response } = await call(
          ApiKey.Fetch,
          handler,
          allowed.map((t) => topic(Op.READ, t)),
          fetchRequest(topics),
          12,
        );
        assert.deepEqual(
          response!.responses.map((t) => t.topic),
          topics,
        );
        for (const t of response!.responses) {
          const expected = allowed.includes(t.topic) ? 0 : TAF;
          assert.ok(t.partitions.every((p) => p.errorCode === expected));
        }
        for (const r of seen) assert.ok(r.topics.every((t) => allowed.includes(t.topic)));
      }),
    );
  });
});

describe('authorizing the other data-path APIs', () => {
  it('ListOffsets answers refused topics with timestamp and offset -1', async () => {
    const { handler, seen } = recording<ApiKey.ListOffsets>((r) =>
      makeListOffsetsResponse({
        topics: r.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: 0,
            oldStyleOffsets: [],
            timestamp: 1n,
            offset: 7n,
            leaderEpoch: 0,
          })),
        })),
      }),
    );
    const request = makeListOffsetsRequest({
      topics: ['a', 'b'].map((name) => ({
        name,
        partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n, maxNumOffsets: 1 }],
      })),
    });
    const { response } = await call(ApiKey.ListOffsets, handler, [topic(Op.DESCRIBE, 'b')], request, 7);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['b'],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.partitions[0]!.errorCode, t.partitions[0]!.timestamp, t.partitions[0]!.offset]),
      [
        ['a', TAF, -1n, -1n],
        ['b', 0, 1n, 7n],
      ],
    );
  });

  it('OffsetForLeaderEpoch lets CLUSTER_ACTION through and otherwise needs DESCRIBE per topic', async () => {
    const { handler, seen } = recording<ApiKey.OffsetForLeaderEpoch>((r) =>
      makeOffsetForLeaderEpochResponse({
        topics: r.topics.map((t) => ({
          topic: t.topic,
          partitions: t.partitions.map((p) => ({ errorCode: 0, partition: p.partition, leaderEpoch: 1, endOffset: 3n })),
        })),
      }),
    );
    const request = makeOffsetForLeaderEpochRequest({
      topics: ['a', 'b'].map((t) => ({ topic: t, partitions: [{ partition: 0, currentLeaderEpoch: 1, leaderEpoch: 1 }] })),
    });
    const broker = await call(ApiKey.OffsetForLeaderEpoch, handler, [cluster(Op.CLUSTER_ACTION)], request, 4);
    assert.equal(seen[0], request);
    assert.deepEqual(
      broker.response!.topics.map((t) => t.partitions[0]!.errorCode),
      [0, 0],
    );
    const consumer = await call(ApiKey.OffsetForLeaderEpoch, handler, [topic(Op.DESCRIBE, 'a')], request, 4);
    assert.deepEqual(
      seen[1]!.topics.map((t) => t.topic),
      ['a'],
    );
    assert.deepEqual(
      consumer.response!.topics.map((t) => [t.topic, t.partitions[0]!.errorCode]),
      [
        ['a', 0],
        ['b', TAF],
      ],
    );
  });

  it('InitProducerId needs WRITE on the transactional id, or idempotent write on the cluster or any topic', async () => {
    const { handler, seen } = recording<ApiKey.InitProducerId>(() => makeInitProducerIdResponse({ producerId: 4n, producerEpoch: 0 }));
    const transactional = makeInitProducerIdRequest({ transactionalId: 'tx' });
    const refused = await call(ApiKey.InitProducerId, handler, [cluster(Op.IDEMPOTENT_WRITE)], transactional, 4);
    assert.deepEqual([refused.response!.errorCode, refused.response!.producerId, refused.response!.producerEpoch], [TIAF, -1n, -1]);
    const idempotent = makeInitProducerIdRequest({ transactionalId: null });
    const noWrite = await call(ApiKey.InitProducerId, handler, [topic(Op.READ, 'a')], idempotent, 4);
    assert.equal(noWrite.response!.errorCode, CAF);
    assert.equal(seen.length, 0);
    await call(ApiKey.InitProducerId, handler, [topic(Op.WRITE, 'any')], idempotent, 4);
    await call(ApiKey.InitProducerId, handler, [cluster(Op.IDEMPOTENT_WRITE)], idempotent, 4);
    await call(ApiKey.InitProducerId, handler, [txnId(Op.WRITE, 'tx')], transactional, 4);
    assert.equal(seen.length, 3);
  });
});

// --- Groups ---

describe('authorizing the group APIs', () => {
  it('JoinGroup without READ on the group is refused whole, with no member id', async () => {
    const { handler, seen } = recording<ApiKey.JoinGroup>(() => makeJoinGroupResponse({ memberId: 'm-1' }));
    const request = makeJoinGroupRequest({ groupId: 'g', memberId: 'm-1' });
    const { response } = await call(ApiKey.JoinGroup, handler, [group(Op.DESCRIBE, 'g')], request, 9);
    assert.equal(seen.length, 0);
    assert.deepEqual([response!.errorCode, response!.memberId, response!.generationId, response!.protocolName], [GAF, '', -1, null]);
  });

  it('OffsetCommit needs READ on the group, whole, then READ on each topic', async () => {
    const { handler, seen } = recording<ApiKey.OffsetCommit>((r) =>
      makeOffsetCommitResponse({
        topics: r.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: 0 })),
        })),
      }),
    );
    const request = makeOffsetCommitRequest({
      groupId: 'g',
      topics: ['a', 'b', 'c'].map((name) => ({
        name,
        partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }],
      })),
    });
    const noGroup = await call(ApiKey.OffsetCommit, handler, [topic(Op.READ, 'a')], request, 8);
    assert.equal(seen.length, 0);
    assert.deepEqual(
      noGroup.response!.topics.map((t) => t.partitions[0]!.errorCode),
      [GAF, GAF, GAF],
    );
    const { response } = await call(ApiKey.OffsetCommit, handler, [group(Op.READ, 'g'), topic(Op.READ, 'b')], request, 8);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['b'],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.partitions[0]!.errorCode]),
      [
        ['a', TAF],
        ['b', 0],
        ['c', TAF],
      ],
    );
  });

  it('TxnOffsetCommit checks the transactional id, then the group, then each topic', async () => {
    const { handler, seen } = recording<ApiKey.TxnOffsetCommit>(() => null);
    const request = makeTxnOffsetCommitRequest({
      transactionalId: 'tx',
      groupId: 'g',
      topics: [{ name: 'a', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }],
    });
    const noTxn = await call(ApiKey.TxnOffsetCommit, handler, [group(Op.READ, 'g'), topic(Op.READ, 'a')], request, 3);
    assert.equal(noTxn.response!.topics[0]!.partitions[0]!.errorCode, TIAF);
    const noGroup = await call(ApiKey.TxnOffsetCommit, handler, [txnId(Op.WRITE, 'tx'), topic(Op.READ, 'a')], request, 3);
    assert.equal(noGroup.response!.topics[0]!.partitions[0]!.errorCode, GAF);
    const noTopic = await call(ApiKey.TxnOffsetCommit, handler, [txnId(Op.WRITE, 'tx'), group(Op.READ, 'g')], request, 3);
    assert.equal(noTopic.response!.topics[0]!.partitions[0]!.errorCode, TAF);
    assert.equal(seen.length, 0);
  });

  it('OffsetFetch v8 answers each group: refused groups, refused topics, and all-topics filtered by DESCRIBE', async () => {
    const { handler, seen } = recording<ApiKey.OffsetFetch>((r) =>
      makeOffsetFetchResponse({
        groups: r.groups.map((g) => ({
          groupId: g.groupId,
          errorCode: 0,
          topics: (
            g.topics ?? [
              { name: 'a', partitionIndexes: [0] },
              { name: 'b', partitionIndexes: [0] },
            ]
          ).map((t) => ({
            name: t.name,
            partitions: t.partitionIndexes.map((partitionIndex) => ({
              partitionIndex,
              committedOffset: 9n,
              committedLeaderEpoch: -1,
              metadata: '',
              errorCode: 0,
            })),
          })),
        })),
      }),
    );
    const request = makeOffsetFetchRequest({
      groups: [
        {
          groupId: 'g1',
          memberId: null,
          memberEpoch: -1,
          topics: [
            { name: 'a', partitionIndexes: [0] },
            { name: 'b', partitionIndexes: [0, 1] },
          ],
        },
        { groupId: 'g2', memberId: null, memberEpoch: -1, topics: null },
        { groupId: 'g3', memberId: null, memberEpoch: -1, topics: null },
      ],
    });
    const grants = [group(Op.DESCRIBE, 'g1'), group(Op.DESCRIBE, 'g2'), topic(Op.DESCRIBE, 'a')];
    const { response } = await call(ApiKey.OffsetFetch, handler, grants, request, 8);
    assert.deepEqual(
      seen[0]!.groups.map((g) => [g.groupId, g.topics?.map((t) => t.name) ?? null]),
      [
        ['g1', ['a']],
        ['g2', null],
      ],
    );
    assert.deepEqual(
      response!.groups.map((g) => [
        g.groupId,
        g.errorCode,
        g.topics.map((t) => [t.name, t.partitions.map((p) => [p.errorCode, p.committedOffset])]),
      ]),
      [
        [
          'g1',
          0,
          [
            ['a', [[0, 9n]]],
            [
              'b',
              [
                [TAF, -1n],
                [TAF, -1n],
              ],
            ],
          ],
        ],
        ['g2', 0, [['a', [[0, 9n]]]]],
        ['g3', GAF, []],
      ],
    );
  });

  it('OffsetFetch v7 refuses the group at the top level, v1 on each partition', async () => {
    const { handler, seen } = recording<ApiKey.OffsetFetch>(() => makeOffsetFetchResponse());
    const request = makeOffsetFetchRequest({ groupId: 'g', topics: [{ name: 'a', partitionIndexes: [0, 1] }] });
    const v7 = await call(ApiKey.OffsetFetch, handler, [], request, 7);
    assert.deepEqual([v7.response!.errorCode, v7.response!.topics], [GAF, []]);
    const v1 = await call(ApiKey.OffsetFetch, handler, [], request, 1);
    assert.deepEqual(
      v1.response!.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.committedOffset]),
      [
        [0, GAF, -1n],
        [1, GAF, -1n],
      ],
    );
    assert.equal(seen.length, 0);
  });

  it('DescribeGroups refuses groups the principal may not DESCRIBE and fills authorized operations when asked', async () => {
    const { handler, seen } = recording<ApiKey.DescribeGroups>((r) =>
      makeDescribeGroupsResponse({
        groups: r.groups.map((groupId) => ({
          groupId,
          errorCode: 0,
          groupState: 'Stable',
          protocolType: 'consumer',
          protocolData: 'range',
          members: [],
          authorizedOperations: -2147483648,
        })),
      }),
    );
    const request = makeDescribeGroupsRequest({ groups: ['x', 'y'], includeAuthorizedOperations: true });
    const { response } = await call(ApiKey.DescribeGroups, handler, [group(Op.DESCRIBE, 'y'), group(Op.READ, 'y')], request, 5);
    assert.deepEqual(seen[0]!.groups, ['y']);
    assert.deepEqual(
      response!.groups.map((g) => [g.groupId, g.errorCode, g.authorizedOperations]),
      [
        ['x', GAF, -2147483648],
        ['y', 0, (1 << Op.DESCRIBE) | (1 << Op.READ)],
      ],
    );
  });

  it('ListGroups lists every group for DESCRIBE on the cluster, else only describable groups', async () => {
    const { handler } = recording<ApiKey.ListGroups>(() =>
      makeListGroupsResponse({
        groups: ['g1', 'g2'].map((groupId) => ({ groupId, protocolType: 'consumer', groupState: 'Stable', groupType: 'classic' })),
      }),
    );
    const all = await call(ApiKey.ListGroups, handler, [cluster(Op.DESCRIBE)], makeListGroupsRequest(), 5);
    assert.deepEqual(
      all.response!.groups.map((g) => g.groupId),
      ['g1', 'g2'],
    );
    const some = await call(ApiKey.ListGroups, handler, [group(Op.DESCRIBE, 'g2')], makeListGroupsRequest(), 5);
    assert.deepEqual(
      some.response!.groups.map((g) => g.groupId),
      ['g2'],
    );
  });

  it('FindCoordinator checks DESCRIBE on each group or transactional id key', async () => {
    const { handler, seen } = recording<ApiKey.FindCoordinator>((r) =>
      makeFindCoordinatorResponse({
        coordinators: r.coordinatorKeys.map((key) => ({ key, nodeId: 1, host: 'h', port: 9092, errorCode: 0, errorMessage: null })),
      }),
    );
    const groups = makeFindCoordinatorRequest({ keyType: 0, coordinatorKeys: ['g1', 'g2'] });
    const { response } = await call(ApiKey.FindCoordinator, handler, [group(Op.DESCRIBE, 'g2')], groups, 4);
    assert.deepEqual(seen[0]!.coordinatorKeys, ['g2']);
    assert.deepEqual(
      response!.coordinators.map((c) => [c.key, c.errorCode, c.nodeId]),
      [
        ['g1', GAF, -1],
        ['g2', 0, 1],
      ],
    );
    const txn = makeFindCoordinatorRequest({ keyType: 1, key: 'tx' });
    const v3 = await call(ApiKey.FindCoordinator, handler, [txnId(Op.WRITE, 'tx')], txn, 3);
    assert.deepEqual([v3.response!.errorCode, v3.response!.nodeId], [TIAF, -1]);
  });
});

// --- Transactions ---

describe('authorizing the transaction APIs', () => {
  it('AddPartitionsToTxn v3 fails the whole transaction on one refused topic, internal topics included', async () => {
    const { handler, seen } = recording<ApiKey.AddPartitionsToTxn>(() => null);
    const request = makeAddPartitionsToTxnRequest({
      v3AndBelowTransactionalId: 'tx',
      v3AndBelowTopics: [
        { name: 'a', partitions: [0] },
        { name: 'b', partitions: [0, 1] },
        { name: 'zz', partitions: [0] },
        { name: '__consumer_offsets', partitions: [0] },
      ],
    });
    const grants = [txnId(Op.WRITE, 'tx'), topic(Op.WRITE, 'a'), topic(Op.WRITE, 'zz'), topic(Op.WRITE, '__consumer_offsets')];
    const { response } = await call(ApiKey.AddPartitionsToTxn, handler, grants, request, 3);
    assert.equal(seen.length, 0);
    assert.deepEqual(
      response!.resultsByTopicV3AndBelow.map((t) => [t.name, t.resultsByPartition.map((p) => p.partitionErrorCode)]),
      [
        ['a', [Errors.OPERATION_NOT_ATTEMPTED.code]],
        ['b', [TAF, TAF]],
        ['zz', [Errors.UNKNOWN_TOPIC_OR_PARTITION.code]],
        ['__consumer_offsets', [TAF]],
      ],
    );
    const noTxn = await call(ApiKey.AddPartitionsToTxn, handler, [topic(Op.WRITE, 'a')], request, 3);
    assert.ok(noTxn.response!.resultsByTopicV3AndBelow.every((t) => t.resultsByPartition.every((p) => p.partitionErrorCode === TIAF)));
  });

  it('AddPartitionsToTxn v4+ is for brokers: CLUSTER_ACTION on the cluster', async () => {
    const { handler, seen } = recording<ApiKey.AddPartitionsToTxn>(() => null);
    const refused = await call(ApiKey.AddPartitionsToTxn, handler, [txnId(Op.WRITE, 'tx')], makeAddPartitionsToTxnRequest(), 4);
    assert.equal((refused.response as { errorCode: number }).errorCode, CAF);
    await call(ApiKey.AddPartitionsToTxn, handler, [cluster(Op.CLUSTER_ACTION)], makeAddPartitionsToTxnRequest(), 4);
    assert.equal(seen.length, 1);
  });

  it('ListTransactions keeps only the transactional ids the principal may DESCRIBE', async () => {
    const { handler } = recording<ApiKey.ListTransactions>(() =>
      makeListTransactionsResponse({
        transactionStates: ['t1', 't2'].map((transactionalId) => ({ transactionalId, producerId: 1n, transactionState: 'Ongoing' })),
      }),
    );
    const { response } = await call(ApiKey.ListTransactions, handler, [txnId(Op.DESCRIBE, 't2')], makeListTransactionsRequest(), 1);
    assert.deepEqual(
      response!.transactionStates.map((s) => s.transactionalId),
      ['t2'],
    );
  });
});

// --- Metadata ---

describe('authorizing Metadata', () => {
  const answer = (r: ApiRequest<ApiKey.Metadata>) =>
    makeMetadataResponse({
      topics: (
        r.topics ?? [
          { name: 'a', topicId: ZERO_UUID },
          { name: 'b', topicId: ZERO_UUID },
        ]
      ).map((t) =>
        makeMetadataResponseTopic({
          name: t.name ?? { IDa: 'a', IDb: 'b' }[t.topicId] ?? null,
          topicId: t.topicId === ZERO_UUID ? `ID${t.name}` : t.topicId,
          errorCode: TOPICS.topicExists(t.name ?? 'a') ? 0 : Errors.LEADER_NOT_AVAILABLE.code,
        }),
      ),
    });

  it('refuses named topics without DESCRIBE, and unknown ones it would create without CREATE', async () => {
    const { handler, seen } = recording<ApiKey.Metadata>(answer);
    const request = makeMetadataRequest({
      topics: ['a', 'b', 'new1', 'new2'].map((name) => ({ name, topicId: ZERO_UUID })),
      allowAutoTopicCreation: true,
    });
    const grants = [topic(Op.DESCRIBE, 'a'), topic(Op.DESCRIBE, 'new1'), topic(Op.DESCRIBE, 'new2'), topic(Op.CREATE, 'new2')];
    const { response } = await call(ApiKey.Metadata, handler, grants, request, 9);
    assert.deepEqual(
      seen[0]!.topics!.map((t) => t.name),
      ['a', 'new2'],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.errorCode, t.topicId]),
      [
        ['a', 0, 'IDa'],
        ['b', TAF, ZERO_UUID],
        ['new1', TAF, ZERO_UUID],
        ['new2', Errors.LEADER_NOT_AVAILABLE.code, 'IDnew2'],
      ],
    );
  });

  it('lists only describable topics when asked for all, with topic and cluster authorized operations', async () => {
    const { handler } = recording<ApiKey.Metadata>(answer);
    const request = makeMetadataRequest({ topics: null, includeTopicAuthorizedOperations: true, includeClusterAuthorizedOperations: true });
    const { response } = await call(ApiKey.Metadata, handler, [topic(Op.DESCRIBE, 'b'), topic(Op.READ, 'b')], request, 10);
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.topicAuthorizedOperations]),
      [['b', (1 << Op.DESCRIBE) | (1 << Op.READ)]],
    );
    assert.equal(response!.clusterAuthorizedOperations, 0);
  });

  it('refuses topics asked by id without a name', async () => {
    const { handler } = recording<ApiKey.Metadata>(answer);
    const request = makeMetadataRequest({ topics: ['IDa', 'IDb'].map((topicId) => ({ name: null, topicId })) });
    const { response } = await call(ApiKey.Metadata, handler, [topic(Op.DESCRIBE, 'b')], request, 12);
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.topicId, t.errorCode]),
      [
        [null, 'IDa', TAF],
        ['b', 'IDb', 0],
      ],
    );
  });
});

// --- Admin ---

describe('authorizing the admin APIs', () => {
  it('CreateTopics needs CREATE on the cluster or the topic, and hides configs without DESCRIBE_CONFIGS', async () => {
    const { handler, seen } = recording<ApiKey.CreateTopics>((r) =>
      makeCreateTopicsResponse({
        topics: r.topics.map((t) => ({
          name: t.name,
          topicId: 'X',
          errorCode: 0,
          errorMessage: null,
          topicConfigErrorCode: 0,
          numPartitions: 1,
          replicationFactor: 1,
          configs: [{ name: 'k', value: 'v', readOnly: false, configSource: 5, isSensitive: false }],
        })),
      }),
    );
    const request = makeCreateTopicsRequest({
      topics: ['a', 'b', 'c'].map((name) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] })),
    });
    const grants = [topic(Op.CREATE, 'a'), topic(Op.CREATE, 'c'), topic(Op.DESCRIBE_CONFIGS, 'c')];
    const { response } = await call(ApiKey.CreateTopics, handler, grants, request, 7);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['a', 'c'],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.errorCode, t.errorMessage, t.topicConfigErrorCode, t.configs?.length]),
      [
        ['a', 0, null, TAF, 0],
        ['b', TAF, 'Authorization failed.', 0, 0],
        ['c', 0, null, 0, 1],
      ],
    );
    await call(ApiKey.CreateTopics, handler, [cluster(Op.CREATE)], request, 7);
    assert.equal(seen[1], request);
  });

  it('DeleteTopics refuses undescribable topics, and describable ones it may not delete only if they exist', async () => {
    const { handler, seen } = recording<ApiKey.DeleteTopics>((r) =>
      makeDeleteTopicsResponse({
        responses: r.topics.map((t) => ({ name: t.name ?? 'a', topicId: t.topicId, errorCode: 0, errorMessage: null })),
      }),
    );
    const request = makeDeleteTopicsRequest({
      topics: [
        { name: 'a', topicId: ZERO_UUID },
        { name: 'b', topicId: ZERO_UUID },
        { name: 'nope', topicId: ZERO_UUID },
        { name: null, topicId: 'IDc' },
      ],
    });
    const grants = [topic(Op.DESCRIBE, 'a'), topic(Op.DELETE, 'a'), topic(Op.DESCRIBE, 'b'), topic(Op.DESCRIBE, 'nope')];
    const { response } = await call(ApiKey.DeleteTopics, handler, grants, request, 6);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['a', 'nope'],
    );
    assert.deepEqual(
      response!.responses.map((t) => [t.name, t.topicId, t.errorCode]),
      [
        ['a', ZERO_UUID, 0],
        ['b', ZERO_UUID, TAF],
        ['nope', ZERO_UUID, 0],
        [null, 'IDc', TAF],
      ],
    );
  });

  it("DescribeConfigs answers each refused resource with its type's error and no configs", async () => {
    const { handler, seen } = recording<ApiKey.DescribeConfigs>((r) =>
      makeDescribeConfigsResponse({
        results: r.resources.map((x) => ({
          errorCode: 0,
          errorMessage: null,
          resourceType: x.resourceType,
          resourceName: x.resourceName,
          configs: [],
        })),
      }),
    );
    const request = makeDescribeConfigsRequest({
      resources: [
        { resourceType: 4, resourceName: '1', configurationKeys: null },
        { resourceType: 2, resourceName: 'a', configurationKeys: null },
        { resourceType: 32, resourceName: 'g', configurationKeys: null },
        { resourceType: 2, resourceName: 'b', configurationKeys: null },
      ],
    });
    const { response } = await call(ApiKey.DescribeConfigs, handler, [topic(Op.DESCRIBE_CONFIGS, 'b')], request, 4);
    assert.deepEqual(
      seen[0]!.resources.map((r) => r.resourceName),
      ['b'],
    );
    assert.deepEqual(
      response!.results.map((r) => [r.resourceType, r.resourceName, r.errorCode]),
      [
        [4, '1', CAF],
        [2, 'a', TAF],
        [32, 'g', GAF],
        [2, 'b', 0],
      ],
    );
  });
});

// --- Cluster-level ---

describe('authorizing the cluster-level APIs', () => {
  const CLUSTER_APIS: [keyof typeof ApiKey, number, number][] = [
    ['Vote', Op.CLUSTER_ACTION, 1],
    ['BeginQuorumEpoch', Op.CLUSTER_ACTION, 1],
    ['EndQuorumEpoch', Op.CLUSTER_ACTION, 1],
    ['FetchSnapshot', Op.CLUSTER_ACTION, 1],
    ['AlterPartition', Op.CLUSTER_ACTION, 2],
    ['BrokerRegistration', Op.CLUSTER_ACTION, 3],
    ['BrokerHeartbeat', Op.CLUSTER_ACTION, 1],
    ['AllocateProducerIds', Op.CLUSTER_ACTION, 0],
    ['UpdateRaftVoter', Op.CLUSTER_ACTION, 0],
    ['AddRaftVoter', Op.ALTER, 0],
    ['RemoveRaftVoter', Op.ALTER, 0],
    ['DescribeQuorum', Op.DESCRIBE, 2],
    ['ListPartitionReassignments', Op.DESCRIBE, 0],
    ['DescribeAcls', Op.DESCRIBE, 3],
    ['DescribeClientQuotas', Op.DESCRIBE_CONFIGS, 1],
    ['DescribeUserScramCredentials', Op.DESCRIBE, 0],
    ['DescribeLogDirs', Op.DESCRIBE, 4],
  ];

  for (const [name, operation, version] of CLUSTER_APIS) {
    it(`${name} needs operation ${operation} on the cluster`, async () => {
      const apiKey = ApiKey[name];
      let called = 0;
      const handler = () => {
        called++;
        return { errorCode: 0 } as never;
      };
      const wrapped = (grants: Grant[]) => authorizing(apiKey, handler, () => new FakeAuthorizer(grants), TOPICS);
      const { ctx } = context(apiKey, 'controller');
      const refused = (await wrapped([cluster(Op.DESCRIBE_CONFIGS === operation ? Op.ALTER : Op.DESCRIBE_CONFIGS)])(
        ctx,
        {} as never,
        version,
      )) as { errorCode: number };
      assert.equal(called, 0);
      assert.equal(refused.errorCode, CAF);
      await wrapped([cluster(operation)])(ctx, {} as never, version);
      assert.equal(called, 1);
    });
  }

  it('ElectLeaders refused answers every named partition', async () => {
    const { handler, seen } = recording<ApiKey.ElectLeaders>(() => null);
    const request = { electionType: 0, topicPartitions: [{ topic: 'a', partitions: [0, 1] }], timeoutMs: 1 };
    const { response } = await call(ApiKey.ElectLeaders, handler, [cluster(Op.DESCRIBE)], request, 2);
    assert.equal(seen.length, 0);
    assert.equal(response!.errorCode, CAF);
    assert.deepEqual(
      response!.replicaElectionResults[0]!.partitionResult.map((p) => [p.partitionId, p.errorCode]),
      [
        [0, CAF],
        [1, CAF],
      ],
    );
  });

  it('DescribeCluster on a controller listener needs ALTER on the cluster; authorized operations need DESCRIBE', async () => {
    const { handler, seen } = recording<ApiKey.DescribeCluster>(() => ({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      endpointType: 1,
      clusterId: 'c',
      controllerId: 1,
      brokers: [],
      clusterAuthorizedOperations: -2147483648,
    }));
    const request = { includeClusterAuthorizedOperations: true, endpointType: 2 };
    const controller = await call(ApiKey.DescribeCluster, handler, [cluster(Op.DESCRIBE)], request, 1, 'controller');
    assert.equal(controller.response!.errorCode, CAF);
    assert.equal(seen.length, 0);
    const broker = await call(ApiKey.DescribeCluster, handler, [cluster(Op.DESCRIBE)], request, 1);
    assert.equal(broker.response!.clusterAuthorizedOperations, 1 << Op.DESCRIBE);
    const anyone = await call(ApiKey.DescribeCluster, handler, [], request, 1);
    assert.equal(anyone.response!.clusterAuthorizedOperations, 0);
  });

  it('authorizingClusterAction guards Raft fetches on controller listeners with CLUSTER_ACTION', async () => {
    const { handler, seen } = recording<ApiKey.Fetch>(fetchAnswer);
    const request = fetchRequest(['__cluster_metadata'], { replicaId: 3 });
    const { ctx } = context(ApiKey.Fetch, 'controller');
    const refused = await authorizingClusterAction(handler, () => new FakeAuthorizer([topic(Op.READ, '__cluster_metadata')]))(
      ctx,
      request,
      12,
    );
    assert.equal(refused!.errorCode, CAF);
    assert.equal(seen.length, 0);
    await authorizingClusterAction(handler, () => new FakeAuthorizer([cluster(Op.CLUSTER_ACTION)]))(ctx, request, 12);
    assert.equal(seen[0], request);
  });
});

describe('authorizing the remaining per-resource APIs', () => {
  it('DeleteGroups answers groups the principal may not DELETE with GROUP_AUTHORIZATION_FAILED, in request order', async () => {
    const { handler, seen } = recording<ApiKey.DeleteGroups>((r) => ({
      throttleTimeMs: 0,
      results: r.groupsNames.map((groupId) => ({ groupId, errorCode: 0 })),
    }));
    const { response } = await call(ApiKey.DeleteGroups, handler, [group(Op.DELETE, 'g2')], { groupsNames: ['g1', 'g2', 'g3'] }, 2);
    assert.deepEqual(seen[0]!.groupsNames, ['g2']);
    assert.deepEqual(
      response!.results.map((r) => [r.groupId, r.errorCode]),
      [
        ['g1', GAF],
        ['g2', 0],
        ['g3', GAF],
      ],
    );
  });

  it('OffsetDelete needs DELETE on the group, whole, then READ on each topic', async () => {
    const { handler, seen } = recording<ApiKey.OffsetDelete>((r) => ({
      errorCode: 0,
      throttleTimeMs: 0,
      topics: r.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: 0 })),
      })),
    }));
    const request = { groupId: 'g', topics: ['a', 'b'].map((name) => ({ name, partitions: [{ partitionIndex: 0 }] })) };
    const noGroup = await call(ApiKey.OffsetDelete, handler, [group(Op.READ, 'g'), topic(Op.READ, 'a')], request, 0);
    assert.deepEqual([noGroup.response!.errorCode, noGroup.response!.topics], [GAF, []]);
    const { response } = await call(ApiKey.OffsetDelete, handler, [group(Op.DELETE, 'g'), topic(Op.READ, 'b')], request, 0);
    assert.deepEqual(
      seen.map((r) => r.topics.map((t) => t.name)),
      [['b']],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.partitions[0]!.errorCode]),
      [
        ['a', TAF],
        ['b', 0],
      ],
    );
  });

  it('DeleteRecords needs DELETE on each topic; refused partitions answer low watermark -1', async () => {
    const { handler, seen } = recording<ApiKey.DeleteRecords>((r) => ({
      throttleTimeMs: 0,
      topics: r.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, lowWatermark: 4n, errorCode: 0 })),
      })),
    }));
    const request = { timeoutMs: 1, topics: ['a', 'b'].map((name) => ({ name, partitions: [{ partitionIndex: 0, offset: 4n }] })) };
    const { response } = await call(ApiKey.DeleteRecords, handler, [topic(Op.DELETE, 'a')], request, 2);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['a'],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.partitions[0]!.errorCode, t.partitions[0]!.lowWatermark]),
      [
        ['a', 0, 4n],
        ['b', TAF, -1n],
      ],
    );
  });

  it('DescribeProducers needs READ on each topic', async () => {
    const { handler, seen } = recording<ApiKey.DescribeProducers>((r) => ({
      throttleTimeMs: 0,
      topics: r.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode: 0, errorMessage: null, activeProducers: [] })),
      })),
    }));
    const request = { topics: ['a', 'b'].map((name) => ({ name, partitionIndexes: [0, 1] })) };
    const { response } = await call(ApiKey.DescribeProducers, handler, [topic(Op.READ, 'b')], request, 0);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['b'],
    );
    assert.deepEqual(
      response!.topics.map((t) => [t.name, t.partitions.map((p) => [p.errorCode, p.errorMessage])]),
      [
        [
          'a',
          [
            [TAF, 'Topic authorization failed.'],
            [TAF, 'Topic authorization failed.'],
          ],
        ],
        [
          'b',
          [
            [0, null],
            [0, null],
          ],
        ],
      ],
    );
  });

  it('WriteTxnMarkers needs ALTER or CLUSTER_ACTION on the cluster; refused, every marker partition carries the error', async () => {
    const { handler, seen } = recording<ApiKey.WriteTxnMarkers>(() => ({ markers: [] }));
    const request = {
      markers: [
        {
          producerId: 7n,
          producerEpoch: 0,
          transactionResult: true,
          coordinatorEpoch: 0,
          topics: [{ name: 'a', partitionIndexes: [0, 1] }],
        },
      ],
    };
    const { response } = await call(ApiKey.WriteTxnMarkers, handler, [topic(Op.WRITE, 'a')], request, 1);
    assert.equal(seen.length, 0);
    assert.deepEqual(
      response!.markers.map((m) => [m.producerId, m.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode])]),
      [
        [
          7n,
          [
            [0, CAF],
            [1, CAF],
          ],
        ],
      ],
    );
    await call(ApiKey.WriteTxnMarkers, handler, [cluster(Op.ALTER)], request, 1);
    await call(ApiKey.WriteTxnMarkers, handler, [cluster(Op.CLUSTER_ACTION)], request, 1);
    assert.equal(seen.length, 2);
  });

  it('EndTxn and AddOffsetsToTxn need WRITE on the transactional id; AddOffsetsToTxn also READ on the group', async () => {
    const end = recording<ApiKey.EndTxn>(() => ({ throttleTimeMs: 0, errorCode: 0, producerId: -1n, producerEpoch: -1 }));
    const endRequest = { transactionalId: 'tx', producerId: 1n, producerEpoch: 0, committed: true };
    assert.equal((await call(ApiKey.EndTxn, end.handler, [], endRequest, 3)).response!.errorCode, TIAF);
    assert.equal((await call(ApiKey.EndTxn, end.handler, [txnId(Op.WRITE, 'tx')], endRequest, 3)).response!.errorCode, 0);
    const add = recording<ApiKey.AddOffsetsToTxn>(() => ({ throttleTimeMs: 0, errorCode: 0 }));
    const addRequest = { transactionalId: 'tx', producerId: 1n, producerEpoch: 0, groupId: 'g' };
    assert.equal((await call(ApiKey.AddOffsetsToTxn, add.handler, [group(Op.READ, 'g')], addRequest, 3)).response!.errorCode, TIAF);
    assert.equal((await call(ApiKey.AddOffsetsToTxn, add.handler, [txnId(Op.WRITE, 'tx')], addRequest, 3)).response!.errorCode, GAF);
    assert.equal(
      (await call(ApiKey.AddOffsetsToTxn, add.handler, [txnId(Op.WRITE, 'tx'), group(Op.READ, 'g')], addRequest, 3)).response!.errorCode,
      0,
    );
    assert.deepEqual([end.seen.length, add.seen.length], [1, 1]);
  });

  it('DescribeTransactions refuses undescribable transactional ids and lists only describable topics', async () => {
    const { handler, seen } = recording<ApiKey.DescribeTransactions>((r) => ({
      throttleTimeMs: 0,
      transactionStates: r.transactionalIds.map((transactionalId) => ({
        errorCode: 0,
        transactionalId,
        transactionState: 'Ongoing',
        transactionTimeoutMs: 1,
        transactionStartTimeMs: 0n,
        producerId: 1n,
        producerEpoch: 0,
        topics: [
          { topic: 'a', partitions: [0] },
          { topic: 'b', partitions: [0] },
        ],
      })),
    }));
    const grants = [txnId(Op.DESCRIBE, 't2'), topic(Op.DESCRIBE, 'b')];
    const { response } = await call(ApiKey.DescribeTransactions, handler, grants, { transactionalIds: ['t1', 't2'] }, 0);
    assert.deepEqual(seen[0]!.transactionalIds, ['t2']);
    assert.deepEqual(
      response!.transactionStates.map((s) => [s.transactionalId, s.errorCode, s.topics.map((t) => t.topic)]),
      [
        ['t1', TIAF, []],
        ['t2', 0, ['b']],
      ],
    );
  });

  it('DescribeTopicPartitions lists refused topics after the described ones, each described one with its operations', async () => {
    const { handler, seen } = recording<ApiKey.DescribeTopicPartitions>((r) => ({
      throttleTimeMs: 0,
      nextCursor: null,
      topics: (r.topics.length === 0 ? [{ name: 'a' }, { name: 'b' }] : r.topics).map((t) => ({
        errorCode: 0,
        name: t.name,
        topicId: `ID${t.name}`,
        isInternal: false,
        partitions: [],
        topicAuthorizedOperations: -2147483648,
      })),
    }));
    const named = await call(
      ApiKey.DescribeTopicPartitions,
      handler,
      [topic(Op.DESCRIBE, 'b')],
      { topics: [{ name: 'a' }, { name: 'b' }], responsePartitionLimit: 10, cursor: null },
      0,
    );
    assert.deepEqual(seen[0]!.topics, [{ name: 'b' }]);
    assert.deepEqual(
      named.response!.topics.map((t) => [t.name, t.errorCode, t.topicId, t.topicAuthorizedOperations]),
      [
        ['b', 0, 'IDb', 1 << Op.DESCRIBE],
        ['a', TAF, ZERO_UUID, -2147483648],
      ],
    );
    const all = await call(
      ApiKey.DescribeTopicPartitions,
      handler,
      [topic(Op.DESCRIBE, 'a')],
      { topics: [], responsePartitionLimit: 10, cursor: null },
      0,
    );
    assert.deepEqual(
      all.response!.topics.map((t) => t.name),
      ['a'],
    );
  });

  it('AlterConfigs and IncrementalAlterConfigs need ALTER_CONFIGS on each resource', async () => {
    const resources = [
      { resourceType: 2, resourceName: 'a', configs: [] },
      { resourceType: 4, resourceName: '1', configs: [] },
      { resourceType: 32, resourceName: 'g', configs: [] },
    ];
    const answer = (r: { resources: { resourceType: number; resourceName: string }[] }) => ({
      throttleTimeMs: 0,
      responses: r.resources.map((x) => ({ errorCode: 0, errorMessage: null, resourceType: x.resourceType, resourceName: x.resourceName })),
    });
    const legacy = recording<ApiKey.AlterConfigs>(answer);
    const incremental = recording<ApiKey.IncrementalAlterConfigs>(answer);
    const grants = [[Op.ALTER_CONFIGS, Type.GROUP, 'g'] as Grant, topic(Op.DESCRIBE_CONFIGS, 'a')];
    const a = await call(ApiKey.AlterConfigs, legacy.handler, grants, { resources, validateOnly: false }, 2);
    const b = await call(ApiKey.IncrementalAlterConfigs, incremental.handler, grants, { resources, validateOnly: false }, 1);
    for (const [response, seen] of [
      [a.response!, legacy.seen],
      [b.response!, incremental.seen],
    ] as const) {
      assert.deepEqual(
        seen[0]!.resources.map((r) => r.resourceName),
        ['g'],
      );
      assert.deepEqual(
        response.responses.map((r) => [r.resourceName, r.errorCode, r.errorMessage]),
        [
          ['a', TAF, 'Topic authorization failed.'],
          ['1', CAF, 'Cluster authorization failed.'],
          ['g', 0, null],
        ],
      );
    }
  });

  it('CreatePartitions needs ALTER on each topic', async () => {
    const { handler, seen } = recording<ApiKey.CreatePartitions>((r) => ({
      throttleTimeMs: 0,
      results: r.topics.map((t) => ({ name: t.name, errorCode: 0, errorMessage: null })),
    }));
    const request = { timeoutMs: 1, validateOnly: false, topics: ['a', 'b'].map((name) => ({ name, count: 3, assignments: null })) };
    const { response } = await call(ApiKey.CreatePartitions, handler, [topic(Op.ALTER, 'b')], request, 3);
    assert.deepEqual(
      seen[0]!.topics.map((t) => t.name),
      ['b'],
    );
    assert.deepEqual(
      response!.results.map((r) => [r.name, r.errorCode]),
      [
        ['a', TAF],
        ['b', 0],
      ],
    );
  });

  it('the ACL, quota and credential writes answer each element of a refused request', async () => {
    const refusedCall = async <K extends ApiKey>(apiKey: K, request: ApiRequest<K>, version: number) => {
      const { handler, seen } = recording<K>(() => null);
      const { response } = await call(apiKey, handler, [cluster(Op.DESCRIBE)], request, version);
      assert.equal(seen.length, 0);
      return response!;
    };
    const creations = await refusedCall(
      ApiKey.CreateAcls,
      {
        creations: [
          { resourceType: 2, resourceName: 'a', resourcePatternType: 3, principal: 'User:b', host: '*', operation: 3, permissionType: 3 },
        ],
      },
      3,
    );
    assert.deepEqual(
      creations.results.map((r) => r.errorCode),
      [CAF],
    );
    const deletions = await refusedCall(
      ApiKey.DeleteAcls,
      {
        filters: [
          {
            resourceTypeFilter: 1,
            resourceNameFilter: null,
            patternTypeFilter: 1,
            principalFilter: null,
            hostFilter: null,
            operation: 1,
            permissionType: 1,
          },
        ],
      },
      3,
    );
    assert.deepEqual(
      deletions.filterResults.map((r) => [r.errorCode, r.matchingAcls]),
      [[CAF, []]],
    );
    const quotas = await refusedCall(
      ApiKey.AlterClientQuotas,
      { validateOnly: false, entries: [{ entity: [{ entityType: 'user', entityName: 'bob' }], ops: [] }] },
      1,
    );
    assert.deepEqual(
      quotas.entries.map((e) => [e.errorCode, e.entity]),
      [[CAF, [{ entityType: 'user', entityName: 'bob' }]]],
    );
    const scram = await refusedCall(ApiKey.AlterUserScramCredentials, { deletions: [{ name: 'bob', mechanism: 1 }], upsertions: [] }, 0);
    assert.deepEqual(
      scram.results.map((r) => [r.user, r.errorCode]),
      [['bob', CAF]],
    );
    const reassign = await refusedCall(
      ApiKey.AlterPartitionReassignments,
      { timeoutMs: 1, topics: [{ name: 'a', partitions: [{ partitionIndex: 0, replicas: [1] }] }] },
      0,
    );
    assert.deepEqual([reassign.errorCode, reassign.responses[0]!.partitions[0]!.errorCode], [CAF, CAF]);
  });
});
