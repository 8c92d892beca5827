import assert from 'node:assert/strict';
import { Errors, KafkaError } from '../../../protocol/errors.ts';
import {
  makeBrokerHeartbeatResponse,
  type BrokerHeartbeatRequest,
  type BrokerHeartbeatResponse,
} from '../../../protocol/messages/broker-heartbeat.ts';
import {
  makeBrokerRegistrationResponse,
  type BrokerRegistrationRequest,
  type BrokerRegistrationResponse,
} from '../../../protocol/messages/broker-registration.ts';
import { ApiKey } from '../../../protocol/messages/index.ts';
import { BrokerLifecycleManager, type BrokerLifecycleOptions } from '../../../src/metadata/broker-lifecycle.ts';
import type { ControllerChannel } from '../../../src/metadata/controller-channel.ts';
import { METADATA_VERSION_FEATURE, METADATA_VERSION_LEVEL } from '../../../src/metadata/controller.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { FakeClock } from './fake-cluster.ts';

// The broker's registration and heartbeats against a scripted controller, on a fake clock.

type Sent =
  | { apiKey: ApiKey.BrokerRegistration; request: BrokerRegistrationRequest }
  | { apiKey: ApiKey.BrokerHeartbeat; request: BrokerHeartbeatRequest };

class ScriptedController implements Pick<ControllerChannel, 'send'> {
  readonly sent: Sent[] = [];
  register: (request: BrokerRegistrationRequest) => BrokerRegistrationResponse = () =>
    makeBrokerRegistrationResponse({ errorCode: Errors.NONE.code, brokerEpoch: 42n });
  heartbeat: (request: BrokerHeartbeatRequest) => BrokerHeartbeatResponse = () =>
    makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isCaughtUp: true, isFenced: false });

  async send(apiKey: number, request: unknown): Promise<never> {
    if (apiKey === ApiKey.BrokerRegistration) {
      this.sent.push({ apiKey, request: request as BrokerRegistrationRequest });
      return this.register(request as BrokerRegistrationRequest) as never;
    }
    if (apiKey === ApiKey.BrokerHeartbeat) {
      this.sent.push({ apiKey, request: request as BrokerHeartbeatRequest });
      return this.heartbeat(request as BrokerHeartbeatRequest) as never;
    }
    throw new Error(`unexpected api key ${apiKey}`);
  }

  get kinds(): string[] {
    return this.sent.map((s) => (s.apiKey === ApiKey.BrokerRegistration ? 'register' : 'heartbeat'));
  }

  heartbeats(): BrokerHeartbeatRequest[] {
    return this.sent.flatMap((s) => (s.apiKey === ApiKey.BrokerHeartbeat ? [s.request] : []));
  }
}

const logger = createLogger({ quiet: true });

