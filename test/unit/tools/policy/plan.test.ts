import { strict as assert } from 'node:assert';
import { ORDER_EVENTS } from '../../../helpers/topic-policy.ts';
import fc from 'fast-check';
import {
  type ChangeAction,
  type ClusterState,
  type Plan,
  type PlanOptions,
  type TopicState,
  hasChanges,
  planApply,
  planCounts,
  reassignReplicas,
  sameConfigValue,
} from '../../../../src/tools/policy/plan.ts';
import {
  CLEANUP_POLICIES,
  DELIVERY_CONTRACTS,
  type SourcedPolicy,
  type TopicPolicy,
  checkPolicy,
  formatPolicyError,
  policyConfigs,
} from '../../../../src/tools/policy/policy.ts';

const ALL_ALLOWED: PlanOptions = { allowDelete: true, allowRepartition: true, allowReassign: true };
const NONE_ALLOWED: PlanOptions = { allowDelete: false, allowRepartition: false, allowReassign: false };

/** What a new topic inherits in these tests' cluster, beside the defaults the plan reads. */
const INHERITED: Readonly<Record<string, string>> = {
  'retention.ms': '604800000',
  'retention.bytes': '-1',
  'max.message.bytes': '1048588',
  'segment.ms': '604800000',
};

function topic(partitions: number, rf: number, configs: Record<string, string> = {}, brokers = [1, 2, 3]): TopicState {
  return {
    replicas: Array.from({ length: partitions }, (_, p) => Array.from({ length: rf }, (_, i) => brokers[(p + i) % brokers.length]!)),
    configs: new Map(Object.entries({ ...INHERITED, 'min.insync.replicas': '1', 'cleanup.policy': 'delete', ...configs })),
  };
}

function cluster(over: Partial<ClusterState> = {}): ClusterState {
  return {
    brokers: [1, 2, 3],
    defaults: { replicationFactor: 1, minInsyncReplicas: 1, cleanupPolicy: 'delete' },
    topics: new Map(),
    stored: new Map(),
    ...over,
  };
}

const sourced = (...policies: TopicPolicy[]): SourcedPolicy[] => policies.map((policy) => ({ file: 'topics.yaml', policy }));

function errorsOf(policies: TopicPolicy[], state: ClusterState): string[] {
  return planApply(sourced(...policies), state, ALL_ALLOWED).errors.map(formatPolicyError);
}

function planOf(policies: TopicPolicy[], state: ClusterState, options = ALL_ALLOWED): Plan {
  const { errors, plan } = planApply(sourced(...policies), state, options);
  assert.deepEqual(errors, []);
  return plan!;
}

