// Captures request frames written by kafkajs into test/fixtures/frames/kafkajs/.
// A small fake broker on 127.0.0.1 answers just enough (with our own generated encoders)
// for kafkajs to create a topic, produce one small batch and start a consumer that fetches.
// Each file holds one request as it came off the socket, without the 4-byte size prefix.
// Run: node --import tsx scripts/capture-frames/kafkajs.ts
import { createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { Reader, Writer } from '../../protocol/primitives.ts';
import { decodeRequestHeader, encodeResponseHeader } from '../../protocol/headers.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import type { RequestHeader } from '../../protocol/headers.ts';
import type { CreateTopicsRequest } from '../../protocol/messages/create-topics.ts';
import type { FetchRequest } from '../../protocol/messages/fetch.ts';
import type { JoinGroupRequest } from '../../protocol/messages/join-group.ts';
import type { ListOffsetsRequest } from '../../protocol/messages/list-offsets.ts';
import type { MetadataRequest } from '../../protocol/messages/metadata.ts';
import type { OffsetFetchRequest } from '../../protocol/messages/offset-fetch.ts';
import type { ProduceRequest } from '../../protocol/messages/produce.ts';
import type { SyncGroupRequest } from '../../protocol/messages/sync-group.ts';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/frames/kafkajs');
const TOPIC = 'frames';
const MEMBER = 'member-1';

/** The APIs whose first request is kept, with the fixture name. */
const KEEP = new Map<number, string>([
  [ApiKey.ApiVersions, 'api-versions'],
  [ApiKey.Metadata, 'metadata'],
  [ApiKey.CreateTopics, 'create-topics'],
  [ApiKey.Produce, 'produce'],
  [ApiKey.FindCoordinator, 'find-coordinator'],
  [ApiKey.JoinGroup, 'join-group'],
  [ApiKey.SyncGroup, 'sync-group'],
  [ApiKey.OffsetFetch, 'offset-fetch'],
  [ApiKey.ListOffsets, 'list-offsets'],
  [ApiKey.Fetch, 'fetch'],
]);

const captured = new Map<number, { name: string; version: number; frame: Buffer; namesTopics: boolean }>();
let port = 0;
let fetched: () => void = () => {};
const fetchSeen = new Promise<void>((resolve) => {
  fetched = resolve;
});

function partitionsOf(topics: { name: string }[] | null): { name: string }[] {
  return topics?.length ? topics : [{ name: TOPIC }];
}

function respond(h: RequestHeader, body: unknown): unknown {
  switch (h.requestApiKey) {
    case ApiKey.ApiVersions:
      return {
        errorCode: 0,
        throttleTimeMs: 0,
        apiKeys: [...apis.values()].map((a) => ({ apiKey: a.apiKey, minVersion: a.minVersion, maxVersion: a.maxVersion })),
        supportedFeatures: [],
        finalizedFeaturesEpoch: -1n,
        finalizedFeatures: [],
        zkMigrationReady: false,
      };
    case ApiKey.Metadata: {
      const req = body as MetadataRequest;
      return {
        throttleTimeMs: 0,
        brokers: [{ nodeId: 0, host: '127.0.0.1', port, rack: null }],
        clusterId: 'frames',
        controllerId: 0,
        topics: partitionsOf((req.topics ?? []).map((t) => ({ name: t.name ?? TOPIC }))).map((t) => ({
          errorCode: 0,
          name: t.name,
          topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
          isInternal: false,
          topicAuthorizedOperations: -2147483648,
          partitions: [
            { errorCode: 0, partitionIndex: 0, leaderId: 0, leaderEpoch: 0, replicaNodes: [0], isrNodes: [0], offlineReplicas: [] },
          ],
        })),
        clusterAuthorizedOperations: -2147483648,
      };
    }
    case ApiKey.CreateTopics:
      return {
        throttleTimeMs: 0,
        topics: (body as CreateTopicsRequest).topics.map((t) => ({
          name: t.name,
          topicId: 'AAAAAAAAAAAAAAAAAAAAAA',
          errorCode: 0,
          errorMessage: null,
          topicConfigErrorCode: 0,
          numPartitions: 1,
          replicationFactor: 1,
          configs: [],
        })),
      };
    case ApiKey.Produce:
      return {
        throttleTimeMs: 0,
        nodeEndpoints: [],
        responses: (body as ProduceRequest).topicData.map((t) => ({
          name: t.name,
          partitionResponses: t.partitionData.map((p) => ({
            index: p.index,
            errorCode: 0,
            baseOffset: 0n,
            logAppendTimeMs: -1n,
            logStartOffset: 0n,
            recordErrors: [],
            errorMessage: null,
            currentLeader: { leaderId: -1, leaderEpoch: -1 },
          })),
        })),
      };
    case ApiKey.FindCoordinator:
      return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, nodeId: 0, host: '127.0.0.1', port, coordinators: [] };
    case ApiKey.JoinGroup: {
      const req = body as JoinGroupRequest;
      const protocol = req.protocols[0]!;
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        generationId: 1,
        protocolType: req.protocolType,
        protocolName: protocol.name,
        leader: MEMBER,
        skipAssignment: false,
        memberId: MEMBER,
        members: [{ memberId: MEMBER, groupInstanceId: null, metadata: protocol.metadata }],
      };
    }
    case ApiKey.SyncGroup: {
      const req = body as SyncGroupRequest;
      const mine = req.assignments.find((a) => a.memberId === MEMBER);
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        protocolType: req.protocolType,
        protocolName: req.protocolName,
        assignment: mine ? mine.assignment : Buffer.alloc(0),
      };
    }
    case ApiKey.OffsetFetch:
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        groups: [],
        topics: ((body as OffsetFetchRequest).topics ?? []).map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((p) => ({
            partitionIndex: p,
            committedOffset: -1n,
            committedLeaderEpoch: -1,
            metadata: '',
            errorCode: 0,
          })),
        })),
      };
    case ApiKey.ListOffsets:
      return {
        throttleTimeMs: 0,
        topics: (body as ListOffsetsRequest).topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: 0,
            oldStyleOffsets: h.requestApiVersion === 0 ? [0n] : [],
            timestamp: -1n,
            offset: 0n,
            leaderEpoch: -1,
          })),
        })),
      };
    case ApiKey.Fetch:
      fetched();
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        sessionId: 0,
        nodeEndpoints: [],
        responses: (body as FetchRequest).topics.map((t) => ({
          topic: t.topic,
          topicId: t.topicId,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partition,
            errorCode: 0,
            highWatermark: 0n,
            lastStableOffset: 0n,
            logStartOffset: 0n,
            divergingEpoch: { epoch: -1, endOffset: -1n },
            currentLeader: { leaderId: -1, leaderEpoch: -1 },
            snapshotId: { endOffset: -1n, epoch: -1 },
            abortedTransactions: [],
            preferredReadReplica: -1,
            records: Buffer.alloc(0),
          })),
        })),
      };
    default:
      // Heartbeat, OffsetCommit, LeaveGroup...: an all-default (error code 0) response.
      return undefined;
  }
}

