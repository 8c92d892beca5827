import assert from 'node:assert/strict';
import {
  BrokerConfig,
  ConfigException,
  ConfigSource,
  describeTopicConfig,
  effectiveTopicConfig,
  envNameToProperty,
  parseOverride,
  parseProperties,
  propertiesFromEnv,
  validateTopicConfig,
} from '../../../src/config/index.ts';
import { configFromArgs } from '../../../src/cli/args.ts';

describe('broker configuration', () => {
  it("has Kafka's defaults", () => {
    const c = new BrokerConfig();
    assert.equal(c.getInt('num.partitions'), 1);
    assert.equal(c.getInt('message.max.bytes'), 1048588);
    assert.equal(c.getInt('socket.request.max.bytes'), 104857600);
    assert.equal(c.getLong('connections.max.idle.ms'), 600000);
    assert.equal(c.getInt('offsets.topic.num.partitions'), 50);
    assert.equal(c.getInt('group.initial.rebalance.delay.ms'), 3000);
    assert.equal(c.getBoolean('auto.create.topics.enable'), true);
    assert.equal(c.logRetentionMs, 168 * 3_600_000);
    assert.deepEqual(c.logDirs, ['/tmp/kafka-logs']);
    assert.equal(c.getLong('log.flush.interval.messages'), Number.MAX_SAFE_INTEGER);
    assert.equal(c.source('num.partitions'), ConfigSource.DEFAULT_CONFIG);
  });

  it('layers file < environment < --override', () => {
    const c = new BrokerConfig({
      file: new Map([
        ['num.partitions', '2'],
        ['log.retention.hours', '1'],
        ['default.replication.factor', '1'],
      ]),
      env: new Map([
        ['num.partitions', '3'],
        ['log.retention.minutes', '5'],
      ]),
      overrides: new Map([['num.partitions', '4']]),
    });
    assert.equal(c.getInt('num.partitions'), 4);
    assert.equal(c.logRetentionMs, 5 * 60_000, 'log.retention.minutes outranks log.retention.hours');
    assert.equal(c.source('num.partitions'), ConfigSource.STATIC_BROKER_CONFIG);
  });

  it("rejects ill-typed and out-of-range values with Kafka's wording", () => {
    assert.throws(
      () => new BrokerConfig({ overrides: new Map([['num.partitions', 'x']]) }),
      (e: unknown) => e instanceof ConfigException && /Invalid value x for configuration num\.partitions/.test(e.message),
    );
    assert.throws(() => new BrokerConfig({ overrides: new Map([['num.partitions', '0']]) }), /at least 1/);
    assert.throws(() => new BrokerConfig({ overrides: new Map([['auto.create.topics.enable', 'yes']]) }), /true or false/);
    assert.throws(() => new BrokerConfig({ overrides: new Map([['log.cleanup.policy', 'delete,shred']]) }), /shred/);
  });

  it('collects unknown names instead of failing, as Kafka warns and goes on', () => {
    const c = new BrokerConfig({ file: new Map([['no.such.config', '1']]) });
    assert.deepEqual(c.unknownNames, ['no.such.config']);
  });

  it('checks KRaft consistency: a controller must be among the voters', () => {
    assert.throws(
      () =>
        new BrokerConfig({
          file: new Map([
            ['node.id', '2'],
            ['process.roles', 'controller'],
            ['controller.quorum.voters', '1@127.0.0.1:9093'],
            ['listeners', 'CONTROLLER://127.0.0.1:9093'],
            ['controller.listener.names', 'CONTROLLER'],
          ]),
        }),
      /the node id 2 must be included in the set of voters controller\.quorum\.voters=Set\(1\)/,
    );
  });

  it('parses listeners and advertises bound ports, hiding controller listeners', () => {
    const c = new BrokerConfig({
      file: new Map([
        ['listeners', 'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093'],
        ['controller.listener.names', 'CONTROLLER'],
      ]),
    });
    assert.deepEqual(
      c.listeners.map((l) => [l.name, l.host, l.port, l.securityProtocol]),
      [
        ['PLAINTEXT', '127.0.0.1', 9092, 'PLAINTEXT'],
        ['CONTROLLER', '127.0.0.1', 9093, 'PLAINTEXT'],
      ],
    );
    assert.deepEqual(
      c.advertisedListeners.map((l) => l.name),
      ['PLAINTEXT'],
    );
    assert.throws(() => new BrokerConfig({ file: new Map([['listeners', 'FOO://:1']]) }), /No security protocol defined for listener FOO/);
    assert.throws(
      () => new BrokerConfig({ file: new Map([['listeners', 'PLAINTEXT://0.0.0.0:9092']]) }),
      /nonroutable meta-address 0\.0\.0\.0/,
    );
    const everywhere = configFromArgs(['dev', '--host', '0.0.0.0', '--port', '9092'], {});
    assert.deepEqual(
      everywhere.advertisedListeners.map((l) => [l.host, l.port]),
      [['127.0.0.1', 9092]],
    );
  });

  it('applies dynamic configs above static ones, refusing read-only ones', () => {
    const c = new BrokerConfig({ file: new Map([['log.retention.ms', '1000']]) });
    let changed = '';
    c.onChange((name) => {
      changed = name;
    });
    c.setDynamic('log.retention.ms', '2000', 'cluster');
    assert.equal(c.getLong('log.retention.ms'), 2000);
    assert.equal(changed, 'log.retention.ms');
    c.setDynamic('log.retention.ms', '3000', 'broker');
    assert.equal(c.source('log.retention.ms'), ConfigSource.DYNAMIC_BROKER_CONFIG);
    assert.deepEqual(
      c.synonymsOf('log.retention.ms').map((s) => [s.name, s.value, s.source]),
      [
        ['log.retention.ms', '3000', ConfigSource.DYNAMIC_BROKER_CONFIG],
        ['log.retention.ms', '2000', ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG],
        ['log.retention.ms', '1000', ConfigSource.STATIC_BROKER_CONFIG],
        ['log.retention.hours', '168', ConfigSource.DEFAULT_CONFIG],
      ],
    );
    c.setDynamic('log.retention.ms', null, 'broker');
    assert.equal(c.getLong('log.retention.ms'), 2000);
    assert.throws(() => c.setDynamic('num.partitions', '3', 'cluster'), /Cannot update these configs dynamically/);
  });

  it('describes every broker config with documentation, type and read-only flag', () => {
    const described = new BrokerConfig().describe(null, false);
    const numPartitions = described.find((d) => d.name === 'num.partitions')!;
    assert.equal(numPartitions.value, '1');
    assert.equal(numPartitions.readOnly, true);
    assert.equal(numPartitions.configType, 3);
    assert.ok(numPartitions.documentation.length > 0);
    assert.equal(described.find((d) => d.name === 'log.retention.ms')!.readOnly, false);
  });
});

