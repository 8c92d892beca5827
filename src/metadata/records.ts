// The metadata record vocabulary (Kafka's metadata-records schemas) as the image and the
// controller use it: a discriminated union of the record shapes the codec generates, keyed
// by Kafka's metadata record type ids (the "apiKey" of each record schema).

import type { RegisterBrokerRecord, RegisterBrokerRecordBrokerEndpoint } from '../../protocol/messages/metadata/register-broker-record.ts';
import type { UnregisterBrokerRecord } from '../../protocol/messages/metadata/unregister-broker-record.ts';
import type { TopicRecord } from '../../protocol/messages/metadata/topic-record.ts';
import type { PartitionRecord } from '../../protocol/messages/metadata/partition-record.ts';
import type { ConfigRecord } from '../../protocol/messages/metadata/config-record.ts';
import type { PartitionChangeRecord } from '../../protocol/messages/metadata/partition-change-record.ts';
import type { FenceBrokerRecord } from '../../protocol/messages/metadata/fence-broker-record.ts';
import type { UnfenceBrokerRecord } from '../../protocol/messages/metadata/unfence-broker-record.ts';
import type { RemoveTopicRecord } from '../../protocol/messages/metadata/remove-topic-record.ts';
import type { FeatureLevelRecord } from '../../protocol/messages/metadata/feature-level-record.ts';
import type { ProducerIdsRecord } from '../../protocol/messages/metadata/producer-ids-record.ts';
import type { BrokerRegistrationChangeRecord } from '../../protocol/messages/metadata/broker-registration-change-record.ts';
import type { UserScramCredentialRecord } from '../../protocol/messages/metadata/user-scram-credential-record.ts';
import type { RemoveUserScramCredentialRecord } from '../../protocol/messages/metadata/remove-user-scram-credential-record.ts';
import type { AccessControlEntryRecord } from '../../protocol/messages/metadata/access-control-entry-record.ts';
import type { RemoveAccessControlEntryRecord } from '../../protocol/messages/metadata/remove-access-control-entry-record.ts';
import type { ClientQuotaRecord } from '../../protocol/messages/metadata/client-quota-record.ts';
import type { ClearElrRecord } from '../../protocol/messages/metadata/clear-elr-record.ts';

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
  UserScramCredentialRecord: 11,
  FeatureLevelRecord: 12,
  ClientQuotaRecord: 14,
  ProducerIdsRecord: 15,
  BrokerRegistrationChangeRecord: 17,
  AccessControlEntryRecord: 18,
  RemoveAccessControlEntryRecord: 19,
  NoOpRecord: 20,
  RemoveUserScramCredentialRecord: 22,
  ClearElrRecord: 28,
} as const;

/** ConfigResource.Type codes, as ConfigRecord.resourceType and DescribeConfigs use them. */
export const ConfigResourceType = {
  UNKNOWN: 0,
  TOPIC: 2,
  BROKER: 4,
  BROKER_LOGGER: 8,
} as const;

export type {
  RegisterBrokerRecord,
  UnregisterBrokerRecord,
  TopicRecord,
  PartitionRecord,
  ConfigRecord,
  FenceBrokerRecord,
  UnfenceBrokerRecord,
  RemoveTopicRecord,
  FeatureLevelRecord,
  ProducerIdsRecord,
  UserScramCredentialRecord,
  RemoveUserScramCredentialRecord,
  AccessControlEntryRecord,
  RemoveAccessControlEntryRecord,
  ClientQuotaRecord,
  ClearElrRecord,
};
export type BrokerEndpoint = RegisterBrokerRecordBrokerEndpoint;
/** Null / -2 fields mean "unchanged" (Kafka's PartitionChangeRecord defaults). */
export type { PartitionChangeRecord };
/** fenced: 1 fence, -1 unfence, 0 no change; inControlledShutdown: 1 yes, 0 no change. */
export type { BrokerRegistrationChangeRecord };

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
  | { type: 'NoOpRecord'; data: NoOpRecord }
  | { type: 'UserScramCredentialRecord'; data: UserScramCredentialRecord }
  | { type: 'RemoveUserScramCredentialRecord'; data: RemoveUserScramCredentialRecord }
  | { type: 'AccessControlEntryRecord'; data: AccessControlEntryRecord }
  | { type: 'RemoveAccessControlEntryRecord'; data: RemoveAccessControlEntryRecord }
  | { type: 'ClientQuotaRecord'; data: ClientQuotaRecord }
  | { type: 'ClearElrRecord'; data: ClearElrRecord };

export type MetadataRecordName = MetadataRecord['type'];

export function partitionRecord(
  fields: Pick<PartitionRecord, 'partitionId' | 'topicId' | 'replicas' | 'isr' | 'leader'> & Partial<PartitionRecord>,
): PartitionRecord {
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

export function partitionChangeRecord(
  fields: Pick<PartitionChangeRecord, 'partitionId' | 'topicId'> & Partial<PartitionChangeRecord>,
): PartitionChangeRecord {
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
