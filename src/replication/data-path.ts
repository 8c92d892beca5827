/**
 * Builds the data path of one broker from its parts: the ReplicaManager over the storage
 * engine's LogManager with its follower fetchers and ISR manager, the fetch-session cache,
 * the producer-id manager fed by the controller, and the publisher that applies metadata to
 * the ReplicaManager.
 */
import type { LogDirFailureChannel } from '../../storage/log-dir-failure.ts';
import type { LogManager } from '../../storage/log-manager.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import { effectiveTopicConfig, topicConfigLookup } from '../config/topic-config.ts';
import type { MetadataDelta, MetadataImage } from '../metadata/image.ts';
import { FetchSessionCache } from './fetch-session.ts';
import { kafkaReplicaConnector, replicaFetchSettingsOf } from './fetcher.ts';
import type { DataPathServices, NodeEndpoint } from './index.ts';
import type { AlterPartitionRequest, AlterPartitionResponse } from './isr-manager.ts';
import { ReplicaMetadataPublisher } from './metadata-publisher.ts';
import { ProducerIdManager, type ProducerIdBlock } from './producer-id-manager.ts';
import type { Clock } from '../runtime/clock.ts';
import type { Network } from '../runtime/network.ts';
import type { Random } from '../runtime/random.ts';
import type { TopicTraffic } from '../observability/metrics.ts';
import { ReplicaManager, type TransactionVerifier, appendQueueLimitsOf } from './replica-manager.ts';
import { LogManagerProvider } from './storage-adapter.ts';
import { interBrokerClientSecurity } from '../security/listener-security.ts';

export interface DataPathOptions {
  readonly config: BrokerConfig;
  readonly logManager: LogManager;
  /** Where the logs report a failed log dir (the LogManager's channel). */
  readonly logDirFailures: LogDirFailureChannel;
  /** The metadata the broker follows (MetadataManager). */
  readonly metadata: {
    image(): MetadataImage;
    onMetadataDelta(listener: (delta: MetadataDelta, image: MetadataImage) => void): void;
    allocateProducerIdBlock(): Promise<ProducerIdBlock>;
  };
  readonly onError: (err: unknown, what: string) => void;
  readonly clock?: Clock;
  /** Fetch session ids; defaults to the system's randomness. */
  readonly random?: Random;
  /** Where followers connect to leaders; defaults to the system network. */
  readonly network?: Network;
  /**
   * Sends an ISR change to the active controller (the controller channel). The requests are
   * AlterPartition v3 (topic ids, newIsrWithEpochs): send them at ALTER_PARTITION_VERSION.
   */
  alterPartition(request: AlterPartitionRequest): Promise<AlterPartitionResponse>;
  /** This broker's epoch from its registration, -1 until registered. */
  brokerEpoch(): bigint;
  /** The inter-broker listener endpoint of a broker from the MetadataImage, undefined when unknown. */
  replicaEndpoint(brokerId: number): { host: string; port: number } | undefined;
  /**
   * Asks the transaction coordinator of a transactional producer whether a partition is in its
   * transaction (KIP-890 part 1); used while transaction.partition.verification.enable is true.
   */
  readonly verifyTransaction?: TransactionVerifier;
  /** Where the records and bytes in and out of each topic are counted (metrics). */
  readonly traffic?: TopicTraffic;
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
    traffic: options.traffic,
    verifyTransaction: config.getBoolean('transaction.partition.verification.enable') ? options.verifyTransaction : undefined,
    appendQueueLimits: appendQueueLimitsOf(config),
    replicaLagTimeMaxMs: config.getLong('replica.lag.time.max.ms'),
    brokerEpoch: () => options.brokerEpoch(),
    brokerRegistration: (brokerId) => metadata.image().brokers.get(brokerId),
    metadataLeader: (topic, partition) => {
      const p = metadata.image().partition(topic, partition);
      return p === undefined ? undefined : { leaderId: p.leader, leaderEpoch: p.leaderEpoch };
    },
    alterPartition: (request) => options.alterPartition(request),
    replicaFetcher: {
      connect: kafkaReplicaConnector({
        brokerId: config.nodeId,
        replicaEndpoint: (id) => options.replicaEndpoint(id),
        network: options.network,
        security: interBrokerClientSecurity(config),
        clock: options.clock,
      }),
      settings: replicaFetchSettingsOf(config),
    },
    onReplicationError: (err, what) => options.onError(err, what),
    logDirFailures: options.logDirFailures,
  });
  const publisher = new ReplicaMetadataPublisher(replicaManager, {
    topicConfig: (image, topic) => topicConfigLookup(effectiveTopicConfig(image.topicConfigs(topic), config)),
    onError: (err) => options.onError(err, 'applying metadata to partitions'),
    removeStrayLogs: (keep) => options.logManager.removeStrayLogs(keep),
  });
  const services: DataPathServices = {
    replicaManager,
    fetchSessions: new FetchSessionCache({
      maxSlots: config.getInt('max.incremental.fetch.session.cache.slots'),
      clock: options.clock,
      random: options.random,
    }),
    producerIds: new ProducerIdManager(() => metadata.allocateProducerIdBlock()),
    topicNameOf: (topicId) => metadata.image().topicById(topicId)?.name,
    topicIdOf: (topic) => metadata.image().topic(topic)?.id,
    fetchMaxBytes: () => config.getInt('fetch.max.bytes'),
    requestTimeoutMs: () => config.getInt('request.timeout.ms'),
    fileSystem: options.logManager.pool.fileSystem,
    nodeEndpoint: (brokerId, listenerName) => liveNodeEndpoint(metadata.image(), brokerId, listenerName),
  };
  // Subscribed now, ahead of the listeners that wait for the publisher to apply a delta; a
  // delta before start() is in the image start() applies.
  let started = false;
  metadata.onMetadataDelta((delta, image) => (started ? publisher.onMetadataDelta(delta, image) : undefined));
  return {
    services,
    publisher,
    async start() {
      started = true;
      await publisher.applyImage(metadata.image());
      replicaManager.startup();
    },
    async close() {
      // Followers stop appending first; then what clients queued reaches the logs.
      await replicaManager.shutdownReplication();
      await replicaManager.flushPendingAppends();
      replicaManager.shutdown();
    },
  };
}

/** A live (unfenced) broker's endpoint on `listenerName` ('' = its first), as Metadata lists it. */
function liveNodeEndpoint(image: MetadataImage, brokerId: number, listenerName: string): NodeEndpoint | undefined {
  const broker = image.brokers.get(brokerId);
  if (broker === undefined || broker.fenced) return undefined;
  const endpoint = broker.endpoints.find((e) => e.name === listenerName) ?? (listenerName === '' ? broker.endpoints[0] : undefined);
  return endpoint === undefined ? undefined : { nodeId: broker.id, host: endpoint.host, port: endpoint.port, rack: broker.rack };
}