describe('tools/policy/plan: checking policies against the cluster', () => {
  it('refuses a partition decrease, as Kafka cannot remove partitions', () => {
    const state = cluster({ topics: new Map([['t', topic(6, 1)]]) });
    assert.deepEqual(errorsOf([{ name: 't', partitions: 3 }], state), [
      'sluice apply: topics.yaml: t: partitions 6 -> 3: Kafka cannot remove partitions',
    ]);
  });

  it('refuses a replication factor above the live brokers', () => {
    assert.deepEqual(errorsOf([{ ...ORDER_EVENTS }], cluster({ brokers: [1] })), [
      'sluice apply: topics.yaml: order.events: replication_factor 3 is more than the 1 live broker(s): each replica needs a broker of its own',
    ]);
  });

  it('refuses min_insync_replicas above the replication factor, the effective one included', () => {
    assert.deepEqual(errorsOf([{ name: 't', replication_factor: 2, min_insync_replicas: 3 }], cluster()), [
      'sluice apply: topics.yaml: t: min_insync_replicas 3 > replication_factor 2: no acks=all write could ever be acknowledged',
    ]);
    // The policy leaves the replication factor to the topic, which has 1.
    const state = cluster({ topics: new Map([['t', topic(1, 1)]]) });
    assert.equal(errorsOf([{ name: 't', min_insync_replicas: 2 }], state).length, 1);
  });

  it('refuses settings an at_least_once or exactly_once contract cannot be kept with', () => {
    const base = { name: 't', replication_factor: 3 } as const;
    assert.deepEqual(errorsOf([{ ...base, min_insync_replicas: 3, delivery_contract: 'at_least_once' }], cluster()), [
      'sluice apply: topics.yaml: t: min_insync_replicas 3 = replication_factor 3: no broker may fail without acks=all writes being rejected; at_least_once needs min_insync_replicas < replication_factor',
    ]);
    assert.deepEqual(errorsOf([{ ...base, min_insync_replicas: 1, delivery_contract: 'exactly_once' }], cluster()), [
      'sluice apply: topics.yaml: t: min_insync_replicas 1 with replication_factor 3: an acknowledged write may live on one broker only and be lost with it; exactly_once needs min_insync_replicas >= 2',
    ]);
    assert.deepEqual(
      errorsOf([{ ...base, min_insync_replicas: 2, cleanup_policy: 'compact,delete', delivery_contract: 'at_least_once' }], cluster()),
      [
        'sluice apply: topics.yaml: t: cleanup_policy compact,delete with at_least_once: compaction keeps only the latest record per key, so earlier events are removed; a changelog of latest values is delivery_contract latest_per_key',
      ],
    );
    assert.deepEqual(errorsOf([{ ...base, min_insync_replicas: 2, delivery_contract: 'at_least_once' }], cluster()), []);
    // Nothing holds at_most_once to these.
    assert.deepEqual(
      errorsOf([{ ...base, min_insync_replicas: 1, cleanup_policy: 'compact', delivery_contract: 'at_most_once' }], cluster()),
      [],
    );
  });

  it('checks a contract against the settings in effect: the policy’s, else the topic’s, else the brokers’ defaults', () => {
    // min.insync.replicas is not in the policy: the topic's own 1 does not do for RF 3.
    const state = cluster({ topics: new Map([['t', topic(3, 3)]]) });
    assert.match(
      errorsOf([{ name: 't', delivery_contract: 'at_least_once' }], state)[0] ?? '',
      /min_insync_replicas 1 with replication_factor 3/,
    );
    const safe = cluster({ topics: new Map([['t', topic(3, 3, { 'min.insync.replicas': '2' })]]) });
    assert.deepEqual(errorsOf([{ name: 't', delivery_contract: 'at_least_once' }], safe), []);
    // A new topic takes the brokers' defaults.
    const defaults = cluster({ defaults: { replicationFactor: 3, minInsyncReplicas: 2, cleanupPolicy: 'compact' } });
    assert.match(
      errorsOf([{ name: 'n', delivery_contract: 'at_least_once' }], defaults)[0] ?? '',
      /cleanup_policy compact with at_least_once/,
    );
    assert.deepEqual(errorsOf([{ name: 'n', delivery_contract: 'latest_per_key' }], defaults), []);
  });

  it('refuses latest_per_key without compaction', () => {
    assert.deepEqual(errorsOf([{ name: 't', delivery_contract: 'latest_per_key' }], cluster()), [
      "sluice apply: topics.yaml: t: latest_per_key needs cleanup_policy compact (or compact,delete): with delete, retention removes a key's latest value with the older ones",
    ]);
  });
});

