// Feeds committed Raft batches to the MetadataImage and tells listeners what changed; also
// encodes and decodes metadata snapshots (the image as records between a SnapshotHeader and
// a SnapshotFooter control batch, as Kafka's RecordsSnapshotWriter lays them out).

import { Writer } from '../../protocol/primitives.ts';
import { encodeSnapshotFooterRecord, makeSnapshotFooterRecord } from '../../protocol/messages/snapshot-footer-record.ts';
import { encodeSnapshotHeaderRecord, makeSnapshotHeaderRecord } from '../../protocol/messages/snapshot-header-record.ts';
import type { MetadataDelta, PartitionChange, TopicImage } from './image.ts';
import { MetadataImage, imageToRecords } from './image.ts';
import { decodeMetadataRecord, encodeMetadataRecord } from './record-codec.ts';
import type { MetadataRecord } from './records.ts';
import { ControlRecordType } from '../../protocol/records/index.ts';
import { decodeRaftBatches, encodeRaftBatch } from './raft/log.ts';
import type { RaftBatch, RaftListener, SnapshotId } from './raft/types.ts';
import { lastOffsetOf } from './raft/types.ts';
import { systemClock, type Clock } from '../runtime/clock.ts';

/**
 * Told about every committed change after the image is updated. A listener that returns a
 * promise (the ReplicaManager creating logs) holds back the answer to the admin request that
 * caused the change until it settles, so "topic created" means its partitions are served.
 */
export type MetadataDeltaListener = (delta: MetadataDelta, image: MetadataImage) => void | Promise<void>;

const RECORDS_PER_SNAPSHOT_BATCH = 1024;

export interface LoaderOptions {
  /** metadata.log.max.record.bytes.between.snapshots */
  maxUnsnapshottedBytes: number;
  /** Called (outside the commit path) when that many record bytes were applied since the last snapshot. */
  onSnapshotDue: (image: MetadataImage) => void;
  onLeaderChange?: (leaderId: number, epoch: number) => void;
  /** Runs the snapshot outside the commit path; defaults to the system clock. */
  clock?: Clock;
}

export class MetadataLoader implements RaftListener {
  private current = MetadataImage.EMPTY;
  private readonly listeners: MetadataDeltaListener[] = [];
  private sinceSnapshotBytes = 0;
  private snapshotScheduled = false;
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly options: LoaderOptions) {}

  get image(): MetadataImage {
    return this.current;
  }

  /** Record bytes applied since the last snapshot (metadata.log.max.snapshot.interval.ms takes one when > 0). */
  get unsnapshottedBytes(): number {
    return this.sinceSnapshotBytes;
  }

  /** Called once a snapshot of the current image was written. */
  snapshotTaken(): void {
    this.sinceSnapshotBytes = 0;
  }

  onMetadataDelta(listener: MetadataDeltaListener): void {
    this.listeners.push(listener);
  }

  private publish(delta: MetadataDelta): void {
    for (const listener of this.listeners) {
      const done = listener(delta, this.current);
      if (done instanceof Promise) this.pending = Promise.all([this.pending, done.catch(() => {})]).then(() => {});
    }
  }

  /** Resolves once every listener promise returned for changes published so far settles. */
  whenPublished(): Promise<void> {
    return this.pending;
  }

  handleCommit(batches: RaftBatch[]): void {
    const records: MetadataRecord[] = [];
    let recordBytes = 0;
    for (const batch of batches) {
      for (const value of batch.records) {
        recordBytes += value.length;
        const record = decodeMetadataRecord(value);
        if (record !== null) records.push(record);
      }
    }
    const last = batches[batches.length - 1];
    if (last === undefined) return;
    const { image, delta } = this.current.apply(records, lastOffsetOf(last), last.epoch);
    this.current = image;
    this.publish(delta);
    this.sinceSnapshotBytes += recordBytes;
    if (this.sinceSnapshotBytes >= this.options.maxUnsnapshottedBytes && !this.snapshotScheduled) {
      this.snapshotScheduled = true;
      (this.options.clock ?? systemClock).setImmediate(() => {
        this.snapshotScheduled = false;
        this.options.onSnapshotDue(this.current);
      });
    }
  }

  handleLoadSnapshot(id: SnapshotId, content: Buffer): void {
    const records = decodeSnapshot(content);
    const previous = this.current;
    this.current = MetadataImage.EMPTY.apply(records, id.endOffset - 1, id.epoch).image;
    this.sinceSnapshotBytes = 0;
    this.publish(diffImages(previous, this.current));
  }

  handleLeaderChange(leaderId: number, epoch: number): void {
    this.options.onLeaderChange?.(leaderId, epoch);
  }
}

