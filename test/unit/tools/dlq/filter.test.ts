import assert from 'node:assert/strict';
import { readDeadLetter } from '../../../../src/tools/dlq/dead-letter.ts';
import { FilterSyntaxError, RecordFilter, parseFilter } from '../../../../src/tools/dlq/filter.ts';
import { headers, record } from './records.ts';

function deadLetter(fields: Record<string, string | null>, key: string | null = null) {
  const h = headers(fields);
  return { record: record({ key: key === null ? null : Buffer.from(key), headers: h }), d: readDeadLetter(h) };
}

function matches(filters: string[], fields: Record<string, string | null>, key: string | null = null): boolean {
  const { record: r, d } = deadLetter(fields, key);
  return RecordFilter.parse(filters).matches(r, d);
}

const TIMEOUT = {
  'sluice.original.topic': 'orders',
  'sluice.original.partition': '2',
  'sluice.error.class': 'TimeoutError',
  'sluice.error.message': 'upstream timed out after 5000 ms',
};

describe('dlq replay filters', () => {
  it('parses FIELD=VALUE as exact and FIELD~=TEXT as contains, the value keeping any = of its own', () => {
    assert.deepEqual(parseFilter('error=TimeoutError'), { field: 'error', op: 'equals', value: 'TimeoutError' });
    assert.deepEqual(parseFilter('message~=timed out'), { field: 'message', op: 'contains', value: 'timed out' });
    assert.deepEqual(parseFilter('key=a=b'), { field: 'key', op: 'equals', value: 'a=b' });
    assert.deepEqual(parseFilter('partition=7'), { field: 'partition', op: 'equals', value: '7' });
  });

  it('refuses unknown fields, a missing operator, and a partition that is not a number', () => {
    for (const text of ['colour=red', 'error', '=x', 'Error=X', 'partition~=1', 'partition=-1', 'partition=one', 'partition=']) {
      assert.throws(() => parseFilter(text), FilterSyntaxError, text);
    }
  });

  it('matches exact values and substrings of the error class, message and source topic', () => {
    assert.equal(matches(['error=TimeoutError'], TIMEOUT), true);
    assert.equal(matches(['error=Timeout'], TIMEOUT), false);
    assert.equal(matches(['error~=Timeout'], TIMEOUT), true);
    assert.equal(matches(['message~=timed out'], TIMEOUT), true);
    assert.equal(matches(['message=timed out'], TIMEOUT), false);
    assert.equal(matches(['source=orders'], TIMEOUT), true);
    assert.equal(matches(['source=payments'], TIMEOUT), false);
  });

  it('matches the original partition by number', () => {
    assert.equal(matches(['partition=2'], TIMEOUT), true);
    assert.equal(matches(['partition=02'], TIMEOUT), true);
    assert.equal(matches(['partition=1'], TIMEOUT), false);
  });

  it('matches the key as UTF-8 bytes, and never a null key', () => {
    assert.equal(matches(['key=order-17'], TIMEOUT, 'order-17'), true);
    assert.equal(matches(['key~=der-1'], TIMEOUT, 'order-17'), true);
    assert.equal(matches(['key=order-1'], TIMEOUT, 'order-17'), false);
    assert.equal(matches(['key~='], TIMEOUT, null), false);
  });

  it('ANDs different fields and ORs repeats of one field', () => {
    assert.equal(matches(['error=ValidationError', 'error=TimeoutError'], TIMEOUT), true);
    assert.equal(matches(['error=ValidationError', 'error=TimeoutError', 'source=orders'], TIMEOUT), true);
    assert.equal(matches(['error=ValidationError', 'error=TimeoutError', 'source=payments'], TIMEOUT), false);
    assert.equal(matches(['error=TimeoutError', 'partition=3'], TIMEOUT), false);
  });

  it('takes every record without filters, and a record lacking a field matches no filter on it', () => {
    assert.equal(matches([], {}), true);
    assert.equal(matches(['error~='], {}), false);
    assert.equal(matches(['source=orders'], { 'sluice.original.topic': null }), false);
  });

  it('does not match a partition header that is not a number, without throwing', () => {
    assert.equal(matches(['partition=2'], { ...TIMEOUT, 'sluice.original.partition': 'two' }), false);
    assert.equal(matches(['partition=2'], { ...TIMEOUT, 'sluice.original.partition': '99999999999999999999' }), false);
    assert.equal(matches(['error=TimeoutError'], { ...TIMEOUT, 'sluice.original.partition': 'two' }), true);
  });
});
