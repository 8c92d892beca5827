// What one seed of a simulation gives back to the runner.

import type { Violation } from './invariants.ts';

export interface SimResult {
  seed: number;
  /** 'raft': the metadata quorum alone; 'cluster': whole brokers with clients. */
  level: 'raft' | 'cluster';
  /** Digest of every event run: equal for two runs of a seed exactly when they replayed alike. */
  hash: string;
  steps: number;
  virtualMs: number;
  violations: Violation[];
  /** The last events before the end of the run, readable. */
  trace: string;
  /** Faults injected and work done, one line. */
  summary: string;
}
