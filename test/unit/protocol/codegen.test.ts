import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateAll, listGenerated, outputDir, specAvailable, specDir, writeAll } from '../../../scripts/codegen/main.ts';
import { kebabCase } from '../../../scripts/codegen/emit.ts';
import { parseVersions } from '../../../scripts/codegen/spec.ts';

describe('codegen', () => {
  it('parses version ranges as the spec writes them', () => {
    assert.deepEqual(parseVersions('3+'), { lo: 3, hi: 32767 });
    assert.deepEqual(parseVersions('0-4'), { lo: 0, hi: 4 });
    assert.deepEqual(parseVersions('2'), { lo: 2, hi: 2 });
    assert.equal(parseVersions('none'), null);
    assert.throws(() => parseVersions('x'));
  });

  it('names modules in kebab case', () => {
    assert.equal(kebabCase('ApiVersions'), 'api-versions');
    assert.equal(kebabCase('OffsetForLeaderEpoch'), 'offset-for-leader-epoch');
    assert.equal(kebabCase('KRaftVersionRecord'), 'k-raft-version-record');
  });

  // The spec is found by scripts/codegen/spec.ts (a sibling checkout of the reference data). Without it this test is a loud
  // SKIP locally and a failure under CI=true, where the spec must be checked out.
  it('committed protocol/messages equal a fresh generation from the Kafka spec', function () {
    if (!specAvailable()) {
      const message = `the Kafka spec is not at ${specDir()} (no messages/*.json there)`;
      if (process.env.CI === 'true') assert.fail(`codegen freshness cannot be checked under CI: ${message}`);
      console.error(`\n*** SKIP: codegen freshness: ${message} ***\n`);
      this.skip();
    }
    const dir = mkdtempSync(join(tmpdir(), 'sluice-codegen-'));
    try {
      writeAll(generateAll(), dir);
      const fresh = listGenerated(dir);
      const committed = listGenerated(outputDir());
      assert.deepEqual(committed, fresh, 'the set of generated files differs: run npm run codegen');
      for (const rel of fresh) {
        const expected = readFileSync(join(dir, rel), 'utf8');
        const actual = readFileSync(join(outputDir(), rel), 'utf8');
        assert.ok(actual === expected, `protocol/messages/${rel} differs from the generator's output: run npm run codegen`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
