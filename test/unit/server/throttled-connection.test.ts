import assert from 'node:assert/strict';
import { createLogger } from '../../../src/observability/logger.ts';
import type { NetSocket } from '../../../src/runtime/network.ts';
import type { ConnectionLimits, FrameProcessor, ResponseFrame } from '../../../src/server/connection.ts';
import { SocketServer } from '../../../src/server/socket-server.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { MemoryNetwork } from '../../helpers/memory-network.ts';

const LIMITS: ConnectionLimits = { maxRequestBytes: 1024 * 1024, maxQueuedRequests: 500, maxBufferedBytes: 1024 * 1024, idleMs: 0 };

function framed(payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length);
  return Buffer.concat([size, payload]);
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Echoes each frame; a frame reading `throttle:N` is answered and then throttles the connection
 * N ms, `mute:N` throttles it without an answer (an acks=0 produce over its quota).
 */
const THROTTLING_ECHO: FrameProcessor = {
  process(_session, frame): Promise<ResponseFrame> {
    const text = frame.toString();
    const [kind, ms] = text.split(':');
    if (kind === 'mute') return Promise.resolve({ chunks: [], throttleMs: Number(ms) });
    const response = { chunks: [framed(Buffer.from(frame))] };
    return Promise.resolve(kind === 'throttle' ? { ...response, throttleMs: Number(ms) } : response);
  },
};

async function withClient(body: (client: { socket: NetSocket; received: () => string[] }, clock: ManualClock) => Promise<void>) {
  const clock = new ManualClock();
  const network = new MemoryNetwork(clock);
  const server = new SocketServer(THROTTLING_ECHO, LIMITS, createLogger({ quiet: true }), {}, { network, clock });
  await server.start([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092, securityProtocol: 'PLAINTEXT', role: 'broker' }]);
  const socket = network.connect('127.0.0.1', 9092);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const received = () => {
    const all = Buffer.concat(chunks);
    const out: string[] = [];
    for (let at = 0; at + 4 <= all.length; at += 4 + all.readInt32BE(at))
      out.push(all.subarray(at + 4, at + 4 + all.readInt32BE(at)).toString());
    return out;
  };
  try {
    await body({ socket, received }, clock);
  } finally {
    await server.stopAccepting();
    for (const c of server.openConnections) c.destroy();
  }
}

describe('a throttled connection (a quota muting the channel)', () => {
  it('answers the throttled request at once, then serves nothing more until the throttle time passed', async () => {
    await withClient(async (client, clock) => {
      client.socket.write(Buffer.concat([framed(Buffer.from('throttle:100')), framed(Buffer.from('next'))]));
      await settle();
      assert.deepEqual(client.received(), ['throttle:100']);
      clock.advance(99);
      await settle();
      assert.deepEqual(client.received(), ['throttle:100'], 'muted for the throttle time');
      clock.advance(1);
      await settle();
      assert.deepEqual(client.received(), ['throttle:100', 'next']);
    });
  });

  it('mutes without an answer when the request has none', async () => {
    await withClient(async (client, clock) => {
      client.socket.write(Buffer.concat([framed(Buffer.from('mute:50')), framed(Buffer.from('next'))]));
      await settle();
      assert.deepEqual(client.received(), []);
      clock.advance(50);
      await settle();
      assert.deepEqual(client.received(), ['next']);
    });
  });
});
