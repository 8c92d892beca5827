/**
 * Fetch: resolves topics (ids from v13), interprets the fetch session (KIP-227), reads via
 * ReplicaManager.fetchMessages (which long-polls), and answers the partitions the session
 * says to send. Fetch v0-v3 clients get their batches down-converted to magic 0/1. Followers
 * (a replica id, in the replica state from v15) send their last fetched epoch (v12+) and are
 * answered a divergingEpoch when their log left the leader's. A broker that does not lead a
 * partition answers NOT_LEADER_OR_FOLLOWER with the current leader (v12+) and its endpoint
 * (v16+, KIP-951); consumers are not served by followers.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeFetchResponse,
  makeFetchResponseAbortedTransaction,
  makeFetchResponseEpochEndOffset,
  makeFetchResponseFetchableTopicResponse,
  makeFetchResponseLeaderIdAndEpoch,
  makeFetchResponseNodeEndpoint,
  makeFetchResponsePartitionData,
  makeFetchResponseSnapshotId,
  type FetchRequest,
  type FetchResponse,
  type FetchResponseNodeEndpoint,
  type FetchResponsePartitionData,
} from '../../protocol/messages/fetch.ts';
import { toSafeNumber, ZERO_UUID } from '../../protocol/primitives.ts';
import { v2ToLegacy } from '../../protocol/records/legacy.ts';
import { CompressionError } from '../../protocol/compression/index.ts';
import { FetchSessionCache, type SessionPartition } from '../replication/fetch-session.ts';
import type { DataPathServices } from '../replication/index.ts';
import type { FetchPartitionResult, ReplicaManager } from '../replication/replica-manager.ts';
import type { ReadBufferSource } from '../../storage/read-buffers.ts';
import { OUTSIDE_EVERY_LOG, safeOrNull } from './wire-int64.ts';

const EMPTY = Buffer.alloc(0);
// A response is only read once built, so partitions share the defaults of their tagged
// fields. Built as one literal, a partition's answer is one object instead of five and a
// property copy (about 60 ns against 150-200 with the make* helpers), for each partition of
// every fetch, followers' included.
const NO_CURRENT_LEADER = makeFetchResponseLeaderIdAndEpoch();
const NO_DIVERGING_EPOCH = makeFetchResponseEpochEndOffset();
const NO_SNAPSHOT_ID = makeFetchResponseSnapshotId();

/** What Fetch needs: the partitions this broker leads, fetch sessions, topic ids, fetch.max.bytes, broker endpoints. */
export interface FetchServices
  extends Pick<DataPathServices, 'fetchSessions' | 'topicNameOf' | 'topicIdOf' | 'fetchMaxBytes'>,
    Partial<Pick<DataPathServices, 'nodeEndpoint'>> {
  readonly replicaManager: Pick<ReplicaManager, 'fetchMessages'>;
}

/** A consumer's consumer_byte_rate quota, as KafkaApis.handleFetchRequest applies it. */
export interface FetchBandwidth {
  /** What the consumer may fetch without being throttled when nothing was fetched in the quota window. */
  readonly maxBytes: number;
  /** Charges a response's bytes; the throttle time in ms, 0 when within quota. */
  record(bytes: number): number;
  /** Takes back a charge whose data is not sent. */
  unrecord(bytes: number): void;
  /** Holds the connection back after the response (RequestContext.throttle). */
  throttle(throttleTimeMs: number): void;
}

/**
 * `listenerName`: the listener the request came in on, whose endpoints KIP-951 answers with.
 * `readBuffers`: where the records read land, reused once the response is written.
 * `bandwidth`: the consumer's byte-rate quota; null for followers and unquoted consumers.
 */
