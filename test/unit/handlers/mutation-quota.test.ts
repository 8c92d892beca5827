import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeCreatePartitionsRequest,
  makeCreatePartitionsRequestCreatePartitionsTopic,
  makeCreatePartitionsResponse,
  makeCreatePartitionsResponseCreatePartitionsTopicResult,
  type CreatePartitionsRequest,
} from '../../../protocol/messages/create-partitions.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableReplicaAssignment,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsResponse,
  makeCreateTopicsResponseCreatableTopicResult,
  type CreateTopicsRequest,
} from '../../../protocol/messages/create-topics.ts';
import {
  makeDeleteTopicsRequest,
  makeDeleteTopicsRequestDeleteTopicState,
  makeDeleteTopicsResponse,
  makeDeleteTopicsResponseDeletableTopicResult,
  type DeleteTopicsRequest,
} from '../../../protocol/messages/delete-topics.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { createPartitionsWithinQuota, createTopicsWithinQuota, deleteTopicsWithinQuota } from '../../../src/handlers/mutation-quota.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import { partitionRecord, type MetadataRecord } from '../../../src/metadata/records.ts';
import { ThrottlingQuotaExceededError, type ControllerMutationQuota } from '../../../src/quota/controller-mutation-quota.ts';

const ORDERS_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
const CLICKS_ID = 'AAAAAAAAAAAAAAAAAAAAAg';

function withTopic(image: MetadataImage, name: string, id: string, partitions: number): MetadataImage {
  const records: MetadataRecord[] = [{ type: 'TopicRecord', data: { name, topicId: id } }];
  for (let p = 0; p < partitions; p++) {
    records.push({ type: 'PartitionRecord', data: partitionRecord({ partitionId: p, topicId: id, replicas: [1], isr: [1], leader: 1 }) });
  }
  return image.apply(records, image.offset + records.length, 1).image;
}

const IMAGE = withTopic(withTopic(MetadataImage.EMPTY, 'orders', ORDERS_ID, 4), 'clicks', CLICKS_ID, 2);
const SERVICES = { image: () => IMAGE, defaultPartitions: () => 3 };

/** A strict quota with `permits` left: it refuses once they are spent, as a token bucket below zero does. */
function strictQuota(permits: number): ControllerMutationQuota & { spent: number[] } {
  let left = permits;
  const spent: number[] = [];
  return {
    spent,
    record(n) {
      if (left < 0) throw new ThrottlingQuotaExceededError(500);
      spent.push(n);
      left -= n;
    },
    throttleTimeMs: () => (left < 0 ? 500 : 0),
  };
}

describe('the controller mutation quota of the topic APIs', () => {
  it('CreateTopics spends each topic its partitions (num.partitions for -1, the assignment otherwise) and refuses the topics after the quota ran out', async () => {
    const quota = strictQuota(4);
    const forwarded: CreateTopicsRequest[] = [];
    const topic = (name: string, numPartitions: number, assigned = 0) =>
      makeCreateTopicsRequestCreatableTopic({
        name,
        numPartitions,
        replicationFactor: -1,
        assignments: Array.from({ length: assigned }, (_, i) =>
          makeCreateTopicsRequestCreatableReplicaAssignment({ partitionIndex: i, brokerIds: [1] }),
        ),
      });
    const response = await createTopicsWithinQuota(
      SERVICES,
      quota,
      makeCreateTopicsRequest({ topics: [topic('a', -1), topic('b', -1, 2), topic('c', 1)] }),
      async (request) => {
        forwarded.push(request);
        return makeCreateTopicsResponse({
          topics: request.topics.map((t) => makeCreateTopicsResponseCreatableTopicResult({ name: t.name, errorMessage: null })),
        });
      },
    );
    assert.deepEqual(quota.spent, [3, 2]);
    assert.deepEqual(
      forwarded[0]!.topics.map((t) => t.name),
      ['a', 'b'],
    );
    assert.deepEqual(
      response.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
      [
        ['a', Errors.NONE.code, null],
        ['b', Errors.NONE.code, null],
        ['c', Errors.THROTTLING_QUOTA_EXCEEDED.code, null],
      ],
    );
    assert.equal(response.throttleTimeMs, 500);
  });

  it('CreatePartitions spends the partitions added to each topic', async () => {
    const quota = strictQuota(1);
    const forwarded: CreatePartitionsRequest[] = [];
    const response = await createPartitionsWithinQuota(
      SERVICES,
      quota,
      makeCreatePartitionsRequest({
        topics: [
          makeCreatePartitionsRequestCreatePartitionsTopic({ name: 'orders', count: 6, assignments: null }),
          makeCreatePartitionsRequestCreatePartitionsTopic({ name: 'clicks', count: 3, assignments: null }),
        ],
      }),
      async (request) => {
        forwarded.push(request);
        return makeCreatePartitionsResponse({
          results: request.topics.map((t) => makeCreatePartitionsResponseCreatePartitionsTopicResult({ name: t.name })),
        });
      },
    );
    assert.deepEqual(quota.spent, [2]);
    assert.deepEqual(
      response.results.map((r) => [r.name, r.errorCode]),
      [
        ['orders', Errors.NONE.code],
        ['clicks', Errors.THROTTLING_QUOTA_EXCEEDED.code],
      ],
    );
    assert.equal(response.throttleTimeMs, 500);
  });

  for (const version of [5, 6]) {
    it(`DeleteTopics v${version} spends each topic's partitions and answers the refused ones by ${version >= 6 ? 'name and id' : 'name'}`, async () => {
      const quota = strictQuota(3);
      const forwarded: DeleteTopicsRequest[] = [];
      const request =
        version >= 6
          ? makeDeleteTopicsRequest({
              topics: [
                makeDeleteTopicsRequestDeleteTopicState({ name: null, topicId: ORDERS_ID }),
                makeDeleteTopicsRequestDeleteTopicState({ name: 'clicks', topicId: ZERO_UUID }),
              ],
            })
          : makeDeleteTopicsRequest({ topicNames: ['orders', 'clicks'] });
      const response = await deleteTopicsWithinQuota(SERVICES, quota, request, version, async (r) => {
        forwarded.push(r);
        const names = version >= 6 ? r.topics.map((t) => t.name ?? 'orders') : r.topicNames;
        return makeDeleteTopicsResponse({ responses: names.map((name) => makeDeleteTopicsResponseDeletableTopicResult({ name })) });
      });
      assert.deepEqual(quota.spent, [4]);
      assert.deepEqual(
        response.responses.map((r) => [r.name, r.topicId, r.errorCode]),
        [
          ['orders', ZERO_UUID, Errors.NONE.code],
          ['clicks', ZERO_UUID, Errors.THROTTLING_QUOTA_EXCEEDED.code],
        ],
      );
    });
  }
});
