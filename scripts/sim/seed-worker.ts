// One worker thread of `npm run sim -- --jobs N`: runs the seeds main.ts sends it, one at a
// time, and answers each with its SimResult. A seed's run is the same in a worker as in the
// main thread: the simulation keeps its clock, randomness and network to itself.
import { parentPort, workerData } from 'node:worker_threads';
import { type Level, runSeed, type SeedOptions } from './run.ts';

const { level, options } = workerData as { level: Level; options: Omit<SeedOptions, 'seed'> };
parentPort!.on('message', (seed: number) => {
  runSeed(level, { ...options, seed }).then(
    (result) => parentPort!.postMessage({ seed, result }),
    (err: unknown) => parentPort!.postMessage({ seed, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