describe('tools/policy/plan: what apply would change', () => {
  it('creates a missing topic with the configs the policy sets, broker defaults (-1) for what it leaves out', () => {
    const plan = planOf([ORDER_EVENTS, { name: 'bare' }], cluster());
    assert.deepEqual(plan.actions, [
      {
        kind: 'create',
        file: 'topics.yaml',
        policy: ORDER_EVENTS,
        partitions: 24,
        replicationFactor: 3,
        configs: [
          ['min.insync.replicas', '2'],
          ['cleanup.policy', 'delete'],
          ['retention.ms', '604800000'],
        ],
      },
      { kind: 'create', file: 'topics.yaml', policy: { name: 'bare' }, partitions: -1, replicationFactor: -1, configs: [] },
    ]);
    assert.deepEqual(planCounts(plan), { create: 2, change: 0, delete: 0 });
  });

  it('compares only the configs a policy sets, by meaning', () => {
    const state = cluster({
      topics: new Map([['t', topic(3, 1, { 'retention.ms': '604800000', 'cleanup.policy': 'delete,compact', 'segment.bytes': '1000' })]]),
    });
    const same: TopicPolicy = {
      name: 't',
      partitions: 3,
      replication_factor: 1,
      retention_ms: 604800000,
      cleanup_policy: 'compact,delete',
    };
    assert.deepEqual(planOf([same], state).actions, [{ kind: 'unchanged', file: 'topics.yaml', policy: same }]);
    const [change] = planOf([{ ...same, retention_ms: 86400000, configs: { 'segment.bytes': '2000' } }], state).actions as ChangeAction[];
    assert.deepEqual(change!.configs, [
      { name: 'retention.ms', from: '604800000', to: '86400000' },
      { name: 'segment.bytes', from: '1000', to: '2000' },
    ]);
    assert.equal(change!.writeStore, false, 'a topic apply has nothing to store for is not put in the store');
  });

  it('plans a partition increase and a replication-factor change, and refuses them without their flags', () => {
    const state = cluster({ topics: new Map([['t', topic(2, 1)]]) });
    const grow = planOf([{ name: 't', partitions: 4 }], state, NONE_ALLOWED);
    assert.deepEqual((grow.actions[0] as ChangeAction).partitions, { from: 2, to: 4 });
    assert.deepEqual(grow.refusals.map(formatPolicyError), [
      'sluice apply: topics.yaml: t: partitions 2 -> 4 needs --allow-repartition (keys remap: the default partitioner hashes keys over the new partition count, so per-key order breaks between records written before and after the change)',
    ]);
    assert.deepEqual(planOf([{ name: 't', partitions: 4 }], state).refusals, []);

    const replicate = planOf([{ name: 't', replication_factor: 3 }], state, NONE_ALLOWED);
    assert.deepEqual((replicate.actions[0] as ChangeAction).replication, {
      from: 1,
      to: 3,
      reassignments: [
        { partition: 0, replicas: [1, 3, 2] },
        { partition: 1, replicas: [2, 1, 3] },
      ],
    });
    assert.match(formatPolicyError(replicate.refusals[0]!), /replication_factor 1 -> 3 needs --allow-reassign \(a partition reassignment/);
    assert.match(
      formatPolicyError(planOf([{ name: 't', partitions: 4, replication_factor: 3 }], state).refusals[0]!),
      /adding partitions and changing the replication factor take two applies/,
    );
  });

  it('treats schema and contract changes as changes of the store', () => {
    const stored: TopicPolicy = { name: 't', key_schema: 'order_id' };
    const state = cluster({ topics: new Map([['t', topic(1, 1)]]), stored: new Map([['t', stored]]) });
    assert.equal(planOf([stored], state).actions[0]!.kind, 'unchanged');
    const [change] = planOf([{ name: 't', key_schema: 'customer_id', value_schema: 'v1' }], state).actions as ChangeAction[];
    assert.deepEqual(change!.stored, [
      { key: 'key_schema', from: 'order_id', to: 'customer_id' },
      { key: 'value_schema', from: null, to: 'v1' },
    ]);
    assert.equal(change!.writeStore, true);
    // A managed topic's store entry follows any change.
    const [retention] = planOf([{ ...stored, retention_ms: 5 }], state).actions as ChangeAction[];
    assert.deepEqual([retention!.stored, retention!.writeStore], [[], true]);
  });

  it('deletes topics of the store no file names only with --allow-delete; otherwise keeps them', () => {
    const state = cluster({
      topics: new Map([['old', topic(1, 1)]]),
      stored: new Map([
        ['old', { name: 'old' }],
        ['gone', { name: 'gone' }],
      ]),
    });
    assert.deepEqual(planOf([], state, NONE_ALLOWED).actions, [
      { kind: 'keep', name: 'gone', exists: false },
      { kind: 'keep', name: 'old', exists: true },
    ]);
    assert.equal(hasChanges(planOf([], state, NONE_ALLOWED)), false);
    const del = planOf([], state);
    assert.deepEqual(del.actions, [
      { kind: 'delete', name: 'gone', exists: false },
      { kind: 'delete', name: 'old', exists: true },
    ]);
    assert.deepEqual(planCounts(del), { create: 0, change: 0, delete: 2 });
  });

  it('compares config values by meaning: numbers, booleans, lists, cleanup.policy in either order', () => {
    assert.ok(sameConfigValue('retention.ms', '1000', '1000.0'));
    assert.ok(sameConfigValue('unclean.leader.election.enable', 'false', 'FALSE'));
    assert.ok(sameConfigValue('follower.replication.throttled.replicas', '0:1, 1:2', '0:1,1:2'));
    assert.ok(sameConfigValue('cleanup.policy', 'delete,compact', 'compact,delete'));
    assert.ok(!sameConfigValue('retention.ms', '1000', '1001'));
    assert.ok(!sameConfigValue('retention.ms', null, '1000'));
  });
});

describe('tools/policy/plan: reassigning replicas', () => {
  it('keeps current replicas first, adds the least-loaded brokers, drops the last ones (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }).chain((n) =>
          fc.record({
            brokers: fc.constant(Array.from({ length: n }, (_, i) => i + 1)),
            rf: fc.integer({ min: 1, max: n }),
            current: fc.array(
              fc.shuffledSubarray(
                Array.from({ length: n }, (_, i) => i + 1),
                { minLength: 1 },
              ),
              { minLength: 1, maxLength: 8 },
            ),
          }),
        ),
        ({ brokers, rf, current }) => {
          const next = reassignReplicas(current, brokers, rf);
          assert.equal(next.length, current.length);
          for (const [p, r] of next.entries()) {
            assert.equal(r.partition, p);
            assert.equal(r.replicas.length, rf);
            assert.equal(new Set(r.replicas).size, rf, 'no broker twice');
            assert.ok(r.replicas.every((b) => brokers.includes(b)));
            const kept = Math.min(rf, current[p]!.length);
            assert.deepEqual(r.replicas.slice(0, kept), current[p]!.slice(0, kept), 'current replicas first, the preferred leader kept');
          }
        },
      ),
    );
  });

  it('spreads added replicas over the brokers holding the fewest', () => {
    const next = reassignReplicas([[1], [1], [1], [1]], [1, 2, 3], 2);
    assert.deepEqual(
      next.map((r) => r.replicas),
      [
        [1, 2],
        [1, 3],
        [1, 2],
        [1, 3],
      ],
    );
  });
});

