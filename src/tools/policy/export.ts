/**
 * `sluice apply --export`: the policies of existing topics, so that a cluster set up by hand
 * can be taken over as code. Each policy holds the topic's partition count and replication
 * factor, the configs set on the topic itself (the named keys where a policy has one, the
 * rest under `configs`), and what the policy store keeps for it. Applying an export changes
 * nothing.
 */
import { stringify } from 'yaml';
import type { KafkaCluster } from '../../client/cluster.ts';
import { describeTopics, listTopics } from '../../client/topics.ts';
import {
  INTERNAL_PREFIX,
  NAMED_CONFIGS,
  POLICY_KEYS,
  type NamedConfigKey,
  STORED_KEYS,
  type TopicPolicy,
  normalizeCleanupPolicy,
} from './policy.ts';
import { readPolicyStore } from './store.ts';

const NAMED_BY_CONFIG = new Map<string, NamedConfigKey>(Object.entries(NAMED_CONFIGS).map(([k, config]) => [config, k as NamedConfigKey]));

/** A topic override as a policy holds it: under its named key when it has one and the value fits it, else under `configs`. */
function placeConfig(policy: TopicPolicy, configs: Record<string, string>, name: string, value: string): void {
  const key = NAMED_BY_CONFIG.get(name);
  if (key === 'cleanup_policy') {
    const cleanup = normalizeCleanupPolicy(value);
    if (cleanup !== null) {
      policy.cleanup_policy = cleanup;
      return;
    }
  } else if (key !== undefined && /^-?\d+$/.test(value) && Number.isSafeInteger(Number(value))) {
    policy[key] = Number(value);
    return;
  }
  configs[name] = value;
}

/** The policy with its keys in the order policy files list them. */
function inKeyOrder(policy: TopicPolicy): TopicPolicy {
  const fields = policy as unknown as Record<string, unknown>;
  return Object.fromEntries(POLICY_KEYS.filter((k) => fields[k] !== undefined).map((k) => [k, fields[k]])) as unknown as TopicPolicy;
}

/** The policies of `names` (every topic not named __* when empty), in name order. */
export async function exportPolicies(cluster: KafkaCluster, names: readonly string[]): Promise<TopicPolicy[]> {
  const wanted =
    names.length > 0 ? [...names] : (await listTopics(cluster, false)).map((t) => t.name).filter((n) => !n.startsWith(INTERNAL_PREFIX));
  if (wanted.length === 0) return [];
  const [topics, store] = await Promise.all([describeTopics(cluster, wanted), readPolicyStore(cluster)]);
  return topics
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((t) => {
      const policy: TopicPolicy = { name: t.name, partitions: t.partitionCount, replication_factor: t.replicationFactor };
      const configs: Record<string, string> = {};
      // Sensitive values are not sent: a policy cannot hold them.
      for (const [name, value] of Object.entries(t.configs)) if (value !== null) placeConfig(policy, configs, name, value);
      const stored = store.policies.get(t.name);
      for (const key of STORED_KEYS) if (stored?.[key] !== undefined) Object.assign(policy, { [key]: stored[key] });
      if (Object.keys(configs).length > 0) policy.configs = configs;
      return inKeyOrder(policy);
    });
}

/** The YAML `sluice apply -f` reads back. */
export function exportText(policies: readonly TopicPolicy[]): string {
  return stringify({ topic_policies: policies });
}
