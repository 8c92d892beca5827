// The quorum controller: turns admin requests into metadata records, validates them against
// the current image as Kafka's ReplicationControlManager / ConfigurationControlManager do,
// appends them through Raft and answers once they are committed and applied.
//
// Operations run one at a time: each validates against the image that includes every
// earlier operation, so two CreateTopics of one name cannot both pass.

import { randomBytes } from 'node:crypto';
import { Errors, KafkaError, type KafkaErrorCode } from '../../protocol/errors.ts';
import { uuidToString, ZERO_UUID } from '../../protocol/primitives.ts';
import { BROKER_CONFIG_DEF_BY_NAME } from '../config/broker-defs.ts';
import { TOPIC_CONFIG_DEF_BY_NAME } from '../config/topic-defs.ts';
import { validateTopicConfig } from '../config/topic-config.ts';
import { ConfigException, checkValue, parseList } from '../config/types.ts';
import type { MetadataImage } from './image.ts';
import type { BrokerEndpoint, ConfigRecord, MetadataRecord } from './records.ts';
import { ConfigResourceType, partitionChangeRecord, partitionRecord } from './records.ts';

/** Kafka's metadata.version feature and the level this broker writes (3.9-IV0). */
export const METADATA_VERSION_FEATURE = 'metadata.version';
export const METADATA_VERSION_LEVEL = 21;
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

/** Appends records through Raft and resolves once they are applied to the image. */
export interface RecordSink {
  isActive(): boolean;
  image(): MetadataImage;
  write(records: MetadataRecord[]): Promise<void>;
}

export interface ControllerConfig {
  /** num.partitions */
  defaultNumPartitions: () => number;
  /** default.replication.factor */
  defaultReplicationFactor: () => number;
}

export interface CreatableTopic {
  name: string;
  numPartitions: number;
  replicationFactor: number;
  /** Manual assignment: partition index -> broker ids. */
  assignments: { partitionIndex: number; brokerIds: number[] }[];
  configs: { name: string; value: string | null }[];
}

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

export interface BrokerRegistrationRequest {
  brokerId: number;
  incarnationId: string;
  listeners: BrokerEndpoint[];
  rack: string | null;
}

export interface ProducerIdBlock {
  firstProducerId: bigint;
  size: number;
}

