/**
 * Admin requests a broker forwards are authorized on the controller, with its current ACLs: a
 * binding revoked there refuses the next request forwarded by a broker whose own metadata image
 * still holds it. The lag is real: an nftables rule drops broker 3's Raft Fetch requests (those
 * carrying its `raft-client-3` client id) to the controller-only node, so broker 3 stops
 * following the metadata log while its forwarding channel, on the same port, still reaches
 * the controller.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { Errors } from '../../../protocol/errors.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import {
  decodeCreateTopicsResponse,
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import { makeEnvelopeRequest, type EnvelopeRequest, type EnvelopeResponse } from '../../../protocol/messages/envelope.ts';
import { decodeResponseHeader, encodeRequestHeader } from '../../../protocol/headers.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { serializePrincipal } from '../../../src/security/principal-serde.ts';
import type { DeleteAclsResponse } from '../../../protocol/messages/delete-acls.ts';
import type { DescribeAclsResponse } from '../../../protocol/messages/describe-acls.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { AclOperation, AclPermissionType, PatternType, ResourceType } from '../../../src/security/acl-types.ts';
import { startCluster, type ClusterNode, type ClusterProcesses } from '../../helpers/cluster.ts';
import { eventually } from '../../helpers/wait.ts';
import { javaClientProperties, javaPlain, kafkaTool } from './clients.ts';

const PLAIN = 'org.apache.kafka.common.security.plain.PlainLoginModule';
const JAAS = `${PLAIN} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`;
const TABLE = `sluice_forwarded_acls_${process.pid}`;

function nft(script: string): void {
  const r = spawnSync('nft', ['-f', '-'], { input: script, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`nft: ${r.stderr}${r.error ?? ''}`);
}

/**
 * Drops node `nodeId`'s Raft Fetch requests to `controllerPort`: TCP payloads whose frame has api
 * key 1 at byte 4 and the client id `raft-client-<nodeId>` (int16 length, then its bytes) at byte 12.
 */
function cutMetadataFetch(nodeId: number, controllerPort: number): void {
  const clientId = Buffer.from(`raft-client-${nodeId}`);
  const bits = (clientId.length + 2) * 8;
  const match = Buffer.concat([Buffer.from([0, clientId.length]), clientId]).toString('hex');
  nft(
    [
      `table inet ${TABLE} {`,
      '  chain output {',
      '    type filter hook output priority 0; policy accept;',
      `    tcp dport ${controllerPort} @ih,32,16 0x0001 @ih,96,${bits} 0x${match} drop`,
      '  }',
      '}',
    ].join('\n'),
  );
}

function restoreMetadataFetch(): void {
  spawnSync('nft', ['delete', 'table', 'inet', TABLE]);
}

function nftUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'nftables rules need root';
  if (spawnSync('nft', ['--version']).status !== 0) return 'the nft command is missing';
  return null;
}

const ALICE_CREATES_ORDERS = {
  resourceType: ResourceType.TOPIC,
  resourceName: 'orders',
  patternType: PatternType.PREFIXED,
  principal: 'User:alice',
  host: '*',
  operation: AclOperation.CREATE,
  permissionType: AclPermissionType.ALLOW,
};