export async function handleFetch(
  services: FetchServices,
  request: FetchRequest,
  version: number,
  listenerName: string,
  readBuffers?: ReadBufferSource,
  bandwidth: FetchBandwidth | null = null,
): Promise<FetchResponse> {
  const usesTopicIds = version >= 13;
  const replicaId = fetchReplicaId(request, version);
  const replicaEpoch = version >= 15 ? request.replicaState.replicaEpoch : -1n;
  const partitions: SessionPartition[] = [];
  for (const topic of request.topics) {
    const name = usesTopicIds ? (services.topicNameOf(topic.topicId) ?? '') : topic.topic;
    const topicId = usesTopicIds ? topic.topicId : (services.topicIdOf(topic.topic) ?? ZERO_UUID);
    for (const p of topic.partitions) {
      partitions.push({
        topic: name,
        topicId,
        partition: p.partition,
        // Beyond 2^53 an offset lies outside every log: OFFSET_OUT_OF_RANGE, as Kafka answers
        // an offset past the log end, once the partition's leadership and epoch are checked.
        fetchOffset: safeOrNull(p.fetchOffset) ?? OUTSIDE_EVERY_LOG,
        partitionMaxBytes: p.partitionMaxBytes,
        currentLeaderEpoch: version >= 9 ? p.currentLeaderEpoch : -1,
        // A follower's log start offset; -1 (unknown, what consumers send) when beyond 2^53.
        logStartOffset: version >= 5 ? (safeOrNull(p.logStartOffset) ?? -1) : -1,
        lastFetchedEpoch: version >= 12 ? p.lastFetchedEpoch : -1,
      });
    }
  }
  const forgotten = request.forgottenTopicsData.flatMap((t) =>
    t.partitions.map((partition) => ({
      topic: usesTopicIds ? (services.topicNameOf(t.topicId) ?? '') : t.topic,
      topicId: usesTopicIds ? t.topicId : ZERO_UUID,
      partition,
    })),
  );

  const context =
    version >= 7
      ? services.fetchSessions.newContext(request.sessionId, request.sessionEpoch, partitions, forgotten, usesTopicIds)
      : { kind: 'sessionless' as const, partitions };
  if (context.kind === 'error') return makeFetchResponse({ errorCode: context.errorCode, sessionId: 0 });

  // Partitions of unknown topic ids are answered without reading.
  const known = context.partitions.filter((p) => p.topic !== '');
  // KafkaApis.handleFetchRequest: the request's bounds never exceed fetch.max.bytes, so what
  // one Fetch makes the broker read into memory is bounded whatever a client asks for.
  // A consumer's quota bounds it too: asking for more than one quota window's worth would be
  // throttled whatever it got, and a consumer throttled on every fetch would not progress.
  const maxBytes = Math.min(
    version >= 3 ? request.maxBytes : 0x7fffffff,
    services.fetchMaxBytes(),
    Math.max(1, Math.floor(bandwidth?.maxBytes ?? Number.POSITIVE_INFINITY)),
  );
  const results = await services.replicaManager.fetchMessages({
    replicaId,
    replicaEpoch,
    maxWaitMs: request.maxWaitMs,
    minBytes: Math.min(request.minBytes, maxBytes),
    maxBytes,
    isolationLevel: version >= 4 ? request.isolationLevel : 0,
    readBuffers,
    partitions: known.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      fetchOffset: p.fetchOffset,
      partitionMaxBytes: p.partitionMaxBytes,
      currentLeaderEpoch: p.currentLeaderEpoch,
      lastFetchedEpoch: p.lastFetchedEpoch,
      logStartOffset: p.logStartOffset,
    })),
  });
  if (bandwidth !== null) {
    const responseBytes = results.reduce((sum, r) => sum + r.records.length, 0);
    const throttleTimeMs = bandwidth.record(responseBytes);
    if (throttleTimeMs > 0) {
      // KafkaApis: a throttled consumer gets an empty answer (its records are not charged) and
      // the fetch session moves on without it, as FetchContext.getThrottledResponse answers.
      bandwidth.unrecord(responseBytes);
      bandwidth.throttle(throttleTimeMs);
      return makeFetchResponse({
        throttleTimeMs,
        errorCode: Errors.NONE.code,
        sessionId: context.kind === 'incremental' ? context.session.id : 0,
        responses: [],
      });
    }
  }
  const byKey = new Map<string, FetchPartitionResult>();
  for (const r of results) byKey.set(`${r.topic}:${r.partition}`, r);

  const answered: { request: SessionPartition; data: FetchResponsePartitionData }[] = [];
  for (const p of context.partitions) {
    const result = p.topic === '' ? undefined : byKey.get(`${p.topic}:${p.partition}`);
    const data = result === undefined ? unknownTopicId(p.partition) : await partitionData(result, p.fetchOffset, version);
    if (context.kind === 'incremental') {
      const must = FetchSessionCache.mustRespond(context.session, p, {
        errorCode: data.errorCode,
        highWatermark: toSafeNumber(data.highWatermark),
        logStartOffset: toSafeNumber(data.logStartOffset),
        recordsSizeBytes: data.records?.length ?? 0,
        divergingEpoch: data.divergingEpoch.epoch >= 0 || data.divergingEpoch.endOffset >= 0n,
      });
      if (!must) continue;
    }
    answered.push({ request: p, data });
  }

  let sessionId = 0;
  if (context.kind === 'incremental') sessionId = context.session.id;
  else if (context.kind === 'full') {
    sessionId = services.fetchSessions.createSession(
      replicaId >= 0,
      usesTopicIds,
      answered.map((a) => ({
        request: a.request,
        data: {
          errorCode: a.data.errorCode,
          highWatermark: toSafeNumber(a.data.highWatermark),
          logStartOffset: toSafeNumber(a.data.logStartOffset),
          recordsSizeBytes: a.data.records?.length ?? 0,
        },
      })),
    );
  }

  // Group consecutive partitions of the same topic, as Kafka's response builder does.
  const responses: FetchResponse['responses'] = [];
  for (const { request: p, data } of answered) {
    const last = responses.at(-1);
    const sameTopic = last !== undefined && (usesTopicIds ? last.topicId === p.topicId : last.topic === p.topic);
    if (sameTopic) last.partitions.push(data);
    else responses.push(makeFetchResponseFetchableTopicResponse({ topic: p.topic, topicId: p.topicId, partitions: [data] }));
  }
  return makeFetchResponse({
    errorCode: Errors.NONE.code,
    sessionId,
    responses,
    nodeEndpoints: leaderEndpoints(services, answered, version, listenerName),
  });
}

