// queued.max.request.bytes: the broker-wide bound on the memory of requests read and not yet
// answered (Kafka's SimpleMemoryPool). Many connections sending large requests at once never
// hold more than the bound (plus at most one request, admitted while memory was free), the
// server stops reading while the pool is exhausted, and it serves on afterwards.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Errors } from '../../../protocol/errors.ts';
import { decodeResponseHeader } from '../../../protocol/headers.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import { makeMetadataRequest, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import type { ProduceResponse } from '../../../protocol/messages/produce.ts';
import { Reader } from '../../../protocol/primitives.ts';
import { startBroker } from '../../../src/index.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { ConnectionLimits, FrameProcessor } from '../../../src/server/connection.ts';
import { SocketServer } from '../../../src/server/socket-server.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { autoCreateTopic, call, frame, oneRecordProduceRequest } from '../../helpers/raw-requests.ts';

const LIMITS: ConnectionLimits = {
  maxRequestBytes: 8 * 1024 * 1024,
  maxQueuedRequests: 500,
  maxBufferedBytes: 64 * 1024 * 1024,
  idleMs: 600_000,
};

function framed(payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length);
  return Buffer.concat([size, payload]);
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function withServer(
  processor: FrameProcessor,
  maxQueuedRequestBytes: number,
  body: (server: SocketServer, port: number) => Promise<void>,
): Promise<void> {
  const server = new SocketServer(processor, LIMITS, createLogger({ quiet: true }), { maxQueuedRequestBytes });
  await server.start([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 0, securityProtocol: 'PLAINTEXT', role: 'broker' }]);
  try {
    await body(server, server.listeners[0]!.boundPort);
  } finally {
    await server.close(1000);
  }
}

/** A request of `bytes` whose first 8 bytes say which connection sent it and its sequence number. */
function request(connection: number, sequence: number, bytes: number): Buffer {
  const payload = Buffer.alloc(bytes, 0x5a);
  payload.writeUInt32BE(connection, 0);
  payload.writeUInt32BE(sequence, 4);
  return payload;
}

