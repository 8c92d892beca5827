import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../../protocol/messages/api-versions.ts';
import { makeMetadataRequest, type MetadataResponse } from '../../../protocol/messages/metadata.ts';
import { Broker } from '../../../src/broker.ts';
import { devProperties } from '../../../src/cli/args.ts';
import { KafkaConnection } from '../../../src/client/connection.ts';
import { BrokerConfig } from '../../../src/config/index.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { systemRuntime } from '../../../src/runtime/index.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';
import { MemoryNetwork } from '../../helpers/memory-network.ts';

/** A host no resolver knows: a real socket could neither bind nor reach it. */
const HOST = 'node-1.sluice.invalid';
const PORT = 9092;
const STEP_MS = 10;
const MAX_STEPS = 20_000;

/** Awaits `promise` while moving the manual clock: the broker's timers fire only as it moves. */
async function drive<T>(clock: ManualClock, promise: Promise<T>): Promise<T> {
  let settled = false;
  const result = promise.finally(() => {
    settled = true;
  });
  for (let step = 0; !settled; step++) {
    assert.ok(step < MAX_STEPS, `still waiting after ${(step * STEP_MS) / 1000} virtual seconds`);
    await new Promise<void>((resolve) => setImmediate(resolve));
    clock.advance(STEP_MS);
  }
  return result;
}

describe('a Broker on a runtime of its caller', () => {
  let dataDir: string;
  const realCalls: string[] = [];
  const listen = Server.prototype.listen;
  const connect = Socket.prototype.connect;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sluice-runtime-'));
    Server.prototype.listen = function (this: Server, ...args: unknown[]) {
      realCalls.push('listen');
      return (listen as (...a: unknown[]) => Server).apply(this, args);
    } as typeof listen;
    Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
      realCalls.push('connect');
      return (connect as (...a: unknown[]) => Socket).apply(this, args);
    } as typeof connect;
  });

  after(async () => {
    Server.prototype.listen = listen;
    Socket.prototype.connect = connect;
    await rm(dataDir, { recursive: true, force: true });
  });

  it('starts, answers ApiVersions and Metadata through src/client and closes on its clock and network alone', async () => {
    const clock = new ManualClock();
    const network = new MemoryNetwork(clock);
    const config = new BrokerConfig({
      file: devProperties(HOST, PORT, dataDir),
      overrides: new Map([['unsafe.bypass.fsync', 'true']]),
    });
    const broker = new Broker({ config, logger: createLogger({ quiet: true }), runtime: { ...systemRuntime, clock, network } });
    const startedAtMs = clock.now();
    await drive(clock, broker.start());
    assert.deepEqual(network.listening, [`${HOST}:${PORT}`]);
    assert.ok(clock.now() > startedAtMs, 'the start-up waited on the manual clock (its heartbeats)');

    const conn = await drive(clock, KafkaConnection.connect(HOST, PORT, { network, clock }));
    const versions = await drive(
      clock,
      conn.send<ApiVersionsResponse>(
        ApiKey.ApiVersions,
        makeApiVersionsRequest({ clientSoftwareName: 'test', clientSoftwareVersion: '1' }),
        3,
      ),
    );
    assert.equal(versions.errorCode, 0);
    assert.ok(versions.apiKeys.some((k) => k.apiKey === ApiKey.Produce));
    const metadata = await drive(clock, conn.send<MetadataResponse>(ApiKey.Metadata, makeMetadataRequest({ topics: [] })));
    assert.deepEqual(
      metadata.brokers.map((b) => [b.nodeId, b.host, b.port]),
      [[1, HOST, PORT]],
    );
    conn.close();

    await drive(clock, broker.close());
    assert.deepEqual(network.listening, []);
    assert.deepEqual(realCalls, [], 'no real socket was opened');
  });
});
