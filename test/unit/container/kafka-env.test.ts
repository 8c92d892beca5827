import assert from 'node:assert/strict';
import { BrokerConfig, ConfigException } from '../../../src/config/index.ts';
import { configFromArgs } from '../../../src/cli/args.ts';
import { convertEnvKey, kafkaEnvConfig, listenersFromAdvertised } from '../../../src/container/kafka-env.ts';

/**
 * The environment @testcontainers/kafka 11 gives a cp-kafka image with a tag >= 8.0.0 (KRaft),
 * as its KafkaContainer constructor and beforeContainerCreated() set it, with the advertised
 * listeners its start script exports once the mapped port is known.
 */
const TESTCONTAINERS_KRAFT_ENV: NodeJS.ProcessEnv = {
  KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
  KAFKA_INTER_BROKER_LISTENER_NAME: 'BROKER',
  KAFKA_BROKER_ID: '1',
  KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
  KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '1',
  KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
  KAFKA_LOG_FLUSH_INTERVAL_MESSAGES: '9223372036854775807',
  KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
  KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE: 'false',
  KAFKA_LISTENERS: 'PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094',
  CLUSTER_ID: '4L6g3nShT-eMCtK--X86sw',
  KAFKA_NODE_ID: '1',
  KAFKA_PROCESS_ROLES: 'broker,controller',
  KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9094',
  KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
  KAFKA_ADVERTISED_LISTENERS: 'BROKER://b2c4e6f8a0d1:9092,PLAINTEXT://localhost:32771',
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOSTNAME: 'b2c4e6f8a0d1',
};

function configError(fn: () => unknown, name: string, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ConfigException, String(err));
    assert.equal(err.configName, name);
    assert.match(err.message, message);
    return true;
  });
}

