import assert from 'node:assert/strict';
import { Kafka, logLevel } from 'kafkajs';
import { consumeRecords } from '../../helpers/consume-records.ts';
import { startCluster, type ClusterProcesses } from '../../helpers/cluster.ts';
import { parseExposition, type Exposition } from '../../helpers/prometheus.ts';
import { eventually } from '../../helpers/wait.ts';

const FAST_FAILOVER = {
  'broker.session.timeout.ms': 3000,
  'broker.heartbeat.interval.ms': 500,
  'replica.lag.time.max.ms': 3000,
};

const sum = (samples: { value: number }[]) => samples.reduce((n, s) => n + s.value, 0);

describe('metrics of a 3-node cluster (real processes, kafkajs)', function () {
  this.timeout(180_000);
  let cluster: ClusterProcesses;
  let kafka: Kafka;

  /** A node's HTTP listener, from its ready line (it moves on a restart: port 0). */
  const httpUrl = (nodeId: number): string => {
    const node = cluster.nodes[nodeId - 1]!;
    const m = [...node.stdout().matchAll(/, http on (http:\/\/\S+)/g)].at(-1);
    assert.ok(m, `node ${nodeId} printed no http listener`);
    return m[1]!;
  };
  const scrape = async (nodeId: number): Promise<Exposition> => parseExposition(await (await fetch(`${httpUrl(nodeId)}/metrics`)).text());
  const running = () => cluster.nodes.filter((n) => n.running).map((n) => n.nodeId);

  before(async () => {
    cluster = await startCluster({
      nodes: 3,
      overrides: { ...FAST_FAILOVER, 'http.listeners': 'http://127.0.0.1:0', 'metrics.lag.sample.interval.ms': 1000 },
    });
    kafka = new Kafka({
      brokers: cluster.bootstrap.split(','),
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
    });
  });

  after(async () => {
    await cluster?.cleanup();
  });

  it('agrees on the quorum leader and reports every replicated partition in sync', async () => {
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'replicated', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true });
    await admin.disconnect();
    await eventually('every node reports the same quorum leader and no under-replicated partition', async () => {
      const all = await Promise.all([1, 2, 3].map(scrape));
      const leaders = new Set(all.map((m) => m.value('sluice_raft_leader')));
      return (
        leaders.size === 1 &&
        [1, 2, 3].includes([...leaders][0]!) &&
        all.every((m) => m.value('sluice_partitions', { state: 'under_replicated' }) === 0) &&
        // Each node hosts a replica of each of the 3 partitions.
        all.every((m) => m.all('sluice_partition_high_watermark', { topic: 'replicated' }).length === 3)
      );
    });
  });

  it('reports the lag of a group on its coordinator only, wherever the partitions are led', async () => {
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'replicated', messages: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) });
    const consumer = await consumeRecords(kafka, 'spread-out', 'replicated', 30);
    await consumer.disconnect();
    await producer.send({ topic: 'replicated', messages: Array.from({ length: 12 }, (_, i) => ({ key: `late${i}`, value: 'x' })) });
    await producer.disconnect();
    await eventually('a lag of 12 records, reported by one node', async () => {
      const reporting = (await Promise.all([1, 2, 3].map(scrape))).filter(
        (m) => m.all('sluice_consumer_group_lag', { group: 'spread-out' }).length > 0,
      );
      return reporting.length === 1 && sum(reporting[0]!.all('sluice_consumer_group_lag', { group: 'spread-out' })) === 12;
    });
  });

  it('counts partitions under-replicated while a node is down, and in sync again once it is back', async () => {
    const victim = 3;
    await cluster.nodes[victim - 1]!.kill('SIGKILL');
    await eventually(
      'the surviving leaders report their partitions under-replicated, none under min ISR',
      async () => {
        const all = await Promise.all(running().map(scrape));
        return (
          sum(all.flatMap((m) => m.all('sluice_partitions', { state: 'under_replicated' }))) >= 3 &&
          sum(all.flatMap((m) => m.all('sluice_partitions', { state: 'under_min_isr' }))) === 0
        );
      },
      60_000,
    );
    await cluster.nodes[victim - 1]!.start();
    await eventually(
      'every node in sync again',
      async () => {
        const all = await Promise.all([1, 2, 3].map(scrape));
        return all.every((m) => m.value('sluice_partitions', { state: 'under_replicated' }) === 0);
      },
      90_000,
    );
  });
});
