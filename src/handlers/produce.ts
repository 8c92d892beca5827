/**
 * Produce: every partition's records go to ReplicaManager.appendRecords; acks=0 sends no
 * response (the server keeps later responses in order), and an acks=0 produce with any
 * partition error closes the connection, as Kafka does, so the client refreshes metadata.
 */
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { MAGIC, RECORD_BATCH_OVERHEAD, RecordBatch } from '../../protocol/records/batch.ts';
import {
  makeProduceResponse,
  makeProduceResponsePartitionProduceResponse,
  makeProduceResponseTopicProduceResponse,
  makeProduceResponseBatchIndexAndErrorMessage,
  type ProduceRequest,
  type ProduceResponse,
} from '../../protocol/messages/produce.ts';
import type { ProducePartitionInput, ReplicaManager } from '../replication/replica-manager.ts';

/** What Produce needs: the partitions this broker leads. */
export interface ProduceServices {
  readonly replicaManager: Pick<ReplicaManager, 'appendRecords'>;
}

export async function handleProduce(
  services: ProduceServices,
  request: ProduceRequest,
  version: number,
  clientId: string | null = null,
  closeConnection: (reason: string) => void = () => {},
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
  let i = 0;
  const responses = request.topicData.map((topic) =>
    makeProduceResponseTopicProduceResponse({
      name: topic.name,
      partitionResponses: topic.partitionData.map(() => {
        const r = results[i++]!;
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
        });
      }),
    }),
  );
  return makeProduceResponse({ responses });
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