/** Kafka's effect of a plan, as a model: what the cluster and the store hold after apply. */
function applied(state: ClusterState, plan: Plan): ClusterState {
  const topics = new Map(state.topics);
  const stored = new Map(state.stored);
  const inherited = (): Map<string, string | null> =>
    new Map(
      Object.entries({
        ...INHERITED,
        'min.insync.replicas': String(state.defaults.minInsyncReplicas),
        'cleanup.policy': state.defaults.cleanupPolicy,
      }),
    );
  for (const a of plan.actions) {
    if (a.kind === 'create') {
      const configs = inherited();
      for (const [k, v] of a.configs) configs.set(k, v);
      const rf = a.replicationFactor < 0 ? state.defaults.replicationFactor : a.replicationFactor;
      const partitions = a.partitions < 0 ? 1 : a.partitions;
      topics.set(a.policy.name, {
        replicas: Array.from({ length: partitions }, (_, p) =>
          Array.from({ length: rf }, (_, i) => state.brokers[(p + i) % state.brokers.length]!),
        ),
        configs,
      });
      stored.set(a.policy.name, a.policy);
    } else if (a.kind === 'change') {
      const before = topics.get(a.policy.name)!;
      const configs = new Map(before.configs);
      for (const c of a.configs) configs.set(c.name, c.to);
      let replicas = before.replicas.map((r) => [...r]);
      if (a.replication !== null) replicas = a.replication.reassignments.map((r) => [...r.replicas]);
      if (a.partitions !== null) {
        for (let p = replicas.length; p < a.partitions.to; p++) replicas.push([...replicas[0]!]);
      }
      topics.set(a.policy.name, { replicas, configs });
      if (a.writeStore) stored.set(a.policy.name, a.policy);
    } else if (a.kind === 'delete') {
      topics.delete(a.name);
      stored.delete(a.name);
    }
  }
  return { ...state, topics, stored };
}

const NAMES = ['a', 'b', 'c', 'd'];

