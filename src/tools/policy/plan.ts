/**
 * The plan of `sluice apply`: policies compared with what the cluster has (a pure function of
 * both, so it is tested without a cluster). It checks what needs the cluster to check (a
 * partition decrease, replicas beyond the live brokers, a delivery contract the effective
 * settings cannot honour) and lists, per topic, what apply would do: create it, change configs,
 * add partitions, reassign replicas, update the policy store, or nothing. Changes Kafka allows
 * but that cost something (keys remapping to other partitions, logs copied to new replicas)
 * are refused unless the caller allowed them.
 */
import type { PartitionReassignment } from '../../client/reassignments.ts';
import {
  type CleanupPolicy,
  type DeliveryContract,
  type PolicyError,
  STORED_KEYS,
  type SourcedPolicy,
  type StoredKey,
  type TopicPolicy,
  normalizeCleanupPolicy,
  policyConfigs,
} from './policy.ts';

/** A topic as the cluster has it. */
export interface TopicState {
  /** Replica node ids per partition, by partition index, the preferred leader first. */
  replicas: readonly (readonly number[])[];
  /** Every config in effect on the topic (set on it or inherited), null when sensitive. */
  configs: ReadonlyMap<string, string | null>;
}

/** What a new topic gets for what its policy leaves out (the brokers' defaults). */
export interface ClusterDefaults {
  replicationFactor: number;
  minInsyncReplicas: number;
  cleanupPolicy: CleanupPolicy;
}

export interface ClusterState {
  /** Node ids of the live brokers. */
  brokers: readonly number[];
  defaults: ClusterDefaults;
  /** The topics the policies or the store name, those that exist. */
  topics: ReadonlyMap<string, TopicState>;
  /** The policy store's contents. */
  stored: ReadonlyMap<string, TopicPolicy>;
}

export interface PlanOptions {
  /** Delete topics in the store that no file names any more. */
  allowDelete: boolean;
  /** Add partitions, remapping keys. */
  allowRepartition: boolean;
  /** Change replication factors by reassigning partitions. */
  allowReassign: boolean;
}

export interface ConfigChange {
  name: string;
  /** null: the topic does not report it. */
  from: string | null;
  to: string;
}

export interface StoredChange {
  key: StoredKey;
  from: string | null;
  to: string | null;
}

export interface CreateAction {
  kind: 'create';
  file: string;
  policy: TopicPolicy;
  /** -1: the broker's default. */
  partitions: number;
  replicationFactor: number;
  configs: [string, string][];
}

export interface ChangeAction {
  kind: 'change';
  file: string;
  policy: TopicPolicy;
  configs: ConfigChange[];
  partitions: { from: number; to: number } | null;
  replication: { from: number; to: number; reassignments: PartitionReassignment[] } | null;
  stored: StoredChange[];
  /** Whether the store gets the policy anew (its topic is in the store, or now has something to store). */
  writeStore: boolean;
}

export type TopicAction =
  | CreateAction
  | ChangeAction
  | { kind: 'unchanged'; file: string; policy: TopicPolicy }
  /** A topic in the store that no file names: deleted (or, when it is gone already, forgotten). */
  | { kind: 'delete'; name: string; exists: boolean }
  /** The same without --allow-delete: left alone. */
  | { kind: 'keep'; name: string; exists: boolean };

export interface Plan {
  actions: TopicAction[];
  /** Changes the plan holds that the options do not allow: apply refuses the whole plan. */
  refusals: PolicyError[];
}

/** What the default partitioner does to keyed records when partitions are added. */
export const REPARTITION_COST =
  'keys remap: the default partitioner hashes keys over the new partition count, so per-key order breaks between records written before and after the change';

const CONTRACTS_NEEDING_EVERY_EVENT: ReadonlySet<DeliveryContract> = new Set(['at_least_once', 'exactly_once']);

/** Whether a config's value in the cluster is the one a policy asks for (numbers, booleans and lists compared by meaning). */
export function sameConfigValue(name: string, current: string | null, wanted: string): boolean {
  if (current === null) return false;
  if (name === 'cleanup.policy') return normalizeCleanupPolicy(current) === normalizeCleanupPolicy(wanted);
  const a = current.trim();
  const b = wanted.trim();
  if (a === b) return true;
  const number = /^-?\d+(\.\d+)?$/;
  if (number.test(a) && number.test(b)) return Number(a) === Number(b);
  if (/^(true|false)$/i.test(a) && /^(true|false)$/i.test(b)) return a.toLowerCase() === b.toLowerCase();
  const list = (s: string) =>
    s
      .split(',')
      .map((x) => x.trim())
      .join(',');
  return list(a) === list(b);
}

