import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { decodeRequestHeader, encodeResponseHeader, type RequestHeader } from '../../../protocol/headers.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { makeApiVersionsResponse, makeApiVersionsResponseApiVersion } from '../../../protocol/messages/api-versions.ts';
import {
  makeMetadataResponse,
  makeMetadataResponseBroker,
  makeMetadataResponseTopic,
  makeMetadataResponsePartition,
  type MetadataResponse,
} from '../../../protocol/messages/metadata.ts';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { Reader, Writer } from '../../../protocol/primitives.ts';
import { ConnectionError, KafkaConnection } from '../../../src/client/connection.ts';
import { KafkaCluster, parseHostPort } from '../../../src/client/cluster.ts';

type Handler = (header: RequestHeader, body: Reader, reply: (apiVersion: number, msg: unknown) => void) => void;

/** The fake brokers' side of every open connection: a server's close() waits for them to end. */
const accepted = new Set<Socket>();

/** A fake broker speaking our codec: frames in, the handler's replies out. */
async function fakeBroker(handler: Handler): Promise<{ server: Server; port: number; seen: RequestHeader[] }> {
  const seen: RequestHeader[] = [];
  const server = createServer((socket: Socket) => {
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readInt32BE(0)) {
        const frame = buffered.subarray(4, 4 + buffered.readInt32BE(0));
        buffered = buffered.subarray(4 + frame.length);
        const r = new Reader(frame);
        const header = decodeRequestHeader(r);
        seen.push(header);
        handler(header, r, (apiVersion, msg) => {
          const w = new Writer();
          const setLength = w.reserveInt32();
          encodeResponseHeader(w, header.correlationId, header.requestApiKey, apiVersion);
          apis.get(header.requestApiKey)!.encodeResponse(w, msg, apiVersion);
          setLength(w.length - 4);
          socket.write(w.toBuffer());
        });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, seen };
}

const OUR_RANGES = [ApiKey.ApiVersions, ApiKey.Metadata].map((apiKey) =>
  makeApiVersionsResponseApiVersion({
    apiKey,
    minVersion: 0,
    maxVersion: apiKey === ApiKey.Metadata ? 9 : 3,
  }),
);

function metadataFor(port: number, topic: string): MetadataResponse {
  return makeMetadataResponse({
    brokers: [makeMetadataResponseBroker({ nodeId: 7, host: '127.0.0.1', port })],
    controllerId: 7,
    topics: [
      makeMetadataResponseTopic({
        name: topic,
        partitions: [makeMetadataResponsePartition({ partitionIndex: 0, leaderId: 7, replicaNodes: [7], isrNodes: [7] })],
      }),
    ],
  });
}

describe('client: KafkaConnection', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    // A test that failed before closing its client leaves both ends open.
    for (const socket of accepted) socket.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it('negotiates with ApiVersions and picks the highest common version', async () => {
    const broker = await fakeBroker((h, _r, reply) => {
      if (h.requestApiKey === ApiKey.ApiVersions) reply(h.requestApiVersion, makeApiVersionsResponse({ apiKeys: OUR_RANGES }));
    });
    servers.push(broker.server);
    const conn = await KafkaConnection.connect('127.0.0.1', broker.port);
    assert.equal(broker.seen[0]!.requestApiVersion, 3);
    assert.equal(conn.version(ApiKey.Metadata), 9);
    assert.equal(conn.version(ApiKey.Metadata, 4), 4);
    assert.throws(
      () => conn.version(ApiKey.Produce),
      (e: unknown) => e instanceof KafkaError && e.code === Errors.UNSUPPORTED_VERSION.code,
    );
    conn.close();
  });

  it("retries ApiVersions at the broker's version after UNSUPPORTED_VERSION (KIP-511)", async () => {
    const broker = await fakeBroker((h, _r, reply) => {
      if (h.requestApiVersion > 1) {
        reply(
          0,
          makeApiVersionsResponse({
            errorCode: Errors.UNSUPPORTED_VERSION.code,
            apiKeys: [makeApiVersionsResponseApiVersion({ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 1 })],
          }),
        );
      } else {
        reply(h.requestApiVersion, makeApiVersionsResponse({ apiKeys: OUR_RANGES }));
      }
    });
    servers.push(broker.server);
    const conn = await KafkaConnection.connect('127.0.0.1', broker.port);
    assert.deepEqual(
      broker.seen.map((h) => h.requestApiVersion),
      [3, 1],
    );
    assert.equal(conn.version(ApiKey.Metadata), 9);
    conn.close();
  });

  it('matches pipelined responses to their requests by correlation id', async () => {
    let held: (() => void)[] = [];
    const broker = await fakeBroker((h, _r, reply) => {
      if (h.requestApiKey === ApiKey.ApiVersions) {
        reply(h.requestApiVersion, makeApiVersionsResponse({ apiKeys: OUR_RANGES }));
        return;
      }
      // Hold ten requests, then answer them all in one go, in order.
      held.push(() => reply(h.requestApiVersion, metadataFor(1, `t${held.length}`)));
      if (held.length === 10) {
        const all = held;
        held = [];
        all.forEach((f, i) => {
          held.length = i;
          f();
        });
      }
    });
    servers.push(broker.server);
    const conn = await KafkaConnection.connect('127.0.0.1', broker.port);
    const responses = Array.from({ length: 10 }, () =>
      conn.send<MetadataResponse>(ApiKey.Metadata, {
        topics: null,
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      }),
    );
    assert.equal(conn.inFlight, 10);
    const names = (await Promise.all(responses)).map((r) => r.topics[0]!.name);
    assert.deepEqual(
      names,
      Array.from({ length: 10 }, (_, i) => `t${i}`),
    );
    const ids = broker.seen.slice(1).map((h) => h.correlationId);
    assert.equal(new Set(ids).size, 10);
    conn.close();
  });

  it('closes the connection and fails its requests when a response does not come in time', async () => {
    const broker = await fakeBroker((h, _r, reply) => {
      if (h.requestApiKey === ApiKey.ApiVersions) reply(h.requestApiVersion, makeApiVersionsResponse({ apiKeys: OUR_RANGES }));
    });
    servers.push(broker.server);
    const conn = await KafkaConnection.connect('127.0.0.1', broker.port, { requestTimeoutMs: 200 });
    const pending = conn.send(ApiKey.Metadata, {
      topics: null,
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
    await assert.rejects(pending, (e: unknown) => e instanceof ConnectionError && /no response to Metadata/.test(e.message));
    assert.ok(conn.closed);
    await assert.rejects(conn.send(ApiKey.Metadata, {}), ConnectionError);
  });

  it('KafkaCluster finds a partition leader through Metadata and reuses connections', async () => {
    let port = 0;
    const broker = await fakeBroker((h, _r, reply) => {
      if (h.requestApiKey === ApiKey.ApiVersions) reply(h.requestApiVersion, makeApiVersionsResponse({ apiKeys: OUR_RANGES }));
      else reply(h.requestApiVersion, metadataFor(port, 'orders'));
    });
    servers.push(broker.server);
    port = broker.port;
    const cluster = new KafkaCluster([`127.0.0.1:${port}`]);
    const leader = await cluster.leaderConnection('orders', 0);
    assert.equal(leader.port, port);
    assert.equal(await cluster.anyConnection(), leader);
    await assert.rejects(cluster.leaderConnection('orders', 5), /UNKNOWN_TOPIC_OR_PARTITION/);
    assert.equal(broker.seen.filter((h) => h.requestApiKey === ApiKey.ApiVersions).length, 1);
    await cluster.close();
  });

  it('parses host:port, bracketed IPv6 included', () => {
    assert.deepEqual(parseHostPort('127.0.0.1:9092'), { host: '127.0.0.1', port: 9092 });
    assert.deepEqual(parseHostPort('[::1]:19092'), { host: '::1', port: 19092 });
    assert.throws(() => parseHostPort('localhost'), /invalid address/);
  });
});
