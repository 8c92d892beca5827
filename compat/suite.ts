import { CLIENTS } from './clients/index.ts';
import type { Driver } from './driver.ts';
import { Matrix, writeMatrixPart } from './matrix.ts';
import { SCENARIOS, requiredCapabilities } from './scenarios.ts';
import { Fixture } from './support/fixture.ts';
import { type TargetKey, selectTarget } from './targets.ts';

// Every scenario with every client against one target broker (compat/targets.ts). Each target
// has a file of its own (compat/against-*.test.ts), so that mocha runs two targets at once in
// worker processes (compat/mocharc.cjs): their time is mostly spent waiting on brokers and
// clients. Each file leaves its part of the client x scenario matrix in .cache, and
// compat/matrix-fixture.ts prints the whole matrix when the run ends.
//   COMPAT_BOOTSTRAP=host:port[,host:port...]  run against that broker (or cluster) only
//   COMPAT_TARGETS=sluice,kafka,sluice-cluster,kafka-cluster  run against these targets only
//   COMPAT_CLIENTS=kafkajs,kcat run only these clients

const ci = process.env.CI === 'true';
const only = process.env.COMPAT_CLIENTS?.split(',').map((c) => c.trim());
const clients = CLIENTS.filter((c) => !only || only.includes(c.info.client));

/** The suite against the target `key` names, when this run selects it; nothing otherwise. */
export function compatSuite(key: TargetKey): void {
  const target = selectTarget(process.env, key);
  if (target === null) return;
  const matrix = new Matrix(
    [target.name],
    clients.map((c) => c.info.client),
    SCENARIOS.map((s) => s.id),
  );
  const loudSkip = (what: string, why: string) => {
    console.error(`\n!!! SKIP ${what}: ${why}\n`);
    matrix.note(`SKIP ${what}: ${why}`);
  };

  describe(`compat: third-party clients against ${target.name}`, function () {
    let bootstrap = '';
    let fixture: Fixture | null = null;
    let runnable = 0;

    after(async function () {
      this.timeout(90_000);
      try {
        await fixture?.close();
        if (runnable > 0) await target.stop();
      } finally {
        writeMatrixPart(key, matrix);
      }
    });
    if (target.unavailable) {
      loudSkip(`every scenario against ${target.name}`, target.unavailable);
      for (const c of clients) for (const s of SCENARIOS) matrix.set(target.name, c.info.client, s.id, 'SKIP');
      return;
    }

    before(async function () {
      if (runnable === 0) return;
      this.timeout(240_000);
      bootstrap = await target.start();
      fixture = new Fixture(bootstrap);
    });

    for (const client of clients) {
      const info = client.info;
      describe(info.client, function () {
        const missing = client.unavailable();
        if (missing && !ci) {
          loudSkip(`${info.client} against ${target.name}`, missing);
          for (const s of SCENARIOS) matrix.set(target.name, info.client, s.id, 'SKIP');
          return;
        }
        let driver: Driver | null = null;
        after(async function () {
          this.timeout(30_000);
          await driver?.close();
        });

        for (const s of SCENARIOS) {
          const notApplicable = s.notApplicable(info);
          if (notApplicable) {
            matrix.set(target.name, info.client, s.id, 'n/a');
            matrix.noteOnce(`n/a: ${info.client} ${s.id}: ${notApplicable}.`);
            continue;
          }
          const lacking = requiredCapabilities(s, info).filter((c) => !target.capabilities.has(c));
          if (lacking.length > 0) {
            matrix.set(target.name, info.client, s.id, 'not yet');
            continue;
          }
          runnable++;
          matrix.set(target.name, info.client, s.id, 'FAIL');
          it(`${s.id} with ${info.client} against ${target.name}`, async function () {
            this.timeout(s.timeoutMs);
            // Under CI a missing client is a failure, not a skip.
            if (missing) throw new Error(missing);
            driver ??= client.create(bootstrap);
            let suffix = 0;
            await s.run({
              driver,
              fixture: fixture!,
              bootstrap,
              name: (part) => `compat-${info.client}-${s.id}-${Date.now().toString(36)}${part ? `-${part}` : ''}-${suffix++}`,
            });
            matrix.set(target.name, info.client, s.id, 'PASS');
          });
        }
      });
    }
  });
}