export function encodeSnapshot(image: MetadataImage, nowMs: number): Buffer {
  const control = (type: ControlRecordType, encode: (w: Writer) => void, baseOffset: number): Buffer => {
    const w = new Writer(32);
    encode(w);
    return encodeRaftBatch({ baseOffset, epoch: image.epoch, appendTimeMs: nowMs, control: true, records: [w.toBuffer()] }, type);
  };
  const parts: Buffer[] = [
    control(
      ControlRecordType.SnapshotHeader,
      (w) => encodeSnapshotHeaderRecord(w, makeSnapshotHeaderRecord({ version: 0, lastContainedLogTimestamp: BigInt(nowMs) }), 0),
      0,
    ),
  ];
  const values = imageToRecords(image).map(encodeMetadataRecord);
  let offset = 1;
  for (let i = 0; i < values.length; i += RECORDS_PER_SNAPSHOT_BATCH) {
    const records = values.slice(i, i + RECORDS_PER_SNAPSHOT_BATCH);
    parts.push(encodeRaftBatch({ baseOffset: offset, epoch: image.epoch, appendTimeMs: nowMs, control: false, records }));
    offset += records.length;
  }
  parts.push(
    control(ControlRecordType.SnapshotFooter, (w) => encodeSnapshotFooterRecord(w, makeSnapshotFooterRecord({ version: 0 }), 0), offset),
  );
  return Buffer.concat(parts);
}

export function decodeSnapshot(content: Buffer): MetadataRecord[] {
  const records: MetadataRecord[] = [];
  for (const batch of decodeRaftBatches(content)) {
    if (batch.control) continue;
    for (const value of batch.records) {
      const record = decodeMetadataRecord(value);
      if (record !== null) records.push(record);
    }
  }
  return records;
}

/** The delta between two images, for listeners when a snapshot replaces the state. */
export function diffImages(before: MetadataImage, after: MetadataImage): MetadataDelta {
  const topicsCreated: TopicImage[] = [];
  const topicsDeleted: TopicImage[] = [];
  const partitionsChanged: PartitionChange[] = [];
  for (const topic of before.topicsById.values()) if (!after.topicsById.has(topic.id)) topicsDeleted.push(topic);
  for (const topic of after.topicsById.values()) {
    const old = before.topicsById.get(topic.id);
    if (old === undefined) topicsCreated.push(topic);
    for (const p of topic.partitions.values()) {
      const previous = old?.partitions.get(p.partitionId) ?? null;
      if (previous === null || previous.partitionEpoch !== p.partitionEpoch || previous.leaderEpoch !== p.leaderEpoch) {
        partitionsChanged.push({ topicName: topic.name, topicId: topic.id, partition: p, previous });
      }
    }
  }
  const configNames = (image: MetadataImage, type: number) =>
    image
      .allConfigs()
      .filter((c) => c.resourceType === type)
      .map((c) => c.resourceName);
  const union = (type: number) => [...new Set([...configNames(before, type), ...configNames(after, type)])];
  return {
    topicsCreated,
    topicsDeleted,
    partitionsChanged,
    topicConfigsChanged: union(2),
    brokerConfigsChanged: union(4),
    brokersChanged: [...new Set([...before.brokers.keys(), ...after.brokers.keys()])],
    featuresChanged: true,
    producerIdsChanged: before.nextProducerId !== after.nextProducerId,
    aclsAdded: [...after.acls].filter(([id]) => !before.acls.has(id)).map(([id, binding]) => ({ id, binding })),
    aclsRemoved: [...before.acls.keys()].filter((id) => !after.acls.has(id)),
    clientQuotasChanged: before.clientQuotaEntities.size > 0 || after.clientQuotaEntities.size > 0,
  };
}
