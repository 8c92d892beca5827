import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createLogger } from '../../../src/observability/logger.ts';
import type { NetSocket } from '../../../src/runtime/network.ts';
import type { ConnectionLimits, FrameProcessor } from '../../../src/server/connection.ts';
import {
  canonicalIp,
  type ConnectionQuotaLimits,
  ConnectionQuotas,
  parseMaxConnectionsPerIpOverrides,
  UNLIMITED,
} from '../../../src/server/connection-quotas.ts';
import { type ListenerSpec, type ServerLimits, SocketServer } from '../../../src/server/socket-server.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { MemoryNetwork } from '../../helpers/memory-network.ts';

const WINDOW = { samples: 11, windowMs: 1000 };

function limits(overrides: Partial<ConnectionQuotaLimits> = {}): ConnectionQuotaLimits {
  return {
    maxConnectionsPerIp: UNLIMITED,
    maxConnectionsPerIpOverrides: new Map(),
    maxConnections: UNLIMITED,
    maxConnectionCreationRate: UNLIMITED,
    listeners: new Map(),
    ...overrides,
  };
}

function quotas(
  overrides: Partial<ConnectionQuotaLimits> = {},
  listeners = ['PLAINTEXT'],
  interBroker: string | null = null,
): ConnectionQuotas {
  const q = new ConnectionQuotas(WINDOW, limits(overrides), interBroker);
  for (const l of listeners) q.addListener(l);
  return q;
}

