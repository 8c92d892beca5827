import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ZERO_UUID } from '../../../protocol/primitives.ts';
import { withMutationQuota } from '../../../src/handlers/mutation-quota.ts';
import { QuorumController } from '../../../src/metadata/controller.ts';
import { ThrottlingQuotaExceededError, type ControllerMutationQuota } from '../../../src/quota/controller-mutation-quota.ts';
import type { RequestContext } from '../../../src/server/session.ts';
import { registerBrokers } from '../../helpers/broker-registration.ts';
import { FakeClock } from '../metadata/fake-cluster.ts';
import { ImageSink } from '../metadata/image-sink.ts';

/** A strict quota with `permits` left: it refuses once they are spent, as a token bucket below zero does. */
function strictQuota(permits: number, throttleTimeMs = 0): ControllerMutationQuota & { spent: number[] } {
  let left = permits;
  const spent: number[] = [];
  return {
    spent,
    record(n) {
      if (left <= 0) throw new ThrottlingQuotaExceededError(throttleTimeMs);
      left -= n;
      spent.push(n);
    },
    throttleTimeMs: () => (left < 0 ? throttleTimeMs : 0),
  };
}

async function activeController(): Promise<QuorumController> {
  const sink = new ImageSink();
  const controller = new QuorumController(sink, { defaultNumPartitions: () => 3, defaultReplicationFactor: () => 1 }, () => 0, {
    clock: new FakeClock(),
  });
  await controller.activate();
  await registerBrokers(controller, () => sink.image(), [1]);
  return controller;
}

const topic = (name: string, numPartitions = -1) => ({ name, numPartitions, replicationFactor: -1, assignments: [], configs: [] });
const codes = (results: readonly { errorCode: number }[]) => results.map((r) => r.errorCode);
const EXCEEDED = Errors.THROTTLING_QUOTA_EXCEEDED.code;

describe('controller_mutation_rate on the active controller (KIP-599)', () => {
  it('CreateTopics spends a topic’s partitions once it passed validation: refused topics spend nothing', async () => {
    const controller = await activeController();
    await controller.createTopics([topic('existing', 1)], false);
    const quota = strictQuota(100);
    const results = await controller.createTopics([topic('existing', 5), topic('bad/name', 7), topic('a', 2), topic('b')], false, quota);
    assert.deepEqual(codes(results), [Errors.TOPIC_ALREADY_EXISTS.code, Errors.INVALID_TOPIC_EXCEPTION.code, 0, 0]);
    assert.deepEqual(quota.spent, [2, 3], 'num.partitions for -1');
  });

  it('a strict quota exhausted mid-request refuses the topics after it with THROTTLING_QUOTA_EXCEEDED and no message, and creates none of them', async () => {
    const controller = await activeController();
    const results = await controller.createTopics([topic('a', 4), topic('b', 1), topic('c', 1)], false, strictQuota(3));
    assert.deepEqual(codes(results), [0, EXCEEDED, EXCEEDED]);
    assert.deepEqual(
      results.map((r) => r.errorMessage),
      [null, null, null],
    );
    const again = await controller.createTopics([topic('b', 1)], false);
    assert.deepEqual(codes(again), [0], 'b was never created');
  });

  it('DeleteTopics spends the partitions of each topic that exists; CreatePartitions the partitions it adds', async () => {
    const controller = await activeController();
    await controller.createTopics([topic('four', 4), topic('two', 2)], false);
    const deletions = strictQuota(100);
    const deleted = await controller.deleteTopics(
      [
        { name: 'missing', topicId: ZERO_UUID },
        { name: 'four', topicId: ZERO_UUID },
      ],
      deletions,
    );
    assert.deepEqual(codes(deleted), [Errors.UNKNOWN_TOPIC_OR_PARTITION.code, 0]);
    assert.deepEqual(deletions.spent, [4]);
    const growth = strictQuota(100);
    const grown = await controller.createPartitions(
      [
        { name: 'two', count: 5, assignments: null },
        { name: 'two-missing', count: 5, assignments: null },
      ],
      false,
      growth,
    );
    assert.deepEqual(codes(grown), [0, Errors.UNKNOWN_TOPIC_OR_PARTITION.code]);
    assert.deepEqual(growth.spent, [3]);
  });

  it('the response carries the quota’s throttle time when longer than its own, and the connection is held back for it', async () => {
    const throttled: number[] = [];
    const ctx = { throttle: (ms: number) => throttled.push(ms) } as unknown as RequestContext;
    const quota = strictQuota(1, 750);
    const response = await withMutationQuota({ quotaFor: () => quota }, ctx, true, async (q) => {
      q!.record(5);
      return { throttleTimeMs: 100 };
    });
    assert.equal(response.throttleTimeMs, 750);
    assert.deepEqual(throttled, [750]);
    const unquoted = await withMutationQuota(undefined, ctx, true, async (q) => ({ throttleTimeMs: q === undefined ? 0 : -1 }));
    assert.equal(unquoted.throttleTimeMs, 0);
  });
});
