/**
 * What an unauthenticated peer can send to the secured listeners, over raw sockets, against
 * Sluice and against Apache Kafka started from the same server.properties: broken SASL
 * exchanges, requests before authentication, plaintext and truncated TLS on the SSL port,
 * and a run of failed logins. After each, a kafkajs client authenticated with PLAIN still
 * produces and consumes.
 */
import assert from 'node:assert/strict';
import { connect as tcpConnect, createServer, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { makeApiVersionsRequest } from '../../../protocol/messages/api-versions.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeMetadataRequest } from '../../../protocol/messages/metadata.ts';
import { makeSaslAuthenticateRequest, type SaslAuthenticateResponse } from '../../../protocol/messages/sasl-authenticate.ts';
import { makeSaslHandshakeRequest, type SaslHandshakeResponse } from '../../../protocol/messages/sasl-handshake.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { call, frame } from '../../helpers/raw-requests.ts';
import { ADMIN, ALICE, againstEachSecuredBroker, type SecuredBroker } from '../../helpers/secured-brokers.ts';
import { createTopic, kafkajsClient, kafkajsRoundTrip, plain, tlsOptions } from './clients.ts';

/** How long a connection the broker must close may take to close. */
const CLOSE_TIMEOUT_MS = 10_000;
const ENABLED_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'];
const FAILED_LOGINS = 1000;
const PARALLEL_LOGINS = 8;
/** Kafka's connection.failed.authentication.delay.ms default: how long a refusal is held back, to slow a guesser down. */
const FAILED_AUTHENTICATION_DELAY_MS = 100;

const portOf = (endpoint: string): number => Number(endpoint.slice(endpoint.lastIndexOf(':') + 1));

function within<T>(what: string, timeoutMs: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Resolves once the server has closed `client`, and asserts it answered nothing more. */
async function closedWithoutAnswer(client: RawClient, what: string): Promise<void> {
  await within(`the broker to close the connection after ${what}`, CLOSE_TIMEOUT_MS, client.whenClosed());
  await assert.rejects(client.next(), /connection closed/, `no answer to ${what}`);
}

async function saslConnection(broker: SecuredBroker): Promise<RawClient> {
  return RawClient.connect(portOf(broker.endpoints.SASL_PLAINTEXT));
}

function handshake(client: RawClient, mechanism: string): Promise<SaslHandshakeResponse> {
  return call<SaslHandshakeResponse>(client, ApiKey.SaslHandshake, 1, makeSaslHandshakeRequest({ mechanism }));
}

function authenticate(client: RawClient, authBytes: Buffer): Promise<SaslAuthenticateResponse> {
  return call<SaslAuthenticateResponse>(client, ApiKey.SaslAuthenticate, 1, makeSaslAuthenticateRequest({ authBytes }));
}

/**
 * One PLAIN login with a wrong password over a fresh connection: refused, then closed.
 * Resolves with the milliseconds the refusal took.
 */
async function failedPlainLogin(broker: SecuredBroker): Promise<number> {
  const client = await saslConnection(broker);
  try {
    assert.equal((await handshake(client, 'PLAIN')).errorCode, Errors.NONE.code);
    const sentAtMs = performance.now();
    const refused = await authenticate(client, Buffer.from(`\0${ALICE.username}\0not-${ALICE.password}`));
    const refusalMs = performance.now() - sentAtMs;
    assert.equal(refused.errorCode, Errors.SASL_AUTHENTICATION_FAILED.code);
    assert.equal(refused.errorMessage, 'Authentication failed: Invalid username or password');
    await within('the broker to close a refused login', CLOSE_TIMEOUT_MS, client.whenClosed());
    return refusalMs;
  } finally {
    client.close();
  }
}

/** The first bytes a TLS client sends (its ClientHello), captured by a local TCP server. */
async function clientHello(): Promise<Buffer> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    const hello = new Promise<Buffer>((resolve) => server.once('connection', (socket: Socket) => socket.once('data', resolve)));
    const client = tlsConnect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
    client.on('error', () => undefined);
    const bytes = await hello;
    client.destroy();
    return bytes;
  } finally {
    server.close();
  }
}

/** A plain TCP connection to `port` that records what it receives and when it is closed. */
async function rawSocket(port: number): Promise<{ socket: Socket; received: () => Buffer; closed: Promise<void> }> {
  const socket = tcpConnect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => Buffer.concat(chunks), closed };
}

