/**
 * Eligible leader replicas (KIP-966) on three real Sluice nodes, seen through
 * DescribeTopicPartitions as Kafka's admin client and kafka-topics --describe see them: a
 * replica fenced while the ISR is below min ISR stays eligible to lead, and once it is back in
 * the ISR there is no ELR.
 */
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import { ApiKey } from '../../../protocol/messages/index.ts';
import {
  type DescribeTopicPartitionsResponse,
  type DescribeTopicPartitionsResponsePartition,
  makeDescribeTopicPartitionsRequest,
  makeDescribeTopicPartitionsRequestTopicRequest,
} from '../../../protocol/messages/describe-topic-partitions.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { type ClusterProcesses, startCluster } from '../../helpers/cluster.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

/** Short failure detection, as in replication.test.ts: a fencing takes seconds. */
const FAST_FAILOVER = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
};

async function describePartition(bootstrap: string[], topic: string): Promise<DescribeTopicPartitionsResponsePartition | undefined> {
  const client = new KafkaCluster(bootstrap);
  try {
    const conn = await client.anyConnection();
    const res = await conn.send<DescribeTopicPartitionsResponse>(
      ApiKey.DescribeTopicPartitions,
      makeDescribeTopicPartitionsRequest({
        topics: [makeDescribeTopicPartitionsRequestTopicRequest({ name: topic })],
        responsePartitionLimit: 100,
      }),
    );
    return res.topics[0]?.partitions[0];
  } finally {
    await client.close();
  }
}

describe('cluster: eligible leader replicas (KIP-966)', function () {
  this.timeout(180_000);
  let cluster: ClusterProcesses | null = null;

  afterEach(async () => {
    await cluster?.cleanup();
    cluster = null;
  });

  it('DescribeTopicPartitions shows a fenced replica in the ELR below min ISR, and no ELR once it is back in sync', async () => {
    cluster = await startCluster({ nodes: 3, overrides: FAST_FAILOVER });
    const kafka = new Kafka({ clientId: 'elr', brokers: cluster.bootstrap.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const topic = 'elr';
    try {
      await admin.createTopics({
        topics: [
          {
            topic,
            replicaAssignment: [{ partition: 0, replicas: [1, 2, 3] }],
            configEntries: [{ name: 'min.insync.replicas', value: '3' }],
          },
        ],
      });
      const live = () => cluster!.nodes.filter((n) => n.running).map((n) => `${n.host}:${n.port}`);
      await eventually('the partition with all three in sync', async () => {
        const p = await describePartition(live(), topic);
        return p?.leaderId === 1 && p.isrNodes.length === 3;
      });

      const victim = cluster.nodes.find((n) => n.nodeId === 3)!;
      await victim.kill('SIGKILL');
      let fenced: DescribeTopicPartitionsResponsePartition | undefined;
      await eventually(
        'broker 3 out of the ISR',
        async () => {
          fenced = await describePartition(live(), topic);
          return fenced !== undefined && !fenced.isrNodes.includes(3);
        },
        30_000,
      );
      assert.deepEqual([...fenced!.isrNodes].sort(), [1, 2]);
      assert.deepEqual(fenced!.eligibleLeaderReplicas, [3], 'below min ISR the replica the ISR lost stays eligible to lead');
      assert.deepEqual(fenced!.lastKnownElr, []);
      assert.equal(fenced!.leaderId, 1);

      await victim.start();
      let back: DescribeTopicPartitionsResponsePartition | undefined;
      await eventually(
        'broker 3 back in the ISR',
        async () => {
          back = await describePartition(live(), topic);
          return back !== undefined && back.isrNodes.length === 3;
        },
        60_000,
      );
      assert.deepEqual(back!.eligibleLeaderReplicas, [], 'at min ISR there is no ELR');
    } finally {
      await admin.disconnect();
    }
  });
});
