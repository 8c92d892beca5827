/**
 * ACLs with Kafka's StandardAuthorizer, against Sluice and Kafka started from the same
 * properties: Kafka's own kafka-acls tool (as the super user admin) grants and denies, and
 * alice (a PLAIN user) gets Kafka's authorization errors through kafkajs until an ALLOW binding
 * lets her in, and again once a DENY binding covers her.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { Errors } from '../../../protocol/errors.ts';
import { makeFindCoordinatorRequest, type FindCoordinatorResponse } from '../../../protocol/messages/find-coordinator.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeInitProducerIdRequest, type InitProducerIdResponse } from '../../../protocol/messages/init-producer-id.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { JVM_OPTIONS } from '../../../compat/clients/java.ts';
import { kafkaLibs } from '../../../compat/targets.ts';
import { ADMIN, ALICE, WITH_ACLS, againstEachSecuredBroker, type SecuredBroker, type User } from '../../helpers/secured-brokers.ts';

function plainClient(broker: SecuredBroker, user: User, clientId: string): Kafka {
  return new Kafka({
    clientId,
    brokers: [broker.endpoints.SASL_PLAINTEXT],
    sasl: { mechanism: 'plain', ...user },
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 100 },
  });
}

/** Kafka's kafka-acls (AclCommand) from the cached jars, authenticating as admin. */
function kafkaAcls(broker: SecuredBroker, ...args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-acls-'));
  try {
    const config = join(dir, 'admin.properties');
    writeFileSync(
      config,
      [
        'security.protocol=SASL_PLAINTEXT',
        'sasl.mechanism=PLAIN',
        `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="${ADMIN.username}" password="${ADMIN.password}";`,
      ].join('\n'),
    );
    const run = spawnSync(
      'java',
      [
        ...JVM_OPTIONS,
        '-cp',
        `${kafkaLibs()}/*`,
        'org.apache.kafka.tools.AclCommand',
        '--bootstrap-server',
        broker.endpoints.SASL_PLAINTEXT,
        '--command-config',
        config,
        ...args,
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (run.status !== 0) throw new Error(`kafka-acls ${args.join(' ')} exited ${run.status}:\n${run.stdout}\n${run.stderr}`);
    return run.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What kafkajs says for each error once its retry wrapper has kept only the message. */
const KAFKAJS_MESSAGES: Record<string, string> = {
  TOPIC_AUTHORIZATION_FAILED: 'Not authorized to access topics',
  GROUP_AUTHORIZATION_FAILED: 'Not authorized to access group',
  CLUSTER_AUTHORIZATION_FAILED: 'Cluster authorization failed',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'Transactional Id authorization failed',
};

async function refusedWith(type: string, action: () => Promise<unknown>): Promise<void> {
  await assert.rejects(action, (err: Error & { type?: string; cause?: unknown }) => {
    const chain: (Error & { type?: string; cause?: unknown })[] = [];
    for (let e: unknown = err; e instanceof Error && chain.length < 5; e = (e as { cause?: unknown }).cause)
      chain.push(e as Error & { type?: string });
    chain.push(...((err as { errors?: (Error & { type?: string })[] }).errors ?? []));
    const matched = chain.some((e) => e.type === type || e.message.includes(KAFKAJS_MESSAGES[type]!));
    assert.ok(matched, `${type} expected, got ${chain.map((e) => `${e.name}: ${e.message}`).join(' <- ')}`);
    return true;
  });
}

/** FindCoordinator for a group as alice, over the wire: the error code Kafka answers. */
async function findGroupCoordinatorError(broker: SecuredBroker, groupId: string): Promise<number> {
  const [host, port] = broker.endpoints.SASL_PLAINTEXT.split(':');
  const conn = await KafkaConnection.connect(host!, Number(port), { sasl: { mechanism: 'PLAIN', ...ALICE } });
  try {
    const res = await conn.send<FindCoordinatorResponse>(
      ApiKey.FindCoordinator,
      makeFindCoordinatorRequest({ keyType: 0, coordinatorKeys: [groupId] }),
    );
    return res.coordinators.length > 0 ? res.coordinators[0]!.errorCode : res.errorCode;
  } finally {
    conn.close();
  }
}

againstEachSecuredBroker(
  'ACLs with kafka-acls and kafkajs',
  (broker) => {
    let admin: Admin;

    before(async () => {
      admin = plainClient(broker(), ADMIN, 'acl-admin').admin();
      await admin.connect();
      await admin.createTopics({
        topics: [
          { topic: 'orders', numPartitions: 1 },
          { topic: 'secret', numPartitions: 1 },
        ],
      });
    });

    after(async () => {
      await admin?.disconnect();
    });

    it('refuses alice everything until an ALLOW binding, and hides the topics she may not describe', async () => {
      const alice = plainClient(broker(), ALICE, 'alice-app');
      const aliceAdmin = alice.admin();
      await aliceAdmin.connect();
      try {
        assert.deepEqual(await aliceAdmin.listTopics(), []);
        const producer = alice.producer({ retry: { retries: 0 } });
        await producer.connect();
        await refusedWith('TOPIC_AUTHORIZATION_FAILED', () => producer.send({ topic: 'orders', messages: [{ value: 'refused' }] }));
        await producer.disconnect();

        kafkaAcls(broker(), '--add', '--allow-principal', 'User:alice', '--operation', 'Write', '--topic', 'orders');
        const allowed = alice.producer();
        await allowed.connect();
        const [sent] = await allowed.send({ topic: 'orders', messages: [{ value: 'allowed' }] });
        assert.equal(sent!.errorCode, 0);
        await allowed.disconnect();
        assert.deepEqual(await aliceAdmin.listTopics(), ['orders']);
      } finally {
        await aliceAdmin.disconnect();
      }
    });

    it('needs READ on the group as well as the topic to consume (GROUP_AUTHORIZATION_FAILED), and a DENY wins over the ALLOWs', async () => {
      const alice = plainClient(broker(), ALICE, 'alice-consumer');
      kafkaAcls(broker(), '--add', '--allow-principal', 'User:alice', '--operation', 'Read', '--topic', 'orders');
      assert.equal(await findGroupCoordinatorError(broker(), 'alice-group'), Errors.GROUP_AUTHORIZATION_FAILED.code);

      kafkaAcls(broker(), '--add', '--allow-principal', 'User:alice', '--operation', 'Read', '--group', 'alice-group');
      const consumer = alice.consumer({ groupId: 'alice-group' });
      await consumer.connect();
      await consumer.subscribe({ topic: 'orders', fromBeginning: true });
      const first = await new Promise<string>((resolve, reject) => {
        consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
        void consumer.run({ eachMessage: async ({ message }) => resolve(String(message.value)) }).catch(reject);
      });
      assert.equal(first, 'allowed');
      await consumer.disconnect();

      kafkaAcls(
        broker(),
        '--add',
        '--deny-principal',
        'User:alice',
        '--operation',
        'Read',
        '--topic',
        'ord',
        '--resource-pattern-type',
        'prefixed',
      );
      const denied = alice.consumer({ groupId: 'alice-group', retry: { retries: 0 } });
      await denied.connect();
      await refusedWith('TOPIC_AUTHORIZATION_FAILED', async () => {
        await denied.subscribe({ topic: 'orders', fromBeginning: true });
        await new Promise<void>((resolve, reject) => {
          denied.on(denied.events.CRASH, (e) => reject(e.payload.error));
          void denied.run({ eachMessage: async () => resolve() }).catch(reject);
        });
      });
      await denied.disconnect();
    });

    it('answers CLUSTER_AUTHORIZATION_FAILED and TRANSACTIONAL_ID_AUTHORIZATION_FAILED where Kafka does', async () => {
      const alice = plainClient(broker(), ALICE, 'alice-cluster');
      const aliceAdmin = alice.admin();
      await aliceAdmin.connect();
      try {
        await refusedWith('CLUSTER_AUTHORIZATION_FAILED', () =>
          aliceAdmin.describeAcls({ resourceType: 1, resourcePatternType: 1, operation: 1, permissionType: 1 }),
        );
        await refusedWith('TOPIC_AUTHORIZATION_FAILED', () => aliceAdmin.createTopics({ topics: [{ topic: 'alice-topic' }] }));
      } finally {
        await aliceAdmin.disconnect();
      }
      const [host, port] = broker().endpoints.SASL_PLAINTEXT.split(':');
      const conn = await KafkaConnection.connect(host!, Number(port), { sasl: { mechanism: 'PLAIN', ...ALICE } });
      try {
        const found = await conn.send<FindCoordinatorResponse>(
          ApiKey.FindCoordinator,
          makeFindCoordinatorRequest({ keyType: 1, coordinatorKeys: ['alice-tx'] }),
        );
        assert.equal(found.coordinators[0]!.errorCode, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code);
        const init = await conn.send<InitProducerIdResponse>(
          ApiKey.InitProducerId,
          makeInitProducerIdRequest({ transactionalId: 'alice-tx', transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 }),
        );
        assert.equal(init.errorCode, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code);
      } finally {
        conn.close();
      }
    });

    it('lists the bindings with kafka-acls, as Kafka lists them', () => {
      const listed = kafkaAcls(broker(), '--list', '--topic', 'orders');
      assert.match(listed, /Current ACLs for resource `ResourcePattern\(resourceType=TOPIC, name=orders, patternType=LITERAL\)`/);
      assert.match(listed, /\(principal=User:alice, host=\*, operation=WRITE, permissionType=ALLOW\)/);
      assert.match(listed, /\(principal=User:alice, host=\*, operation=READ, permissionType=ALLOW\)/);
      kafkaAcls(broker(), '--remove', '--force', '--topic', 'ord', '--resource-pattern-type', 'prefixed');
      assert.doesNotMatch(kafkaAcls(broker(), '--list', '--topic', 'ord', '--resource-pattern-type', 'prefixed'), /principal=User:alice/);
    });
  },
  WITH_ACLS,
);
