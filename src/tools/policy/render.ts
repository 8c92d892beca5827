/**
 * A plan as text, in the manner of `terraform plan`: `+` creates, `~` changes, `-` deletes,
 * `=` leaves a topic as it is, then a count. Each created or changed topic with a delivery
 * contract is followed by what its producers and consumers must do to keep it: the cluster
 * settings make a contract possible, the clients keep it.
 *
 *   + create topic order.events (24 partitions, replication factor 3)
 *       min.insync.replicas = 2
 *   ~ order.events: retention.ms 604800000 -> 86400000
 *   = payments: no changes
 *   Plan: 1 to create, 1 to change, 0 to delete.
 */
import type { DeliveryContract, TopicPolicy } from './policy.ts';
import { STORED_KEYS } from './policy.ts';
import { type ChangeAction, type CreateAction, type Plan, REPARTITION_COST, hasChanges, planCounts } from './plan.ts';
import { POLICY_STORE_TOPIC } from './store.ts';

export const NO_CHANGES = 'No changes. The cluster matches the policies.';

/** What clients must do for a contract to hold (the plan states it; apply cannot set it). */
export const CONTRACT_GUIDANCE: Readonly<Record<DeliveryContract, string>> = {
  at_most_once:
    'producers: acks=0 or acks=1 tolerated (a record may be lost, never written twice); consumers: commit offsets before processing',
  at_least_once:
    'producers: acks=all, enable.idempotence=true, retries; consumers: commit offsets after processing (a record may be processed twice)',
  exactly_once:
    'producers: acks=all, enable.idempotence=true, a transactional.id, output and consumed offsets in one transaction; ' +
    'consumers: isolation.level=read_committed',
  latest_per_key:
    'producers: key every record (compaction keeps the latest value per key; a null value deletes the key); ' +
    'consumers: treat each record as the current value of its key',
};

const shown = (v: string | null): string => (v === null ? '(unset)' : v);

function guidance(policy: TopicPolicy): string[] {
  return policy.delivery_contract === undefined ? [] : [`    guidance: ${CONTRACT_GUIDANCE[policy.delivery_contract]}`];
}

function createLines(a: CreateAction): string[] {
  const partitions = a.partitions < 0 ? "the brokers' default partitions" : `${a.partitions} partition${a.partitions === 1 ? '' : 's'}`;
  const rf = a.replicationFactor < 0 ? "the brokers' default replication factor" : `replication factor ${a.replicationFactor}`;
  const stored = STORED_KEYS.filter((k) => a.policy[k] !== undefined).map((k) => `    ${k} = ${a.policy[k]}  (${POLICY_STORE_TOPIC})`);
  return [
    `+ create topic ${a.policy.name} (${partitions}, ${rf})`,
    ...a.configs.map(([name, value]) => `    ${name} = ${value}`),
    ...stored,
    ...guidance(a.policy),
  ];
}

function changeLines(a: ChangeAction): string[] {
  const name = a.policy.name;
  const lines = a.configs.map((c) => `~ ${name}: ${c.name} ${shown(c.from)} -> ${c.to}`);
  if (a.partitions !== null) lines.push(`~ ${name}: partitions ${a.partitions.from} -> ${a.partitions.to} (${REPARTITION_COST})`);
  if (a.replication !== null) {
    lines.push(
      `~ ${name}: replication factor ${a.replication.from} -> ${a.replication.to} ` +
        '(partition reassignment: each partition log is copied to its new replicas)',
    );
    for (const r of a.replication.reassignments) lines.push(`    partition ${r.partition}: replicas -> ${r.replicas.join(',')}`);
  }
  for (const c of a.stored) lines.push(`~ ${name}: ${c.key} ${shown(c.from)} -> ${shown(c.to)}  (${POLICY_STORE_TOPIC})`);
  return [...lines, ...guidance(a.policy)];
}

/** The plan's text, one line each; `No changes...` alone (after any kept topic) when there is nothing to do. */
export function renderPlan(plan: Plan): string[] {
  const lines: string[] = [];
  for (const a of plan.actions) {
    if (a.kind === 'keep') {
      lines.push(
        a.exists
          ? `  ${a.name}: in ${POLICY_STORE_TOPIC} but in no policy file: kept (--allow-delete deletes it)`
          : `  ${a.name}: in ${POLICY_STORE_TOPIC} but in no policy file, and the topic is gone (--allow-delete forgets it)`,
      );
    }
  }
  if (!hasChanges(plan)) return [...lines, NO_CHANGES];
  for (const a of plan.actions) {
    if (a.kind === 'create') lines.push(...createLines(a));
    else if (a.kind === 'change') lines.push(...changeLines(a));
    else if (a.kind === 'unchanged') lines.push(`= ${a.policy.name}: no changes`);
    else if (a.kind === 'delete') {
      lines.push(
        a.exists
          ? `- delete topic ${a.name} (in ${POLICY_STORE_TOPIC}, in no policy file)`
          : `- forget ${a.name} (in ${POLICY_STORE_TOPIC}, in no policy file; the topic is gone already)`,
      );
    }
  }
  const c = planCounts(plan);
  lines.push(`Plan: ${c.create} to create, ${c.change} to change, ${c.delete} to delete.`);
  return lines;
}
