/**
 * A secured 3-node Sluice cluster: the controllers elect and replicate the metadata log over a
 * SASL_PLAINTEXT controller listener (PLAIN), the brokers replicate partitions over SASL_SSL
 * (PLAIN inside TLS), and a SCRAM user created through one node authenticates at every node
 * and produces with acks=all to a topic replicated three times.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { ApiKey } from '../../../protocol/messages/index.ts';
import type { AlterUserScramCredentialsResponse } from '../../../protocol/messages/alter-user-scram-credentials.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { saltedPassword } from '../../../src/security/scram.ts';
import { createTestPki, type TestPki } from '../../helpers/certs.ts';
import { startCluster, type ClusterProcesses } from '../../helpers/cluster.ts';
import { eventually } from '../../helpers/wait.ts';

const PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule';
const ADMIN_JAAS = `${PLAIN} required username="admin" password="admin-secret" user_admin="admin-secret";`;

describe('a secured 3-node cluster (SASL between controllers, SASL_SSL between brokers)', function () {
  this.timeout(180_000);
  let pki: TestPki;
  let cluster: ClusterProcesses;

  before(async () => {
    pki = await createTestPki();
    cluster = await startCluster({
      nodes: 3,
      overrides: {
        'listener.security.protocol.map': 'CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:SASL_SSL',
        'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-512',
        'sasl.mechanism.controller.protocol': 'PLAIN',
        'sasl.mechanism.inter.broker.protocol': 'PLAIN',
        'listener.name.controller.plain.sasl.jaas.config': ADMIN_JAAS,
        'listener.name.plaintext.plain.sasl.jaas.config': ADMIN_JAAS,
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.location': pki.server.keystorePem,
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.location': pki.caCert,
      },
    });
  });

  after(async () => {
    await cluster?.cleanup();
    await pki?.remove();
  });

  it('replicates over the secured listeners and serves a SCRAM user created through one node at every node', async () => {
    const brokers = cluster.bootstrap.split(',');
    const ssl = { ca: [readFileSync(pki.caCert)] };
    const [host, port] = brokers[0]!.split(':');
    const conn = await KafkaConnection.connect(host!, Number(port), {
      tls: { ca: ssl.ca },
      sasl: { mechanism: 'PLAIN', username: 'admin', password: 'admin-secret' },
    });
    const salt = randomBytes(24);
    const res = await conn.send<AlterUserScramCredentialsResponse>(ApiKey.AlterUserScramCredentials, {
      deletions: [],
      upsertions: [
        {
          name: 'carol',
          mechanism: 2,
          iterations: 8192,
          salt,
          saltedPassword: saltedPassword('SCRAM-SHA-512', 'carol-secret', salt, 8192),
        },
      ],
    });
    conn.close();
    assert.deepEqual(
      res.results.map((r) => [r.user, r.errorCode]),
      [['carol', 0]],
    );

    const admin = new Kafka({
      brokers,
      ssl,
      sasl: { mechanism: 'plain', username: 'admin', password: 'admin-secret' },
      logLevel: logLevel.NOTHING,
    }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: 'secured', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true });
    await admin.disconnect();

    for (const broker of brokers) {
      const carol = new Kafka({
        brokers: [broker],
        ssl,
        sasl: { mechanism: 'scram-sha-512', username: 'carol', password: 'carol-secret' },
        logLevel: logLevel.NOTHING,
      });
      const producer = carol.producer();
      await producer.connect();
      const sent = await producer.send({ topic: 'secured', acks: -1, messages: [{ key: broker, value: `via ${broker}` }] });
      assert.equal(sent[0]!.errorCode, 0);
      await producer.disconnect();
    }

    const consumer = new Kafka({
      brokers,
      ssl,
      sasl: { mechanism: 'scram-sha-512', username: 'carol', password: 'carol-secret' },
      logLevel: logLevel.NOTHING,
    }).consumer({
      groupId: 'carol-group',
    });
    await consumer.connect();
    await consumer.subscribe({ topic: 'secured', fromBeginning: true });
    const seen = new Set<string>();
    void consumer.run({
      eachMessage: async ({ message }) => {
        seen.add(String(message.value));
      },
    });
    await eventually('every record read back', () => seen.size === brokers.length, 60_000);
    await consumer.disconnect();

    const isr = new Kafka({
      brokers,
      ssl,
      sasl: { mechanism: 'plain', username: 'admin', password: 'admin-secret' },
      logLevel: logLevel.NOTHING,
    }).admin();
    await isr.connect();
    const metadata = await isr.fetchTopicMetadata({ topics: ['secured'] });
    await isr.disconnect();
    for (const p of metadata.topics[0]!.partitions) assert.equal(p.isr.length, 3, `partition ${p.partitionId} ISR ${p.isr}`);
  });
});
