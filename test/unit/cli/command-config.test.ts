import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { connect, createServer, type ConnectionOptions, type Server, type TLSSocket } from 'node:tls';
import fc from 'fast-check';
import type { ClientSecurity } from '../../../src/client/connection.ts';
import { runApplyCommand } from '../../../src/cli/apply.ts';
import { runClusterCommand } from '../../../src/cli/cluster.ts';
import { COMMAND_CONFIG_NAMES, commandConfigSecurity, readCommandConfig } from '../../../src/cli/command-config.ts';
import { runConfigsCommand } from '../../../src/cli/configs.ts';
import { runConsumeCommand } from '../../../src/cli/consume.ts';
import { runDlqCommand } from '../../../src/cli/dlq.ts';
import { runGroupsCommand } from '../../../src/cli/groups.ts';
import { UsageError } from '../../../src/cli/output.ts';
import { runProduceCommand } from '../../../src/cli/produce.ts';
import { runTopicsCommand } from '../../../src/cli/topics.ts';
import { createTestPki, type TestPki } from '../../helpers/certs.ts';
import { runCaptured } from '../../helpers/cli-targets.ts';

const PLAIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule';
const SCRAM_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule';

const security = (properties: Record<string, string>): ClientSecurity => commandConfigSecurity(new Map(Object.entries(properties)));

/** A JAAS quoted string: backslash and double quote escaped, as Java's StreamTokenizer reads them. */
const quoted = (text: string): string => `"${text.replace(/[\\"]/g, '\\$&')}"`;

const jaas = (module: string, username: string, password: string): string =>
  `${module} required username=${quoted(username)} password=${quoted(password)};`;

const saslPlaintext = (mechanism: string, module = mechanism === 'PLAIN' ? PLAIN_MODULE : SCRAM_MODULE) => ({
  'security.protocol': 'SASL_PLAINTEXT',
  'sasl.mechanism': mechanism,
  'sasl.jaas.config': jaas(module, 'alice', 'alice-secret'),
});

/** Asserts a usage error whose message matches `message`. */
function refused(properties: Record<string, string>, message: RegExp): void {
  assert.throws(
    () => security(properties),
    (err: unknown) => err instanceof UsageError && message.test(err.message),
    `${JSON.stringify(properties)} should be refused with ${message}`,
  );
}

