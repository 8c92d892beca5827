import type { BrokerConfig } from '../config/broker-config.ts';
import type { GroupCoordinatorConfig } from './group-coordinator.ts';

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
