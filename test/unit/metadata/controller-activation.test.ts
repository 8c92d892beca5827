import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeBrokerRegistrationRequest } from '../../../protocol/messages/broker-registration.ts';
import { BrokerConfig } from '../../../src/config/broker-config.ts';
import { randomUuid } from '../../../src/metadata/controller.ts';
import { systemRuntime } from '../../../src/runtime/index.ts';
import { MetadataManager } from '../../../src/metadata/manager.ts';
import type { RaftRequest, RaftResponseOf, RaftTransport } from '../../../src/metadata/raft/types.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { FakeClock } from './fake-cluster.ts';
import { brokerFeatures } from '../../helpers/broker-registration.ts';
import { METADATA_VERSION_LEVEL } from '../../../src/metadata/controller.ts';

/** Three metadata managers whose Raft RPCs go straight to each other, on one fake clock. */
class Quorum {
  readonly clock = new FakeClock();
  readonly managers = new Map<number, MetadataManager>();
  private readonly down = new Set<number>();

  constructor(readonly dir: string) {
    // File writes run on the real event loop: give them a moment between fake timers.
    this.clock.settleHook = () => new Promise((resolve) => setTimeout(resolve, 2));
  }

  async start(id: number): Promise<MetadataManager> {
    const config = new BrokerConfig({
      overrides: new Map([
        ['node.id', String(id)],
        ['process.roles', 'broker,controller'],
        ['listeners', 'PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0'],
        ['controller.listener.names', 'CONTROLLER'],
        ['listener.security.protocol.map', 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT'],
        ['controller.quorum.voters', '1@127.0.0.1:1,2@127.0.0.1:2,3@127.0.0.1:3'],
        ['log.dirs', join(this.dir, `node-${id}`)],
        ['unsafe.bypass.fsync', 'true'],
      ]),
    });
    const transport: RaftTransport = { send: (to, request) => this.deliver(id, to, request) };
    const manager = new MetadataManager({
      config,
      logger: createLogger({ quiet: true }),
      transport,
      runtime: { ...systemRuntime, clock: this.clock },
    });
    this.managers.set(id, manager);
    this.down.delete(id);
    await manager.start();
    return manager;
  }

  async stop(id: number): Promise<void> {
    this.down.add(id);
    await this.managers.get(id)?.close();
  }

  private async deliver<R extends RaftRequest>(from: number, to: number, request: R): Promise<RaftResponseOf[R['api']]> {
    await Promise.resolve();
    const target = this.managers.get(to);
    if (target === undefined || this.down.has(to) || this.down.has(from)) throw new Error(`link ${from}->${to} down`);
    const raft = target.raft;
    switch (request.api) {
      case 'vote':
        return raft.handleVote(request) as RaftResponseOf[R['api']];
      case 'beginQuorumEpoch':
        return raft.handleBeginQuorumEpoch(request) as RaftResponseOf[R['api']];
      case 'endQuorumEpoch':
        return raft.handleEndQuorumEpoch(request) as RaftResponseOf[R['api']];
      case 'fetch':
        return (await raft.handleFetch(request)) as RaftResponseOf[R['api']];
      case 'fetchSnapshot':
        return raft.handleFetchSnapshot(request) as RaftResponseOf[R['api']];
    }
    throw new Error('unknown raft request');
  }

  active(): MetadataManager[] {
    return [...this.managers.entries()].filter(([id, m]) => !this.down.has(id) && m.controller.isActive()).map(([, m]) => m);
  }

  async until(what: string, condition: () => boolean): Promise<void> {
    for (let i = 0; i < 200 && !condition(); i++) await this.clock.advance(100);
    assert.ok(condition(), what);
  }
}

describe('controller activation on a Raft leader elected after start (three voters)', function () {
  this.timeout(20_000);
  let dir: string;
  let quorum: Quorum;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-activation-'));
    quorum = new Quorum(dir);
  });
  afterEach(async () => {
    for (const id of quorum.managers.keys()) await quorum.stop(id);
    await rm(dir, { recursive: true, force: true });
  });

  it('bootstraps the empty log once elected, and a new leader takes over the brokers’ sessions', async () => {
    for (const id of [1, 2, 3]) await quorum.start(id);
    assert.equal(quorum.active().length, 0, 'nobody leads right at start');
    await quorum.until('an active controller', () => quorum.active().length === 1);
    const first = quorum.active()[0]!;
    await quorum.until('metadata.version everywhere', () =>
      [...quorum.managers.values()].every((m) => m.image().features.get('metadata.version') === METADATA_VERSION_LEVEL),
    );
    const registered = await first.controller.brokerRegistration(
      makeBrokerRegistrationRequest({
        brokerId: 7,
        clusterId: first.clusterId,
        incarnationId: randomUuid(),
        features: brokerFeatures(),
      }),
    );
    assert.equal(registered.errorCode, 0, 'the cluster id of the controller that elected itself');
    await quorum.stop(first.nodeId);
    await quorum.until('a new active controller', () => quorum.active().length === 1);
    const second = quorum.active()[0]!;
    assert.notEqual(second.nodeId, first.nodeId);
    assert.equal(second.image().features.get('metadata.version'), METADATA_VERSION_LEVEL);
    assert.equal(second.image().brokers.get(7)?.epoch, registered.brokerEpoch);
    // Broker 7 never heartbeats: the new controller fences it a session after taking over.
    await quorum.until('broker 7 fenced', () => second.image().brokers.get(7)?.fenced === true && second.controller.isActive());
  });
});