function serve(socket: Socket): void {
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
      const frame = pending.subarray(4, 4 + pending.readInt32BE(0));
      pending = pending.subarray(4 + frame.length);
      const r = new Reader(frame);
      const h = decodeRequestHeader(r);
      const api = apis.get(h.requestApiKey)!;
      const body = api.decodeRequest(r, h.requestApiVersion);
      const name = KEEP.get(h.requestApiKey);
      // Keep the first request of each API; for Metadata, the first one naming topics.
      const namesTopics = h.requestApiKey !== ApiKey.Metadata || ((body as MetadataRequest).topics ?? []).length > 0;
      const have = captured.get(h.requestApiKey);
      if (name && (!have || (!have.namesTopics && namesTopics))) {
        captured.set(h.requestApiKey, { name, version: h.requestApiVersion, frame: Buffer.from(frame), namesTopics });
      }
      if (h.requestApiKey === ApiKey.Produce && (body as ProduceRequest).acks === 0) continue;
      const w = new Writer();
      const size = w.reserveInt32();
      encodeResponseHeader(w, h.correlationId, h.requestApiKey, h.requestApiVersion);
      const response = respond(h, body) ?? defaultResponse(h.requestApiKey, h.requestApiVersion);
      api.encodeResponse(w, response, h.requestApiVersion);
      size(w.length - 4);
      socket.write(w.toBuffer());
    }
  });
  socket.on('error', () => {});
}

/** An all-defaults response, read back from a zero-filled body of the right version. */
function defaultResponse(apiKey: number, version: number): unknown {
  return apis.get(apiKey)!.decodeResponse(new Reader(Buffer.alloc(4096)), version);
}

const server = createServer(serve);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
port = (server.address() as AddressInfo).port;

const kafka = new Kafka({ clientId: 'frames', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING, retry: { retries: 1 } });
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: false });
await admin.disconnect();

const producer = kafka.producer();
await producer.connect();
await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'k', value: 'hello', headers: { h: 'v' }, timestamp: '1700000000000' }] });
await producer.disconnect();

const consumer = kafka.consumer({ groupId: 'frames-group', maxWaitTimeInMs: 100 });
await consumer.connect();
await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
await consumer.run({ eachMessage: async () => {} });
await fetchSeen;
await consumer.disconnect();
server.close();

mkdirSync(OUT, { recursive: true });
for (const { name, version, frame } of captured.values()) {
  writeFileSync(join(OUT, `${name}-v${version}.bin`), frame);
  console.log(`${name}-v${version}.bin ${frame.length} bytes`);
}
