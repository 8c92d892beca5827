import assert from 'node:assert/strict';
import { formatLine, prettyDestination } from '../../../src/observability/pretty.ts';

describe('observability/pretty', () => {
  const time = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

  it('puts time, level and component first, then the message and its fields', () => {
    const line = JSON.stringify({
      level: 30,
      time,
      pid: 1,
      name: 'sluice',
      nodeId: 1,
      component: 'metadata',
      msg: 'leader changed',
      epoch: 2,
      voters: [1],
    });
    assert.equal(formatLine(line, false), '03:04:05.678 INFO  metadata: leader changed epoch=2 voters=[1]');
  });

  it('colours the level only when asked', () => {
    const line = JSON.stringify({ level: 50, time, msg: 'failed' });
    const esc = String.fromCharCode(27);
    assert.ok(formatLine(line, true).endsWith(`${esc}[31mERROR${esc}[0m failed`));
    assert.ok(!formatLine(line, false).includes(esc));
  });

  it('prints an error stack on indented lines after the message', () => {
    const line = JSON.stringify({
      level: 50,
      time,
      msg: 'flush failed',
      err: { type: 'Error', message: 'EIO', stack: 'Error: EIO\n    at f' },
    });
    assert.equal(formatLine(line, false), '03:04:05.678 ERROR flush failed\n    Error: EIO\n        at f');
  });

  it('passes a line that is not a JSON object through unchanged', () => {
    assert.equal(formatLine('not json', false), 'not json');
    assert.equal(formatLine('[1,2]', false), '[1,2]');
  });

  it('formats each line of a chunk and forwards back-pressure', () => {
    const written: string[] = [];
    const dest = prettyDestination(
      {
        write: (c) => {
          written.push(c);
          return false;
        },
      },
      false,
    );
    const ok = dest.write(`${JSON.stringify({ level: 20, time, msg: 'a' })}\n${JSON.stringify({ level: 40, time, msg: 'b' })}\n`);
    assert.equal(ok, false);
    assert.deepEqual(written, ['03:04:05.678 DEBUG a\n', '03:04:05.678 WARN  b\n']);
  });
});
