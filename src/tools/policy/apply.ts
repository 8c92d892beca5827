/**
 * Carries out a plan over the Admin API, topic by topic in the plan's order: CreateTopics,
 * IncrementalAlterConfigs, CreatePartitions, AlterPartitionReassignments, DeleteTopics, then
 * the policy store. Each step waits until the cluster shows its effect (configs described,
 * reassignments done), so that what apply reports done is what the next plan reads and a
 * second apply finds nothing to do. A failure stops the run where it happened: the steps
 * reported before it are done, the rest not.
 */
import type { KafkaCluster } from '../../client/cluster.ts';
import { describeConfigs } from '../../client/configs.ts';
import { sleep } from '../../client/errors.ts';
import { alterPartitionReassignments, listPartitionReassignments } from '../../client/reassignments.ts';
import { alterTopicConfigs, createTopic, deleteTopics, increasePartitions } from '../../client/topics.ts';
import { type ChangeAction, type Plan, type PlanCounts, planCounts, sameConfigValue } from './plan.ts';
import { PolicyStoreWriter } from './store.ts';

/** How long a config change may take to show in DescribeConfigs (brokers apply it from the metadata log). */
const CONFIG_WAIT_MS = 15_000;
/** How long a reassignment may take to copy the partitions' logs before apply gives up waiting. */
const REASSIGNMENT_WAIT_MS = 120_000;
const POLL_MS = 200;

async function awaitConfigs(cluster: KafkaCluster, topic: string, wanted: readonly { name: string; to: string }[]): Promise<void> {
  const deadline = Date.now() + CONFIG_WAIT_MS;
  while (Date.now() < deadline) {
    const current = new Map((await describeConfigs(cluster, { type: 'topic', name: topic }, true)).map((c) => [c.name, c.value]));
    if (wanted.every((w) => sameConfigValue(w.name, current.get(w.name) ?? null, w.to))) return;
    await sleep(POLL_MS);
  }
  throw new Error(
    `the cluster accepted the config change of ${topic} but DescribeConfigs does not show it after ${CONFIG_WAIT_MS / 1000} s; apply again to see where it stands`,
  );
}

async function awaitReassignment(cluster: KafkaCluster, topic: string, partitions: readonly number[], rf: number): Promise<void> {
  const deadline = Date.now() + REASSIGNMENT_WAIT_MS;
  for (;;) {
    const ongoing = await listPartitionReassignments(cluster, topic, partitions);
    const t = ongoing.length === 0 ? await cluster.topic(topic) : null;
    if (t?.partitions.every((p) => p.replicaNodes.length === rf)) return;
    if (Date.now() >= deadline) {
      throw new Error(
        `the reassignment of ${topic} is still copying after ${REASSIGNMENT_WAIT_MS / 1000} s; it goes on in the cluster, apply again once it is done`,
      );
    }
    await sleep(POLL_MS);
  }
}

async function applyChange(cluster: KafkaCluster, a: ChangeAction, report: (line: string) => void): Promise<void> {
  const name = a.policy.name;
  if (a.configs.length > 0) {
    await alterTopicConfigs(cluster, name, { set: a.configs.map((c) => [c.name, c.to] as const), delete: [] });
    await awaitConfigs(cluster, name, a.configs);
    report(`Altered ${name}: ${a.configs.map((c) => `${c.name}=${c.to}`).join(', ')}.`);
  }
  if (a.partitions !== null) {
    await increasePartitions(cluster, name, a.partitions.to);
    report(`Added partitions to ${name}: ${a.partitions.from} -> ${a.partitions.to}.`);
  }
  if (a.replication !== null) {
    const { reassignments, to } = a.replication;
    await alterPartitionReassignments(cluster, name, reassignments);
    await awaitReassignment(
      cluster,
      name,
      reassignments.map((r) => r.partition),
      to,
    );
    report(`Reassigned ${name}: replication factor ${a.replication.from} -> ${to}.`);
  }
}

/** Applies `plan`, reporting each step done; resolves with what was created, changed and deleted. */
export async function executePlan(
  cluster: KafkaCluster,
  plan: Plan,
  brokerCount: number,
  report: (line: string) => void,
): Promise<PlanCounts> {
  const store = new PolicyStoreWriter(cluster, brokerCount);
  for (const a of plan.actions) {
    switch (a.kind) {
      case 'create':
        await createTopic(
          cluster,
          { name: a.policy.name, numPartitions: a.partitions, replicationFactor: a.replicationFactor, configs: a.configs },
          false,
        );
        report(`Created topic ${a.policy.name}.`);
        await store.put(a.policy);
        break;
      case 'change':
        await applyChange(cluster, a, report);
        if (a.writeStore) await store.put(a.policy);
        if (a.stored.length > 0) report(`Stored ${a.stored.map((c) => c.key).join(', ')} of ${a.policy.name}.`);
        break;
      case 'delete':
        if (a.exists) {
          await deleteTopics(cluster, [a.name], true);
          report(`Deleted topic ${a.name}.`);
        }
        await store.remove(a.name);
        if (!a.exists) report(`Forgot ${a.name}.`);
        break;
      default:
        break;
    }
  }
  return planCounts(plan);
}
