import assert from 'node:assert/strict';
import fc from 'fast-check';
import { completeLines, errorLines, errorLineSignature } from '../../../scripts/fuzz/broker-log.ts';

const line = (fields: Record<string, unknown>) => JSON.stringify({ time: 1796662190377, pid: 11051, name: 'sluice', ...fields });

describe('fuzzer: the broker log lines that are findings', () => {
  it('takes the lines at level error (50) and fatal (60), with the connection and api key they name', () => {
    const lines = [
      line({ level: 30, msg: 'request refused', client: '127.0.0.1:5000' }),
      line({ level: 40, msg: 'slow' }),
      line({
        level: 50,
        msg: 'request handling failed',
        client: '127.0.0.1:56674',
        apiKey: 27,
        apiVersion: 1,
        err: { type: 'EncodeError', message: 'an end transaction marker needs a producer id' },
      }),
      line({ level: 60, msg: 'exiting' }),
      'sluice ready: plain text',
      '{"level":50,"truncated',
    ];
    const found = errorLines(lines);
    assert.deepEqual(
      found.map((l) => [l.level, l.msg, l.errMessage, l.clientPort, l.apiKey, l.apiVersion]),
      [
        [50, 'request handling failed', 'an end transaction marker needs a producer id', 56674, 27, 1],
        [60, 'exiting', null, null, null, null],
      ],
    );
  });

  it('reads the port of an IPv6 client address', () => {
    const [found] = errorLines([line({ level: 50, msg: 'x', client: '[::1]:40512' })]);
    assert.equal(found?.clientPort, 40512);
  });

  it('gives one signature to the same failure whatever its numbers', () => {
    const a = errorLines([line({ level: 50, msg: 'request handling failed', err: { message: 'offset 17 of 9' } })])[0]!;
    const b = errorLines([line({ level: 50, msg: 'request handling failed', err: { message: 'offset 4242 of 1' } })])[0]!;
    assert.equal(errorLineSignature(a), errorLineSignature(b));
  });

  it('hands out each complete line once, however the output was cut into chunks', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z{}":0-9 ]{0,12}$/), { maxLength: 8 }), fc.array(fc.nat(200)), (lines, cuts) => {
        const text = lines.map((l) => `${l}\n`).join('');
        const ends = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((x, y) => x - y);
        const seen: string[] = [];
        let from = 0;
        for (const end of [...ends, text.length]) {
          const read = completeLines(text.slice(0, end), from);
          seen.push(...read.lines);
          from = read.end;
        }
        assert.deepEqual(seen, lines);
      }),
    );
  });
});
