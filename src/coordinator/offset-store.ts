// The offsets of the groups a coordinator serves (Kafka's OffsetMetadataManager): committed
// offsets, and the offsets transactional producers committed (TxnOffsetCommit, KIP-447) that
// wait for their transaction's marker, when they become committed (COMMIT) or are dropped
// (ABORT). Each offset keeps the log offset of the record that wrote it: when a transaction
// commits, its offset replaces a committed one only if written later, so a plain commit made
// while the transaction was open is not overwritten by the older transactional one (and a
// compacted `__consumer_offsets` reads back the same way).

import type { OffsetAndMetadata } from './records.ts';

export interface StoredOffset {
  readonly topic: string;
  readonly partition: number;
  readonly value: OffsetAndMetadata;
  /** Offset of the record in `__consumer_offsets`; -1 when unknown. */
  readonly recordOffset: number;
}

type OffsetsByKey = Map<string, StoredOffset>;

function offsetKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class OffsetStore {
  /** group id → topic/partition → committed offset */
  private readonly committed = new Map<string, OffsetsByKey>();
  /** producer id → group id → topic/partition → offset its open transaction committed */
  private readonly pending = new Map<bigint, Map<string, OffsetsByKey>>();
  /** group id → producers with pending offsets in it */
  private readonly openTransactions = new Map<string, Set<bigint>>();

  /**
   * An offset commit record (a tombstone when `value` is null), written by a transactional
   * producer when `producerId` is set. A tombstone removes the committed offset and the
   * pending ones of the partition, as Kafka's replay does.
   */
  replay(
    groupId: string,
    topic: string,
    partition: number,
    value: OffsetAndMetadata | null,
    recordOffset: number,
    producerId: bigint | null,
  ): void {
    const key = offsetKey(topic, partition);
    if (value === null) {
      removeFrom(this.committed, groupId, key);
      for (const pid of this.openTransactions.get(groupId) ?? []) {
        const byGroup = this.pending.get(pid);
        if (byGroup !== undefined) removeFrom(byGroup, groupId, key);
      }
      return;
    }
    const stored: StoredOffset = { topic, partition, value, recordOffset };
    if (producerId === null) {
      offsetsOf(this.committed, groupId).set(key, stored);
      return;
    }
    let byGroup = this.pending.get(producerId);
    if (byGroup === undefined) {
      byGroup = new Map();
      this.pending.set(producerId, byGroup);
    }
    offsetsOf(byGroup, groupId).set(key, stored);
    let producers = this.openTransactions.get(groupId);
    if (producers === undefined) {
      producers = new Set();
      this.openTransactions.set(groupId, producers);
    }
    producers.add(producerId);
  }

  /**
   * The producer's transaction ended: on COMMIT its pending offsets in the groups `inScope`
   * accepts (those of the `__consumer_offsets` partition whose marker this is) become
   * committed, unless a later record committed the partition already; on ABORT they are dropped.
   */
  replayEndTransaction(producerId: bigint, commit: boolean, inScope: (groupId: string) => boolean): void {
    const byGroup = this.pending.get(producerId);
    if (byGroup === undefined) return;
    for (const [groupId, offsets] of [...byGroup]) {
      if (!inScope(groupId)) continue;
      byGroup.delete(groupId);
      const producers = this.openTransactions.get(groupId);
      producers?.delete(producerId);
      if (producers?.size === 0) this.openTransactions.delete(groupId);
      if (!commit) continue;
      for (const [key, stored] of offsets) {
        const existing = this.committed.get(groupId)?.get(key);
        if (existing === undefined || stored.recordOffset > existing.recordOffset) offsetsOf(this.committed, groupId).set(key, stored);
      }
    }
    if (byGroup.size === 0) this.pending.delete(producerId);
  }

  get(groupId: string, topic: string, partition: number): StoredOffset | undefined {
    return this.committed.get(groupId)?.get(offsetKey(topic, partition));
  }

  /** The group's committed offsets. */
  committedOffsets(groupId: string): StoredOffset[] {
    return [...(this.committed.get(groupId)?.values() ?? [])];
  }

  hasCommittedOffsets(groupId: string): boolean {
    return this.committed.has(groupId);
  }

  /** Whether an open transaction committed an offset of the group (of the partition, when given). */
  hasPendingOffsets(groupId: string, topic?: string, partition?: number): boolean {
    const producers = this.openTransactions.get(groupId);
    if (producers === undefined) return false;
    if (topic === undefined || partition === undefined) return true;
    const key = offsetKey(topic, partition);
    for (const pid of producers) if (this.pending.get(pid)?.get(groupId)?.has(key) === true) return true;
    return false;
  }

  /** The partitions open transactions committed offsets of, in the group. */
  pendingPartitions(groupId: string): { topic: string; partition: number }[] {
    const seen = new Map<string, { topic: string; partition: number }>();
    for (const pid of this.openTransactions.get(groupId) ?? []) {
      for (const [key, stored] of this.pending.get(pid)?.get(groupId) ?? []) {
        seen.set(key, { topic: stored.topic, partition: stored.partition });
      }
    }
    return [...seen.values()];
  }

  /** Forgets the group's offsets, committed and pending. */
  forgetGroup(groupId: string): void {
    this.committed.delete(groupId);
    for (const pid of this.openTransactions.get(groupId) ?? []) {
      const byGroup = this.pending.get(pid);
      byGroup?.delete(groupId);
      if (byGroup?.size === 0) this.pending.delete(pid);
    }
    this.openTransactions.delete(groupId);
  }

  /** Every group with offsets, committed or pending. */
  groupIds(): string[] {
    return [...new Set([...this.committed.keys(), ...this.openTransactions.keys()])];
  }
}

function offsetsOf(map: Map<string, OffsetsByKey>, groupId: string): OffsetsByKey {
  let offsets = map.get(groupId);
  if (offsets === undefined) {
    offsets = new Map();
    map.set(groupId, offsets);
  }
  return offsets;
}

function removeFrom(map: Map<string, OffsetsByKey>, groupId: string, key: string): void {
  const offsets = map.get(groupId);
  if (offsets === undefined) return;
  offsets.delete(key);
  if (offsets.size === 0) map.delete(groupId);
}
