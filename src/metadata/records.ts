// The metadata record vocabulary (Kafka's metadata-records schemas) as the image and the
// controller use it: a discriminated union of the record shapes the codec generates, keyed
// by Kafka's metadata record type ids (the "apiKey" of each record schema).

export const MetadataRecordType = {
  RegisterBrokerRecord: 0,
  UnregisterBrokerRecord: 1,
  TopicRecord: 2,
  PartitionRecord: 3,
  ConfigRecord: 4,
  PartitionChangeRecord: 5,
  FenceBrokerRecord: 7,
  UnfenceBrokerRecord: 8,
  RemoveTopicRecord: 9,
  FeatureLevelRecord: 12,
  ProducerIdsRecord: 15,
  BrokerRegistrationChangeRecord: 17,
  NoOpRecord: 20,
} as const;

/** ConfigResource.Type codes, as ConfigRecord.resourceType and DescribeConfigs use them. */
export const ConfigResourceType = {
  UNKNOWN: 0,
  TOPIC: 2,
  BROKER: 4,
  BROKER_LOGGER: 8,
} as const;

export interface BrokerEndpoint {
  name: string;
  host: string;
  port: number;
  securityProtocol: number;
}

export interface BrokerFeature {
  name: string;
  minSupportedVersion: number;
  maxSupportedVersion: number;
}

export interface RegisterBrokerRecord {
  brokerId: number;
  isMigratingZkBroker: boolean;
  incarnationId: string;
  brokerEpoch: bigint;
  endPoints: BrokerEndpoint[];
  features: BrokerFeature[];
  rack: string | null;
  fenced: boolean;
  inControlledShutdown: boolean;
  logDirs: string[];
}

export interface UnregisterBrokerRecord {
  brokerId: number;
  brokerEpoch: bigint;
}

export interface TopicRecord {
  name: string;
  topicId: string;
}

export interface PartitionRecord {
  partitionId: number;
  topicId: string;
  replicas: number[];
  isr: number[];
  removingReplicas: number[];
  addingReplicas: number[];
  leader: number;
  leaderRecoveryState: number;
  leaderEpoch: number;
  partitionEpoch: number;
  directories: string[];
  eligibleLeaderReplicas: number[] | null;
  lastKnownElr: number[] | null;
}

export interface ConfigRecord {
  resourceType: number;
  resourceName: string;
  name: string;
  value: string | null;
}

/** Null / -2 fields mean "unchanged" (Kafka's PartitionChangeRecord defaults). */
export interface PartitionChangeRecord {
  partitionId: number;
  topicId: string;
  isr: number[] | null;
  leader: number;
  replicas: number[] | null;
  removingReplicas: number[] | null;
  addingReplicas: number[] | null;
  leaderRecoveryState: number;
  directories: string[] | null;
  eligibleLeaderReplicas: number[] | null;
  lastKnownElr: number[] | null;
}

export interface FenceBrokerRecord {
  id: number;
  epoch: bigint;
}

export interface UnfenceBrokerRecord {
  id: number;
  epoch: bigint;
}

export interface RemoveTopicRecord {
  topicId: string;
}

export interface FeatureLevelRecord {
  name: string;
  featureLevel: number;
}

export interface ProducerIdsRecord {
  brokerId: number;
  brokerEpoch: bigint;
  nextProducerId: bigint;
}

/** fenced: 1 fence, -1 unfence, 0 no change; inControlledShutdown: 1 yes, 0 no change. */
export interface BrokerRegistrationChangeRecord {
  brokerId: number;
  brokerEpoch: bigint;
  fenced: number;
  inControlledShutdown: number;
  logDirs: string[];
}

export type NoOpRecord = Record<string, never>;

export type MetadataRecord =
  | { type: 'RegisterBrokerRecord'; data: RegisterBrokerRecord }
  | { type: 'UnregisterBrokerRecord'; data: UnregisterBrokerRecord }
  | { type: 'TopicRecord'; data: TopicRecord }
  | { type: 'PartitionRecord'; data: PartitionRecord }
  | { type: 'ConfigRecord'; data: ConfigRecord }
  | { type: 'PartitionChangeRecord'; data: PartitionChangeRecord }
  | { type: 'FenceBrokerRecord'; data: FenceBrokerRecord }
  | { type: 'UnfenceBrokerRecord'; data: UnfenceBrokerRecord }
  | { type: 'RemoveTopicRecord'; data: RemoveTopicRecord }
  | { type: 'FeatureLevelRecord'; data: FeatureLevelRecord }
  | { type: 'ProducerIdsRecord'; data: ProducerIdsRecord }
  | { type: 'BrokerRegistrationChangeRecord'; data: BrokerRegistrationChangeRecord }
  | { type: 'NoOpRecord'; data: NoOpRecord };

export type MetadataRecordName = MetadataRecord['type'];

export function partitionRecord(fields: Pick<PartitionRecord, 'partitionId' | 'topicId' | 'replicas' | 'isr' | 'leader'> & Partial<PartitionRecord>): PartitionRecord {
  return {
    removingReplicas: [],
    addingReplicas: [],
    leaderRecoveryState: 0,
    leaderEpoch: 0,
    partitionEpoch: 0,
    directories: [],
    eligibleLeaderReplicas: null,
    lastKnownElr: null,
    ...fields,
  };
}

export function partitionChangeRecord(fields: Pick<PartitionChangeRecord, 'partitionId' | 'topicId'> & Partial<PartitionChangeRecord>): PartitionChangeRecord {
  return {
    isr: null,
    leader: -2,
    replicas: null,
    removingReplicas: null,
    addingReplicas: null,
    leaderRecoveryState: -1,
    directories: null,
    eligibleLeaderReplicas: null,
    lastKnownElr: null,
    ...fields,
  };
}