/** The replication factor a topic has: the replica count of its partitions (the largest, during a reassignment). */
export function replicationFactorOf(topic: TopicState): number {
  return Math.max(0, ...topic.replicas.map((r) => r.length));
}

function intConfig(topic: TopicState | undefined, name: string): number | undefined {
  const v = topic?.configs.get(name);
  return v === null || v === undefined || !/^\d+$/.test(v) ? undefined : Number(v);
}

/** The settings a contract is checked against: the policy's, else the topic's, else the brokers' defaults. */
function effectiveSettings(policy: TopicPolicy, topic: TopicState | undefined, defaults: ClusterDefaults) {
  const currentCleanup = topic?.configs.get('cleanup.policy');
  const cleanup =
    policy.cleanup_policy ??
    (currentCleanup === null || currentCleanup === undefined ? null : normalizeCleanupPolicy(currentCleanup)) ??
    defaults.cleanupPolicy;
  return {
    replicationFactor: policy.replication_factor ?? (topic !== undefined ? replicationFactorOf(topic) : defaults.replicationFactor),
    minInsyncReplicas: policy.min_insync_replicas ?? intConfig(topic, 'min.insync.replicas') ?? defaults.minInsyncReplicas,
    cleanup,
  };
}

/** Why a policy cannot be applied to the cluster as it is (empty when it can). */
function validate(policy: TopicPolicy, state: ClusterState): string[] {
  const topic = state.topics.get(policy.name);
  const reasons: string[] = [];
  if (topic !== undefined && policy.partitions !== undefined && policy.partitions < topic.replicas.length) {
    reasons.push(`partitions ${topic.replicas.length} -> ${policy.partitions}: Kafka cannot remove partitions`);
  }
  const brokers = state.brokers.length;
  if (policy.replication_factor !== undefined && policy.replication_factor > brokers) {
    reasons.push(
      `replication_factor ${policy.replication_factor} is more than the ${brokers} live broker(s): each replica needs a broker of its own`,
    );
  }
  const e = effectiveSettings(policy, topic, state.defaults);
  const isr = `min_insync_replicas ${e.minInsyncReplicas}`;
  const rf = `replication_factor ${e.replicationFactor}`;
  const managesReplication = policy.replication_factor !== undefined || policy.min_insync_replicas !== undefined;
  if ((managesReplication || policy.delivery_contract !== undefined) && e.minInsyncReplicas > e.replicationFactor) {
    reasons.push(`${isr} > ${rf}: no acks=all write could ever be acknowledged`);
  }
  const contract = policy.delivery_contract;
  if (contract !== undefined && CONTRACTS_NEEDING_EVERY_EVENT.has(contract)) {
    if (e.replicationFactor > 1 && e.minInsyncReplicas === e.replicationFactor) {
      reasons.push(
        `${isr} = ${rf}: no broker may fail without acks=all writes being rejected; ${contract} needs min_insync_replicas < replication_factor`,
      );
    }
    if (e.replicationFactor >= 3 && e.minInsyncReplicas < 2) {
      reasons.push(
        `${isr} with ${rf}: an acknowledged write may live on one broker only and be lost with it; ${contract} needs min_insync_replicas >= 2`,
      );
    }
    if (e.cleanup.includes('compact')) {
      reasons.push(
        `cleanup_policy ${e.cleanup} with ${contract}: compaction keeps only the latest record per key, so earlier events are removed; ` +
          'a changelog of latest values is delivery_contract latest_per_key',
      );
    }
  }
  if (contract === 'latest_per_key' && !e.cleanup.includes('compact')) {
    reasons.push(
      `latest_per_key needs cleanup_policy compact (or compact,delete): with ${e.cleanup}, retention removes a key's latest value with the older ones`,
    );
  }
  return reasons;
}

/**
 * New replica lists for `rf` replicas: each partition keeps its current replicas first (the
 * preferred leader stays), adds the brokers holding the fewest of the topic's replicas, or
 * drops its last ones.
 */
export function reassignReplicas(current: readonly (readonly number[])[], brokers: readonly number[], rf: number): PartitionReassignment[] {
  const load = new Map<number, number>(brokers.map((b) => [b, 0]));
  for (const replicas of current) for (const r of replicas) load.set(r, (load.get(r) ?? 0) + 1);
  return current.map((replicas, partition) => {
    const next = replicas.slice(0, rf);
    for (const dropped of replicas.slice(rf)) load.set(dropped, load.get(dropped)! - 1);
    while (next.length < rf) {
      const candidates = brokers.filter((b) => !next.includes(b));
      const fewest = candidates.reduce((best, b) =>
        load.get(b)! < load.get(best)! || (load.get(b) === load.get(best) && b < best) ? b : best,
      );
      next.push(fewest);
      load.set(fewest, load.get(fewest)! + 1);
    }
    return { partition, replicas: next };
  });
}

