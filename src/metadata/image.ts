// MetadataImage: the cluster state every broker reads, rebuilt from committed metadata
// records. An image never changes; applying records yields a new image plus a delta that
// says what moved (the ReplicaManager creates, deletes and re-leads partitions from it).

import type { ClientQuotaRecordEntityData } from '../../protocol/messages/metadata/client-quota-record.ts';
import type { ClientQuotaEntity, ClientQuotaLookup } from '../quota/entity.ts';
import type { AclBinding } from '../security/acl-types.ts';
import type { BrokerEndpoint, ClientQuotaRecord, MetadataRecord, PartitionRecord } from './records.ts';
import { ConfigResourceType } from './records.ts';

export interface BrokerRegistration {
  readonly id: number;
  readonly epoch: bigint;
  readonly incarnationId: string;
  readonly endpoints: readonly BrokerEndpoint[];
  readonly rack: string | null;
  readonly fenced: boolean;
  readonly inControlledShutdown: boolean;
  /** The directory.id of each log dir it registered (KIP-858); empty when it sent none. */
  readonly logDirs: readonly string[];
}

export interface PartitionImage {
  readonly partitionId: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
  readonly removingReplicas: readonly number[];
  readonly addingReplicas: readonly number[];
  /** -1 when no replica can lead. */
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly leaderRecoveryState: number;
  /** Eligible leader replicas (KIP-966): former ISR members that hold every committed record. */
  readonly elr: readonly number[];
  /** The partition's last leader once its ISR and ELR emptied (KIP-966). */
  readonly lastKnownElr: readonly number[];
}

export interface TopicImage {
  readonly name: string;
  readonly id: string;
  readonly partitions: ReadonlyMap<number, PartitionImage>;
}

export interface PartitionChange {
  readonly topicName: string;
  readonly topicId: string;
  readonly partition: PartitionImage;
  /** Null for a partition that did not exist before this delta. */
  readonly previous: PartitionImage | null;
}

/** What one batch of committed records changed. */
export interface MetadataDelta {
  readonly topicsCreated: readonly TopicImage[];
  readonly topicsDeleted: readonly TopicImage[];
  /** Created or changed partitions (leader, epochs, replicas, ISR), created topics included. */
  readonly partitionsChanged: readonly PartitionChange[];
  /** Topic names whose dynamic configs changed. */
  readonly topicConfigsChanged: readonly string[];
  /** Broker resource names ("" = cluster default) whose dynamic configs changed. */
  readonly brokerConfigsChanged: readonly string[];
  readonly brokersChanged: readonly number[];
  readonly featuresChanged: boolean;
  readonly producerIdsChanged: boolean;
  /** ACLs created (by id), in record order. */
  readonly aclsAdded: readonly { id: string; binding: AclBinding }[];
  /** Ids of ACLs removed. */
  readonly aclsRemoved: readonly string[];
  readonly clientQuotasChanged: boolean;
}

export type ConfigMap = ReadonlyMap<string, string>;

/** A user's salted SCRAM credential for one mechanism (UserScramCredentialRecord, without the password). */
export interface ScramCredentialImage {
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
  readonly iterations: number;
}

/** SCRAM credentials by `mechanism type:user name`. */
export type ScramCredentials = ReadonlyMap<string, ScramCredentialImage>;

function scramKey(mechanism: number, user: string): string {
  return `${mechanism}:${user}`;
}

/** The quotas set for exactly one client quota entity (ClientQuotaRecords), by quota key. */
export interface ClientQuotaImage {
  readonly entity: ClientQuotaEntity;
  readonly quotas: ReadonlyMap<string, number>;
}

/** Client quotas by `clientQuotaEntityKey` of their entity. */
export type ClientQuotas = ReadonlyMap<string, ClientQuotaImage>;

const ENTITY_TYPE_ORDER = ['user', 'client-id', 'ip'];

/** One key per entity, whatever the order of its types; a default (null) differs from any name. */
export function clientQuotaEntityKey(entity: ClientQuotaEntity): string {
  return JSON.stringify(
    Object.entries(entity)
      .filter(([, name]) => name !== undefined)
      .sort(byEntityType),
  );
}

