// The quorum controller: turns admin requests into metadata records, validates them against
// the current image as Kafka's ReplicationControlManager / ConfigurationControlManager do,
// appends them through Raft and answers once they are committed and applied. On the active
// controller it also runs the cluster as Kafka's QuorumController, ClusterControlManager and
// BrokerHeartbeatManager do: broker registrations and sessions, fencing of brokers silent past
// broker.session.timeout.ms, controlled shutdown, ISR changes from partition leaders, leader
// elections, replica placement and reassignments.
//
// Operations run one at a time: each validates against the image that includes every
// earlier operation, so two CreateTopics of one name cannot both pass.

import { Errors, KafkaError, type KafkaErrorCode } from '../../protocol/errors.ts';
import {
  makeAlterPartitionResponse,
  makeAlterPartitionResponsePartitionData,
  makeAlterPartitionResponseTopicData,
  type AlterPartitionRequest,
  type AlterPartitionResponse,
  type AlterPartitionResponsePartitionData,
} from '../../protocol/messages/alter-partition.ts';
import type { BrokerHeartbeatRequest } from '../../protocol/messages/broker-heartbeat.ts';
import type { BrokerRegistrationRequest as BrokerRegistrationRequestData } from '../../protocol/messages/broker-registration.ts';
import { uuidToString, ZERO_UUID } from '../../protocol/primitives.ts';
import { BROKER_CONFIG_DEF_BY_NAME } from '../config/broker-defs.ts';
import { TOPIC_CONFIG_DEF_BY_NAME } from '../config/topic-defs.ts';
import { validateTopicConfig } from '../config/topic-config.ts';
import { ConfigException, checkValue, parseList } from '../config/types.ts';
import { type FailureSink, runGuarded } from '../runtime/guard.ts';
import { BrokerHeartbeatManager, isFencedState } from './broker-heartbeats.ts';
import type { BrokerRegistration, MetadataImage, PartitionImage, TopicImage } from './image.ts';
import {
  type Election,
  LeaderRecoveryState,
  NO_LEADER,
  NO_LEADER_CHANGE,
  buildPartitionChange,
  isReassignmentInProgress,
} from './partition-change.ts';
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import { systemRandom, type Random } from '../runtime/random.ts';
import type { ConfigRecord, MetadataRecord, RegisterBrokerRecord } from './records.ts';
import { ConfigResourceType, partitionRecord } from './records.ts';
import { placeReplicas } from './replica-placer.ts';
import { ThrottlingQuotaExceededError } from '../quota/controller-mutation-quota.ts';
import { planScramAlterations, type ScramAlterResult } from './scram-control.ts';
import { planAclCreations, planAclDeletions, type AclCreationResult, type AclDeletionResult } from './acl-control.ts';
import type { CreateAclsRequestAclCreation } from '../../protocol/messages/create-acls.ts';
import type { DeleteAclsRequestDeleteAclsFilter } from '../../protocol/messages/delete-acls.ts';
import type { AlterUserScramCredentialsRequest } from '../../protocol/messages/alter-user-scram-credentials.ts';
import type { AlterClientQuotasRequest } from '../../protocol/messages/alter-client-quotas.ts';
import { planClientQuotaAlterations, type ClientQuotaAlterResult } from './client-quota-control.ts';

/** Kafka's metadata.version feature and the level this broker writes (4.0-IV1, the first with ELR records). */
export const METADATA_VERSION_FEATURE = 'metadata.version';
export const METADATA_VERSION_LEVEL = 23;
/** The first metadata.version whose partition records carry eligible leader replicas (Kafka's isElrSupported). */
const ELR_METADATA_VERSION_LEVEL = 23;
/** KIP-966's feature, at level 1 on a new cluster as Kafka 4.1 bootstraps it. */
export const ELIGIBLE_LEADER_REPLICAS_FEATURE = 'eligible.leader.replicas.version';
export const ELIGIBLE_LEADER_REPLICAS_LEVEL = 1;
const MIN_INSYNC_REPLICAS = 'min.insync.replicas';
/** Size of the producer id blocks handed to brokers (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE). */
export const PRODUCER_ID_BLOCK_SIZE = 1000;
/**
 * The most records one admin operation may write (Kafka's QuorumController
 * MAX_RECORDS_PER_USER_OP = MAX_RECORDS_PER_BATCH = 10000): more is refused with
 * POLICY_VIOLATION, as Kafka's EventHandlerExceptionInfo answers a BoundedListTooLongException.
 */
export const MAX_RECORDS_PER_USER_OP = 10_000;
/** Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: partitions one CreateTopics may ask for. */
export const MAX_PARTITIONS_PER_BATCH = 10_000;
export const EXCESSIVE_BATCH_MESSAGE = 'Unable to perform excessively large batch operation.';
export const EXCESSIVE_PARTITIONS_MESSAGE = 'Excessively large number of partitions per request.';

export interface ApiResult {
  errorCode: number;
  errorMessage: string | null;
}

const OK: ApiResult = { errorCode: Errors.NONE.code, errorMessage: null };

function fail(error: KafkaErrorCode, message: string | null = null): ApiResult {
  return { errorCode: error.code, errorMessage: message };
}

/** As Kafka's `new ApiError(error)`: the error's own message. */
function withDefaultMessage(error: KafkaErrorCode): ApiResult {
  return fail(error, error.message);
}

/** Appends records through Raft and resolves once they are applied to the image. */
export interface RecordSink {
  /** Whether this node leads the Raft quorum (the controller is active once it has also caught up). */
  isActive(): boolean;
  image(): MetadataImage;
  /** The offset the next record written gets: a RegisterBrokerRecord's offset is the broker epoch. */
  nextWriteOffset(): number;
  write(records: MetadataRecord[]): Promise<void>;
}

export interface ControllerConfig {
  /** num.partitions */
  defaultNumPartitions: () => number;
  /** default.replication.factor */
  defaultReplicationFactor: () => number;
  /** broker.session.timeout.ms (Kafka's 9000 when not given). */
  brokerSessionTimeoutMs?: () => number;
  /** unclean.leader.election.enable of the cluster; a topic's own config overrides it. */
  uncleanLeaderElectionEnable?: () => boolean;
  /** min.insync.replicas of the cluster (Kafka's 1 when not given); a topic's own config overrides it. */
  minInsyncReplicas?: () => number;
  /** The cluster id a BrokerRegistration must carry (INCONSISTENT_CLUSTER_ID otherwise); unchecked when not given. */
  clusterId?: () => string;
  /** auto.leader.rebalance.enable (off when not given). */
  autoLeaderRebalanceEnable?: () => boolean;
  /** leader.imbalance.check.interval.seconds, in milliseconds (Kafka's 300 s when not given). */
  leaderImbalanceCheckIntervalMs?: () => number;
}

/** The controller's own timers (session expiry, leader rebalancing) and its randomness (topic ids, placement). */
export interface ControllerRuntime {
  clock?: Clock;
  random?: Random;
  /** Where a failure of one of those timers goes. */
  onFailure?: FailureSink;
}

/** Kafka's broker.session.timeout.ms default. */
export const DEFAULT_BROKER_SESSION_TIMEOUT_MS = 9000;
/** Kafka's leader.imbalance.check.interval.seconds default, in milliseconds. */
export const DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS = 300_000;
/** Preferred-leader elections one rebalance round writes at most (Kafka's QuorumController maxElectionsPerImbalance). */
export const MAX_ELECTIONS_PER_IMBALANCE = 1000;

/** ElectLeaders electionType values (Kafka's ElectionType). */
export const ElectionType = { PREFERRED: 0, UNCLEAN: 1 } as const;

export interface CreatableTopic {
  name: string;
  numPartitions: number;
  replicationFactor: number;
  /** Manual assignment: partition index -> broker ids. */
  assignments: { partitionIndex: number; brokerIds: number[] }[];
  configs: { name: string; value: string | null }[];
}

/** Creates topics through whichever node is the active controller (auto-creation, internal topics). */
export type TopicCreator = (topics: readonly CreatableTopic[]) => Promise<(ApiResult & { name: string })[]>;

export interface CreateTopicResult extends ApiResult {
  name: string;
  topicId: string;
  numPartitions: number;
  replicationFactor: number;
}

export interface DeleteTopicResult extends ApiResult {
  name: string | null;
  topicId: string;
}

export interface CreatePartitionsTopic {
  name: string;
  count: number;
  assignments: { brokerIds: number[] }[] | null;
}

export interface ConfigResourceRef {
  resourceType: number;
  resourceName: string;
}

export const AlterConfigOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

export interface IncrementalConfigResource extends ConfigResourceRef {
  configs: { name: string; configOperation: number; value: string | null }[];
}

export interface LegacyConfigResource extends ConfigResourceRef {
  configs: { name: string; value: string | null }[];
}

export interface ProducerIdBlock {
  firstProducerId: bigint;
  size: number;
}

export interface BrokerRegistrationResult extends ApiResult {
  /** -1 when refused. */
  brokerEpoch: bigint;
}

export interface BrokerHeartbeatResult extends ApiResult {
  isCaughtUp: boolean;
  isFenced: boolean;
  inControlledShutdown: boolean;
  shouldShutDown: boolean;
}

export interface AllocateProducerIdsResult extends ApiResult {
  producerIdStart: bigint;
  producerIdLen: number;
}

export interface ElectLeadersTopicResult {
  topic: string;
  partitionResult: { partitionId: number; errorCode: number; errorMessage: string | null }[];
}

export interface ElectLeadersResult extends ApiResult {
  replicaElectionResults: ElectLeadersTopicResult[];
}

