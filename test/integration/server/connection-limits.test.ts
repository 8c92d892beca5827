// Kafka's connection limits on a running broker, over raw TCP from two loopback addresses:
// max.connections.per.ip (and its overrides) closes the extra connection, max.connections
// holds it unanswered until a slot frees, max.connection.creation.rate delays accepts.
import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { type EmbeddedBroker, startBroker } from '../../../src/index.ts';
import { Peer } from '../../helpers/raw-peer.ts';

async function answers(peer: Peer): Promise<void> {
  assert.equal((await peer.apiVersions()).errorCode, Errors.NONE.code);
}

async function withBroker(overrides: Record<string, string | number>, body: (broker: EmbeddedBroker, peers: Peer[]) => Promise<void>) {
  const broker = await startBroker({ overrides });
  const peers: Peer[] = [];
  try {
    await body(broker, peers);
  } finally {
    for (const p of peers) p.close();
    await broker.close();
  }
}

describe('connection limits (Kafka ConnectionQuotas)', function () {
  this.timeout(60_000);

  it('closes a connection beyond max.connections.per.ip while another address still connects, and honours overrides', async () => {
    // localhost resolves to 127.0.0.1 (IPv4 first, as Java's InetAddress.getByName): 1 for it,
    // 3 for 127.0.0.2, 2 for any other address.
    await withBroker(
      { 'max.connections.per.ip': 2, 'max.connections.per.ip.overrides': 'localhost:1,127.0.0.2:3' },
      async (broker, peers) => {
        const open = async (address: string): Promise<Peer> => {
          const peer = await Peer.open(broker.port, address);
          peers.push(peer);
          return peer;
        };
        await answers(await open('127.0.0.1'));
        const refused = await open('127.0.0.1');
        await refused.closed;
        for (let i = 0; i < 3; i++) await answers(await open('127.0.0.2'));
        const fourth = await open('127.0.0.2');
        await fourth.closed;
        await answers(await open('127.0.0.3'));
        await answers(await open('127.0.0.3'));
        await (await open('127.0.0.3')).closed;
      },
    );
  });

  it('holds a connection beyond max.connections unanswered until another closes, then answers it', async () => {
    await withBroker({ 'max.connections': 2 }, async (broker, peers) => {
      const first = await Peer.open(broker.port, '127.0.0.1');
      const second = await Peer.open(broker.port, '127.0.0.2');
      peers.push(first, second);
      await answers(first);
      await answers(second);
      const held = await Peer.open(broker.port, '127.0.0.2');
      peers.push(held);
      const answer = held.apiVersions();
      assert.ok(await held.unansweredFor(500), 'held, neither answered nor closed');
      first.close();
      assert.equal((await answer).errorCode, Errors.NONE.code);
      assert.equal(held.isClosed, false);
    });
  });

  it('delays accepts to keep max.connection.creation.rate', async () => {
    // 2 samples of 1 s: 2 connections at once fit in 2/s, the third waits about 500 ms and
    // the fourth about 1 s.
    await withBroker(
      { 'max.connection.creation.rate': 2, 'quota.window.num': 2, 'quota.window.size.seconds': 1 },
      async (broker, peers) => {
        const startMs = performance.now();
        for (let i = 0; i < 4; i++) peers.push(await Peer.open(broker.port, '127.0.0.1'));
        const answeredAtMs: number[] = [];
        await Promise.all(
          peers.map(async (peer, i) => {
            await answers(peer);
            answeredAtMs[i] = performance.now() - startMs;
          }),
        );
        assert.ok(answeredAtMs[2]! >= 450, `third answered after ${answeredAtMs[2]} ms`);
        assert.ok(answeredAtMs[3]! >= 950, `fourth answered after ${answeredAtMs[3]} ms`);
        assert.ok(answeredAtMs[2]! <= answeredAtMs[3]!, 'accepted in the order they connected');
      },
    );
  });
});
