/**
 * Authentication over every secured listener with real clients, against Sluice and against
 * Apache Kafka started from the same server.properties (test/helpers/secured-brokers.ts):
 * SASL/PLAIN with kafkajs; SCRAM credentials made by Kafka's kafka-configs and used by
 * kafkajs, kcat, confluent-kafka-python and Kafka's console clients; mTLS on the SSL listener;
 * OAUTHBEARER with unsecured JWTs from librdkafka and kafkajs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestPki, type TestCert, type TestPki } from '../../helpers/certs.ts';
import { ADMIN, ALICE, againstEachSecuredBroker, type User } from '../../helpers/secured-brokers.ts';
import { eventually } from '../../helpers/wait.ts';
import {
  confluentRoundTrip,
  consoleRoundTrip,
  createTopic,
  javaClientProperties,
  javaPlain,
  javaScram,
  kafkaTool,
  kafkajsClient,
  kafkajsListTopics,
  kafkajsRoundTrip,
  kcatLibrdkafkaVersion,
  kcatMetadata,
  librdkafkaScramWorks,
  confluentLibrdkafkaVersion,
  kcatRoundTrip,
  plain,
  refusal,
  requireConfluentKafka,
  requireJava,
  requireKcat,
  tlsOptions,
  unsecuredJwt,
} from './clients.ts';

const CAROL: User = { username: 'carol', password: 'carol-secret' };
const CAROL_WRONG: User = { username: 'carol', password: 'not-carol-secret' };
const ALICE_WRONG: User = { username: ALICE.username, password: 'not-alice-secret' };

const values = (prefix: string, count = 10): string[] => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

/** Kafka's answer to a refused PLAIN exchange (PlainSaslServer). */
const PLAIN_REFUSED = 'Authentication failed: Invalid username or password';
/** Kafka's answer to any refused SCRAM exchange: an unknown user, a wrong proof (SaslServerAuthenticator). */
const scramRefused = (mechanism: string) =>
  `Authentication failed during authentication due to invalid credentials with SASL mechanism ${mechanism}`;

