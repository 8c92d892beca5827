import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ConnectionError } from '../../../src/client/connection.ts';
import { UsageError, bootstrapServers, describeFailure, parseIntFlag, parseKeyValue, parseOutputFormat } from '../../../src/cli/output.ts';

describe('cli flags', () => {
  it('splits name=value at the first =, keeping any = in the value', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((k) => !k.includes('=')),
        fc.string(),
        (name, value) => {
          assert.deepEqual(parseKeyValue(`${name}=${value}`, '--config'), [name, value]);
        },
      ),
    );
    assert.deepEqual(parseKeyValue('sasl.jaas.config=a=b', '--config'), ['sasl.jaas.config', 'a=b']);
  });

  it('refuses name=value without a name or an =', () => {
    for (const bad of ['', 'novalue', '=value']) assert.throws(() => parseKeyValue(bad, '--config'), UsageError, bad);
  });

  it('reads integer flags and refuses anything else', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (n) => {
        assert.equal(parseIntFlag(String(n), '--n'), n);
      }),
    );
    for (const bad of ['', ' ', '1.5', '-1', 'ten', '1e400']) assert.throws(() => parseIntFlag(bad, '--n'), UsageError, bad);
    assert.throws(() => parseIntFlag('0', '--partitions', 1), UsageError);
  });

  it('reads bootstrap server lists and refuses addresses without a port', () => {
    assert.deepEqual(bootstrapServers(undefined), ['127.0.0.1:9092']);
    assert.deepEqual(bootstrapServers(' a:1, b:2 ,'), ['a:1', 'b:2']);
    for (const bad of ['', ',', 'host', 'host:0', 'host:99999']) assert.throws(() => bootstrapServers(bad), UsageError, bad);
  });

  it('reads --output text or json', () => {
    assert.equal(parseOutputFormat(undefined), 'text');
    assert.equal(parseOutputFormat('json'), 'json');
    assert.throws(() => parseOutputFormat('yaml'), UsageError);
  });

  it('words an unreachable cluster with its bootstrap servers, other failures by their first line', () => {
    assert.equal(
      describeFailure(new ConnectionError('a:1: connect ECONNREFUSED'), ['a:1', 'b:2']),
      'cannot reach the cluster at a:1,b:2: a:1: connect ECONNREFUSED',
    );
    assert.equal(describeFailure(new Error('first\nsecond'), ['a:1']), 'first');
  });
});