describe('topic configuration', () => {
  it('falls back to the broker synonyms, converting units', () => {
    const broker = new BrokerConfig({
      file: new Map([
        ['log.retention.hours', '1'],
        ['message.max.bytes', '2000000'],
      ]),
    });
    const effective = effectiveTopicConfig({ 'cleanup.policy': 'compact' }, broker);
    assert.equal(effective['retention.ms'], '3600000');
    assert.equal(effective['max.message.bytes'], '2000000');
    assert.equal(effective['cleanup.policy'], 'compact');
    assert.equal(effective['segment.bytes'], '1073741824');
    assert.equal(effective['flush.messages'], '9223372036854775807');
  });

  it('describes a topic config with its source and synonyms', () => {
    const broker = new BrokerConfig({ file: new Map([['log.retention.ms', '5000']]) });
    const [retention] = describeTopicConfig(new Map([['retention.ms', '100']]), broker, ['retention.ms'], true);
    assert.equal(retention!.value, '100');
    assert.equal(retention!.source, ConfigSource.TOPIC_CONFIG);
    assert.deepEqual(
      retention!.synonyms.map((s) => [s.name, s.source]),
      [
        ['retention.ms', ConfigSource.TOPIC_CONFIG],
        ['log.retention.ms', ConfigSource.STATIC_BROKER_CONFIG],
        ['log.retention.hours', ConfigSource.DEFAULT_CONFIG],
      ],
    );
    const [segment] = describeTopicConfig({}, broker, ['segment.bytes'], false);
    assert.equal(segment!.source, ConfigSource.DEFAULT_CONFIG);
    const [inherited] = describeTopicConfig({}, broker, ['retention.ms'], false);
    assert.equal(inherited!.value, '5000');
    assert.equal(inherited!.source, ConfigSource.STATIC_BROKER_CONFIG);
  });

  it('validates names and values as CreateTopics needs (INVALID_CONFIG)', () => {
    assert.throws(() => validateTopicConfig('retention.mss', '1'), /Unknown topic config name: retention\.mss/);
    assert.throws(() => validateTopicConfig('min.insync.replicas', '0'), /at least 1/);
    assert.throws(() => validateTopicConfig('message.timestamp.type', 'Now'), /CreateTime, LogAppendTime/);
    assert.throws(() => validateTopicConfig('min.cleanable.dirty.ratio', '1.5'), /no more than 1/);
    validateTopicConfig('cleanup.policy', 'compact,delete');
    validateTopicConfig('retention.ms', '-1');
  });
});