export interface ReassignablePartition {
  partitionIndex: number;
  /** Null cancels the partition's ongoing reassignment. */
  replicas: number[] | null;
}

export interface ReassignmentTopicResult {
  name: string;
  partitions: { partitionIndex: number; errorCode: number; errorMessage: string | null }[];
}

export interface OngoingReassignment {
  name: string;
  partitions: { partitionIndex: number; replicas: number[]; addingReplicas: number[]; removingReplicas: number[] }[];
}

export function randomUuid(random: Random = systemRandom): string {
  for (;;) {
    const id = uuidToString(random.bytes(16));
    // Kafka never hands out the zero uuid nor ids that start with '-' (Uuid.randomUuid).
    if (id !== ZERO_UUID && !id.startsWith('-')) return id;
  }
}

const LEGAL_TOPIC_CHARS = /^[a-zA-Z0-9._-]+$/;
export const MAX_TOPIC_NAME_LENGTH = 249;

/** Kafka's Topic.validate: the reason the name is illegal, or null. */
export function topicNameError(name: string): string | null {
  if (name.length === 0) return "Topic name is illegal, it can't be empty";
  if (name === '.' || name === '..') return 'Topic name cannot be "." or ".."';
  if (name.length > MAX_TOPIC_NAME_LENGTH) {
    return `Topic name is illegal, it can't be longer than ${MAX_TOPIC_NAME_LENGTH} characters, topic name: ${name}`;
  }
  if (!LEGAL_TOPIC_CHARS.test(name)) {
    return `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`;
  }
  return null;
}

/** Period and underscore collide in metric names, so Kafka refuses topics that differ only there. */
function collisionKey(name: string): string {
  return name.replaceAll('.', '_');
}

/**
 * The operation would write more than MAX_RECORDS_PER_USER_OP records (Kafka's
 * BoundedListTooLongException): the whole request is refused, not one of its resources.
 */
class RecordLimitError extends KafkaError {
  constructor() {
    super(Errors.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE);
  }
}

/** A topic of a CreateTopics refused as a whole (POLICY_VIOLATION), as Kafka answers a failed controller event. */
function refusedTopic(name: string, message: string): CreateTopicResult {
  return { ...fail(Errors.POLICY_VIOLATION, message), name, topicId: ZERO_UUID, numPartitions: -1, replicationFactor: -1 };
}

/** What a resource refused with a KafkaError (thrown by `check`) is answered with. */
function refusedWith(err: KafkaError): ApiResult {
  // Kafka's ApiError leaves out a message that is the error's default one.
  if (err instanceof ThrottlingQuotaExceededError) return { errorCode: err.code, errorMessage: null };
  return { errorCode: err.code, errorMessage: err.message };
}

/**
 * The controller_mutation_rate quota of the request's client (KIP-599), spent per topic once
 * the topic passed validation, as Kafka's ControllerRequestContext.applyPartitionChangeQuota:
 * `record` throws ThrottlingQuotaExceededError when a strict quota refuses the topic.
 */
export interface PartitionChangeQuota {
  record(partitions: number): void;
}

function check(condition: boolean, error: KafkaErrorCode, message: string): asserts condition {
  if (!condition) throw new KafkaError(error, message);
}

export class QuorumController {
  private queue: Promise<unknown> = Promise.resolve();
  private formatRecords: readonly MetadataRecord[] = [];
  private readonly clock: Clock;
  private readonly ids: Random;
  /** Replica placement's draws: a test fixes them to get a known assignment. */
  private readonly random: () => number;
  private readonly onFailure: FailureSink;
  /** Bumped by every activation and resignation: work of an older one stops. */
  private generation = 0;
  /** Broker sessions; null while this controller is not active. */
  private heartbeats: BrokerHeartbeatManager | null = null;
  private fenceTimer: TimerHandle | null = null;
  private rebalanceTimer: TimerHandle | null = null;

  constructor(
    private readonly sink: RecordSink,
    private readonly config: ControllerConfig,
    placementRandom?: () => number,
    runtime: ControllerRuntime = {},
  ) {
    this.clock = runtime.clock ?? systemClock;
    const random = runtime.random ?? systemRandom;
    this.ids = random;
    this.random = placementRandom ?? (() => random.next());
    this.onFailure = runtime.onFailure ?? (() => {});
  }

  /** Leads the quorum and has applied everything before its own epoch: it may write. */
  isActive(): boolean {
    return this.heartbeats !== null && this.sink.isActive();
  }

  /**
   * This node became the Raft leader. Everything earlier in the log is applied once a record
   * of the new epoch commits (a NoOpRecord), then an empty log gets its bootstrap records and
   * every registered broker starts a session as if just heard from (Kafka's
   * ClusterControlManager.activate). Operations answer NOT_CONTROLLER until then.
   */
  activate(): Promise<void> {
    this.deactivate();
    const generation = this.generation;
    const current = () => generation === this.generation && this.sink.isActive();
    return this.serialize(async () => {
      if (!current()) return;
      try {
        await this.sink.write([{ type: 'NoOpRecord', data: {} }]);
        if (!this.sink.image().features.has(METADATA_VERSION_FEATURE)) await this.sink.write(this.bootstrapRecords());
      } catch {
        // Leadership went before the log caught up: the next activation starts over.
        return;
      }
      if (!current()) return;
      // Sessions are durations: monotonic time, which a wall-clock step cannot stretch or cut.
      const heartbeats = new BrokerHeartbeatManager(
        () => this.clock.monotonicMs(),
        this.config.brokerSessionTimeoutMs?.() ?? DEFAULT_BROKER_SESSION_TIMEOUT_MS,
      );
      for (const b of this.sink.image().brokers.values()) heartbeats.assume(b.id, b.fenced);
      this.heartbeats = heartbeats;
      this.scheduleFenceCheck();
      this.scheduleRebalance();
    });
  }

  /** This node no longer leads the quorum: sessions and timers stop (Kafka's renounce). */
  deactivate(): void {
    this.generation++;
    this.heartbeats = null;
    if (this.fenceTimer !== null) this.clock.clearTimeout(this.fenceTimer);
    if (this.rebalanceTimer !== null) this.clock.clearTimeout(this.rebalanceTimer);
    this.fenceTimer = this.rebalanceTimer = null;
  }

