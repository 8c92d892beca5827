// KIP-966's promise, as the nemesis is held to it: an acknowledged record survives unless
// more than `replication factor - min ISR` of its partition's replicas shut down uncleanly at
// once (one of three; of two brokers with min ISR 2 one too, as the other holds every
// record). To the controller a process kill is as unclean as a power failure (no
// clean-shutdown marker): either takes the broker out of every ISR and ELR on its next
// registration, and when both are empty the controller elects the last known leader
// (Kafka's balanced recovery), whatever that replica lost. A kill loses nothing, a power
// failure loses what was not fsynced; so while a broker back from a power failure has not
// rejoined every ISR, no other broker is killed or powered off, and a broker is powered off
// only while no other broker is back from a kill without having rejoined every ISR. Every
// broker of the simulation replicates every partition.
//
// Until the controller hears of the shutdown, the leader's ISR still names the broker, with
// the records it may no longer have; so it counts as back only once the latest leader has
// been seen without it in the ISR and then with it again.

import type { ReplicaView } from './invariants.ts';

export class PowerLossBound {
  /** Broker back from an unclean shutdown -> the partitions it has yet to leave the ISR of, and those it has yet to rejoin. */
  private readonly unclean = new Map<number, { lostPower: boolean; toLeave: Set<string>; toRejoin: Set<string> }>();
  /** Every partition seen so far. */
  private readonly partitions = new Set<string>();
  /** Per partition: the latest leader epoch seen, so that a stale leader's ISR is not believed. */
  private readonly latestEpoch = new Map<string, number>();

  /** Whether `brokerId` may shut down uncleanly now, losing power or not, within the bound. */
  allows(brokerId: number, power: boolean): boolean {
    for (const [b, state] of this.unclean) if (b !== brokerId && (power || state.lostPower)) return false;
    return true;
  }

  shutDownUncleanly(brokerId: number, lostPower: boolean): void {
    const prior = this.unclean.get(brokerId);
    this.unclean.set(brokerId, {
      lostPower: lostPower || prior?.lostPower === true,
      toLeave: new Set(this.partitions),
      toRejoin: new Set(this.partitions),
    });
  }

  /** After each event, from the replicas of every live broker. */
  observe(replicas: readonly ReplicaView[]): void {
    const leaders = new Map<string, ReplicaView>();
    for (const r of replicas) {
      const tp = `${r.topic}-${r.partition}`;
      if (!this.partitions.has(tp)) {
        this.partitions.add(tp);
        // A partition first seen after the shutdown: its replica there is not older than the failure.
        for (const state of this.unclean.values()) state.toRejoin.add(tp);
      }
      if (!r.isLeader || r.leaderEpoch < (this.latestEpoch.get(tp) ?? -1)) continue;
      this.latestEpoch.set(tp, r.leaderEpoch);
      leaders.set(tp, r);
    }
    for (const [broker, state] of this.unclean) {
      for (const [tp, leader] of leaders) {
        const inIsr = leader.isr.includes(broker);
        if (!inIsr) state.toLeave.delete(tp);
        else if (!state.toLeave.has(tp)) state.toRejoin.delete(tp);
      }
      if (state.toRejoin.size === 0) this.unclean.delete(broker);
    }
  }

  get uncleanBrokers(): readonly number[] {
    return [...this.unclean.keys()];
  }
}
