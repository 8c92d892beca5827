import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Reader } from '../../../protocol/primitives.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { decodeApiVersionsResponse, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { decodeDescribeGroupsResponse, makeDescribeGroupsResponse } from '../../../protocol/messages/describe-groups.ts';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import { registerApiVersions } from '../../../src/handlers/index.ts';
import { HandlerRegistry } from '../../../src/handlers/registry.ts';
import { RequestProcessor } from '../../../src/server/request-processor.ts';
import type { Session } from '../../../src/server/session.ts';
import { SocketServer } from '../../../src/server/socket-server.ts';
import { RawClient, requestPayload } from '../../helpers/raw-client.ts';

interface Harness {
  port: number;
  logLines: Record<string, unknown>[];
  describeGroupsCalls: { groups: string[]; session: Session }[];
  close(): Promise<void>;
}

async function startHarness(): Promise<Harness> {
  const logLines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const registry = new HandlerRegistry();
  registerApiVersions(registry);
  const describeGroupsCalls: Harness['describeGroupsCalls'] = [];
  registry.register(ApiKey.DescribeGroups, (ctx, request) => {
    describeGroupsCalls.push({ groups: request.groups, session: ctx.session });
    if (request.groups.includes('boom')) throw new Error('handler bug');
    if (request.groups.includes('refuse')) throw new KafkaError(Errors.INVALID_REQUEST, 'refused');
    return makeDescribeGroupsResponse();
  });
  const server = new SocketServer(
    new RequestProcessor(registry, logger),
    { maxRequestBytes: 100 * 1024 * 1024, maxQueuedRequests: 500, maxBufferedBytes: 16 * 1024 * 1024, idleMs: 600_000 },
    logger,
  );
  await server.start([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 0, securityProtocol: 'PLAINTEXT', role: 'broker' }]);
  return { port: server.listeners[0]!.boundPort, logLines, describeGroupsCalls, close: () => server.close(1000) };
}

function compactString(s: string): Buffer {
  const b = Buffer.from(s);
  return Buffer.concat([Buffer.from([b.length + 1]), b]);
}

/** ApiVersions request body: empty before v3; client software name/version (+ tags) from v3. */
function apiVersionsBody(version: number, name = 'sluice-test', softwareVersion = '1.0'): Buffer {
  return version >= 3 ? Buffer.concat([compactString(name), compactString(softwareVersion), Buffer.from([0])]) : Buffer.alloc(0);
}

async function apiVersions(
  client: RawClient,
  version: number,
  correlationId: number,
  body = apiVersionsBody(version),
): Promise<{ correlationId: number; response: ApiVersionsResponse; readVersion: number }> {
  client.send(requestPayload(ApiKey.ApiVersions, version, correlationId, body, version >= 3));
  const frame = await client.next();
  const r = new Reader(frame);
  const gotCorrelationId = r.int32();
  // Response header v0 always: the body starts right after the correlation id.
  const readVersion = version > 4 ? 0 : version;
  const response = decodeApiVersionsResponse(r, readVersion);
  assert.equal(r.remaining(), 0, 'the whole frame is the response');
  return { correlationId: gotCorrelationId, response, readVersion };
}

function violations(h: Harness): Record<string, unknown>[] {
  return h.logLines.filter((l) => l.msg === 'closing connection: protocol violation');
}

