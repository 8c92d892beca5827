// The embedded broker's start-up as a test suite pays it: from `startBroker()` (the module
// already loaded) to the first produce a kafkajs producer gets acknowledged, and to
// `close()` returning. Each sample runs in a fresh Node process, importing the built package
// (dist/, what `npm install sluice` gives) as a user's test file does.
//
// The ceiling, measured in the same process: the same kafkajs producer (connect, send one
// record, acknowledged) against a broker that is already running. That part is the client's
// own cost; what startBroker() adds on top of it is Sluice's. Target: startBroker() to first
// acknowledged produce under 100 ms.
//
// startBroker() runs its own temp dir with unsafe.bypass.fsync (see src/index.ts); `--fsync`
// measures it with every fsync made, as with a data dir of one's own.
// Run: node --import tsx scripts/bench/embedded-startup.ts [--samples N] [--fsync]
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { REPO, ensureBuilt } from '../../test/helpers/sluice-cli.ts';

const { values } = parseArgs({ options: { samples: { type: 'string', default: '10' }, fsync: { type: 'boolean', default: false } } });

interface Sample {
  importMs: number;
  startMs: number;
  firstProduceMs: number;
  closeMs: number;
  warmProduceMs: number;
}

/**
 * One sample, run by plain `node` (no TypeScript loader, which would slow every import):
 * JavaScript, the user's view of the package.
 */
const SAMPLE_JS = `
const t0 = performance.now();
const { startBroker } = await import(process.env.SLUICE_ENTRY);
const { Kafka, logLevel } = await import('kafkajs');
const importMs = performance.now() - t0;
const produceOnce = async (bootstrap, topic) => {
  const producer = new Kafka({ brokers: [bootstrap], logLevel: logLevel.NOTHING }).producer({ allowAutoTopicCreation: true });
  await producer.connect();
  const [result] = await producer.send({ topic, messages: [{ value: 'first' }] });
  if (result?.errorCode !== 0) throw new Error('produce failed: ' + JSON.stringify(result));
  await producer.disconnect();
};
const t1 = performance.now();
const broker = await startBroker(process.env.SLUICE_BENCH_FSYNC === '1' ? { overrides: { 'unsafe.bypass.fsync': false } } : {});
const startMs = performance.now() - t1;
await produceOnce(broker.bootstrap, 'first');
const firstProduceMs = performance.now() - t1;
const t2 = performance.now();
await produceOnce(broker.bootstrap, 'warm');
const warmProduceMs = performance.now() - t2;
const t3 = performance.now();
await broker.close();
const closeMs = performance.now() - t3;
process.stdout.write(JSON.stringify({ importMs, startMs, firstProduceMs, closeMs, warmProduceMs }));
`;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

{
  ensureBuilt();
  const samples: Sample[] = [];
  for (let i = 0; i < Number(values.samples); i++) {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', SAMPLE_JS], {
      cwd: REPO,
      encoding: 'utf8',
      env: {
        ...process.env,
        SLUICE_ENTRY: pathToFileURL(join(REPO, 'dist/src/index.js')).href,
        SLUICE_BENCH_FSYNC: values.fsync ? '1' : '0',
      },
    });
    samples.push(JSON.parse(out) as Sample);
  }
  const m = (k: keyof Sample) => median(samples.map((s) => s[k]));
  const overheadMs = m('firstProduceMs') - m('warmProduceMs');
  const fsyncMode = values.fsync ? 'every fsync made (--fsync)' : "startBroker()'s default: unsafe.bypass.fsync in its temp dir";
  console.log(`embedded start-up, median of ${samples.length} fresh processes (Node ${process.version}), ${fsyncMode}`);
  console.log(
    `  ratio ${(m('warmProduceMs') / m('firstProduceMs')).toFixed(2)}: the client's own connect+produce (ceiling) / startBroker() to first acknowledged produce`,
  );
  console.log(`  startBroker() to first acknowledged produce  ${m('firstProduceMs').toFixed(1)} ms (target < 100 ms)`);
  console.log(`    of which startBroker() resolving            ${m('startMs').toFixed(1)} ms`);
  console.log(`    what start-up adds to the client's cost      ${overheadMs.toFixed(1)} ms`);
  console.log(`  kafkajs connect+produce on a running broker   ${m('warmProduceMs').toFixed(1)} ms`);
  console.log(`  close()                                       ${m('closeMs').toFixed(1)} ms`);
  console.log(`  import of the package and kafkajs             ${m('importMs').toFixed(1)} ms`);
}