function storedChanges(policy: TopicPolicy, stored: TopicPolicy | undefined): StoredChange[] {
  return STORED_KEYS.map((key) => ({ key, from: stored?.[key] ?? null, to: policy[key] ?? null })).filter((c) => c.from !== c.to);
}

/** What applying `policy` to an existing topic changes; refusals for what the options do not allow. */
function changeOf(p: SourcedPolicy, topic: TopicState, state: ClusterState, options: PlanOptions, refusals: PolicyError[]): TopicAction {
  const { policy, file } = p;
  const refuse = (reason: string) => refusals.push({ file, topic: policy.name, reason });
  const configs = policyConfigs(policy)
    .map(([name, to]) => ({ name, from: topic.configs.get(name) ?? null, to }))
    .filter((c) => !sameConfigValue(c.name, c.from, c.to));
  const currentPartitions = topic.replicas.length;
  const partitions =
    policy.partitions !== undefined && policy.partitions > currentPartitions ? { from: currentPartitions, to: policy.partitions } : null;
  const currentRf = replicationFactorOf(topic);
  const wantedRf = policy.replication_factor;
  const replication =
    wantedRf !== undefined && wantedRf !== currentRf
      ? { from: currentRf, to: wantedRf, reassignments: reassignReplicas(topic.replicas, state.brokers, wantedRf) }
      : null;
  if (partitions !== null && !options.allowRepartition) {
    refuse(`partitions ${partitions.from} -> ${partitions.to} needs --allow-repartition (${REPARTITION_COST})`);
  }
  if (replication !== null && !options.allowReassign) {
    refuse(
      `replication_factor ${replication.from} -> ${replication.to} needs --allow-reassign ` +
        '(a partition reassignment copies every partition log to its new replicas while the topic serves)',
    );
  }
  if (partitions !== null && replication !== null) {
    refuse('adding partitions and changing the replication factor take two applies: new partitions would get the old replication factor');
  }
  const stored = storedChanges(policy, state.stored.get(policy.name));
  const clusterChanges = configs.length > 0 || partitions !== null || replication !== null;
  if (!clusterChanges && stored.length === 0) return { kind: 'unchanged', file, policy };
  const writeStore = stored.length > 0 || state.stored.has(policy.name);
  return { kind: 'change', file, policy, configs, partitions, replication, stored, writeStore };
}

/**
 * The plan for `policies` on a cluster in `state`, or why the policies cannot be applied to it
 * (each reason one error; then there is no plan).
 */
export function planApply(
  policies: readonly SourcedPolicy[],
  state: ClusterState,
  options: PlanOptions,
): { errors: PolicyError[]; plan: Plan | null } {
  const errors = policies.flatMap((p) => validate(p.policy, state).map((reason) => ({ file: p.file, topic: p.policy.name, reason })));
  if (errors.length > 0) return { errors, plan: null };
  const refusals: PolicyError[] = [];
  const actions: TopicAction[] = policies.map((p) => {
    const topic = state.topics.get(p.policy.name);
    if (topic !== undefined) return changeOf(p, topic, state, options, refusals);
    return {
      kind: 'create',
      file: p.file,
      policy: p.policy,
      partitions: p.policy.partitions ?? -1,
      replicationFactor: p.policy.replication_factor ?? -1,
      configs: policyConfigs(p.policy),
    };
  });
  const named = new Set(policies.map((p) => p.policy.name));
  for (const name of [...state.stored.keys()].filter((n) => !named.has(n)).sort()) {
    actions.push({ kind: options.allowDelete ? 'delete' : 'keep', name, exists: state.topics.has(name) });
  }
  return { errors: [], plan: { actions, refusals } };
}

export interface PlanCounts {
  create: number;
  change: number;
  delete: number;
}

export function planCounts(plan: Plan): PlanCounts {
  const count = (kind: TopicAction['kind']) => plan.actions.filter((a) => a.kind === kind).length;
  return { create: count('create'), change: count('change'), delete: count('delete') };
}

export function hasChanges(plan: Plan): boolean {
  const c = planCounts(plan);
  return c.create + c.change + c.delete > 0;
}