describe('configuration sources', () => {
  it('reads the java.util.Properties format', () => {
    const p = parseProperties(
      ['# comment', '! also a comment', '  node.id = 5', 'log.dirs:/a,\\', '   /b', 'key\\=with\\=equals=v', 'spaced value here', ''].join(
        '\n',
      ),
    );
    assert.equal(p.get('node.id'), '5');
    assert.equal(p.get('log.dirs'), '/a,/b');
    assert.equal(p.get('key=with=equals'), 'v');
    assert.equal(p.get('spaced'), 'value here');
  });

  it('maps SLUICE_* environment variables to property names', () => {
    assert.equal(envNameToProperty('SLUICE_LOG_RETENTION_MS'), 'log.retention.ms');
    assert.equal(envNameToProperty('SLUICE_LOG_LEVEL'), 'log.level');
    assert.equal(envNameToProperty('SLUICE_A__B___C'), 'a_b-c');
    assert.equal(envNameToProperty('PATH'), null);
    assert.deepEqual([...propertiesFromEnv({ SLUICE_NUM_PARTITIONS: '4', HOME: '/x' })], [['num.partitions', '4']]);
  });

  it('splits --override at the first =', () => {
    assert.deepEqual(parseOverride('listeners=PLAINTEXT://h:1'), ['listeners', 'PLAINTEXT://h:1']);
    assert.deepEqual(parseOverride('a=b=c'), ['a', 'b=c']);
    assert.throws(() => parseOverride('novalue'), /key=value/);
  });

  it('lets later CLI flags win, as `npm start -- --port 19092 --data-dir /tmp/x` needs', () => {
    const c = configFromArgs(
      ['dev', '--host', '127.0.0.1', '--port', '9092', '--data-dir', './data', '--port', '19092', '--data-dir', '/tmp/x'],
      {},
    );
    assert.equal(c.listeners[0]!.port, 19092);
    assert.deepEqual(c.logDirs, ['/tmp/x']);
    assert.deepEqual(c.processRoles, ['broker', 'controller']);
    assert.equal(c.nodeId, 1);
  });

  it('gives --override precedence over SLUICE_* over the dev defaults', () => {
    const c = configFromArgs(['dev', '--port', '0', '--override', 'num.partitions=4'], {
      SLUICE_NUM_PARTITIONS: '3',
      SLUICE_DEFAULT_REPLICATION_FACTOR: '1',
      SLUICE_OFFSETS_TOPIC_NUM_PARTITIONS: '5',
    });
    assert.equal(c.getInt('num.partitions'), 4);
    assert.equal(c.getInt('offsets.topic.num.partitions'), 5);
    assert.equal(c.getInt('offsets.topic.replication.factor'), 1);
  });
});
