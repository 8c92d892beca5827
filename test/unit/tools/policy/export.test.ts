import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { exportText } from '../../../../src/tools/policy/export.ts';
import { CLEANUP_POLICIES, DELIVERY_CONTRACTS, type TopicPolicy, parsePolicyFile } from '../../../../src/tools/policy/policy.ts';

/** Config values as DescribeConfigs reports them: text, some of which looks like a number, a boolean or YAML syntax. */
const configValue = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom('true', 'false', 'null', '~', '', ' x', 'a: b', '- y', '#', '0x10', '1e3', '1.0'),
  fc.string(),
);

const topicPolicy: fc.Arbitrary<TopicPolicy> = fc
  .record({
    name: fc.stringMatching(/^[a-zA-Z0-9][a-zA-Z0-9._-]{0,30}$/),
    partitions: fc.integer({ min: 1, max: 10_000 }),
    replication_factor: fc.integer({ min: 1, max: 7 }),
    optional: fc.record(
      {
        min_insync_replicas: fc.integer({ min: 1, max: 7 }),
        cleanup_policy: fc.constantFrom(...CLEANUP_POLICIES),
        retention_ms: fc.integer({ min: -1, max: Number.MAX_SAFE_INTEGER }),
        retention_bytes: fc.integer({ min: -1, max: Number.MAX_SAFE_INTEGER }),
        max_message_bytes: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        key_schema: fc.string({ minLength: 1 }),
        value_schema: fc.string({ minLength: 1 }),
        delivery_contract: fc.constantFrom(...DELIVERY_CONTRACTS),
        configs: fc.dictionary(fc.stringMatching(/^[a-z][a-z.]{0,20}$/), configValue, { minKeys: 1 }).map((d) => ({ ...d })),
      },
      { requiredKeys: [] },
    ),
  })
  .map(({ optional, ...p }) => ({ ...p, ...optional }))
  .filter(
    (p) =>
      !Object.keys(p.configs ?? {}).some((k) =>
        ['min.insync.replicas', 'cleanup.policy', 'retention.ms', 'retention.bytes', 'max.message.bytes'].includes(k),
      ),
  );

describe('tools/policy/export: the exported file', () => {
  it('reads back as the policies exported, whatever the config values look like (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(topicPolicy, { selector: (p) => p.name, minLength: 1, maxLength: 5 }), (policies) => {
        const { policies: read, errors } = parsePolicyFile('export.yaml', exportText(policies));
        assert.deepEqual(errors, []);
        assert.deepEqual(
          read.map((p) => p.policy),
          policies,
        );
      }),
    );
  });

  it('writes a topic_policies list, one of the document forms policy files take', () => {
    assert.equal(
      exportText([
        {
          name: 'order.events',
          partitions: 24,
          replication_factor: 3,
          retention_ms: 604800000,
          configs: { 'segment.bytes': '1073741824' },
        },
      ]),
      [
        'topic_policies:',
        '  - name: order.events',
        '    partitions: 24',
        '    replication_factor: 3',
        '    retention_ms: 604800000',
        '    configs:',
        '      segment.bytes: "1073741824"',
        '',
      ].join('\n'),
    );
  });
});
