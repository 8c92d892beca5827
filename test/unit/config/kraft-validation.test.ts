import assert from 'node:assert/strict';
import { BrokerConfig, ConfigException } from '../../../src/config/index.ts';
import { configFromArgs } from '../../../src/cli/args.ts';

const COMBINED: Record<string, string> = {
  'process.roles': 'broker,controller',
  'node.id': '1',
  'controller.quorum.voters': '1@127.0.0.1:19092,2@127.0.0.1:19093,3@127.0.0.1:19094',
  listeners: 'PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092',
  'controller.listener.names': 'CONTROLLER',
};

const BROKER_ONLY: Record<string, string> = {
  'process.roles': 'broker',
  'node.id': '4',
  'controller.quorum.voters': '1@127.0.0.1:19092,2@127.0.0.1:19093,3@127.0.0.1:19094',
  listeners: 'PLAINTEXT://127.0.0.1:9095',
  'controller.listener.names': 'CONTROLLER',
};

const CONTROLLER_ONLY: Record<string, string> = {
  'process.roles': 'controller',
  'node.id': '1',
  'controller.quorum.voters': '1@127.0.0.1:19092',
  listeners: 'CONTROLLER://127.0.0.1:19092',
  'controller.listener.names': 'CONTROLLER',
};

function config(base: Record<string, string>, changes: Record<string, string | null> = {}): BrokerConfig {
  const props = new Map(Object.entries(base));
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) props.delete(k);
    else props.set(k, v);
  }
  return new BrokerConfig({ file: props });
}

function rejects(base: Record<string, string>, changes: Record<string, string | null>, message: string, configName?: string): void {
  assert.throws(
    () => config(base, changes),
    (e: unknown) => {
      assert.ok(e instanceof ConfigException, `a ConfigException, got ${String(e)}`);
      assert.equal(e.message, message);
      if (configName !== undefined) assert.equal(e.configName, configName);
      return true;
    },
  );
}

