import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Errors } from '../../../protocol/errors.ts';
import { makeCreateTopicsRequest, makeCreateTopicsRequestCreatableTopic } from '../../../protocol/messages/create-topics.ts';
import { BrokerConfig } from '../../../src/config/broker-config.ts';
import { ImageWaiter, forwardCreateTopics, type ForwardingServices } from '../../../src/handlers/forward.ts';
import { controllerSideHandlers } from '../../../src/handlers/index.ts';
import { HandlerRegistry } from '../../../src/handlers/registry.ts';
import { BrokerLifecycleManager } from '../../../src/metadata/broker-lifecycle.ts';
import { ControllerChannelManager, producerIdBlockAllocator } from '../../../src/metadata/controller-channel.ts';
import { MetadataManager } from '../../../src/metadata/manager.ts';
import { createLogger } from '../../../src/observability/logger.ts';

// A one-node cluster through the same path a multi-node one takes: registration, heartbeats,
// forwarded CreateTopics and producer-id blocks go through the controller channel, which
// calls the controller-side handlers in-process. No sockets.

describe('a single node through the controller channel', () => {
  let dir: string;
  let metadata: MetadataManager;
  let channel: ControllerChannelManager;
  let lifecycle: BrokerLifecycleManager;
  let images: ImageWaiter;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-channel-'));
    const config = new BrokerConfig({
      overrides: new Map([
        ['node.id', '1'],
        ['process.roles', 'broker,controller'],
        ['listeners', 'PLAINTEXT://127.0.0.1:0'],
        ['controller.quorum.voters', '1@127.0.0.1:0'],
        ['log.dirs', dir],
        ['unsafe.bypass.fsync', 'true'],
      ]),
    });
    const logger = createLogger({ quiet: true });
    metadata = new MetadataManager({ config, logger });
    await metadata.start();
    channel = new ControllerChannelManager({
      nodeId: 1,
      activeControllerId: () => metadata.activeControllerId(),
      voters: config.quorumVoters,
      retryBackoffMs: 20,
      local: controllerSideHandlers({
        metadata: { nodeId: 1, config, metadata },
        controllerApis: { controller: metadata.controller },
        envelope: { registry: new HandlerRegistry(), logger },
      }),
    });
    images = new ImageWaiter(metadata.image());
    metadata.onMetadataDelta((_delta, image) => images.published(image));
    lifecycle = new BrokerLifecycleManager({
      nodeId: 1,
      clusterId: metadata.clusterId,
      channel,
      listeners: [{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092, securityProtocol: 'PLAINTEXT' }],
      rack: null,
      currentMetadataOffset: () => metadata.image().offset,
      heartbeatIntervalMs: 2000,
      sessionTimeoutMs: 9000,
      logger,
    });
  });

  after(async () => {
    await lifecycle.close();
    await channel.close();
    images.close();
    await metadata.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('registers and is unfenced within milliseconds', async () => {
    const started = Date.now();
    lifecycle.start();
    await lifecycle.whenUnfenced();
    assert.ok(Date.now() - started < 1000, `unfenced after ${Date.now() - started} ms`);
    const registration = metadata.image().brokers.get(1);
    assert.equal(registration?.fenced, false);
    assert.equal(registration?.epoch, lifecycle.brokerEpoch);
  });

  it('creates a topic through the channel and answers once the local image has it', async () => {
    const services: ForwardingServices = { nodeId: 1, channel, forwardTimeoutMs: 5000, images };
    const request = makeCreateTopicsRequest({
      topics: [makeCreateTopicsRequestCreatableTopic({ name: 'orders', numPartitions: 2, replicationFactor: 1 })],
      timeoutMs: 5000,
    });
    const res = await forwardCreateTopics(services, request, 7);
    assert.equal(res.topics[0]!.errorCode, Errors.NONE.code, res.topics[0]!.errorMessage ?? '');
    assert.equal(metadata.image().topic('orders')?.partitions.size, 2);
    assert.equal(metadata.image().partition('orders', 0)?.leader, 1);
  });

  it('allocates producer-id blocks with AllocateProducerIds', async () => {
    const allocate = producerIdBlockAllocator(channel, { brokerId: 1, brokerEpoch: () => lifecycle.brokerEpoch, timeoutMs: 5000 });
    const first = await allocate();
    const second = await allocate();
    assert.ok(first.size > 0);
    assert.equal(second.firstProducerId, first.firstProducerId + BigInt(first.size));
  });

  it('completes a controlled shutdown', async () => {
    await lifecycle.controlledShutdown(10_000);
    assert.equal(lifecycle.state, 'SHUTTING_DOWN');
  });
});