describe('ConnectionQuotas (Kafka connection limits)', () => {
  describe('max.connections.per.ip', () => {
    it('refuses a connection beyond the limit of its IP and counts it nowhere, while other IPs connect', () => {
      const q = quotas({ maxConnectionsPerIp: 2 });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.1', 0), { kind: 'accepted' });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.1', 0), { kind: 'accepted' });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.1', 0), { kind: 'too-many-connections', max: 2 });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.2', 0), { kind: 'accepted' });
      assert.equal(q.get('10.0.0.1'), 2);
      assert.equal(q.totalCount, 3);
      assert.equal(q.listenerCount('PLAINTEXT'), 3);
      q.dec('PLAINTEXT', '10.0.0.1');
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.1', 0), { kind: 'accepted' }, 'a closed connection frees its slot');
    });

    it('applies an override to its address only; zero refuses every connection of an IP', () => {
      const q = quotas({ maxConnectionsPerIp: 0, maxConnectionsPerIpOverrides: new Map([['10.0.0.9', 1]]) });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.1', 0), { kind: 'too-many-connections', max: 0 });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.9', 0), { kind: 'accepted' });
      assert.deepEqual(q.inc('PLAINTEXT', '10.0.0.9', 0), { kind: 'too-many-connections', max: 1 });
    });

    it('counts as a model of open connections does, whatever the order of opens and closes', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 4 }),
          fc.array(fc.record({ open: fc.boolean(), ip: fc.constantFrom('a', 'b', 'c'), listener: fc.constantFrom('L1', 'L2') }), {
            maxLength: 60,
          }),
          (maxPerIp, steps) => {
            const q = quotas({ maxConnectionsPerIp: maxPerIp }, ['L1', 'L2']);
            const open: { ip: string; listener: string }[] = [];
            for (const step of steps) {
              if (step.open) {
                const admitted = q.inc(step.listener, step.ip, 0).kind === 'accepted';
                assert.equal(admitted, open.filter((c) => c.ip === step.ip).length < maxPerIp);
                if (admitted) open.push({ ip: step.ip, listener: step.listener });
              } else {
                const i = open.findIndex((c) => c.ip === step.ip);
                if (i < 0) continue;
                const [closed] = open.splice(i, 1);
                q.dec(closed!.listener, closed!.ip);
              }
            }
            assert.equal(q.totalCount, open.length);
            for (const ip of ['a', 'b', 'c']) assert.equal(q.get(ip), open.filter((c) => c.ip === ip).length);
            for (const l of ['L1', 'L2']) assert.equal(q.listenerCount(l), open.filter((c) => c.listener === l).length);
          },
        ),
      );
    });

    it('refuses to count down an address with no connections', () => {
      assert.throws(() => quotas().dec('PLAINTEXT', '10.0.0.1'), /address with no connections, address: 10.0.0.1/);
    });
  });

  describe('max.connections and the inter-broker listener', () => {
    it('has a slot while the broker and the listener are below their limits', () => {
      const q = quotas({ maxConnections: 2, listeners: new Map([['B', { maxConnections: 1, maxConnectionCreationRate: UNLIMITED }]]) }, [
        'A',
        'B',
      ]);
      q.inc('B', 'x', 0);
      assert.equal(q.connectionSlotAvailable('B'), false, 'the listener limit');
      assert.equal(q.connectionSlotAvailable('A'), true);
      q.inc('A', 'x', 0);
      assert.equal(q.connectionSlotAvailable('A'), false, 'the broker-wide limit');
      q.dec('B', 'x');
      assert.equal(q.connectionSlotAvailable('A'), true);
    });

    it('a listener without limits of its own has the broker-wide ones', () => {
      const q = quotas({ maxConnections: 1 }, ['A']);
      q.inc('A', 'x', 0);
      assert.equal(q.connectionSlotAvailable('A'), false);
    });

    it('lets the inter-broker listener past max.connections, up to its own limit, and has the others close connections', () => {
      const q = quotas(
        { maxConnections: 1, listeners: new Map([['INTERNAL', { maxConnections: 2, maxConnectionCreationRate: UNLIMITED }]]) },
        ['INTERNAL', 'EXTERNAL'],
        'INTERNAL',
      );
      q.inc('EXTERNAL', 'x', 0);
      assert.equal(q.connectionSlotAvailable('EXTERNAL'), false);
      assert.equal(q.connectionSlotAvailable('INTERNAL'), true);
      q.inc('INTERNAL', 'y', 0);
      assert.equal(q.maxConnectionsExceeded('EXTERNAL'), true);
      assert.equal(q.maxConnectionsExceeded('INTERNAL'), false);
      q.inc('INTERNAL', 'y', 0);
      assert.equal(q.connectionSlotAvailable('INTERNAL'), false, 'its own listener limit still holds');
    });

    it('does not protect the inter-broker listener when it is the only listener', () => {
      const q = quotas({ maxConnections: 1 }, ['INTERNAL'], 'INTERNAL');
      q.inc('INTERNAL', 'x', 0);
      assert.equal(q.isProtected('INTERNAL'), false);
      assert.equal(q.connectionSlotAvailable('INTERNAL'), false);
    });

    it('follows a lowered max.connections', () => {
      const q = quotas({ maxConnections: 3 });
      q.inc('PLAINTEXT', 'x', 0);
      q.inc('PLAINTEXT', 'x', 0);
      assert.equal(q.maxConnectionsExceeded('PLAINTEXT'), false);
      q.update(limits({ maxConnections: 1 }));
      assert.equal(q.maxConnectionsExceeded('PLAINTEXT'), true);
    });
  });

  describe('max.connection.creation.rate', () => {
    it('throttles by the time that brings the rate over the window back to the limit (Kafka Rate and QuotaUtils)', () => {
      // 11 samples of 1 s: a young rate is measured over at least 10 s, so 100 connections
      // at once are 10/s; the 101st is 10.1/s, 1% over, and waits 1% of the 10 s window.
      const q = quotas({ maxConnectionCreationRate: 10 });
      for (let i = 0; i < 100; i++) assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 0);
      assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 100);
      assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 200);
    });

    it('never throttles longer than one sample window', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 50 }), fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 200 }), (rate, gapsMs) => {
          const q = quotas({ maxConnectionCreationRate: rate });
          let nowMs = 0;
          for (const gap of gapsMs) {
            nowMs += gap;
            const throttleMs = q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', nowMs);
            assert.ok(throttleMs >= 0 && throttleMs <= WINDOW.windowMs, `${throttleMs}`);
          }
        }),
      );
    });

    it('forgets connections older than the window', () => {
      const q = quotas({ maxConnectionCreationRate: 1 });
      for (let i = 0; i < 10; i++) q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0);
      assert.ok(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0) > 0);
      assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 11_000), 0);
    });

    it('takes the longer of the broker-wide and the listener throttle', () => {
      const q = quotas({
        maxConnectionCreationRate: 10,
        listeners: new Map([['PLAINTEXT', { maxConnections: UNLIMITED, maxConnectionCreationRate: 5 }]]),
      });
      for (let i = 0; i < 50; i++) assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 0);
      assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 200, 'the listener: 5.1/s against 5');
    });

    it('exempts the protected inter-broker listener from the broker-wide rate, not from its own', () => {
      const q = quotas(
        { maxConnectionCreationRate: 1, listeners: new Map([['INTERNAL', { maxConnections: UNLIMITED, maxConnectionCreationRate: 2 }]]) },
        ['INTERNAL', 'EXTERNAL'],
        'INTERNAL',
      );
      for (let i = 0; i < 20; i++) assert.equal(q.recordConnectionAndGetThrottleTimeMs('INTERNAL', 0), 0);
      assert.ok(q.recordConnectionAndGetThrottleTimeMs('INTERNAL', 0) > 0);
      for (let i = 0; i < 10; i++) q.recordConnectionAndGetThrottleTimeMs('EXTERNAL', 0);
      assert.ok(q.recordConnectionAndGetThrottleTimeMs('EXTERNAL', 0) > 0, 'EXTERNAL is held to the broker-wide rate');
    });
  });

  describe('connection_creation_rate of an ip', () => {
    it('refuses a connection over its IP rate, uncounted, and takes it back out of the broker and listener rates', () => {
      const q = quotas({ maxConnectionCreationRate: 10, ipConnectionCreationRate: (ip) => (ip === 'a' ? 1 : undefined) });
      for (let i = 0; i < 10; i++) {
        assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 0);
        assert.deepEqual(q.inc('PLAINTEXT', 'a', 0), { kind: 'accepted' });
      }
      assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 0);
      // 11 connections over the 10 s a young rate spans: 1.1/s against 1/s, capped at one window.
      assert.deepEqual(q.inc('PLAINTEXT', 'a', 0), { kind: 'throttled', throttleTimeMs: 1000 });
      assert.equal(q.get('a'), 10);
      assert.equal(q.totalCount, 10);
      // The refused connection no longer counts toward the broker-wide 10/s: 90 more fit in it.
      for (let i = 0; i < 90; i++) assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 0, `connection ${i}`);
      assert.equal(q.recordConnectionAndGetThrottleTimeMs('PLAINTEXT', 0), 100);
      assert.deepEqual(q.inc('PLAINTEXT', 'b', 0), { kind: 'accepted' }, 'other IPs have no rate');
    });

    it('reads the rate of an IP at every connection, so a new quota applies at once', () => {
      let rate: number | undefined;
      const q = quotas({ ipConnectionCreationRate: () => rate });
      for (let i = 0; i < 30; i++) assert.equal(q.inc('PLAINTEXT', 'a', 0).kind, 'accepted');
      rate = 1;
      for (let i = 0; i < 10; i++) assert.equal(q.inc('PLAINTEXT', 'a', 0).kind, 'accepted');
      assert.equal(q.inc('PLAINTEXT', 'a', 0).kind, 'throttled');
      rate = undefined;
      assert.equal(q.inc('PLAINTEXT', 'a', 0).kind, 'accepted');
    });
  });

  describe('max.connections.per.ip.overrides', () => {
    it('parses host:n entries, splitting each on its last colon', () => {
      assert.deepEqual(
        parseMaxConnectionsPerIpOverrides('broker1.example:100, 127.0.0.1:200,::1:3'),
        new Map([
          ['broker1.example', 100],
          ['127.0.0.1', 200],
          ['::1', 3],
        ]),
      );
      assert.deepEqual(parseMaxConnectionsPerIpOverrides(''), new Map());
    });

    it('refuses entries without a count, counts that are not integers and invalid addresses', () => {
      assert.throws(
        () => parseMaxConnectionsPerIpOverrides('localhost'),
        /Error parsing configuration property 'max.connections.per.ip.overrides'/,
      );
      assert.throws(() => parseMaxConnectionsPerIpOverrides('localhost:ten'), /For input string: "ten"/);
      assert.throws(() => parseMaxConnectionsPerIpOverrides('local host:1'), /contains invalid addresses : local host/);
    });

    it('spells an address one way', () => {
      assert.equal(canonicalIp('::ffff:127.0.0.2'), '127.0.0.2');
      assert.equal(canonicalIp('0:0:0:0:0:0:0:1'), '::1');
      assert.equal(canonicalIp('10.1.2.3'), '10.1.2.3');
    });
  });
});

