// Metadata records in the log are framed as Kafka's ApiMessageAndVersion
// (MetadataRecordSerde): unsigned varint frame version (1), unsigned varint record type,
// unsigned varint record version, then the record in that version.

import { DecodeError, Reader, Writer } from '../../protocol/primitives.ts';
import { records as recordDescriptors, type RecordDescriptor } from '../../protocol/messages/metadata/index.ts';
import type { MetadataRecord, MetadataRecordName } from './records.ts';
import { MetadataRecordType } from './records.ts';

const FRAME_VERSION = 1;

/**
 * The version written for each record type: what metadata.version 4.0-IV1 writes (partition
 * records in the version that carries eligible leader replicas, KIP-966), except that
 * partitions carry no directory assignment (PartitionRecord.Directories is empty, which Kafka
 * reads as unassigned) and broker registration changes no log dirs.
 */
const WRITE_VERSION: Record<MetadataRecordName, number> = {
  RegisterBrokerRecord: 3,
  UnregisterBrokerRecord: 0,
  TopicRecord: 0,
  PartitionRecord: 2,
  ConfigRecord: 0,
  PartitionChangeRecord: 2,
  FenceBrokerRecord: 0,
  UnfenceBrokerRecord: 0,
  RemoveTopicRecord: 0,
  FeatureLevelRecord: 0,
  ProducerIdsRecord: 0,
  BrokerRegistrationChangeRecord: 1,
  NoOpRecord: 0,
  UserScramCredentialRecord: 0,
  RemoveUserScramCredentialRecord: 0,
  AccessControlEntryRecord: 0,
  RemoveAccessControlEntryRecord: 0,
  ClientQuotaRecord: 0,
  ClearElrRecord: 0,
};

const NAME_BY_TYPE = new Map<number, MetadataRecordName>(
  Object.entries(MetadataRecordType).map(([name, type]) => [type, name as MetadataRecordName]),
);

function descriptor(name: string): RecordDescriptor {
  const d = recordDescriptors.get(name);
  if (d === undefined) throw new Error(`no codec for ${name}`);
  return d;
}

export function encodeMetadataRecord(record: MetadataRecord): Buffer {
  const w = new Writer(128);
  const version = WRITE_VERSION[record.type];
  w.uvarint(FRAME_VERSION);
  w.uvarint(MetadataRecordType[record.type]);
  w.uvarint(version);
  descriptor(record.type).encode(w, record.data, version);
  return w.toBuffer();
}

/**
 * Decodes one framed record; record types this broker does not act on (delegation
 * tokens...) come back as null so replay skips them.
 */
export function decodeMetadataRecord(value: Buffer): MetadataRecord | null {
  const r = new Reader(value);
  const frameVersion = r.uvarint();
  if (frameVersion !== FRAME_VERSION) throw new DecodeError(`unknown metadata record frame version ${frameVersion}`);
  const type = r.uvarint();
  const version = r.uvarint();
  const name = NAME_BY_TYPE.get(type);
  if (name === undefined) return null;
  const data = descriptor(name).decode(r, version);
  return { type: name, data } as MetadataRecord;
}
