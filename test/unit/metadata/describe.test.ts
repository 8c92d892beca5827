import assert from 'node:assert/strict';
import { makeBrokerHeartbeatRequest } from '../../../protocol/messages/broker-heartbeat.ts';
import { QuorumController } from '../../../src/metadata/controller.ts';
import { reportedControllerId } from '../../../src/metadata/describe.ts';
import { registerBrokers } from '../../helpers/broker-registration.ts';
import { FakeClock } from './fake-cluster.ts';
import { ImageSink } from './image-sink.ts';

// The controller id brokers report in Metadata and DescribeCluster (KIP-590): clients cannot
// reach a KRaft controller, so a KRaft broker names a random live broker, whichever node
// (a controller-only one, say) is the active controller.

describe('reported controller id', () => {
  it('is a random live broker, never a fenced one, -1 when none is live', async () => {
    const sink = new ImageSink();
    const controller = new QuorumController(sink, { defaultNumPartitions: () => 1, defaultReplicationFactor: () => 1 }, () => 0, {
      clock: new FakeClock(),
    });
    await controller.activate();
    assert.equal(reportedControllerId(sink.image()), -1, 'no broker registered');
    const epochs = await registerBrokers(controller, () => sink.image(), [4, 5, 6]);
    const fenced = await controller.brokerHeartbeat(
      makeBrokerHeartbeatRequest({
        brokerId: 6,
        brokerEpoch: epochs.get(6)!,
        currentMetadataOffset: BigInt(sink.image().offset),
        wantFence: true,
      }),
    );
    assert.equal(fenced.isFenced, true);
    const image = sink.image();
    assert.equal(reportedControllerId(image, { next: () => 0 }), 4);
    assert.equal(reportedControllerId(image, { next: () => 0.5 }), 5);
    assert.equal(reportedControllerId(image, { next: () => 0.999999 }), 5);
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(reportedControllerId(image));
    assert.deepEqual([...seen].sort(), [4, 5], 'both live brokers, and never broker 6');
  });
});
