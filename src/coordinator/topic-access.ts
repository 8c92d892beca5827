/**
 * A coordinator's view of its internal topic on this broker: metadata for leaders and
 * endpoints, the active controller to create the topic, the ReplicaManager to append to
 * (with the coordinator's origin) and the partitions' logs to load them from.
 */
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { batchesIn } from '../../protocol/records/batch.ts';
import type { CreatableTopic, TopicCreator } from '../metadata/controller.ts';
import type { MetadataManager } from '../metadata/manager.ts';
import type { ReplicaManager } from '../replication/replica-manager.ts';
import type { CoordinatorTopicAccess } from './runtime.ts';

/** A coordinator's topic and the settings of its appends and loads. */
export interface CoordinatorTopicSpec {
  readonly topic: string;
  /** The topic as the coordinator creates it on first use. */
  readonly creatable: CreatableTopic;
  /** How long an append waits to be committed (offsets.commit.timeout.ms, transaction.state.log's request timeout). */
  readonly appendTimeoutMs: number;
  /** The read chunk of a load (offsets.load.buffer.size, transaction.state.log.load.buffer.size). */
  readonly loadBufferBytes: number;
}

export function coordinatorTopicAccess(
  spec: CoordinatorTopicSpec,
  metadata: MetadataManager,
  replicaManager: ReplicaManager,
  createTopics: TopicCreator,
): CoordinatorTopicAccess {
  const topic = spec.topic;
  return {
    partitionLeader(partition, listenerName) {
      const image = metadata.image();
      const state = image.partition(topic, partition);
      if (state === undefined) return null;
      const endpoint = image.brokers.get(state.leader)?.endpoints.find((e) => e.name === listenerName);
      if (state.leader < 0 || endpoint === undefined) return 'no-leader';
      return { leaderId: state.leader, host: endpoint.host, port: endpoint.port };
    },

    async createTopic() {
      const [result] = await createTopics([spec.creatable]);
      if (result === undefined) return Errors.UNKNOWN_SERVER_ERROR.code;
      // Another request may have created it in the meantime.
      return result.errorCode === Errors.TOPIC_ALREADY_EXISTS.code ? Errors.NONE.code : result.errorCode;
    },

    partitionExists(name, partition) {
      return metadata.image().partition(name, partition) !== undefined;
    },

    leaderEpoch(partition) {
      const hosted = replicaManager.getPartition(topic, partition);
      return hosted?.isLeader === true ? hosted.leaderEpoch : null;
    },

    verifyTransaction(partition, transactionalId, producer) {
      return replicaManager.verifyCoordinatorAppend(topic, partition, transactionalId, producer.producerId, producer.producerEpoch);
    },

    async append(partition, batch, verification) {
      const { errorCode, errorMessage, baseOffset } = await replicaManager.appendAsCoordinator(
        topic,
        partition,
        batch,
        spec.appendTimeoutMs,
        verification,
      );
      if (errorCode !== Errors.NONE.code) {
        throw new KafkaError(errorByCode(errorCode), `append to ${topic}-${partition} failed: ${errorMessage ?? errorCode}`);
      }
      return baseOffset;
    },

    async awaitCommitted(partition, offset) {
      const errorCode = await replicaManager.awaitCommitted(topic, partition, offset, spec.appendTimeoutMs);
      // Below min.insync.replicas the high watermark still says what is committed.
      if (errorCode === Errors.NONE.code || errorCode === Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND.code) return true;
      if (errorCode === Errors.REQUEST_TIMED_OUT.code) return false;
      throw new KafkaError(errorByCode(errorCode), `waiting for ${topic}-${partition} to commit offset ${offset}`);
    },

    async *readBatches(partition) {
      // Up to the log end, not the high watermark (Kafka's loader reads to the log end too):
      // a new leader's high watermark restarts from its checkpoint and catches up only as
      // followers fetch, so a load bounded by it would miss commits a previous leader
      // acknowledged. As the leader, this broker keeps everything its log holds; what it read
      // is served once committed (awaitCommitted).
      const log = replicaManager.getPartition(topic, partition)?.log;
      if (log === undefined) throw new KafkaError(Errors.NOT_LEADER_OR_FOLLOWER, `${topic}-${partition} is not hosted here`);
      const chunkBytes = spec.loadBufferBytes;
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
