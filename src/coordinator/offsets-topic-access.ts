/**
 * The coordinator's view of `__consumer_offsets` on this broker: metadata for leaders and
 * endpoints, the active controller to create the topic, and the ReplicaManager to append to and
 * read back its partitions — the same paths client data takes.
 */
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import { batchesIn } from '../../protocol/records/batch.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { TopicCreator } from '../metadata/controller.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
import { CONSUMER_REPLICA_ID, ISOLATION_READ_UNCOMMITTED } from '../replication/replica-manager.ts';
import { offsetsTopicCreatable } from './internal-topics.ts';
import type { OffsetsTopicAccess } from './service.ts';

const PRODUCE_VERSION = 9;

export function offsetsTopicAccess(
  config: BrokerConfig,
  metadata: MetadataManager,
  replicaManager: ReplicaManager,
  createTopics: TopicCreator,
): OffsetsTopicAccess {
  return {
    partitionLeader(partition, listenerName) {
      const image = metadata.image();
      const state = image.partition(OFFSETS_TOPIC, partition);
      if (state === undefined) return null;
      const endpoint = image.brokers.get(state.leader)?.endpoints.find((e) => e.name === listenerName);
      if (state.leader < 0 || endpoint === undefined) return 'no-leader';
      return { leaderId: state.leader, host: endpoint.host, port: endpoint.port };
    },

    async createOffsetsTopic() {
      const [result] = await createTopics([offsetsTopicCreatable(config)]);
      if (result === undefined) return Errors.UNKNOWN_SERVER_ERROR.code;
      // Another request may have created it in the meantime.
      return result.errorCode === Errors.TOPIC_ALREADY_EXISTS.code ? Errors.NONE.code : result.errorCode;
    },

    partitionExists(topic, partition) {
      return metadata.image().partition(topic, partition) !== undefined;
    },

    async append(partition, batch) {
      const [result] = await replicaManager.appendRecords({
        acks: -1,
        timeoutMs: config.getInt('offsets.commit.timeout.ms'),
        produceVersion: PRODUCE_VERSION,
        entries: [{ topic: OFFSETS_TOPIC, partition, records: batch }],
        internalTopicsAllowed: true,
      });
      const errorCode = result?.errorCode ?? Errors.UNKNOWN_SERVER_ERROR.code;
      if (errorCode !== Errors.NONE.code) {
        const reason = result?.errorMessage ?? String(errorCode);
        throw new KafkaError(errorByCode(errorCode), `append to ${OFFSETS_TOPIC}-${partition} failed: ${reason}`);
      }
    },

    async *readBatches(partition) {
      const chunkBytes = config.getInt('offsets.load.buffer.size');
      let fetchOffset = replicaManager.getPartition(OFFSETS_TOPIC, partition)?.log.logStartOffset ?? 0;
      for (;;) {
        const [result] = await replicaManager.fetchMessages({
          replicaId: CONSUMER_REPLICA_ID,
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: chunkBytes,
          isolationLevel: ISOLATION_READ_UNCOMMITTED,
          partitions: [{ topic: OFFSETS_TOPIC, partition, fetchOffset, partitionMaxBytes: chunkBytes, currentLeaderEpoch: -1 }],
        });
        const errorCode = result?.errorCode ?? Errors.UNKNOWN_SERVER_ERROR.code;
        if (result === undefined || errorCode !== Errors.NONE.code) {
          throw new KafkaError(errorByCode(errorCode), `reading ${OFFSETS_TOPIC}-${partition} failed with error ${errorCode}`);
        }
        if (result.records.length === 0) return;
        let next = fetchOffset;
        for (const batch of batchesIn(result.records)) {
          if (batch.nextOffset <= fetchOffset) continue;
          next = batch.nextOffset;
          yield batch;
        }
        if (next === fetchOffset || next >= result.highWatermark) return;
        fetchOffset = next;
      }
    },
  };
}
