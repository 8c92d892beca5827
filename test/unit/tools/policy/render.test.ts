import { strict as assert } from 'node:assert';
import { ORDER_EVENTS } from '../../../helpers/topic-policy.ts';
import { type ClusterState, type PlanOptions, planApply } from '../../../../src/tools/policy/plan.ts';
import type { TopicPolicy } from '../../../../src/tools/policy/policy.ts';
import { CONTRACT_GUIDANCE, NO_CHANGES, renderPlan } from '../../../../src/tools/policy/render.ts';

const ALL_ALLOWED: PlanOptions = { allowDelete: true, allowRepartition: true, allowReassign: true };

function state(topics: Record<string, { partitions: number; configs: Record<string, string> }>, stored: TopicPolicy[] = []): ClusterState {
  return {
    brokers: [1, 2, 3],
    defaults: { replicationFactor: 3, minInsyncReplicas: 2, cleanupPolicy: 'delete' },
    topics: new Map(
      Object.entries(topics).map(([name, t]) => [
        name,
        { replicas: Array.from({ length: t.partitions }, () => [1, 2, 3]), configs: new Map(Object.entries(t.configs)) },
      ]),
    ),
    stored: new Map(stored.map((p) => [p.name, p])),
  };
}

function rendered(policies: TopicPolicy[], s: ClusterState, options = ALL_ALLOWED): string[] {
  const { plan } = planApply(
    policies.map((policy) => ({ file: 'f.yaml', policy })),
    s,
    options,
  );
  return renderPlan(plan!);
}

describe('tools/policy/render: the plan as text', () => {
  it('shows a create with its configs, the stored fields and the producer guidance of its contract', () => {
    assert.deepEqual(rendered([ORDER_EVENTS, { name: 'plain' }], state({})), [
      '+ create topic order.events (24 partitions, replication factor 3)',
      '    min.insync.replicas = 2',
      '    cleanup.policy = delete',
      '    retention.ms = 604800000',
      '    key_schema = order_id  (__sluice_topic_policies)',
      '    value_schema = order_event_v2  (__sluice_topic_policies)',
      '    delivery_contract = at_least_once  (__sluice_topic_policies)',
      `    guidance: ${CONTRACT_GUIDANCE.at_least_once}`,
      "+ create topic plain (the brokers' default partitions, the brokers' default replication factor)",
      'Plan: 2 to create, 0 to change, 0 to delete.',
    ]);
    assert.match(CONTRACT_GUIDANCE.at_least_once, /acks=all/);
    assert.match(CONTRACT_GUIDANCE.exactly_once, /transactional\.id.*read_committed/);
  });

  it('shows config, partition and store changes, unchanged topics and deletions, then the counts', () => {
    const configs = { 'min.insync.replicas': '2', 'cleanup.policy': 'delete', 'retention.ms': '604800000' };
    const s = state({ 'order.events': { partitions: 24, configs }, same: { partitions: 1, configs }, old: { partitions: 1, configs } }, [
      ORDER_EVENTS,
      { name: 'old' },
    ]);
    const lines = rendered([{ ...ORDER_EVENTS, retention_ms: 86400000, partitions: 32, key_schema: 'customer_id' }, { name: 'same' }], s);
    assert.deepEqual(lines, [
      '~ order.events: retention.ms 604800000 -> 86400000',
      '~ order.events: partitions 24 -> 32 (keys remap: the default partitioner hashes keys over the new partition count, so per-key order breaks between records written before and after the change)',
      '~ order.events: key_schema order_id -> customer_id  (__sluice_topic_policies)',
      `    guidance: ${CONTRACT_GUIDANCE.at_least_once}`,
      '= same: no changes',
      '- delete topic old (in __sluice_topic_policies, in no policy file)',
      'Plan: 0 to create, 1 to change, 1 to delete.',
    ]);
  });

  it('says "No changes" when the cluster matches, after naming kept topics', () => {
    const configs = { 'min.insync.replicas': '2', 'cleanup.policy': 'delete', 'retention.ms': '604800000' };
    const s = state({ 'order.events': { partitions: 24, configs }, old: { partitions: 1, configs } }, [ORDER_EVENTS, { name: 'old' }]);
    assert.deepEqual(rendered([ORDER_EVENTS], s, { ...ALL_ALLOWED, allowDelete: false }), [
      '  old: in __sluice_topic_policies but in no policy file: kept (--allow-delete deletes it)',
      NO_CHANGES,
    ]);
    assert.equal(NO_CHANGES, 'No changes. The cluster matches the policies.');
  });
});