describe('--command-config client properties', () => {
  describe('security.protocol and SASL', () => {
    it('connects in plain text without a file setting, as a Java client does by default', () => {
      assert.deepEqual(security({}), {});
      assert.deepEqual(security({ 'security.protocol': 'PLAINTEXT' }), {});
    });

    it('reads security.protocol case-insensitively and refuses others with Kafka’s message', () => {
      assert.equal(security({ ...saslPlaintext('PLAIN'), 'security.protocol': ' sasl_plaintext ' }).sasl?.mechanism, 'PLAIN');
      refused(
        { 'security.protocol': 'TLS' },
        /^Invalid value TLS for configuration security\.protocol: String must be one of \(case insensitive\): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL$/,
      );
    });

    it('takes the username and password of the JAAS entry for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512', () => {
      for (const mechanism of ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']) {
        const built = security(saslPlaintext(mechanism));
        assert.deepEqual(built.sasl, { mechanism, username: 'alice', password: 'alice-secret' });
        assert.equal(built.tls, undefined, 'SASL_PLAINTEXT opens no TLS');
      }
    });

    it('reads any username and password back from a quoted JAAS option', () => {
      const text = fc.string({ unit: fc.constantFrom(...'abcXYZ019 _-=;:@."\\\'{}'.split('')), minLength: 1 });
      fc.assert(
        fc.property(text, text, fc.constantFrom(PLAIN_MODULE, SCRAM_MODULE), (username, password, module) => {
          const built = security({
            'security.protocol': 'SASL_PLAINTEXT',
            'sasl.mechanism': 'PLAIN',
            'sasl.jaas.config': jaas(module, username, password),
          });
          assert.deepEqual(built.sasl, { mechanism: 'PLAIN', username, password });
        }),
      );
    });

    it('lets either login module give the credentials of either mechanism, as Kafka’s client does', () => {
      assert.equal(security(saslPlaintext('SCRAM-SHA-512', PLAIN_MODULE)).sasl?.mechanism, 'SCRAM-SHA-512');
      assert.equal(security(saslPlaintext('PLAIN', SCRAM_MODULE)).sasl?.mechanism, 'PLAIN');
    });

    it('refuses the mechanisms it cannot authenticate with, naming them', () => {
      refused(
        saslPlaintext('GSSAPI'),
        /^sasl\.mechanism GSSAPI is not supported: sluice authenticates with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512$/,
      );
      refused(saslPlaintext('OAUTHBEARER'), /^sasl\.mechanism OAUTHBEARER is not supported/);
      refused(saslPlaintext('plain'), /^sasl\.mechanism plain is not supported/);
      const { 'sasl.mechanism': _, ...withoutMechanism } = saslPlaintext('PLAIN');
      refused(withoutMechanism, /^sasl\.mechanism is not set, and Kafka's default GSSAPI is not supported/);
    });

    it('refuses a JAAS entry it cannot authenticate with', () => {
      const with_ = (value: string) => ({ ...saslPlaintext('PLAIN'), 'sasl.jaas.config': value });
      const { 'sasl.jaas.config': _, ...withoutJaas } = saslPlaintext('SCRAM-SHA-256');
      refused(
        withoutJaas,
        /^sasl\.jaas\.config is not set: SASL SCRAM-SHA-256 needs 'org\.apache\.kafka\.common\.security\.scram\.ScramLoginModule required/,
      );
      refused(
        with_(`${PLAIN_MODULE} required username="alice" password="x"`),
        /^sasl\.jaas\.config: JAAS config entry not terminated by semi-colon$/,
      );
      refused(
        with_('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;'),
        /^sasl\.jaas\.config: login module org\.apache\.kafka\.common\.security\.oauthbearer\.OAuthBearerLoginModule is not supported/,
      );
      refused(
        with_(`${PLAIN_MODULE} required username="alice";`),
        /^sasl\.jaas\.config: .*PlainLoginModule needs the username and password options$/,
      );
      refused(
        with_(`${SCRAM_MODULE} required username="alice" password="x" tokenauth="true";`),
        /^sasl\.jaas\.config: tokenauth \(delegation token authentication\) is not supported$/,
      );
    });

    it('ignores sasl.* settings without a SASL protocol, as Kafka’s client does', () => {
      assert.deepEqual(security({ 'security.protocol': 'PLAINTEXT', 'sasl.mechanism': 'GSSAPI' }), {});
    });
  });

  describe('settings', () => {
    it('refuses any setting it does not read, naming it', () => {
      const unknown = fc.string({ minLength: 1 }).filter((name) => !COMMAND_CONFIG_NAMES.has(name));
      fc.assert(
        fc.property(unknown, fc.string(), (name, value) => {
          assert.throws(
            () => security({ ...saslPlaintext('PLAIN'), [name]: value }),
            (err: unknown) => err instanceof UsageError && err.message.startsWith(`unknown or unsupported setting ${name}: `),
          );
        }),
      );
      for (const name of [
        'sasl.kerberos.service.name',
        'sasl.login.callback.handler.class',
        'ssl.client.auth',
        'bootstrap.servers',
        'sasl.jass.config',
      ]) {
        refused({ [name]: 'x' }, new RegExp(`^unknown or unsupported setting ${name.replace(/\./g, '\\.')}: `));
      }
    });

    it('reads a Java properties file, and names the file in every refusal', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sluice-command-config-'));
      try {
        const file = join(dir, 'client.properties');
        await writeFile(
          file,
          [
            '# a client of the SASL listener',
            'security.protocol : SASL_PLAINTEXT',
            'sasl.mechanism=SCRAM-SHA-512',
            `sasl.jaas.config=${SCRAM_MODULE} required \\`,
            '    username="bob" \\',
            '    password="b\\\\\\\\s";',
            '',
          ].join('\n'),
        );
        assert.deepEqual(readCommandConfig(file).sasl, { mechanism: 'SCRAM-SHA-512', username: 'bob', password: 'b\\s' });
        await writeFile(file, 'security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n');
        const expected = `--command-config ${file}: sasl.mechanism OAUTHBEARER is not supported: sluice authenticates with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`;
        assert.throws(
          () => readCommandConfig(file),
          (err: unknown) => err instanceof UsageError && err.message === expected,
        );
        const missing = join(dir, 'missing.properties');
        assert.throws(
          () => readCommandConfig(missing),
          (err: unknown) => err instanceof UsageError && err.message.startsWith(`--command-config ${missing}: ENOENT`),
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('TLS', function () {
    this.timeout(30_000);
    let pki: TestPki;
    let servers: Server[] = [];

    before(async () => {
      pki = await createTestPki();
    });

    after(async () => {
      await pki.remove();
    });

    afterEach(async () => {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      servers = [];
    });

    /**
     * A TLS handshake with a listener presenting the test server certificate, with the options
     * the command config gives for `host`. The listener answers with the client's certificate
     * subject, "anonymous" without one; a refused handshake yields the client's error.
     */
    async function handshake(built: ClientSecurity, host = '127.0.0.1'): Promise<string> {
      const server = createServer(
        {
          key: readFileSync(pki.server.key),
          cert: readFileSync(pki.server.cert),
          ca: readFileSync(pki.caCert),
          requestCert: true,
          rejectUnauthorized: false,
        },
        (socket: TLSSocket) => {
          const peer = socket.getPeerCertificate();
          socket.end(socket.authorized && peer.subject !== undefined ? `CN=${peer.subject.CN}` : 'anonymous');
        },
      );
      server.on('tlsClientError', () => {});
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      assert.equal(typeof built.tls, 'function', 'TLS options are made per host');
      const options = (built.tls as (host: string) => ConnectionOptions)(host);
      return new Promise((resolve) => {
        let reply = '';
        let failure = '';
        const socket = connect({ ...options, host: '127.0.0.1', port });
        socket.on('data', (chunk: Buffer) => {
          reply += chunk.toString();
        });
        socket.on('error', (err) => {
          failure = `error: ${err.message}`;
        });
        socket.on('close', () => resolve(failure || reply));
      });
    }

    const trustPem = (protocol = 'SSL') => ({
      'security.protocol': protocol,
      'ssl.truststore.type': 'PEM',
      'ssl.truststore.location': pki.caCert,
    });

    it('SSL trusts the CA of ssl.truststore.location and checks the server’s host name', async () => {
      const built = security(trustPem());
      assert.equal(built.sasl, undefined);
      assert.equal(await handshake(built), 'anonymous');
      assert.equal(await handshake(built, 'localhost'), 'anonymous');
      assert.match(await handshake(built, 'kafka.example.com'), /^error: .*(does not match|altnames)/);
    });

    it('an empty ssl.endpoint.identification.algorithm turns the host name check off; the certificate is still verified', async () => {
      const unchecked = security({ ...trustPem(), 'ssl.endpoint.identification.algorithm': '' });
      assert.equal(await handshake(unchecked, 'kafka.example.com'), 'anonymous');
      assert.match(await handshake(security({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': '' })), /^error: /);
    });

    it('SASL_SSL gives TLS and the SASL credentials, with the CA inline in ssl.truststore.certificates', async () => {
      const built = security({
        ...saslPlaintext('PLAIN'),
        'security.protocol': 'SASL_SSL',
        'ssl.truststore.type': 'PEM',
        'ssl.truststore.certificates': readFileSync(pki.caCert, 'utf8').replace(/\n/g, ' '),
      });
      assert.deepEqual(built.sasl, { mechanism: 'PLAIN', username: 'alice', password: 'alice-secret' });
      assert.equal(await handshake(built), 'anonymous');
    });

    it('reads a PKCS12 trust store', async () => {
      const store = await pki.truststoreP12({ password: 'trust-secret' });
      const built = security({
        'security.protocol': 'SSL',
        'ssl.truststore.type': 'PKCS12',
        'ssl.truststore.location': store,
        'ssl.truststore.password': 'trust-secret',
      });
      assert.equal(await handshake(built), 'anonymous');
    });

    it('presents the client certificate of a PEM or PKCS12 key store (mTLS)', async () => {
      const alice = await pki.client('alice');
      const pem = security({ ...trustPem(), 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': alice.keystorePem });
      assert.equal(await handshake(pem), 'CN=alice');
      const p12 = security({
        ...trustPem(),
        'ssl.keystore.type': 'PKCS12',
        'ssl.keystore.location': alice.p12,
        'ssl.keystore.password': alice.p12Password,
      });
      assert.equal(await handshake(p12), 'CN=alice');
      const separate = security({
        ...trustPem(),
        'ssl.keystore.type': 'PEM',
        'ssl.keystore.key': readFileSync(alice.key, 'utf8'),
        'ssl.keystore.certificate.chain': readFileSync(alice.cert, 'utf8'),
      });
      assert.equal(await handshake(separate), 'CN=alice');
    });

    it('refuses key and trust stores it cannot load before connecting, naming the setting', async () => {
      refused(
        { 'security.protocol': 'SSL', 'ssl.truststore.location': pki.caCert },
        /^ssl\.truststore\.type: Cannot load trust store .*JKS stores are not supported/,
      );
      refused(
        { ...trustPem(), 'ssl.truststore.location': join(pki.dir, 'missing.pem') },
        /^Failed to load SSL truststore .*missing\.pem of type PEM \(ssl\.truststore\.location\)/,
      );
      const alice = await pki.client('alice-p12');
      refused(
        { ...trustPem(), 'ssl.keystore.type': 'PKCS12', 'ssl.keystore.location': alice.p12, 'ssl.keystore.password': 'wrong' },
        /^ssl\.keystore\.password: Failed to load SSL keystore .* of type PKCS12: keystore password was incorrect$/,
      );
      refused({ ...trustPem(), 'ssl.endpoint.identification.algorithm': 'ldaps' }, /Unknown identification algorithm: ldaps/);
    });

    it('ignores ssl.* settings without a TLS protocol, as Kafka’s client does', () => {
      assert.equal(security({ ...saslPlaintext('PLAIN'), 'ssl.truststore.location': '/nowhere' }).tls, undefined);
    });
  });

  describe('every client command', () => {
    let dir = '';
    let file = '';
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'sluice-command-config-'));
      file = join(dir, 'client.properties');
      await writeFile(file, `security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config=${PLAIN_MODULE} required;\n`);
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    const commands: readonly [string, (args: string[], io: Parameters<typeof runTopicsCommand>[1]) => Promise<number>][] = [
      ['topics list', (args, io) => runTopicsCommand(['list', ...args], io)],
      ['groups list', (args, io) => runGroupsCommand(['list', ...args], io)],
      ['configs describe', (args, io) => runConfigsCommand(['describe', '--entity-type', 'brokers', '--entity-default', ...args], io)],
      ['produce', (args, io) => runProduceCommand(['t', ...args], io, Readable.from([]))],
      ['consume', (args, io) => runConsumeCommand(['t', ...args], io)],
      ['apply --export', (args, io) => runApplyCommand(['--export', ...args], io)],
      ['dlq inspect', (args, io) => runDlqCommand(['inspect', 't.dlq', ...args], io)],
      ['cluster describe', (args, io) => runClusterCommand(['describe', '--bootstrap-server', '127.0.0.1:1', ...args], io)],
    ];

    for (const [name, run] of commands) {
      it(`${name} reads --command-config, answering a setting it cannot serve with exit code 2`, async () => {
        const r = await runCaptured((io) => run(['--command-config', file], io));
        assert.equal(r.code, 2, r.stderr);
        assert.match(
          r.stderr,
          new RegExp(`--command-config ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: sasl\\.mechanism OAUTHBEARER is not supported`),
        );
      });
    }

    it('cluster refuses --command-config with --bootstrap-controller, whose connections it does not secure', async () => {
      const r = await runCaptured((io) =>
        runClusterCommand(['describe', '--bootstrap-controller', '127.0.0.1:1', '--command-config', file], io),
      );
      assert.equal(r.code, 2);
      assert.match(r.stderr, /--command-config applies to describe --bootstrap-server/);
    });
  });
});
