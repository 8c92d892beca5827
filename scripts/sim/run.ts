// One seed of either simulation level.

import { runClusterSim } from './cluster-sim.ts';
import { runRaftSim } from './raft-sim.ts';
import type { SimResult } from './result.ts';

export type Level = 'raft' | 'cluster';

export interface SeedOptions {
  seed: number;
  maxSteps?: number;
  durationMs?: number;
  powerFailures?: boolean;
  keepGoing?: boolean;
}

export function runSeed(level: Level, options: SeedOptions): Promise<SimResult> {
  return level === 'raft' ? runRaftSim(options) : runClusterSim(options);
}