export function randomUuid(): string {
  for (;;) {
    const id = uuidToString(randomBytes(16));
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
  return { errorCode: err.code, errorMessage: err.message };
}

function check(condition: boolean, error: KafkaErrorCode, message: string): asserts condition {
  if (!condition) throw new KafkaError(error, message);
}

export class QuorumController {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly sink: RecordSink,
    private readonly config: ControllerConfig,
    private readonly random: () => number = Math.random,
  ) {}

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

  createTopics(topics: CreatableTopic[], validateOnly: boolean): Promise<CreateTopicResult[]> {
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
        if (!this.sink.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        if ((seen.get(topic.name) ?? 0) > 1) {
          Object.assign(result, fail(Errors.INVALID_REQUEST, 'Duplicate topic name.'));
          continue;
        }
        try {
          const planned = this.planTopic(image, topic, collisions, MAX_RECORDS_PER_USER_OP - plannedRecords);
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
    const live = image.liveBrokers().map((b) => b.id);
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
      for (const replicas of assignments) this.checkAssignment(image, replicas, replicationFactor);
    } else {
      const numPartitions = topic.numPartitions === -1 ? this.config.defaultNumPartitions() : topic.numPartitions;
      const replicationFactor = topic.replicationFactor === -1 ? this.config.defaultReplicationFactor() : topic.replicationFactor;
      check(numPartitions > 0, Errors.INVALID_PARTITIONS, 'Number of partitions was set to an invalid non-positive value.');
      check(
        replicationFactor > 0,
        Errors.INVALID_REPLICATION_FACTOR,
        'Replication factor must be larger than 0, or -1 to use the default value.',
      );
      check(
        replicationFactor <= live.length,
        Errors.INVALID_REPLICATION_FACTOR,
        `Unable to replicate the partition ${replicationFactor} time(s): The target replication factor of ${replicationFactor} cannot be reached because only ${live.length} broker(s) are registered.`,
      );
      // The TopicRecord and the partitions must fit before anything is allocated.
      if (numPartitions + 1 > recordBudget) throw new RecordLimitError();
      assignments = this.placeReplicas(live, numPartitions, replicationFactor, 0);
    }
    const configRecords = this.topicConfigRecords(topic.name, topic.configs);
    const topicId = randomUuid();
    const records: MetadataRecord[] = [{ type: 'TopicRecord', data: { name: topic.name, topicId } }];
    for (const [partitionId, replicas] of assignments.entries()) records.push(this.newPartition(image, topicId, partitionId, replicas));
    records.push(...configRecords);
    if (records.length > recordBudget) throw new RecordLimitError();
    return { topicId, numPartitions: assignments.length, replicationFactor: assignments[0]?.length ?? 0, records };
  }

  private checkAssignment(image: MetadataImage, replicas: number[], expectedLength: number): void {
    check(replicas.length > 0, Errors.INVALID_REPLICA_ASSIGNMENT, 'The manual partition assignment includes an empty replica list.');
    check(
      new Set(replicas).size === replicas.length,
      Errors.INVALID_REPLICA_ASSIGNMENT,
      `The manual partition assignment includes duplicate replicas: ${replicas.join(', ')}`,
    );
    check(
      replicas.length === expectedLength,
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
  }

  /** Striped placement (Kafka's StripedReplicaPlacer without racks): leaders rotate over brokers. */
  private placeReplicas(brokers: number[], count: number, replicationFactor: number, firstPartition: number): number[][] {
    const start = Math.floor(this.random() * brokers.length);
    const out: number[][] = [];
    for (let p = 0; p < count; p++) {
      const first = (start + firstPartition + p) % brokers.length;
      // The brokers from `first` on, wrapping around: replicationFactor <= brokers.length.
      out.push([...brokers.slice(first), ...brokers.slice(0, first)].slice(0, replicationFactor));
    }
    return out;
  }

  private newPartition(image: MetadataImage, topicId: string, partitionId: number, replicas: number[]): MetadataRecord {
    const isr = replicas.filter((id) => image.brokers.get(id)?.fenced === false);
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

  deleteTopics(topics: { name: string | null; topicId: string }[]): Promise<DeleteTopicResult[]> {
    return this.serialize(async () => {
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: DeleteTopicResult[] = [];
      const removing = new Set<string>();
      for (const request of topics) {
        const result: DeleteTopicResult = { ...OK, name: request.name, topicId: request.topicId };
        results.push(result);
        if (!this.sink.isActive()) {
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
        removing.add(topic.id);
        records.push({ type: 'RemoveTopicRecord', data: { topicId: topic.id } });
      }
      if (records.length > 0) await this.write(records, results);
      return results;
    });
  }

  createPartitions(topics: CreatePartitionsTopic[], validateOnly: boolean): Promise<(ApiResult & { name: string })[]> {
    return this.serialize(async () => {
      const image = this.sink.image();
      const records: MetadataRecord[] = [];
      const results: (ApiResult & { name: string })[] = [];
      let plannedRecords = 0;
      for (const request of topics) {
        const result = { ...OK, name: request.name };
        results.push(result);
        if (!this.sink.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        try {
          const planned = this.planPartitions(image, request, MAX_RECORDS_PER_USER_OP - plannedRecords);
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
      for (const replicas of assignments) this.checkAssignment(image, replicas, replicationFactor);
    } else {
      const live = image.liveBrokers().map((b) => b.id);
      check(
        replicationFactor <= live.length,
        Errors.INVALID_REPLICATION_FACTOR,
        `Unable to replicate the partition ${replicationFactor} time(s): The target replication factor of ${replicationFactor} cannot be reached because only ${live.length} broker(s) are registered.`,
      );
      assignments = this.placeReplicas(live, added, replicationFactor, current);
    }
    return assignments.map((replicas, i) => this.newPartition(image, topic.id, current + i, replicas));
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
        records.push(this.configChange(resource, op.name, value));
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
        if (!this.sink.isActive()) {
          Object.assign(result, this.notController());
          continue;
        }
        try {
          this.checkResource(image, resource);
          const planned = plan(image, resource);
          if (!validateOnly) records.push(...planned);
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

  // ---- brokers and producer ids ------------------------------------------------------

  /**
   * Registers a broker (RegisterBrokerRecord, fenced as KRaft starts brokers). Kafka uses the
   * registration record's offset as broker epoch; the offset after the last applied record
   * is at or below it and grows with every registration, which is what an epoch needs.
   */
  registerBroker(request: BrokerRegistrationRequest): Promise<bigint> {
    return this.serialize(async () => {
      if (!this.sink.isActive()) throw new Error('not the active controller');
      const image = this.sink.image();
      const brokerEpoch = BigInt(image.offset + 1);
      await this.sink.write([
        {
          type: 'RegisterBrokerRecord',
          data: {
            brokerId: request.brokerId,
            isMigratingZkBroker: false,
            incarnationId: request.incarnationId,
            brokerEpoch,
            endPoints: request.listeners,
            features: [{ name: METADATA_VERSION_FEATURE, minSupportedVersion: 1, maxSupportedVersion: METADATA_VERSION_LEVEL }],
            rack: request.rack,
            fenced: true,
            inControlledShutdown: false,
            logDirs: [],
          },
        },
      ]);
      return brokerEpoch;
    });
  }

  /** The broker caught up with the metadata log: let it lead partitions again. */
  unfenceBroker(brokerId: number, brokerEpoch: bigint): Promise<void> {
    return this.serialize(async () => {
      if (!this.sink.isActive()) throw new Error('not the active controller');
      const records: MetadataRecord[] = [
        { type: 'BrokerRegistrationChangeRecord', data: { brokerId, brokerEpoch, fenced: -1, inControlledShutdown: 0, logDirs: [] } },
      ];
      // Partitions whose replicas include the broker and have no leader get it back.
      for (const topic of this.sink.image().topicsById.values()) {
        for (const p of topic.partitions.values()) {
          if (p.leader === -1 && p.replicas.includes(brokerId)) {
            records.push({
              type: 'PartitionChangeRecord',
              data: partitionChangeRecord({ partitionId: p.partitionId, topicId: topic.id, isr: [brokerId], leader: brokerId }),
            });
          }
        }
      }
      await this.sink.write(records);
    });
  }

  /** Writes the metadata.version feature when the log starts empty (Kafka's bootstrap records). */
  bootstrapIfEmpty(): Promise<void> {
    return this.serialize(async () => {
      if (!this.sink.isActive() || this.sink.image().features.has(METADATA_VERSION_FEATURE)) return;
      await this.sink.write([
        { type: 'FeatureLevelRecord', data: { name: METADATA_VERSION_FEATURE, featureLevel: METADATA_VERSION_LEVEL } },
      ]);
    });
  }

  /** Hands out the next block of producer ids (ProducerIdsRecord), for InitProducerId. */
  allocateProducerIdBlock(brokerId: number, brokerEpoch = -1n): Promise<ProducerIdBlock> {
    return this.serialize(async () => {
      if (!this.sink.isActive()) throw new Error('not the active controller');
      const first = this.sink.image().nextProducerId;
      await this.sink.write([
        { type: 'ProducerIdsRecord', data: { brokerId, brokerEpoch, nextProducerId: first + BigInt(PRODUCER_ID_BLOCK_SIZE) } },
      ]);
      return { firstProducerId: first, size: PRODUCER_ID_BLOCK_SIZE };
    });
  }
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
