// The records the group coordinator keeps in `__consumer_offsets`, in domain form. Their
// byte form (Kafka's OffsetCommitKey/Value and GroupMetadataKey/Value) is in
// offsets-topic-codec.ts.

export interface OffsetAndMetadata {
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  commitTimestampMs: number;
  /** Set only by OffsetCommit v1 commits with an explicit expiry; -1 otherwise. */
  expireTimestampMs: number;
}

export interface GroupMemberSnapshot {
  memberId: string;
  groupInstanceId: string | null;
  clientId: string;
  clientHost: string;
  rebalanceTimeoutMs: number;
  sessionTimeoutMs: number;
  subscription: Buffer;
  assignment: Buffer;
}

export interface GroupSnapshot {
  protocolType: string;
  generationId: number;
  protocolName: string | null;
  leaderId: string | null;
  currentStateTimestampMs: number;
  members: GroupMemberSnapshot[];
}

/** A value of null is a tombstone: the offset or group is deleted. */
export type CoordinatorRecord =
  | { type: 'offset'; groupId: string; topic: string; partition: number; value: OffsetAndMetadata | null }
  | { type: 'group'; groupId: string; value: GroupSnapshot | null };