const clusterState: fc.Arbitrary<ClusterState> = fc.integer({ min: 1, max: 4 }).chain((n) => {
  const brokers = Array.from({ length: n }, (_, i) => i + 1);
  const topicState = fc
    .record({
      partitions: fc.integer({ min: 1, max: 4 }),
      rf: fc.integer({ min: 1, max: n }),
      minIsr: fc.integer({ min: 1, max: 3 }),
      cleanup: fc.constantFrom(...CLEANUP_POLICIES),
      retentionMs: fc.integer({ min: -1, max: 1000 }),
      segmentMs: fc.integer({ min: 1, max: 1000 }),
    })
    .map((t) =>
      topic(
        t.partitions,
        t.rf,
        {
          'min.insync.replicas': String(t.minIsr),
          'cleanup.policy': t.cleanup,
          'retention.ms': String(t.retentionMs),
          'segment.ms': String(t.segmentMs),
        },
        brokers,
      ),
    );
  const storedPolicy = (name: string) =>
    fc
      .record({ key_schema: fc.constantFrom('k1', 'k2'), delivery_contract: fc.constantFrom(...DELIVERY_CONTRACTS) }, { requiredKeys: [] })
      .map((p) => ({ name, ...p }));
  return fc.record({
    brokers: fc.constant(brokers),
    defaults: fc.record({
      replicationFactor: fc.integer({ min: 1, max: n }),
      minInsyncReplicas: fc.integer({ min: 1, max: 2 }),
      cleanupPolicy: fc.constantFrom(...CLEANUP_POLICIES),
    }),
    topics: fc
      .subarray(NAMES)
      .chain((names) => fc.tuple(...names.map((name) => topicState.map((t) => [name, t] as const))).map((e) => new Map(e))),
    stored: fc
      .subarray(NAMES)
      .chain((names) => fc.tuple(...names.map((name) => storedPolicy(name).map((p) => [name, p] as const))).map((e) => new Map(e))),
  });
});

const policy = (name: string): fc.Arbitrary<TopicPolicy> =>
  fc
    .record(
      {
        partitions: fc.integer({ min: 1, max: 6 }),
        replication_factor: fc.integer({ min: 1, max: 4 }),
        min_insync_replicas: fc.integer({ min: 1, max: 3 }),
        cleanup_policy: fc.constantFrom(...CLEANUP_POLICIES),
        retention_ms: fc.integer({ min: -1, max: 1000 }),
        retention_bytes: fc.integer({ min: -1, max: 1000 }),
        key_schema: fc.constantFrom('k1', 'k2'),
        value_schema: fc.constantFrom('v1', 'v2'),
        delivery_contract: fc.constantFrom(...DELIVERY_CONTRACTS),
        configs: fc.record({ 'segment.ms': fc.integer({ min: 1, max: 1000 }).map(String) }),
      },
      { requiredKeys: [] },
    )
    .map((p) => ({ name, ...p }));

const policies: fc.Arbitrary<TopicPolicy[]> = fc.subarray(NAMES).chain((names) => fc.tuple(...names.map(policy)));

describe('tools/policy/plan: applying a plan (property)', () => {
  it('after a plan is applied, planning again finds nothing to change, and every policy setting holds', () => {
    let planned = 0;
    fc.assert(
      fc.property(clusterState, policies, fc.boolean(), (state, ps, allowDelete) => {
        for (const p of ps) assert.deepEqual(checkPolicy(p).reasons, []);
        const options = { ...ALL_ALLOWED, allowDelete };
        const first = planApply(sourced(...ps), state, options);
        fc.pre(first.plan !== null && first.plan.refusals.length === 0);
        planned++;
        const after = applied(state, first.plan!);
        const again = planApply(sourced(...ps), after, options);
        assert.deepEqual(again.errors, []);
        assert.equal(hasChanges(again.plan!), false, JSON.stringify(again.plan!.actions));
        for (const p of ps) {
          const t = after.topics.get(p.name)!;
          for (const [name, value] of policyConfigs(p)) assert.ok(sameConfigValue(name, t.configs.get(name) ?? null, value));
          if (p.partitions !== undefined) assert.equal(t.replicas.length, p.partitions);
          if (p.replication_factor !== undefined) assert.ok(t.replicas.every((r) => r.length === p.replication_factor));
        }
        if (allowDelete)
          assert.deepEqual(
            [...after.stored.keys()].filter((n) => !ps.some((p) => p.name === n)),
            [],
          );
      }),
      { numRuns: 300 },
    );
    assert.ok(planned >= 100, `only ${planned} of the runs had a valid plan`);
  });
});
