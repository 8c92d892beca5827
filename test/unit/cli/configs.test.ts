import assert from 'node:assert/strict';
import { formatConfigs, parseConfigsToAdd } from '../../../src/cli/configs.ts';
import { UsageError } from '../../../src/cli/output.ts';

describe('sluice configs', () => {
  it('reads --add-config pairs as kafka-configs does: commas split pairs outside brackets, brackets hold lists', () => {
    assert.deepEqual(parseConfigsToAdd('retention.ms=1000'), [['retention.ms', '1000']]);
    assert.deepEqual(parseConfigsToAdd('a=1,cleanup.policy=[compact,delete],b=x=y'), [
      ['a', '1'],
      ['cleanup.policy', 'compact,delete'],
      ['b', 'x=y'],
    ]);
    assert.deepEqual(parseConfigsToAdd('a=,'), [['a', '']]);
    assert.throws(() => parseConfigsToAdd('a=1,novalue'), UsageError);
    assert.throws(() => parseConfigsToAdd('=1'), UsageError);
  });

  it("prints configs under kafka-configs's headers, one name=value line with its synonyms", () => {
    const entry = {
      name: 'log.retention.bytes',
      value: '10',
      source: 'DYNAMIC_BROKER_CONFIG',
      sensitive: false,
      readOnly: false,
      synonyms: [
        { name: 'log.retention.bytes', value: '10', source: 'DYNAMIC_BROKER_CONFIG' },
        { name: 'log.retention.bytes', value: '-1', source: 'DEFAULT_CONFIG' },
      ],
    };
    assert.equal(
      formatConfigs({ type: 'broker', name: '1' }, false, [entry]),
      'Dynamic configs for broker 1 are:\n' +
        '  log.retention.bytes=10 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.bytes=10, DEFAULT_CONFIG:log.retention.bytes=-1}\n',
    );
    assert.equal(formatConfigs({ type: 'topic', name: 't' }, true, []), 'All configs for topic t are:\n');
    assert.equal(formatConfigs({ type: 'broker', name: '' }, false, []), 'Default configs for brokers in the cluster are:\n');
    const secret = { ...entry, name: 'ssl.key.password', value: null, sensitive: true, synonyms: [] };
    assert.equal(
      formatConfigs({ type: 'broker', name: '1' }, false, [secret]).split('\n')[1],
      '  ssl.key.password=null sensitive=true synonyms={}',
    );
  });
});