function byEntityType([a]: [string, unknown], [b]: [string, unknown]): number {
  return ENTITY_TYPE_ORDER.indexOf(a) - ENTITY_TYPE_ORDER.indexOf(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** A ClientQuotaRecord's entity, its types in one fixed order (user, client-id, ip) so images compare equal. */
export function clientQuotaEntityOf(data: readonly ClientQuotaRecordEntityData[]): ClientQuotaEntity {
  return Object.fromEntries(data.map((d): [string, string | null] => [d.entityType, d.entityName]).sort(byEntityType));
}

function configKey(resourceType: number, resourceName: string): string {
  return `${resourceType}:${resourceName}`;
}

export class MetadataImage {
  static readonly EMPTY = new MetadataImage(
    new Map(),
    new Map(),
    new Map(),
    new Map(),
    new Map(),
    0n,
    -1,
    -1,
    new Map(),
    new Map(),
    new Map(),
  );

  constructor(
    readonly brokers: ReadonlyMap<number, BrokerRegistration>,
    readonly topicsByName: ReadonlyMap<string, TopicImage>,
    readonly topicsById: ReadonlyMap<string, TopicImage>,
    private readonly configs: ReadonlyMap<string, ConfigMap>,
    readonly features: ReadonlyMap<string, number>,
    /** First producer id of the next block the controller hands out. */
    readonly nextProducerId: bigint,
    /** Offset of the last record applied (-1: none). */
    readonly offset: number,
    /** Raft epoch of that record. */
    readonly epoch: number,
    readonly scramCredentials: ScramCredentials,
    /** ACL bindings by the id of their AccessControlEntryRecord. */
    readonly acls: ReadonlyMap<string, AclBinding>,
    readonly clientQuotaEntities: ClientQuotas,
  ) {}

  /** The quotas of exactly this entity (defaults are entities of their own, not fallbacks); a property, so it can be handed on as a lookup. */
  readonly clientQuotas: ClientQuotaLookup = (entity) => this.clientQuotaEntities.get(clientQuotaEntityKey(entity))?.quotas;

  /** Every entity with a quota, with its quotas. */
  allClientQuotas(): ClientQuotaImage[] {
    return [...this.clientQuotaEntities.values()];
  }

  /** The user's credential for a SCRAM mechanism type (1 SHA-256, 2 SHA-512), if any. */
  scramCredential(mechanism: number, user: string): ScramCredentialImage | undefined {
    return this.scramCredentials.get(scramKey(mechanism, user));
  }

  /** Every SCRAM credential: user, mechanism type and credential. */
  allScramCredentials(): { user: string; mechanism: number; credential: ScramCredentialImage }[] {
    return [...this.scramCredentials].map(([key, credential]) => {
      const colon = key.indexOf(':');
      return { mechanism: Number(key.slice(0, colon)), user: key.slice(colon + 1), credential };
    });
  }

  topic(name: string): TopicImage | undefined {
    return this.topicsByName.get(name);
  }

  topicById(id: string): TopicImage | undefined {
    return this.topicsById.get(id);
  }

  partition(topic: string, partitionId: number): PartitionImage | undefined {
    return this.topicsByName.get(topic)?.partitions.get(partitionId);
  }

  /** Dynamic configs of one resource (ConfigRecords only, no defaults). */
  resourceConfigs(resourceType: number, resourceName: string): ConfigMap {
    return this.configs.get(configKey(resourceType, resourceName)) ?? new Map();
  }

  topicConfigs(topic: string): ConfigMap {
    return this.resourceConfigs(ConfigResourceType.TOPIC, topic);
  }

  /** The dynamic configs by resource key, for the next image's builder (shared, never copied per delta). */
  configsByResource(): ReadonlyMap<string, ConfigMap> {
    return this.configs;
  }

  /** Every resource that has dynamic configs, for snapshots. */
  allConfigs(): { resourceType: number; resourceName: string; configs: ConfigMap }[] {
    return [...this.configs.entries()].map(([key, configs]) => {
      const colon = key.indexOf(':');
      return { resourceType: Number(key.slice(0, colon)), resourceName: key.slice(colon + 1), configs };
    });
  }

  /** Unfenced brokers, by id. */
  liveBrokers(): BrokerRegistration[] {
    return [...this.brokers.values()].filter((b) => !b.fenced).sort((a, b) => a.id - b.id);
  }

  /** Applies committed records; `offset`/`epoch` are those of the last one. */
  apply(records: readonly MetadataRecord[], offset: number, epoch: number): { image: MetadataImage; delta: MetadataDelta } {
    const builder = new DeltaBuilder(this);
    for (const record of records) builder.replay(record);
    return builder.build(offset, epoch);
  }
}

class DeltaBuilder {
  private brokers: Map<number, BrokerRegistration> | null = null;
  private topicsByName: Map<string, TopicImage> | null = null;
  private topicsById: Map<string, TopicImage> | null = null;
  private configs: Map<string, ConfigMap> | null = null;
  private features: Map<string, number> | null = null;
  private scram: Map<string, ScramCredentialImage> | null = null;
  private acls: Map<string, AclBinding> | null = null;
  private clientQuotas: Map<string, ClientQuotaImage> | null = null;
  private readonly aclsAdded = new Map<string, AclBinding>();
  private readonly aclsRemoved = new Set<string>();
  private nextProducerId: bigint;
  private readonly created = new Map<string, TopicImage>();
  private readonly deleted = new Map<string, TopicImage>();
  private readonly changedPartitions = new Map<string, PartitionChange>();
  /**
   * Partition maps this builder owns (copied once per topic per delta, or new): records
   * mutate them in place, so a delta costs what it changes, not partitions^2 copies.
   */
  private readonly ownedPartitions = new Map<string, Map<number, PartitionImage>>();
  private readonly topicConfigsChanged = new Set<string>();
  private readonly brokerConfigsChanged = new Set<string>();
  private readonly brokersChanged = new Set<number>();
  private featuresChanged = false;
  private producerIdsChanged = false;
  private clientQuotasChanged = false;

  constructor(private readonly base: MetadataImage) {
    this.nextProducerId = base.nextProducerId;
  }

  private mutableBrokers(): Map<number, BrokerRegistration> {
    this.brokers ??= new Map(this.base.brokers);
    return this.brokers;
  }
  private mutableTopics(): [Map<string, TopicImage>, Map<string, TopicImage>] {
    this.topicsByName ??= new Map(this.base.topicsByName);
    this.topicsById ??= new Map(this.base.topicsById);
    return [this.topicsByName, this.topicsById];
  }
  private mutableConfigs(): Map<string, ConfigMap> {
    this.configs ??= new Map(this.base.configsByResource());
    return this.configs;
  }
  private currentTopicById(id: string): TopicImage | undefined {
    return (this.topicsById ?? this.base.topicsById).get(id);
  }

  private setTopic(topic: TopicImage): void {
    const [byName, byId] = this.mutableTopics();
    byName.set(topic.name, topic);
    byId.set(topic.id, topic);
  }

  private updateBroker(id: number, change: Partial<BrokerRegistration>): void {
    const current = (this.brokers ?? this.base.brokers).get(id);
    if (current === undefined) return;
    this.mutableBrokers().set(id, { ...current, ...change });
    this.brokersChanged.add(id);
  }

  private setPartition(topic: TopicImage, partition: PartitionImage): void {
    const previous = topic.partitions.get(partition.partitionId) ?? null;
    let partitions = this.ownedPartitions.get(topic.id);
    if (partitions === undefined) {
      partitions = new Map(topic.partitions);
      this.ownedPartitions.set(topic.id, partitions);
      this.setTopic({ ...topic, partitions });
    }
    partitions.set(partition.partitionId, partition);
    const key = `${topic.id}:${partition.partitionId}`;
    const earlier = this.changedPartitions.get(key);
    this.changedPartitions.set(key, {
      topicName: topic.name,
      topicId: topic.id,
      partition,
      previous: earlier !== undefined ? earlier.previous : previous,
    });
  }

  replay(record: MetadataRecord): void {
    switch (record.type) {
      case 'RegisterBrokerRecord': {
        const r = record.data;
        this.mutableBrokers().set(r.brokerId, {
          id: r.brokerId,
          epoch: r.brokerEpoch,
          incarnationId: r.incarnationId,
          endpoints: r.endPoints,
          rack: r.rack,
          fenced: r.fenced,
          inControlledShutdown: r.inControlledShutdown,
          logDirs: r.logDirs,
        });
        this.brokersChanged.add(r.brokerId);
        break;
      }
      case 'UnregisterBrokerRecord':
        this.mutableBrokers().delete(record.data.brokerId);
        this.brokersChanged.add(record.data.brokerId);
        break;
      case 'FenceBrokerRecord':
        this.updateBroker(record.data.id, { fenced: true });
        break;
      case 'UnfenceBrokerRecord':
        this.updateBroker(record.data.id, { fenced: false });
        break;
      case 'BrokerRegistrationChangeRecord': {
        const r = record.data;
        const change: { fenced?: boolean; inControlledShutdown?: boolean } = {};
        if (r.fenced === 1) change.fenced = true;
        if (r.fenced === -1) change.fenced = false;
        if (r.inControlledShutdown === 1) change.inControlledShutdown = true;
        this.updateBroker(r.brokerId, change);
        break;
      }
      case 'TopicRecord': {
        const partitions = new Map<number, PartitionImage>();
        const topic: TopicImage = { name: record.data.name, id: record.data.topicId, partitions };
        this.ownedPartitions.set(topic.id, partitions);
        this.setTopic(topic);
        this.created.set(topic.id, topic);
        break;
      }
      case 'PartitionRecord': {
        const topic = this.currentTopicById(record.data.topicId);
        if (topic === undefined) throw new Error(`PartitionRecord for unknown topic id ${record.data.topicId}`);
        this.setPartition(topic, partitionFromRecord(record.data));
        break;
      }
      case 'PartitionChangeRecord': {
        const r = record.data;
        const topic = this.currentTopicById(r.topicId);
        const current = topic?.partitions.get(r.partitionId);
        if (topic === undefined || current === undefined) {
          throw new Error(`PartitionChangeRecord for unknown partition ${r.topicId}-${r.partitionId}`);
        }
        // As Kafka's PartitionRegistration.merge: a leader change bumps the leader epoch,
        // every change bumps the partition epoch.
        const leaderChanged = r.leader !== -2;
        this.setPartition(topic, {
          partitionId: current.partitionId,
          replicas: r.replicas ?? current.replicas,
          isr: r.isr ?? current.isr,
          removingReplicas: r.removingReplicas ?? current.removingReplicas,
          addingReplicas: r.addingReplicas ?? current.addingReplicas,
          leader: leaderChanged ? r.leader : current.leader,
          leaderEpoch: leaderChanged ? current.leaderEpoch + 1 : current.leaderEpoch,
          partitionEpoch: current.partitionEpoch + 1,
          leaderRecoveryState: r.leaderRecoveryState === -1 ? current.leaderRecoveryState : r.leaderRecoveryState,
          elr: r.eligibleLeaderReplicas ?? current.elr,
          lastKnownElr: r.lastKnownElr ?? current.lastKnownElr,
        });
        break;
      }
      case 'ClearElrRecord': {
        // Kafka's removeTopicElrs: an empty name clears every topic's. Only partitions that
        // had an ELR change, each as a PartitionChangeRecord would (a new partition epoch).
        const name = record.data.topicName;
        const topics =
          name === '' ? [...(this.topicsById ?? this.base.topicsById).values()] : [(this.topicsByName ?? this.base.topicsByName).get(name)];
        for (const listed of topics) {
          if (listed === undefined) throw new Error(`ClearElrRecord for unknown topic ${name}`);
          for (const current of [...listed.partitions.values()]) {
            if (current.elr.length === 0 && current.lastKnownElr.length === 0) continue;
            const topic = this.currentTopicById(listed.id) ?? listed;
            this.setPartition(topic, { ...current, elr: [], lastKnownElr: [], partitionEpoch: current.partitionEpoch + 1 });
          }
        }
        break;
      }
      case 'RemoveTopicRecord': {
        const topic = this.currentTopicById(record.data.topicId);
        if (topic === undefined) throw new Error(`RemoveTopicRecord for unknown topic id ${record.data.topicId}`);
        const [byName, byId] = this.mutableTopics();
        byName.delete(topic.name);
        byId.delete(topic.id);
        if (this.created.has(topic.id)) this.created.delete(topic.id);
        else this.deleted.set(topic.id, this.base.topicById(topic.id) ?? topic);
        for (const partitionId of topic.partitions.keys()) this.changedPartitions.delete(`${topic.id}:${partitionId}`);
        this.ownedPartitions.delete(topic.id);
        const configs = this.mutableConfigs();
        if (configs.delete(configKey(ConfigResourceType.TOPIC, topic.name))) this.topicConfigsChanged.add(topic.name);
        break;
      }
      case 'ConfigRecord': {
        const r = record.data;
        const configs = this.mutableConfigs();
        const key = configKey(r.resourceType, r.resourceName);
        const next = new Map(configs.get(key) ?? []);
        if (r.value === null) next.delete(r.name);
        else next.set(r.name, r.value);
        if (next.size === 0) configs.delete(key);
        else configs.set(key, next);
        if (r.resourceType === ConfigResourceType.TOPIC) this.topicConfigsChanged.add(r.resourceName);
        else if (r.resourceType === ConfigResourceType.BROKER) this.brokerConfigsChanged.add(r.resourceName);
        break;
      }
      case 'FeatureLevelRecord': {
        this.features ??= new Map(this.base.features);
        if (record.data.featureLevel === 0) this.features.delete(record.data.name);
        else this.features.set(record.data.name, record.data.featureLevel);
        this.featuresChanged = true;
        break;
      }
      case 'ProducerIdsRecord':
        if (record.data.nextProducerId <= this.nextProducerId) {
          throw new Error(`producer id block going back: ${record.data.nextProducerId} after ${this.nextProducerId}`);
        }
        this.nextProducerId = record.data.nextProducerId;
        this.producerIdsChanged = true;
        break;
      case 'UserScramCredentialRecord': {
        const r = record.data;
        this.scram ??= new Map(this.base.scramCredentials);
        this.scram.set(scramKey(r.mechanism, r.name), {
          salt: r.salt,
          storedKey: r.storedKey,
          serverKey: r.serverKey,
          iterations: r.iterations,
        });
        break;
      }
      case 'RemoveUserScramCredentialRecord':
        this.scram ??= new Map(this.base.scramCredentials);
        this.scram.delete(scramKey(record.data.mechanism, record.data.name));
        break;
      case 'AccessControlEntryRecord': {
        const { id, ...binding } = record.data;
        this.acls ??= new Map(this.base.acls);
        this.acls.set(id, binding);
        this.aclsAdded.set(id, binding);
        break;
      }
      case 'RemoveAccessControlEntryRecord': {
        const { id } = record.data;
        this.acls ??= new Map(this.base.acls);
        this.acls.delete(id);
        if (!this.aclsAdded.delete(id)) this.aclsRemoved.add(id);
        break;
      }
      case 'ClientQuotaRecord':
        this.replayClientQuota(record.data);
        break;
      case 'NoOpRecord':
        break;
    }
  }

  /** As Kafka's ClientQuotaDelta: `remove` deletes the key, and an entity left without keys is gone. */
  private replayClientQuota(r: ClientQuotaRecord): void {
    this.clientQuotas ??= new Map(this.base.clientQuotaEntities);
    const entity = clientQuotaEntityOf(r.entity);
    const key = clientQuotaEntityKey(entity);
    const quotas = new Map(this.clientQuotas.get(key)?.quotas);
    if (r.remove) quotas.delete(r.key);
    else quotas.set(r.key, r.value);
    if (quotas.size === 0) this.clientQuotas.delete(key);
    else this.clientQuotas.set(key, { entity, quotas });
    this.clientQuotasChanged = true;
  }

  build(offset: number, epoch: number): { image: MetadataImage; delta: MetadataDelta } {
    const base = this.base;
    const image = new MetadataImage(
      this.brokers ?? base.brokers,
      this.topicsByName ?? base.topicsByName,
      this.topicsById ?? base.topicsById,
      this.configs ?? base.configsByResource(),
      this.features ?? base.features,
      this.nextProducerId,
      offset,
      epoch,
      this.scram ?? base.scramCredentials,
      this.acls ?? base.acls,
      this.clientQuotas ?? base.clientQuotaEntities,
    );
    const createdTopics = [...this.created.values()].map((t) => image.topicById(t.id) ?? t);
    return {
      image,
      delta: {
        topicsCreated: createdTopics,
        topicsDeleted: [...this.deleted.values()],
        partitionsChanged: [...this.changedPartitions.values()],
        topicConfigsChanged: [...this.topicConfigsChanged],
        brokerConfigsChanged: [...this.brokerConfigsChanged],
        brokersChanged: [...this.brokersChanged],
        featuresChanged: this.featuresChanged,
        producerIdsChanged: this.producerIdsChanged,
        aclsAdded: [...this.aclsAdded].map(([id, binding]) => ({ id, binding })),
        aclsRemoved: [...this.aclsRemoved],
        clientQuotasChanged: this.clientQuotasChanged,
      },
    };
  }
}

function partitionFromRecord(r: PartitionRecord): PartitionImage {
  return {
    partitionId: r.partitionId,
    replicas: r.replicas,
    isr: r.isr,
    removingReplicas: r.removingReplicas,
    addingReplicas: r.addingReplicas,
    leader: r.leader,
    leaderEpoch: r.leaderEpoch,
    partitionEpoch: r.partitionEpoch,
    leaderRecoveryState: r.leaderRecoveryState,
    elr: r.eligibleLeaderReplicas ?? [],
    lastKnownElr: r.lastKnownElr ?? [],
  };
}

/** The records that rebuild `image` from nothing: the content of a metadata snapshot. */
export function imageToRecords(image: MetadataImage): MetadataRecord[] {
  const out: MetadataRecord[] = [];
  for (const [name, featureLevel] of image.features) out.push({ type: 'FeatureLevelRecord', data: { name, featureLevel } });
  for (const b of image.brokers.values()) {
    out.push({
      type: 'RegisterBrokerRecord',
      data: {
        brokerId: b.id,
        isMigratingZkBroker: false,
        incarnationId: b.incarnationId,
        brokerEpoch: b.epoch,
        endPoints: [...b.endpoints],
        features: [],
        rack: b.rack,
        fenced: b.fenced,
        inControlledShutdown: b.inControlledShutdown,
        logDirs: [...b.logDirs],
        cordonedLogDirs: null,
      },
    });
  }
  for (const topic of image.topicsById.values()) {
    out.push({ type: 'TopicRecord', data: { name: topic.name, topicId: topic.id } });
    for (const p of topic.partitions.values()) {
      out.push({
        type: 'PartitionRecord',
        data: {
          partitionId: p.partitionId,
          topicId: topic.id,
          replicas: [...p.replicas],
          isr: [...p.isr],
          removingReplicas: [...p.removingReplicas],
          addingReplicas: [...p.addingReplicas],
          leader: p.leader,
          leaderRecoveryState: p.leaderRecoveryState,
          leaderEpoch: p.leaderEpoch,
          partitionEpoch: p.partitionEpoch,
          directories: [],
          eligibleLeaderReplicas: p.elr.length > 0 ? [...p.elr] : null,
          lastKnownElr: p.lastKnownElr.length > 0 ? [...p.lastKnownElr] : null,
        },
      });
    }
  }
  for (const c of image.allConfigs()) {
    for (const [name, value] of c.configs) {
      out.push({ type: 'ConfigRecord', data: { resourceType: c.resourceType, resourceName: c.resourceName, name, value } });
    }
  }
  for (const [id, binding] of image.acls) out.push({ type: 'AccessControlEntryRecord', data: { id, ...binding } });
  for (const { user, mechanism, credential } of image.allScramCredentials()) {
    out.push({ type: 'UserScramCredentialRecord', data: { name: user, mechanism, ...credential } });
  }
  for (const { entity, quotas } of image.allClientQuotas()) {
    for (const [key, value] of quotas) {
      const entityData = Object.entries(entity).map(([entityType, entityName]) => ({ entityType, entityName: entityName ?? null }));
      out.push({ type: 'ClientQuotaRecord', data: { entity: entityData, key, value, remove: false } });
    }
  }
  if (image.nextProducerId > 0n) {
    out.push({ type: 'ProducerIdsRecord', data: { brokerId: -1, brokerEpoch: -1n, nextProducerId: image.nextProducerId } });
  }
  return out;
}
