/**
 * The fault suite's history checker (test/cluster/history.ts) on hand-made histories: a clean
 * one passes, and each kind of damage the suite exists to find is reported.
 */
import assert from 'node:assert/strict';
import {
  type Ack,
  type CheckResult,
  checkHistory,
  type History,
  type LogRecord,
  type Sample,
  type ViolationKind,
  parseValue,
  recordValue,
} from '../../cluster/history.ts';

/** Producer `p` sent `count` records to partition 0, all acknowledged at offsets 0.. in order. */
function acksOf(producer: string, count: number, partition = 0, firstOffset = 0): Ack[] {
  return Array.from({ length: count }, (_, seq) => ({
    producer,
    seq,
    partition,
    offset: firstOffset + seq,
    value: recordValue(producer, seq),
  }));
}

function logOf(acks: readonly Ack[]): LogRecord[] {
  return acks.map((a) => ({ partition: a.partition, offset: a.offset ?? -1, value: a.value }));
}

function hw(atMs: number, value: number, partition = 0): Sample {
  return { atMs, partition, value, source: 'sampler' };
}

/** A history with nothing wrong: two producers on two partitions, a group that read it all. */
function cleanHistory(): History {
  const acks = [...acksOf('kafkajs', 5, 0), ...acksOf('java', 4, 1)];
  const log = logOf(acks);
  return {
    topic: 'faults',
    acks,
    unacknowledged: 0,
    log,
    consumed: log.map((r) => ({ group: 'g', ...r })),
    highWatermarks: [hw(1, 2), hw(2, 5), hw(1, 1, 1), hw(3, 4, 1)],
    commits: new Map([['g', [hw(1, 3), hw(2, 5), hw(2, 4, 1)]]]),
    finalPartitions: [
      { topic: 'faults', partition: 0, replicas: [1, 2, 3], isr: [1, 2, 3] },
      { topic: 'faults', partition: 1, replicas: [1, 2, 3], isr: [2, 3, 1] },
    ],
    groups: [{ group: 'g', stableMs: 800, limitMs: 6000, caughtUpMs: 900 }],
    exits: [{ nodeId: 2, atMs: 100, code: null, signal: 'SIGKILL', caused: true }],
  };
}

function kinds(result: CheckResult): ViolationKind[] {
  return [...new Set(result.violations.map((v) => v.kind))].sort();
}

