// A CI-sized fuzz run: two fixed seeds against a real broker process (scripts/fuzz), about
// 50 s in all. Any finding fails the test; its reproducer is under .cache/fuzz/ci.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runFuzz } from '../../../scripts/fuzz/runner.ts';
import { formatSummary } from '../../../scripts/fuzz/main.ts';

const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
const OUT = resolve(REPO, '.cache/fuzz/ci');

describe('protocol fuzzing against a real broker', function () {
  // 2 x 25 s of fuzzing, plus broker start-up, a planned restart and the final checks.
  this.timeout(240_000);

  for (const [seed, heavy] of [
    [20240611, true],
    [7, false],
  ] as const) {
    it(`seed ${seed}: mutated and valid requests find nothing (no crash, hang, lost record or accepted corrupt batch)`, async () => {
      const summary = await runFuzz({
        durationS: 25,
        seed,
        outDir: OUT,
        restartEveryS: 12,
        heavy,
        log: () => undefined,
      });
      const report = formatSummary(summary);
      // The fuzzer manages a few thousand frames/s on two cores; far fewer means its fast
      // path (request pool, pipelining, bounded checks) broke.
      assert.ok(summary.framesSent > 5000, `only ${summary.framesSent} frames sent\n${report}`);
      assert.equal(summary.findings.length, 0, report);
    });
  }
});
