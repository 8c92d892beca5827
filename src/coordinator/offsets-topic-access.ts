/**
 * The coordinator's view of `__consumer_offsets` on this broker: metadata for leaders and
 * endpoints, the active controller to create the topic, the ReplicaManager to append to (the
 * path client data takes) and the partitions' logs to load them from.
 */
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { OFFSETS_TOPIC } from '../../protocol/internal-topics.ts';
import { batchesIn } from '../../protocol/records/batch.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { TopicCreator } from '../metadata/controller.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
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

    async awaitCommitted(partition, offset) {
      const errorCode = await replicaManager.awaitCommitted(OFFSETS_TOPIC, partition, offset, config.getInt('offsets.commit.timeout.ms'));
      // Below min.insync.replicas the high watermark still says what is committed.
      if (errorCode === Errors.NONE.code || errorCode === Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.code) return true;
      if (errorCode === Errors.REQUEST_TIMED_OUT.code) return false;
      throw new KafkaError(errorByCode(errorCode), `waiting for ${OFFSETS_TOPIC}-${partition} to commit offset ${offset}`);
    },

    async *readBatches(partition) {
      // Up to the log end, not the high watermark (Kafka's loader reads to the log end too):
      // a new leader's high watermark restarts from its checkpoint and catches up only as
      // followers fetch, so a load bounded by it would miss commits a previous leader
      // acknowledged. As the leader, this broker keeps everything its log holds; what it read
      // is served once committed (awaitCommitted).
      const log = replicaManager.getPartition(OFFSETS_TOPIC, partition)?.log;
      if (log === undefined) throw new KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, `${OFFSETS_TOPIC}-${partition} is not hosted here`);
      const chunkBytes = config.getInt('offsets.load.buffer.size');
      const endOffset = log.logEndOffset;
      let fetchOffset = log.logStartOffset;
      while (fetchOffset < endOffset) {
        const { chunks } = await log.read(fetchOffset, chunkBytes, endOffset, true);
        let next = fetchOffset;
        for (const chunk of chunks) {
          for (const batch of batchesIn(chunk)) {
            if (batch.nextOffset <= fetchOffset) continue;
            next = batch.nextOffset;
            yield batch;
          }
        }
        if (next === fetchOffset) return;
        fetchOffset = next;
      }
    },
  };
}