const LIMITS: ConnectionLimits = { maxRequestBytes: 1024 * 1024, maxQueuedRequests: 500, maxBufferedBytes: 1024 * 1024, idleMs: 0 };

/** Answers each frame with its own bytes. */
const ECHO: FrameProcessor = {
  process: (_session, frame) => Promise.resolve({ chunks: [framed(Buffer.from(frame))] }),
};

function framed(payload: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length);
  return Buffer.concat([size, payload]);
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await tick();
}

/** A client of the memory network that notes what it received and whether it closed. */
interface Client {
  readonly socket: NetSocket;
  readonly received: Buffer[];
  closed: boolean;
}

function connect(network: MemoryNetwork, port: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = network.connect('127.0.0.1', port);
    const client: Client = { socket, received: [], closed: false };
    socket.on('data', (chunk) => client.received.push(chunk));
    socket.on('close', () => {
      client.closed = true;
    });
    socket.once('error', reject);
    socket.once('connect', () => resolve(client));
  });
}

function listener(name: string, port: number): ListenerSpec {
  return { name, host: '127.0.0.1', port, securityProtocol: 'PLAINTEXT', role: 'broker' };
}

async function withServer(
  serverLimits: ServerLimits,
  listeners: ListenerSpec[],
  body: (server: SocketServer, network: MemoryNetwork, clock: ManualClock) => Promise<void>,
  resolveHost?: (host: string) => Promise<string>,
): Promise<void> {
  const clock = new ManualClock();
  const network = new MemoryNetwork(clock);
  const runtime = resolveHost === undefined ? { network, clock } : { network, clock, resolveHost };
  const server = new SocketServer(ECHO, LIMITS, createLogger({ quiet: true }), serverLimits, runtime);
  await server.start(listeners);
  try {
    await body(server, network, clock);
  } finally {
    await server.stopAccepting();
    for (const c of server.openConnections) c.destroy();
  }
}

