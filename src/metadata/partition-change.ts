// Kafka's PartitionChangeBuilder (without eligible leader replicas, which metadata.version 21
// does not have): from a partition's current state and a target ISR / replica set, elect a
// leader and produce the one PartitionChangeRecord that gets there, or null when nothing
// changes. Every change the controller makes to a partition goes through here, so the
// election rules live in one place.

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

  const record = partitionChangeRecord({ partitionId: partition.partitionId, topicId });
  const isValidNewLeader = (r: number): boolean => targetIsr.includes(r) && target.isAcceptableLeader(r);
  const elected = electLeader(partition, election, targetReplicas, isValidNewLeader, target.isAcceptableLeader);
  if (elected.leader !== partition.leader) {
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
  // The last ISR member stays in the ISR even when it cannot lead: it holds every committed record.
  if (record.isr === null && targetIsr.length > 0 && !sameList(targetIsr, partition.isr)) record.isr = targetIsr;
  if (targetReplicas.length > 0 && !sameList(targetReplicas, partition.replicas)) record.replicas = targetReplicas;
  if (!sameList(targetRemoving, partition.removingReplicas)) record.removingReplicas = targetRemoving;
  if (!sameList(targetAdding, partition.addingReplicas)) record.addingReplicas = targetAdding;
  if (record.leaderRecoveryState === -1 && targetRecoveryState !== partition.leaderRecoveryState) {
    record.leaderRecoveryState = targetRecoveryState;
  }
  return isNoOp(record) ? null : record;
}

function electLeader(
  partition: PartitionImage,
  election: Election,
  replicas: readonly number[],
  isValidNewLeader: (r: number) => boolean,
  isAcceptableLeader: (r: number) => boolean,
): { leader: number; unclean: boolean } {
  if (election === 'PREFERRED') {
    const preferred = replicas[0];
    if (preferred !== undefined && isValidNewLeader(preferred)) return { leader: preferred, unclean: false };
    if (isValidNewLeader(partition.leader)) return { leader: partition.leader, unclean: false };
    const online = replicas.slice(1).find(isValidNewLeader);
    return { leader: online ?? NO_LEADER, unclean: false };
  }
  if (isValidNewLeader(partition.leader)) return { leader: partition.leader, unclean: false };
  const online = replicas.find(isValidNewLeader);
  if (online !== undefined) return { leader: online, unclean: false };
  if (election === 'UNCLEAN') {
    const unclean = replicas.find(isAcceptableLeader);
    if (unclean !== undefined) return { leader: unclean, unclean: true };
  }
  return { leader: NO_LEADER, unclean: false };
}

function isNoOp(r: PartitionChangeRecord): boolean {
  return (
    r.isr === null &&
    r.leader === NO_LEADER_CHANGE &&
    r.replicas === null &&
    r.removingReplicas === null &&
    r.addingReplicas === null &&
    r.leaderRecoveryState === -1
  );
}
