import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { OffsetStore } from '../../../src/coordinator/offset-store.ts';
import type { OffsetAndMetadata } from '../../../src/coordinator/records.ts';

const value = (offset: number): OffsetAndMetadata => ({
  offset: BigInt(offset),
  leaderEpoch: -1,
  metadata: '',
  commitTimestampMs: 0,
  expireTimestampMs: -1,
});

type Op =
  | { kind: 'commit'; partition: number; producer: number | null }
  | { kind: 'tombstone'; partition: number }
  | { kind: 'end'; producer: number; commit: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('commit' as const), partition: fc.nat(2), producer: fc.option(fc.nat(2)) }),
  fc.record({ kind: fc.constant('tombstone' as const), partition: fc.nat(2) }),
  fc.record({ kind: fc.constant('end' as const), producer: fc.nat(2), commit: fc.boolean() }),
);

describe('coordinator/offset-store: committed and transactional offsets', () => {
  it('a partition reads the last offset written that is visible (a plain commit at once, a transactional one at its COMMIT), since its last tombstone (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const store = new OffsetStore();
        // The model: every write with its log offset; a transactional write becomes visible when its producer commits.
        const writes: { partition: number; at: number; producer: number | null; visible: boolean; dropped: boolean }[] = [];
        const lastTombstone = new Map<number, number>();
        ops.forEach((o, at) => {
          if (o.kind === 'commit') {
            store.replay('g', 't', o.partition, value(at), at, o.producer === null ? null : BigInt(o.producer));
            writes.push({ partition: o.partition, at, producer: o.producer, visible: o.producer === null, dropped: false });
          } else if (o.kind === 'tombstone') {
            store.replay('g', 't', o.partition, null, at, null);
            lastTombstone.set(o.partition, at);
          } else {
            store.replayEndTransaction(BigInt(o.producer), o.commit, () => true);
            for (const w of writes) {
              if (w.producer !== o.producer || w.visible || w.dropped) continue;
              if (o.commit) w.visible = true;
              else w.dropped = true;
            }
          }
          for (let partition = 0; partition <= 2; partition++) {
            const since = lastTombstone.get(partition) ?? -1;
            const candidates = writes.filter((w) => w.partition === partition && w.visible && w.at > since);
            const expected = candidates.length === 0 ? undefined : BigInt(Math.max(...candidates.map((w) => w.at)));
            assert.equal(store.get('g', 't', partition)?.value.offset, expected);
            const pending = writes.some((w) => w.partition === partition && !w.visible && !w.dropped && w.at > since);
            assert.equal(store.hasPendingOffsets('g', 't', partition), pending);
          }
        });
      }),
    );
  });

  it('ends a transaction only in the groups of the marker partition', () => {
    const store = new OffsetStore();
    store.replay('a', 't', 0, value(1), 1, 5n);
    store.replay('b', 't', 0, value(2), 2, 5n);
    store.replayEndTransaction(5n, true, (groupId) => groupId === 'a');
    assert.equal(store.get('a', 't', 0)?.value.offset, 1n);
    assert.equal(store.get('b', 't', 0), undefined);
    assert.equal(store.hasPendingOffsets('b'), true);
    store.forgetGroup('b');
    assert.equal(store.hasPendingOffsets('b'), false);
    assert.deepEqual(store.groupIds(), ['a']);
  });
});
