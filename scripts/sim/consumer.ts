// The simulation's consumer group: members that join and leave on the seed's schedule, each
// a new member (a new member id) every time it comes back, so that the group rebalances
// while the nemesis kills and partitions the coordinator. A member reads the partitions its
// generation gives it from the group's committed offsets (from the start when there are
// none), commits its positions now and then and reads them back, and commits once more
// before it rejoins or leaves, as Kafka's consumer does when its partitions are revoked.

import type { KafkaCluster } from '../../src/client/cluster.ts';
import { type ClientContext, clusterOf, fetchRecords, note, sleep } from './clients.ts';
import { SimGroupMember, committedOffsets } from './group-member.ts';
import type { InvariantChecker } from './invariants.ts';

/** How long a member stays before it leaves, and how long it is away before it joins again. */
const STAY_MS: readonly [number, number] = [3000, 15_000];
const AWAY_MS: readonly [number, number] = [200, 3000];
/** The members after the first join within this much of the start. */
const FIRST_JOIN_MS = 8000;

export class SimConsumerGroup {
  /** Per partition, every record a member read, by offset. */
  readonly records = new Map<number, Map<number, string>>();
  readonly problems: string[] = [];

  constructor(
    private readonly members: readonly ClientContext[],
    private readonly checker: InvariantChecker,
    private readonly topic: string,
    private readonly partitions: number,
    private readonly group: string,
  ) {
    for (let p = 0; p < partitions; p++) this.records.set(p, new Map());
  }

  async run(): Promise<void> {
    await Promise.all(this.members.map((ctx, i) => this.comeAndGo(ctx, i)));
  }

  /**
   * The group's committed offsets after run(), on a connection of its own, asking again while
   * the coordinator moves or loads, as a client would.
   */
  async committedNow(ctx: ClientContext): Promise<Map<number, number>> {
    const cluster = clusterOf(ctx);
    const all = Array.from({ length: this.partitions }, (_, p) => p);
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await committedOffsets(await cluster.coordinatorConnection(this.group), this.checker, this.group, this.topic, all);
        } catch (err) {
          if (attempt >= 20 || !ctx.running()) throw err;
          note(ctx, `OffsetFetch (attempt ${attempt}) failed: ${(err as Error).message}`);
          await sleep(ctx.clock, 500);
        }
      }
    } finally {
      await cluster.close();
    }
  }

  private async comeAndGo(ctx: ClientContext, index: number): Promise<void> {
    const cluster = clusterOf(ctx);
    try {
      if (index > 0) await sleep(ctx.clock, ctx.prng.range(0, FIRST_JOIN_MS));
      while (ctx.active()) {
        await this.membership(ctx, cluster, ctx.clock.monotonicMs() + ctx.prng.range(...STAY_MS));
        if (ctx.active()) await sleep(ctx.clock, ctx.prng.range(...AWAY_MS));
      }
    } finally {
      await cluster.close();
    }
  }

  /** One member from its first JoinGroup to its LeaveGroup, through every rebalance between. */
  private async membership(ctx: ClientContext, cluster: KafkaCluster, leaveAtMs: number): Promise<void> {
    const member = new SimGroupMember(ctx, cluster, this.checker, this.group, this.topic);
    const staying = () => ctx.active() && ctx.clock.monotonicMs() < leaveAtMs;
    while (staying()) {
      let joined: boolean;
      try {
        joined = await member.join();
      } catch (err) {
        note(ctx, `join failed: ${(err as Error).message}`);
        member.dropCoordinator();
        await sleep(ctx.clock, ctx.prng.range(100, 400));
        continue;
      }
      if (joined) await this.consume(ctx, cluster, member, () => staying() && !member.needsRejoin);
    }
    await member.leave();
  }

  /** Reads the member's partitions while `live()`, then commits where it got to. */
  private async consume(ctx: ClientContext, cluster: KafkaCluster, member: SimGroupMember, live: () => boolean): Promise<void> {
    const positions = await this.startPositions(ctx, member, live);
    if (positions === null) return;
    await Promise.all([
      ...member.assignment.map((p) => this.fetchLoop(ctx, cluster, p, positions, live)),
      this.commitLoop(ctx, member, positions, live),
    ]);
    try {
      await member.commit(positions);
    } catch (err) {
      note(ctx, `commit before rejoining failed: ${(err as Error).message}`);
    }
  }

  /** Where each assigned partition starts: the group's committed offset, else the log start (auto.offset.reset=earliest). */
  private async startPositions(ctx: ClientContext, member: SimGroupMember, live: () => boolean): Promise<Map<number, number> | null> {
    if (member.assignment.length === 0) return new Map();
    while (live()) {
      try {
        const committed = await member.committed(member.assignment);
        return new Map(member.assignment.map((p) => [p, committed.get(p) ?? 0]));
      } catch (err) {
        note(ctx, `OffsetFetch failed: ${(err as Error).message}`);
        await sleep(ctx.clock, ctx.prng.range(100, 400));
      }
    }
    return null;
  }

  private async fetchLoop(ctx: ClientContext, cluster: KafkaCluster, p: number, positions: Map<number, number>, live: () => boolean) {
    const seen = this.records.get(p)!;
    while (live()) {
      const position = positions.get(p)!;
      try {
        const got = await fetchRecords(cluster, this.topic, p, position, 200);
        for (const [offset, value] of got.records) {
          if (offset < position) continue;
          const prior = seen.get(offset);
          if (prior !== undefined && prior !== value) this.problems.push(`p${p} offset ${offset} read as ${prior}, later as ${value}`);
          seen.set(offset, value);
          positions.set(p, offset + 1);
        }
      } catch (err) {
        note(ctx, `fetch p${p} at ${position} failed: ${(err as Error).message}`);
        await sleep(ctx.clock, ctx.prng.range(50, 300));
      }
    }
  }

  /** Commits the positions now and then, and reads every partition's committed offset back. */
  private async commitLoop(ctx: ClientContext, member: SimGroupMember, positions: Map<number, number>, live: () => boolean) {
    const all = Array.from({ length: this.partitions }, (_, p) => p);
    while (live()) {
      await sleep(ctx.clock, ctx.prng.range(200, 600));
      if (!live()) return;
      try {
        await member.commit(new Map(positions));
        await member.committed(all);
      } catch (err) {
        note(ctx, `commit failed: ${(err as Error).message}`);
      }
    }
  }
}