/** Who sends a Fetch: a replica's node id (in the replica state from v15), negative for consumers. */
export function fetchReplicaId(request: Pick<FetchRequest, 'replicaId' | 'replicaState'>, version: number): number {
  return version >= 15 ? request.replicaState.replicaId : request.replicaId;
}

/** KIP-951 (v16+): the endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH answers. */
function leaderEndpoints(
  services: FetchServices,
  answered: readonly { data: FetchResponsePartitionData }[],
  version: number,
  listenerName: string,
): FetchResponseNodeEndpoint[] {
  if (version < 16 || services.nodeEndpoint === undefined) return [];
  const endpoints = new Map<number, FetchResponseNodeEndpoint>();
  for (const { data } of answered) {
    const leaderId = data.currentLeader.leaderId;
    if (leaderId < 0 || endpoints.has(leaderId)) continue;
    const node = services.nodeEndpoint(leaderId, listenerName);
    if (node !== undefined) endpoints.set(leaderId, makeFetchResponseNodeEndpoint(node));
  }
  return [...endpoints.values()];
}

function unknownTopicId(partition: number): FetchResponsePartitionData {
  return makeFetchResponsePartitionData({
    partitionIndex: partition,
    errorCode: Errors.UNKNOWN_TOPIC_ID.code,
    highWatermark: -1n,
    lastStableOffset: -1n,
    logStartOffset: -1n,
    abortedTransactions: null,
    records: EMPTY,
  });
}

async function partitionData(r: FetchPartitionResult, fetchOffset: number, version: number): Promise<FetchResponsePartitionData> {
  let records = r.records;
  let errorCode = r.errorCode;
  // Fetch v0-v1 read magic 0, v2-v3 magic 1 (Kafka's down-conversion for old consumers).
  if (version <= 3 && records.length > 0) {
    try {
      records = await v2ToLegacy(records, version <= 1 ? 0 : 1, { firstOffset: fetchOffset });
    } catch (err) {
      if (!(err instanceof CompressionError)) throw err;
      // zstd has no magic 0/1 form (KIP-110): Kafka answers UNSUPPORTED_COMPRESSION_TYPE.
      records = EMPTY;
      errorCode = Errors.UNSUPPORTED_COMPRESSION_TYPE.code;
    }
  }
  // currentLeader and divergingEpoch exist from v12 (tagged fields).
  const notLeader =
    version >= 12 && (r.errorCode === Errors.NOT_LEADER_OR_FOLLOWER.code || r.errorCode === Errors.FENCED_LEADER_EPOCH.code);
  return {
    partitionIndex: r.partition,
    errorCode,
    highWatermark: BigInt(r.highWatermark),
    lastStableOffset: BigInt(r.lastStableOffset),
    logStartOffset: BigInt(r.logStartOffset),
    divergingEpoch:
      version >= 12 && r.divergingEpoch !== null
        ? { epoch: r.divergingEpoch.epoch, endOffset: BigInt(r.divergingEpoch.endOffset) }
        : NO_DIVERGING_EPOCH,
    // KIP-951: tell the client who leads now when it asked the wrong broker.
    currentLeader: notLeader ? { leaderId: r.leaderId, leaderEpoch: r.leaderEpoch } : NO_CURRENT_LEADER,
    snapshotId: NO_SNAPSHOT_ID,
    abortedTransactions:
      r.abortedTransactions === null
        ? null
        : r.abortedTransactions.map((a) =>
            makeFetchResponseAbortedTransaction({ producerId: a.producerId, firstOffset: BigInt(a.firstOffset) }),
          ),
    preferredReadReplica: -1,
    records,
  };
}
