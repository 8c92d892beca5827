import { strict as assert } from 'node:assert';
import { sleep, waitUntil } from '../../../../src/tools/retry/pacing.ts';

describe('retry pacing', () => {
  it('waits until the time given, heartbeating at least every half second', async () => {
    let beats = 0;
    const start = Date.now();
    const due = await waitUntil(start + 1200, {
      heartbeat: async () => {
        beats++;
      },
      interrupted: () => false,
    });
    assert.equal(due, true);
    assert.ok(Date.now() - start >= 1200);
    assert.ok(beats >= 3, `${beats} heartbeats`);
  });

  it('returns false when interrupted, within a slice', async () => {
    let interrupted = false;
    setTimeout(() => {
      interrupted = true;
    }, 100);
    const start = Date.now();
    const due = await waitUntil(start + 60_000, { heartbeat: async () => undefined, interrupted: () => interrupted });
    assert.equal(due, false);
    assert.ok(Date.now() - start < 1000, `returned after ${Date.now() - start} ms`);
  });

  it('returns false at once when the signal aborts', async () => {
    const stopping = new AbortController();
    setTimeout(() => stopping.abort(), 50);
    const start = Date.now();
    const due = await waitUntil(start + 60_000, {
      heartbeat: async () => undefined,
      interrupted: () => stopping.signal.aborted,
      signal: stopping.signal,
    });
    assert.equal(due, false);
    assert.ok(Date.now() - start < 200, `returned after ${Date.now() - start} ms`);
  });

  it('lets a heartbeat failure through', async () => {
    await assert.rejects(
      waitUntil(Date.now() + 10_000, {
        heartbeat: async () => {
          throw new Error('rebalancing');
        },
        interrupted: () => false,
      }),
      /rebalancing/,
    );
  });

  it('sleep resolves early on abort, and at once when already aborted', async () => {
    const aborted = new AbortController();
    aborted.abort();
    const start = Date.now();
    await sleep(10_000, aborted.signal);
    assert.ok(Date.now() - start < 100);
  });
});
