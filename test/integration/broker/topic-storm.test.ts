// A CreateTopics/CreatePartitions storm from one client must not stall the others: Kafka's
// controller bounds one operation to 10000 records, and applying a delta costs what it changes.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest } from '../../../protocol/messages/api-versions.ts';
import {
  makeCreatePartitionsRequest,
  makeCreatePartitionsRequestCreatePartitionsTopic,
} from '../../../protocol/messages/create-partitions.ts';
import type { CreatePartitionsResponse } from '../../../protocol/messages/create-partitions.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  makeCreateTopicsRequestCreatableTopicConfig,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import { makeMetadataRequest, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { spawnBroker, type BrokerProcess } from '../../helpers/broker-process.ts';

describe('topic storms against the real broker', function () {
  this.timeout(180_000);
  let broker: BrokerProcess;
  let conn: KafkaConnection;

  before(async () => {
    broker = await spawnBroker();
    conn = await KafkaConnection.connect(broker.host, broker.port, { requestTimeoutMs: 120_000 });
  });
  after(async () => {
    conn?.close();
    await broker?.cleanup();
  });

  const createTopics = (topics: { name: string; numPartitions: number; configs?: [string, string][] }[], validateOnly = false) =>
    conn.send<CreateTopicsResponse>(
      ApiKey.CreateTopics,
      makeCreateTopicsRequest({
        validateOnly,
        topics: topics.map((t) =>
          makeCreateTopicsRequestCreatableTopic({
            name: t.name,
            numPartitions: t.numPartitions,
            replicationFactor: 1,
            configs: (t.configs ?? []).map(([name, value]) => makeCreateTopicsRequestCreatableTopicConfig({ name, value })),
          }),
        ),
      }),
    );

  it('answers a CreateTopics of more than 10000 partitions with POLICY_VIOLATION, as Kafka', async () => {
    const res = await createTopics([
      { name: 'huge-a', numPartitions: 8000 },
      { name: 'huge-b', numPartitions: 2001 },
    ]);
    assert.deepEqual(
      res.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
      [
        ['huge-a', Errors.POLICY_VIOLATION.code, 'Excessively large number of partitions per request.'],
        ['huge-b', Errors.POLICY_VIOLATION.code, 'Excessively large number of partitions per request.'],
      ],
    );
    const max = await createTopics([{ name: 'max-int', numPartitions: 2_147_483_647 }]);
    assert.equal(max.topics[0]!.errorCode, Errors.POLICY_VIOLATION.code);
    assert.equal(await createTopics([{ name: 'storm-0-c', numPartitions: 1 }]).then((r) => r.topics[0]!.errorCode), Errors.NONE.code);
    const cp = await conn.send<CreatePartitionsResponse>(
      ApiKey.CreatePartitions,
      makeCreatePartitionsRequest({
        topics: [makeCreatePartitionsRequestCreatePartitionsTopic({ name: 'storm-0-c', count: 2_147_483_647, assignments: null })],
        timeoutMs: 30_000,
      }),
    );
    assert.equal(cp.results[0]!.errorCode, Errors.POLICY_VIOLATION.code);
    assert.equal(cp.results[0]!.errorMessage, 'Unable to perform excessively large batch operation.');
    const tiny = await createTopics([{ name: 'tiny-segments', numPartitions: 1, configs: [['segment.bytes', '14']] }]);
    assert.equal(tiny.topics[0]!.errorCode, Errors.INVALID_CONFIG.code);
  });

  it("a storm of CreateTopics from one connection leaves another connection's ApiVersions answered within 1 s", async () => {
    const ping = await KafkaConnection.connect(broker.host, broker.port);
    let worstMs = 0;
    let pings = 0;
    let stop = false;
    const pinger = (async () => {
      while (!stop) {
        const t = performance.now();
        await ping.send(ApiKey.ApiVersions, makeApiVersionsRequest({ clientSoftwareName: 'ping', clientSoftwareVersion: '1' }), 3);
        worstMs = Math.max(worstMs, performance.now() - t);
        pings++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      let created = 0;
      for (let round = 0; round < 6; round++) {
        // Each round stays just under the bounds: ~9000 partitions over a few topics.
        const res = await createTopics(
          [
            { name: `storm-${round}-c`, numPartitions: 1 },
            { name: `storm-${round}-a`, numPartitions: 6000 },
            { name: `storm-${round}-b`, numPartitions: 2990, configs: [['retention.ms', '60000']] },
          ],
          round % 3 === 2,
        );
        created += res.topics.filter((t) => t.errorCode === Errors.NONE.code).length;
        await conn.send<MetadataResponse>(ApiKey.Metadata, makeMetadataRequest({ topics: null }));
      }
      assert.ok(created >= 8, `created ${created} topics`);
    } finally {
      stop = true;
      await pinger;
      ping.close();
    }
    assert.ok(pings > 10, `only ${pings} pings`);
    // Before the fix one 10000-partition topic blocked the event loop for ~6 s (and a
    // 2^31-1 count for minutes); the bound is generous for a loaded 2-core machine.
    assert.ok(worstMs < 1_000, `worst ApiVersions latency during the storm: ${worstMs.toFixed(0)} ms`);
  });
});