againstEachSecuredBroker('bad input on the secured listeners', (broker) => {
  let checks = 0;

  /** A kafkajs client authenticated as alice with PLAIN produces 3 records to a fresh topic and reads them back. */
  async function stillServes(): Promise<void> {
    const topic = `still-serving-${++checks}`;
    await createTopic(broker(), ADMIN, topic);
    const values = ['a', 'b', 'c'].map((v) => `${topic}-${v}`);
    assert.deepEqual(
      await kafkajsRoundTrip(kafkajsClient(broker().endpoints.SASL_PLAINTEXT, { sasl: plain(ALICE) }), topic, values),
      values,
    );
  }

  describe('SASL_PLAINTEXT', () => {
    it('answers a PLAIN SaslAuthenticate of random bytes with SASL_AUTHENTICATION_FAILED and closes the connection', async () => {
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ minLength: 0, maxLength: 512 }), async (garbage) => {
          const client = await saslConnection(broker());
          try {
            assert.equal((await handshake(client, 'PLAIN')).errorCode, Errors.NONE.code);
            const refused = await authenticate(client, Buffer.from(garbage));
            assert.equal(refused.errorCode, Errors.SASL_AUTHENTICATION_FAILED.code);
            await closedWithoutAnswer(client, 'a refused SaslAuthenticate');
          } finally {
            client.close();
          }
        }),
        { numRuns: 20 },
      );
      await stillServes();
    });

    it('closes a connection that sends Metadata before authenticating, without answering it', async () => {
      const client = await saslConnection(broker());
      try {
        client.send(frame(ApiKey.Metadata, 12, makeMetadataRequest({ topics: null })).bytes);
        await closedWithoutAnswer(client, 'Metadata before authentication');
      } finally {
        client.close();
      }
      await stillServes();
    });

    it('answers a SaslHandshake for an unknown mechanism with UNSUPPORTED_SASL_MECHANISM and the enabled ones, then closes', async () => {
      const client = await saslConnection(broker());
      try {
        const answer = await handshake(client, 'NOT-A-MECHANISM');
        assert.equal(answer.errorCode, Errors.UNSUPPORTED_SASL_MECHANISM.code);
        // Kafka lists them in no set order.
        assert.deepEqual([...answer.mechanisms].sort(), [...ENABLED_MECHANISMS].sort());
        await closedWithoutAnswer(client, 'an unsupported mechanism');
      } finally {
        client.close();
      }
      await stillServes();
    });

    it(`refuses ${FAILED_LOGINS} failed PLAIN logins in a row, ${PARALLEL_LOGINS} at a time, each after the failed-authentication delay, and then serves a good client`, async () => {
      let started = 0;
      const refusalsMs: number[] = [];
      const worker = async () => {
        while (started < FAILED_LOGINS) {
          started++;
          refusalsMs.push(await failedPlainLogin(broker()));
        }
      };
      await Promise.all(Array.from({ length: PARALLEL_LOGINS }, worker));
      assert.equal(refusalsMs.length, FAILED_LOGINS);
      // Timer granularity aside, no refusal comes back before the delay.
      assert.ok(Math.min(...refusalsMs) >= FAILED_AUTHENTICATION_DELAY_MS - 5, `fastest refusal ${Math.min(...refusalsMs).toFixed(1)} ms`);
      await stillServes();
    });
  });

  describe('SSL', () => {
    it('closes a connection that sends a plaintext ApiVersions request, without a Kafka answer', async () => {
      const { socket, received, closed } = await rawSocket(portOf(broker().endpoints.SSL));
      try {
        const { bytes } = frame(ApiKey.ApiVersions, 3, makeApiVersionsRequest({ clientSoftwareName: 'raw', clientSoftwareVersion: '1' }));
        const size = Buffer.alloc(4);
        size.writeInt32BE(bytes.length);
        socket.write(Buffer.concat([size, bytes]));
        await within('the broker to close a plaintext connection on its TLS port', CLOSE_TIMEOUT_MS, closed);
        const answer = received();
        // Whatever comes back is TLS (at most an alert record, content type 21), never a Kafka response.
        assert.ok(answer.length === 0 || answer[0] === 21, `unexpected answer ${answer.toString('hex')}`);
      } finally {
        socket.destroy();
      }
      await stillServes();
    });

    it('keeps serving other clients while TLS ClientHellos cut off halfway hang on their connections', async () => {
      const hello = await clientHello();
      const hanging = await Promise.all(Array.from({ length: 16 }, () => rawSocket(portOf(broker().endpoints.SSL))));
      try {
        for (const { socket } of hanging) socket.write(hello.subarray(0, Math.floor(hello.length / 2)));
        const topic = 'served-beside-half-handshakes';
        await createTopic(broker(), ADMIN, topic);
        const tls = kafkajsClient(broker().endpoints.SSL, { ssl: tlsOptions(broker().pki.caCert, await broker().pki.client('dave')) });
        assert.deepEqual(await kafkajsRoundTrip(tls, topic, ['x', 'y']), ['x', 'y']);
        await stillServes();
        for (const { received } of hanging) assert.equal(received()[0] ?? 21, 21, 'nothing but TLS comes back on a half handshake');
      } finally {
        for (const { socket } of hanging) socket.destroy();
      }
    });
  });
});