describe('cluster history checker', () => {
  it('passes a history in which nothing went wrong', () => {
    const result = checkHistory(cleanHistory());
    assert.deepEqual(result.violations, []);
    assert.equal(result.acknowledged, 9);
    assert.equal(result.lost, 0);
    assert.equal(result.duplicated, 0);
    assert.equal(result.reordered, 0);
  });

  it('reports an acknowledged record missing from the log as lost', () => {
    const h = cleanHistory();
    const log = h.log.filter((r) => r.value !== 'kafkajs-4');
    const result = checkHistory({ ...h, log, consumed: h.consumed.filter((c) => c.value !== 'kafkajs-4') });
    assert.equal(result.lost, 1);
    assert.ok(kinds(result).includes('lost'));
    assert.match(result.violations.find((v) => v.kind === 'lost')!.detail, /kafkajs-4 acknowledged at 0@4/);
  });

  it('reports an acknowledged record stored at another offset than acknowledged', () => {
    const h = cleanHistory();
    const log = h.log.map((r) => (r.value === 'java-3' ? { ...r, offset: 9 } : r));
    const result = checkHistory({ ...h, log, consumed: [], groups: [] });
    assert.deepEqual(kinds(result), ['misplaced']);
    assert.equal(result.lost, 1);
  });

  it('reports a record stored twice as duplicated', () => {
    const h = cleanHistory();
    const log = [...h.log, { partition: 0, offset: 5, value: 'kafkajs-2' }];
    const result = checkHistory({ ...h, log });
    assert.equal(result.duplicated, 1);
    // The copy also comes after a later record of its producer.
    assert.deepEqual(kinds(result), ['duplicated', 'reordered']);
    assert.match(result.violations[0]!.detail, /kafkajs-2 stored at 0@2 and at 0@5/);
  });

  it('reports a record stored twice in the same epoch of its producer as duplicated', () => {
    const h = cleanHistory();
    const log = [
      ...h.log.map((r) => ({ ...r, producerId: '7', producerEpoch: 0 })),
      { partition: 0, offset: 5, value: 'kafkajs-4', producerId: '7', producerEpoch: 0 },
    ];
    const result = checkHistory({ ...h, log });
    assert.deepEqual(kinds(result), ['duplicated']);
    assert.equal(result.resentUnderNewEpoch, 0);
    assert.match(result.violations[0]!.detail, /kafkajs-4 stored at 0@4 and at 0@5 \(producer 7 epoch 0, then producer 7 epoch 0\)/);
  });

  it('counts a copy its producer re-sent under a bumped epoch apart, and judges order by the first copy', () => {
    const h = cleanHistory();
    const epochOf = (r: LogRecord) => ({ ...r, producerId: '7', producerEpoch: r.partition === 0 && r.offset >= 3 ? 1 : 0 });
    // kafkajs-2 was stored in epoch 0; after the bump it is sent again, before kafkajs-3 and -4.
    const log = [
      ...h.log.filter((r) => r.partition !== 0).map(epochOf),
      ...['kafkajs-0', 'kafkajs-1', 'kafkajs-2', 'kafkajs-2', 'kafkajs-3', 'kafkajs-4'].map((value, offset) =>
        epochOf({ partition: 0, offset, value }),
      ),
    ];
    const acks = h.acks.map((a) => (a.partition === 0 && a.offset !== null && a.offset >= 3 ? { ...a, offset: a.offset + 1 } : a));
    const consumed = h.consumed.map((c) => (c.partition === 0 && c.offset >= 3 ? { ...c, offset: c.offset + 1 } : c));
    const result = checkHistory({ ...h, acks, log, consumed });
    assert.deepEqual(result.violations, []);
    assert.equal(result.duplicated, 0);
    assert.equal(result.resentUnderNewEpoch, 1);
  });

  it('does not excuse a copy in an older epoch or of another producer id', () => {
    const h = cleanHistory();
    const base = h.log.map((r) => ({ ...r, producerId: '7', producerEpoch: 1 }));
    const older = checkHistory({
      ...h,
      log: [...base, { partition: 0, offset: 5, value: 'kafkajs-4', producerId: '7', producerEpoch: 0 }],
    });
    assert.equal(older.duplicated, 1);
    const other = checkHistory({
      ...h,
      log: [...base, { partition: 0, offset: 5, value: 'kafkajs-4', producerId: '8', producerEpoch: 2 }],
    });
    assert.equal(other.duplicated, 1);
  });

  it('reports records of one producer stored out of their send order as reordered', () => {
    const h = cleanHistory();
    const log = h.log.map((r) =>
      r.value === 'kafkajs-1' ? { ...r, value: 'kafkajs-2' } : r.value === 'kafkajs-2' ? { ...r, value: 'kafkajs-1' } : r,
    );
    const acks = h.acks.map((a) => (a.value === 'kafkajs-1' ? { ...a, offset: 2 } : a.value === 'kafkajs-2' ? { ...a, offset: 1 } : a));
    const result = checkHistory({ ...h, acks, log, consumed: [], groups: [] });
    assert.deepEqual(kinds(result), ['reordered']);
    assert.equal(result.reordered, 2, 'once in the log, once in the acknowledged offsets');
    assert.equal(result.lost, 0);
  });

  it('does not count records of different producers or partitions as reordered', () => {
    const onZero = (producer: string, seq: number, offset: number): Ack => ({
      producer,
      seq,
      partition: 0,
      offset,
      value: recordValue(producer, seq),
    });
    const acks = [onZero('a', 0, 0), onZero('b', 0, 1), onZero('a', 1, 2), onZero('b', 1, 3), onZero('a', 2, 4), ...acksOf('c', 3, 1)];
    const log = logOf(acks);
    const h = { ...cleanHistory(), acks, log, consumed: [], commits: new Map(), highWatermarks: [], groups: [] };
    assert.deepEqual(checkHistory(h).violations, []);
  });

  it('takes an acknowledgement without an offset as a record that must be in the log once, wherever it is', () => {
    const acks = acksOf('librdkafka', 3);
    const log = logOf(acks);
    const withoutOffset = acks.map((a) => (a.seq === 1 ? { ...a, offset: null } : a));
    const h = { ...cleanHistory(), acks: withoutOffset, log, consumed: [], commits: new Map(), highWatermarks: [] };
    assert.deepEqual(checkHistory({ ...h, groups: [] }).violations, []);
    const missing = checkHistory({ ...h, log: log.filter((r) => r.offset !== 1), groups: [] });
    assert.deepEqual(kinds(missing), ['lost']);
  });

  it('reports a high watermark that went backwards', () => {
    const h = cleanHistory();
    const result = checkHistory({ ...h, highWatermarks: [hw(1, 3), hw(2, 5), hw(3, 4), hw(4, 6)] });
    assert.deepEqual(kinds(result), ['high-watermark-backwards']);
    assert.match(result.violations[0]!.detail, /partition 0: 4 \(sampler\) at \+3 ms after 5/);
  });

  it('does not compare observations that overlap in time, and holds later ones to a client-reported commit', () => {
    const h = cleanHistory();
    const slow = { atMs: 1, untilMs: 10, partition: 0, value: 5, source: 'sampler' };
    const quick = { atMs: 2, untilMs: 3, partition: 0, value: 4, source: 'sampler' };
    assert.deepEqual(checkHistory({ ...h, highWatermarks: [slow, quick] }).violations, []);
    const floor = { atMs: 5, floor: true, partition: 0, value: 5, source: 'kafkajs member 0' };
    const before = { atMs: 1, untilMs: 2, partition: 0, value: 3, source: 'sampler' };
    const after = { atMs: 6, untilMs: 7, partition: 0, value: 4, source: 'sampler' };
    const result = checkHistory({ ...h, commits: new Map([['g', [before, floor, after]]]) });
    assert.deepEqual(kinds(result), ['commit-backwards']);
    assert.match(result.violations[0]!.detail, /4 \(sampler\) at \+6 ms after 5 \(kafkajs member 0\)/);
  });

  it('excuses a committed-offset read taken while a node was cut off, never one outside that window nor an acknowledged commit', () => {
    const h = cleanHistory();
    const windows = [{ fromMs: 2.5, untilMs: 3.5 }];
    const floor = { atMs: 2, floor: true, partition: 0, value: 5, source: 'kafkajs member 0' };
    assert.deepEqual(
      checkHistory({ ...h, commits: new Map([['g', [floor, hw(3, 4), hw(4, 5)]]]), staleReadWindows: windows }).violations,
      [],
    );
    const commits = new Map([['g', [floor, hw(3, 4), hw(6, 3)]]]);
    assert.deepEqual(
      kinds(checkHistory({ ...h, commits, staleReadWindows: windows })),
      ['commit-backwards'],
      'the read at +6 ms is outside the window',
    );
  });

  it('never excuses a high watermark that went backwards: its samples are fenced by leader epoch', () => {
    const h = cleanHistory();
    const windows = [{ fromMs: 2.5, untilMs: 3.5 }];
    assert.deepEqual(kinds(checkHistory({ ...h, highWatermarks: [hw(1, 3), hw(2, 5), hw(3, 4), hw(4, 6)], staleReadWindows: windows })), [
      'high-watermark-backwards',
    ]);
  });

  it('reports a committed offset that went backwards, and one beyond the end of the log', () => {
    const h = cleanHistory();
    const result = checkHistory({ ...h, commits: new Map([['g', [hw(1, 4), hw(2, 2), hw(3, 7, 1)]]]) });
    assert.deepEqual(kinds(result), ['commit-backwards', 'commit-beyond-log']);
  });

  it('reports an offset acknowledged for two different records', () => {
    const h = cleanHistory();
    const acks = [...h.acks, { producer: 'python', seq: 0, partition: 0, offset: 3, value: 'python-0' }];
    const result = checkHistory({ ...h, acks, groups: [] });
    assert.ok(kinds(result).includes('offset-acknowledged-twice'));
    assert.ok(kinds(result).includes('lost'));
  });

  it('reports a consumed record that the final log does not hold', () => {
    const h = cleanHistory();
    const result = checkHistory({ ...h, consumed: [...h.consumed, { group: 'g', partition: 0, offset: 7, value: 'kafkajs-9' }] });
    assert.deepEqual(kinds(result), ['consumed-differs-from-log']);
  });

  it('reports an ISR still short after healing, a group that did not catch up and a node that died on its own', () => {
    const h = cleanHistory();
    const result = checkHistory({
      ...h,
      finalPartitions: [{ topic: '__consumer_offsets', partition: 0, replicas: [1, 2, 3], isr: [1, 3] }],
      consumed: h.consumed.slice(1),
      exits: [...h.exits, { nodeId: 3, atMs: 5, code: 1, signal: null, caused: false }],
    });
    assert.deepEqual(kinds(result), ['group-not-converged', 'isr-not-full', 'node-died']);
  });

  it('reports a group that consumed everything but settled slower than its session timeout', () => {
    const h = cleanHistory();
    const result = checkHistory({ ...h, groups: [{ group: 'g', stableMs: 9000, limitMs: 6000, caughtUpMs: 9500 }] });
    assert.deepEqual(kinds(result), ['group-not-converged']);
  });

  it('reads the producer and sequence number back from a value', () => {
    assert.deepEqual(parseValue(recordValue('java-2', 17)), { producer: 'java-2', seq: 17 });
    assert.equal(parseValue('no number'), null);
  });
});