describe('SocketServer connection limits (the acceptors)', () => {
  it('holds a connection beyond max.connections unread, and serves it once a connection closes', async () => {
    await withServer({ maxConnections: 1 }, [listener('PLAINTEXT', 9092)], async (server, network) => {
      const first = await connect(network, 9092);
      const second = await connect(network, 9092);
      second.socket.write(framed(Buffer.from('waiting')));
      await settle();
      assert.equal(server.openConnections.length, 1);
      assert.deepEqual(second.received, [], 'unanswered while no slot is free');
      assert.equal(second.closed, false, 'held, not closed');
      first.socket.destroy();
      await settle();
      assert.deepEqual(Buffer.concat(second.received), framed(Buffer.from('waiting')));
    });
  });

  it('serves a held connection when max.connections is raised', async () => {
    await withServer({ maxConnections: 1 }, [listener('PLAINTEXT', 9092)], async (server, network) => {
      await connect(network, 9092);
      const second = await connect(network, 9092);
      second.socket.write(framed(Buffer.from('x')));
      await settle();
      assert.deepEqual(second.received, []);
      await server.updateLimits({ maxConnections: 2 });
      await settle();
      assert.equal(server.openConnections.length, 2);
      assert.deepEqual(Buffer.concat(second.received), framed(Buffer.from('x')));
    });
  });

  it('closes the least recently active connections when max.connections is lowered below those open', async () => {
    await withServer({}, [listener('PLAINTEXT', 9092)], async (server, network, clock) => {
      const quiet = await connect(network, 9092);
      const busy = await connect(network, 9092);
      clock.advance(10);
      busy.socket.write(framed(Buffer.from('x')));
      await settle();
      await server.updateLimits({ maxConnections: 1 });
      await settle();
      assert.equal(quiet.closed, true);
      assert.equal(busy.closed, false);
    });
  });

  it('lets the inter-broker listener past max.connections, closing the least recently active connection of another listener', async () => {
    await withServer(
      { maxConnections: 2, interBrokerListenerName: 'INTERNAL' },
      [listener('EXTERNAL', 9092), listener('INTERNAL', 9093)],
      async (server, network, clock) => {
        const busy = await connect(network, 9092);
        const quiet = await connect(network, 9092);
        clock.advance(10);
        busy.socket.write(framed(Buffer.from('x')));
        await settle();
        const replica = await connect(network, 9093);
        replica.socket.write(framed(Buffer.from('fetch')));
        await settle();
        assert.deepEqual(Buffer.concat(replica.received), framed(Buffer.from('fetch')));
        assert.equal(quiet.closed, true);
        assert.equal(busy.closed, false);
        assert.equal(server.openConnections.length, 2);
        const waiting = await connect(network, 9092);
        await settle();
        assert.equal(waiting.closed, false);
        assert.equal(server.openConnections.length, 2, 'EXTERNAL waits for a slot');
      },
    );
  });

  it('delays accepts to keep max.connection.creation.rate, in order', async () => {
    // 2 samples of 1 s: a young rate is measured over 1 s; the third connection at once is
    // 3/s against 2/s and waits half the window.
    await withServer(
      { maxConnectionCreationRate: 2, quotaWindowNum: 2, quotaWindowSizeSeconds: 1 },
      [listener('PLAINTEXT', 9092)],
      async (_server, network, clock) => {
        const clients: Client[] = [];
        for (let i = 0; i < 4; i++) {
          const c = await connect(network, 9092);
          c.socket.write(framed(Buffer.from([i])));
          clients.push(c);
        }
        await settle();
        const answered = (): number => clients.filter((c) => c.received.length > 0).length;
        assert.equal(answered(), 2);
        clock.advance(499);
        await settle();
        assert.equal(answered(), 2);
        clock.advance(1);
        await settle();
        assert.equal(answered(), 3);
        assert.deepEqual(Buffer.concat(clients[2]!.received), framed(Buffer.from([2])), 'in the order they connected');
        clock.advance(1000);
        await settle();
        assert.equal(answered(), 4);
      },
    );
  });

  it('closes a connection over the rate of its IP after the throttle time, unanswered', async () => {
    await withServer(
      { ipConnectionCreationRate: () => 1, quotaWindowNum: 2, quotaWindowSizeSeconds: 1 },
      [listener('PLAINTEXT', 9092)],
      async (server, network, clock) => {
        const first = await connect(network, 9092);
        const second = await connect(network, 9092);
        second.socket.write(framed(Buffer.from('x')));
        await settle();
        assert.equal(server.openConnections.length, 1);
        assert.equal(second.closed, false, 'the close is delayed');
        clock.advance(999);
        await settle();
        assert.equal(second.closed, false);
        clock.advance(1);
        await settle();
        assert.equal(second.closed, true);
        assert.deepEqual(second.received, []);
        assert.equal(first.closed, false);
      },
    );
  });

  it('closes a connection beyond max.connections.per.ip, with overrides by resolved hostname', async () => {
    await withServer(
      { maxConnectionsPerIp: 1, maxConnectionsPerIpOverrides: 'clients.example:2' },
      [listener('PLAINTEXT', 9092)],
      async (server, network) => {
        await connect(network, 9092);
        await connect(network, 9092);
        const third = await connect(network, 9092);
        await settle();
        assert.equal(third.closed, true);
        assert.equal(server.openConnections.length, 2);
        await server.updateLimits({ maxConnectionsPerIp: 1 });
        const fourth = await connect(network, 9092);
        await settle();
        assert.equal(fourth.closed, true);
      },
      async (host) => {
        assert.equal(host, 'clients.example');
        return 'memory-client';
      },
    );
  });

  it('refuses to start on an override whose hostname does not resolve, and on max.connections.per.ip=0 without overrides', async () => {
    const clock = new ManualClock();
    const network = new MemoryNetwork(clock);
    const resolveHost = (host: string): Promise<string> => Promise.reject(new Error(`${host}: Name or service not known`));
    const unresolved = new SocketServer(
      ECHO,
      LIMITS,
      createLogger({ quiet: true }),
      { maxConnectionsPerIpOverrides: 'nowhere.invalid:1' },
      {
        network,
        clock,
        resolveHost,
      },
    );
    await assert.rejects(unresolved.start([listener('PLAINTEXT', 9092)]), /nowhere.invalid: Name or service not known/);
    const zero = new SocketServer(ECHO, LIMITS, createLogger({ quiet: true }), { maxConnectionsPerIp: 0 }, { network, clock });
    await assert.rejects(zero.start([listener('PLAINTEXT', 9092)]), /can be set to zero only if max.connections.per.ip.overrides/);
  });
});