describe('request processing', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => {
    await h.close();
  });

  for (const version of [0, 1, 2, 3, 4]) {
    it(`answers ApiVersions v${version} with exactly the registered APIs, header v0`, async () => {
      const client = await RawClient.connect(h.port);
      const { correlationId, response } = await apiVersions(client, version, 7 + version);
      assert.equal(correlationId, 7 + version);
      assert.equal(response.errorCode, Errors.NONE.code);
      assert.deepEqual(
        response.apiKeys.map((k) => [k.apiKey, k.minVersion, k.maxVersion]),
        [
          [ApiKey.DescribeGroups, 0, 5],
          [ApiKey.ApiVersions, 0, 4],
        ],
      );
      client.close();
    });
  }

  it('records the client software name and version from ApiVersions v3+ on the connection', async () => {
    const client = await RawClient.connect(h.port);
    await apiVersions(client, 3, 1, apiVersionsBody(3, 'librdkafka', '2.0.2'));
    client.send(requestPayload(ApiKey.DescribeGroups, 0, 2, Buffer.from([0, 0, 0, 0])));
    await client.next();
    assert.equal(h.describeGroupsCalls[0]!.session.clientSoftwareName, 'librdkafka');
    assert.equal(h.describeGroupsCalls[0]!.session.clientSoftwareVersion, '2.0.2');
    client.close();
  });

  it('answers ApiVersions v3 with an invalid client software name with INVALID_REQUEST', async () => {
    const client = await RawClient.connect(h.port);
    const { response } = await apiVersions(client, 3, 1, apiVersionsBody(3, '-bad name-', '1'));
    assert.equal(response.errorCode, Errors.INVALID_REQUEST.code);
    client.close();
  });

  for (const version of [5, 127]) {
    it(`answers ApiVersions v${version} (newer than ours) at v0 with UNSUPPORTED_VERSION and our ranges, and keeps the connection`, async () => {
      const client = await RawClient.connect(h.port);
      // A newer client's body is unknown to us; it must not matter.
      const { correlationId, response } = await apiVersions(client, version, 42, Buffer.from([9, 9, 9, 9, 0]));
      assert.equal(correlationId, 42);
      assert.equal(response.errorCode, Errors.UNSUPPORTED_VERSION.code);
      assert.ok(response.apiKeys.some((k) => k.apiKey === ApiKey.ApiVersions && k.minVersion === 0 && k.maxVersion === 4));
      const retry = await apiVersions(client, 3, 43);
      assert.equal(retry.response.errorCode, Errors.NONE.code);
      client.close();
    });
  }

  it('closes on an unknown api key with one log line naming client, api key and reason', async () => {
    const client = await RawClient.connect(h.port);
    client.send(requestPayload(999, 0, 1, Buffer.alloc(0)));
    await client.whenClosed();
    const lines = violations(h);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.apiKey, 999);
    assert.match(String(lines[0]!.client), /^127\.0\.0\.1:\d+$/);
    assert.match(String(lines[0]!.reason), /unknown/);
  });

  it('closes on an api the codec knows but nothing serves (Metadata here)', async () => {
    const client = await RawClient.connect(h.port);
    client.send(requestPayload(ApiKey.Metadata, 1, 1, Buffer.from([0xff, 0xff, 0xff, 0xff])));
    await client.whenClosed();
    assert.equal(violations(h)[0]!.apiKey, ApiKey.Metadata);
  });

  it('closes on an unsupported version of a served api', async () => {
    const client = await RawClient.connect(h.port);
    client.send(requestPayload(ApiKey.DescribeGroups, 99, 1, Buffer.alloc(0)));
    await client.whenClosed();
    assert.match(String(violations(h)[0]!.reason), /unsupported version/);
    assert.equal(h.describeGroupsCalls.length, 0);
  });

  it('closes on a truncated request without calling the handler', async () => {
    const client = await RawClient.connect(h.port);
    // Two group names announced, one present.
    const body = Buffer.concat([Buffer.from([0, 0, 0, 2, 0, 1]), Buffer.from('g')]);
    client.send(requestPayload(ApiKey.DescribeGroups, 0, 1, body));
    await client.whenClosed();
    assert.match(String(violations(h)[0]!.reason), /malformed/);
    assert.equal(h.describeGroupsCalls.length, 0);
  });

  it('closes on an array count in the billions without allocating for it', async () => {
    const before = process.memoryUsage().arrayBuffers;
    const classic = await RawClient.connect(h.port);
    classic.send(requestPayload(ApiKey.DescribeGroups, 0, 1, Buffer.from([0x7f, 0xff, 0xff, 0xff])));
    await classic.whenClosed();
    const compact = await RawClient.connect(h.port);
    // Compact array length 2^32 - 1 as an unsigned varint, in flexible DescribeGroups v5.
    compact.send(requestPayload(ApiKey.DescribeGroups, 5, 1, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0]), true));
    await compact.whenClosed();
    assert.equal(violations(h).length, 2);
    assert.equal(h.describeGroupsCalls.length, 0);
    assert.ok(process.memoryUsage().arrayBuffers - before < 64 * 1024 * 1024);
  });

  it('closes on a frame too short for a request header', async () => {
    const client = await RawClient.connect(h.port);
    client.send(Buffer.from([0, 18, 0]));
    await client.whenClosed();
    assert.match(String(violations(h)[0]!.reason), /truncated request header/);
  });

  it('answers a request whose handler throws with UNKNOWN_SERVER_ERROR for each group it named, logs the stack, and serves on', async () => {
    const client = await RawClient.connect(h.port);
    client.send(requestPayload(ApiKey.DescribeGroups, 0, 1, Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 4]), Buffer.from('boom')])));
    const r = new Reader(await client.next());
    assert.equal(r.int32(), 1);
    const response = decodeDescribeGroupsResponse(r, 0);
    assert.deepEqual(
      response.groups.map((g) => [g.groupId, g.errorCode]),
      [['boom', Errors.UNKNOWN_SERVER_ERROR.code]],
    );
    const failures = h.logLines.filter((l) => l.msg === 'request handling failed');
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!.apiKey, ApiKey.DescribeGroups);
    assert.equal(failures[0]!.level, 50);
    assert.match(String((failures[0]!.err as { stack?: string }).stack), /handler bug/);
    const { response: versions } = await apiVersions(client, 1, 2);
    assert.equal(versions.errorCode, Errors.NONE.code);
    assert.equal(client.closed, false);
    client.close();
  });

  it('answers a request the handler refuses with a KafkaError with that error code and its message', async () => {
    const client = await RawClient.connect(h.port);
    client.send(requestPayload(ApiKey.DescribeGroups, 0, 3, Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 6]), Buffer.from('refuse')])));
    const r = new Reader(await client.next());
    assert.equal(r.int32(), 3);
    const response = decodeDescribeGroupsResponse(r, 0);
    assert.deepEqual(
      response.groups.map((g) => [g.groupId, g.errorCode]),
      [['refuse', Errors.INVALID_REQUEST.code]],
    );
    assert.equal(h.logLines.filter((l) => l.msg === 'request refused').length, 1);
    client.close();
  });

  it('closes a connection sending garbage while other connections keep being served', async () => {
    const good = await RawClient.connect(h.port);
    const bad = await RawClient.connect(h.port);
    bad.write(Buffer.from('GET / HTTP/1.1\r\nHost: example\r\n\r\n'));
    await bad.whenClosed();
    const { response } = await apiVersions(good, 2, 5);
    assert.equal(response.errorCode, Errors.NONE.code);
    good.close();
  });
});
