/**
 * Applies cluster metadata to the ReplicaManager: on startup the whole image, then every
 * committed delta — become leader or follower of the partitions this broker replicates
 * (opening or creating their logs with the topic's effective config), drop the ones it no
 * longer replicates, delete the logs of deleted topics, and push config changes to logs.
 * Deltas are applied one after another, in commit order.
 */
import type { MetadataDelta, MetadataImage, PartitionImage } from '../metadata/image.ts';
import type { TopicConfigLookup } from './log.ts';
import type { ReplicaManager } from './replica-manager.ts';

export interface ReplicaMetadataPublisherOptions {
  /** The topic's effective config (its overrides over the broker defaults). */
  readonly topicConfig: (image: MetadataImage, topic: string) => TopicConfigLookup;
  readonly onError: (err: unknown) => void;
}

export class ReplicaMetadataPublisher {
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly replicaManager: ReplicaManager, private readonly options: ReplicaMetadataPublisherOptions) {}

  /** Hosts every partition of `image` that lists this broker as a replica. */
  applyImage(image: MetadataImage): Promise<void> {
    return this.enqueue(async () => {
      for (const topic of image.topicsByName.values()) {
        const config = this.options.topicConfig(image, topic.name);
        for (const partition of topic.partitions.values()) await this.applyPartition(topic.name, topic.id, partition, config);
      }
      for (const hosted of [...this.replicaManager.allPartitions()]) {
        if (image.topic(hosted.topic) === undefined) await this.replicaManager.removePartition(hosted.topic, hosted.partition, true);
      }
    });
  }

  /**
   * The MetadataDeltaListener to register with the metadata manager. It returns the
   * application's promise so that an admin request (CreateTopics) is answered only once the
   * partitions it created are served.
   */
  readonly onMetadataDelta = (delta: MetadataDelta, image: MetadataImage): Promise<void> =>
    this.enqueue(() => this.applyDelta(delta, image));

  /** Resolves once every delta received so far is applied. */
  whenIdle(): Promise<void> {
    return this.chain;
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(work).catch((err) => this.options.onError(err));
    return this.chain;
  }

  private async applyDelta(delta: MetadataDelta, image: MetadataImage): Promise<void> {
    for (const topic of delta.topicsDeleted) {
      for (const partitionId of topic.partitions.keys()) await this.replicaManager.removePartition(topic.name, partitionId, true);
    }
    for (const change of delta.partitionsChanged) {
      await this.applyPartition(change.topicName, change.topicId, change.partition, this.options.topicConfig(image, change.topicName));
    }
    for (const topic of delta.topicConfigsChanged) {
      if (image.topic(topic) !== undefined) this.replicaManager.updateTopicConfig(topic, this.options.topicConfig(image, topic));
    }
  }

  private async applyPartition(topic: string, topicId: string, partition: PartitionImage, config: TopicConfigLookup): Promise<void> {
    const brokerId = this.replicaManager.brokerId;
    if (!partition.replicas.includes(brokerId)) {
      // Reassigned away: Kafka's StopReplica with deletePartition.
      await this.replicaManager.removePartition(topic, partition.partitionId, true);
      return;
    }
    await this.replicaManager.applyPartitionState({
      topic,
      topicId,
      partition: partition.partitionId,
      leaderId: partition.leader,
      leaderEpoch: partition.leaderEpoch,
      partitionEpoch: partition.partitionEpoch,
      replicas: partition.replicas,
      isr: partition.isr,
    }, config);
  }
}
