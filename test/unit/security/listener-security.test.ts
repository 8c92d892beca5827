import assert from 'node:assert/strict';
import { BrokerConfig } from '../../../src/config/index.ts';
import { ConfigException } from '../../../src/config/types.ts';
import { controllerClientSecurity, interBrokerClientSecurity, listenerSecurity } from '../../../src/security/listener-security.ts';

const PLAIN_JAAS =
  'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-pw";';

function config(extra: Record<string, string>): BrokerConfig {
  return new BrokerConfig({
    file: new Map(
      Object.entries({
        'process.roles': 'broker,controller',
        'node.id': '1',
        'controller.quorum.voters': '1@127.0.0.1:9093',
        listeners: 'SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093',
        'controller.listener.names': 'CONTROLLER',
        'inter.broker.listener.name': 'SASL_PLAINTEXT',
        'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT',
        'sasl.mechanism.inter.broker.protocol': 'PLAIN',
        'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256',
        'listener.name.sasl_plaintext.plain.sasl.jaas.config': PLAIN_JAAS,
        'log.dirs': '/tmp/unused',
        ...extra,
      }),
    ),
  });
}

const services = { scramCredential: () => undefined, nowMs: () => 0 };
const saslListener = (c: BrokerConfig) => listenerSecurity(c, c.listeners.find((l) => l.name === 'SASL_PLAINTEXT')!, services);

function refusedFor(reason: RegExp, build: () => unknown): void {
  assert.throws(build, (err: unknown) => err instanceof ConfigException && reason.test(err.message));
}

describe('listener security from the broker configuration', () => {
  it('offers the enabled mechanisms on a SASL listener, reading its listener-prefixed JAAS entry', () => {
    const security = saslListener(config({}));
    assert.deepEqual(security.sasl?.mechanisms, ['PLAIN', 'SCRAM-SHA-256']);
    assert.equal(security.tls, null);
    assert.equal(security.sasl?.exchange('PLAIN').mechanism, 'PLAIN');
  });

  it('takes listener.name.<listener>.sasl.enabled.mechanisms over the broker-wide value', () => {
    const security = saslListener(config({ 'listener.name.sasl_plaintext.sasl.enabled.mechanisms': 'SCRAM-SHA-512' }));
    assert.deepEqual(security.sasl?.mechanisms, ['SCRAM-SHA-512']);
  });

  it('refuses what it cannot serve, naming the config: GSSAPI, an unknown mechanism, PLAIN without its JAAS users', () => {
    refusedFor(/GSSAPI/, () => saslListener(config({ 'sasl.enabled.mechanisms': 'GSSAPI' })));
    refusedFor(/Unsupported SASL mechanism DIGEST-MD5/, () => saslListener(config({ 'sasl.enabled.mechanisms': 'DIGEST-MD5' })));
    refusedFor(/plain\.sasl\.jaas\.config/, () =>
      saslListener(
        config({
          'listener.name.sasl_plaintext.plain.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
        }),
      ),
    );
  });

  it('gives the broker its own PLAIN credentials from the inter-broker listener JAAS entry', () => {
    const security = interBrokerClientSecurity(config({}));
    assert.deepEqual(security.sasl, { mechanism: 'PLAIN', username: 'admin', password: 'admin-secret' });
    assert.equal(security.tls, undefined);
    assert.deepEqual(controllerClientSecurity(config({})), {});
  });

  it('refuses an inter-broker mechanism without credentials', () => {
    refusedFor(/scram-sha-256\.sasl\.jaas\.config/, () =>
      interBrokerClientSecurity(config({ 'sasl.mechanism.inter.broker.protocol': 'SCRAM-SHA-256' })),
    );
  });

  it('refuses a JKS keystore on a TLS listener, naming ssl.keystore.type', () => {
    const c = config({
      listeners: 'SSL://127.0.0.1:9094,SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093',
      'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL',
      'ssl.keystore.location': '/tmp/keystore.jks',
    });
    refusedFor(/JKS/, () => listenerSecurity(c, c.listeners.find((l) => l.name === 'SSL')!, services));
  });

  it('hides listener-prefixed JAAS entries in the configuration it logs', () => {
    assert.equal(config({}).explicitValues()['listener.name.sasl_plaintext.plain.sasl.jaas.config'], '[hidden]');
  });
});
