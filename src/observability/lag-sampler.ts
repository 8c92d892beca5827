/**
 * Samples the lag of the consumer groups this node coordinates, every
 * metrics.lag.sample.interval.ms: in records (high watermark minus committed offset) and in
 * time (the timestamp of the oldest unconsumed record, so that its age keeps growing between
 * samples while a group is stopped). Each group keeps a bounded ring of samples
 * (metrics.lag.history.ms of them) for the admin API's lag-over-time plot.
 *
 * A group is described over the wire, as an admin client would (src/client/groups.ts): its
 * partitions may be led by other nodes, and what a tool sees is what the node reports.
 */
import type { PartitionLag } from '../client/groups.ts';
import type { Clock } from '../runtime/clock.ts';
import { type FailureSink, schedulePeriodic } from '../runtime/guard.ts';
import type { GroupLagPoint } from './metrics.ts';

export interface LagSample {
  readonly atMs: number;
  /** Per partition of the group, in the order of the group's description. */
  readonly partitions: readonly { topic: string; partition: number; lag: number; lagMs: number }[];
}

export interface LagSamplerOptions {
  /** The groups this node coordinates now. */
  groups(): readonly string[];
  /** The group's lag per partition; rejects for a group that no longer exists. */
  describe(groupId: string): Promise<readonly PartitionLag[]>;
  readonly clock: Clock;
  readonly intervalMs: number;
  readonly historyMs: number;
  readonly onError: FailureSink;
}

/** Groups described at once: a node may coordinate thousands, each a few round trips. */
const CONCURRENT_DESCRIBES = 8;

export class ConsumerLagSampler {
  private readonly latest = new Map<string, readonly GroupLagPoint[]>();
  private readonly histories = new Map<string, LagSample[]>();
  private stopPeriodic: (() => void) | null = null;
  private readonly historyLength: number;

  constructor(private readonly options: LagSamplerOptions) {
    this.historyLength = Math.max(1, Math.floor(options.historyMs / options.intervalMs));
  }

  start(): void {
    const { clock, intervalMs, onError } = this.options;
    this.stopPeriodic = schedulePeriodic(clock, intervalMs, onError, 'sampling consumer group lag', () => this.sample());
  }

  stop(): void {
    this.stopPeriodic?.();
    this.stopPeriodic = null;
  }

  /** The last sample of every group, for /metrics. */
  points(): GroupLagPoint[] {
    return [...this.latest.values()].flat();
  }

  /** A group's samples, oldest first; empty for a group not sampled (yet). */
  history(groupId: string): readonly LagSample[] {
    return this.histories.get(groupId) ?? [];
  }

  /** Samples every coordinated group once; groups gone since the last run are forgotten. */
  async sample(): Promise<void> {
    const groups = [...this.options.groups()];
    const current = new Set(groups);
    for (const g of [...this.latest.keys()]) if (!current.has(g)) this.forget(g);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < groups.length) {
        const group = groups[next++]!;
        await this.sampleGroup(group);
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENT_DESCRIBES, groups.length) }, worker));
  }

  private async sampleGroup(group: string): Promise<void> {
    let partitions: readonly PartitionLag[];
    try {
      partitions = await this.options.describe(group);
    } catch {
      // Deleted, or moved to another coordinator between the listing and the describe: the
      // next sample sees which.
      this.forget(group);
      return;
    }
    const atMs = this.options.clock.now();
    const committed = partitions.filter((p) => p.lag !== null);
    this.latest.set(
      group,
      committed.map((p) => ({
        group,
        topic: p.topic,
        partition: p.partition,
        lag: p.lag!,
        oldestUnconsumedTimestampMs: p.oldestUnconsumedTimestampMs,
      })),
    );
    let history = this.histories.get(group);
    if (history === undefined) {
      history = [];
      this.histories.set(group, history);
    }
    history.push({
      atMs,
      partitions: committed.map((p) => ({
        topic: p.topic,
        partition: p.partition,
        lag: p.lag!,
        lagMs: p.oldestUnconsumedTimestampMs === null ? 0 : Math.max(0, atMs - p.oldestUnconsumedTimestampMs),
      })),
    });
    if (history.length > this.historyLength) history.splice(0, history.length - this.historyLength);
  }

  private forget(group: string): void {
    this.latest.delete(group);
    this.histories.delete(group);
  }
}