againstEachSecuredBroker('authentication', (broker) => {
  let dir = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-authentication-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('SASL/PLAIN on SASL_PLAINTEXT', () => {
    const topic = 'plain-alice';

    it('kafkajs authenticated as alice creates a topic, produces 10 records and reads them back', async () => {
      const kafka = kafkajsClient(broker().endpoints.SASL_PLAINTEXT, { sasl: plain(ALICE) });
      const admin = kafka.admin();
      await admin.connect();
      try {
        assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true }), true);
      } finally {
        await admin.disconnect();
      }
      assert.deepEqual(await kafkajsRoundTrip(kafka, topic, values('alice')), values('alice'));
    });

    it('a wrong password is refused as a failed authentication, and alice is still served', async () => {
      const message = await refusal(
        'a wrong PLAIN password',
        kafkajsListTopics(kafkajsClient(broker().endpoints.SASL_PLAINTEXT, { sasl: plain(ALICE_WRONG) })),
      );
      assert.equal(message, `SASL PLAIN authentication failed: ${PLAIN_REFUSED}`);
      assert.ok((await kafkajsListTopics(kafkajsClient(broker().endpoints.SASL_PLAINTEXT, { sasl: plain(ALICE) }))).includes(topic));
    });

    it('a client that does not authenticate cannot list topics on the SASL listener', async () => {
      await refusal('a client without SASL', kafkajsListTopics(kafkajsClient(broker().endpoints.SASL_PLAINTEXT, {})));
    });
  });

  describe('SCRAM credentials made by kafka-configs', () => {
    let adminConfig = '';
    const configs = (...args: string[]) =>
      kafkaTool('kafka.admin.ConfigCommand', [
        '--bootstrap-server',
        broker().endpoints.SASL_PLAINTEXT,
        '--command-config',
        adminConfig,
        ...args,
        '--entity-type',
        'users',
        '--entity-name',
        CAROL.username,
      ]);
    /** The mechanisms kafka-configs describes for carol; Kafka lists them in no set order. */
    const describeCarol = async () => {
      const described = await configs('--describe');
      assert.equal(described.code, 0, described.stderr);
      const prefix = `SCRAM credential configs for user-principal '${CAROL.username}' are `;
      const line = described.stdout.trim();
      assert.ok(line.startsWith(prefix), line);
      return line.slice(prefix.length).split(', ').sort();
    };
    const scram = (mechanism: string, user: User) =>
      kafkajsClient(broker().endpoints.SASL_PLAINTEXT, {
        sasl:
          mechanism === 'SCRAM-SHA-256'
            ? { mechanism: 'scram-sha-256', username: user.username, password: user.password }
            : { mechanism: 'scram-sha-512', username: user.username, password: user.password },
      });
    const saslSsl = (mechanism: string, user: User): Record<string, string> => ({
      'bootstrap.servers': broker().endpoints.SASL_SSL,
      'security.protocol': 'SASL_SSL',
      'sasl.mechanisms': mechanism,
      'sasl.username': user.username,
      'sasl.password': user.password,
      'ssl.ca.location': broker().pki.caCert,
    });
    const javaSaslSsl = (user: User) =>
      javaClientProperties(dir, `scram-${user.password}`, {
        'security.protocol': 'SASL_SSL',
        ...javaScram('SCRAM-SHA-256', user),
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.location': broker().pki.caCert,
      });

    before(async function () {
      requireJava(this);
      adminConfig = await javaClientProperties(dir, 'admin', { 'security.protocol': 'SASL_PLAINTEXT', ...javaPlain(ADMIN) });
    });

    it('kafka-configs authenticated as admin with PLAIN creates SCRAM-SHA-256 and SCRAM-SHA-512 credentials and describes them', async () => {
      // One AlterUserScramCredentials request may change a user once only: both mechanisms in one command are refused.
      const both = await configs(
        '--alter',
        '--add-config',
        `SCRAM-SHA-256=[iterations=8192,password=${CAROL.password}],SCRAM-SHA-512=[password=${CAROL.password}]`,
      );
      assert.notEqual(both.code, 0);
      assert.match(both.stdout + both.stderr, /DuplicateResourceException: A user credential cannot be altered twice in the same request/);
      for (const credential of [
        `SCRAM-SHA-256=[iterations=8192,password=${CAROL.password}]`,
        `SCRAM-SHA-512=[password=${CAROL.password}]`,
      ]) {
        const altered = await configs('--alter', '--add-config', credential);
        assert.equal(altered.code, 0, altered.stderr);
        assert.equal(altered.stdout.trim(), `Completed updating config for user ${CAROL.username}.`);
      }
      // The brokers learn the credentials from the metadata log, a moment after the controller wrote them.
      await eventually(
        'carol can authenticate',
        () =>
          kafkajsListTopics(scram('SCRAM-SHA-256', CAROL)).then(
            () => true,
            () => false,
          ),
        15_000,
      );
      assert.deepEqual(await describeCarol(), ['SCRAM-SHA-256=iterations=8192', 'SCRAM-SHA-512=iterations=4096']);
    });

    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512']) {
      it(`kafkajs ${mechanism} on SASL_PLAINTEXT produces and consumes as carol; a wrong password or an unknown user is refused`, async () => {
        const topic = `kafkajs-${mechanism.toLowerCase()}`;
        await createTopic(broker(), ADMIN, topic);
        assert.deepEqual(await kafkajsRoundTrip(scram(mechanism, CAROL), topic, values(mechanism)), values(mechanism));
        const kafkajsMechanism = mechanism.replace('SCRAM-SHA-', 'SCRAM SHA');
        for (const user of [CAROL_WRONG, { username: 'nobody', password: CAROL.password }]) {
          const message = await refusal(`${mechanism} as ${user.username}/${user.password}`, kafkajsListTopics(scram(mechanism, user)));
          assert.equal(message, `SASL ${kafkajsMechanism} authentication failed: ${scramRefused(mechanism)}`);
        }
      });
    }

    // librdkafka before 2.6.1 cannot authenticate with SCRAM to Kafka 4 (librdkafkaScramWorks): there both brokers must refuse it alike.
    // scripts/install-test-clients.sh gives kcat and confluent-kafka-python a newer one, which CI requires (clients.ts).
    it('kcat SCRAM-SHA-256 on SASL_SSL produces and consumes as carol; a wrong password is refused', async function () {
      requireKcat(this);
      const topic = 'kcat-scram-sha-256';
      await createTopic(broker(), ADMIN, topic);
      const roundTrip = await kcatRoundTrip(saslSsl('SCRAM-SHA-256', CAROL), topic, values('kcat'));
      if (librdkafkaScramWorks(kcatLibrdkafkaVersion())) {
        assert.deepEqual(roundTrip.consumed, values('kcat'), roundTrip.stderr);
      } else {
        assert.deepEqual(roundTrip.consumed, []);
        assert.ok(roundTrip.stderr.includes(`SASL authentication error: ${scramRefused('SCRAM-SHA-256')}`), roundTrip.stderr);
      }
      const refused = await kcatMetadata(saslSsl('SCRAM-SHA-256', CAROL_WRONG));
      assert.notEqual(refused.code, 0);
      assert.ok(refused.stderr.includes(`SASL authentication error: ${scramRefused('SCRAM-SHA-256')}`), refused.stderr);
    });

    it('confluent-kafka-python SCRAM-SHA-512 on SASL_SSL produces and consumes as carol; a wrong password is refused', async function () {
      requireConfluentKafka(this);
      const topic = 'confluent-scram-sha-512';
      await createTopic(broker(), ADMIN, topic);
      const roundTrip = await confluentRoundTrip(saslSsl('SCRAM-SHA-512', CAROL), topic, values('confluent'));
      if (librdkafkaScramWorks(confluentLibrdkafkaVersion())) {
        assert.deepEqual(roundTrip, { delivered: 10, consumed: values('confluent'), errors: [] });
      } else {
        assert.equal(roundTrip.delivered, 0);
        assert.ok(
          roundTrip.errors[0]?.includes(`SASL authentication error: ${scramRefused('SCRAM-SHA-512')}`),
          roundTrip.errors.join('\n'),
        );
      }
      const refused = await confluentRoundTrip(saslSsl('SCRAM-SHA-512', CAROL_WRONG), topic, values('refused'));
      assert.equal(refused.delivered, 0);
      assert.ok(refused.errors[0]?.startsWith('_AUTHENTICATION: '), refused.errors.join('\n'));
      assert.ok(refused.errors[0]?.includes(`SASL authentication error: ${scramRefused('SCRAM-SHA-512')}`), refused.errors.join('\n'));
    });

    it("Kafka's console producer and consumer (SCRAM-SHA-256 on SASL_SSL, PEM truststore) produce and consume as carol; a wrong password is refused", async () => {
      const topic = 'java-scram-sha-256';
      await createTopic(broker(), ADMIN, topic);
      const roundTrip = await consoleRoundTrip(broker().endpoints.SASL_SSL, await javaSaslSsl(CAROL), topic, values('java'));
      assert.deepEqual(roundTrip.consumed, values('java'), `${roundTrip.producer.stderr}\n${roundTrip.consumer.stderr}`);
      const refused = await consoleRoundTrip(broker().endpoints.SASL_SSL, await javaSaslSsl(CAROL_WRONG), topic, values('refused'));
      assert.deepEqual(refused.consumed, []);
      assert.ok(refused.consumer.stderr.includes(`SaslAuthenticationException: ${scramRefused('SCRAM-SHA-256')}`), refused.consumer.stderr);
    });

    it('deleting the SCRAM-SHA-512 credential refuses SCRAM-SHA-512 while SCRAM-SHA-256 still works', async () => {
      const altered = await configs('--alter', '--delete-config', 'SCRAM-SHA-512');
      assert.equal(altered.code, 0, altered.stderr);
      let refusedWith = '';
      await eventually(
        'SCRAM-SHA-512 to be refused',
        () =>
          kafkajsListTopics(scram('SCRAM-SHA-512', CAROL)).then(
            () => false,
            (error: Error) => {
              refusedWith = error.message;
              return true;
            },
          ),
        15_000,
      );
      await createTopic(broker(), ADMIN, 'kafkajs-after-deletion');
      assert.deepEqual(await kafkajsRoundTrip(scram('SCRAM-SHA-256', CAROL), 'kafkajs-after-deletion', values('after')), values('after'));
      assert.equal(refusedWith, `SASL SCRAM SHA512 authentication failed: ${scramRefused('SCRAM-SHA-512')}`);
      assert.deepEqual(await describeCarol(), ['SCRAM-SHA-256=iterations=8192']);
    });
  });

  describe('mTLS on the SSL listener (ssl.client.auth=required)', () => {
    let dave: TestCert;
    let otherPki: TestPki;
    let stranger: TestCert;

    before(async () => {
      dave = await broker().pki.client('dave');
      otherPki = await createTestPki();
      stranger = await otherPki.client('dave');
    });

    after(async () => {
      await otherPki?.remove();
    });

    const librdkafkaSsl = (ca: string, cert?: TestCert): Record<string, string> => ({
      'bootstrap.servers': broker().endpoints.SSL,
      'security.protocol': 'SSL',
      'ssl.ca.location': ca,
      ...(cert === undefined ? {} : { 'ssl.certificate.location': cert.cert, 'ssl.key.location': cert.key }),
    });

    it('kafkajs with a client certificate produces and consumes; without one, or trusting another CA, it is refused', async () => {
      const topic = 'ssl-kafkajs';
      await createTopic(broker(), ADMIN, topic);
      const at = broker().endpoints.SSL;
      assert.deepEqual(
        await kafkajsRoundTrip(kafkajsClient(at, { ssl: tlsOptions(broker().pki.caCert, dave) }), topic, values('dave')),
        values('dave'),
      );
      await refusal('kafkajs without a client certificate', kafkajsListTopics(kafkajsClient(at, { ssl: tlsOptions(broker().pki.caCert) })));
      const message = await refusal(
        'kafkajs trusting another CA',
        kafkajsListTopics(kafkajsClient(at, { ssl: tlsOptions(otherPki.caCert, stranger) })),
      );
      assert.match(message, /self[- ]signed certificate|unable to verify|certificate/i);
    });

    it('kcat with a client certificate produces and consumes; without one, or trusting another CA, it is refused', async function () {
      requireKcat(this);
      const topic = 'ssl-kcat';
      await createTopic(broker(), ADMIN, topic);
      const roundTrip = await kcatRoundTrip(librdkafkaSsl(broker().pki.caCert, dave), topic, values('kcat'));
      assert.deepEqual(roundTrip.consumed, values('kcat'), roundTrip.stderr);
      for (const refusedConfig of [librdkafkaSsl(broker().pki.caCert), librdkafkaSsl(otherPki.caCert, stranger)]) {
        const refused = await kcatMetadata(refusedConfig);
        assert.notEqual(refused.code, 0, refused.stdout);
        assert.match(refused.stderr, /SSL|handshake|Disconnected/i);
      }
    });

    it('confluent-kafka-python with a client certificate produces and consumes; without one, or trusting another CA, it is refused', async function () {
      requireConfluentKafka(this);
      const topic = 'ssl-confluent';
      await createTopic(broker(), ADMIN, topic);
      const roundTrip = await confluentRoundTrip(librdkafkaSsl(broker().pki.caCert, dave), topic, values('confluent'));
      assert.deepEqual(roundTrip, { delivered: 10, consumed: values('confluent'), errors: [] });
      for (const refusedConfig of [librdkafkaSsl(broker().pki.caCert), librdkafkaSsl(otherPki.caCert, stranger)]) {
        const refused = await confluentRoundTrip(refusedConfig, topic, values('refused'));
        assert.equal(refused.delivered, 0);
        assert.notDeepEqual(refused.errors, []);
      }
    });
  });

  describe('OAUTHBEARER on SASL_PLAINTEXT (unsecured JWTs)', () => {
    it("confluent-kafka-python with librdkafka's unsecured JWT for erin produces and consumes", async function () {
      requireConfluentKafka(this);
      const topic = 'oauthbearer-confluent';
      await createTopic(broker(), ADMIN, topic);
      const roundTrip = await confluentRoundTrip(
        {
          'bootstrap.servers': broker().endpoints.SASL_PLAINTEXT,
          'security.protocol': 'SASL_PLAINTEXT',
          'sasl.mechanism': 'OAUTHBEARER',
          'enable.sasl.oauthbearer.unsecure.jwt': 'true',
          'sasl.oauthbearer.config': 'principal=erin',
        },
        topic,
        values('erin'),
      );
      assert.deepEqual(roundTrip, { delivered: 10, consumed: values('erin'), errors: [] });
    });

    it('kafkajs with an unsecured JWT produces and consumes; an expired token is refused', async () => {
      const topic = 'oauthbearer-kafkajs';
      await createTopic(broker(), ADMIN, topic);
      const bearer = (lifetimeSeconds: number) =>
        kafkajsClient(broker().endpoints.SASL_PLAINTEXT, {
          sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: unsecuredJwt('erin', lifetimeSeconds) }) },
        });
      assert.deepEqual(await kafkajsRoundTrip(bearer(3600), topic, values('erin')), values('erin'));
      // kafkajs reports this refusal as a lost connection, not as a SASL error, so only the refusal is asserted.
      await refusal('an expired token', kafkajsListTopics(bearer(-60)));
    });
  });
});
