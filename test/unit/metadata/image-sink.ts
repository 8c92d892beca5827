// A RecordSink that applies records straight to an image, as a committed one-voter log
// would, for controller tests that need no Raft.

import { QuorumController, type RecordSink } from '../../../src/metadata/controller.ts';
import type { MetadataDelta } from '../../../src/metadata/image.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import { decodeMetadataRecord, encodeMetadataRecord } from '../../../src/metadata/record-codec.ts';
import type { MetadataRecord } from '../../../src/metadata/records.ts';
import { FakeClock } from './fake-cluster.ts';

export class ImageSink implements RecordSink {
  current = MetadataImage.EMPTY;
  offset = -1;
  active = true;
  /** Makes the next write fail, as an append refused by a deposed leader. */
  failNextWrite = false;
  written: MetadataRecord[][] = [];
  deltas: MetadataDelta[] = [];
  isActive(): boolean {
    return this.active;
  }
  image(): MetadataImage {
    return this.current;
  }
  nextWriteOffset(): number {
    return this.offset + 1;
  }
  async write(records: MetadataRecord[]): Promise<void> {
    if (this.failNextWrite || !this.active) {
      this.failNextWrite = false;
      throw new Error('not the leader');
    }
    // Every record goes through the log framing, as it would on disk.
    const decoded = records.map((r) => decodeMetadataRecord(encodeMetadataRecord(r))!);
    this.offset += records.length;
    const { image, delta } = this.current.apply(decoded, this.offset, 1);
    this.current = image;
    this.written.push(records);
    this.deltas.push(delta);
  }
  /** Every record written, in order. */
  records(): MetadataRecord[] {
    return this.written.flat();
  }
}

/** An active one-voter controller over an ImageSink, writing `formatRecords` (the bootstrap records) first. */
export async function activeController(
  formatRecords: readonly MetadataRecord[] = [],
): Promise<{ sink: ImageSink; controller: QuorumController }> {
  const sink = new ImageSink();
  const controller = new QuorumController(sink, { defaultNumPartitions: () => 1, defaultReplicationFactor: () => 1 }, () => 0, {
    clock: new FakeClock(),
  });
  controller.setFormatRecords(formatRecords);
  await controller.activate();
  return { sink, controller };
}
