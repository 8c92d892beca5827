import { strict as assert } from 'node:assert';
import { ORDER_EVENTS, orderEventsYaml } from '../../../helpers/topic-policy.ts';
import {
  type TopicPolicy,
  checkPolicy,
  duplicateNames,
  formatPolicyError,
  normalizeCleanupPolicy,
  parsePolicyFile,
  policyConfigs,
} from '../../../../src/tools/policy/policy.ts';

function parsed(text: string, file = 'topics.yaml'): TopicPolicy[] {
  const { policies, errors } = parsePolicyFile(file, text);
  assert.deepEqual(errors, []);
  return policies.map((p) => p.policy);
}

function reasons(text: string, file = 'topics.yaml'): string[] {
  return parsePolicyFile(file, text).errors.map(formatPolicyError);
}

describe('tools/policy/policy: reading topic policies', () => {
  it('reads the example policy', () => {
    assert.deepEqual(parsed(orderEventsYaml()), [ORDER_EVENTS]);
  });

  it('reads every document form: topic_policies, a list of either kind, several documents, JSON', () => {
    const two = [
      { name: 'a', partitions: 1 },
      { name: 'b', retention_ms: -1 },
    ];
    assert.deepEqual(parsed('topic_policies:\n  - name: a\n    partitions: 1\n  - name: b\n    retention_ms: -1\n'), two);
    assert.deepEqual(parsed('- topic_policy:\n    name: a\n    partitions: 1\n- name: b\n  retention_ms: -1\n'), two);
    assert.deepEqual(parsed('topic_policy: {name: a, partitions: 1}\n---\ntopic_policy: {name: b, retention_ms: -1}\n'), two);
    assert.deepEqual(parsed(JSON.stringify({ topic_policies: two }), 'topics.json'), two);
    assert.deepEqual(parsed(JSON.stringify([{ topic_policy: two[0] }, two[1]]), 'topics.txt'), two);
    // A YAML flow mapping starts like JSON without being JSON.
    assert.deepEqual(parsed('{topic_policy: {name: a, partitions: 1}}'), [two[0]]);
  });

  it('keeps configs as text, whatever scalar they were written as', () => {
    const [p] = parsed('topic_policy:\n  name: t\n  configs:\n    segment.bytes: 1048576\n    unclean.leader.election.enable: false\n');
    assert.deepEqual(p!.configs, { 'segment.bytes': '1048576', 'unclean.leader.election.enable': 'false' });
    assert.deepEqual(policyConfigs({ name: 't', retention_ms: 5, cleanup_policy: 'compact', configs: { 'segment.ms': '10' } }), [
      ['cleanup.policy', 'compact'],
      ['retention.ms', '5'],
      ['segment.ms', '10'],
    ]);
  });

  it('names an unknown key with the nearest known one, or says Kafka configs go under configs', () => {
    assert.deepEqual(
      reasons('topic_policy:\n  name: t\n  replication: 3\n  retention.ms: 5\n  partitons: 2\n  segment.bytes: 9\n  colour: red\n'),
      [
        "sluice apply: topics.yaml: t: unknown key 'replication' (did you mean replication_factor?)",
        "sluice apply: topics.yaml: t: unknown key 'retention.ms' (did you mean retention_ms?)",
        "sluice apply: topics.yaml: t: unknown key 'partitons' (did you mean partitions?)",
        "sluice apply: topics.yaml: t: unknown key 'segment.bytes' (Kafka configs go under configs)",
        "sluice apply: topics.yaml: t: unknown key 'colour'",
      ],
    );
  });

  it('refuses wrong types and values out of Kafka’s ranges, one line each', () => {
    const text = [
      'topic_policy:',
      '  name: t',
      '  partitions: "24"',
      '  replication_factor: 0',
      '  min_insync_replicas: 1.5',
      '  retention_ms: -2',
      '  retention_bytes: 9007199254740993',
      '  max_message_bytes: -1',
      '  cleanup_policy: shred',
      '  delivery_contract: exactly_twice',
      '  key_schema: ""',
      '  configs: {retention.bytes: 5, segment.ms: [1]}',
      '',
    ].join('\n');
    assert.deepEqual(
      reasons(text).map((l) => l.replace('sluice apply: topics.yaml: t: ', '')),
      [
        'partitions must be an integer, not string "24"',
        'replication_factor must be >= 1, not 0',
        'min_insync_replicas must be an integer, not number 1.5',
        'retention_ms must be >= -1 (-1: no time limit), not -2',
        'retention_bytes must be an integer, not number 9007199254740992',
        'max_message_bytes must be >= 0, not -1',
        'cleanup_policy must be one of delete | compact | compact,delete, not string "shred"',
        'delivery_contract must be one of at_most_once | at_least_once | exactly_once | latest_per_key, not string "exactly_twice"',
        'key_schema must be a non-empty string, not string ""',
        'configs.retention.bytes: set it with retention_bytes, not in configs',
        'configs.segment.ms must be a string, number or boolean, not a list',
      ],
    );
  });

  it('refuses a policy without a name (named by its place), an illegal or internal name, and a document of another shape', () => {
    assert.deepEqual(reasons('topic_policies:\n  - name: ok\n  - partitions: 3\n'), [
      'sluice apply: topics.yaml: policy 2: name is required',
    ]);
    assert.deepEqual(reasons('topic_policy: {name: "a b"}'), [
      "sluice apply: topics.yaml: a b: 'a b' is not a legal topic name (at most 249 of a-z A-Z 0-9 . _ -, not . or ..)",
    ]);
    assert.deepEqual(reasons('topic_policy: {name: __consumer_offsets}'), [
      'sluice apply: topics.yaml: __consumer_offsets: topics named __* are internal: apply does not manage them',
    ]);
    assert.deepEqual(reasons('name: t\npartitions: 3\n'), [
      'sluice apply: topics.yaml: document 1: a document is {topic_policy: {...}}, {topic_policies: [...]} or a list of policies',
    ]);
    assert.deepEqual(reasons(''), ['sluice apply: topics.yaml: file: holds no policy']);
  });

  it('reports YAML and JSON syntax errors with their line and column', () => {
    assert.deepEqual(reasons('topic_policy:\n  name: a\n  name: b\n'), [
      'sluice apply: topics.yaml: syntax: invalid YAML at line 3, column 3: Map keys must be unique',
    ]);
    assert.deepEqual(reasons('{\n  "topic_policy": {\n    "name": "a",\n  }\n}\n', 'topics.json'), [
      'sluice apply: topics.json: syntax: invalid JSON at line 4, column 3: Expected double-quoted property name',
    ]);
    // Text that looks like JSON and is neither JSON nor YAML gets JSON's error.
    assert.deepEqual(reasons('{"topic_policy": {"name": "a" "partitions": 1}}', 'topics.yaml'), [
      "sluice apply: topics.yaml: syntax: invalid JSON at line 1, column 31: Expected ',' or '}' after property value",
    ]);
  });

  it('refuses two policies for one topic, across files', () => {
    const a = parsePolicyFile('a.yaml', 'topic_policy: {name: t, partitions: 1}').policies;
    const b = parsePolicyFile('b.yaml', 'topic_policy: {name: t, partitions: 2}').policies;
    assert.deepEqual(duplicateNames([...a, ...b]).map(formatPolicyError), [
      'sluice apply: b.yaml: t: a second policy for this topic (the first is in a.yaml)',
    ]);
    assert.deepEqual(duplicateNames(a), []);
  });

  it('checks a stored policy the same way, and normalizes cleanup.policy as Kafka spells it', () => {
    assert.deepEqual(checkPolicy(ORDER_EVENTS), { policy: ORDER_EVENTS, reasons: [] });
    assert.equal(checkPolicy({ name: 't', partitions: 0 }).policy, null);
    assert.equal(normalizeCleanupPolicy('delete, compact'), 'compact,delete');
    assert.equal(normalizeCleanupPolicy('compact'), 'compact');
    assert.equal(normalizeCleanupPolicy('shred'), null);
  });
});
