import { MAX_STRING_BYTES, utf8Length, utf8Prefix } from '../../protocol/primitives.ts';

/**
 * Kafka's member id for a classic group member, `<group instance id or client id>-<uuid>`
 * (GroupMetadata.generateMemberId), with the prefix cut so the id fits a string: a client id
 * or group instance id may itself take the 32767 bytes a string holds, and the member id goes
 * back in JoinGroup, SyncGroup and DescribeGroups answers and into the group's stored metadata.
 */
export function classicMemberId(prefix: string, uuid: string): string {
  return `${utf8Prefix(prefix, MAX_STRING_BYTES - 1 - utf8Length(uuid))}-${uuid}`;
}
