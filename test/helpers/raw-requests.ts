// Typed requests over a RawClient, for tests that must control every request on the socket
// (acks=0 produces, hand-made batches): encode with the generated codec, match the answer's
// correlation id, decode it.
import assert from 'node:assert/strict';
import { decodeResponseHeader, encodeRequestHeader } from '../../protocol/headers.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { Errors } from '../../protocol/errors.ts';
import { makeMetadataRequest, makeMetadataRequestTopic, type MetadataResponse } from '../../protocol/messages/metadata.ts';
import {
  makeProduceRequest,
  makeProduceRequestPartitionProduceData,
  makeProduceRequestTopicProduceData,
  type ProduceRequest,
  type ProduceResponse,
} from '../../protocol/messages/produce.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { buildRecordBatch } from '../../protocol/records/builder.ts';
import type { RawClient } from './raw-client.ts';

let correlationId = 0;

/** One request frame (without its size prefix: RawClient.send adds it) and its correlation id. */
export function frame(apiKey: number, version: number, body: unknown, clientId = 'sluice-test'): { id: number; bytes: Buffer } {
  const id = ++correlationId;
  const w = new Writer();
  encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId: id, clientId });
  apis.get(apiKey)!.encodeRequest(w, body, version);
  return { id, bytes: w.toBuffer() };
}

/** The next response on the connection, which must answer correlation id `id`. */
async function reply<Res>(client: RawClient, apiKey: number, version: number, id: number): Promise<Res> {
  const r = new Reader(await client.next());
  assert.equal(decodeResponseHeader(r, apiKey, version), id);
  return apis.get(apiKey)!.decodeResponse(r, version) as Res;
}

export async function call<Res>(client: RawClient, apiKey: number, version: number, body: unknown, clientId?: string): Promise<Res> {
  const { id, bytes } = frame(apiKey, version, body, clientId);
  client.send(bytes);
  return reply<Res>(client, apiKey, version, id);
}

/** A Produce of `records` (whole batches) to partition 0 of `topic`. */
function partition0ProduceRequest(
  topic: string,
  records: Buffer,
  acks: number,
  timeoutMs: number,
  transactionalId: string | null = null,
): ProduceRequest {
  return makeProduceRequest({
    transactionalId,
    acks,
    timeoutMs,
    topicData: [
      makeProduceRequestTopicProduceData({ name: topic, partitionData: [makeProduceRequestPartitionProduceData({ index: 0, records })] }),
    ],
  });
}

/** Produces `records` (whole batches) to partition 0 of `topic` with acks=all; the partition's error code. */
export async function produceToPartition0(
  client: RawClient,
  topic: string,
  records: Buffer,
  options: { transactionalId?: string | null; version?: number } = {},
): Promise<number> {
  const res = await call<ProduceResponse>(
    client,
    ApiKey.Produce,
    options.version ?? 9,
    partition0ProduceRequest(topic, records, -1, 5000, options.transactionalId ?? null),
  );
  return res.responses[0]!.partitionResponses[0]!.errorCode;
}

/** A Produce of one batch holding one record of `value` to partition 0 of `topic`. */
export async function oneRecordProduceRequest(topic: string, value: Buffer, acks: number): Promise<ProduceRequest> {
  return partition0ProduceRequest(topic, await buildRecordBatch({}, [{ value, timestamp: Date.now() }]), acks, 10_000);
}

/**
 * Creates `topic` through Metadata's auto-creation, then produces `value` (Produce v9, acks=1)
 * until partition 0 takes it: the new partition takes its leader from the next metadata change.
 */
export async function autoCreateTopic(client: RawClient, topic: string, value: Buffer): Promise<void> {
  const metadata = await call<MetadataResponse>(
    client,
    ApiKey.Metadata,
    9,
    makeMetadataRequest({ topics: [makeMetadataRequestTopic({ name: topic })], allowAutoTopicCreation: true }),
  );
  assert.equal(metadata.topics[0]!.errorCode, Errors.NONE.code);
  for (;;) {
    const res = await call<ProduceResponse>(client, ApiKey.Produce, 9, await oneRecordProduceRequest(topic, value, 1));
    const errorCode = res.responses[0]!.partitionResponses[0]!.errorCode;
    if (errorCode === Errors.NONE.code) return;
    assert.ok([Errors.NOT_LEADER_OR_FOLLOWER.code, Errors.UNKNOWN_TOPIC_OR_PARTITION.code].includes(errorCode), `error ${errorCode}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
