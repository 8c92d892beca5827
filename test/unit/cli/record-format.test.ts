import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  RecordLineError,
  formatRecord,
  fromHex,
  parseRecordFormat,
  parseRecordLine,
  type LineOptions,
} from '../../../src/cli/record-format.ts';
import type { ConsumerRecord } from '../../../src/client/records.ts';
import { UsageError } from '../../../src/cli/output.ts';

const plain: LineOptions = { format: 'text', keySeparator: null, key: null, headers: [], partition: null };
const json: LineOptions = { ...plain, format: 'json' };

/** Strings whose UTF-8 bytes decode back to themselves (no lone surrogates). */
const utf8Text = fc.string({ unit: 'grapheme', maxLength: 30 });

function record(fields: Partial<ConsumerRecord>): ConsumerRecord {
  return { topic: 't', partition: 0, offset: 0, timestamp: 0, key: null, value: null, headers: [], ...fields };
}

describe('record lines', () => {
  it('reads a text line as the value, with a fixed key, the flag headers and partition', () => {
    const r = parseRecordLine('hello world', {
      ...plain,
      key: 'k',
      headers: [{ key: 'h', value: Buffer.from('v') }],
      partition: 4,
    });
    assert.deepEqual(r, {
      key: Buffer.from('k'),
      value: Buffer.from('hello world'),
      headers: [{ key: 'h', value: Buffer.from('v') }],
      partition: 4,
      timestamp: null,
    });
    assert.deepEqual(parseRecordLine('', plain)?.value, Buffer.alloc(0));
  });

  it('splits text lines at the first key separator', () => {
    fc.assert(
      fc.property(
        // A key ending in ':' would make the separator start inside it.
        utf8Text.filter((k) => !k.includes('::') && !k.endsWith(':')),
        utf8Text,
        (key, value) => {
          const r = parseRecordLine(`${key}::${value}`, { ...plain, keySeparator: '::' })!;
          assert.equal(r.key!.toString('utf8'), key);
          assert.equal(r.value!.toString('utf8'), value);
        },
      ),
    );
    assert.throws(() => parseRecordLine('no separator', { ...plain, keySeparator: '\t' }), RecordLineError);
  });

  it('reads hex lines as bytes and refuses anything else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ maxLength: 8 }), (value, key) => {
        const line = `${Buffer.from(key).toString('hex')}:${Buffer.from(value).toString('hex').toUpperCase()}`;
        const r = parseRecordLine(line, { ...plain, format: 'hex', keySeparator: ':' })!;
        assert.deepEqual(r.key, Buffer.from(key));
        assert.deepEqual(r.value, Buffer.from(value));
      }),
    );
    for (const bad of ['abc', 'zz', '0x00', ' 00']) assert.throws(() => fromHex(bad), RecordLineError, bad);
  });

  it('reads json lines with every field, and skips blank ones', () => {
    const r = parseRecordLine('{"key":"k","value":null,"headers":{"a":"1","b":null},"partition":2,"timestamp":1700000000000}', {
      ...json,
      headers: [{ key: 'flag', value: Buffer.from('x') }],
    });
    assert.deepEqual(r, {
      key: Buffer.from('k'),
      value: null,
      headers: [
        { key: 'flag', value: Buffer.from('x') },
        { key: 'a', value: Buffer.from('1') },
        { key: 'b', value: null },
      ],
      partition: 2,
      timestamp: 1_700_000_000_000,
    });
    assert.equal(parseRecordLine('   ', json), null);
    assert.deepEqual(parseRecordLine('{}', { ...json, key: 'fixed', partition: 1 }), {
      key: Buffer.from('fixed'),
      value: null,
      headers: [],
      partition: 1,
      timestamp: null,
    });
  });

  it('refuses json lines that are not a record, naming the problem', () => {
    const cases: [string, RegExp][] = [
      ['{"value":', /not JSON/],
      ['[1]', /expected a JSON object/],
      ['"v"', /expected a JSON object/],
      ['{"value":1}', /"value" must be a string or null/],
      ['{"key":{}}', /"key" must be a string or null/],
      ['{"headers":"h"}', /"headers" must be an object or a list of \[key, value\] pairs/],
      ['{"headers":[["h"]]}', /"headers" must be an object or a list/],
      ['{"headers":[[1,"v"]]}', /"headers" must be an object or a list/],
      ['{"headers":[["h",1]]}', /"headers.h" must be a string or null/],
      ['{"headers":{"h":1}}', /"headers.h" must be a string or null/],
      ['{"partition":-1}', /"partition" must be an integer >= 0/],
      ['{"partition":1.5}', /"partition" must be an integer >= 0/],
      ['{"timestamp":"now"}', /"timestamp" must be milliseconds/],
      ['{"vale":"typo"}', /unknown field "vale"/],
    ];
    for (const [line, message] of cases) assert.throws(() => parseRecordLine(line, json), message, line);
  });

  it('never throws anything but RecordLineError on arbitrary json input', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (line) => {
        try {
          parseRecordLine(line, json);
        } catch (err) {
          assert.ok(err instanceof RecordLineError, String(err));
        }
      }),
    );
  });

  it('a consumed record printed as json reads back as the same key, value, headers and timestamp', () => {
    const bytesOrNull = fc.option(utf8Text.map((s) => Buffer.from(s, 'utf8')));
    fc.assert(
      fc.property(
        bytesOrNull,
        bytesOrNull,
        // Kafka's headers are a list: a key may come twice, and "0" may come after "".
        fc
          .array(fc.tuple(fc.oneof(utf8Text, fc.constantFrom('', '0', '1', '7')), bytesOrNull), { maxLength: 4 })
          .map((hs) => hs.map(([k, v]) => ({ key: k, value: v }))),
        fc.integer({ min: 0, max: 2 ** 45 }),
        (key, value, headers, timestamp) => {
          const line = formatRecord(record({ key, value, headers, timestamp, partition: 3, offset: 9 }), {
            format: 'json',
            keySeparator: null,
          });
          const { topic, offset, ...produced } = JSON.parse(line) as Record<string, unknown>;
          assert.deepEqual([topic, offset], ['t', 9]);
          const back = parseRecordLine(JSON.stringify(produced), json)!;
          assert.deepEqual(back, { key, value, headers, partition: 3, timestamp });
        },
      ),
    );
  });

  it('prints text and hex values, null as Kafka prints it, and keys with a separator', () => {
    const r = record({ key: Buffer.from('k'), value: Buffer.from([0x68, 0x69]) });
    assert.equal(formatRecord(r, { format: 'text', keySeparator: null }), 'hi');
    assert.equal(formatRecord(r, { format: 'text', keySeparator: '\t' }), 'k\thi');
    assert.equal(formatRecord(r, { format: 'hex', keySeparator: '|' }), '6b|6869');
    assert.equal(formatRecord(record({}), { format: 'text', keySeparator: ' ' }), 'null null');
  });

  it('accepts the three formats and nothing else', () => {
    assert.equal(parseRecordFormat(undefined), 'text');
    for (const f of ['text', 'json', 'hex'] as const) assert.equal(parseRecordFormat(f), f);
    assert.throws(() => parseRecordFormat('avro'), UsageError);
  });
});
