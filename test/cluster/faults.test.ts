/**
 * The short fault run of `npm test` (`npm run test:cluster`): three real Sluice nodes in
 * network namespaces, kafkajs, librdkafka and Java producers and consumer groups, and a
 * 100-second nemesis schedule (SIGKILLs, a pause, partitions, packet loss, a slow link, a full
 * disk, a failing disk), then the history check (test/cluster/history.ts). The long soak is
 * the same code: `npm run test:faults -- --duration <seconds> [--seed S]`.
 *
 * The seed is random unless SLUICE_FAULTS_SEED gives one; a failing run prints it. Without
 * root (network namespaces) this is a loud SKIP locally and a failure under CI.
 */
import assert from 'node:assert/strict';
import { missingTool } from '../helpers/runtimes.ts';
import { randomSeed } from './prng.ts';
import { faultSetup, reportMissing } from './setup.ts';
import { releaseRuns, runSoak } from './soak.ts';
import { topologyUnavailable } from './topology.ts';

/** Planned fault time; at least one step of every kind, so a step or two more when the holds come out long. */
const FAULTS_MS = 100_000;

describe('cluster under faults: three real nodes, a nemesis and a history checker', function () {
  this.timeout(15 * 60_000);

  after(() => releaseRuns());

  it('loses, duplicates and reorders no acknowledged record, and heals completely, through a short fault schedule', async function () {
    const why = topologyUnavailable();
    if (why !== null) missingTool(this, `the fault suite's network (${why})`, 'run as root with iproute2 and nftables');
    const setup = faultSetup();
    reportMissing(setup, (line) => console.error(line));
    const seed = process.env.SLUICE_FAULTS_SEED === undefined ? randomSeed() : Number(process.env.SLUICE_FAULTS_SEED);
    const report = await runSoak({
      durationMs: FAULTS_MS,
      seed,
      clients: setup.clients,
      kinds: setup.kinds,
      eiofs: setup.eiofs,
      minSteps: setup.kinds.length,
      log: (line) => console.log(`      ${line}`),
    });
    console.log(report.summary.replace(/^/gm, '      '));
    assert.deepEqual(
      report.result.violations.map((v) => `${v.kind}: ${v.detail}`),
      [],
      `violations (seed ${seed}; SLUICE_FAULTS_SEED=${seed} npm run test:cluster reproduces the schedule)`,
    );
  });
});