describe('queued.max.request.bytes (request memory pool)', function () {
  this.timeout(60_000);

  it('never holds more than the bound across many connections with large requests, and serves on afterwards', async () => {
    const capacityBytes = 1024 * 1024;
    const requestBytes = 192 * 1024;
    const connections = 6;
    const perConnection = 12;
    let observedMaxBytes = 0;
    let sawWaiting = false;
    let server!: SocketServer;
    const processor: FrameProcessor = {
      async process(_session, frame) {
        observedMaxBytes = Math.max(observedMaxBytes, server.requestMemory.usedBytes);
        sawWaiting ||= server.openConnections.some((c) => c.isWaitingForMemory);
        await sleep(5);
        // Answer with the request's 8-byte header only: the bound is about requests.
        return { chunks: [framed(Buffer.from(frame.subarray(0, 8)))] };
      },
    };
    await withServer(processor, capacityBytes, async (s, port) => {
      server = s;
      const clients = await Promise.all(Array.from({ length: connections }, () => RawClient.connect(port)));
      // Everything at once: 6 x 12 x 192 KiB = 13.5 MiB asked for, against a 1 MiB pool.
      clients.forEach((client, c) => {
        client.write(Buffer.concat(Array.from({ length: perConnection }, (_, i) => framed(request(c, i, requestBytes)))));
      });
      const sampler = setInterval(() => {
        observedMaxBytes = Math.max(observedMaxBytes, server.requestMemory.usedBytes);
        sawWaiting ||= server.requestMemory.waitingCount > 0;
      }, 1);
      try {
        await Promise.all(
          clients.map(async (client, c) => {
            for (let i = 0; i < perConnection; i++) {
              const answer = await client.next();
              assert.deepEqual([answer.readUInt32BE(0), answer.readUInt32BE(4)], [c, i], 'in order, each request once');
            }
          }),
        );
      } finally {
        clearInterval(sampler);
      }
      const memory = server.requestMemory;
      // SimpleMemoryPool semantics: a request is admitted while at least one byte is free.
      const bound = capacityBytes + requestBytes;
      assert.ok(memory.peakUsedBytes < bound, `peak ${memory.peakUsedBytes} bytes, bound ${bound}`);
      assert.ok(observedMaxBytes <= memory.peakUsedBytes);
      assert.ok(memory.peakUsedBytes >= capacityBytes, `the pool was filled (peak ${memory.peakUsedBytes})`);
      assert.ok(sawWaiting, 'connections were held back while the pool was exhausted');
      await until(() => memory.usedBytes === 0, 'every request to return its memory');

      // It serves on: the same connections and a new one.
      clients[0]!.write(framed(request(0, 99, requestBytes)));
      assert.equal((await clients[0]!.next()).readUInt32BE(4), 99);
      const late = await RawClient.connect(port);
      late.write(framed(request(7, 1, 2 * capacityBytes)));
      assert.equal((await late.next()).readUInt32BE(0), 7, 'a request larger than the pool is admitted when it is not in deficit');
      for (const client of [...clients, late]) client.close();
      await until(() => memory.usedBytes === 0, 'the memory of the closed connections');
    });
  });

  it('returns the memory of a connection that closes with requests queued and a frame half read', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const processor: FrameProcessor = {
      async process(_session, frame) {
        await gate;
        return { chunks: [framed(Buffer.from(frame.subarray(0, 8)))] };
      },
    };
    await withServer(processor, 1024 * 1024, async (server, port) => {
      const client = await RawClient.connect(port);
      const requests = Array.from({ length: 3 }, (_, i) => framed(request(0, i, 100_000)));
      const half = framed(request(0, 3, 100_000)).subarray(0, 50_000);
      client.write(Buffer.concat([...requests, half]));
      await until(() => server.requestMemory.usedBytes === 400_000, 'three requests and the half-read frame to be reserved');
      client.close();
      await until(() => server.openConnections.length === 0, 'the server to see the close');
      assert.equal(server.requestMemory.usedBytes, 100_000, 'only the request in progress still holds memory');
      release();
      await until(() => server.requestMemory.usedBytes === 0, 'the request in progress to return its memory');
    });
  });

  it('holds a real broker to the bound under concurrent large produces from several connections', async () => {
    const capacityBytes = 1024 * 1024;
    const broker = await startBroker({ overrides: { 'queued.max.request.bytes': capacityBytes } });
    const topic = 'memory-bound';
    try {
      const admin = await RawClient.connect(broker.port);
      const value = Buffer.alloc(200 * 1024, 0x61);
      const produce = (acks: number) => oneRecordProduceRequest(topic, value, acks);
      await autoCreateTopic(admin, topic, value);

      const connections = 5;
      const perConnection = 10;
      const frames = await Promise.all(
        Array.from({ length: connections * perConnection }, async () => frame(ApiKey.Produce, 9, await produce(-1))),
      );
      const largestFrameBytes = Math.max(...frames.map((f) => f.bytes.length));
      const memory = broker.broker.socketServer.requestMemory;
      const clients = await Promise.all(Array.from({ length: connections }, () => RawClient.connect(broker.port)));
      clients.forEach((client, c) => {
        for (const f of frames.slice(c * perConnection, (c + 1) * perConnection)) client.send(f.bytes);
      });
      let observedMaxBytes = 0;
      const sampler = setInterval(() => {
        observedMaxBytes = Math.max(observedMaxBytes, memory.usedBytes);
      }, 1);
      try {
        await Promise.all(
          clients.map(async (client, c) => {
            for (const f of frames.slice(c * perConnection, (c + 1) * perConnection)) {
              const r = new Reader(await client.next());
              assert.equal(decodeResponseHeader(r, ApiKey.Produce, 9), f.id);
              const res = apis.get(ApiKey.Produce)!.decodeResponse(r, 9) as ProduceResponse;
              assert.equal(res.responses[0]!.partitionResponses[0]!.errorCode, Errors.NONE.code);
            }
          }),
        );
      } finally {
        clearInterval(sampler);
      }
      const bound = capacityBytes + largestFrameBytes;
      assert.ok(memory.peakUsedBytes < bound, `peak ${memory.peakUsedBytes} bytes, bound ${bound}`);
      assert.equal(memory.capacityBytes, capacityBytes, 'the pool is the configured queued.max.request.bytes');
      assert.ok(observedMaxBytes <= memory.peakUsedBytes);
      await until(() => memory.usedBytes === 0, 'every produce to return its memory');

      // The broker serves on: a produce and a metadata request on a fresh connection.
      const after = await RawClient.connect(broker.port);
      const res = await call<ProduceResponse>(after, ApiKey.Produce, 9, await produce(-1));
      assert.equal(res.responses[0]!.partitionResponses[0]!.errorCode, Errors.NONE.code);
      assert.equal(res.responses[0]!.partitionResponses[0]!.baseOffset, BigInt(1 + connections * perConnection));
      const again = await call<MetadataResponse>(after, ApiKey.Metadata, 9, makeMetadataRequest({ topics: null }));
      assert.ok(again.topics.some((t) => t.name === topic));
      for (const client of [admin, after, ...clients]) client.close();
    } finally {
      await broker.close();
    }
  });
});
