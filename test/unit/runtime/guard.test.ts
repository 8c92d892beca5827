import assert from 'node:assert/strict';
import { guarded, runGuarded, schedulePeriodic } from '../../../src/runtime/guard.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

describe('guarded background work', () => {
  it('reports a synchronous throw with what failed, then runs the recovery', () => {
    const seen: string[] = [];
    runGuarded(
      (err, what) => seen.push(`${what}: ${(err as Error).message}`),
      'rebalance of g',
      () => {
        throw new Error('boom');
      },
      () => seen.push('recovered'),
    );
    assert.deepEqual(seen, ['rebalance of g: boom', 'recovered']);
  });

  it('reports a rejection of an async task without an unhandled rejection', async () => {
    const seen: string[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on('unhandledRejection', onUnhandled);
    try {
      guarded(
        (_err, what) => seen.push(what),
        'loading p-3',
        async () => {
          await new Promise((resolve) => setImmediate(resolve));
          throw new Error('late');
        },
      )();
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    assert.deepEqual(seen, ['loading p-3']);
    assert.deepEqual(unhandled, []);
  });

  it('survives a failure sink that throws itself', () => {
    assert.doesNotThrow(() =>
      runGuarded(
        () => {
          throw new Error('sink');
        },
        'x',
        () => {
          throw new Error('task');
        },
      ),
    );
  });

  it('does not call the sink when the task succeeds', async () => {
    let calls = 0;
    runGuarded(
      () => {
        calls++;
      },
      'ok',
      async () => 1,
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(calls, 0);
  });

  it('schedulePeriodic: runs a task every interval after the previous run settles, through failures, until stopped', async () => {
    const clock = new ManualClock(0);
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    const failures: string[] = [];
    let runs = 0;
    let release: () => void = () => {};
    const stop = schedulePeriodic(
      clock,
      100,
      (err, what) => failures.push(`${what}: ${(err as Error).message}`),
      'sweep',
      () => {
        runs++;
        if (runs === 1) throw new Error('first run fails');
        return new Promise<void>((resolve) => (release = resolve));
      },
    );
    clock.advance(99);
    assert.equal(runs, 0);
    clock.advance(1);
    await settle();
    assert.deepEqual([runs, failures], [1, ['sweep: first run fails']], 'a failure is reported and the schedule goes on');
    clock.advance(100);
    assert.equal(runs, 2);
    clock.advance(500);
    assert.equal(runs, 2, 'the next run waits for the one in progress');
    stop();
    release();
    await settle();
    clock.advance(1000);
    assert.equal(runs, 2, 'nothing runs once stopped, not even after a run in progress');
  });
});
