/**
 * `sluice` against a Sluice node's secured listeners (test/helpers/secured-brokers.ts) with
 * `--command-config` files of Java client properties, the same files Kafka's own tools read:
 * PLAIN over SASL_SSL trusting the test CA, SCRAM-SHA-512 over SASL_PLAINTEXT for a user
 * kafka-configs creates, mTLS on the SSL listener, and the refusals a wrong password or an
 * untrusted certificate meet. Each command runs as a user runs it: the `sluice` binary.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunResult, run } from '../../../compat/support/process.ts';
import { ADMIN, ALICE, startSecuredSluice, type SecuredBroker, type User } from '../../helpers/secured-brokers.ts';
import { sluiceCommand } from '../../helpers/sluice-cli.ts';
import { eventually } from '../../helpers/wait.ts';
import { javaClientProperties, kafkaTool, requireJava } from '../security/clients.ts';

const PLAIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule';
const SCRAM_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule';
const CAROL: User = { username: 'carol', password: 'carol-secret' };

/** Kafka's answer to a refused PLAIN exchange (PlainSaslServer). */
const PLAIN_REFUSED = 'Authentication failed: Invalid username or password';
/** Kafka's answer to a refused SCRAM exchange (SaslServerAuthenticator). */
const SCRAM_REFUSED = 'Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512';

function sluice(args: readonly string[], input = ''): Promise<RunResult> {
  const cmd = sluiceCommand(args);
  return run(cmd.command, cmd.args, { input, timeoutMs: 60_000 });
}

function ok(r: RunResult): string {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r.stdout;
}

const jaas = (module: string, user: User): string => `${module} required username="${user.username}" password="${user.password}";`;

