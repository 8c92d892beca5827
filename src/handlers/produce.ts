/**
 * Produce: every partition's records go to ReplicaManager.appendRecords; acks=0 sends no
 * response (the server keeps later responses in order), and an acks=0 produce with any
 * partition error closes the connection, as Kafka does, so the client refreshes metadata.
 * NOT_LEADER_OR_FOLLOWER answers carry the current leader and its endpoint (v10+, KIP-951).
 */
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { MAGIC, RECORD_BATCH_OVERHEAD, RecordBatch } from '../../protocol/records/batch.ts';
import {
  makeProduceResponse,
  makeProduceResponsePartitionProduceResponse,
  makeProduceResponseTopicProduceResponse,
  makeProduceResponseBatchIndexAndErrorMessage,
  makeProduceResponseLeaderIdAndEpoch,
  makeProduceResponseNodeEndpoint,
  type ProduceRequest,
  type ProduceResponse,
  type ProduceResponseNodeEndpoint,
} from '../../protocol/messages/produce.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { ProducePartitionInput, ReplicaManager } from '../replication/replica-manager.ts';

/** What Produce needs: the partitions this broker leads, and broker endpoints for KIP-951. */
export interface ProduceServices extends Partial<Pick<DataPathServices, 'nodeEndpoint'>> {
  readonly replicaManager: Pick<ReplicaManager, 'appendRecords'>;
}

export async function handleProduce(
  services: ProduceServices,
  request: ProduceRequest,
  version: number,
  clientId: string | null,
  closeConnection: (reason: string) => void,
  listenerName: string,
): Promise<ProduceResponse | null> {
  // KafkaApis.handleProduceRequest: transactional records need a transactional id the
  // producer may write for; without one the whole request is refused.
  if (request.transactionalId === null && hasTransactionalRecords(request)) {
    throw new KafkaError(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 'Transactional records were sent without a transactional id');
  }
  const entries: ProducePartitionInput[] = [];
  for (const topic of request.topicData) {
    for (const p of topic.partitionData) entries.push({ topic: topic.name, partition: p.index, records: p.records });
  }
  const results = await services.replicaManager.appendRecords({
    transactionalId: request.transactionalId,
    acks: request.acks,
    timeoutMs: request.timeoutMs,
    produceVersion: version,
    entries,
    internalTopicsAllowed: clientId === '__admin_client',
  });
  if (request.acks === 0) {
    const failed = results.filter((r) => r.errorCode !== Errors.NONE.code);
    if (failed.length > 0) {
      const summary = failed.map((r) => `${r.topic}-${r.partition}: ${errorByCode(r.errorCode).name}`).join(', ');
      closeConnection(`error during produce request with acks=0 (client id ${clientId}): ${summary}`);
    }
    return null;
  }
  const kip951 = version >= 10;
  const nodeEndpoints = new Map<number, ProduceResponseNodeEndpoint>();
  let i = 0;
  const responses = request.topicData.map((topic) =>
    makeProduceResponseTopicProduceResponse({
      name: topic.name,
      partitionResponses: topic.partitionData.map(() => {
        const r = results[i++]!;
        const notLeader = kip951 && r.errorCode === Errors.NOT_LEADER_OR_FOLLOWER.code;
        if (notLeader && r.leaderId >= 0 && !nodeEndpoints.has(r.leaderId)) {
          const node = services.nodeEndpoint?.(r.leaderId, listenerName);
          if (node !== undefined) nodeEndpoints.set(r.leaderId, makeProduceResponseNodeEndpoint(node));
        }
        return makeProduceResponsePartitionProduceResponse({
          index: r.partition,
          errorCode: r.errorCode,
          baseOffset: BigInt(r.baseOffset),
          logAppendTimeMs: BigInt(r.logAppendTimeMs),
          logStartOffset: BigInt(r.logStartOffset),
          recordErrors: r.recordErrors.map((e) =>
            makeProduceResponseBatchIndexAndErrorMessage({
              batchIndex: e.batchIndex,
              batchIndexErrorMessage: e.message,
            }),
          ),
          errorMessage: r.errorMessage,
          currentLeader: notLeader
            ? makeProduceResponseLeaderIdAndEpoch({ leaderId: r.leaderId, leaderEpoch: r.leaderEpoch })
            : makeProduceResponseLeaderIdAndEpoch(),
        });
      }),
    }),
  );
  return makeProduceResponse({ responses, nodeEndpoints: [...nodeEndpoints.values()] });
}

/** ProduceRequest.hasTransactionalRecords: the first batch of any partition is transactional. */
function hasTransactionalRecords(request: ProduceRequest): boolean {
  return request.topicData.some((topic) =>
    topic.partitionData.some(
      ({ records }) =>
        records !== null &&
        records.length >= RECORD_BATCH_OVERHEAD &&
        records.readInt8(MAGIC) === 2 &&
        new RecordBatch(records, 0).isTransactional,
    ),
  );
}
