// Read-only views of a running Broker for the invariant checker: its Raft state and
// metadata log, and each partition replica it hosts.

import { ControlRecordType } from '../../protocol/records/index.ts';
import type { Broker } from '../../src/broker.ts';
import type { RaftLog } from '../../src/metadata/raft/log.ts';
import type { RaftNodeView, RaftEntry, ReplicaView } from './invariants.ts';

export function brokerRaftView(broker: Broker, incarnation: number): RaftNodeView | undefined {
  const raft = broker.metadata.raftClientIfStarted;
  const log = broker.metadata.raftLogIfOpen;
  if (raft === null || log === null) return undefined;
  return {
    nodeId: broker.nodeId,
    incarnation,
    epoch: raft.currentEpoch,
    isLeader: raft.isLeader(),
    highWatermark: raft.highWatermarkOffset,
    logStartOffset: log.startOffset,
    logEndOffset: log.endOffset,
    entries: (from, to) => raftEntries(log, from, to),
  };
}

export function brokerReplicaViews(broker: Broker, incarnation: number): ReplicaView[] {
  const rm = broker.replicaManager;
  if (rm === null) return [];
  const out: ReplicaView[] = [];
  for (const p of rm.allPartitions()) {
    out.push({
      brokerId: broker.nodeId,
      incarnation,
      topic: p.topic,
      partition: p.partition,
      isLeader: p.isLeader,
      leaderEpoch: p.leaderEpoch,
      highWatermark: p.highWatermark,
      logStartOffset: p.logStartOffset,
      logEndOffset: p.logEndOffset,
      isr: p.isr,
    });
  }
  return out;
}

/** The records of a Raft log in [from, to): data records by content, control records by type. */
export function raftEntries(log: RaftLog, from: number, to: number): RaftEntry[] {
  const out: RaftEntry[] = [];
  if (to <= from) return out;
  for (const b of log.read(Math.max(from, log.startOffset), Number.MAX_SAFE_INTEGER)) {
    for (let i = 0; i < b.records.length; i++) {
      const offset = b.baseOffset + i;
      if (offset < from) continue;
      if (offset >= to) return out;
      const content = b.records[i]!.toString('base64');
      out.push({
        offset,
        epoch: b.epoch,
        sig: b.control ? `control:${b.controlType ?? ControlRecordType.LeaderChange}:${content}` : content,
      });
    }
  }
  return out;
}
