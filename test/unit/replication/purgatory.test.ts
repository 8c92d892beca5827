import assert from 'node:assert/strict';
import { DelayedOperation, DelayedOperationPurgatory } from '../../../src/replication/purgatory.ts';
import { ManualClock } from '../../helpers/manual-clock.ts';

class Op extends DelayedOperation {
  ready = false;
  result: 'completed' | 'expired' | null = null;
  private expired = false;

  tryComplete(): boolean {
    return this.ready ? this.forceComplete() : false;
  }

  protected override onExpiration(): void {
    this.expired = true;
  }

  protected onComplete(): void {
    this.result = this.expired ? 'expired' : 'completed';
  }
}

describe('DelayedOperationPurgatory', () => {
  it('completes an operation at once when its condition already holds', () => {
    const clock = new ManualClock();
    const purgatory = new DelayedOperationPurgatory<Op>('test', clock);
    const op = new Op(1000);
    op.ready = true;
    assert.equal(purgatory.tryCompleteElseWatch(op, ['a']), true);
    assert.equal(op.result, 'completed');
    assert.equal(purgatory.size, 0);
    assert.equal(clock.pendingTimers, 0);
  });

  it('parks an operation until a watched key is checked and its condition holds', () => {
    const clock = new ManualClock();
    const purgatory = new DelayedOperationPurgatory<Op>('test', clock);
    const op = new Op(1000);
    assert.equal(purgatory.tryCompleteElseWatch(op, ['a', 'b']), false);
    assert.equal(purgatory.size, 1);
    assert.equal(purgatory.checkAndComplete('a'), 0, 'condition not met yet');
    op.ready = true;
    assert.equal(purgatory.checkAndComplete('c'), 0, 'an unrelated key does not wake it');
    assert.equal(purgatory.checkAndComplete('b'), 1);
    assert.equal(op.result, 'completed');
    assert.equal(purgatory.size, 0);
    assert.equal(purgatory.watched('a'), 0, 'unwatched from every key');
    assert.equal(clock.pendingTimers, 0, 'its timer is cancelled');
  });

  it('expires an operation after its delay, exactly once', () => {
    const clock = new ManualClock();
    const purgatory = new DelayedOperationPurgatory<Op>('test', clock);
    const op = new Op(500);
    purgatory.tryCompleteElseWatch(op, ['a']);
    clock.advance(499);
    assert.equal(op.result, null);
    clock.advance(1);
    assert.equal(op.result, 'expired');
    assert.equal(purgatory.size, 0);
    op.ready = true;
    assert.equal(purgatory.checkAndComplete('a'), 0);
    assert.equal(op.forceComplete(), false);
  });

  it('completeAll finishes every operation watching a key', () => {
    const clock = new ManualClock();
    const purgatory = new DelayedOperationPurgatory<Op>('test', clock);
    const ops = [new Op(100), new Op(100), new Op(100)];
    purgatory.tryCompleteElseWatch(ops[0]!, ['a']);
    purgatory.tryCompleteElseWatch(ops[1]!, ['a', 'b']);
    purgatory.tryCompleteElseWatch(ops[2]!, ['b']);
    purgatory.completeAll('a');
    assert.deepEqual(
      ops.map((o) => o.result),
      ['completed', 'completed', null],
    );
    assert.equal(purgatory.size, 1);
  });
});