describe('sluice --command-config against a secured Sluice node', function () {
  this.timeout(180_000);
  let broker: SecuredBroker;
  let dir = '';

  before(async () => {
    broker = await startSecuredSluice();
    dir = await mkdtemp(join(tmpdir(), 'sluice-command-config-'));
  });

  after(async () => {
    await broker?.stop();
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  const commandConfig = (name: string, properties: Record<string, string>): Promise<string> => javaClientProperties(dir, name, properties);

  const saslSsl = (mechanism: string, module: string, user: User) =>
    commandConfig(`sasl-ssl-${mechanism}-${user.username}-${user.password}`, {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': mechanism,
      'sasl.jaas.config': jaas(module, user),
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': broker.pki.caCert,
    });

  /** topics create and list, produce three records, consume them back (alone, then in a group), all through `endpoint` with `config`. */
  async function roundTrip(endpoint: string, config: string, topic: string): Promise<void> {
    const common = ['--bootstrap-server', endpoint, '--command-config', config];
    assert.equal(
      ok(await sluice(['topics', 'create', topic, '--partitions', '2', '--replication-factor', '1', ...common])),
      `Created topic ${topic}.\n`,
    );
    assert.ok(
      ok(await sluice(['topics', 'list', ...common]))
        .split('\n')
        .includes(topic),
    );
    const produced = await sluice(['produce', topic, '--key-separator', ':', ...common], 'k1:one\nk2:two\nk3:three\n');
    ok(produced);
    assert.match(produced.stderr, new RegExp(`Produced 3 records to topic ${topic}\\.`));
    const consumed = ok(await sluice(['consume', topic, '--print-key', '--key-separator', ':', ...common]));
    assert.deepEqual(
      consumed
        .split('\n')
        .filter((l) => l !== '')
        .sort(),
      ['k1:one', 'k2:two', 'k3:three'],
    );
    // As a member of a group: the coordinator's connection is secured the same way.
    const grouped = ok(await sluice(['consume', topic, '--group', `${topic}-readers`, ...common]));
    assert.equal(grouped.split('\n').filter((l) => l !== '').length, 3);
  }

  it('PLAIN over SASL_SSL, trusting the CA: topics create and list, produce and consume', async () => {
    await roundTrip(broker.endpoints.SASL_SSL, await saslSsl('PLAIN', PLAIN_MODULE, ALICE), 'plain-over-sasl-ssl');
  });

  it('SCRAM-SHA-512 over SASL_PLAINTEXT for a user kafka-configs creates with the same kind of file', async function () {
    requireJava(this);
    const admin = await commandConfig('admin', {
      'security.protocol': 'SASL_PLAINTEXT',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': jaas(PLAIN_MODULE, ADMIN),
    });
    const created = await kafkaTool('kafka.admin.ConfigCommand', [
      '--bootstrap-server',
      broker.endpoints.SASL_PLAINTEXT,
      '--command-config',
      admin,
      '--alter',
      '--add-config',
      `SCRAM-SHA-512=[password=${CAROL.password}]`,
      '--entity-type',
      'users',
      '--entity-name',
      CAROL.username,
    ]);
    assert.equal(created.code, 0, created.stderr);
    const scram = await commandConfig('carol', {
      'security.protocol': 'SASL_PLAINTEXT',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config': jaas(SCRAM_MODULE, CAROL),
    });
    // The broker learns the credential from the metadata log, a moment after the controller wrote it.
    await eventually(
      'carol can authenticate',
      async () =>
        (await sluice(['topics', 'list', '--bootstrap-server', broker.endpoints.SASL_PLAINTEXT, '--command-config', scram])).code === 0,
      20_000,
    );
    await roundTrip(broker.endpoints.SASL_PLAINTEXT, scram, 'scram-sha-512-over-sasl-plaintext');
    const wrong = await commandConfig('carol-wrong', {
      'security.protocol': 'SASL_PLAINTEXT',
      'sasl.mechanism': 'SCRAM-SHA-512',
      'sasl.jaas.config': jaas(SCRAM_MODULE, { username: CAROL.username, password: 'not-her-password' }),
    });
    const refused = await sluice(['topics', 'list', '--bootstrap-server', broker.endpoints.SASL_PLAINTEXT, '--command-config', wrong]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.ok(refused.stderr.includes(SCRAM_REFUSED), refused.stderr);
  });

  it('a wrong PLAIN password exits 1 with the broker’s authentication message', async () => {
    const config = await saslSsl('PLAIN', PLAIN_MODULE, { username: ALICE.username, password: 'not-alice-secret' });
    for (const args of [
      ['topics', 'list'],
      ['consume', 'plain-over-sasl-ssl'],
    ]) {
      const r = await sluice([...args, '--bootstrap-server', broker.endpoints.SASL_SSL, '--command-config', config]);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stdout, '');
      assert.ok(r.stderr.startsWith('Error: ') && r.stderr.includes(PLAIN_REFUSED), r.stderr);
    }
  });

  it('mTLS on the SSL listener with a PKCS12 key store', async () => {
    const client = await broker.pki.client('sluice-cli');
    const config = await commandConfig('mtls', {
      'security.protocol': 'SSL',
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': broker.pki.caCert,
      'ssl.keystore.type': 'PKCS12',
      'ssl.keystore.location': client.p12,
      'ssl.keystore.password': client.p12Password,
    });
    ok(await sluice(['topics', 'list', '--bootstrap-server', broker.endpoints.SSL, '--command-config', config]));
  });

  it('refuses a server certificate the trust store does not vouch for, and a listener spoken to without its protocol', async () => {
    const untrusting = await commandConfig('no-truststore', {
      'security.protocol': 'SASL_SSL',
      'sasl.mechanism': 'PLAIN',
      'sasl.jaas.config': jaas(PLAIN_MODULE, ALICE),
    });
    const untrusted = await sluice(['topics', 'list', '--bootstrap-server', broker.endpoints.SASL_SSL, '--command-config', untrusting]);
    assert.equal(untrusted.code, 1, untrusted.stderr);
    assert.match(untrusted.stderr, /^Error: cannot reach the cluster at .*certificate/);
    const unauthenticated = await sluice(['topics', 'list', '--bootstrap-server', broker.endpoints.SASL_PLAINTEXT]);
    assert.equal(unauthenticated.code, 1, unauthenticated.stderr);
    assert.match(unauthenticated.stderr, /^Error: cannot reach the cluster at /);
  });
});
