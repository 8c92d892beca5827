/**
 * controller_mutation_rate (KIP-599) is counted on the active controller, in one token bucket per
 * client, whichever broker forwards the client's requests: partitions created through one node
 * are spent from the bucket a request through another node finds exhausted.
 */
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeAlterClientQuotasRequest,
  makeAlterClientQuotasRequestEntityData,
  makeAlterClientQuotasRequestEntryData,
  makeAlterClientQuotasRequestOpData,
  type AlterClientQuotasResponse,
} from '../../../protocol/messages/alter-client-quotas.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import {
  makeDescribeClientQuotasRequest,
  makeDescribeClientQuotasRequestComponentData,
  type DescribeClientQuotasResponse,
} from '../../../protocol/messages/describe-client-quotas.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { startCluster, type ClusterProcesses } from '../../helpers/cluster.ts';
import { eventually } from '../../helpers/wait.ts';

const CLIENT_ID = 'mutating-admin';

describe('cluster: controller_mutation_rate is one bucket per client on the active controller', function () {
  this.timeout(180_000);
  let cluster: ClusterProcesses;
  const connections: KafkaConnection[] = [];

  before(async () => {
    cluster = await startCluster({ nodes: 3 });
  });

  after(async () => {
    for (const c of connections) c.close();
    await cluster?.cleanup();
  });

  async function connect(index: number): Promise<KafkaConnection> {
    const node = cluster.nodes[index]!;
    const c = await KafkaConnection.connect(node.host, node.port, { clientId: CLIENT_ID });
    connections.push(c);
    return c;
  }

  const create = (c: KafkaConnection, name: string, numPartitions: number) =>
    c.send<CreateTopicsResponse>(
      ApiKey.CreateTopics,
      makeCreateTopicsRequest({
        timeoutMs: 30_000,
        topics: [makeCreateTopicsRequestCreatableTopic({ name, numPartitions, replicationFactor: 1 })],
      }),
      7,
    );

  it('partitions created through one broker exhaust the quota a CreateTopics through another broker is held to', async () => {
    const [first, second, third] = [await connect(0), await connect(1), await connect(2)];
    const altered = await first.send<AlterClientQuotasResponse>(
      ApiKey.AlterClientQuotas,
      makeAlterClientQuotasRequest({
        entries: [
          makeAlterClientQuotasRequestEntryData({
            entity: [makeAlterClientQuotasRequestEntityData({ entityType: 'client-id', entityName: CLIENT_ID })],
            // One partition a second, with the default eleven one-second samples: a burst of eleven.
            ops: [makeAlterClientQuotasRequestOpData({ key: 'controller_mutation_rate', value: 1 })],
          }),
        ],
      }),
    );
    assert.deepEqual(
      altered.entries.map((e) => e.errorCode),
      [0],
    );
    await eventually('every node has the quota', async () => {
      for (const c of [first, second, third]) {
        const described = await c.send<DescribeClientQuotasResponse>(
          ApiKey.DescribeClientQuotas,
          makeDescribeClientQuotasRequest({
            components: [makeDescribeClientQuotasRequestComponentData({ entityType: 'client-id', matchType: 0, match: CLIENT_ID })],
          }),
        );
        if ((described.entries ?? []).length === 0) return false;
      }
      return true;
    });

    const burst = await create(first, 'burst', 12);
    assert.deepEqual(
      burst.topics.map((t) => [t.name, t.errorCode]),
      [['burst', Errors.NONE.code]],
    );
    const refusals = await Promise.all([create(second, 'through-second', 1), create(third, 'through-third', 1)]);
    for (const [refused, name] of [
      [refusals[0], 'through-second'],
      [refusals[1], 'through-third'],
    ] as const) {
      assert.deepEqual(
        refused.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
        [[name, Errors.THROTTLING_QUOTA_EXCEEDED.code, null]],
        `${name}: the bucket the first broker's request spent`,
      );
      assert.ok(refused.throttleTimeMs > 0 && refused.throttleTimeMs <= 2000, String(refused.throttleTimeMs));
    }
    // The forwarding broker holds its client's connection back for the controller's throttle time.
    const answeredAt = performance.now();
    await third.send(ApiKey.ApiVersions, { clientSoftwareName: 'test', clientSoftwareVersion: '1' });
    const heldBackMs = performance.now() - answeredAt;
    const throttleTimeMs = refusals[1].throttleTimeMs;
    // Measured from a little after the broker decided the throttle: allow for that and for timer granularity.
    assert.ok(heldBackMs >= throttleTimeMs - 200, `held back ${heldBackMs} ms, throttled ${throttleTimeMs} ms`);
  });
});
