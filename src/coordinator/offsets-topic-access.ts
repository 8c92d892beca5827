/**
 * The coordinator's view of `__consumer_offsets` on this broker: metadata for leaders and
 * endpoints, the controller to create the topic, and the ReplicaManager to append to and
 * read back its partitions — the same paths client data takes.
 */
import { Errors } from '../../protocol/errors.ts';
import { batchesIn } from '../../protocol/records/batch.ts';
import type { BrokerConfig } from '../config/broker-config.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
import { CONSUMER_REPLICA_ID, ISOLATION_READ_UNCOMMITTED } from '../replication/replica-manager.ts';
import { OFFSETS_TOPIC, offsetsTopicCreatable, type OffsetsTopicAccess } from './service.ts';

const PRODUCE_VERSION = 9;
const READ_CHUNK_BYTES = 1024 * 1024;

export function offsetsTopicAccess(config: BrokerConfig, metadata: MetadataManager, replicaManager: ReplicaManager): OffsetsTopicAccess {
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
      const [result] = await metadata.controller.createTopics([offsetsTopicCreatable(config)], false);
      // Another request may have created it in the meantime.
      return result!.errorCode === Errors.TOPIC_ALREADY_EXISTS.code ? 0 : result!.errorCode;
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
      if (result!.errorCode !== 0) {
        throw Object.assign(new Error(`append to ${OFFSETS_TOPIC}-${partition} failed: ${result!.errorMessage ?? result!.errorCode}`), {
          errorCode: result!.errorCode,
        });
      }
    },

    async *readBatches(partition) {
      let fetchOffset = replicaManager.getPartition(OFFSETS_TOPIC, partition)?.log.logStartOffset ?? 0;
      for (;;) {
        const [result] = await replicaManager.fetchMessages({
          replicaId: CONSUMER_REPLICA_ID,
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: READ_CHUNK_BYTES,
          isolationLevel: ISOLATION_READ_UNCOMMITTED,
          partitions: [{ topic: OFFSETS_TOPIC, partition, fetchOffset, partitionMaxBytes: READ_CHUNK_BYTES, currentLeaderEpoch: -1 }],
        });
        if (result!.errorCode !== 0) {
          throw Object.assign(new Error(`reading ${OFFSETS_TOPIC}-${partition} failed with error ${result!.errorCode}`), {
            errorCode: result!.errorCode,
          });
        }
        if (result!.records.length === 0) return;
        let next = fetchOffset;
        for (const batch of batchesIn(result!.records)) {
          if (batch.nextOffset <= fetchOffset) continue;
          next = batch.nextOffset;
          yield batch;
        }
        if (next === fetchOffset || next >= result!.highWatermark) return;
        fetchOffset = next;
      }
    },
  };
}
