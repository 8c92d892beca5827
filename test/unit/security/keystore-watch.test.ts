import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchKeystores } from '../../../src/security/keystore-watch.ts';
import { eventually } from '../../helpers/wait.ts';

const INTERVAL_MS = 20;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('watchKeystores', () => {
  let dir: string;
  let keystore: string;
  let truststore: string;
  let stops: (() => void)[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sluice-keystore-watch-'));
    keystore = join(dir, 'keystore.pem');
    truststore = join(dir, 'truststore.pem');
    await writeFile(keystore, 'key v1');
    await writeFile(truststore, 'ca v1');
  });
  afterEach(async () => {
    for (const stop of stops) stop();
    stops = [];
    await rm(dir, { recursive: true, force: true });
  });

  function watch(files: string[], onError: (err: Error) => void = (err) => assert.fail(err)): { changes: () => number; stop: () => void } {
    let changes = 0;
    const watcher = watchKeystores(files, () => changes++, { intervalMs: INTERVAL_MS, onError });
    stops.push(() => watcher.stop());
    return { changes: () => changes, stop: () => watcher.stop() };
  }

  /** Lets the watcher take its first look at the files. */
  const settle = (): Promise<void> => sleep(INTERVAL_MS * 3);

  it("sees a file replaced by rename, as an editor or cert-manager's atomic write does", async () => {
    const w = watch([keystore, truststore]);
    await settle();
    await writeFile(join(dir, 'keystore.pem.tmp'), 'key v2');
    await rename(join(dir, 'keystore.pem.tmp'), keystore);
    await eventually('the change to be reported', () => w.changes() === 1, 2000);
    await sleep(INTERVAL_MS * 5);
    assert.equal(w.changes(), 1);
  });

  it('sees a file rewritten in place', async () => {
    const w = watch([keystore, truststore]);
    await settle();
    await writeFile(truststore, 'ca v2');
    await eventually('the change to be reported', () => w.changes() === 1, 2000);
  });

  it('reports a burst of writes to several files once', async () => {
    const w = watch([keystore, truststore]);
    await settle();
    for (let i = 0; i < 4; i++) {
      await writeFile(i % 2 === 0 ? keystore : truststore, `v${i + 2}`);
      await sleep(INTERVAL_MS / 4);
    }
    await eventually('the change to be reported', () => w.changes() === 1, 2000);
    await sleep(INTERVAL_MS * 5);
    assert.equal(w.changes(), 1);
  });

  it('ignores a touch that leaves the content as it was', async () => {
    const w = watch([keystore]);
    await settle();
    const later = new Date(Date.now() + 60_000);
    await utimes(keystore, later, later);
    await writeFile(truststore, 'unwatched');
    await sleep(INTERVAL_MS * 8);
    assert.equal(w.changes(), 0);
  });

  it('reports nothing after stop()', async () => {
    const w = watch([keystore]);
    await settle();
    w.stop();
    await writeFile(keystore, 'key v2');
    await sleep(INTERVAL_MS * 8);
    assert.equal(w.changes(), 0);
  });

  it('passes a read error to onError and goes on watching', async () => {
    const errors: Error[] = [];
    const w = watch([keystore], (err) => errors.push(err));
    await settle();
    await rm(keystore);
    await eventually('the missing file to be reported', () => errors.length > 0, 2000);
    assert.equal((errors[0] as NodeJS.ErrnoException).code, 'ENOENT');
    await writeFile(keystore, 'key v2');
    await eventually('the new file to be reported', () => w.changes() === 1, 2000);
  });
});
