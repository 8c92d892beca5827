import { type BrokerConfig, DEFAULT_BROKER_CONFIG } from '../config/broker-config.ts';
import type { GroupCoordinatorConfig } from './group-coordinator.ts';
import type { TransactionCoordinatorConfig } from './transaction-coordinator.ts';

/** The group coordinator's settings, from Kafka's broker properties of the same meaning. */
export function groupCoordinatorConfig(config: BrokerConfig): GroupCoordinatorConfig {
  return {
    offsetsTopicPartitions: config.getInt('offsets.topic.num.partitions'),
    initialRebalanceDelayMs: config.getInt('group.initial.rebalance.delay.ms'),
    minSessionTimeoutMs: config.getInt('group.min.session.timeout.ms'),
    maxSessionTimeoutMs: config.getInt('group.max.session.timeout.ms'),
    maxGroupSize: config.getInt('group.max.size'),
    offsetMetadataMaxBytes: config.getInt('offset.metadata.max.bytes'),
    offsetsRetentionMs: config.getInt('offsets.retention.minutes') * 60_000,
    offsetsRetentionCheckIntervalMs: config.getLong('offsets.retention.check.interval.ms'),
  };
}

/** Kafka's defaults, read from the config definitions. */
export const DEFAULT_GROUP_COORDINATOR_CONFIG: Readonly<GroupCoordinatorConfig> = Object.freeze(
  groupCoordinatorConfig(DEFAULT_BROKER_CONFIG),
);

/** The transaction coordinator's settings, from Kafka's transaction.* broker properties. */
export function transactionCoordinatorConfig(config: BrokerConfig): TransactionCoordinatorConfig {
  return {
    transactionStatePartitions: config.getInt('transaction.state.log.num.partitions'),
    maxTimeoutMs: config.getInt('transaction.max.timeout.ms'),
    idExpirationMs: config.getInt('transactional.id.expiration.ms'),
    abortTimedOutIntervalMs: config.getInt('transaction.abort.timed.out.transaction.cleanup.interval.ms'),
    removeExpiredIntervalMs: config.getInt('transaction.remove.expired.transaction.cleanup.interval.ms'),
  };
}
