/**
 * Kafka's effective min ISR on three real Sluice nodes started with min.insync.replicas=2 and
 * default.replication.factor=3: a partition with fewer replicas than min.insync.replicas asks
 * for is held to its replica count, so an RF 1 topic takes acks=all writes from kafkajs and
 * from kafka-python, as Apache Kafka's brokers take them (Partition.effectiveMinIsr).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import kafkajs from 'kafkajs';
import { KafkaCluster } from '../../../src/client/cluster.ts';
import { type ClusterProcesses, startCluster } from '../../helpers/cluster.ts';
import { byOffset, readRecords } from '../../helpers/read-records.ts';
import { missingTool } from '../../helpers/runtimes.ts';
import { eventually } from '../../helpers/wait.ts';

const { Kafka, logLevel } = kafkajs;

/** Debian's interpreter: the Python clients are installed for it, not for a pyenv python3. */
const PYTHON = '/usr/bin/python3';

/** kafka-python's acks='all' producer: sends argv[3] records and prints each acknowledged offset. */
const KAFKA_PYTHON_PRODUCER = `
import json, sys
from kafka import KafkaProducer
producer = KafkaProducer(bootstrap_servers=sys.argv[1].split(','), acks='all', retries=0)
offsets = [producer.send(sys.argv[2], value=('py-%d' % i).encode()).get(timeout=30).offset for i in range(int(sys.argv[3]))]
producer.close()
print(json.dumps(offsets))
`;

async function waitForLeaders(cluster: ClusterProcesses, topic: string): Promise<void> {
  for (const node of cluster.nodes) {
    const probe = new KafkaCluster([`${node.host}:${node.port}`]);
    try {
      await eventually(`node ${node.nodeId} knows ${topic}`, async () => {
        const res = await probe.metadata([topic]);
        return res.topics.every((t) => t.errorCode === 0 && t.partitions.length === 1 && t.partitions[0]!.leaderId >= 0);
      });
    } finally {
      await probe.close();
    }
  }
}

describe('cluster: min.insync.replicas is capped by the replication factor', function () {
  this.timeout(180_000);
  let cluster: ClusterProcesses | null = null;

  before(async () => {
    cluster = await startCluster({ nodes: 3, overrides: { 'min.insync.replicas': 2, 'default.replication.factor': 3 } });
  });

  after(async () => {
    await cluster?.cleanup();
  });

  it('an RF 1 topic takes acks=all produces from kafkajs and kafka-python when min.insync.replicas=2', async function () {
    const pythonHasKafka = spawnSync(PYTHON, ['-c', 'import kafka'], { stdio: 'ignore' }).status === 0;
    if (!pythonHasKafka) missingTool(this, 'kafka-python', 'scripts/install-test-clients.sh');
    const topic = 'rf1-min-isr-2';
    const kafka = new Kafka({ clientId: 'min-isr', brokers: cluster!.bootstrap.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await admin.connect();
    await producer.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }] });
      await waitForLeaders(cluster!, topic);
      const [config] = (
        await admin.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['min.insync.replicas'] }], includeSynonyms: false })
      ).resources;
      assert.equal(config!.configEntries[0]!.configValue, '2', 'the topic inherits min.insync.replicas=2');

      const sent = await producer.send({ topic, acks: -1, messages: [{ value: 'js-0' }, { value: 'js-1' }] });
      assert.equal(sent[0]!.errorCode, 0);
      assert.equal(sent[0]!.baseOffset, '0');

      const run = spawnSync(PYTHON, ['-c', KAFKA_PYTHON_PRODUCER, cluster!.bootstrap, topic, '3'], { encoding: 'utf8', timeout: 90_000 });
      assert.equal(run.status, 0, `kafka-python's acks='all' producer succeeds: ${run.stderr.slice(-2000)}`);
      assert.deepEqual(JSON.parse(run.stdout.trim()), [2, 3, 4]);

      const read = byOffset(await readRecords(kafka, topic, 5));
      assert.deepEqual([...read.values()], ['js-0', 'js-1', 'py-0', 'py-1', 'py-2'], 'every acknowledged record is committed');
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
