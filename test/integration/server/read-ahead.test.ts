// How far a broker reads ahead of the request it serves on a connection. Requests on one
// connection are served one at a time, in order (as Kafka's network threads mute a channel
// until its response is sent); what a producer pipelines beyond connection.max.buffered.bytes
// (2 MiB by default) waits in the kernel's socket buffers, not in buffers the broker holds
// while the requests ahead of it are served. Real broker, default settings.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Errors } from '../../../protocol/errors.ts';
import { decodeResponseHeader } from '../../../protocol/headers.ts';
import {
  decodeFetchResponse,
  makeFetchRequest,
  makeFetchRequestFetchPartition,
  makeFetchRequestFetchTopic,
} from '../../../protocol/messages/fetch.ts';
import { ApiKey, apis } from '../../../protocol/messages/index.ts';
import type { ProduceResponse } from '../../../protocol/messages/produce.ts';
import { Reader } from '../../../protocol/primitives.ts';
import { startBroker } from '../../../src/index.ts';
import { RawClient } from '../../helpers/raw-client.ts';
import { autoCreateTopic, frame, oneRecordProduceRequest } from '../../helpers/raw-requests.ts';

const DEFAULT_BOUND_BYTES = 2 * 1024 * 1024;
/** The most one socket read hands the broker (Node reads sockets 64 KiB at a time). */
const SOCKET_READ_BYTES = 64 * 1024;
const PIPELINED = 24;
const LONG_POLL_MS = 3000;

describe('read-ahead on a connection (real broker, defaults)', function () {
  this.timeout(60_000);

  it('holds no more than connection.max.buffered.bytes of requests queued behind a long poll, then serves them all in order', async () => {
    const broker = await startBroker();
    const topic = 'read-ahead';
    const clients: RawClient[] = [];
    try {
      const client = await RawClient.connect(broker.port);
      clients.push(client);
      const value = Buffer.alloc(256 * 1024, 0x61);
      await autoCreateTopic(client, topic, value);

      // A fetch at the log end that waits for more than will arrive, then produces behind it.
      const longPoll = frame(
        ApiKey.Fetch,
        11,
        makeFetchRequest({
          maxWaitMs: LONG_POLL_MS,
          minBytes: 64 * 1024 * 1024,
          maxBytes: 64 * 1024 * 1024,
          topics: [
            makeFetchRequestFetchTopic({
              topic,
              partitions: [makeFetchRequestFetchPartition({ partition: 0, fetchOffset: 1n, partitionMaxBytes: 1024 * 1024 })],
            }),
          ],
        }),
      );
      const produces = await Promise.all(
        Array.from({ length: PIPELINED }, async () => frame(ApiKey.Produce, 9, await oneRecordProduceRequest(topic, value, 1))),
      );
      const largestFrameBytes = Math.max(...produces.map((f) => f.bytes.length));
      client.send(longPoll.bytes);
      for (const f of produces) client.send(f.bytes);

      const server = broker.broker.socketServer;
      let conn = server.openConnections.find((c) => c.isPaused);
      for (let i = 0; i < 200 && conn === undefined; i++) {
        await sleep(10);
        conn = server.openConnections.find((c) => c.isPaused);
      }
      assert.ok(conn, 'the connection stops being read while the long poll waits');
      let heldBytes = 0;
      let heldRequests = 0;
      const until = Date.now() + LONG_POLL_MS / 3;
      while (Date.now() < until) {
        heldBytes = Math.max(heldBytes, conn.bufferedBytes);
        heldRequests = Math.max(heldRequests, conn.queuedRequests);
        await sleep(5);
      }
      const bound = DEFAULT_BOUND_BYTES + largestFrameBytes + SOCKET_READ_BYTES;
      assert.ok(heldBytes <= bound, `held ${heldBytes} bytes, bound ${bound}`);
      assert.ok(heldRequests < PIPELINED, `held ${heldRequests} of the ${PIPELINED} pipelined produces: the rest wait in the socket`);

      const fetched = new Reader(await client.next());
      assert.equal(decodeResponseHeader(fetched, ApiKey.Fetch, 11), longPoll.id);
      assert.equal(decodeFetchResponse(fetched, 11).responses[0]!.partitions[0]!.errorCode, Errors.NONE.code);
      for (const [i, f] of produces.entries()) {
        const r = new Reader(await client.next());
        assert.equal(decodeResponseHeader(r, ApiKey.Produce, 9), f.id);
        const partition = (apis.get(ApiKey.Produce)!.decodeResponse(r, 9) as ProduceResponse).responses[0]!.partitionResponses[0]!;
        assert.equal(partition.errorCode, Errors.NONE.code);
        assert.equal(partition.baseOffset, BigInt(1 + i));
      }
    } finally {
      for (const c of clients) c.close();
      await broker.close();
    }
  });
});
