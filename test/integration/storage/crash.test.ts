import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PartitionLog } from '../../../storage/index.ts';
import { BackgroundErrors, headers, logConfig, recordsOf, withTempDir } from '../../helpers/storage.ts';

const writer = fileURLToPath(new URL('./fixtures/crash-writer.ts', import.meta.url));
const ROUNDS = 5;

/** Runs the writer until a random moment, SIGKILLs it and returns the last offset it reported flushed. */
async function runAndKill(dir: string, recoveryPoint: number, killAfterMs: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', writer, dir, String(recoveryPoint)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let flushed = recoveryPoint;
  let buffered = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const [word, value] = buffered.slice(0, nl).split(' ');
        buffered = buffered.slice(nl + 1);
        if (word === 'ready')
          setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, killAfterMs);
        if (word === 'flushed') flushed = Number(value);
      }
    });
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer exited early: ${code}`));
    });
  });
  await exited;
  return flushed;
}

describe('storage/log: crash test (SIGKILL while appending)', function () {
  this.timeout(120_000);

  it('keeps every flushed batch, shows no partial batch and keeps offsets contiguous', () =>
    withTempDir(async (root) => {
      const dir = join(root, 'crash-0');
      let recoveryPoint = 0;
      let previousEnd = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const flushed = await runAndKill(dir, recoveryPoint, 150 + Math.floor(Math.random() * 400));
        const log = await PartitionLog.open({
          dir,
          config: logConfig({ segmentBytes: 32 * 1024, indexIntervalBytes: 512 }),
          cleanShutdown: false,
          recoveryPoint: flushed,
          onBackgroundError: new BackgroundErrors().sink,
        });
        assert.ok(log.logEndOffset >= flushed, `round ${round}: log end ${log.logEndOffset} below flushed ${flushed}`);
        assert.ok(log.logEndOffset >= previousEnd, `round ${round}: lost data acknowledged as flushed before`);
        let offset = 0;
        let expectNext = 0;
        while (offset < log.logEndOffset) {
          const r = await log.read(offset, 256 * 1024);
          assert.ok(r.records.length > 0);
          for (const h of headers(r.records)) {
            assert.equal(h.baseOffset, expectNext, 'offsets are contiguous');
            expectNext = h.nextOffset;
          }
          for (const rec of await recordsOf(r.records)) assert.equal(rec.value!.split(':')[0], String(rec.offset));
          offset = r.nextOffset;
        }
        assert.equal(expectNext, log.logEndOffset);
        previousEnd = flushed;
        recoveryPoint = log.recoveryPoint;
        await log.close();
      }
      assert.ok(previousEnd > 0, 'the writer flushed something');
    }));
});
