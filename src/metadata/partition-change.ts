// Kafka's PartitionChangeBuilder: from a partition's current state and a target ISR / replica
// set, elect a leader and produce the one PartitionChangeRecord that gets there, or null when
// nothing changes. Every change the controller makes to a partition goes through here, so the
// election rules live in one place. With eligible leader replicas (KIP-966) enabled, an ISR
// that shrinks below the topic's min ISR keeps its former members as the ELR: replicas that
// hold every committed record, so one of them may lead once the ISR is empty.

import type { PartitionImage } from './image.ts';
import type { PartitionChangeRecord } from './records.ts';
import { partitionChangeRecord } from './records.ts';

/** PartitionChangeRecord.leader: -2 leaves the leader alone; -1 means no leader. */
export const NO_LEADER_CHANGE = -2;
export const NO_LEADER = -1;

/** LeaderRecoveryState: a leader elected uncleanly is RECOVERING until it says otherwise. */
export const LeaderRecoveryState = { RECOVERED: 0, RECOVERING: 1 } as const;

/**
 * ONLINE keeps a valid leader and otherwise takes the first live ISR member; PREFERRED
 * moves leadership to the first replica when it can lead; UNCLEAN falls back to any
 * acceptable replica outside the ISR.
 */
export type Election = 'ONLINE' | 'PREFERRED' | 'UNCLEAN';

export interface PartitionChangeTarget {
  /** Whether a broker may lead (registered, unfenced, not in controlled shutdown). */
  isAcceptableLeader: (brokerId: number) => boolean;
  election?: Election;
  isr?: readonly number[];
  replicas?: readonly number[];
  removingReplicas?: readonly number[];
  addingReplicas?: readonly number[];
  leaderRecoveryState?: number;
  /** The eligible.leader.replicas.version feature is on (KIP-966). */
  eligibleLeaderReplicasEnabled?: boolean;
  /** The topic's effective min ISR: min.insync.replicas capped by the replication factor. */
  minIsr?: number;
  /** Replicas whose broker came back from an unclean shutdown: no longer eligible leaders. */
  uncleanShutdownReplicas?: readonly number[];
}

const sameList = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
const containsAll = (a: readonly number[], b: readonly number[]): boolean => b.every((x) => a.includes(x));

export function isReassignmentInProgress(p: Pick<PartitionImage, 'addingReplicas' | 'removingReplicas'>): boolean {
  return p.addingReplicas.length > 0 || p.removingReplicas.length > 0;
}

/** The record that moves `partition` to `target`, or null when it is already there. */
export function buildPartitionChange(
  partition: PartitionImage,
  topicId: string,
  target: PartitionChangeTarget,
): PartitionChangeRecord | null {
  const election = target.election ?? 'ONLINE';
  const elrEnabled = target.eligibleLeaderReplicasEnabled === true;
  let targetIsr = [...(target.isr ?? partition.isr)];
  let targetReplicas = [...(target.replicas ?? partition.replicas)];
  let targetRemoving = [...(target.removingReplicas ?? partition.removingReplicas)];
  let targetAdding = [...(target.addingReplicas ?? partition.addingReplicas)];
  const targetRecoveryState = target.leaderRecoveryState ?? partition.leaderRecoveryState;

  // A reassignment completes once every target replica is in the ISR: the removed replicas
  // leave both the replica set and the ISR in the same record.
  if (targetRemoving.length > 0 || targetAdding.length > 0) {
    const isr = targetIsr.filter((r) => !targetRemoving.includes(r));
    const replicas = targetReplicas.filter((r) => !targetRemoving.includes(r));
    if (isr.length > 0 && replicas.length > 0 && containsAll(isr, replicas)) {
      targetIsr = isr;
      targetReplicas = replicas;
      targetRemoving = [];
      targetAdding = [];
    }
  }

  let elr = elrEnabled ? targetElr(partition, targetIsr, target.minIsr ?? 1, target.uncleanShutdownReplicas ?? []) : [...partition.elr];
  const record = partitionChangeRecord({ partitionId: partition.partitionId, topicId });
  // A replica may lead from the ISR, or from the ELR once the ISR is empty.
  const isValidNewLeader = (r: number): boolean =>
    (targetIsr.includes(r) || (targetIsr.length === 0 && elr.includes(r))) && target.isAcceptableLeader(r);
  const lastKnownLeader = elrEnabled && targetIsr.length === 0 && elr.length === 0 ? lastKnownLeaderOf(partition) : NO_LEADER;
  const elected = electLeader(partition, election, targetReplicas, isValidNewLeader, target.isAcceptableLeader, lastKnownLeader);
  if (elected.leader !== partition.leader) {
    if (elr.includes(elected.leader)) {
      // An eligible leader replica holds every committed record: it starts the ISR again.
      targetIsr = [elected.leader];
      elr = elr.filter((r) => r !== elected.leader);
    }
    record.leader = elected.leader;
    if (elected.unclean) {
      // The new leader's log is all there is now: the ISR restarts from it alone.
      record.isr = [elected.leader];
      if (partition.leaderRecoveryState !== LeaderRecoveryState.RECOVERING) {
        record.leaderRecoveryState = LeaderRecoveryState.RECOVERING;
      }
    }
  }
  // Replicas that leave the assignment must stop following the current leader: a new leader
  // epoch tells them.
  if (record.leader === NO_LEADER_CHANGE && !containsAll(targetReplicas, partition.replicas)) {
    record.leader = partition.leader;
  }
  // An unclean election, or ELR turned off, leaves no replica eligible beyond the ISR.
  if (record.isr !== null || !elrEnabled) elr = [];
  if (!sameList(elr, partition.elr)) record.eligibleLeaderReplicas = elr;
  // Without ELR the last ISR member stays in the ISR even when it cannot lead: it holds every
  // committed record. With ELR the ISR may empty, its members kept as eligible leaders.
  if (record.isr === null && (targetIsr.length > 0 || elrEnabled) && !sameList(targetIsr, partition.isr)) record.isr = targetIsr;
  updateLastKnownLeader(partition, record, elrEnabled);
  if (targetReplicas.length > 0 && !sameList(targetReplicas, partition.replicas)) record.replicas = targetReplicas;
  if (!sameList(targetRemoving, partition.removingReplicas)) record.removingReplicas = targetRemoving;
  if (!sameList(targetAdding, partition.addingReplicas)) record.addingReplicas = targetAdding;
  if (record.leaderRecoveryState === -1 && targetRecoveryState !== partition.leaderRecoveryState) {
    record.leaderRecoveryState = targetRecoveryState;
  }
  return isNoOp(record) ? null : record;
}

