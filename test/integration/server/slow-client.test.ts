import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Reader } from '../../../protocol/primitives.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { decodeApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { Errors } from '../../../protocol/errors.ts';
import { startBroker } from '../../../src/index.ts';
import { RawClient, requestPayload } from '../../helpers/raw-client.ts';

describe('a broker with a client that never reads', () => {
  it('stops reading that connection, holds its memory to the bound, and serves others', async () => {
    const boundBytes = 64 * 1024;
    const broker = await startBroker({ overrides: { 'connection.max.buffered.bytes': boundBytes } });
    const clients: RawClient[] = [];
    try {
      const slow = await RawClient.connect(broker.port);
      // A paused client never reads the broker's close: closed in `finally` whatever fails.
      clients.push(slow);
      slow.socket.pause();
      const request = requestPayload(ApiKey.ApiVersions, 2, 1, Buffer.alloc(0));
      const frame = Buffer.concat([Buffer.alloc(4), request]);
      frame.writeInt32BE(request.length);
      // ~100k pipelined requests whose responses (~13 MB) far exceed the bound plus socket buffers.
      slow.write(Buffer.concat(Array.from({ length: 100_000 }, () => frame)));
      const server = broker.broker.socketServer;
      for (let i = 0; i < 500 && !server.openConnections.some((c) => c.isPaused); i++) await sleep(10);
      const conn = server.openConnections.find((c) => c.isPaused);
      assert.ok(conn, 'the slow connection is paused');
      await sleep(100);
      assert.ok(conn.bufferedBytes < boundBytes + 2 * 1024 * 1024, `holds ${conn.bufferedBytes} bytes`);

      const other = await RawClient.connect(broker.port);
      other.send(requestPayload(ApiKey.ApiVersions, 2, 77, Buffer.alloc(0)));
      const r = new Reader(await other.next());
      assert.equal(r.int32(), 77);
      assert.equal(decodeApiVersionsResponse(r, 2).errorCode, Errors.NONE.code);
      other.close();
    } finally {
      for (const c of clients) c.close();
      await broker.close();
    }
  });
});
