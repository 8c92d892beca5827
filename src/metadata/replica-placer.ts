// Kafka's StripedReplicaPlacer: replicas go round-robin over racks, and round-robin over the
// brokers of each rack, each partition starting one rack and one broker further, so leaders
// and replicas spread evenly and a partition's replicas land on as many racks as it can.
// Unfenced brokers are used before fenced ones, and a leader is always unfenced.

import { Errors, KafkaError } from '../../protocol/errors.ts';

export interface UsableBroker {
  readonly id: number;
  readonly rack: string | null;
  readonly fenced: boolean;
}

function randomInt(random: () => number, bound: number): number {
  return Math.min(bound - 1, Math.floor(random() * bound));
}

function shuffle<T>(items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(random, i + 1);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
}

/** Brokers handed out once each per iteration epoch, starting one further every epoch. */
class BrokerList {
  readonly brokers: number[] = [];
  private index = 0;
  private offset = 0;
  private epoch = 0;

  initialize(random: () => number): void {
    if (this.brokers.length === 0) return;
    this.brokers.sort((a, b) => a - b);
    this.offset = randomInt(random, this.brokers.length);
  }

  shuffle(random: () => number): void {
    shuffle(this.brokers, random);
  }

  /** The next broker of this epoch, -1 once every broker was handed out. */
  next(epoch: number): number {
    const size = this.brokers.length;
    if (size === 0) return -1;
    if (this.epoch !== epoch) {
      this.epoch = epoch;
      this.index = 0;
      this.offset = (this.offset + 1) % size;
    }
    if (this.index >= size) return -1;
    const broker = this.brokers[(this.index + this.offset) % size] as number;
    this.index++;
    return broker;
  }
}

class Rack {
  readonly fenced = new BrokerList();
  readonly unfenced = new BrokerList();

  next(epoch: number): number {
    const broker = this.unfenced.next(epoch);
    return broker >= 0 ? broker : this.fenced.next(epoch);
  }
}

function unableToReplicate(replicationFactor: number, reason: string): KafkaError {
  return new KafkaError(Errors.INVALID_REPLICATION_FACTOR, `Unable to replicate the partition ${replicationFactor} time(s): ${reason}`);
}

/** Places `count` partitions of `replicationFactor` replicas; INVALID_REPLICATION_FACTOR when it cannot. */
export function placeReplicas(
  brokers: readonly UsableBroker[],
  count: number,
  replicationFactor: number,
  random: () => number,
): number[][] {
  if (replicationFactor <= 0) {
    throw unableToReplicate(replicationFactor, `Invalid replication factor ${replicationFactor}: the replication factor must be positive.`);
  }
  const unfencedCount = brokers.filter((b) => !b.fenced).length;
  if (unfencedCount === 0) throw unableToReplicate(replicationFactor, 'All brokers are currently fenced.');
  if (replicationFactor > brokers.length) {
    throw unableToReplicate(
      replicationFactor,
      `The target replication factor of ${replicationFactor} cannot be reached because only ${brokers.length} broker(s) are registered.`,
    );
  }
  const racks = new Map<string | null, Rack>();
  for (const b of brokers) {
    let rack = racks.get(b.rack);
    if (rack === undefined) {
      rack = new Rack();
      racks.set(b.rack, rack);
    }
    (b.fenced ? rack.fenced : rack.unfenced).brokers.push(b.id);
  }
  for (const rack of racks.values()) {
    rack.fenced.initialize(random);
    rack.unfenced.initialize(random);
  }
  // No rack sorts first, as Kafka's OptionalStringComparator puts Optional.empty first.
  const rackNames = [...racks.keys()].sort((a, b) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1));
  let offset = randomInt(random, rackNames.length);
  let epoch = 0;
  const rackAt = (i: number): Rack => racks.get(rackNames[i] as string | null) as Rack;
  const out: number[][] = [];
  for (let p = 0; p < count; p++) {
    // Once as many partitions as unfenced brokers were placed, shuffle so the next round does
    // not repeat the same assignments.
    if (epoch === unfencedCount && unfencedCount > 1) {
      shuffle(rackNames, random);
      for (const rack of racks.values()) {
        rack.fenced.shuffle(random);
        rack.unfenced.shuffle(random);
      }
      epoch = 0;
    }
    if (offset === rackNames.length) offset = 0;
    const replicas: number[] = [];
    let firstRack = offset;
    for (;;) {
      const leader = rackAt(firstRack).unfenced.next(epoch);
      if (leader >= 0) {
        replicas.push(leader);
        break;
      }
      firstRack = (firstRack + 1) % rackNames.length;
    }
    let rackIndex = offset;
    for (let r = 1; r < replicationFactor; r++) {
      let broker = -1;
      do {
        if (rackIndex === firstRack) firstRack = -1;
        else broker = rackAt(rackIndex).next(epoch);
        rackIndex = (rackIndex + 1) % rackNames.length;
      } while (broker < 0);
      replicas.push(broker);
    }
    epoch++;
    offset++;
    out.push(replicas);
  }
  return out;
}