describe('KAFKA_* environment (cp-kafka image conventions)', () => {
  it('converts names as Confluent documents: _ is a dot, __ an underscore, ___ a dash', () => {
    assert.equal(convertEnvKey('LOG_RETENTION_MS'), 'log.retention.ms');
    assert.equal(convertEnvKey('LISTENER_SECURITY_PROTOCOL_MAP'), 'listener.security.protocol.map');
    assert.equal(convertEnvKey('LISTENER_NAME_INTERNAL_SSL_KEYSTORE__TYPE'), 'listener.name.internal.ssl.keystore_type');
    assert.equal(convertEnvKey('SOME___DASHED_NAME'), 'some-dashed.name');
    assert.equal(convertEnvKey('A_B_C'), 'a.b.c');
  });

  it("reads the environment Testcontainers' KafkaContainer passes as a single-node KRaft broker", () => {
    const { properties, clusterId } = kafkaEnvConfig(TESTCONTAINERS_KRAFT_ENV);
    assert.equal(clusterId, '4L6g3nShT-eMCtK--X86sw');
    assert.equal(properties.get('process.roles'), 'broker,controller');
    assert.equal(properties.get('node.id'), '1');
    assert.equal(properties.get('broker.id'), '1');
    assert.equal(properties.get('controller.quorum.voters'), '1@localhost:9094');
    assert.equal(properties.get('inter.broker.listener.name'), 'BROKER');
    assert.equal(properties.get('offsets.topic.replication.factor'), '1');
    assert.equal(properties.get('group.initial.rebalance.delay.ms'), '0');
    assert.equal(properties.get('log.dirs'), '/var/lib/kafka/data');
    assert.equal(properties.get('confluent.support.metrics.enable'), 'false');
    // CLUSTER_ID, PATH and HOSTNAME have no KAFKA_ prefix: they are not properties.
    assert.equal([...properties.keys()].filter((k) => !/^[a-z0-9.\-_]+$/.test(k)).length, 0);
    assert.equal(properties.has('cluster.id'), false);
    assert.equal(properties.has('path'), false);

    const config = new BrokerConfig({ file: properties });
    assert.deepEqual(
      config.listeners.map((l) => `${l.name}://${l.host}:${l.port}/${l.securityProtocol}`),
      ['PLAINTEXT://0.0.0.0:9093/PLAINTEXT', 'BROKER://0.0.0.0:9092/PLAINTEXT', 'CONTROLLER://0.0.0.0:9094/PLAINTEXT'],
    );
    // The controller listener is bound but never advertised to clients.
    assert.deepEqual(
      config.advertisedListeners.map((l) => `${l.name}://${l.host}:${l.port}`),
      ['BROKER://b2c4e6f8a0d1:9092', 'PLAINTEXT://localhost:32771'],
    );
    assert.deepEqual(config.quorumVoters, [{ nodeId: 1, host: 'localhost', port: 9094 }]);
    assert.equal(config.getInt('offsets.topic.num.partitions'), 1);
    assert.equal(config.getLong('log.flush.interval.messages'), Number.MAX_SAFE_INTEGER);
    assert.deepEqual(config.unknownNames, ['confluent.support.metrics.enable']);
  });

  it('leaves the JVM and log4j variables out, and maps the log4j root level to log.level', () => {
    const { properties } = kafkaEnvConfig({
      ...TESTCONTAINERS_KRAFT_ENV,
      KAFKA_HEAP_OPTS: '-Xmx1G',
      KAFKA_OPTS: '-Dfoo=bar',
      KAFKA_JMX_OPTS: '-Dcom.sun.management.jmxremote=true',
      KAFKA_LOG4J_LOGGERS: 'kafka.controller=WARN',
      KAFKA_LOG4J_ROOT_LOGLEVEL: 'WARN',
    });
    for (const name of ['heap.opts', 'opts', 'jmx.opts', 'log4j.loggers', 'log4j.root.loglevel'])
      assert.equal(properties.has(name), false, name);
    assert.equal(properties.get('log.level'), 'warn');
    configError(
      () => kafkaEnvConfig({ ...TESTCONTAINERS_KRAFT_ENV, KAFKA_LOG4J_ROOT_LOGLEVEL: 'LOUD' }),
      'KAFKA_LOG4J_ROOT_LOGLEVEL',
      /log4j level/,
    );
  });

  it('derives the listeners from the advertised ones, binding every interface, when KAFKA_LISTENERS is unset', () => {
    assert.equal(
      listenersFromAdvertised('BROKER://kafka:9092, PLAINTEXT://[::1]:29092'),
      'BROKER://0.0.0.0:9092,PLAINTEXT://0.0.0.0:29092',
    );
    const env = { ...TESTCONTAINERS_KRAFT_ENV };
    delete env.KAFKA_LISTENERS;
    env.KAFKA_ADVERTISED_LISTENERS = 'PLAINTEXT://kafka:9092,CONTROLLER://kafka:9093';
    assert.equal(kafkaEnvConfig(env).properties.get('listeners'), 'PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093');
  });

  it('refuses what cp-kafka refuses: no roles, no cluster id, no advertised listeners on a broker, deprecated ports', () => {
    const without = (name: string): NodeJS.ProcessEnv => {
      const env = { ...TESTCONTAINERS_KRAFT_ENV };
      delete env[name];
      return env;
    };
    configError(() => kafkaEnvConfig(without('KAFKA_PROCESS_ROLES')), 'KAFKA_PROCESS_ROLES', /KAFKA_PROCESS_ROLES is required/);
    configError(() => kafkaEnvConfig(without('CLUSTER_ID')), 'CLUSTER_ID', /CLUSTER_ID is required/);
    configError(() => kafkaEnvConfig(without('KAFKA_ADVERTISED_LISTENERS')), 'KAFKA_ADVERTISED_LISTENERS', /is required/);
    configError(() => kafkaEnvConfig({ ...TESTCONTAINERS_KRAFT_ENV, CLUSTER_ID: 'not-a-uuid' }), 'CLUSTER_ID', /valid UUID/);
    configError(() => kafkaEnvConfig({ ...TESTCONTAINERS_KRAFT_ENV, KAFKA_PORT: '9092' }), 'KAFKA_PORT', /port is deprecated/);
    configError(
      () => kafkaEnvConfig({ ...TESTCONTAINERS_KRAFT_ENV, KAFKA_PROCESS_ROLES: 'controller' }),
      'KAFKA_ADVERTISED_LISTENERS',
      /not supported on a KRaft controller/,
    );
  });

  it('`sluice container` layers SLUICE_* variables and --override flags over the KAFKA_* environment', () => {
    const config = configFromArgs(['container', '--override', 'num.partitions=4', '--override', 'log.dirs=/data/override'], {
      ...TESTCONTAINERS_KRAFT_ENV,
      KAFKA_NUM_PARTITIONS: '2',
      KAFKA_LOG_RETENTION_MS: '1000',
      SLUICE_LOG_RETENTION_MS: '2000',
      KAFKA_LOG_DIRS: '/data/kafka',
    });
    assert.equal(config.getInt('num.partitions'), 4);
    assert.equal(config.logRetentionMs, 2000);
    assert.deepEqual(config.logDirs, ['/data/override']);
    assert.equal(config.nodeId, 1);
    assert.deepEqual(config.processRoles, ['broker', 'controller']);
  });
});
