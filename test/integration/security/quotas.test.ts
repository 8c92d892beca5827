/**
 * Client quotas enforced, against Sluice and Apache Kafka started from the same properties:
 * quotas set with Kafka's kafka-configs, then measured with Kafka's own performance tools
 * (ProducerPerformance, ConsumerPerformance), whose throughput must stay within the quota
 * and whose throttle-time metrics show the brokers' throttle_time_ms; and the
 * controller_mutation_rate quota refusing a CreateTopics over it (v6+) or throttling it (v5);
 * the per-address connection limits (an override of max.connections.per.ip, an ip entity's
 * connection_creation_rate) over raw connections from other loopback addresses.
 *
 * Both brokers keep two one-second quota samples (quota.window.num=2): with Kafka's default
 * of eleven, a client may first send ten seconds of its quota at once, and a measurement
 * would need a minute to show the rate.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import {
  makeCreateTopicsRequest,
  makeCreateTopicsRequestCreatableTopic,
  type CreateTopicsResponse,
} from '../../../protocol/messages/create-topics.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeMetadataRequest, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { ADMIN, ALICE, againstEachSecuredBroker, type SecuredBroker } from '../../helpers/secured-brokers.ts';
import { eventually } from '../../helpers/wait.ts';
import { Peer } from '../../helpers/raw-peer.ts';
import { createTopic, javaClientProperties, javaPlain, kafkaTool } from './clients.ts';

const QUOTA_BYTES_PER_SECOND = 512 * 1024;
const RECORD_BYTES = 1024;
const RECORDS = 3000;
/** A throttled client's rate over a whole run: the quota, plus what one window lets through at the start and one request's overshoot. */
const OVER_QUOTA_TOLERANCE = 1.25;
/** And not far below it: throttling that stops a client is no quota either. */
const UNDER_QUOTA_FLOOR = 0.4;

function hostPort(endpoint: string): { host: string; port: number } {
  const at = endpoint.lastIndexOf(':');
  return { host: endpoint.slice(0, at), port: Number(endpoint.slice(at + 1)) };
}

/** kafka-configs on the PLAINTEXT listener: sets a quota of `entity` (its --entity-type/--entity-name arguments) and waits until it is listed. */
async function setQuota(broker: SecuredBroker, entity: readonly string[], config: string): Promise<void> {
  const configs = (...args: string[]) =>
    kafkaTool('kafka.admin.ConfigCommand', ['--bootstrap-server', broker.endpoints.PLAINTEXT, ...args, ...entity]);
  const alter = await configs('--alter', '--add-config', config);
  assert.equal(alter.code, 0, alter.stderr);
  const key = config.slice(0, config.indexOf('='));
  await eventually(`${entity.join(' ')}: ${key} listed by kafka-configs`, async () => {
    const described = await configs('--describe');
    return described.code === 0 && described.stdout.includes(key);
  });
}

/** A client id's quota. */
function setClientQuota(broker: SecuredBroker, clientId: string, config: string): Promise<void> {
  return setQuota(broker, ['--entity-type', 'clients', '--entity-name', clientId], config);
}

/** The value of a `--print-metrics` line (`group:name:{tags} : value`). */
function metric(output: string, name: string): number {
  const line = output.split('\n').find((l) => l.includes(`:${name}:`));
  assert.ok(line !== undefined, `no ${name} in\n${output}`);
  return Number(line.slice(line.lastIndexOf(':') + 1).trim());
}