describe('ACLs of forwarded admin requests are the controller’s, however far behind the forwarding broker is', function () {
  this.timeout(180_000);
  let cluster: ClusterProcesses;
  let controller: ClusterNode;
  let lagging: ClusterNode;
  let current: ClusterNode;
  const connections: KafkaConnection[] = [];

  before(async function () {
    const why = nftUnavailable();
    if (why !== null) throw new Error(`this test cuts a broker's metadata fetch with nftables: ${why}`);
    cluster = await startCluster({
      nodes: 3,
      roles: { 1: 'controller', 2: 'broker', 3: 'broker' },
      overrides: {
        'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT',
        'sasl.enabled.mechanisms': 'PLAIN',
        'sasl.mechanism.inter.broker.protocol': 'PLAIN',
        'listener.name.plaintext.plain.sasl.jaas.config': JAAS,
        'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
        // The brokers reach the PLAINTEXT controller listener as User:ANONYMOUS: they need CLUSTER_ACTION.
        'super.users': 'User:admin;User:ANONYMOUS',
        // Broker 3 must stay registered while it follows nothing.
        'broker.session.timeout.ms': 120_000,
      },
    });
    [controller, current, lagging] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
  });

  after(async () => {
    restoreMetadataFetch();
    for (const c of connections) c.close();
    await cluster?.cleanup();
  });

  async function connect(node: ClusterNode, username: string): Promise<KafkaConnection> {
    const c = await KafkaConnection.connect(node.host, node.port, {
      sasl: { mechanism: 'PLAIN', username, password: `${username}-secret` },
    });
    connections.push(c);
    return c;
  }

  /** The bindings of `node`'s own image (DescribeAcls is served by the broker asked). */
  async function bindingsAt(admin: KafkaConnection): Promise<string[]> {
    const r = await admin.send<DescribeAclsResponse>(ApiKey.DescribeAcls, {
      resourceTypeFilter: ResourceType.ANY,
      resourceNameFilter: null,
      patternTypeFilter: PatternType.ANY,
      principalFilter: null,
      hostFilter: null,
      operation: AclOperation.ANY,
      permissionType: AclPermissionType.ANY,
    });
    assert.equal(r.errorCode, 0);
    return r.resources.flatMap((res) => res.acls.map((a) => `${res.resourceName}:${a.principal}:${a.operation}`));
  }

  // A lagging broker waits out timeoutMs for its image to show a created topic, then answers.
  const createTopic = (c: KafkaConnection, name: string, timeoutMs = 10_000) =>
    c.send<CreateTopicsResponse>(ApiKey.CreateTopics, {
      topics: [{ name, numPartitions: 1, replicationFactor: 2, assignments: [], configs: [] }],
      timeoutMs,
      validateOnly: false,
    });

  it('refuses a CreateTopics forwarded by a lagging broker once the controller revoked the binding the broker still holds', async () => {
    const brokers = cluster.bootstrap.split(',');
    const kafka = new Kafka({
      brokers: [brokers[0]!],
      sasl: { mechanism: 'plain', username: 'admin', password: 'admin-secret' },
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createAcls({
        acl: [
          {
            resourceType: ALICE_CREATES_ORDERS.resourceType,
            resourceName: ALICE_CREATES_ORDERS.resourceName,
            resourcePatternType: ALICE_CREATES_ORDERS.patternType,
            principal: ALICE_CREATES_ORDERS.principal,
            host: ALICE_CREATES_ORDERS.host,
            operation: ALICE_CREATES_ORDERS.operation,
            permissionType: ALICE_CREATES_ORDERS.permissionType,
          },
        ],
      });
    } finally {
      await admin.disconnect();
    }
    const binding = `orders:User:alice:${AclOperation.CREATE}`;
    const adminAtCurrent = await connect(current, 'admin');
    const adminAtLagging = await connect(lagging, 'admin');
    await eventually(
      'both brokers hold the binding',
      async () => (await bindingsAt(adminAtCurrent)).includes(binding) && (await bindingsAt(adminAtLagging)).includes(binding),
    );
    const aliceAtCurrent = await connect(current, 'alice');
    const created = await createTopic(aliceAtCurrent, 'orders-granted');
    assert.deepEqual(
      created.topics.map((t) => [t.name, t.errorCode]),
      [['orders-granted', 0]],
    );

    cutMetadataFetch(lagging.nodeId, controller.controllerPort);
    const revoked = await adminAtCurrent.send<DeleteAclsResponse>(ApiKey.DeleteAcls, {
      filters: [
        {
          resourceTypeFilter: ResourceType.TOPIC,
          resourceNameFilter: 'orders',
          patternTypeFilter: PatternType.PREFIXED,
          principalFilter: 'User:alice',
          hostFilter: '*',
          operation: AclOperation.CREATE,
          permissionType: AclPermissionType.ALLOW,
        },
      ],
    });
    assert.deepEqual(
      revoked.filterResults.map((f) => [f.errorCode, f.matchingAcls.length]),
      [[0, 1]],
    );
    await eventually('broker 2 sees the binding gone', async () => !(await bindingsAt(adminAtCurrent)).includes(binding));
    assert.ok((await bindingsAt(adminAtLagging)).includes(binding), "broker 3's image still holds the revoked binding");

    const aliceAtLagging = await connect(lagging, 'alice');
    const refused = await createTopic(aliceAtLagging, 'orders-after-revoke');
    assert.deepEqual(
      refused.topics.map((t) => [t.name, t.errorCode]),
      [['orders-after-revoke', Errors.TOPIC_AUTHORIZATION_FAILED.code]],
    );
    const metadata = await adminAtCurrent.send<MetadataResponse>(
      ApiKey.Metadata,
      makeMetadataRequest({ topics: [makeMetadataRequestTopic({ name: 'orders-after-revoke' })], allowAutoTopicCreation: false }),
    );
    assert.equal(metadata.topics[0]!.errorCode, Errors.UNKNOWN_TOPIC_OR_PARTITION.code, 'nothing was created');
    assert.ok((await bindingsAt(adminAtLagging)).includes(binding), 'broker 3 was still behind when the controller refused');

    // The forwarding path itself is sound while broker 3 lags: the admin's request is served.
    const byAdmin = await createTopic(adminAtLagging, 'orders-by-admin', 1000);
    assert.deepEqual(
      byAdmin.topics.map((t) => [t.name, t.errorCode]),
      [['orders-by-admin', 0]],
    );

    restoreMetadataFetch();
    await eventually(
      'broker 3 catches up once its fetch gets through',
      async () => !(await bindingsAt(adminAtLagging)).includes(binding),
      60_000,
    );
  });

  it("answers a malformed Envelope on the controller listener with Kafka's envelope errors, and serves on", async () => {
    const c = await KafkaConnection.connect(controller.host, controller.controllerPort);
    connections.push(c);
    const createOrders = (name: string) => {
      const w = new Writer();
      encodeRequestHeader(w, { requestApiKey: ApiKey.CreateTopics, requestApiVersion: 7, correlationId: 9, clientId: 'forged' });
      apis
        .get(ApiKey.CreateTopics)!
        .encodeRequest(
          w,
          makeCreateTopicsRequest({ topics: [makeCreateTopicsRequestCreatableTopic({ name, numPartitions: 1, replicationFactor: 1 })] }),
          7,
        );
      return w.toBuffer();
    };
    const alice = serializePrincipal({ principalType: 'User', name: 'alice', tokenAuthenticated: false });
    const envelope = (fields: Partial<EnvelopeRequest>) =>
      c.send<EnvelopeResponse>(
        ApiKey.Envelope,
        makeEnvelopeRequest({
          requestData: createOrders('orders-forged'),
          requestPrincipal: alice,
          clientHostAddress: Buffer.from([127, 0, 0, 1]),
          ...fields,
        }),
        0,
      );
    assert.equal((await envelope({ requestPrincipal: Buffer.from([0, 7, 0]) })).errorCode, Errors.PRINCIPAL_DESERIALIZATION_FAILURE.code);
    assert.equal((await envelope({ clientHostAddress: Buffer.from([1, 2, 3]) })).errorCode, Errors.INVALID_REQUEST.code);
    assert.equal((await envelope({ requestData: Buffer.from([0, 3, 0, 12, 0]) })).errorCode, Errors.INVALID_REQUEST.code);
    // alice's principal, as a broker would carry it: her binding is gone, so the controller refuses her.
    const served = await envelope({});
    assert.equal(served.errorCode, Errors.NONE.code);
    const r = new Reader(served.responseData!);
    assert.equal(decodeResponseHeader(r, ApiKey.CreateTopics, 7), 9);
    assert.deepEqual(
      decodeCreateTopicsResponse(r, 7).topics.map((t) => [t.name, t.errorCode]),
      [['orders-forged', Errors.TOPIC_AUTHORIZATION_FAILED.code]],
    );
    const admin = await connect(current, 'admin');
    const created = await createTopic(admin, 'after-malformed-envelopes');
    assert.deepEqual(
      created.topics.map((t) => t.errorCode),
      [0],
    );
  });

  it("Kafka's kafka-acls, kafka-topics and kafka-configs work through a broker-only node, and the controller holds alice to her ACLs", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-forwarded-tools-'));
    try {
      const properties = (user: string) =>
        javaClientProperties(dir, user, {
          'security.protocol': 'SASL_PLAINTEXT',
          ...javaPlain({ username: user, password: `${user}-secret` }),
        });
      const [admin, alice] = [await properties('admin'), await properties('alice')];
      const bootstrap = `${lagging.host}:${lagging.port}`;
      const tool = async (className: string, config: string, ...args: string[]) => {
        const result = await kafkaTool(className, ['--bootstrap-server', bootstrap, '--command-config', config, ...args]);
        return { ...result, output: `${result.stdout}${result.stderr}` };
      };
      const acl = await tool(
        'org.apache.kafka.tools.AclCommand',
        admin,
        '--add',
        '--allow-principal',
        'User:alice',
        '--operation',
        'Create',
        '--operation',
        'Describe',
        '--topic',
        'tools-',
        '--resource-pattern-type',
        'prefixed',
      );
      assert.equal(acl.code, 0, acl.output);
      const topic = await tool(
        'org.apache.kafka.tools.TopicCommand',
        admin,
        '--create',
        '--topic',
        'tools-topic',
        '--partitions',
        '2',
        '--replication-factor',
        '2',
      );
      assert.equal(topic.code, 0, topic.output);
      const altered = await tool(
        'kafka.admin.ConfigCommand',
        admin,
        '--alter',
        '--entity-type',
        'topics',
        '--entity-name',
        'tools-topic',
        '--add-config',
        'retention.ms=1234',
      );
      assert.equal(altered.code, 0, altered.output);
      const described = await tool(
        'kafka.admin.ConfigCommand',
        admin,
        '--describe',
        '--entity-type',
        'topics',
        '--entity-name',
        'tools-topic',
      );
      assert.match(described.output, /retention\.ms=1234/);

      await eventually('the binding reaches broker 3', async () =>
        (await bindingsAt(await connect(lagging, 'admin'))).includes(`tools-:User:alice:${AclOperation.CREATE}`),
      );
      const byAlice = await tool(
        'org.apache.kafka.tools.TopicCommand',
        alice,
        '--create',
        '--topic',
        'tools-by-alice',
        '--partitions',
        '1',
        '--replication-factor',
        '2',
      );
      assert.equal(byAlice.code, 0, byAlice.output);
      const aliceAlters = await tool(
        'kafka.admin.ConfigCommand',
        alice,
        '--alter',
        '--entity-type',
        'topics',
        '--entity-name',
        'tools-topic',
        '--add-config',
        'retention.ms=99',
      );
      assert.notEqual(aliceAlters.code, 0, aliceAlters.output);
      assert.match(aliceAlters.output, /TopicAuthorizationException|not authorized/i);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
