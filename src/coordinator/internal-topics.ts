/**
 * The coordinators' topics as the broker creates them, with Kafka's settings, whether the
 * coordinator or a Metadata auto-create brings them into being.
 */
import { OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC } from '../../protocol/internal-topics.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { CreatableTopic } from '../metadata/controller.ts';
import type { CoordinatorTopicSpec } from './topic-access.ts';

/** `__consumer_offsets` (GroupCoordinator.offsetsTopicConfigs). */
export function offsetsTopicCreatable(config: BrokerConfig): CreatableTopic {
  return {
    name: OFFSETS_TOPIC,
    numPartitions: config.getInt('offsets.topic.num.partitions'),
    replicationFactor: config.getInt('offsets.topic.replication.factor'),
    assignments: [],
    configs: [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'compression.type', value: 'producer' },
      { name: 'segment.bytes', value: String(config.getInt('offsets.topic.segment.bytes')) },
    ],
  };
}

/** The group coordinator's topic, with Kafka's offsets.* settings for its appends and loads. */
export function offsetsTopicSpec(config: BrokerConfig): CoordinatorTopicSpec {
  return {
    topic: OFFSETS_TOPIC,
    creatable: offsetsTopicCreatable(config),
    appendTimeoutMs: config.getInt('offsets.commit.timeout.ms'),
    loadBufferBytes: config.getInt('offsets.load.buffer.size'),
  };
}

/** `__transaction_state` (TransactionStateManager.transactionTopicConfigs). */
export function transactionStateTopicCreatable(config: BrokerConfig): CreatableTopic {
  return {
    name: TRANSACTION_STATE_TOPIC,
    numPartitions: config.getInt('transaction.state.log.num.partitions'),
    replicationFactor: config.getInt('transaction.state.log.replication.factor'),
    assignments: [],
    configs: [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'compression.type', value: 'uncompressed' },
      { name: 'min.insync.replicas', value: config.getString('transaction.state.log.min.isr') },
      { name: 'segment.bytes', value: config.getString('transaction.state.log.segment.bytes') },
    ],
  };
}

/** The transaction coordinator's topic; its appends wait request.timeout.ms, as Kafka's TransactionStateManager's do. */
export function transactionStateTopicSpec(config: BrokerConfig): CoordinatorTopicSpec {
  return {
    topic: TRANSACTION_STATE_TOPIC,
    creatable: transactionStateTopicCreatable(config),
    appendTimeoutMs: config.getInt('request.timeout.ms'),
    loadBufferBytes: config.getInt('transaction.state.log.load.buffer.size'),
  };
}