againstEachSecuredBroker(
  'client quotas',
  (broker) => {
    let dir = '';
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'sluice-quotas-'));
      await createTopic(broker(), ADMIN, 'quota-records');
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    const producers = [
      {
        whose: "its client id's",
        entity: ['--entity-type', 'clients', '--entity-name', 'quota-producer'],
        props: () => ({ 'bootstrap.servers': broker().endpoints.PLAINTEXT, 'client.id': 'quota-producer' }),
      },
      {
        whose: "its user's (alice over SASL PLAIN, any client id)",
        entity: ['--entity-type', 'users', '--entity-name', ALICE.username],
        props: () => ({
          'bootstrap.servers': broker().endpoints.SASL_PLAINTEXT,
          'client.id': 'alice-producer',
          'security.protocol': 'SASL_PLAINTEXT',
          ...javaPlain(ALICE),
        }),
      },
    ];
    for (const { whose, entity, props } of producers) {
      it(`a producer over ${whose} producer_byte_rate is held to it (ProducerPerformance), and its responses carry throttle_time_ms`, async () => {
        await setQuota(broker(), entity, `producer_byte_rate=${QUOTA_BYTES_PER_SECOND}`);
        const run = await kafkaTool('org.apache.kafka.tools.ProducerPerformance', [
          '--topic',
          'quota-records',
          '--num-records',
          String(RECORDS),
          '--record-size',
          String(RECORD_BYTES),
          '--throughput',
          '-1',
          '--print-metrics',
          '--producer.config',
          await javaClientProperties(dir, `producer-${entity.at(-1)}`, { ...props(), acks: '1' }),
        ]);
        assert.equal(run.code, 0, run.stderr);
        // The last report is the whole run's (the earlier ones are each five seconds').
        const summary = [...run.stdout.matchAll(/(\d+) records sent, ([\d.]+) records\/sec/g)].at(-1);
        assert.ok(summary !== undefined, run.stdout);
        assert.equal(Number(summary[1]), RECORDS);
        const bytesPerSecond = Number(summary[2]) * RECORD_BYTES;
        assert.ok(bytesPerSecond <= QUOTA_BYTES_PER_SECOND * OVER_QUOTA_TOLERANCE, `${bytesPerSecond} B/s over ${QUOTA_BYTES_PER_SECOND}`);
        assert.ok(
          bytesPerSecond >= QUOTA_BYTES_PER_SECOND * UNDER_QUOTA_FLOOR,
          `${bytesPerSecond} B/s, far under ${QUOTA_BYTES_PER_SECOND}`,
        );
        assert.ok(metric(run.stdout, 'produce-throttle-time-max') > 0, run.stdout);
      });
    }

    it('a consumer over consumer_byte_rate is held to it (ConsumerPerformance), and its fetches carry throttle_time_ms', async () => {
      await setClientQuota(broker(), 'quota-consumer', `consumer_byte_rate=${QUOTA_BYTES_PER_SECOND}`);
      const config = await javaClientProperties(dir, 'quota-consumer', { 'client.id': 'quota-consumer', 'auto.offset.reset': 'earliest' });
      const run = await kafkaTool('org.apache.kafka.tools.ConsumerPerformance', [
        '--bootstrap-server',
        broker().endpoints.PLAINTEXT,
        '--topic',
        'quota-records',
        '--messages',
        String(RECORDS),
        '--group',
        'quota-consumers',
        '--consumer.config',
        config,
        '--timeout',
        '60000',
        '--print-metrics',
      ]);
      assert.equal(run.code, 0, run.stderr);
      // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
      const row = run.stdout
        .split('\n')
        .find((l) => /^\d{4}-/.test(l))
        ?.split(',')
        .map((c) => c.trim());
      assert.ok(row !== undefined, run.stdout);
      // It stops at the poll that reaches --messages, counting all that poll returned.
      assert.ok(Number(row[4]) >= RECORDS, run.stdout);
      const bytesPerSecond = Number(row[8]) * 1024 * 1024;
      assert.ok(bytesPerSecond <= QUOTA_BYTES_PER_SECOND * OVER_QUOTA_TOLERANCE, `${bytesPerSecond} B/s over ${QUOTA_BYTES_PER_SECOND}`);
      assert.ok(bytesPerSecond >= QUOTA_BYTES_PER_SECOND * UNDER_QUOTA_FLOOR, `${bytesPerSecond} B/s, far under ${QUOTA_BYTES_PER_SECOND}`);
      assert.ok(metric(run.stdout, 'fetch-throttle-time-max') > 0, run.stdout);
    });

    it('request_percentage: a client over its share of request time gets throttle_time_ms, and its connection is held back that long', async () => {
      await setClientQuota(broker(), 'quota-requests', 'request_percentage=0.01');
      const { host, port } = hostPort(broker().endpoints.PLAINTEXT);
      const conn = await KafkaConnection.connect(host, port, { clientId: 'quota-requests' });
      try {
        const metadata = () =>
          conn.send<MetadataResponse>(ApiKey.Metadata, makeMetadataRequest({ topics: null, allowAutoTopicCreation: false }), 12);
        let throttleTimeMs = 0;
        for (let i = 0; i < 500 && throttleTimeMs === 0; i++) throttleTimeMs = (await metadata()).throttleTimeMs;
        assert.ok(throttleTimeMs > 0, 'no Metadata response was throttled');
        const answeredAt = performance.now();
        await metadata();
        const heldBackMs = performance.now() - answeredAt;
        // The broker mutes the connection from the moment it decided the throttle, a little
        // before the response left: allow for that, and for timer granularity.
        assert.ok(heldBackMs >= throttleTimeMs - 100, `held back ${heldBackMs} ms, throttled ${throttleTimeMs} ms`);
      } finally {
        conn.close();
      }
    });

    it('controller_mutation_rate: CreateTopics v7 over the quota is refused THROTTLING_QUOTA_EXCEEDED with the throttle time; v5 is served and throttled', async () => {
      // One partition a second, with the default eleven one-second samples: a burst of eleven.
      await setClientQuota(broker(), 'quota-admin', 'controller_mutation_rate=1');
      const { host, port } = hostPort(broker().endpoints.PLAINTEXT);
      const conn = await KafkaConnection.connect(host, port, { clientId: 'quota-admin' });
      try {
        const create = (version: number, ...topics: [string, number][]) =>
          conn.send<CreateTopicsResponse>(
            ApiKey.CreateTopics,
            makeCreateTopicsRequest({
              timeoutMs: 30_000,
              topics: topics.map(([name, numPartitions]) =>
                makeCreateTopicsRequestCreatableTopic({ name, numPartitions, replicationFactor: 1 }),
              ),
            }),
            version,
          );
        const burst = await create(7, ['mutations-a', 12]);
        assert.deepEqual(
          burst.topics.map((t) => [t.name, t.errorCode]),
          [['mutations-a', Errors.NONE.code]],
        );
        const refused = await create(7, ['mutations-b', 1]);
        assert.deepEqual(
          refused.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
          [['mutations-b', Errors.THROTTLING_QUOTA_EXCEEDED.code, null]],
        );
        assert.ok(refused.throttleTimeMs > 0 && refused.throttleTimeMs <= 2000, String(refused.throttleTimeMs));
        const permissive = await create(5, ['mutations-c', 1]);
        assert.deepEqual(
          permissive.topics.map((t) => [t.name, t.errorCode]),
          [['mutations-c', Errors.NONE.code]],
        );
        assert.ok(permissive.throttleTimeMs > 0, String(permissive.throttleTimeMs));
      } finally {
        conn.close();
      }
    });

    it('max.connections.per.ip.overrides: a third connection from 127.0.0.2 is closed while another address still connects', async () => {
      const { host, port } = hostPort(broker().endpoints.PLAINTEXT);
      const peers: Peer[] = [];
      try {
        for (let i = 0; i < 2; i++) {
          peers.push(await Peer.open(port, '127.0.0.2', host));
          assert.equal((await peers.at(-1)!.apiVersions()).errorCode, Errors.NONE.code);
        }
        const refused = await Peer.open(port, '127.0.0.2', host);
        peers.push(refused);
        await refused.closed;
        peers.push(await Peer.open(port, '127.0.0.5', host));
        assert.equal((await peers.at(-1)!.apiVersions()).errorCode, Errors.NONE.code);
      } finally {
        for (const peer of peers) peer.close();
      }
    });

    it("an ip entity's connection_creation_rate: a connection over it is closed unanswered, other addresses connect", async () => {
      await setQuota(broker(), ['--entity-type', 'ips', '--entity-name', '127.0.0.3'], 'connection_creation_rate=1');
      const { host, port } = hostPort(broker().endpoints.PLAINTEXT);
      const peers: Peer[] = [];
      try {
        // The quota reaches the listeners with the metadata: until then 127.0.0.3 connects freely.
        await eventually('the connection rate of 127.0.0.3 enforced', async () => {
          const peer = await Peer.open(port, '127.0.0.3', host);
          peers.push(peer);
          const answered = peer.apiVersions().then(
            () => true,
            () => false,
          );
          return await Promise.race([answered.then((ok) => !ok), peer.closed.then(() => true)]);
        });
        const other = await Peer.open(port, '127.0.0.4', host);
        peers.push(other);
        assert.equal((await other.apiVersions()).errorCode, Errors.NONE.code);
      } finally {
        for (const peer of peers) peer.close();
      }
    });
  },
  { 'quota.window.num': '2', 'quota.window.size.seconds': '1', 'max.connections.per.ip.overrides': '127.0.0.2:2' },
);
