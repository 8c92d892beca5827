import assert from 'node:assert/strict';
import type { RecordHeader } from '../../../../protocol/records/record.ts';
import { readDeadLetter } from '../../../../src/tools/dlq/dead-letter.ts';
import { DeadLetterTally, NO_ERROR_CLASS } from '../../../../src/tools/dlq/inspect.ts';
import { headers, record } from './records.ts';

const T = 1_700_000_000_000;

function dl(source: string, errorClass: string | null, originalTimestamp: string | null = null): RecordHeader[] {
  return headers({
    'sluice.original.topic': source,
    ...(errorClass === null ? {} : { 'sluice.error.class': errorClass }),
    ...(originalTimestamp === null ? {} : { 'sluice.original.timestamp': originalTimestamp }),
  });
}

describe('dlq inspect tally', () => {
  it('counts by error class and source topic, most frequent first', () => {
    const tally = new DeadLetterTally(0);
    tally.add(record({ offset: 0, headers: dl('orders', 'TimeoutError') }));
    tally.add(record({ offset: 1, headers: dl('orders', 'ValidationError') }));
    tally.add(record({ offset: 2, headers: dl('payments', 'TimeoutError') }));
    tally.add(record({ offset: 3, headers: dl('orders', null) }));
    const r = tally.report('orders.dlq', []);
    assert.equal(r.records, 4);
    assert.equal(r.deadLetters, 4);
    assert.deepEqual(r.byErrorClass, [
      { name: 'TimeoutError', count: 2 },
      { name: NO_ERROR_CLASS, count: 1 },
      { name: 'ValidationError', count: 1 },
    ]);
    assert.deepEqual(r.bySourceTopic, [
      { name: 'orders', count: 3 },
      { name: 'payments', count: 1 },
    ]);
  });

  it('counts records without sluice.original.topic apart, noting the first', () => {
    const tally = new DeadLetterTally(3);
    tally.add(record({ partition: 0, offset: 0, headers: dl('orders', 'E') }));
    tally.add(record({ partition: 1, offset: 4, headers: headers({ 'sluice.error.class': 'E' }) }));
    tally.add(record({ partition: 1, offset: 5 }));
    const r = tally.report('orders.dlq', []);
    assert.equal(r.records, 3);
    assert.equal(r.deadLetters, 1);
    assert.deepEqual(r.notDeadLetters, { count: 2, first: { partition: 1, offset: 4 } });
    assert.equal(r.samples.length, 1);
  });

  it('finds the oldest and newest by record timestamp and by original timestamp, ignoring malformed ones', () => {
    const tally = new DeadLetterTally(0);
    tally.add(record({ partition: 0, offset: 0, timestamp: T + 20, headers: dl('o', 'E', String(T + 5)) }));
    tally.add(record({ partition: 0, offset: 1, timestamp: T + 10, headers: dl('o', 'E', 'yesterday') }));
    tally.add(record({ partition: 1, offset: 0, timestamp: T + 30, headers: dl('o', 'E', String(T + 1)) }));
    tally.add(record({ partition: 1, offset: 1, timestamp: -1, headers: dl('o', 'E', String(T + 9)) }));
    const r = tally.report('d', []);
    assert.deepEqual(r.oldest, { partition: 0, offset: 1, timestampMs: T + 10 });
    assert.deepEqual(r.newest, { partition: 1, offset: 0, timestampMs: T + 30 });
    assert.deepEqual(r.oldestOriginal, { partition: 1, offset: 0, timestampMs: T + 1 });
    assert.deepEqual(r.newestOriginal, { partition: 1, offset: 1, timestampMs: T + 9 });
  });

  it('samples each error class first, then the earliest others, in partition/offset order', () => {
    const tally = new DeadLetterTally(3);
    for (let offset = 0; offset < 5; offset++) tally.add(record({ partition: 0, offset, headers: dl('orders', 'A') }));
    tally.add(record({ partition: 1, offset: 0, headers: dl('orders', 'B') }));
    const samples = tally.report('d', []).samples;
    assert.deepEqual(
      samples.map((s) => [s.partition, s.offset]),
      [
        [0, 0],
        [0, 1],
        [1, 0],
      ],
    );
  });

  it('shows key and value previews and the sluice headers of a sample, cutting long messages', () => {
    const tally = new DeadLetterTally(1);
    const h = [
      ...headers({ 'trace-id': 't', 'sluice.original.topic': 'orders', 'sluice.attempts': '3' }),
      ...headers({ 'sluice.error.message': 'm'.repeat(1000) }),
    ];
    tally.add(record({ key: Buffer.from('k1'), value: Buffer.from([0xff]), headers: h }));
    const [s] = tally.report('d', []).samples;
    assert.deepEqual(s!.key, { encoding: 'text', text: 'k1', bytes: 2, truncated: false });
    assert.equal(s!.value!.encoding, 'hex');
    assert.deepEqual(Object.keys(s!.headers), ['sluice.original.topic', 'sluice.attempts', 'sluice.error.message']);
    assert.equal(s!.headers['sluice.error.message'], `${'m'.repeat(200)}...`);
  });

  it('reads malformed numeric headers as absent', () => {
    const d = readDeadLetter(
      headers({
        'sluice.original.topic': 'orders',
        'sluice.original.partition': 'x',
        'sluice.original.offset': '-3',
        'sluice.attempts': '1e3',
        'sluice.original.timestamp': '99999999999999999999',
      }),
    );
    assert.equal(d.originalPartition, null);
    assert.equal(d.originalOffset, null);
    assert.equal(d.attempts, null);
    assert.equal(d.originalTimestampMs, null);
    assert.equal(d.replayCount, 0);
  });
});
