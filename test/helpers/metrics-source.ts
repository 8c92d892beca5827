import type { MetricsSource } from '../../src/observability/metrics.ts';

/** A node with nothing to report: no partitions, connections, groups or Raft state; every topic exists unless told. */
export function idleMetricsSource(topicExists: (topic: string) => boolean = () => true): MetricsSource {
  return {
    topicExists,
    partitionStates: () => ({ online: 0, offline: 0, underReplicated: 0, underMinIsr: 0 }),
    hostedPartitions: () => [],
    connectionsByListener: () => new Map(),
    groups: () => [],
    groupLag: () => [],
    raft: () => null,
    nowMs: () => 0,
  };
}
