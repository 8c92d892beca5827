/**
 * The broker-to-controller RPCs and the controller-only admin APIs, as Kafka's ControllerApis
 * serves them on controller listeners: BrokerRegistration, BrokerHeartbeat, AlterPartition,
 * AllocateProducerIds, ElectLeaders, AlterPartitionReassignments and
 * ListPartitionReassignments. The quorum controller decides; a node that is not the active
 * controller answers NOT_CONTROLLER, and the sender looks for the one that is.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAllocateProducerIdsResponse,
  type AllocateProducerIdsRequest,
  type AllocateProducerIdsResponse,
} from '../../protocol/messages/allocate-producer-ids.ts';
import {
  makeAlterPartitionReassignmentsResponse,
  makeAlterPartitionReassignmentsResponseReassignablePartitionResponse,
  makeAlterPartitionReassignmentsResponseReassignableTopicResponse,
  type AlterPartitionReassignmentsRequest,
  type AlterPartitionReassignmentsResponse,
} from '../../protocol/messages/alter-partition-reassignments.ts';
import {
  makeAlterPartitionResponse,
  type AlterPartitionRequest,
  type AlterPartitionResponse,
} from '../../protocol/messages/alter-partition.ts';
import {
  makeBrokerHeartbeatResponse,
  type BrokerHeartbeatRequest,
  type BrokerHeartbeatResponse,
} from '../../protocol/messages/broker-heartbeat.ts';
import {
  makeBrokerRegistrationResponse,
  type BrokerRegistrationRequest,
  type BrokerRegistrationResponse,
} from '../../protocol/messages/broker-registration.ts';
import {
  makeElectLeadersResponse,
  makeElectLeadersResponsePartitionResult,
  makeElectLeadersResponseReplicaElectionResult,
  type ElectLeadersRequest,
  type ElectLeadersResponse,
} from '../../protocol/messages/elect-leaders.ts';
import {
  makeListPartitionReassignmentsResponse,
  makeListPartitionReassignmentsResponseOngoingPartitionReassignment,
  makeListPartitionReassignmentsResponseOngoingTopicReassignment,
  type ListPartitionReassignmentsRequest,
  type ListPartitionReassignmentsResponse,
} from '../../protocol/messages/list-partition-reassignments.ts';
import type { QuorumController } from '../metadata/controller.ts';

export interface ControllerApiServices {
  readonly controller: QuorumController;
}

export async function handleBrokerRegistration(
  services: ControllerApiServices,
  request: BrokerRegistrationRequest,
  _version: number,
): Promise<BrokerRegistrationResponse> {
  const r = await services.controller.brokerRegistration(request);
  return makeBrokerRegistrationResponse({ errorCode: r.errorCode, brokerEpoch: r.brokerEpoch });
}

export async function handleBrokerHeartbeat(
  services: ControllerApiServices,
  request: BrokerHeartbeatRequest,
  _version: number,
): Promise<BrokerHeartbeatResponse> {
  const r = await services.controller.brokerHeartbeat(request);
  return makeBrokerHeartbeatResponse({
    errorCode: r.errorCode,
    isCaughtUp: r.isCaughtUp,
    isFenced: r.isFenced,
    shouldShutDown: r.shouldShutDown,
  });
}

export async function handleAlterPartition(
  services: ControllerApiServices,
  request: AlterPartitionRequest,
  version: number,
): Promise<AlterPartitionResponse> {
  // As Kafka's QuorumController: nothing asked, nothing to check.
  if (request.topics.length === 0) return makeAlterPartitionResponse();
  return services.controller.alterPartition(request, version);
}

export async function handleAllocateProducerIds(
  services: ControllerApiServices,
  request: AllocateProducerIdsRequest,
  _version: number,
): Promise<AllocateProducerIdsResponse> {
  const r = await services.controller.allocateProducerIds(request.brokerId, request.brokerEpoch);
  if (r.errorCode !== Errors.NONE.code) return makeAllocateProducerIdsResponse({ errorCode: r.errorCode });
  return makeAllocateProducerIdsResponse({ producerIdStart: r.producerIdStart, producerIdLen: r.producerIdLen });
}

export async function handleElectLeaders(
  services: ControllerApiServices,
  request: ElectLeadersRequest,
  _version: number,
): Promise<ElectLeadersResponse> {
  const r = await services.controller.electLeaders(request.electionType, request.topicPartitions);
  if (r.errorCode !== Errors.NONE.code) {
    // Kafka's ElectLeadersRequest.getErrorResponse: the request's error on every partition it named.
    return makeElectLeadersResponse({
      errorCode: r.errorCode,
      replicaElectionResults: (request.topicPartitions ?? []).map((t) =>
        makeElectLeadersResponseReplicaElectionResult({
          topic: t.topic,
          partitionResult: t.partitions.map((partitionId) =>
            makeElectLeadersResponsePartitionResult({ partitionId, errorCode: r.errorCode, errorMessage: r.errorMessage }),
          ),
        }),
      ),
    });
  }
  return makeElectLeadersResponse({
    replicaElectionResults: r.replicaElectionResults.map((t) =>
      makeElectLeadersResponseReplicaElectionResult({
        topic: t.topic,
        partitionResult: t.partitionResult.map((p) => makeElectLeadersResponsePartitionResult(p)),
      }),
    ),
  });
}

export async function handleAlterPartitionReassignments(
  services: ControllerApiServices,
  request: AlterPartitionReassignmentsRequest,
  _version: number,
): Promise<AlterPartitionReassignmentsResponse> {
  const r = await services.controller.alterPartitionReassignments(request.topics);
  // A refusal of the whole request is reported on each of its partitions too, as Kafka's getErrorResponse does.
  const responses =
    r.errorCode !== Errors.NONE.code
      ? request.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: r.errorCode, errorMessage: r.errorMessage })),
        }))
      : r.responses;
  return makeAlterPartitionReassignmentsResponse({
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    responses: responses.map((t) =>
      makeAlterPartitionReassignmentsResponseReassignableTopicResponse({
        name: t.name,
        partitions: t.partitions.map((p) => makeAlterPartitionReassignmentsResponseReassignablePartitionResponse(p)),
      }),
    ),
  });
}

export async function handleListPartitionReassignments(
  services: ControllerApiServices,
  request: ListPartitionReassignmentsRequest,
  _version: number,
): Promise<ListPartitionReassignmentsResponse> {
  const r = await services.controller.listPartitionReassignments(request.topics);
  return makeListPartitionReassignmentsResponse({
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    topics: r.topics.map((t) =>
      makeListPartitionReassignmentsResponseOngoingTopicReassignment({
        name: t.name,
        partitions: t.partitions.map((p) => makeListPartitionReassignmentsResponseOngoingPartitionReassignment(p)),
      }),
    ),
  });
}
