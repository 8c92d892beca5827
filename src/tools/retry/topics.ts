/**
 * Creates the retry and dead-letter topics a source topic needs when they are missing: as many
 * partitions as the source topic, and the cluster's default replication factor (-1 asks the
 * broker for it), so they are as spread out as the topic they serve.
 */
import type { Admin } from 'kafkajs';

/** The source topic's partition count; throws when the topic does not exist. */
async function partitionCount(admin: Admin, topic: string): Promise<number> {
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
  const partitions = topics.find((t) => t.name === topic)?.partitions.length ?? 0;
  if (partitions === 0) throw new Error(`consumeWithRetries: the source topic ${topic} has no partitions`);
  return partitions;
}

/** Creates those of `needed` that do not exist yet; returns the names created. */
export async function ensureTopics(admin: Admin, sourceTopic: string, needed: readonly string[]): Promise<string[]> {
  const numPartitions = await partitionCount(admin, sourceTopic);
  const existing = new Set(await admin.listTopics());
  const missing = needed.filter((t) => !existing.has(t));
  if (missing.length === 0) return [];
  // A topic created meanwhile (another instance starting) makes kafkajs answer false, not throw.
  await admin.createTopics({ topics: missing.map((topic) => ({ topic, numPartitions, replicationFactor: -1 })), waitForLeaders: true });
  return missing;
}
