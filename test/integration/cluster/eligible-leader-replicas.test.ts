/**
 * Eligible leader replicas (KIP-966) on three real Sluice nodes, seen through
 * DescribeTopicPartitions as Kafka's admin client and kafka-topics --describe see them: a
 * replica fenced while the ISR is below min ISR stays eligible to lead, a change of the topic's
 * min.insync.replicas clears the ELR, and once the replica is back in the ISR there is none.
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
import { runTopicsCommand } from '../../../src/cli/topics.ts';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { runCaptured } from '../../helpers/cli-targets.ts';
import { type ClusterProcesses, startCluster } from '../../helpers/cluster.ts';
import { eventually } from '../../helpers/wait.ts';

const { ConfigResourceTypes, Kafka, logLevel } = kafkajs;

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

  it('DescribeTopicPartitions shows a fenced replica in the ELR below min ISR, cleared by setting min.insync.replicas, and no ELR once it is back in sync', async () => {
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
      // As kafka-topics --describe prints it.
      const described = await runCaptured((io) =>
        runTopicsCommand(['topics', 'describe', topic, '--bootstrap-server', live().join(',')], io),
      );
      assert.equal(described.code, 0, described.stderr);
      assert.match(described.stdout, /\tIsr: (1,2|2,1)\tElr: 3\tLastKnownElr: \t/);

      // Setting min.insync.replicas again, even to its value, clears the topic's ELR
      // (ClearElrRecord): the ELR was kept for the min ISR before the change.
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'min.insync.replicas', value: '3' }] }],
      });
      let cleared: DescribeTopicPartitionsResponsePartition | undefined;
      await eventually('the ELR cleared', async () => {
        cleared = await describePartition(live(), topic);
        return cleared !== undefined && cleared.eligibleLeaderReplicas?.length === 0;
      });
      assert.deepEqual([...cleared!.isrNodes].sort(), [1, 2]);

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
  it('a leaderless partition elects the ELR member back from a clean restart; one back from an unclean shutdown is not eligible', async () => {
    // Separate controllers keep the quorum while both brokers of the topic are down.
    const roles = { 1: 'controller', 2: 'controller', 3: 'controller', 4: 'broker', 5: 'broker' } as const;
    cluster = await startCluster({ nodes: 5, roles, overrides: FAST_FAILOVER });
    const kafka = new Kafka({ clientId: 'elr-election', brokers: cluster.bootstrap.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const topic = 'elr-election';
    const broker = (id: number) => cluster!.nodes.find((n) => n.nodeId === id)!;
    const live = () =>
      [4, 5]
        .map(broker)
        .filter((n) => n.running)
        .map((n) => `${n.host}:${n.port}`);
    const state = async (what: string, check: (p: DescribeTopicPartitionsResponsePartition) => boolean) => {
      let seen: DescribeTopicPartitionsResponsePartition | undefined;
      await eventually(
        `${what} (last seen ${JSON.stringify(seen)})`,
        async () => {
          seen = await describePartition(live(), topic);
          return seen !== undefined && check(seen);
        },
        60_000,
      );
      return seen!;
    };
    try {
      await admin.createTopics({
        topics: [
          { topic, replicaAssignment: [{ partition: 0, replicas: [4, 5] }], configEntries: [{ name: 'min.insync.replicas', value: '2' }] },
        ],
      });
      await admin.disconnect();
      await state('both replicas in sync', (p) => p.leaderId === 4 && p.isrNodes.length === 2);

      await broker(5).stop();
      const one = await state('broker 5 in the ELR', (p) => (p.eligibleLeaderReplicas ?? []).includes(5));
      assert.deepEqual(one.isrNodes, [4]);

      // The other replica stops too (cleanly, through the live broker's view until it goes).
      await broker(4).stop();
      await broker(5).start();
      // Broker 5 stopped cleanly: its registration proves it, it stays eligible and, the ISR
      // being empty, leads again without an unclean election.
      const elected = await state('broker 5 elected from the ELR', (p) => p.leaderId === 5);
      assert.deepEqual(elected.isrNodes, [5]);
      assert.deepEqual(elected.eligibleLeaderReplicas, [4]);

      // Now broker 5 dies (SIGKILL: no clean-shutdown file) while broker 4 is still down, and
      // comes back alone: its registration says the shutdown was unclean, so it leaves the ELR
      // and may not lead; the partition waits for broker 4.
      await broker(5).kill('SIGKILL');
      await broker(5).start();
      const waiting = await state(
        'broker 5 out of the ELR',
        (p) => !(p.eligibleLeaderReplicas ?? []).includes(5) && !p.isrNodes.includes(5),
      );
      assert.equal(waiting.leaderId, -1, 'no eligible leader is up');
      assert.deepEqual(waiting.eligibleLeaderReplicas, [4]);
      assert.deepEqual(waiting.isrNodes, []);
      await broker(4).start();
      const recovered = await state('broker 4 elected from the ELR', (p) => p.leaderId === 4);
      assert.ok(recovered.isrNodes.includes(4));
    } finally {
      await admin.disconnect();
    }
  });
});