describe("KRaft configuration rules (Kafka's KafkaConfig.validateValues)", () => {
  it('accepts a combined node, a broker-only node and a controller-only node of one cluster', () => {
    const combined = config(COMBINED);
    assert.deepEqual(
      combined.listeners.map((l) => [l.name, l.port, l.securityProtocol]),
      [
        ['PLAINTEXT', 9092, 'PLAINTEXT'],
        ['CONTROLLER', 19092, 'PLAINTEXT'],
      ],
    );
    assert.deepEqual(
      combined.advertisedListeners.map((l) => l.name),
      ['PLAINTEXT'],
    );
    assert.equal(combined.interBrokerListenerName, 'PLAINTEXT');
    assert.doesNotThrow(() => config(BROKER_ONLY));
    assert.doesNotThrow(() => config(CONTROLLER_ONLY));
  });

  it('requires node.id with process.roles', () => {
    rejects(
      COMBINED,
      { 'node.id': null },
      'Missing configuration `node.id` which is required when `process.roles` is defined (i.e. when running in KRaft mode).',
      'node.id',
    );
    rejects(COMBINED, { 'broker.id': '2' }, 'You must set `node.id` to the same value as `broker.id`.');
    assert.equal(config(COMBINED, { 'node.id': null, 'broker.id': '1' }).nodeId, 1);
  });

  it('requires voters or bootstrap servers', () => {
    rejects(
      BROKER_ONLY,
      { 'controller.quorum.voters': null },
      'If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers ' +
        'or controller.quorum.voters must contain a parseable set of controllers.',
    );
  });

  it("requires a controller's node id among the voters, and a broker-only node's outside them", () => {
    rejects(
      COMBINED,
      { 'node.id': '5' },
      "If process.roles contains the 'controller' role, the node id 5 must be included in the set of voters controller.quorum.voters=Set(1, 2, 3)",
      'controller.quorum.voters',
    );
    rejects(
      BROKER_ONLY,
      { 'node.id': '2' },
      "If process.roles contains just the 'broker' role, the node id 2 must not be included in the set of voters controller.quorum.voters=Set(1, 2, 3)",
    );
  });

  it("requires a controller's listener in listeners", () => {
    rejects(
      COMBINED,
      { listeners: 'PLAINTEXT://127.0.0.1:9092' },
      "controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role",
    );
    rejects(
      COMBINED,
      { 'controller.listener.names': null, listeners: 'PLAINTEXT://127.0.0.1:9092' },
      "controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role",
    );
    rejects(
      COMBINED,
      {
        'controller.listener.names': 'CONTROLLER,OTHER',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OTHER:PLAINTEXT',
      },
      "controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role",
    );
  });

  it('lets a sole-voter combined node (sluice dev) run without a controller listener', () => {
    const dev = configFromArgs(['dev', '--port', '9092', '--data-dir', '/tmp/x'], {});
    assert.deepEqual(dev.controllerListenerNames, []);
    assert.deepEqual(
      dev.quorumVoters.map((v) => v.nodeId),
      [1],
    );
    rejects(
      CONTROLLER_ONLY,
      { 'controller.listener.names': null, listeners: 'PLAINTEXT://127.0.0.1:19092' },
      'The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller',
    );
  });

  it('keeps the controller listener out of a broker-only node', () => {
    rejects(
      BROKER_ONLY,
      { listeners: 'PLAINTEXT://127.0.0.1:9095,CONTROLLER://127.0.0.1:19095' },
      "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role",
      'listeners',
    );
    rejects(
      BROKER_ONLY,
      { 'controller.listener.names': null },
      'controller.listener.names must contain at least one value when running KRaft with just the broker role',
    );
    rejects(
      BROKER_ONLY,
      { 'advertised.listeners': 'PLAINTEXT://127.0.0.1:9095,CONTROLLER://127.0.0.1:19092' },
      'The advertised.listeners config must not contain KRaft controller listeners from controller.listener.names when ' +
        'process.roles contains the broker role because Kafka clients that send requests via advertised listeners do not ' +
        'send requests to KRaft controllers -- they only send requests to KRaft brokers.',
    );
    rejects(
      BROKER_ONLY,
      { 'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT' },
      'Controller listener with name CONTROLLER defined in controller.listener.names not found in listener.security.protocol.map ' +
        '(an explicit security mapping for each controller listener is required if listener.security.protocol.map is non-empty, ' +
        'or if there are security protocols other than PLAINTEXT in use)',
    );
  });

  it('keeps broker listeners out of a controller-only node', () => {
    rejects(
      CONTROLLER_ONLY,
      { listeners: 'CONTROLLER://127.0.0.1:19092,PLAINTEXT://127.0.0.1:9092' },
      'The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller',
    );
    rejects(
      CONTROLLER_ONLY,
      { 'inter.broker.listener.name': 'CONTROLLER' },
      'controller.listener.names must not contain an explicitly set inter.broker.listener.name configuration value when process.roles=controller',
    );
  });

  it('lets a controller start with only bootstrap servers, to be added to the voters later (KIP-853)', () => {
    const joining = config(CONTROLLER_ONLY, { 'controller.quorum.voters': null, 'controller.quorum.bootstrap.servers': '127.0.0.1:19092' });
    assert.deepEqual(joining.quorumVoters, []);
    assert.deepEqual(joining.quorumBootstrapServers, [{ host: '127.0.0.1', port: 19092 }]);
  });

  it('requires the inter-broker listener among the advertised broker listeners', () => {
    const internal = config(COMBINED, {
      listeners: 'INTERNAL://127.0.0.1:9093,EXTERNAL://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092',
      'listener.security.protocol.map': 'INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name': 'internal',
    });
    assert.equal(internal.interBrokerListenerName, 'INTERNAL');
    rejects(
      COMBINED,
      {
        listeners: 'EXTERNAL://127.0.0.1:9092,CONTROLLER://127.0.0.1:19092',
        'listener.security.protocol.map': 'EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT',
      },
      'inter.broker.listener.name must be a listener name defined in advertised.listeners. ' +
        'The valid options based on currently configured listeners are EXTERNAL',
      'inter.broker.listener.name',
    );
    rejects(
      COMBINED,
      { 'inter.broker.listener.name': 'REPLICATION' },
      'Listener with name REPLICATION defined in inter.broker.listener.name not found in listener.security.protocol.map.',
    );
    rejects(
      COMBINED,
      { 'inter.broker.listener.name': 'PLAINTEXT', 'security.inter.broker.protocol': 'PLAINTEXT' },
      'Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.',
    );
    rejects(
      COMBINED,
      {
        'advertised.listeners': 'PLAINTEXT://127.0.0.1:9092,OTHER://127.0.0.1:9099',
        'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,OTHER:PLAINTEXT',
      },
      'advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. ' +
        'Found PLAINTEXT,OTHER. The valid options based on the current configuration are PLAINTEXT,CONTROLLER',
    );
    rejects(
      COMBINED,
      { listeners: 'CONTROLLER://127.0.0.1:19092' },
      'There must be at least one broker advertised listener. Perhaps all listeners appear in controller.listener.names?',
    );
  });

  it('parses listener.security.protocol.map as Kafka does', () => {
    const c = config(COMBINED, {
      listeners: 'plaintext://127.0.0.1:9092,controller://127.0.0.1:19092',
      'listener.security.protocol.map': 'plaintext:plaintext, controller:PLAINTEXT',
    });
    assert.deepEqual(
      [...c.securityProtocolMap],
      [
        ['PLAINTEXT', 'PLAINTEXT'],
        ['CONTROLLER', 'PLAINTEXT'],
      ],
    );
    rejects(
      COMBINED,
      { 'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:TLS' },
      'Invalid security protocol `TLS` defined in listener.security.protocol.map',
    );
    rejects(
      COMBINED,
      { 'listener.security.protocol.map': 'PLAINTEXT' },
      "Error parsing configuration property 'listener.security.protocol.map': expected {listener}:{security protocol}, got 'PLAINTEXT'",
    );
    // An explicit map must name the controller listener: only the default map adds it as PLAINTEXT.
    assert.throws(
      () => config(COMBINED, { 'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT' }),
      /No security protocol defined for listener CONTROLLER/,
    );
  });

  it('accepts controller.quorum.bootstrap.servers (KIP-853) for a broker', () => {
    const c = config(BROKER_ONLY, {
      'controller.quorum.voters': null,
      'controller.quorum.bootstrap.servers': '127.0.0.1:19092, [::1]:19093,controller-3:19094',
    });
    assert.deepEqual(c.quorumVoters, []);
    assert.deepEqual(c.quorumBootstrapServers, [
      { host: '127.0.0.1', port: 19092 },
      { host: '::1', port: 19093 },
      { host: 'controller-3', port: 19094 },
    ]);
    rejects(
      BROKER_ONLY,
      { 'controller.quorum.voters': null, 'controller.quorum.bootstrap.servers': 'controller-1' },
      'Failed to parse host name from entry controller-1 for the configuration controller.quorum.bootstrap.servers',
    );
    rejects(
      BROKER_ONLY,
      { 'controller.quorum.voters': null, 'controller.quorum.bootstrap.servers': 'controller-1:' },
      'Failed to parse port from entry controller-1: for the configuration controller.quorum.bootstrap.servers',
    );
  });

  it('requires process.roles for `sluice start`, as Kafka 4 does', () => {
    assert.throws(
      () => configFromArgs(['start', '--config', '/dev/null'], {}),
      (e: unknown) =>
        e instanceof ConfigException && e.message === 'Missing required configuration "process.roles" which has no default value.',
    );
  });
});