  /** Runs operations one after another; each sees the image the previous one produced. */
  private serialize<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => {});
    return run;
  }

  private notController(): ApiResult {
    return fail(Errors.NOT_CONTROLLER, 'This node is not the active controller.');
  }

  // ---- topics ------------------------------------------------------------------------

  createTopics(topics: CreatableTopic[], validateOnly: boolean, quota?: PartitionChangeQuota): Promise<CreateTopicResult[]> {
    return this.serialize(async () => {
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: CreateTopicResult[] = [];
      const seen = new Map<string, number>();
      for (const t of topics) seen.set(t.name, (seen.get(t.name) ?? 0) + 1);
      // Kafka's validateTotalNumberOfPartitions: refused before anything is planned or allocated.
      if (this.requestedPartitions(topics) > MAX_PARTITIONS_PER_BATCH) {
        return topics.map((t) => refusedTopic(t.name, EXCESSIVE_PARTITIONS_MESSAGE));
      }
      const collisions = new Map<string, string>();
      for (const existing of image.topicsByName.keys()) collisions.set(collisionKey(existing), existing);
      let plannedRecords = 0;
      for (const topic of topics) {
        const result: CreateTopicResult = { ...OK, name: topic.name, topicId: ZERO_UUID, numPartitions: -1, replicationFactor: -1 };
        results.push(result);
        if (!this.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        if ((seen.get(topic.name) ?? 0) > 1) {
          Object.assign(result, fail(Errors.INVALID_REQUEST, 'Duplicate topic name.'));
          continue;
        }
        try {
          const planned = this.planTopic(image, topic, collisions, MAX_RECORDS_PER_USER_OP - plannedRecords);
          quota?.record(planned.numPartitions);
          result.topicId = planned.topicId;
          result.numPartitions = planned.numPartitions;
          result.replicationFactor = planned.replicationFactor;
          plannedRecords += planned.records.length;
          if (!validateOnly) records.push(...planned.records);
          collisions.set(collisionKey(topic.name), topic.name);
        } catch (err) {
          if (err instanceof RecordLimitError) return topics.map((t) => refusedTopic(t.name, EXCESSIVE_BATCH_MESSAGE));
          if (!(err instanceof KafkaError)) throw err;
          Object.assign(result, refusedWith(err));
        }
      }
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  /** Kafka's validateTotalNumberOfPartitions: an upper bound of the partitions `topics` ask for. */
  private requestedPartitions(topics: readonly CreatableTopic[]): number {
    let total = 0;
    for (const t of topics) {
      if (t.assignments.length > 0) total += t.assignments.length;
      else if (t.numPartitions === -1) total += this.config.defaultNumPartitions();
      else if (t.numPartitions > 0) total += t.numPartitions;
    }
    return total;
  }

  /** Writes records; when Raft refuses, every still-successful result becomes the error. */
  private async write(records: MetadataRecord[], results: ApiResult[]): Promise<void> {
    try {
      await this.sink.write(records);
    } catch {
      for (const r of results) if (r.errorCode === Errors.NONE.code) Object.assign(r, this.notController());
    }
  }

  /**
   * `collisions` maps the collision key of every existing and already planned topic to its
   * name; `recordBudget` is what is left of MAX_RECORDS_PER_USER_OP (RecordLimitError past it).
   */
  private planTopic(image: MetadataImage, topic: CreatableTopic, collisions: ReadonlyMap<string, string>, recordBudget: number) {
    const nameError = topicNameError(topic.name);
    check(nameError === null, Errors.INVALID_TOPIC_EXCEPTION, nameError ?? '');
    check(image.topic(topic.name) === undefined, Errors.TOPIC_ALREADY_EXISTS, `Topic '${topic.name}' already exists.`);
    const existing = collisions.get(collisionKey(topic.name));
    check(existing === undefined, Errors.INVALID_TOPIC_EXCEPTION, `Topic '${topic.name}' collides with existing topic: ${existing}`);
    let assignments: number[][];
    if (topic.assignments.length > 0) {
      check(
        topic.numPartitions === -1,
        Errors.INVALID_REQUEST,
        'A manual partition assignment was specified, but numPartitions was not set to -1.',
      );
      check(
        topic.replicationFactor === -1,
        Errors.INVALID_REQUEST,
        'A manual partition assignment was specified, but replicationFactor was not set to -1.',
      );
      const sorted = [...topic.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex);
      for (const [i, a] of sorted.entries()) {
        check(a.partitionIndex === i, Errors.INVALID_REPLICA_ASSIGNMENT, 'partitions should be a consecutive 0-based integer sequence');
      }
      assignments = sorted.map((a) => a.brokerIds);
      // The first partition's replication factor is the one every partition must have.
      const replicationFactor = assignments[0]?.length ?? 0;
      for (const [i, replicas] of assignments.entries()) this.checkAssignment(image, replicas, replicationFactor, i);
    } else {
      const numPartitions = topic.numPartitions === -1 ? this.config.defaultNumPartitions() : topic.numPartitions;
      const replicationFactor = topic.replicationFactor === -1 ? this.config.defaultReplicationFactor() : topic.replicationFactor;
      check(numPartitions > 0, Errors.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.');
      check(
        replicationFactor > 0,
        Errors.INVALID_REPLICATION_FACTOR,
        'Replication factor must be larger than 0, or -1 to use the default value.',
      );
      // The TopicRecord and the partitions must fit before anything is allocated.
      if (numPartitions + 1 > recordBudget) throw new RecordLimitError();
      assignments = placeReplicas(this.usableBrokers(image), numPartitions, replicationFactor, this.random);
    }
    const configRecords = this.topicConfigRecords(topic.name, topic.configs);
    const topicId = randomUuid(this.ids);
    const records: MetadataRecord[] = [{ type: 'TopicRecord', data: { name: topic.name, topicId } }];
    for (const [partitionId, replicas] of assignments.entries()) records.push(this.newPartition(image, topicId, partitionId, replicas));
    records.push(...configRecords);
    if (records.length > recordBudget) throw new RecordLimitError();
    return { topicId, numPartitions: assignments.length, replicationFactor: assignments[0]?.length ?? 0, records };
  }

  /**
   * Kafka's validateManualPartitionAssignment; a new partition (`expectedLength` given) also
   * needs one active replica to lead.
   */
  private checkAssignment(image: MetadataImage, replicas: number[], expectedLength: number | null, partitionId: number): void {
    check(replicas.length > 0, Errors.INVALID_REPLICA_ASSIGNMENT, 'The manual partition assignment includes an empty replica list.');
    check(
      new Set(replicas).size === replicas.length,
      Errors.INVALID_REPLICA_ASSIGNMENT,
      `The manual partition assignment includes duplicate replicas: ${replicas.join(', ')}`,
    );
    check(
      expectedLength === null || replicas.length === expectedLength,
      Errors.INVALID_REPLICA_ASSIGNMENT,
      'The manual partition assignment includes partitions with different replication factors.',
    );
    for (const id of replicas) {
      check(
        image.brokers.has(id),
        Errors.INVALID_REPLICA_ASSIGNMENT,
        `The manual partition assignment includes broker ${id}, but no such broker is registered.`,
      );
    }
    check(
      expectedLength === null || replicas.some((id) => this.isActiveBroker(image, id)),
      Errors.INVALID_REPLICA_ASSIGNMENT,
      `All brokers specified in the manual partition assignment for partition ${partitionId} are fenced or in controlled shutdown.`,
    );
  }

  /** Brokers new replicas may go to: registered and not shutting down; fenced ones only after the others. */
  private usableBrokers(image: MetadataImage) {
    return [...image.brokers.values()]
      .filter((b) => !(b.inControlledShutdown && !b.fenced) && this.heartbeats?.isShuttingDown(b.id) !== true)
      .sort((a, b) => a.id - b.id)
      .map((b) => ({ id: b.id, rack: b.rack, fenced: b.fenced }));
  }

  /** A new partition's ISR is its active replicas, the first of them leading (Kafka's buildPartitionRegistration). */
  private newPartition(image: MetadataImage, topicId: string, partitionId: number, replicas: number[]): MetadataRecord {
    const isr = replicas.filter((id) => this.isActiveBroker(image, id));
    return {
      type: 'PartitionRecord',
      data: partitionRecord({ partitionId, topicId, replicas, isr, leader: isr[0] ?? -1, leaderEpoch: 0, partitionEpoch: 0 }),
    };
  }

  private topicConfigRecords(topic: string, configs: { name: string; value: string | null }[]): MetadataRecord[] {
    const out: MetadataRecord[] = [];
    for (const c of configs) {
      const value = c.value;
      check(value !== null, Errors.INVALID_CONFIG, `Null value not supported for topic configs: ${c.name}`);
      validate(() => validateTopicConfig(c.name, value));
      out.push(configRecord(ConfigResourceType.TOPIC, topic, c.name, value));
    }
    return out;
  }

  deleteTopics(topics: { name: string | null; topicId: string }[], quota?: PartitionChangeQuota): Promise<DeleteTopicResult[]> {
    return this.serialize(async () => {
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: DeleteTopicResult[] = [];
      const removing = new Set<string>();
      for (const request of topics) {
        const result: DeleteTopicResult = { ...OK, name: request.name, topicId: request.topicId };
        results.push(result);
        if (!this.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        const byId = request.topicId !== ZERO_UUID;
        const topic = byId ? image.topicById(request.topicId) : image.topic(request.name ?? '');
        if (topic === undefined) {
          Object.assign(result, byId ? fail(Errors.UNKNOWN_TOPIC_ID) : fail(Errors.UNKNOWN_TOPIC_OR_PARTITION));
          continue;
        }
        result.name = topic.name;
        result.topicId = topic.id;
        if (removing.has(topic.id)) continue;
        try {
          quota?.record(topic.partitions.size);
        } catch (err) {
          if (!(err instanceof ThrottlingQuotaExceededError)) throw err;
          Object.assign(result, refusedWith(err));
          continue;
        }
        removing.add(topic.id);
        records.push({ type: 'RemoveTopicRecord', data: { topicId: topic.id } });
      }
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  createPartitions(
    topics: CreatePartitionsTopic[],
    validateOnly: boolean,
    quota?: PartitionChangeQuota,
  ): Promise<(ApiResult & { name: string })[]> {
    return this.serialize(async () => {
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: (ApiResult & { name: string })[] = [];
      let plannedRecords = 0;
      for (const request of topics) {
        const result = { ...OK, name: request.name };
        results.push(result);
        if (!this.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        try {
          const planned = this.planPartitions(image, request, MAX_RECORDS_PER_USER_OP - plannedRecords);
          quota?.record(planned.length);
          plannedRecords += planned.length;
          if (!validateOnly) records.push(...planned);
        } catch (err) {
          if (err instanceof RecordLimitError)
            return topics.map((t) => ({ ...fail(Errors.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE), name: t.name }));
          if (!(err instanceof KafkaError)) throw err;
          Object.assign(result, refusedWith(err));
        }
      }
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  private planPartitions(image: MetadataImage, request: CreatePartitionsTopic, recordBudget: number): MetadataRecord[] {
    const topic = image.topic(request.name);
    check(topic !== undefined, Errors.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${request.name}' does not exist.`);
    const current = topic.partitions.size;
    check(request.count !== current, Errors.INVALID_PARTITIONS, `Topic already has ${current} partition(s).`);
    check(
      request.count > current,
      Errors.INVALID_PARTITIONS,
      `The topic ${request.name} currently has ${current} partition(s); ${request.count} would not be an increase.`,
    );
    const added = request.count - current;
    // Checked before placement: a count of 2^31-1 must not allocate 2^31 replica lists.
    if (added > recordBudget) throw new RecordLimitError();
    const replicationFactor = topic.partitions.get(0)?.replicas.length ?? 1;
    let assignments: number[][];
    // An empty list means no manual assignment, as null does (clients send either).
    if (request.assignments !== null && request.assignments.length > 0) {
      check(
        request.assignments.length === added,
        Errors.INVALID_REPLICA_ASSIGNMENT,
        `Attempted to add ${added} additional partition(s), but only ${request.assignments.length} assignment(s) were specified.`,
      );
      assignments = request.assignments.map((a) => a.brokerIds);
      for (const [i, replicas] of assignments.entries()) this.checkAssignment(image, replicas, replicationFactor, current + i);
    } else {
      assignments = placeReplicas(this.usableBrokers(image), added, replicationFactor, this.random);
    }
    return assignments.map((replicas, i) => this.newPartition(image, topic.id, current + i, replicas));
  }

  // ---- ACLs --------------------------------------------------------------------------

  createAcls(creations: CreateAclsRequestAclCreation[]): Promise<AclCreationResult[]> {
    return this.serialize(async () => {
      if (!this.isActive()) return creations.map(() => this.notController());
      const { records, results } = planAclCreations(this.sink.image(), creations, () => randomUuid(this.ids));
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  deleteAcls(filters: DeleteAclsRequestDeleteAclsFilter[]): Promise<AclDeletionResult[]> {
    return this.serialize(async () => {
      if (!this.isActive()) return filters.map(() => ({ ...this.notController(), matching: [] }));
      const { records, results } = planAclDeletions(this.sink.image(), filters);
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  // ---- SCRAM credentials -----------------------------------------------------------

  alterUserScramCredentials(request: AlterUserScramCredentialsRequest): Promise<ScramAlterResult[]> {
    return this.serialize(async () => {
      const users = [...new Set([...request.deletions, ...request.upsertions].map((c) => c.name))];
      if (!this.isActive()) return users.map((user) => ({ user, ...this.notController() }));
      const { records, results } = planScramAlterations(this.sink.image(), request);
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  // ---- client quotas -----------------------------------------------------------------

  /**
   * A refusal of the whole request (not the active controller, too many records) answers each
   * entry with its entity as sent, as Kafka's AlterClientQuotasRequest.getErrorResponse does.
   */
  alterClientQuotas(request: AlterClientQuotasRequest): Promise<ClientQuotaAlterResult[]> {
    return this.serialize(async () => {
      const refuseAll = (refusal: ApiResult) => request.entries.map((e) => ({ entity: e.entity.map((d) => ({ ...d })), ...refusal }));
      if (!this.isActive()) return refuseAll(this.notController());
      const { records, results } = planClientQuotaAlterations(this.sink.image(), request);
      if (records.length > MAX_RECORDS_PER_USER_OP) return refuseAll(fail(Errors.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE));
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  // ---- configs -----------------------------------------------------------------------

  incrementalAlterConfigs(resources: IncrementalConfigResource[], validateOnly: boolean): Promise<(ApiResult & ConfigResourceRef)[]> {
    return this.alterConfigs(resources, validateOnly, (image, resource) => {
      const current = image.resourceConfigs(resource.resourceType, resource.resourceName);
      const records: MetadataRecord[] = [];
      const seen = new Set<string>();
      for (const op of resource.configs) {
        check(!seen.has(op.name), Errors.INVALID_REQUEST, `Error due to duplicate config keys: ${op.name}`);
        seen.add(op.name);
        const def = this.configDef(resource, op.name);
        let value: string | null;
        switch (op.configOperation) {
          case AlterConfigOp.SET:
            value = op.value;
            break;
          case AlterConfigOp.DELETE:
            value = null;
            break;
          case AlterConfigOp.APPEND:
          case AlterConfigOp.SUBTRACT: {
            check(def.type === 'list', Errors.INVALID_CONFIG, `Config value append is not allowed for config key: ${op.name}`);
            const base = parseList(current.get(op.name) ?? def.defaultValue ?? '');
            const items = parseList(op.value ?? '');
            const next =
              op.configOperation === AlterConfigOp.APPEND
                ? [...base, ...items.filter((i) => !base.includes(i))]
                : base.filter((i) => !items.includes(i));
            value = next.join(',');
            break;
          }
          default:
            throw new KafkaError(Errors.INVALID_REQUEST, `Unknown alter config operation type ${op.configOperation}`);
        }
        // A broker resource gets its record even unchanged, to make brokers reload (KAFKA-14136).
        if (value !== (current.get(op.name) ?? null) || resource.resourceType === ConfigResourceType.BROKER) {
          records.push(this.configChange(resource, op.name, value));
        }
      }
      return records;
    });
  }

  /** Legacy AlterConfigs: the request replaces every dynamic config of the resource. */
  legacyAlterConfigs(resources: LegacyConfigResource[], validateOnly: boolean): Promise<(ApiResult & ConfigResourceRef)[]> {
    return this.alterConfigs(resources, validateOnly, (image, resource) => {
      const records: MetadataRecord[] = [];
      const names = new Set<string>();
      for (const c of resource.configs) {
        check(!names.has(c.name), Errors.INVALID_REQUEST, `Error due to duplicate config keys: ${c.name}`);
        names.add(c.name);
        this.configDef(resource, c.name);
        records.push(this.configChange(resource, c.name, c.value));
      }
      for (const name of image.resourceConfigs(resource.resourceType, resource.resourceName).keys()) {
        if (!names.has(name)) records.push(configRecord(resource.resourceType, resource.resourceName, name, null));
      }
      return records;
    });
  }

  private alterConfigs<R extends ConfigResourceRef>(
    resources: R[],
    validateOnly: boolean,
    plan: (image: MetadataImage, resource: R) => MetadataRecord[],
  ): Promise<(ApiResult & ConfigResourceRef)[]> {
    return this.serialize(async () => {
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: (ApiResult & ConfigResourceRef)[] = [];
      for (const resource of resources) {
        const result = { ...OK, resourceType: resource.resourceType, resourceName: resource.resourceName };
        results.push(result);
        if (!this.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        try {
          this.checkResource(image, resource);
          const planned = plan(image, resource);
          if (isElrEnabled(image)) refuseElrMinIsrChanges(planned);
          if (!validateOnly) records.push(...planned, ...clearElrRecordsAsNeeded(image, planned));
        } catch (err) {
          if (!(err instanceof KafkaError)) throw err;
          Object.assign(result, refusedWith(err));
        }
      }
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  private checkResource(image: MetadataImage, resource: ConfigResourceRef): void {
    if (resource.resourceType === ConfigResourceType.TOPIC) {
      const nameError = topicNameError(resource.resourceName);
      check(nameError === null, Errors.INVALID_TOPIC_EXCEPTION, nameError ?? '');
      check(
        image.topic(resource.resourceName) !== undefined,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        `Topic '${resource.resourceName}' does not exist.`,
      );
    } else if (resource.resourceType === ConfigResourceType.BROKER) {
      const name = resource.resourceName;
      check(name === '' || /^\d+$/.test(name), Errors.INVALID_REQUEST, `Invalid broker name ${name}`);
    } else {
      throw new KafkaError(Errors.INVALID_REQUEST, `Unsupported resource type ${resource.resourceType}`);
    }
  }

  private configDef(resource: ConfigResourceRef, name: string) {
    const resourceType = resource.resourceType;
    const def = resourceType === ConfigResourceType.TOPIC ? TOPIC_CONFIG_DEF_BY_NAME.get(name) : BROKER_CONFIG_DEF_BY_NAME.get(name);
    if (resourceType === ConfigResourceType.TOPIC) check(def !== undefined, Errors.INVALID_CONFIG, `Unknown topic config name: ${name}`);
    else check(def !== undefined, Errors.INVALID_CONFIG, `Unknown broker config name: ${name}`);
    if (resourceType === ConfigResourceType.BROKER) {
      check(def.updateMode !== 'read-only', Errors.INVALID_REQUEST, `Cannot update these configs dynamically: [${name}]`);
      check(
        resource.resourceName !== '' || def.updateMode !== 'per-broker',
        Errors.INVALID_REQUEST,
        `Cannot update these configs at default cluster level, broker id must be specified: [${name}]`,
      );
    }
    return def;
  }

  private configChange(resource: ConfigResourceRef, name: string, value: string | null): MetadataRecord {
    const def = this.configDef(resource, name);
    if (value !== null) validate(() => checkValue(def, value));
    return configRecord(resource.resourceType, resource.resourceName, name, value);
  }

  // ---- brokers ------------------------------------------------------------------------

  /** Registered, unfenced and not in controlled shutdown: may lead and join ISRs (Kafka's isActive). */
  private isActiveBroker(image: MetadataImage, brokerId: number): boolean {
    const b = image.brokers.get(brokerId);
    return b !== undefined && !b.fenced && !b.inControlledShutdown;
  }

  /** unclean.leader.election.enable of the topic, else of the cluster. */
  private electionFor(image: MetadataImage, topic: string): Election {
    const own = image.topicConfigs(topic).get('unclean.leader.election.enable');
    const enabled = own !== undefined ? own.trim().toLowerCase() === 'true' : (this.config.uncleanLeaderElectionEnable?.() ?? false);
    return enabled ? 'UNCLEAN' : 'ONLINE';
  }

  /**
   * What every partition change of `topic` needs for KIP-966: whether ELR is on (Kafka's
   * isElrEnabled) and the topic's effective min ISR (getTopicEffectiveMinIsr: its
   * min.insync.replicas, else the cluster's, capped by its replication factor).
   */
  private elrSettings(image: MetadataImage, topic: TopicImage): { eligibleLeaderReplicasEnabled: boolean; minIsr: number } {
    const own = Number.parseInt(image.topicConfigs(topic.name).get(MIN_INSYNC_REPLICAS) ?? '', 10);
    const cluster = Number.parseInt(image.resourceConfigs(ConfigResourceType.BROKER, '').get(MIN_INSYNC_REPLICAS) ?? '', 10);
    const configured = Number.isInteger(own) ? own : Number.isInteger(cluster) ? cluster : (this.config.minInsyncReplicas?.() ?? 1);
    const replicationFactor = topic.partitions.get(0)?.replicas.length ?? configured;
    return { eligibleLeaderReplicasEnabled: isElrEnabled(image), minIsr: Math.min(configured, replicationFactor) };
  }

  private *partitionsWhere(image: MetadataImage, predicate: (p: PartitionImage) => boolean): Generator<[TopicImage, PartitionImage]> {
    for (const topic of image.topicsById.values()) {
      for (const p of topic.partitions.values()) if (predicate(p)) yield [topic, p];
    }
  }

  private hasLeaderships(image: MetadataImage, brokerId: number): boolean {
    return !this.partitionsWhere(image, (p) => p.leader === brokerId).next().done;
  }

  /**
   * Kafka's generateLeaderAndIsrUpdates: `brokerToRemove` leaves each ISR (except as its last
   * member) and cannot lead; `brokerToAdd` may lead although the image still shows it fenced.
   * Leaders are elected from the remaining live ISR members, or from any live replica where
   * unclean election is enabled; -1 when none can lead.
   */
  private leaderAndIsrUpdates(
    image: MetadataImage,
    brokerToRemove: number,
    brokerToAdd: number,
    partitions: Iterable<[TopicImage, PartitionImage]>,
    brokerWithUncleanShutdown = NO_LEADER,
  ): MetadataRecord[] {
    const isAcceptableLeader = (r: number) =>
      r !== brokerToRemove && r !== brokerWithUncleanShutdown && (r === brokerToAdd || this.isActiveBroker(image, r));
    const records: MetadataRecord[] = [];
    for (const [topic, p] of partitions) {
      const change = buildPartitionChange(p, topic.id, {
        isAcceptableLeader,
        election: this.electionFor(image, topic.name),
        isr: p.isr.filter((r) => r !== brokerToRemove && r !== brokerWithUncleanShutdown),
        ...this.elrSettings(image, topic),
        ...(brokerWithUncleanShutdown !== NO_LEADER ? { uncleanShutdownReplicas: [brokerWithUncleanShutdown] } : {}),
      });
      if (change !== null) records.push({ type: 'PartitionChangeRecord', data: change });
    }
    return records;
  }

  /** Kafka's handleBrokerFenced: out of every ISR, leadership moved, then the fence itself. */
  private fenceRecords(image: MetadataImage, brokerId: number): MetadataRecord[] {
    const registration = image.brokers.get(brokerId);
    if (registration === undefined) return [];
    return [
      ...this.leaderAndIsrUpdates(
        image,
        brokerId,
        NO_LEADER,
        this.partitionsWhere(image, (p) => p.isr.includes(brokerId)),
      ),
      brokerRegistrationChange(brokerId, registration.epoch, { fenced: 1 }),
    ];
  }

  /** Kafka's handleBrokerUnfenced: leaderless partitions whose ISR holds the broker get it as leader. */
  private unfenceRecords(image: MetadataImage, brokerId: number, brokerEpoch: bigint): MetadataRecord[] {
    return [
      brokerRegistrationChange(brokerId, brokerEpoch, { fenced: -1 }),
      ...this.leaderAndIsrUpdates(
        image,
        NO_LEADER,
        brokerId,
        this.partitionsWhere(image, (p) => p.leader === NO_LEADER),
      ),
    ];
  }

  /** Kafka's handleBrokerInControlledShutdown: marked shutting down, out of every ISR, leadership moved. */
  private controlledShutdownRecords(image: MetadataImage, brokerId: number, brokerEpoch: bigint): MetadataRecord[] {
    const records: MetadataRecord[] = [];
    if (image.brokers.get(brokerId)?.inControlledShutdown !== true) {
      records.push(brokerRegistrationChange(brokerId, brokerEpoch, { inControlledShutdown: 1 }));
    }
    records.push(
      ...this.leaderAndIsrUpdates(
        image,
        brokerId,
        NO_LEADER,
        this.partitionsWhere(image, (p) => p.isr.includes(brokerId)),
      ),
    );
    return records;
  }

  /**
   * Kafka's handleBrokerShutdown for a new incarnation of a registered broker. One that did not
   * stop cleanly (its PreviousBrokerEpoch is not the epoch of its last registration: it wrote
   * no clean-shutdown file) may have lost what its page cache held, so with ELR it leaves every
   * ISR and ELR (KIP-966). Otherwise, if the controller never saw the old one fenced, the old
   * one leaves every ISR and its leadership moves, as at a fencing.
   */
  private newIncarnationRecords(
    image: MetadataImage,
    brokerId: number,
    existing: BrokerRegistration,
    previousBrokerEpoch: bigint,
  ): MetadataRecord[] {
    if (isElrEnabled(image) && previousBrokerEpoch !== existing.epoch) {
      return this.leaderAndIsrUpdates(
        image,
        NO_LEADER,
        NO_LEADER,
        this.partitionsWhere(image, (p) => p.isr.includes(brokerId) || p.elr.includes(brokerId)),
        brokerId,
      );
    }
    if (existing.fenced) return [];
    return this.leaderAndIsrUpdates(
      image,
      brokerId,
      NO_LEADER,
      this.partitionsWhere(image, (p) => p.isr.includes(brokerId)),
    );
  }

  /** Kafka's checkBrokerEpoch: the error when `brokerEpoch` is not the broker's current registration. */
  private staleBrokerEpoch(image: MetadataImage, brokerId: number, brokerEpoch: bigint): ApiResult | null {
    const registration = image.brokers.get(brokerId);
    if (registration === undefined) return fail(Errors.STALE_BROKER_EPOCH, `No broker registration found for broker id ${brokerId}`);
    if (registration.epoch !== brokerEpoch) {
      return fail(Errors.STALE_BROKER_EPOCH, `Expected broker epoch ${registration.epoch}, but got broker epoch ${brokerEpoch}`);
    }
    return null;
  }

  /**
   * A write failed while this node believed it was active: as Kafka's controller renounces
   * and claims again, the in-memory state starts over from the log (or stays off when
   * leadership is gone).
   */
  private renounce(): void {
    this.deactivate();
    runGuarded(this.onFailure, 'controller re-activation', () => this.activate());
  }

  /**
   * BrokerRegistration (Kafka's ClusterControlManager.registerBroker): a new incarnation gets
   * a new epoch (the offset of its RegisterBrokerRecord) and starts fenced; the same
   * incarnation registering again keeps its epoch and state. Refused with
   * DUPLICATE_BROKER_REGISTRATION while another incarnation of the id holds a live session.
   */
  brokerRegistration(request: BrokerRegistrationRequestData): Promise<BrokerRegistrationResult> {
    return this.serialize(async () => {
      const refused = (r: ApiResult): BrokerRegistrationResult => ({ ...r, brokerEpoch: -1n });
      const heartbeats = this.heartbeats;
      if (heartbeats === null || !this.isActive()) return refused(this.notController());
      const clusterId = this.config.clusterId?.();
      if (clusterId !== undefined && request.clusterId !== clusterId) {
        return refused(fail(Errors.INCONSISTENT_CLUSTER_ID, `Expected cluster ID ${clusterId}, but got cluster ID ${request.clusterId}`));
      }
      const image = this.sink.image();
      const brokerId = request.brokerId;
      const existing = image.brokers.get(brokerId);
      if (existing !== undefined && existing.incarnationId !== request.incarnationId && heartbeats.hasHeardFromLiveSession(brokerId)) {
        return refused(fail(Errors.DUPLICATE_BROKER_REGISTRATION, 'Another broker is registered with that broker id.'));
      }
      if (request.isMigratingZkBroker) {
        return refused(fail(Errors.BROKER_ID_NOT_REGISTERED, 'Controller does not support registering ZK brokers.'));
      }
      const features = request.features.map((f) => ({ ...f }));
      if (!features.some((f) => f.name === METADATA_VERSION_FEATURE)) {
        // Kafka's assumption for brokers that send no range: the first KRaft metadata.version only.
        features.push({ name: METADATA_VERSION_FEATURE, minSupportedVersion: 1, maxSupportedVersion: 1 });
      }
      const unsupported = unsupportedFeature(image, features);
      if (unsupported !== null) return refused(fail(Errors.UNSUPPORTED_VERSION, unsupported));
      const amend = existing !== undefined && existing.incarnationId === request.incarnationId;
      const brokerEpoch = amend ? existing.epoch : BigInt(this.sink.nextWriteOffset());
      const fenced = amend ? existing.fenced : true;
      const record = registerBrokerRecord({
        brokerId,
        incarnationId: request.incarnationId,
        brokerEpoch,
        endPoints: request.listeners.map((l) => ({ name: l.name, host: l.host, port: l.port, securityProtocol: l.securityProtocol })),
        features,
        rack: request.rack,
        fenced,
        inControlledShutdown: amend ? existing.inControlledShutdown : false,
        logDirs: [...request.logDirs],
      });
      const replaced =
        existing !== undefined && !amend ? this.newIncarnationRecords(image, brokerId, existing, request.previousBrokerEpoch) : [];
      try {
        await this.sink.write([...replaced, record]);
      } catch {
        return refused(this.notController());
      }
      if (!amend) heartbeats.remove(brokerId);
      heartbeats.register(brokerId, fenced);
      this.scheduleFenceCheck();
      return { ...OK, brokerEpoch };
    });
  }

  /**
   * BrokerHeartbeat (Kafka's ReplicationControlManager.processBrokerHeartbeat): renews the
   * session and moves the broker between fenced, unfenced, controlled shutdown and shut down.
   */
  brokerHeartbeat(request: BrokerHeartbeatRequest): Promise<BrokerHeartbeatResult> {
    return this.serialize(async () => {
      const refused = (r: ApiResult): BrokerHeartbeatResult => ({
        ...r,
        isCaughtUp: false,
        isFenced: true,
        inControlledShutdown: false,
        shouldShutDown: false,
      });
      const heartbeats = this.heartbeats;
      if (heartbeats === null || !this.isActive()) return refused(this.notController());
      const image = this.sink.image();
      const brokerId = request.brokerId;
      const registration = image.brokers.get(brokerId);
      if (registration === undefined) {
        return refused(fail(Errors.STALE_BROKER_EPOCH, `Receive a heartbeat from broker ${brokerId} before registration`));
      }
      const stale = this.staleBrokerEpoch(image, brokerId, request.brokerEpoch);
      if (stale !== null) return refused(stale);
      if (!heartbeats.has(brokerId)) heartbeats.register(brokerId, registration.fenced);
      // The broker epoch is the offset of the broker's RegisterBrokerRecord.
      const registrationOffset = Number(registration.epoch);
      const metadataOffset = Number(request.currentMetadataOffset);
      const wantFence = request.wantFence || everyLogDirOffline(registration, request.offlineLogDirs);
      const { current, next } = heartbeats.nextBrokerState(
        brokerId,
        { wantFence, wantShutDown: request.wantShutDown, currentMetadataOffset: metadataOffset },
        registrationOffset,
        () => this.hasLeaderships(image, brokerId),
      );
      let records: MetadataRecord[] = [];
      if (current !== next) {
        if (next === 'UNFENCED') records = this.unfenceRecords(image, brokerId, registration.epoch);
        else if (next === 'CONTROLLED_SHUTDOWN') records = this.controlledShutdownRecords(image, brokerId, registration.epoch);
        else records = this.fenceRecords(image, brokerId);
      }
      if (records.length > 0) {
        try {
          await this.sink.write(records);
        } catch {
          return refused(this.notController());
        }
      }
      heartbeats.touch(brokerId, isFencedState(next), metadataOffset);
      // Shut down once every active broker has applied the leadership moves written so far.
      if (next === 'CONTROLLED_SHUTDOWN') heartbeats.maybeUpdateControlledShutdownOffset(brokerId, this.sink.image().offset);
      this.scheduleFenceCheck();
      return {
        ...OK,
        isCaughtUp: metadataOffset >= registrationOffset,
        isFenced: isFencedState(next),
        inControlledShutdown: next === 'CONTROLLED_SHUTDOWN',
        shouldShutDown: next === 'SHUTDOWN_NOW',
      };
    });
  }

  /** Arms the session-expiry check for the oldest unfenced session (Kafka's rescheduleMaybeFenceStaleBrokers). */
  private scheduleFenceCheck(): void {
    if (this.fenceTimer !== null) this.clock.clearTimeout(this.fenceTimer);
    this.fenceTimer = null;
    const heartbeats = this.heartbeats;
    if (heartbeats === null) return;
    const dueMs = heartbeats.nextCheckTimeMs();
    if (dueMs === Number.POSITIVE_INFINITY) return;
    const generation = this.generation;
    // A session holds up to and including its deadline: look just past it.
    const delayMs = Math.max(0, dueMs - this.clock.monotonicMs()) + 1;
    this.fenceTimer = this.clock.setTimeout(() => {
      this.fenceTimer = null;
      runGuarded(this.onFailure, 'broker session expiry', () => this.serialize(() => this.maybeFenceOneStaleBroker(generation)));
    }, delayMs);
  }

  /** One broker at a time, so each fencing's leader elections see the one before. */
  private async maybeFenceOneStaleBroker(generation: number): Promise<void> {
    const heartbeats = this.heartbeats;
    if (generation !== this.generation || heartbeats === null) return;
    if (!this.sink.isActive()) {
      this.deactivate();
      return;
    }
    const brokerId = heartbeats.findOneStaleBroker();
    if (brokerId !== undefined) {
      try {
        await this.sink.write(this.fenceRecords(this.sink.image(), brokerId));
      } catch {
        this.renounce();
        return;
      }
      heartbeats.fence(brokerId);
    }
    if (generation === this.generation) this.scheduleFenceCheck();
  }

  /** What an empty log starts with: the metadata.version feature, then the records `sluice storage format` left. */
  private bootstrapRecords(): MetadataRecord[] {
    return [...bootstrapFeatureRecords(), ...this.elrSafetyRecords(this.formatRecords), ...this.formatRecords];
  }

  /**
   * Kafka's maybeGenerateElrSafetyRecords, written as ELR is turned on: a partition's ELR is
   * kept under one min ISR for the whole cluster, so the cluster-level min.insync.replicas is
   * set (to this controller's static value) where none is, and it may then be neither removed
   * nor overridden per broker (refuseElrMinIsrChanges).
   */
  private elrSafetyRecords(pending: readonly MetadataRecord[]): MetadataRecord[] {
    const clusterMinIsrSet = pending.some(
      (r) =>
        r.type === 'ConfigRecord' &&
        r.data.resourceType === ConfigResourceType.BROKER &&
        r.data.resourceName === '' &&
        r.data.name === MIN_INSYNC_REPLICAS &&
        r.data.value !== null,
    );
    if (clusterMinIsrSet) return [];
    return [configRecord(ConfigResourceType.BROKER, '', MIN_INSYNC_REPLICAS, String(this.config.minInsyncReplicas?.() ?? 1))];
  }

  /** The records `sluice storage format` left for a new cluster (bootstrap-records.ts), written with the first metadata.version. */
  setFormatRecords(records: readonly MetadataRecord[]): void {
    this.formatRecords = records;
  }

  /** Writes the metadata.version feature when the log has none (Kafka's bootstrap records). */
  bootstrapIfEmpty(): Promise<void> {
    return this.serialize(async () => {
      if (!this.isActive() || this.sink.image().features.has(METADATA_VERSION_FEATURE)) return;
      await this.sink.write(this.bootstrapRecords());
    });
  }

  // ---- partitions ---------------------------------------------------------------------

  /**
   * AlterPartition from a partition leader (Kafka's ReplicationControlManager.alterPartition):
   * ISR shrinks and expansions checked against the broker epoch, the leader and partition
   * epochs and the eligibility of new members, answered with the committed partition state.
   */
  alterPartition(request: AlterPartitionRequest, version: number): Promise<AlterPartitionResponse> {
    return this.serialize(async () => {
      if (!this.isActive()) return makeAlterPartitionResponse({ errorCode: Errors.NOT_CONTROLLER.code });
      const image = this.sink.image();
      if (this.staleBrokerEpoch(image, request.brokerId, request.brokerEpoch) !== null) {
        return makeAlterPartitionResponse({ errorCode: Errors.STALE_BROKER_EPOCH.code });
      }
      const records: MetadataRecord[] = [];
      const answered: { data: AlterPartitionResponsePartitionData; topicId: string }[] = [];
      const errorFor = (partitionIndex: number, error: KafkaErrorCode) =>
        makeAlterPartitionResponsePartitionData({ partitionIndex, errorCode: error.code });
      const topics = request.topics.map((topicData) => {
        const topic = version > 1 ? image.topicById(topicData.topicId) : image.topic(topicData.topicName);
        const partitions = topicData.partitions.map((pd) => {
          if (topic === undefined) {
            return errorFor(pd.partitionIndex, version > 1 ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION);
          }
          const partition = topic.partitions.get(pd.partitionIndex);
          const newIsr = version >= 3 ? pd.newIsrWithEpochs : pd.newIsr.map((brokerId) => ({ brokerId, brokerEpoch: -1n }));
          const error = this.alterPartitionError(image, request.brokerId, partition, pd, newIsr, version);
          if (error !== null || partition === undefined) return errorFor(pd.partitionIndex, error ?? Errors.UNKNOWN_TOPIC_OR_PARTITION);
          const change = buildPartitionChange(partition, topic.id, {
            isAcceptableLeader: (r) => this.isActiveBroker(image, r),
            election: this.electionFor(image, topic.name),
            ...this.elrSettings(image, topic),
            isr: newIsr.map((b) => b.brokerId),
            leaderRecoveryState: pd.leaderRecoveryState,
          });
          if (change !== null) {
            records.push({ type: 'PartitionChangeRecord', data: change });
            // Only a completed reassignment moves leadership here: the old leader must refetch metadata.
            if (change.leader !== request.brokerId && change.leader !== NO_LEADER_CHANGE) {
              return errorFor(pd.partitionIndex, version > 1 ? Errors.NEW_LEADER_ELECTED : Errors.FENCED_LEADER_EPOCH);
            }
          }
          const data = makeAlterPartitionResponsePartitionData({ partitionIndex: pd.partitionIndex });
          answered.push({ data, topicId: topic.id });
          return data;
        });
        return makeAlterPartitionResponseTopicData({ topicName: topicData.topicName, topicId: topicData.topicId, partitions });
      });
      if (records.length > 0) {
        try {
          await this.sink.write(records);
        } catch {
          return makeAlterPartitionResponse({ errorCode: Errors.NOT_CONTROLLER.code });
        }
      }
      const committed = this.sink.image();
      for (const { data, topicId } of answered) {
        const p = committed.topicById(topicId)?.partitions.get(data.partitionIndex);
        if (p === undefined) {
          data.errorCode = Errors.UNKNOWN_TOPIC_OR_PARTITION.code;
          continue;
        }
        data.leaderId = p.leader;
        data.leaderEpoch = p.leaderEpoch;
        data.isr = [...p.isr];
        data.leaderRecoveryState = p.leaderRecoveryState;
        data.partitionEpoch = p.partitionEpoch;
      }
      return makeAlterPartitionResponse({ topics });
    });
  }

  /** Kafka's validateAlterPartitionData and ineligibleReplicasForIsr. */
  private alterPartitionError(
    image: MetadataImage,
    brokerId: number,
    partition: PartitionImage | undefined,
    request: { leaderEpoch: number; partitionEpoch: number; leaderRecoveryState: number },
    newIsr: readonly { brokerId: number; brokerEpoch: bigint }[],
    version: number,
  ): KafkaErrorCode | null {
    if (partition === undefined) return Errors.UNKNOWN_TOPIC_OR_PARTITION;
    // A leader ahead of this controller has heard from a newer one: let it find that one.
    if (request.leaderEpoch > partition.leaderEpoch || request.partitionEpoch > partition.partitionEpoch) return Errors.NOT_CONTROLLER;
    if (request.leaderEpoch < partition.leaderEpoch) return Errors.FENCED_LEADER_EPOCH;
    if (brokerId !== partition.leader) return Errors.INVALID_REQUEST;
    if (request.partitionEpoch < partition.partitionEpoch) return Errors.INVALID_UPDATE_VERSION;
    const ids = newIsr.map((b) => b.brokerId);
    if (!isValidIsr(partition.replicas, ids) || !ids.includes(partition.leader)) return Errors.INVALID_REQUEST;
    const { RECOVERED, RECOVERING } = LeaderRecoveryState;
    if (request.leaderRecoveryState === RECOVERING && ids.length > 1) return Errors.INVALID_REQUEST;
    if (partition.leaderRecoveryState === RECOVERED && request.leaderRecoveryState === RECOVERING) {
      return Errors.INVALID_REQUEST;
    }
    const ineligible = newIsr.some(({ brokerId: id, brokerEpoch }) => {
      const b = image.brokers.get(id);
      return b === undefined || b.inControlledShutdown || b.fenced || (brokerEpoch !== -1n && b.epoch !== brokerEpoch);
    });
    if (ineligible) return version > 1 ? Errors.INELIGIBLE_REPLICA : Errors.OPERATION_NOT_ATTEMPTED;
    return null;
  }

  /**
   * ElectLeaders (Kafka's ReplicationControlManager.electLeaders): PREFERRED moves leadership
   * to the first replica when it is a live ISR member; UNCLEAN gives leaderless partitions any
   * live replica. Null `topicPartitions` means every partition, answering only those that
   * needed an election.
   */
  electLeaders(
    electionType: number,
    topicPartitions: readonly { topic: string; partitions: readonly number[] }[] | null,
  ): Promise<ElectLeadersResult> {
    return this.serialize(async () => {
      if (!this.isActive()) return { ...this.notController(), replicaElectionResults: [] };
      if (electionType !== ElectionType.PREFERRED && electionType !== ElectionType.UNCLEAN) {
        return { ...fail(Errors.INVALID_REQUEST, `Unknown election type ${electionType}`), replicaElectionResults: [] };
      }
      const unclean = electionType === ElectionType.UNCLEAN;
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: ElectLeadersTopicResult[] = [];
      if (topicPartitions === null) {
        for (const topic of image.topicsByName.values()) {
          const partitionResult = [];
          for (const partitionId of topic.partitions.keys()) {
            const r = this.electLeader(image, topic.name, partitionId, unclean, records);
            if (r.errorCode !== Errors.ELECTION_NOT_NEEDED.code) partitionResult.push({ partitionId, ...r });
          }
          results.push({ topic: topic.name, partitionResult });
        }
      } else {
        for (const t of topicPartitions) {
          results.push({
            topic: t.topic,
            partitionResult: t.partitions.map((partitionId) => ({
              partitionId,
              ...this.electLeader(image, t.topic, partitionId, unclean, records),
            })),
          });
        }
      }
      if (records.length > MAX_RECORDS_PER_USER_OP) {
        return { ...fail(Errors.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE), replicaElectionResults: [] };
      }
      if (records.length > 0) {
        try {
          await this.sink.write(records);
        } catch {
          return { ...this.notController(), replicaElectionResults: [] };
        }
      }
      return { ...OK, replicaElectionResults: results };
    });
  }

  private electLeader(image: MetadataImage, topicName: string, partitionId: number, unclean: boolean, records: MetadataRecord[]) {
    const topic = image.topic(topicName);
    if (topic === undefined) return fail(Errors.UNKNOWN_TOPIC_OR_PARTITION, `No such topic as ${topicName}`);
    const p = topic.partitions.get(partitionId);
    if (p === undefined) return fail(Errors.UNKNOWN_TOPIC_OR_PARTITION, `No such partition as ${topicName}-${partitionId}`);
    if (unclean ? p.leader !== NO_LEADER : p.leader === (p.replicas[0] ?? NO_LEADER)) return withDefaultMessage(Errors.ELECTION_NOT_NEEDED);
    const change = buildPartitionChange(p, topic.id, {
      isAcceptableLeader: (r) => this.isActiveBroker(image, r),
      election: unclean ? 'UNCLEAN' : 'PREFERRED',
      ...this.elrSettings(image, topic),
    });
    if (change === null) return withDefaultMessage(unclean ? Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE : Errors.PREFERRED_LEADER_NOT_AVAILABLE);
    records.push({ type: 'PartitionChangeRecord', data: change });
    return OK;
  }

  /** auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, preferred leaders lead again. */
  private scheduleRebalance(delayMs = this.config.leaderImbalanceCheckIntervalMs?.() ?? DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS): void {
    if (this.rebalanceTimer !== null) this.clock.clearTimeout(this.rebalanceTimer);
    this.rebalanceTimer = null;
    if (this.heartbeats === null || !(this.config.autoLeaderRebalanceEnable?.() ?? false)) return;
    const generation = this.generation;
    this.rebalanceTimer = this.clock.setTimeout(() => {
      this.rebalanceTimer = null;
      runGuarded(this.onFailure, 'partition leader rebalance', () => this.serialize(() => this.balancePartitionLeaders(generation)));
    }, delayMs);
  }

  /** Kafka's maybeBalancePartitionLeaders: at most MAX_ELECTIONS_PER_IMBALANCE a round, the rest at once after. */
  private async balancePartitionLeaders(generation: number): Promise<void> {
    if (generation !== this.generation || !this.isActive()) return;
    const image = this.sink.image();
    const records: MetadataRecord[] = [];
    for (const [topic, p] of this.partitionsWhere(image, (p) => p.leader !== (p.replicas[0] ?? NO_LEADER))) {
      if (records.length >= MAX_ELECTIONS_PER_IMBALANCE) break;
      const change = buildPartitionChange(p, topic.id, {
        isAcceptableLeader: (r) => this.isActiveBroker(image, r),
        election: 'PREFERRED',
        ...this.elrSettings(image, topic),
      });
      if (change !== null) records.push({ type: 'PartitionChangeRecord', data: change });
    }
    if (records.length > 0) {
      try {
        await this.sink.write(records);
      } catch {
        this.renounce();
        return;
      }
    }
    if (generation === this.generation) this.scheduleRebalance(records.length >= MAX_ELECTIONS_PER_IMBALANCE ? 0 : undefined);
  }

  /**
   * AlterPartitionReassignments (Kafka's changePartitionReassignment / cancelPartitionReassignment):
   * the target replicas join the replica set as addingReplicas, the others become
   * removingReplicas; the reassignment completes when every target replica is in the ISR
   * (an AlterPartition from the leader adds them). Null replicas cancel it.
   */
  alterPartitionReassignments(
    topics: readonly { name: string; partitions: readonly ReassignablePartition[] }[],
  ): Promise<ApiResult & { responses: ReassignmentTopicResult[] }> {
    return this.serialize(async () => {
      if (!this.isActive()) return { ...this.notController(), responses: [] };
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const responses = topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((target) => {
          try {
            const change = this.reassignment(image, t.name, target);
            if (change !== null) records.push(change);
            return { partitionIndex: target.partitionIndex, ...OK };
          } catch (err) {
            if (!(err instanceof KafkaError)) throw err;
            return { partitionIndex: target.partitionIndex, ...refusedWith(err) };
          }
        }),
      }));
      if (records.length > MAX_RECORDS_PER_USER_OP) return { ...fail(Errors.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE), responses: [] };
      if (records.length > 0) {
        try {
          await this.sink.write(records);
        } catch {
          return { ...this.notController(), responses: [] };
        }
      }
      return { ...OK, responses };
    });
  }

  private reassignment(image: MetadataImage, topicName: string, target: ReassignablePartition): MetadataRecord | null {
    const topic = image.topic(topicName);
    check(topic !== undefined, Errors.UNKNOWN_TOPIC_OR_PARTITION, `Unable to find a topic named ${topicName}.`);
    const part = topic.partitions.get(target.partitionIndex);
    check(part !== undefined, Errors.UNKNOWN_TOPIC_OR_PARTITION, `Unable to find partition ${topicName}:${target.partitionIndex}.`);
    const isAcceptableLeader = (r: number) => this.isActiveBroker(image, r);
    let change: ReturnType<typeof buildPartitionChange>;
    if (target.replicas === null) {
      check(isReassignmentInProgress(part), Errors.NO_REASSIGNMENT_IN_PROGRESS, Errors.NO_REASSIGNMENT_IN_PROGRESS.message ?? '');
      // Back to the replicas before the reassignment: the adding ones go, the removing ones stay.
      const replicas = part.replicas.filter((r) => !part.addingReplicas.includes(r));
      let isr = part.isr.filter((r) => !part.addingReplicas.includes(r));
      const election = this.electionFor(image, topicName);
      if (isr.length === 0) {
        check(
          election === 'UNCLEAN',
          Errors.INVALID_REPLICA_ASSIGNMENT,
          `Unable to revert partition assignment for ${topicName}:${target.partitionIndex} because it would require an unclean leader election.`,
        );
        isr = replicas;
      }
      change = buildPartitionChange(part, topic.id, {
        isAcceptableLeader,
        election,
        isr,
        ...this.elrSettings(image, topic),
        replicas,
        removingReplicas: [],
        addingReplicas: [],
      });
    } else {
      this.checkAssignment(image, target.replicas, null, target.partitionIndex);
      const removing = part.replicas.filter((r) => !target.replicas?.includes(r)).sort((a, b) => a - b);
      const adding = target.replicas.filter((r) => !part.replicas.includes(r)).sort((a, b) => a - b);
      const replicas = [...target.replicas, ...removing];
      change = buildPartitionChange(part, topic.id, {
        isAcceptableLeader,
        ...this.elrSettings(image, topic),
        ...(sameReplicas(replicas, part.replicas) ? {} : { replicas }),
        ...(removing.length > 0 ? { removingReplicas: removing } : {}),
        ...(adding.length > 0 ? { addingReplicas: adding } : {}),
      });
    }
    return change === null ? null : { type: 'PartitionChangeRecord', data: change };
  }

  /** ListPartitionReassignments: partitions with adding or removing replicas, of the given topics or all. */
  listPartitionReassignments(
    topics: readonly { name: string; partitionIndexes: readonly number[] }[] | null,
  ): Promise<ApiResult & { topics: OngoingReassignment[] }> {
    return this.serialize(async () => {
      if (!this.isActive()) return { ...this.notController(), topics: [] };
      const image = this.sink.image();
      const wanted = topics ?? [...image.topicsByName.values()].map((t) => ({ name: t.name, partitionIndexes: [...t.partitions.keys()] }));
      const out: OngoingReassignment[] = [];
      for (const t of wanted) {
        const topic = image.topic(t.name);
        if (topic === undefined) continue;
        const partitions = t.partitionIndexes.flatMap((i) => {
          const p = topic.partitions.get(i);
          if (p === undefined || !isReassignmentInProgress(p)) return [];
          return [
            {
              partitionIndex: i,
              replicas: [...p.replicas],
              addingReplicas: [...p.addingReplicas],
              removingReplicas: [...p.removingReplicas],
            },
          ];
        });
        if (partitions.length > 0) out.push({ name: t.name, partitions });
      }
      return { ...OK, topics: out };
    });
  }

  // ---- producer ids -------------------------------------------------------------------

  /** AllocateProducerIds (Kafka's ProducerIdControlManager): the next block, for a broker of the current epoch. */
  allocateProducerIds(brokerId: number, brokerEpoch: bigint): Promise<AllocateProducerIdsResult> {
    return this.serialize(async () => {
      const refused = (r: ApiResult): AllocateProducerIdsResult => ({ ...r, producerIdStart: -1n, producerIdLen: 0 });
      if (!this.isActive()) return refused(this.notController());
      const stale = this.staleBrokerEpoch(this.sink.image(), brokerId, brokerEpoch);
      if (stale !== null) return refused(stale);
      const first = this.sink.image().nextProducerId;
      try {
        await this.sink.write([producerIdsRecord(brokerId, brokerEpoch, first)]);
      } catch {
        return refused(this.notController());
      }
      return { ...OK, producerIdStart: first, producerIdLen: PRODUCER_ID_BLOCK_SIZE };
    });
  }

  /** The in-process form for InitProducerId on this node; throws when this node is not the active controller. */
  allocateProducerIdBlock(brokerId: number, brokerEpoch = -1n): Promise<ProducerIdBlock> {
    return this.serialize(async () => {
      if (!this.isActive()) throw new Error('not the active controller');
      const first = this.sink.image().nextProducerId;
      await this.sink.write([producerIdsRecord(brokerId, brokerEpoch, first)]);
      return { firstProducerId: first, size: PRODUCER_ID_BLOCK_SIZE };
    });
  }
}

/** Kafka's Replicas.validateIsr: distinct, non-negative members of the replica set. */
function isValidIsr(replicas: readonly number[], isr: readonly number[]): boolean {
  return new Set(isr).size === isr.length && isr.every((r) => r >= 0 && replicas.includes(r));
}

function sameReplicas(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Kafka's processRegistrationFeature: the finalized level of each feature must be in the broker's range. */
function unsupportedFeature(
  image: MetadataImage,
  features: readonly { name: string; minSupportedVersion: number; maxSupportedVersion: number }[],
): string | null {
  for (const f of features) {
    const finalized = image.features.get(f.name) ?? (f.name === METADATA_VERSION_FEATURE ? 1 : 0);
    if (finalized < f.minSupportedVersion || finalized > f.maxSupportedVersion) {
      return `Unable to register because the broker does not support finalized version ${finalized} of ${f.name}. The broker wants a version between ${f.minSupportedVersion} and ${f.maxSupportedVersion}, inclusive.`;
    }
  }
  for (const [name, level] of image.features) {
    if (level !== 0 && !features.some((f) => f.name === name)) {
      return `Unable to register because the broker does not support finalized version ${level} of ${name}. The broker wants a version between 0 and 0, inclusive.`;
    }
  }
  return null;
}

/** A new cluster's finalized features: its metadata.version, and ELR on as Kafka 4.1 starts a cluster. */
function bootstrapFeatureRecords(): MetadataRecord[] {
  return [
    { type: 'FeatureLevelRecord', data: { name: METADATA_VERSION_FEATURE, featureLevel: METADATA_VERSION_LEVEL } },
    { type: 'FeatureLevelRecord', data: { name: ELIGIBLE_LEADER_REPLICAS_FEATURE, featureLevel: ELIGIBLE_LEADER_REPLICAS_LEVEL } },
  ];
}

/** Kafka's isElrEnabled: the feature is finalized at level 1 or more on a metadata.version with ELR records. */
export function isElrEnabled(image: MetadataImage): boolean {
  return (
    (image.features.get(ELIGIBLE_LEADER_REPLICAS_FEATURE) ?? 0) >= 1 &&
    (image.features.get(METADATA_VERSION_FEATURE) ?? 0) >= ELR_METADATA_VERSION_LEVEL
  );
}

/**
 * Kafka's createClearElrRecordsAsNeeded: the ELR of a partition is safe only for the min ISR
 * it was kept under, so a change of min.insync.replicas (set or deleted) clears it, for the
 * topic or, at a broker or the cluster, for every topic.
 */
function clearElrRecordsAsNeeded(image: MetadataImage, planned: readonly MetadataRecord[]): MetadataRecord[] {
  if (!isElrEnabled(image)) return [];
  return planned.flatMap((record): MetadataRecord[] => {
    if (record.type !== 'ConfigRecord' || record.data.name !== MIN_INSYNC_REPLICAS) return [];
    const topicName = record.data.resourceType === ConfigResourceType.TOPIC ? record.data.resourceName : '';
    return [{ type: 'ClearElrRecord', data: { topicName } }];
  });
}

/**
 * Kafka's isDisallowedBrokerMinIsrTransition and isDisallowedClusterMinIsrTransition, checked
 * while ELR is on: min.insync.replicas may change at the cluster or a topic, never at one
 * broker, and the cluster's may not be removed.
 */
function refuseElrMinIsrChanges(planned: readonly MetadataRecord[]): void {
  for (const r of planned) {
    if (r.type !== 'ConfigRecord' || r.data.name !== MIN_INSYNC_REPLICAS || r.data.resourceType !== ConfigResourceType.BROKER) continue;
    check(r.data.resourceName === '', Errors.INVALID_CONFIG, `Broker-level ${MIN_INSYNC_REPLICAS} cannot be altered while ELR is enabled.`);
    check(r.data.value !== null, Errors.INVALID_CONFIG, `Cluster-level ${MIN_INSYNC_REPLICAS} cannot be removed while ELR is enabled.`);
  }
}

/** Written at a version without cordoned log dirs (KIP-1066), which Sluice does not have. */
function registerBrokerRecord(fields: Omit<RegisterBrokerRecord, 'isMigratingZkBroker' | 'cordonedLogDirs'>): MetadataRecord {
  return { type: 'RegisterBrokerRecord', data: { ...fields, isMigratingZkBroker: false, cordonedLogDirs: null } };
}

/**
 * Whether a heartbeat's OfflineLogDirs cover every log dir the broker registered. Kafka moves
 * leadership off the partitions assigned to a failed dir (handleDirectoriesOffline, from
 * PartitionRecord.Directories), and halts a broker whose every dir failed, so that its session
 * expires and it is fenced. Sluice assigns no replicas to dirs (no AssignReplicasToDirs) and
 * keeps such a broker running: the controller fences it itself, which takes it out of every
 * ISR and moves its leaderships, and keeps it fenced while its heartbeats report the dirs
 * offline (until it restarts and registers again). A broker that registered no dirs is
 * assumed online, as Kafka's DirectoryId.isOnline does for an empty list.
 */
function everyLogDirOffline(registration: BrokerRegistration, offlineLogDirs: readonly string[]): boolean {
  return registration.logDirs.length > 0 && registration.logDirs.every((dir) => offlineLogDirs.includes(dir));
}

/** fenced: 1 fence, -1 unfence; inControlledShutdown: 1 enters it; 0 leaves either unchanged. */
function brokerRegistrationChange(
  brokerId: number,
  brokerEpoch: bigint,
  change: { fenced?: number; inControlledShutdown?: number },
): MetadataRecord {
  return {
    type: 'BrokerRegistrationChangeRecord',
    data: {
      brokerId,
      brokerEpoch,
      fenced: change.fenced ?? 0,
      inControlledShutdown: change.inControlledShutdown ?? 0,
      logDirs: [],
      cordonedLogDirs: null,
    },
  };
}

function producerIdsRecord(brokerId: number, brokerEpoch: bigint, first: bigint): MetadataRecord {
  return { type: 'ProducerIdsRecord', data: { brokerId, brokerEpoch, nextProducerId: first + BigInt(PRODUCER_ID_BLOCK_SIZE) } };
}

function configRecord(resourceType: number, resourceName: string, name: string, value: string | null): MetadataRecord {
  const data: ConfigRecord = { resourceType, resourceName, name, value };
  return { type: 'ConfigRecord', data };
}

function validate(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigException) throw new KafkaError(Errors.INVALID_CONFIG, err.message);
    throw err;
  }
}