describe('BrokerLifecycleManager', () => {
  let clock: FakeClock;
  let controller: ScriptedController;
  let offset: number;
  let manager: BrokerLifecycleManager;

  function lifecycle(options: Partial<BrokerLifecycleOptions> = {}): BrokerLifecycleManager {
    manager = new BrokerLifecycleManager({
      nodeId: 3,
      clusterId: 'cluster-a',
      channel: controller,
      listeners: [{ name: 'PLAINTEXT', host: 'broker3', port: 9092, securityProtocol: 'PLAINTEXT' }],
      rack: 'rack-1',
      currentMetadataOffset: () => offset,
      heartbeatIntervalMs: 2000,
      sessionTimeoutMs: 9000,
      clock,
      logger,
      ...options,
    });
    return manager;
  }

  beforeEach(() => {
    clock = new FakeClock();
    controller = new ScriptedController();
    offset = 17;
  });

  afterEach(async () => {
    await manager?.close();
  });

  it('registers, then is unfenced by the first heartbeat right after', async () => {
    const m = lifecycle();
    m.start();
    assert.equal(m.state, 'STARTING');
    await clock.advance(0);
    await m.whenUnfenced();
    assert.deepEqual(controller.kinds, ['register', 'heartbeat']);
    const registration = controller.sent[0]!.request as BrokerRegistrationRequest;
    assert.equal(registration.brokerId, 3);
    assert.equal(registration.clusterId, 'cluster-a');
    assert.equal(registration.incarnationId, m.incarnationId);
    assert.equal(registration.rack, 'rack-1');
    assert.deepEqual(
      registration.listeners.map((l) => [l.name, l.host, l.port, l.securityProtocol]),
      [['PLAINTEXT', 'broker3', 9092, 0]],
    );
    assert.deepEqual(
      registration.features.map((f) => [f.name, f.minSupportedVersion, f.maxSupportedVersion]),
      [
        [METADATA_VERSION_FEATURE, 1, METADATA_VERSION_LEVEL],
        ['eligible.leader.replicas.version', 0, 1],
      ],
    );
    const [first] = controller.heartbeats();
    assert.equal(first!.brokerEpoch, 42n);
    assert.equal(first!.currentMetadataOffset, 17n);
    assert.equal(first!.wantFence, false);
    assert.equal(first!.wantShutDown, false);
    assert.equal(m.brokerEpoch, 42n);
    assert.equal(m.state, 'RUNNING');
    assert.equal(m.isFenced, false);
  });

  it('heartbeats every broker.heartbeat.interval.ms once unfenced, with the current metadata offset', async () => {
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    offset = 30;
    await clock.advance(1999);
    assert.equal(controller.heartbeats().length, 1);
    await clock.advance(1);
    assert.equal(controller.heartbeats().length, 2);
    assert.equal(controller.heartbeats()[1]!.currentMetadataOffset, 30n);
  });

  it('registers its log dirs and reports a failed one in a heartbeat sent at once (KIP-858)', async () => {
    const offline: string[] = [];
    const m = lifecycle({ logDirIds: ['dirA', 'dirB'], offlineLogDirIds: () => offline });
    m.start();
    await clock.advance(0);
    await m.whenUnfenced();
    assert.deepEqual((controller.sent[0]!.request as BrokerRegistrationRequest).logDirs, ['dirA', 'dirB']);
    assert.deepEqual(controller.heartbeats()[0]!.offlineLogDirs, []);
    offline.push('dirB');
    m.propagateDirectoryFailure();
    await clock.advance(0);
    assert.equal(controller.heartbeats().length, 2, 'sent without waiting for the interval');
    assert.deepEqual(controller.heartbeats()[1]!.offlineLogDirs, ['dirB']);
    await clock.advance(2000);
    assert.deepEqual(controller.heartbeats()[2]!.offlineLogDirs, ['dirB'], 'every later heartbeat carries it');
  });

  it('heartbeats quickly while catching up with the metadata log', async () => {
    controller.heartbeat = (r) =>
      makeBrokerHeartbeatResponse({
        errorCode: Errors.NONE.code,
        isCaughtUp: r.currentMetadataOffset >= 20n,
        isFenced: r.currentMetadataOffset < 20n,
      });
    const m = lifecycle();
    let unfenced = false;
    void m.whenUnfenced().then(() => {
      unfenced = true;
    });
    m.start();
    await clock.advance(0);
    assert.equal(unfenced, false);
    offset = 20;
    await clock.advance(10);
    assert.equal(unfenced, true);
    assert.deepEqual(controller.kinds, ['register', 'heartbeat', 'heartbeat']);
  });

  it('registers again after STALE_BROKER_EPOCH', async () => {
    let epoch = 42n;
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.NONE.code, brokerEpoch: epoch });
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    controller.heartbeat = (r) =>
      makeBrokerHeartbeatResponse({
        errorCode: r.brokerEpoch === 42n ? Errors.STALE_BROKER_EPOCH.code : Errors.NONE.code,
        isCaughtUp: true,
        isFenced: false,
      });
    epoch = 50n;
    await clock.advance(2000);
    assert.deepEqual(controller.kinds, ['register', 'heartbeat', 'heartbeat', 'register', 'heartbeat']);
    assert.equal(m.brokerEpoch, 50n);
    assert.equal(controller.heartbeats().at(-1)!.brokerEpoch, 50n);
    const registrations = controller.sent.filter((s) => s.apiKey === ApiKey.BrokerRegistration);
    assert.equal(
      (registrations[1]!.request as BrokerRegistrationRequest).incarnationId,
      m.incarnationId,
      'the same incarnation registers again',
    );
  });

  it('logs a fencing after being unfenced (session expired) and keeps heartbeating', async () => {
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    controller.heartbeat = () => makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isCaughtUp: true, isFenced: true });
    await clock.advance(2000);
    assert.equal(m.isFenced, true);
    assert.equal(m.state, 'RUNNING');
    controller.heartbeat = () => makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isCaughtUp: true, isFenced: false });
    await clock.advance(2000);
    assert.equal(m.isFenced, false);
    assert.equal(controller.heartbeats().length, 3);
  });

  it('rejects whenUnfenced with DUPLICATE_BROKER_REGISTRATION once no previous session can be alive', async () => {
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.DUPLICATE_BROKER_REGISTRATION.code });
    const m = lifecycle();
    const unfenced = m.whenUnfenced();
    let settled = false;
    unfenced
      .catch(() => undefined)
      .finally(() => {
        settled = true;
      });
    m.start();
    await clock.advance(9000);
    assert.equal(settled, false, 'retried while a previous incarnation may still be timing out');
    // Twice the session timeout, plus the longest retry backoff (half a session).
    await clock.advance(9000 + 4500);
    await assert.rejects(
      unfenced,
      (err: unknown) =>
        err instanceof KafkaError && err.code === Errors.DUPLICATE_BROKER_REGISTRATION.code && /node\.id 3|node\.id=3/.test(err.message),
    );
    const attempts = controller.sent.length;
    await clock.advance(60_000);
    assert.equal(controller.sent.length, attempts, 'no more registrations after a fatal refusal');
    assert.equal(m.state, 'NOT_RUNNING');
  });

  it('keeps retrying DUPLICATE_BROKER_REGISTRATION through a wall-clock step forward (it times the retries on monotonic time)', async () => {
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.DUPLICATE_BROKER_REGISTRATION.code });
    let stepMs = 0;
    const stepped = clock;
    const m = lifecycle({
      clock: {
        now: () => stepped.now() + stepMs,
        monotonicMs: () => stepped.monotonicMs(),
        setTimeout: (fn, delayMs) => stepped.setTimeout(fn, delayMs),
        clearTimeout: (handle) => stepped.clearTimeout(handle),
        setImmediate: (fn) => stepped.setImmediate(fn),
      },
    });
    let settled = false;
    m.whenUnfenced()
      .catch(() => undefined)
      .finally(() => {
        settled = true;
      });
    m.start();
    await clock.advance(1000);
    stepMs = 60_000;
    await clock.advance(1000);
    assert.equal(settled, false, 'an NTP step is not time spent retrying');
  });

  it('rejects DUPLICATE_BROKER_REGISTRATION at once when told not to retry it', async () => {
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.DUPLICATE_BROKER_REGISTRATION.code });
    const m = lifecycle({ duplicateRegistrationRetryMs: 0 });
    m.start();
    await clock.advance(0);
    await assert.rejects(m.whenUnfenced(), /Broker 3 cannot register/);
    assert.equal(controller.sent.length, 1);
  });

  it('registers once the previous incarnation of a restarted broker has expired', async () => {
    let refusals = 2;
    controller.register = () =>
      refusals-- > 0
        ? makeBrokerRegistrationResponse({ errorCode: Errors.DUPLICATE_BROKER_REGISTRATION.code })
        : makeBrokerRegistrationResponse({ errorCode: Errors.NONE.code, brokerEpoch: 7n });
    const m = lifecycle();
    m.start();
    await clock.advance(1000);
    await m.whenUnfenced();
    assert.equal(m.brokerEpoch, 7n);
  });

  it('rejects whenUnfenced at once with INCONSISTENT_CLUSTER_ID', async () => {
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.INCONSISTENT_CLUSTER_ID.code });
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    await assert.rejects(m.whenUnfenced(), /Broker 3 .*cluster id cluster-a/);
  });

  it('retries a registration that timed out, with backoff', async () => {
    let failures = 2;
    controller.register = () =>
      failures-- > 0
        ? makeBrokerRegistrationResponse({ errorCode: Errors.REQUEST_TIMED_OUT.code })
        : makeBrokerRegistrationResponse({ errorCode: Errors.NONE.code, brokerEpoch: 3n });
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    assert.deepEqual(controller.kinds, ['register']);
    await clock.advance(100);
    assert.deepEqual(controller.kinds, ['register', 'register']);
    await clock.advance(200);
    await m.whenUnfenced();
    assert.deepEqual(controller.kinds, ['register', 'register', 'register', 'heartbeat']);
  });

  it('completes a controlled shutdown when the controller answers shouldShutDown', async () => {
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    let polls = 0;
    controller.heartbeat = (r) =>
      makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isCaughtUp: true, shouldShutDown: r.wantShutDown && ++polls >= 2 });
    let done = false;
    const shutdown = m.controlledShutdown(60_000).then(() => {
      done = true;
    });
    await clock.advance(0);
    assert.equal(m.state, 'PENDING_CONTROLLED_SHUTDOWN');
    assert.equal(controller.heartbeats().at(-1)!.wantShutDown, true, 'a wantShutDown heartbeat goes at once');
    assert.equal(done, false);
    await clock.advance(50);
    await shutdown;
    assert.equal(m.state, 'SHUTTING_DOWN');
    const sent = controller.sent.length;
    await clock.advance(10_000);
    assert.equal(controller.sent.length, sent, 'no heartbeat after shouldShutDown');
  });

  it('gives up a controlled shutdown after its timeout', async () => {
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    controller.heartbeat = () => makeBrokerHeartbeatResponse({ errorCode: Errors.NONE.code, isCaughtUp: true, shouldShutDown: false });
    let done = false;
    const shutdown = m.controlledShutdown(5000).then(() => {
      done = true;
    });
    await clock.advance(4999);
    assert.equal(done, false);
    await clock.advance(1);
    await shutdown;
  });

  it('resolves a controlled shutdown at once when the broker never registered', async () => {
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.REQUEST_TIMED_OUT.code });
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    await m.controlledShutdown(5000);
    const sent = controller.sent.length;
    await clock.advance(60_000);
    assert.equal(controller.sent.length, sent);
  });

  it('rejects a pending whenUnfenced on close and stops communicating', async () => {
    controller.register = () => makeBrokerRegistrationResponse({ errorCode: Errors.REQUEST_TIMED_OUT.code });
    const m = lifecycle();
    m.start();
    await clock.advance(0);
    await m.close();
    await assert.rejects(m.whenUnfenced(), /broker 3 shut down before/);
    const sent = controller.sent.length;
    await clock.advance(60_000);
    assert.equal(controller.sent.length, sent);
  });
});
