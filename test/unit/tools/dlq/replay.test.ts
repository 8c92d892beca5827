import assert from 'node:assert/strict';
import { SLUICE_HEADER_NAMES } from '../../../../src/tools/dead-letters.ts';
import { readDeadLetter } from '../../../../src/tools/dlq/dead-letter.ts';
import { replayHeaders, replayRecord } from '../../../../src/tools/dlq/replay.ts';
import { headers, record } from './records.ts';

const DEAD_LETTER_HEADERS = {
  'sluice.original.topic': 'orders',
  'sluice.original.partition': '1',
  'sluice.original.offset': '42',
  'sluice.original.timestamp': '1700000000000',
  'sluice.attempts': '3',
  'sluice.error.class': 'TimeoutError',
  'sluice.error.message': 'timed out',
  'sluice.consumer.group': 'billing',
};

function text(hs: readonly { key: string; value: Buffer | null }[]): [string, string | null][] {
  return hs.map((h) => [h.key, h.value === null ? null : h.value.toString('utf8')]);
}

describe('dlq replay record rewriting', () => {
  it('keeps the record own headers in order, drops the sluice ones and adds the replay count and origin', () => {
    const h = [
      ...headers({ 'trace-id': 'abc' }),
      ...headers(DEAD_LETTER_HEADERS),
      ...headers({ 'content-type': 'application/json', empty: null }),
    ];
    const r = record({ partition: 3, offset: 17, headers: h });
    assert.deepEqual(text(replayHeaders(r, readDeadLetter(h))), [
      ['trace-id', 'abc'],
      ['content-type', 'application/json'],
      ['empty', null],
      ['sluice.replay.count', '1'],
      ['sluice.replayed.from', 'orders.dlq/3/17'],
    ]);
  });

  it('counts one more replay than the dead letter carried, and replaces the old origin', () => {
    const h = headers({ ...DEAD_LETTER_HEADERS, 'sluice.replay.count': '2', 'sluice.replayed.from': 'orders.dlq/0/5' });
    const replayed = text(replayHeaders(record({ offset: 9, headers: h }), readDeadLetter(h)));
    assert.deepEqual(replayed, [
      ['sluice.replay.count', '3'],
      ['sluice.replayed.from', 'orders.dlq/0/9'],
    ]);
  });

  it('starts again at 1 when the replay count header is not a number', () => {
    const h = headers({ 'sluice.original.topic': 'orders', 'sluice.replay.count': 'many' });
    assert.deepEqual(text(replayHeaders(record({ headers: h }), readDeadLetter(h)))[0], ['sluice.replay.count', '1']);
  });

  it('drops every header name of the contract', () => {
    const h = headers(Object.fromEntries([...SLUICE_HEADER_NAMES].map((n) => [n, '1'])));
    const kept = replayHeaders(record({ headers: h }), readDeadLetter(h)).map((x) => x.key);
    assert.deepEqual(kept, ['sluice.replay.count', 'sluice.replayed.from']);
  });

  it('keeps key and value, and leaves partition and timestamp to the producer', () => {
    const h = headers(DEAD_LETTER_HEADERS);
    const r = replayRecord(record({ key: Buffer.from('k'), value: Buffer.from([0, 1]), headers: h }), readDeadLetter(h));
    assert.deepEqual(r.key, Buffer.from('k'));
    assert.deepEqual(r.value, Buffer.from([0, 1]));
    assert.equal(r.partition, null);
    assert.equal(r.timestamp, null);
  });
});
