/**
 * Produce: every partition's records go to ReplicaManager.appendRecords; acks=0 sends no
 * response (the server keeps later responses in order).
 */
import { ApiKey } from '../../protocol/messages/index.ts';
import {
  makeProduceResponse, makeProduceResponsePartitionProduceResponse, makeProduceResponseTopicProduceResponse,
  makeProduceResponseBatchIndexAndErrorMessage,
  type ProduceRequest, type ProduceResponse,
} from '../../protocol/messages/produce.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { ProducePartitionInput } from '../replication/replica-manager.ts';
import type { HandlerRegistry } from './registry.ts';

export async function handleProduce(
  services: DataPathServices, request: ProduceRequest, version: number, clientId: string | null = null,
): Promise<ProduceResponse | null> {
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
  if (request.acks === 0) return null;
  let i = 0;
  const responses = request.topicData.map((topic) => makeProduceResponseTopicProduceResponse({
    name: topic.name,
    partitionResponses: topic.partitionData.map(() => {
      const r = results[i++]!;
      return makeProduceResponsePartitionProduceResponse({
        index: r.partition,
        errorCode: r.errorCode,
        baseOffset: BigInt(r.baseOffset),
        logAppendTimeMs: BigInt(r.logAppendTimeMs),
        logStartOffset: BigInt(r.logStartOffset),
        recordErrors: r.recordErrors.map((e) => makeProduceResponseBatchIndexAndErrorMessage({
          batchIndex: e.batchIndex, batchIndexErrorMessage: e.message,
        })),
        errorMessage: r.errorMessage,
      });
    }),
  }));
  return makeProduceResponse({ responses });
}

export function registerProduceHandler(registry: HandlerRegistry, services: DataPathServices): void {
  registry.register<ProduceRequest, ProduceResponse>(ApiKey.Produce, (ctx, request, version) => handleProduce(services, request, version, ctx.clientId));
}
