/**
 * Brokers registered the way the product registers them: BrokerRegistration, then a
 * BrokerHeartbeat that has caught up with the metadata log, so the controller unfences them.
 *
 * - `registerBrokers` drives a QuorumController directly (controller tests without Raft or a
 *   network): one registration and one heartbeat per broker. Sessions expire on the
 *   controller's clock: give it a FakeClock that the test does not advance when sessions must
 *   outlive the test.
 * - `startLocalBroker` registers the broker a MetadataManager's node hosts through the
 *   controller channel's in-process controller-side handlers, with the BrokerLifecycleManager
 *   that keeps heartbeating until close(): what a combined node does.
 */
import assert from 'node:assert/strict';
import { Errors } from '../../protocol/errors.ts';
import { makeBrokerHeartbeatRequest } from '../../protocol/messages/broker-heartbeat.ts';
import { makeBrokerRegistrationRequest } from '../../protocol/messages/broker-registration.ts';
import type { BrokerConfig, Listener } from '../../src/config/broker-config.ts';
import { controllerSideHandlers } from '../../src/handlers/index.ts';
import { BrokerLifecycleManager } from '../../src/metadata/broker-lifecycle.ts';
import { HandlerRegistry } from '../../src/handlers/registry.ts';
import { ControllerChannelManager } from '../../src/metadata/controller-channel.ts';
import {
  ELIGIBLE_LEADER_REPLICAS_FEATURE,
  ELIGIBLE_LEADER_REPLICAS_LEVEL,
  METADATA_VERSION_FEATURE,
  METADATA_VERSION_LEVEL,
  type QuorumController,
  randomUuid,
} from '../../src/metadata/controller.ts';
import type { MetadataImage } from '../../src/metadata/image.ts';
import type { MetadataManager } from '../../src/metadata/manager.ts';
import { createLogger } from '../../src/observability/logger.ts';

export interface RegisteredBroker {
  readonly brokerId: number;
  readonly host?: string;
  readonly port?: number;
  readonly rack?: string | null;
}

/** The feature ranges a Sluice broker registers with (what BrokerLifecycleManager sends). */
export function brokerFeatures(): { name: string; minSupportedVersion: number; maxSupportedVersion: number }[] {
  return [
    { name: METADATA_VERSION_FEATURE, minSupportedVersion: 1, maxSupportedVersion: METADATA_VERSION_LEVEL },
    { name: ELIGIBLE_LEADER_REPLICAS_FEATURE, minSupportedVersion: 0, maxSupportedVersion: ELIGIBLE_LEADER_REPLICAS_LEVEL },
  ];
}

/**
 * Registers and unfences each broker (a number: PLAINTEXT on 127.0.0.1:9000+id, no rack) with
 * the active `controller`; resolves with the broker epochs by id.
 */
export async function registerBrokers(
  controller: QuorumController,
  image: () => MetadataImage,
  brokers: readonly (number | RegisteredBroker)[],
  clusterId = 'AAAAAAAAAAAAAAAAAAAAAA',
): Promise<Map<number, bigint>> {
  const epochs = new Map<number, bigint>();
  for (const broker of brokers) {
    const b: RegisteredBroker = typeof broker === 'number' ? { brokerId: broker } : broker;
    const registered = await controller.brokerRegistration(
      makeBrokerRegistrationRequest({
        brokerId: b.brokerId,
        clusterId,
        incarnationId: randomUuid(),
        listeners: [{ name: 'PLAINTEXT', host: b.host ?? '127.0.0.1', port: b.port ?? 9000 + b.brokerId, securityProtocol: 0 }],
        features: brokerFeatures(),
        rack: b.rack ?? null,
      }),
    );
    assert.equal(registered.errorCode, Errors.NONE.code, `registration of broker ${b.brokerId}: ${registered.errorMessage}`);
    const heartbeat = await controller.brokerHeartbeat(
      makeBrokerHeartbeatRequest({
        brokerId: b.brokerId,
        brokerEpoch: registered.brokerEpoch,
        currentMetadataOffset: BigInt(image().offset),
        wantFence: false,
      }),
    );
    assert.equal(heartbeat.errorCode, Errors.NONE.code, `heartbeat of broker ${b.brokerId}: ${heartbeat.errorMessage}`);
    assert.equal(heartbeat.isFenced, false, `broker ${b.brokerId} unfenced by its first caught-up heartbeat`);
    epochs.set(b.brokerId, registered.brokerEpoch);
  }
  return epochs;
}

export interface LocalBroker {
  readonly lifecycle: BrokerLifecycleManager;
  readonly channel: ControllerChannelManager;
  close(): Promise<void>;
}

/**
 * Registers the node of `metadata` (which must host the active controller, a single voter)
 * as a broker with `listeners`, through the controller channel's in-process handlers, and
 * resolves once it is unfenced; it heartbeats until close().
 */
export async function startLocalBroker(
  metadata: MetadataManager,
  config: BrokerConfig,
  listeners: readonly Listener[] = [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092, securityProtocol: 'PLAINTEXT' }],
): Promise<LocalBroker> {
  const logger = createLogger({ quiet: true });
  const channel = new ControllerChannelManager({
    nodeId: metadata.nodeId,
    activeControllerId: () => metadata.activeControllerId(),
    voters: config.quorumVoters,
    retryBackoffMs: 20,
    local: controllerSideHandlers({
      metadata: { nodeId: metadata.nodeId, config, metadata },
      controllerApis: { controller: metadata.controller },
      envelope: { registry: new HandlerRegistry(), logger },
    }),
  });
  const lifecycle = new BrokerLifecycleManager({
    nodeId: metadata.nodeId,
    clusterId: metadata.clusterId,
    channel,
    listeners,
    rack: null,
    currentMetadataOffset: () => metadata.image().offset,
    heartbeatIntervalMs: config.getInt('broker.heartbeat.interval.ms'),
    sessionTimeoutMs: config.getInt('broker.session.timeout.ms'),
    logger,
  });
  lifecycle.start();
  await lifecycle.whenUnfenced();
  return {
    lifecycle,
    channel,
    async close() {
      await lifecycle.close();
      await channel.close();
    },
  };
}
