/**
 * What changes while a secured broker runs: sessions that end (KIP-368, against Sluice and
 * Kafka alike), and, on Sluice, certificates replaced on disk and the first admin made by
 * `sluice storage format --add-scram`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeMetadataRequest, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { freePorts, propertiesText } from '../../../src/cli/dev-cluster.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { runStorageCommand } from '../../../src/cli/storage.ts';
import { capture } from '../../helpers/cli-targets.ts';
import { ALICE, againstEachSecuredBroker, startSecuredSluice, type SecuredBroker } from '../../helpers/secured-brokers.ts';
import { sluiceCommand } from '../../helpers/sluice-cli.ts';
import { eventually } from '../../helpers/wait.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call } from '../../helpers/raw-requests.ts';
import { makeSaslHandshakeRequest, type SaslHandshakeResponse } from '../../../protocol/messages/sasl-handshake.ts';
import { makeSaslAuthenticateRequest, type SaslAuthenticateResponse } from '../../../protocol/messages/sasl-authenticate.ts';

const SESSION_MS = 2000;

function hostPort(endpoint: string): [string, number] {
  const [host, port] = endpoint.split(':');
  return [host!, Number(port)];
}

const metadataRequest = () => makeMetadataRequest({ topics: [], allowAutoTopicCreation: false });

againstEachSecuredBroker(
  'SASL sessions with connections.max.reauth.ms',
  (broker) => {
    it('tells a client its session lifetime; a client that re-authenticates keeps its connection', async () => {
      const [host, port] = hostPort(broker().endpoints.SASL_PLAINTEXT);
      const reauthenticating = await KafkaConnection.connect(host, port, { sasl: { mechanism: 'PLAIN', ...ALICE } });
      await new Promise((r) => setTimeout(r, SESSION_MS * 1.5));
      const answered = await reauthenticating.send<MetadataResponse>(ApiKey.Metadata, metadataRequest());
      assert.deepEqual(answered.topics, []);
      reauthenticating.close();
    });

    it('closes, at its next request, a connection whose session ended without re-authentication', async () => {
      const client = await RawClient.connect(hostPort(broker().endpoints.SASL_PLAINTEXT)[1]);
      try {
        assert.equal(
          (await call<SaslHandshakeResponse>(client, ApiKey.SaslHandshake, 1, makeSaslHandshakeRequest({ mechanism: 'PLAIN' }))).errorCode,
          0,
        );
        const authenticated = await call<SaslAuthenticateResponse>(
          client,
          ApiKey.SaslAuthenticate,
          1,
          makeSaslAuthenticateRequest({ authBytes: Buffer.from(`\0${ALICE.username}\0${ALICE.password}`) }),
        );
        assert.equal(authenticated.errorCode, 0);
        assert.ok(
          authenticated.sessionLifetimeMs > 0n && authenticated.sessionLifetimeMs <= BigInt(SESSION_MS),
          `${authenticated.sessionLifetimeMs}`,
        );
        await call<MetadataResponse>(client, ApiKey.Metadata, 12, metadataRequest());
        await new Promise((r) => setTimeout(r, SESSION_MS * 1.5));
        await assert.rejects(call<MetadataResponse>(client, ApiKey.Metadata, 12, metadataRequest()), /connection closed/);
      } finally {
        client.close();
      }
    });
  },
  { 'connections.max.reauth.ms': String(SESSION_MS) },
);

describe('a Sluice TLS listener whose keystore file changes', function () {
  this.timeout(120_000);
  let broker: SecuredBroker;

  before(async () => {
    broker = await startSecuredSluice();
  });

  after(async () => {
    await broker?.stop();
  });

  /** The certificate a new TLS connection to the SASL_SSL listener is served (it needs no client certificate). */
  function servedCertificate(): Promise<X509Certificate> {
    const [host, port] = hostPort(broker.endpoints.SASL_SSL);
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({ host, port, rejectUnauthorized: false }, () => {
        const cert = socket.getPeerX509Certificate();
        socket.destroy();
        if (cert === undefined) reject(new Error('no certificate served'));
        else resolve(cert);
      });
      socket.once('error', reject);
    });
  }

  it('serves the new certificate to new connections without a restart', async () => {
    const before = await servedCertificate();
    const renewed = await broker.pki.issue('/O=Sluice/CN=renewed', { subjectAltName: 'IP:127.0.0.1,DNS:localhost' });
    await writeFile(broker.pki.server.keystorePem, await readFile(renewed.keystorePem));
    let after = before;
    await eventually('the renewed certificate served', async () => {
      after = await servedCertificate();
      return after.fingerprint256 !== before.fingerprint256;
    });
    assert.match(after.subject, /CN=renewed/);
    assert.match(broker.output(), /TLS keystore changed: new connections use the new certificates/);
  });
});

describe('sluice storage format --add-scram', function () {
  this.timeout(120_000);

  it('gives a new node its first SCRAM admin, who authenticates before any user was created over the wire', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-add-scram-'));
    try {
      const [port, controller] = await freePorts(2);
      const properties = join(dir, 'server.properties');
      await writeFile(
        properties,
        propertiesText(
          new Map([
            ['process.roles', 'broker,controller'],
            ['node.id', '1'],
            ['controller.quorum.voters', `1@127.0.0.1:${controller}`],
            ['listeners', `SASL_PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controller}`],
            ['controller.listener.names', 'CONTROLLER'],
            ['listener.security.protocol.map', 'CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT'],
            ['inter.broker.listener.name', 'SASL_PLAINTEXT'],
            ['sasl.enabled.mechanisms', 'SCRAM-SHA-512'],
            ['sasl.mechanism.inter.broker.protocol', 'SCRAM-SHA-512'],
            [
              'listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config',
              'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";',
            ],
            ['log.dirs', join(dir, 'logs')],
            ['offsets.topic.replication.factor', '1'],
          ]),
          'A SCRAM-only node.',
        ),
      );
      const io = capture();
      const code = await runStorageCommand(
        [
          'format',
          '--config',
          properties,
          '--cluster-id',
          'MkU3OEVBNTcwNTJENDM2Qg',
          '--add-scram',
          'SCRAM-SHA-512=[name=admin,password=admin-secret]',
        ],
        io,
        {},
      );
      assert.equal(code, 0, io.stderr());
      const cmd = sluiceCommand(['start', '--config', properties]);
      const child = spawn(cmd.command, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => {
        output += c.toString();
      });
      child.stderr.on('data', (c: Buffer) => {
        output += c.toString();
      });
      try {
        await eventually('the node to start', () => output.includes('sluice ready:') || child.exitCode !== null, 60_000);
        assert.ok(output.includes('sluice ready:'), output.slice(-2000));
        const admin = await KafkaConnection.connect('127.0.0.1', port!, {
          sasl: { mechanism: 'SCRAM-SHA-512', username: 'admin', password: 'admin-secret' },
        });
        const answered = await admin.send<MetadataResponse>(ApiKey.Metadata, metadataRequest());
        assert.equal(answered.brokers.length, 1);
        admin.close();
        await assert.rejects(
          KafkaConnection.connect('127.0.0.1', port!, { sasl: { mechanism: 'SCRAM-SHA-512', username: 'admin', password: 'wrong' } }),
          /authentication as admin .* failed/,
        );
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
