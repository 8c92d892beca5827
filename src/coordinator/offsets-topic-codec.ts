// Byte form of the group coordinator's records in `__consumer_offsets`, as Kafka writes
// them: key = int16 version + OffsetCommitKey (v1) or GroupMetadataKey (v2); value = int16
// version + OffsetCommitValue / GroupMetadataValue; a null value is a tombstone. Tools
// that read `__consumer_offsets` with Kafka's formatters can read ours.

import { DecodeError, Reader, Writer } from '../../protocol/primitives.ts';
import { decodeGroupMetadataKey, encodeGroupMetadataKey } from '../../protocol/messages/group-coordinator/group-metadata-key.ts';
import { decodeGroupMetadataValue, encodeGroupMetadataValue } from '../../protocol/messages/group-coordinator/group-metadata-value.ts';
import { decodeOffsetCommitKey, encodeOffsetCommitKey } from '../../protocol/messages/group-coordinator/offset-commit-key.ts';
import { decodeOffsetCommitValue, encodeOffsetCommitValue } from '../../protocol/messages/group-coordinator/offset-commit-value.ts';
import type { CoordinatorRecord } from './records.ts';
import { saturateOptionalTimestampMs, saturateTimestampMs } from './timestamps.ts';

/**
 * A record of `__consumer_offsets` whose bytes are not a record this coordinator can read:
 * truncated, an unknown value version, a malformed field. The loader skips it.
 */
export class CoordinatorRecordDecodeError extends DecodeError {
  override name = 'CoordinatorRecordDecodeError';
}

const OFFSET_COMMIT_KEY_VERSION = 1;
const GROUP_METADATA_KEY_VERSION = 2;
/** v3 carries the leader epoch; v1 is kept for commits with an explicit expiry. */
const OFFSET_COMMIT_VALUE_VERSION = 3;
const OFFSET_COMMIT_VALUE_WITH_EXPIRY_VERSION = 1;
/** v3 carries group instance ids (static membership). */
const GROUP_METADATA_VALUE_VERSION = 3;

export interface KeyValue {
  key: Buffer;
  value: Buffer | null;
}

export function encodeCoordinatorRecord(record: CoordinatorRecord): KeyValue {
  const key = new Writer(64);
  if (record.type === 'offset') {
    key.int16(OFFSET_COMMIT_KEY_VERSION);
    encodeOffsetCommitKey(key, { group: record.groupId, topic: record.topic, partition: record.partition }, OFFSET_COMMIT_KEY_VERSION);
    if (record.value === null) return { key: key.toBuffer(), value: null };
    const v = record.value;
    const version = v.expireTimestampMs >= 0 ? OFFSET_COMMIT_VALUE_WITH_EXPIRY_VERSION : OFFSET_COMMIT_VALUE_VERSION;
    const value = new Writer(64).int16(version);
    encodeOffsetCommitValue(
      value,
      {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestamp: BigInt(v.commitTimestampMs),
        expireTimestamp: BigInt(v.expireTimestampMs),
      },
      version,
    );
    return { key: key.toBuffer(), value: value.toBuffer() };
  }
  key.int16(GROUP_METADATA_KEY_VERSION);
  encodeGroupMetadataKey(key, { group: record.groupId }, GROUP_METADATA_KEY_VERSION);
  if (record.value === null) return { key: key.toBuffer(), value: null };
  const g = record.value;
  const value = new Writer(256).int16(GROUP_METADATA_VALUE_VERSION);
  encodeGroupMetadataValue(
    value,
    {
      protocolType: g.protocolType,
      generation: g.generationId,
      protocol: g.protocolName,
      leader: g.leaderId,
      currentStateTimestamp: BigInt(g.currentStateTimestampMs),
      members: g.members.map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeout: m.rebalanceTimeoutMs,
        sessionTimeout: m.sessionTimeoutMs,
        subscription: m.subscription,
        assignment: m.assignment,
      })),
    },
    GROUP_METADATA_VALUE_VERSION,
  );
  return { key: key.toBuffer(), value: value.toBuffer() };
}

/**
 * Decodes one record of `__consumer_offsets`; returns null for record types this
 * coordinator does not keep (e.g. KIP-848 consumer-group records). Any bytes either decode
 * or throw CoordinatorRecordDecodeError; nothing else escapes. int64 timestamps are
 * saturated into the range we represent (timestamps.ts), offsets stay bigints.
 */
export function decodeCoordinatorRecord(key: Buffer, value: Buffer | null): CoordinatorRecord | null {
  try {
    return decodeRecord(key, value);
  } catch (err) {
    if (err instanceof CoordinatorRecordDecodeError) throw err;
    const reason = err instanceof Error ? err.message : String(err);
    throw new CoordinatorRecordDecodeError(`undecodable ${OFFSETS_RECORD}: ${reason}`, { cause: err });
  }
}

const OFFSETS_RECORD = '__consumer_offsets record';

function decodeRecord(key: Buffer, value: Buffer | null): CoordinatorRecord | null {
  const keyReader = new Reader(key);
  const keyVersion = keyReader.int16();
  if (keyVersion === 0 || keyVersion === 1) {
    const k = decodeOffsetCommitKey(keyReader, keyVersion);
    if (value === null) return { type: 'offset', groupId: k.group, topic: k.topic, partition: k.partition, value: null };
    const valueReader = new Reader(value);
    const v = decodeOffsetCommitValue(valueReader, valueReader.int16());
    return {
      type: 'offset',
      groupId: k.group,
      topic: k.topic,
      partition: k.partition,
      value: {
        offset: v.offset,
        leaderEpoch: v.leaderEpoch,
        metadata: v.metadata,
        commitTimestampMs: saturateTimestampMs(v.commitTimestamp),
        expireTimestampMs: saturateOptionalTimestampMs(v.expireTimestamp),
      },
    };
  }
  if (keyVersion === GROUP_METADATA_KEY_VERSION) {
    const k = decodeGroupMetadataKey(keyReader, keyVersion);
    if (value === null) return { type: 'group', groupId: k.group, value: null };
    const valueReader = new Reader(value);
    const g = decodeGroupMetadataValue(valueReader, valueReader.int16());
    return {
      type: 'group',
      groupId: k.group,
      value: {
        protocolType: g.protocolType,
        generationId: g.generation,
        protocolName: g.protocol,
        leaderId: g.leader,
        currentStateTimestampMs: saturateOptionalTimestampMs(g.currentStateTimestamp),
        members: g.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          rebalanceTimeoutMs: m.rebalanceTimeout,
          sessionTimeoutMs: m.sessionTimeout,
          subscription: m.subscription,
          assignment: m.assignment,
        })),
      },
    };
  }
  return null;
}
