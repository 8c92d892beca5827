/**
 * Applies cluster metadata to the ReplicaManager: on startup the whole image, then every
 * committed delta — become leader or follower of the partitions this broker replicates
 * (opening or creating their logs with the topic's effective config), drop the ones it no
 * longer replicates, delete the logs of deleted topics, and push config changes to logs.
 * Deltas are applied one after another, in commit order.
 */
import type { MetadataDelta, MetadataImage, PartitionImage } from '../metadata/image.ts';
import type { TopicConfigLookup } from '../config/topic-config.ts';
import type { ReplicaManager } from './replica-manager.ts';

export interface ReplicaMetadataPublisherOptions {
  /** The topic's effective config (its overrides over the broker defaults). */
  readonly topicConfig: (image: MetadataImage, topic: string) => TopicConfigLookup;
  readonly onError: (err: unknown) => void;
  /**
   * Deletes the logs on disk `keep` rejects and returns how many (stray logs: topics deleted
   * while the node was down); called once, by removeStrayLogs().
   */
  readonly removeStrayLogs?: (keep: (topic: string, partition: number) => boolean) => Promise<number>;
  /** How many partitions open or create their logs at once (file system latency bound). */
  readonly concurrency?: number;
}

/** Partition logs opened at once while a delta is applied: creating one is a few file operations. */
const DEFAULT_CONCURRENCY = 8;

export class ReplicaMetadataPublisher {
  private chain: Promise<void> = Promise.resolve();
  /** Stray logs deleted by removeStrayLogs(). */
  strayLogsRemoved = 0;
  /** The image the partitions were last brought in line with. */
  private applied: MetadataImage | null = null;

  constructor(
    private readonly replicaManager: ReplicaManager,
    private readonly options: ReplicaMetadataPublisherOptions,
  ) {}

  /** Hosts every partition of `image` that lists this broker as a replica. */
  applyImage(image: MetadataImage): Promise<void> {
    return this.enqueue(async () => {
      const work: (() => Promise<void>)[] = [];
      for (const topic of image.topicsByName.values()) {
        const config = this.options.topicConfig(image, topic.name);
        for (const partition of topic.partitions.values()) work.push(() => this.applyPartition(topic.name, topic.id, partition, config));
      }
      await this.runBounded(work);
      for (const hosted of [...this.replicaManager.allPartitions()]) {
        if (image.topic(hosted.topic) === undefined) await this.replicaManager.removePartition(hosted.topic, hosted.partition, true);
      }
      this.applied = image;
    });
  }

  /**
   * Deletes the logs on disk that the metadata applied so far does not give this broker
   * (their topic was deleted while it was down, or before the deletion reached the disk):
   * Kafka's stray logs. Only once the broker has caught up with the metadata log (the
   * controller unfenced it): the image a restarted broker starts from is its latest snapshot,
   * which may predate topics it hosts — their logs would look stray.
   */
  removeStrayLogs(): Promise<void> {
    return this.enqueue(async () => {
      const image = this.applied;
      if (image === null) return;
      const brokerId = this.replicaManager.brokerId;
      const strays =
        (await this.options.removeStrayLogs?.(
          (topic, partition) => image.partition(topic, partition)?.replicas.includes(brokerId) === true,
        )) ?? 0;
      this.strayLogsRemoved += strays;
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

  /**
   * Work proportional to the delta: each changed partition once, each changed topic's config
   * resolved once (not once per partition), logs opened a few at a time.
   */
  private async applyDelta(delta: MetadataDelta, image: MetadataImage): Promise<void> {
    const removals: (() => Promise<void>)[] = [];
    for (const topic of delta.topicsDeleted) {
      for (const partitionId of topic.partitions.keys())
        removals.push(() => this.replicaManager.removePartition(topic.name, partitionId, true));
    }
    await this.runBounded(removals);
    const configs = new Map<string, TopicConfigLookup>();
    const configOf = (topic: string): TopicConfigLookup => {
      const known = configs.get(topic);
      if (known !== undefined) return known;
      const config = this.options.topicConfig(image, topic);
      configs.set(topic, config);
      return config;
    };
    await this.runBounded(
      delta.partitionsChanged.map(
        (change) => () => this.applyPartition(change.topicName, change.topicId, change.partition, configOf(change.topicName)),
      ),
    );
    for (const topic of delta.topicConfigsChanged) {
      if (image.topic(topic) !== undefined) this.replicaManager.updateTopicConfig(topic, this.options.topicConfig(image, topic));
    }
    this.applied = image;
  }

  /**
   * Runs independent tasks (one partition each), at most `concurrency` at once. A task that
   * fails is reported and fails its partition alone: the others of the delta still apply.
   */
  private async runBounded(tasks: readonly (() => Promise<void>)[]): Promise<void> {
    const queue = tasks[Symbol.iterator]();
    const worker = async (): Promise<void> => {
      // One shared iterator: each task goes to exactly one worker.
      for (let next = queue.next(); !next.done; next = queue.next()) {
        const task = next.value;
        try {
          await task();
        } catch (err) {
          this.options.onError(err);
        }
      }
    };
    const concurrency = Math.max(1, this.options.concurrency ?? DEFAULT_CONCURRENCY);
    await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  }

  private async applyPartition(topic: string, topicId: string, partition: PartitionImage, config: TopicConfigLookup): Promise<void> {
    const brokerId = this.replicaManager.brokerId;
    if (!partition.replicas.includes(brokerId)) {
      // Reassigned away: Kafka's StopReplica with deletePartition.
      await this.replicaManager.removePartition(topic, partition.partitionId, true);
      return;
    }
    await this.replicaManager.applyPartitionState(
      {
        topic,
        topicId,
        partition: partition.partitionId,
        leaderId: partition.leader,
        leaderEpoch: partition.leaderEpoch,
        partitionEpoch: partition.partitionEpoch,
        replicas: partition.replicas,
        isr: partition.isr,
      },
      config,
    );
  }
}
