import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { makeAllocateProducerIdsRequest } from '../../../protocol/messages/allocate-producer-ids.ts';
import { makeAlterPartitionRequest } from '../../../protocol/messages/alter-partition.ts';
import { makeAlterPartitionReassignmentsRequest } from '../../../protocol/messages/alter-partition-reassignments.ts';
import { makeBrokerHeartbeatRequest } from '../../../protocol/messages/broker-heartbeat.ts';
import { makeBrokerRegistrationRequest } from '../../../protocol/messages/broker-registration.ts';
import { makeElectLeadersRequest } from '../../../protocol/messages/elect-leaders.ts';
import { makeListPartitionReassignmentsRequest } from '../../../protocol/messages/list-partition-reassignments.ts';
import {
  handleAllocateProducerIds,
  handleAlterPartition,
  handleAlterPartitionReassignments,
  handleBrokerHeartbeat,
  handleBrokerRegistration,
  handleElectLeaders,
  handleListPartitionReassignments,
} from '../../../src/handlers/controller-apis.ts';
import { QuorumController, randomUuid } from '../../../src/metadata/controller.ts';
import { FakeClock } from './fake-cluster.ts';
import { ImageSink } from './image-sink.ts';
import { brokerFeatures } from '../../helpers/broker-registration.ts';

function services() {
  const sink = new ImageSink();
  const controller = new QuorumController(
    sink,
    { defaultNumPartitions: () => 1, defaultReplicationFactor: () => 1, clusterId: () => 'c' },
    () => 0,
    { clock: new FakeClock() },
  );
  return { sink, services: { controller } };
}

const registration = (brokerId: number) =>
  makeBrokerRegistrationRequest({
    brokerId,
    clusterId: 'c',
    incarnationId: randomUuid(),
    listeners: [{ name: 'PLAINTEXT', host: 'h', port: 9092, securityProtocol: 0 }],
    features: brokerFeatures(),
    rack: null,
  });

describe('controller APIs (Kafka ControllerApis)', () => {
  it('answer NOT_CONTROLLER on a node that is not the active controller', async () => {
    const { services: s } = services();
    assert.equal((await handleBrokerRegistration(s, registration(1), 3)).errorCode, Errors.NOT_CONTROLLER.code);
    assert.equal((await handleBrokerHeartbeat(s, makeBrokerHeartbeatRequest({ brokerId: 1 }), 1)).errorCode, Errors.NOT_CONTROLLER.code);
    const alter = makeAlterPartitionRequest({
      brokerId: 1,
      topics: [{ topicName: '', topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: [] }],
    });
    assert.equal((await handleAlterPartition(s, alter, 3)).errorCode, Errors.NOT_CONTROLLER.code);
    const ids = await handleAllocateProducerIds(s, makeAllocateProducerIdsRequest({ brokerId: 1, brokerEpoch: 0n }), 0);
    assert.deepEqual([ids.errorCode, ids.producerIdStart, ids.producerIdLen], [Errors.NOT_CONTROLLER.code, 0n, 0]);
    const elect = await handleElectLeaders(s, makeElectLeadersRequest({ topicPartitions: [{ topic: 't', partitions: [0, 1] }] }), 2);
    assert.equal(elect.errorCode, Errors.NOT_CONTROLLER.code);
    assert.deepEqual(
      elect.replicaElectionResults[0]!.partitionResult.map((p) => p.errorCode),
      [Errors.NOT_CONTROLLER.code, Errors.NOT_CONTROLLER.code],
    );
    const reassign = await handleAlterPartitionReassignments(
      s,
      makeAlterPartitionReassignmentsRequest({ topics: [{ name: 't', partitions: [{ partitionIndex: 0, replicas: [1] }] }] }),
      0,
    );
    assert.equal(reassign.errorCode, Errors.NOT_CONTROLLER.code);
    assert.equal(reassign.responses[0]!.partitions[0]!.errorCode, Errors.NOT_CONTROLLER.code);
    assert.equal(
      (await handleListPartitionReassignments(s, makeListPartitionReassignmentsRequest(), 0)).errorCode,
      Errors.NOT_CONTROLLER.code,
    );
  });

  it('register, heartbeat to unfenced, and hand out producer ids', async () => {
    const { sink, services: s } = services();
    await s.controller.activate();
    const registered = await handleBrokerRegistration(s, registration(1), 3);
    assert.equal(registered.errorCode, 0);
    const heartbeat = await handleBrokerHeartbeat(
      s,
      makeBrokerHeartbeatRequest({ brokerId: 1, brokerEpoch: registered.brokerEpoch, currentMetadataOffset: BigInt(sink.current.offset) }),
      1,
    );
    assert.deepEqual([heartbeat.errorCode, heartbeat.isCaughtUp, heartbeat.isFenced, heartbeat.shouldShutDown], [0, true, false, false]);
    const ids = await handleAllocateProducerIds(s, makeAllocateProducerIdsRequest({ brokerId: 1, brokerEpoch: registered.brokerEpoch }), 0);
    assert.deepEqual([ids.errorCode, ids.producerIdStart, ids.producerIdLen], [0, 0n, 1000]);
    // An empty AlterPartition is answered without looking further, as Kafka does.
    assert.deepEqual((await handleAlterPartition(s, makeAlterPartitionRequest({ brokerId: 9 }), 3)).topics, []);
    const [t] = await s.controller.createTopics(
      [{ name: 't', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      false,
    );
    assert.equal(t!.errorCode, 0);
    const elect = await handleElectLeaders(
      s,
      makeElectLeadersRequest({ electionType: 0, topicPartitions: [{ topic: 't', partitions: [0] }] }),
      2,
    );
    assert.equal(elect.errorCode, 0);
    assert.equal(elect.replicaElectionResults[0]!.partitionResult[0]!.errorCode, Errors.ELECTION_NOT_NEEDED.code);
  });
});
