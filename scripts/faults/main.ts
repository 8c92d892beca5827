/**
 * The long fault soak: `npm run test:faults -- --duration <seconds> [--seed S]`. The same run
 * as the short one of `npm run test:cluster` (test/cluster/soak.ts), with a longer schedule.
 * Prints the nemesis' steps as they happen and the summary; exits 1 on any violation.
 * Without root it prints a loud SKIP (and fails under CI=true).
 *
 * To chase one kind of fault: `--kinds kill-leader,disk-full` (test/cluster/nemesis.ts names
 * them) and `--clients kafkajs,java`. SLUICE_FAULTS_PACKAGE=<dir> runs the nodes from another
 * build (a directory with bin/ and a built dist/).
 */
import { parseArgs } from 'node:util';
import { randomSeed } from '../../test/cluster/prng.ts';
import { FAULT_KINDS, type FaultKind } from '../../test/cluster/nemesis.ts';
import { faultSetup, reportMissing } from '../../test/cluster/setup.ts';
import { type ClientName, runSoak } from '../../test/cluster/soak.ts';
import { topologyUnavailable } from '../../test/cluster/topology.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '600' },
    seed: { type: 'string' },
    kinds: { type: 'string' },
    clients: { type: 'string' },
  },
});
const durationS = Number(values.duration);
if (!Number.isFinite(durationS) || durationS <= 0) {
  console.error(`--duration: seconds, got ${values.duration}`);
  process.exit(2);
}
const seed = values.seed === undefined ? randomSeed() : Number(values.seed);

const why = topologyUnavailable();
if (why !== null) {
  console.error(`\n!!!!! SKIP: the fault soak needs its network namespaces: ${why} !!!!!\n`);
  process.exit(process.env.CI === 'true' ? 1 : 0);
}
const setup = faultSetup();
reportMissing(setup, (line) => console.error(line));
const kinds = values.kinds === undefined ? setup.kinds : (values.kinds.split(',') as FaultKind[]);
const clients = values.clients === undefined ? setup.clients : (values.clients.split(',') as ClientName[]);
for (const k of kinds) {
  if (!FAULT_KINDS.includes(k)) {
    console.error(`--kinds: ${k} is none of ${FAULT_KINDS.join(', ')}`);
    process.exit(2);
  }
}
const report = await runSoak({
  durationMs: durationS * 1000,
  seed,
  clients,
  kinds,
  eiofs: setup.eiofs,
  log: (line) => console.log(line),
});
console.log(report.summary);
process.exit(report.result.violations.length === 0 ? 0 : 1);
