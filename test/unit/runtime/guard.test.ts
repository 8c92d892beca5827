import assert from 'node:assert/strict';
import { guarded, runGuarded } from '../../../src/runtime/guard.ts';

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
});
