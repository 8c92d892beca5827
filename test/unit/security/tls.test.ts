import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ConnectionOptions, connect, createServer, type PeerCertificate, type Server, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { createTestPki, type TestPki } from '../../helpers/certs.ts';
import { distinguishedName } from '../../../src/security/ssl-principal.ts';
import {
  keystoreFiles,
  OPENSSL_CIPHER_NAMES,
  peerCertificateRejected,
  SSL_CONFIG_DEFAULTS,
  SslConfigError,
  tlsClientOptions,
  tlsServerOptions,
  type SslConfigLookup,
} from '../../../src/security/tls.ts';

type Configs = Record<string, string>;

const lookup =
  (configs: Configs): SslConfigLookup =>
  (name) =>
    configs[name] ?? null;

function configError(configName: string, message?: RegExp): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof SslConfigError, `expected an SslConfigError, got ${String(err)}`);
    assert.equal(err.configName, configName, err.message);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  };
}

function caFingerprints(ca: ConnectionOptions['ca']): string[] {
  return [ca ?? []].flat().map((c) => new X509Certificate(c).fingerprint256);
}

describe('TLS options from ssl.* configs', () => {
  let pki: TestPki;
  let pemServer: Configs;

  before(async () => {
    pki = await createTestPki();
    pemServer = { 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': pki.server.keystorePem };
  });
  after(() => pki.remove());

  const pem = (path: string): string => readFileSync(path, 'utf8');

  describe('key stores', () => {
    it('reads a PEM key store file: the key, and the chain with the CA after the certificate', () => {
      const options = tlsServerOptions(lookup(pemServer));
      assert.equal(createPrivateKey(options.key as string).asymmetricKeyType, 'ec');
      const chain = (options.cert as string).match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g)!;
      assert.deepEqual(
        chain.map((c) => new X509Certificate(c).fingerprint256),
        [pki.server.cert, pki.caCert].map((f) => new X509Certificate(pem(f)).fingerprint256),
      );
    });

    it('takes ssl.keystore.key and ssl.keystore.certificate.chain inline, even on one line as a properties file may hold them', () => {
      const oneLine = (text: string): string => text.replace(/\n/g, ' ');
      const options = tlsServerOptions(
        lookup({
          'ssl.keystore.type': 'PEM',
          'ssl.keystore.key': oneLine(pem(pki.server.key)),
          'ssl.keystore.certificate.chain': oneLine(pem(pki.server.cert) + pem(pki.caCert)),
        }),
      );
      assert.equal(new X509Certificate(options.cert as string).fingerprint256, new X509Certificate(pem(pki.server.cert)).fingerprint256);
      assert.ok(createPrivateKey(options.key as string));
    });

    it('decrypts an encrypted PKCS#8 key with ssl.key.password, and names ssl.key.password when it is missing or wrong', () => {
      const encrypted = createPrivateKey(pem(pki.server.key))
        .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'key-secret' })
        .toString();
      const file = join(pki.dir, 'encrypted-keystore.pem');
      writeFileSync(file, encrypted + pem(pki.server.cert));
      const configs = { 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': file };
      const options = tlsServerOptions(lookup({ ...configs, 'ssl.key.password': 'key-secret' }));
      assert.match(options.key as string, /BEGIN PRIVATE KEY/);
      assert.throws(() => tlsServerOptions(lookup(configs)), configError('ssl.key.password', /encrypted/));
      assert.throws(() => tlsServerOptions(lookup({ ...configs, 'ssl.key.password': 'wrong' })), configError('ssl.key.password'));
    });

    it('opens a PKCS12 key store with ssl.keystore.password', () => {
      const options = tlsServerOptions(
        lookup({ 'ssl.keystore.type': 'PKCS12', 'ssl.keystore.location': pki.server.p12, 'ssl.keystore.password': pki.server.p12Password }),
      );
      assert.deepEqual(options.pfx, [{ buf: readFileSync(pki.server.p12), passphrase: pki.server.p12Password }]);
      assert.throws(
        () =>
          tlsServerOptions(
            lookup({ 'ssl.keystore.type': 'PKCS12', 'ssl.keystore.location': pki.server.p12, 'ssl.keystore.password': 'wrong' }),
          ),
        configError('ssl.keystore.password', /password was incorrect/),
      );
      assert.throws(
        () => tlsServerOptions(lookup({ 'ssl.keystore.type': 'PKCS12', 'ssl.keystore.location': pki.server.p12 })),
        configError('ssl.keystore.password', /key store password is not specified/),
      );
    });

    it('refuses JKS, the default type, and says how to convert', () => {
      assert.equal(SSL_CONFIG_DEFAULTS.get('ssl.keystore.type'), 'JKS');
      const jks: Configs[] = [
        { 'ssl.keystore.location': pki.server.p12 },
        { 'ssl.keystore.type': 'JKS', 'ssl.keystore.location': pki.server.p12 },
      ];
      for (const configs of jks) {
        assert.throws(
          () => tlsServerOptions(lookup(configs)),
          configError('ssl.keystore.type', /JKS.*not supported.*keytool -importkeystore.*PKCS12.*PEM/),
        );
      }
      assert.throws(
        () => tlsClientOptions(lookup({ 'ssl.truststore.location': pki.caCert }), 'localhost'),
        configError('ssl.truststore.type', /JKS.*keytool -importkeystore/),
      );
    });

    it("refuses the combinations Kafka's DefaultSslEngineFactory refuses", () => {
      const key = pem(pki.server.key);
      const chain = pem(pki.server.cert);
      const cases: [Configs, string, RegExp][] = [
        [{ ...pemServer, 'ssl.keystore.password': 'x' }, 'ssl.keystore.password', /cannot be specified with PEM format/],
        [
          { 'ssl.keystore.type': 'PKCS12', 'ssl.keystore.key': key, 'ssl.keystore.certificate.chain': chain },
          'ssl.keystore.type',
          /only for PEM/,
        ],
        [{ 'ssl.keystore.type': 'PEM', 'ssl.keystore.key': key }, 'ssl.keystore.certificate.chain', /certificate chain is not specified/],
        [{ 'ssl.keystore.type': 'PEM', 'ssl.keystore.certificate.chain': chain }, 'ssl.keystore.key', /private key is not specified/],
        [
          { ...pemServer, 'ssl.keystore.key': key, 'ssl.keystore.certificate.chain': chain },
          'ssl.keystore.location',
          /Both SSL key store location/,
        ],
        [
          { 'ssl.keystore.type': 'PEM', 'ssl.keystore.key': key, 'ssl.keystore.certificate.chain': pem(pki.caCert) },
          'ssl.keystore.key',
          /does not belong/,
        ],
        [{ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': pki.server.cert }, 'ssl.keystore.location', /No matching PRIVATE KEY/],
        [
          { 'ssl.keystore.type': 'BKS', 'ssl.keystore.location': pki.server.p12 },
          'ssl.keystore.type',
          /supported types are PEM and PKCS12/,
        ],
        [{ 'ssl.keystore.password': 'x' }, 'ssl.keystore.location', /key store is not specified/],
        [{}, 'ssl.keystore.location', /needs a key store/],
        [{ ...pemServer, 'ssl.client.auth': 'sometimes' }, 'ssl.client.auth', /must be one of: required, requested, none/],
      ];
      for (const [configs, configName, message] of cases)
        assert.throws(() => tlsServerOptions(lookup(configs)), configError(configName, message));
    });

    it('names the location config and the path when a store file is missing', () => {
      const missing = join(pki.dir, 'nope.pem');
      assert.throws(
        () => tlsServerOptions(lookup({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': missing })),
        configError('ssl.keystore.location', new RegExp(`${missing}.*ssl\\.keystore\\.location|ssl\\.keystore\\.location.*${missing}`)),
      );
      assert.throws(
        () => tlsClientOptions(lookup({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': missing }), 'localhost'),
        configError('ssl.truststore.location', /ssl\.truststore\.location/),
      );
    });
  });

  describe('trust stores', () => {
    it('reads PEM from a file or inline, and leaves node its default roots when none is set', () => {
      const fingerprint = new X509Certificate(pem(pki.caCert)).fingerprint256;
      const fromFile = tlsClientOptions(lookup({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': pki.caCert }), 'localhost');
      const inline = tlsClientOptions(
        lookup({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.certificates': pem(pki.caCert) }),
        'localhost',
      );
      for (const options of [fromFile, inline]) assert.deepEqual(caFingerprints(options.ca), [fingerprint]);
      assert.equal(tlsClientOptions(lookup({}), 'localhost').ca, undefined);
      assert.throws(
        () =>
          tlsClientOptions(
            lookup({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': pki.caCert, 'ssl.truststore.password': 'x' }),
            'h',
          ),
        configError('ssl.truststore.password', /cannot be specified for PEM/),
      );
      assert.throws(
        () => tlsClientOptions(lookup({ 'ssl.truststore.type': 'PKCS12', 'ssl.truststore.certificates': pem(pki.caCert) }), 'h'),
        configError('ssl.truststore.type', /only for PEM/),
      );
    });

    for (const [what, storeOptions] of [
      ['AES-256 (openssl and keytool today)', {}],
      ['3DES with a SHA-1 MAC (older tools)', { certPbe: 'PBE-SHA1-3DES', macAlg: 'sha1' }],
      ['unencrypted certificates', { certPbe: 'NONE' }],
    ] as const) {
      it(`takes the certificates out of a PKCS12 trust store: ${what}`, async () => {
        const store = await pki.truststoreP12({ password: 'store-secret', ...storeOptions });
        const configs = { 'ssl.truststore.type': 'PKCS12', 'ssl.truststore.location': store };
        const options = tlsClientOptions(lookup({ ...configs, 'ssl.truststore.password': 'store-secret' }), 'localhost');
        assert.deepEqual(caFingerprints(options.ca), [new X509Certificate(pem(pki.caCert)).fingerprint256]);
        assert.throws(
          () => tlsClientOptions(lookup({ ...configs, 'ssl.truststore.password': 'wrong' }), 'localhost'),
          configError('ssl.truststore.password', /password was incorrect/),
        );
      });
    }

    it('opens a PKCS12 trust store without a password only when its certificates are not encrypted, as Java does', async () => {
      const plain = await pki.truststoreP12({ password: 'store-secret', certPbe: 'NONE' });
      assert.equal(
        caFingerprints(tlsClientOptions(lookup({ 'ssl.truststore.type': 'PKCS12', 'ssl.truststore.location': plain }), 'h').ca).length,
        1,
      );
      const encrypted = await pki.truststoreP12({ password: 'store-secret' });
      assert.throws(
        () => tlsClientOptions(lookup({ 'ssl.truststore.type': 'PKCS12', 'ssl.truststore.location': encrypted }), 'h'),
        configError('ssl.truststore.password', /encrypted/),
      );
    });

    it('lists the store files whose change needs a new context', () => {
      assert.deepEqual(keystoreFiles(lookup({ ...pemServer, 'ssl.truststore.location': pki.caCert })), [
        pki.server.keystorePem,
        pki.caCert,
      ]);
      assert.deepEqual(keystoreFiles(lookup({ 'ssl.keystore.key': 'inline' })), []);
    });
  });

  describe('protocols and cipher suites', () => {
    it("enables Kafka's default TLSv1.2 and TLSv1.3", () => {
      const options = tlsServerOptions(lookup(pemServer));
      assert.equal(options.minVersion, 'TLSv1.2');
      assert.equal(options.maxVersion, 'TLSv1.3');
    });

    it('refuses unknown protocol names in ssl.enabled.protocols and ssl.protocol', () => {
      assert.throws(
        () => tlsServerOptions(lookup({ ...pemServer, 'ssl.enabled.protocols': 'TLSv1.2,TLSv1.4' })),
        configError('ssl.enabled.protocols', /TLSv1\.4/),
      );
      assert.throws(
        () => tlsServerOptions(lookup({ ...pemServer, 'ssl.enabled.protocols': 'SSLv3' })),
        configError('ssl.enabled.protocols'),
      );
      assert.throws(() => tlsClientOptions(lookup({ 'ssl.protocol': 'SSL' }), 'h'), configError('ssl.protocol'));
      assert.throws(
        () => tlsClientOptions(lookup({ 'ssl.protocol': 'TLSv1.2', 'ssl.enabled.protocols': 'TLSv1.3' }), 'h'),
        configError('ssl.protocol'),
      );
    });

    it("maps Java's cipher suite names to OpenSSL's, passes TLS 1.3 names through, and refuses unknown names", () => {
      const options = tlsServerOptions(
        lookup({
          ...pemServer,
          'ssl.cipher.suites': 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,SSL_RSA_WITH_AES_128_CBC_SHA',
        }),
      );
      assert.equal(options.ciphers, 'ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_256_GCM_SHA384:AES128-SHA');
      assert.throws(
        () => tlsServerOptions(lookup({ ...pemServer, 'ssl.cipher.suites': 'TLS_FANCY_WITH_ROT13' })),
        configError('ssl.cipher.suites', /TLS_FANCY_WITH_ROT13/),
      );
    });

    it("agrees with openssl's own table of standard names", async () => {
      const { stdout } = await promisify(execFile)('openssl', ['ciphers', '-stdname', 'ALL:COMPLEMENTOFALL:@SECLEVEL=0']);
      const openssl = new Map(stdout.split('\n').map((line) => line.split(/\s+-\s+|\s+/) as [string, string]));
      for (const [java, name] of OPENSSL_CIPHER_NAMES) assert.equal(openssl.get(java), name, java);
    });
  });

  describe('handshakes', () => {
    let servers: Server[] = [];
    afterEach(async () => {
      await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
      servers = [];
    });

    interface Outcome {
      /** what the server told the client: the client's DN, "anonymous", or "rejected: ..." */
      reply: string;
      clientError: Error | null;
      protocol: string | null;
      cipher: string | null;
    }

    /** Serves one TLS listener and connects one client; the server answers with what it saw of the client. */
    async function handshake(server: Configs, client: Configs, identityHost = '127.0.0.1'): Promise<Outcome> {
      const tlsServer = createServer(tlsServerOptions(lookup(server)), (socket: TLSSocket) => {
        const rejected = peerCertificateRejected(socket);
        const peer = socket.getPeerCertificate() as PeerCertificate | Record<string, never>;
        const seen =
          rejected !== null ? `rejected: ${rejected}` : peer.raw ? distinguishedName(new X509Certificate(peer.raw)) : 'anonymous';
        socket.end(seen);
      });
      tlsServer.on('tlsClientError', () => {});
      servers.push(tlsServer);
      await new Promise<void>((resolve) => tlsServer.listen(0, '127.0.0.1', resolve));
      const { port } = tlsServer.address() as AddressInfo;
      return new Promise((resolve) => {
        const outcome: Outcome = { reply: '', clientError: null, protocol: null, cipher: null };
        const socket = connect({ ...tlsClientOptions(lookup(client), identityHost), host: '127.0.0.1', port });
        socket.on('secureConnect', () => {
          outcome.protocol = socket.getProtocol();
          outcome.cipher = socket.getCipher().name;
        });
        socket.on('data', (chunk: Buffer) => {
          outcome.reply += chunk.toString();
        });
        socket.on('error', (err) => {
          outcome.clientError = err;
        });
        socket.on('close', () => resolve(outcome));
      });
    }

    const trustCa = (): Configs => ({ 'ssl.truststore.type': 'PEM', 'ssl.truststore.location': pki.caCert });
    const clientKeystore = (keystorePem: string): Configs => ({
      ...trustCa(),
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': keystorePem,
    });

    it('ssl.client.auth=none: the client verifies the server, the server asks for no certificate', async () => {
      const alice = await pki.client('alice');
      const outcome = await handshake(pemServer, clientKeystore(alice.keystorePem));
      assert.equal(outcome.clientError, null);
      assert.equal(outcome.reply, 'anonymous');
      assert.equal(outcome.protocol, 'TLSv1.3');
    });

    it('ssl.client.auth=requested: a client may go without a certificate; one it presents is seen, and a foreign one refused', async () => {
      const server = { ...pemServer, ...trustCa(), 'ssl.client.auth': 'requested' };
      assert.equal((await handshake(server, trustCa())).reply, 'anonymous');
      const bob = await pki.client('bob', 'eng');
      assert.equal((await handshake(server, clientKeystore(bob.keystorePem))).reply, 'CN=bob,OU=eng,O=Sluice');
      const stranger = await createTestPki();
      try {
        const mallory = await stranger.client('mallory');
        const outcome = await handshake(server, { ...trustCa(), 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': mallory.keystorePem });
        assert.match(outcome.reply, /^rejected: /);
      } finally {
        await stranger.remove();
      }
    });

    it("ssl.client.auth=required: no certificate, no connection; with one, the server reads the client's DN", async () => {
      const server = { ...pemServer, ...trustCa(), 'ssl.client.auth': 'required' };
      const anonymous = await handshake(server, trustCa());
      assert.equal(anonymous.reply, '');
      assert.notEqual(anonymous.clientError, null);
      const carol = await pki.client('carol, the admin', 'ops+infra');
      const outcome = await handshake(server, {
        ...trustCa(),
        'ssl.keystore.type': 'PKCS12',
        'ssl.keystore.location': carol.p12,
        'ssl.keystore.password': carol.p12Password,
      });
      assert.equal(outcome.clientError, null);
      assert.equal(outcome.reply, 'CN=carol\\, the admin,OU=ops\\+infra,O=Sluice');
      assert.equal(outcome.reply, carol.dn);
    });

    it('a TLSv1.2-only side and a TLSv1.3-only side do not agree', async () => {
      for (const [serverProtocols, clientProtocols] of [
        ['TLSv1.2', 'TLSv1.3'],
        ['TLSv1.3', 'TLSv1.2'],
      ]) {
        const outcome = await handshake(
          { ...pemServer, 'ssl.enabled.protocols': serverProtocols! },
          { ...trustCa(), 'ssl.enabled.protocols': clientProtocols! },
        );
        assert.equal(outcome.protocol, null, `${serverProtocols} server, ${clientProtocols} client`);
        assert.match(String(outcome.clientError), /version|protocol/i);
      }
    });

    it('ssl.protocol=TLSv1.2 keeps a client on TLSv1.2, and ssl.cipher.suites picks the suite', async () => {
      const outcome = await handshake(
        { ...pemServer, 'ssl.cipher.suites': 'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256' },
        { ...trustCa(), 'ssl.protocol': 'TLSv1.2' },
      );
      assert.equal(outcome.clientError, null);
      assert.equal(outcome.protocol, 'TLSv1.2');
      assert.equal(outcome.cipher, 'ECDHE-ECDSA-AES256-GCM-SHA384');
    });

    it("checks the server's name by default and not when ssl.endpoint.identification.algorithm is empty", async () => {
      const checked = await handshake(pemServer, trustCa(), 'kafka.example.com');
      assert.match(String(checked.clientError), /kafka\.example\.com/);
      assert.equal(checked.reply, '');
      const unchecked = await handshake(pemServer, { ...trustCa(), 'ssl.endpoint.identification.algorithm': '' }, 'kafka.example.com');
      assert.equal(unchecked.clientError, null);
      assert.equal(unchecked.reply, 'anonymous');
    });

    it('a client that does not trust the CA fails the handshake', async () => {
      const outcome = await handshake(pemServer, {});
      assert.match(String(outcome.clientError), /self.signed|unable to (get|verify)/i);
    });
  });
});