/**
 * Kafka's maybePopulateTargetElr: at or above min ISR there is no ELR; below it, the members
 * the ISR loses join the ELR (a broker back from an unclean shutdown excepted), and the ELR
 * never holds an ISR member.
 */
function targetElr(partition: PartitionImage, targetIsr: readonly number[], minIsr: number, uncleanShutdown: readonly number[]): number[] {
  if (targetIsr.length >= minIsr) return [];
  const candidates = new Set([...partition.elr, ...partition.isr]);
  return [...candidates].filter((r) => !targetIsr.includes(r) && !uncleanShutdown.includes(r));
}

/**
 * Kafka keeps the last leader of a partition whose ISR and ELR emptied in LastKnownElr (one
 * member); that replica is the one an election falls back to (balanced recovery).
 */
function lastKnownLeaderOf(partition: PartitionImage): number {
  return partition.lastKnownElr.length === 1 ? partition.lastKnownElr[0]! : NO_LEADER;
}

/**
 * Kafka's maybeUpdateLastKnownLeader: the first record that empties the ISR remembers the
 * leader it had; a record that gives (or leaves) the partition a leader forgets it.
 */
function updateLastKnownLeader(partition: PartitionImage, record: PartitionChangeRecord, elrEnabled: boolean): void {
  // Turning ELR off clears LastKnownElr with a ClearElrRecord, not here.
  if (!elrEnabled) return;
  if (record.isr !== null && record.isr.length === 0) {
    if (partition.lastKnownElr.length !== 1 || partition.lastKnownElr[0] !== partition.leader) record.lastKnownElr = [partition.leader];
  } else if ((record.leader >= 0 || (partition.leader !== NO_LEADER && record.leader !== NO_LEADER)) && partition.lastKnownElr.length > 0) {
    record.lastKnownElr = [];
  }
}

/**
 * The leader, in Kafka's order: the current one while it stays valid, a live ISR member (or
 * ELR member once the ISR is empty), the last known leader when both are empty (an unclean
 * election, as Kafka's balanced recovery counts it), then with UNCLEAN any live replica.
 */
function electLeader(
  partition: PartitionImage,
  election: Election,
  replicas: readonly number[],
  isValidNewLeader: (r: number) => boolean,
  isAcceptableLeader: (r: number) => boolean,
  lastKnownLeader: number,
): { leader: number; unclean: boolean } {
  if (election === 'PREFERRED') {
    const preferred = replicas[0];
    if (preferred !== undefined && isValidNewLeader(preferred)) return { leader: preferred, unclean: false };
    if (isValidNewLeader(partition.leader)) return { leader: partition.leader, unclean: false };
    const online = replicas.slice(1).find(isValidNewLeader);
    if (online !== undefined) return { leader: online, unclean: false };
    if (lastKnownLeader !== NO_LEADER) return { leader: lastKnownLeader, unclean: true };
    return { leader: NO_LEADER, unclean: false };
  }
  if (isValidNewLeader(partition.leader)) return { leader: partition.leader, unclean: false };
  const online = replicas.find(isValidNewLeader);
  if (online !== undefined) return { leader: online, unclean: false };
  if (lastKnownLeader !== NO_LEADER) return { leader: lastKnownLeader, unclean: true };
  if (election === 'UNCLEAN') {
    const unclean = replicas.find(isAcceptableLeader);
    if (unclean !== undefined) return { leader: unclean, unclean: true };
  }
  return { leader: NO_LEADER, unclean: false };
}

function isNoOp(r: PartitionChangeRecord): boolean {
  return (
    r.isr === null &&
    r.eligibleLeaderReplicas === null &&
    r.lastKnownElr === null &&
    r.leader === NO_LEADER_CHANGE &&
    r.replicas === null &&
    r.removingReplicas === null &&
    r.addingReplicas === null &&
    r.leaderRecoveryState === -1
  );
}
