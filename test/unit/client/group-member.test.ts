import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rangeAssignment } from '../../../src/client/group-member.ts';

describe('rangeAssignment (Kafka RangeAssignor)', () => {
  it("matches the assignor's documented example", () => {
    // RangeAssignor's javadoc: C0 and C1 subscribed to t0 and t1, each of 3 partitions.
    const assignment = rangeAssignment(
      new Map([
        ['C0', ['t0', 't1']],
        ['C1', ['t0', 't1']],
      ]),
      new Map([
        ['t0', 3],
        ['t1', 3],
      ]),
    );
    const names = (member: string) => assignment.get(member)!.map((tp) => `${tp.topic}p${tp.partition}`);
    assert.deepEqual(names('C0'), ['t0p0', 't0p1', 't1p0', 't1p1']);
    assert.deepEqual(names('C1'), ['t0p2', 't1p2']);
  });

  it('gives every partition of a subscribed topic to exactly one of its subscribers, in ranges that differ by at most one', () => {
    const topics = ['a', 'b', 'c'];
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.subarray(topics), { minKeys: 1, maxKeys: 6 }),
        fc.tuple(fc.nat(12), fc.nat(12), fc.nat(12)),
        (subscriptions, counts) => {
          const partitionCounts = new Map(topics.map((t, i) => [t, counts[i]!]));
          const assignment = rangeAssignment(new Map(Object.entries(subscriptions)), partitionCounts);
          for (const topic of topics) {
            const subscribers = Object.keys(subscriptions).filter((m) => subscriptions[m]!.includes(topic));
            const owners = new Map<number, string>();
            for (const [member, tps] of assignment) {
              for (const tp of tps.filter((x) => x.topic === topic)) {
                assert.ok(subscribers.includes(member), `${member} got ${topic} without subscribing`);
                assert.ok(!owners.has(tp.partition), `${topic}-${tp.partition} assigned twice`);
                owners.set(tp.partition, member);
              }
            }
            const expected = subscribers.length === 0 ? 0 : partitionCounts.get(topic)!;
            assert.equal(owners.size, expected);
            const sizes = subscribers.map((m) => assignment.get(m)!.filter((tp) => tp.topic === topic).length);
            if (sizes.length > 0) assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1);
          }
        },
      ),
    );
  });
});
