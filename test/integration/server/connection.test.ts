import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { SocketServer } from '../../../src/server/socket-server.ts';
import { ConnectionClosingError, type ConnectionLimits, type FrameProcessor } from '../../../src/server/connection.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { Session } from '../../../src/server/session.ts';
import { RawClient } from '../../helpers/raw-client.ts';

const LIMITS: ConnectionLimits = { maxRequestBytes: 1024 * 1024, maxQueuedRequests: 500, maxBufferedBytes: 1024 * 1024, idleMs: 600_000 };

function framed(payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length);
  return Buffer.concat([size, payload]);
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** Answers each frame with its own bytes, after an optional delay chosen per frame. */
function echo(delayMs: (frame: Buffer) => number = () => 0): FrameProcessor {
  return {
    async process(_session: Session, frame: Buffer) {
      const ms = delayMs(frame);
      if (ms > 0) await sleep(ms);
      return { chunks: [framed(Buffer.from(frame))] };
    },
  };
}

async function withServer(
  processor: FrameProcessor,
  limits: ConnectionLimits,
  body: (server: SocketServer, port: number) => Promise<void>,
): Promise<void> {
  const server = new SocketServer(processor, limits, createLogger({ quiet: true }));
  await server.start([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 0, securityProtocol: 'PLAINTEXT', role: 'broker' }]);
  try {
    await body(server, server.listeners[0]!.boundPort);
  } finally {
    await server.close(1000);
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('server connections', () => {
  it('cuts frames out of a stream split at every byte', async () => {
    await withServer(echo(), LIMITS, async (_server, port) => {
      const client = await RawClient.connect(port);
      const bytes = Buffer.concat([framed(Buffer.from('first')), framed(Buffer.from('second frame'))]);
      for (const b of bytes) {
        client.write(Buffer.from([b]));
        await sleep(0);
      }
      assert.equal((await client.next()).toString(), 'first');
      assert.equal((await client.next()).toString(), 'second frame');
      client.close();
    });
  });

  it('cuts any sequence of frames out of a stream split at arbitrary points', async () => {
    const frameArb = fc
      .oneof(
        fc.uint8Array({ maxLength: 64 }),
        fc.integer({ min: 0, max: 200_000 }).map((n) => new Uint8Array(n).map((_, i) => (i * 31 + n) % 251)),
      )
      .map((a) => Buffer.from(a));
    await fc.assert(
      fc.asyncProperty(
        fc.array(frameArb, { minLength: 1, maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (payloads, cutSeeds) => {
          await withServer(echo(), LIMITS, async (_server, port) => {
            const client = await RawClient.connect(port);
            const stream = Buffer.concat(payloads.map(framed));
            const cuts = [...new Set(cutSeeds.map((c) => c % stream.length))].sort((a, b) => a - b);
            let from = 0;
            for (const cut of [...cuts, stream.length]) {
              if (cut <= from) continue;
              client.write(stream.subarray(from, cut));
              from = cut;
              await sleep(1);
            }
            for (const payload of payloads) assert.ok((await client.next()).equals(payload));
            client.close();
          });
        },
      ),
      { numRuns: 25 },
    );
  });

  it('answers pipelined requests in request order even when later ones finish first', async () => {
    // Frame i sleeps (20 - i) ms, so without sequencing the answers would come out reversed.
    await withServer(
      echo((f) => 20 - f.readUInt32BE(0)),
      LIMITS,
      async (_server, port) => {
        const client = await RawClient.connect(port);
        client.write(Buffer.concat(Array.from({ length: 20 }, (_, i) => framed(u32(i)))));
        for (let i = 0; i < 20; i++) assert.equal((await client.next()).readUInt32BE(0), i);
        client.close();
      },
    );
  });

  it('keeps answering later requests after one that has no response (acks=0)', async () => {
    const processor: FrameProcessor = {
      async process(_s, frame) {
        return frame.readUInt32BE(0) % 2 === 0 ? null : { chunks: [framed(Buffer.from(frame))] };
      },
    };
    await withServer(processor, LIMITS, async (_server, port) => {
      const client = await RawClient.connect(port);
      client.write(Buffer.concat(Array.from({ length: 10 }, (_, i) => framed(u32(i)))));
      for (const expected of [1, 3, 5, 7, 9]) assert.equal((await client.next()).readUInt32BE(0), expected);
      client.close();
    });
  });

  it('gives other connections their turn while one pipelines requests that complete without waiting on I/O', async () => {
    // A's requests are answered within microtasks once its first is let through (an append
    // written in place does that); B's request lets A's first through, then waits for the next
    // turn of the event loop, as a request that reads a file does. Served back to back, all of
    // A's queue would complete before B's turn came.
    const completed: string[] = [];
    let releaseA!: () => void;
    const gate = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    const processor: FrameProcessor = {
      async process(_s, frame) {
        const tag = frame.toString();
        if (tag === 'a0') await gate;
        if (tag === 'b') {
          releaseA();
          await new Promise((resolve) => setImmediate(resolve));
        }
        completed.push(tag);
        return { chunks: [framed(Buffer.from(frame))] };
      },
    };
    await withServer(processor, LIMITS, async (server, port) => {
      const a = await RawClient.connect(port);
      a.write(Buffer.concat(Array.from({ length: 200 }, (_, i) => framed(Buffer.from(`a${i}`)))));
      await until(() => server.openConnections[0]?.queuedRequests === 199, "A's requests to be queued behind its first");
      const b = await RawClient.connect(port);
      b.write(framed(Buffer.from('b')));
      assert.equal((await b.next()).toString(), 'b');
      for (let i = 0; i < 200; i++) assert.equal((await a.next()).toString(), `a${i}`);
      assert.ok(completed.indexOf('b') <= 2, `B completed after ${completed.indexOf('b')} of A's requests`);
      a.close();
      b.close();
    });
  });

  it('stops reading a client that never reads its responses, and resumes when it does', async () => {
    const responseBytes = 256 * 1024;
    const processor: FrameProcessor = {
      async process() {
        return { chunks: [Buffer.concat([u32(responseBytes), Buffer.alloc(responseBytes)])] };
      },
    };
    const limits = { ...LIMITS, maxBufferedBytes: 2 * 1024 * 1024 };
    await withServer(processor, limits, async (server, port) => {
      const client = await RawClient.connect(port);
      // A paused client never reads the server's close: it must be closed here whatever fails.
      try {
        client.socket.pause();
        const requests = 300;
        client.write(Buffer.concat(Array.from({ length: requests }, (_, i) => framed(u32(i)))));
        await until(() => server.openConnections[0]?.isPaused === true, 'the server to pause the connection');
        await sleep(200);
        const conn = server.openConnections[0]!;
        // Bounded: the limit plus at most one response over it, though 300 * 256 KiB were asked for.
        assert.ok(conn.bufferedBytes <= limits.maxBufferedBytes + responseBytes + 4 + requests * 8, `buffered ${conn.bufferedBytes} bytes`);
        assert.ok(conn.isPaused);
        let received = 0;
        client.socket.resume();
        while (received < requests) {
          await client.next();
          received++;
        }
        assert.equal(received, requests);
      } finally {
        client.close();
      }
    });
  });

  it('receives a frame larger than the buffering bound (bounded by socket.request.max.bytes instead)', async () => {
    await withServer(echo(), { ...LIMITS, maxBufferedBytes: 64 * 1024, maxRequestBytes: 8 * 1024 * 1024 }, async (_server, port) => {
      const client = await RawClient.connect(port);
      const big = Buffer.alloc(4 * 1024 * 1024, 7);
      client.write(framed(big));
      assert.ok((await client.next()).equals(big));
      client.close();
    });
  });

  it('stops reading while queued.max.requests requests wait', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const processor: FrameProcessor = {
      async process(_s, frame) {
        await gate;
        return { chunks: [framed(Buffer.from(frame))] };
      },
    };
    await withServer(processor, { ...LIMITS, maxQueuedRequests: 10 }, async (server, port) => {
      const client = await RawClient.connect(port);
      client.write(Buffer.concat(Array.from({ length: 100 }, (_, i) => framed(u32(i)))));
      await until(() => server.openConnections[0]?.isPaused === true, 'the server to pause the connection');
      assert.ok(server.openConnections[0]!.queuedRequests >= 10);
      release();
      for (let i = 0; i < 100; i++) assert.equal((await client.next()).readUInt32BE(0), i);
      client.close();
    });
  });

  it('closes on a size prefix above socket.request.max.bytes without waiting for the body', async () => {
    await withServer(echo(), LIMITS, async (_server, port) => {
      const client = await RawClient.connect(port);
      client.write(u32(LIMITS.maxRequestBytes + 1));
      await client.whenClosed();
    });
  });

  it('closes on a negative size prefix', async () => {
    await withServer(echo(), LIMITS, async (_server, port) => {
      const client = await RawClient.connect(port);
      client.write(Buffer.from([0xff, 0xff, 0xff, 0xf0]));
      await client.whenClosed();
    });
  });

  it('closes the connection on a protocol violation, and other connections keep working', async () => {
    const processor: FrameProcessor = {
      async process(_s, frame) {
        if (frame.toString() === 'bad') throw new ConnectionClosingError('bad frame');
        return { chunks: [framed(Buffer.from(frame))] };
      },
    };
    await withServer(processor, LIMITS, async (_server, port) => {
      const good = await RawClient.connect(port);
      const bad = await RawClient.connect(port);
      bad.write(Buffer.concat([framed(Buffer.from('ok')), framed(Buffer.from('bad')), framed(Buffer.from('after'))]));
      assert.equal((await bad.next()).toString(), 'ok');
      await bad.whenClosed();
      await assert.rejects(bad.next());
      good.write(framed(Buffer.from('still here')));
      assert.equal((await good.next()).toString(), 'still here');
      good.close();
    });
  });

  it('closes connections idle for connections.max.idle.ms', async () => {
    await withServer(echo(), { ...LIMITS, idleMs: 100 }, async (_server, port) => {
      const client = await RawClient.connect(port);
      client.write(framed(Buffer.from('hello')));
      assert.equal((await client.next()).toString(), 'hello');
      await client.whenClosed();
    });
  });

  it('on close, finishes the request in progress and delivers its response', async () => {
    let started!: () => void;
    const inProgress = new Promise<void>((resolve) => {
      started = resolve;
    });
    const processor: FrameProcessor = {
      async process(_s, frame) {
        started();
        await sleep(100);
        return { chunks: [framed(Buffer.from(frame))] };
      },
    };
    const server = new SocketServer(processor, LIMITS, createLogger({ quiet: true }));
    await server.start([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 0, securityProtocol: 'PLAINTEXT', role: 'broker' }]);
    const client = await RawClient.connect(server.listeners[0]!.boundPort);
    client.write(framed(Buffer.from('slow')));
    await inProgress;
    const closing = server.close(5000);
    assert.equal((await client.next()).toString(), 'slow');
    await closing;
    await client.whenClosed();
  });
});
