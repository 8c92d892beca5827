/**
 * Builds the data path of one broker from its parts: the ReplicaManager over the storage
 * engine's LogManager, the fetch-session cache, the producer-id manager fed by the
 * controller, and the publisher that applies metadata to the ReplicaManager.
 */
import type { LogManager } from '../../storage/log-manager.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import { effectiveTopicConfig, topicConfigLookup } from '../config/topic-config.ts';
import type { MetadataDelta, MetadataImage } from '../metadata/image.ts';
import { FetchSessionCache } from './fetch-session.ts';
import type { DataPathServices } from './index.ts';
import { ReplicaMetadataPublisher } from './metadata-publisher.ts';
import { ProducerIdManager, type ProducerIdBlock } from './producer-id-manager.ts';
import type { Clock } from './purgatory.ts';
import { ReplicaManager, appendQueueLimitsOf } from './replica-manager.ts';
import { LogManagerProvider } from './storage-adapter.ts';

export interface DataPathOptions {
  readonly config: BrokerConfig;
  readonly logManager: LogManager;
  /** The metadata the broker follows (MetadataManager). */
  readonly metadata: {
    image(): MetadataImage;
    onMetadataDelta(listener: (delta: MetadataDelta, image: MetadataImage) => void): void;
    allocateProducerIdBlock(): Promise<ProducerIdBlock>;
  };
  readonly onError: (err: unknown, what: string) => void;
  readonly clock?: Clock;
}

export interface DataPath {
  readonly services: DataPathServices;
  readonly publisher: ReplicaMetadataPublisher;
  /** Hosts the partitions of the current image and follows later deltas. */
  start(): Promise<void>;
  /** Completes waiting fetches and produces and lets queued appends reach the logs. */
  close(): Promise<void>;
}

export function createDataPath(options: DataPathOptions): DataPath {
  const { config, metadata } = options;
  const replicaManager = new ReplicaManager({
    brokerId: config.nodeId,
    logs: new LogManagerProvider(options.logManager),
    clock: options.clock,
    partitionExists: (topic, partition) => metadata.image().partition(topic, partition) !== undefined,
    onAppendError: (partition, err) => options.onError(err, `append to ${partition}`),
    appendQueueLimits: appendQueueLimitsOf(config),
  });
  const publisher = new ReplicaMetadataPublisher(replicaManager, {
    topicConfig: (image, topic) => topicConfigLookup(effectiveTopicConfig(image.topicConfigs(topic), config)),
    onError: (err) => options.onError(err, 'applying metadata to partitions'),
    removeStrayLogs: (keep) => options.logManager.removeStrayLogs(keep),
  });
  const services: DataPathServices = {
    replicaManager,
    fetchSessions: new FetchSessionCache({ maxSlots: config.getInt('max.incremental.fetch.session.cache.slots'), clock: options.clock }),
    producerIds: new ProducerIdManager(() => metadata.allocateProducerIdBlock()),
    topicNameOf: (topicId) => metadata.image().topicById(topicId)?.name,
    topicIdOf: (topic) => metadata.image().topic(topic)?.id,
    fetchMaxBytes: () => config.getInt('fetch.max.bytes'),
  };
  return {
    services,
    publisher,
    async start() {
      metadata.onMetadataDelta(publisher.onMetadataDelta);
      await publisher.applyImage(metadata.image());
    },
    async close() {
      await replicaManager.flushPendingAppends();
      replicaManager.shutdown();
    },
  };
}
