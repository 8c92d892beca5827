/**
 * Authorization of the data path, as KafkaApis's handleProduceRequest, handleFetchRequest,
 * handleListOffsetRequest, handleOffsetForLeaderEpochRequest, handleDeleteRecordsRequest,
 * handleDescribeProducersRequest, handleInitProducerIdRequest, handleWriteTxnMarkersRequest
 * and handleDescribeLogDirsRequest do it.
 */
import { Errors } from '../../../protocol/errors.ts';
import {
  makeDeleteRecordsResponse,
  makeDeleteRecordsResponseDeleteRecordsPartitionResult,
  makeDeleteRecordsResponseDeleteRecordsTopicResult,
} from '../../../protocol/messages/delete-records.ts';
import { makeDescribeLogDirsResponse } from '../../../protocol/messages/describe-log-dirs.ts';
import {
  makeDescribeProducersResponse,
  makeDescribeProducersResponsePartitionResponse,
  makeDescribeProducersResponseTopicResponse,
} from '../../../protocol/messages/describe-producers.ts';
import {
  makeFetchResponse,
  makeFetchResponseFetchableTopicResponse,
  makeFetchResponsePartitionData,
  type FetchRequestFetchTopic,
} from '../../../protocol/messages/fetch.ts';
import type { ApiKey } from '../../../protocol/messages/index.ts';
import { makeInitProducerIdResponse } from '../../../protocol/messages/init-producer-id.ts';
import {
  makeListOffsetsResponse,
  makeListOffsetsResponseListOffsetsPartitionResponse,
  makeListOffsetsResponseListOffsetsTopicResponse,
} from '../../../protocol/messages/list-offsets.ts';
import {
  makeOffsetForLeaderEpochResponse,
  makeOffsetForLeaderEpochResponseEpochEndOffset,
  makeOffsetForLeaderEpochResponseOffsetForLeaderTopicResult,
} from '../../../protocol/messages/offset-for-leader-epoch.ts';
import {
  makeProduceResponse,
  makeProduceResponsePartitionProduceResponse,
  makeProduceResponseTopicProduceResponse,
} from '../../../protocol/messages/produce.ts';
import {
  makeWriteTxnMarkersResponse,
  makeWriteTxnMarkersResponseWritableTxnMarkerPartitionResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerResult,
  makeWriteTxnMarkersResponseWritableTxnMarkerTopicResult,
} from '../../../protocol/messages/write-txn-markers.ts';
import { LOG_OVERHEAD, TRANSACTIONAL_BIT } from '../../../protocol/records/batch.ts';
import { AclOperation, ResourceType } from '../../security/acl-types.ts';
import { inRequestOrder, refuse, requireTopics, type Policy } from './policy.ts';
import { fetchReplicaId } from '../fetch.ts';

const TOPIC_AUTHORIZATION_FAILED = Errors.TOPIC_AUTHORIZATION_FAILED.code;

/**
 * Kafka's RequestUtils.hasTransactionalRecords: whether any v2 batch of a partition's records
 * has the transactional bit. Only the batch headers are read (magic at byte 16, attributes at 21).
 */
function hasTransactionalRecords(records: Buffer): boolean {
  for (let at = 0; at + 23 <= records.length; ) {
    const batchLength = records.readInt32BE(at + 8);
    if (records[at + 16]! >= 2 && (records.readInt16BE(at + 21) & TRANSACTIONAL_BIT) !== 0) return true;
    if (batchLength <= 0) return false;
    at += LOG_OVERHEAD + batchLength;
  }
  return false;
}

/**
 * Transactional records need WRITE on the transactional id (the whole request fails), each
 * topic WRITE. With acks=0 a refusal closes the connection: the producer learns of it only by
 * refreshing its metadata, as with every other acks=0 error.
 */
export const produce: Policy<ApiKey.Produce> = async (call) => {
  const { request, access, ctx } = call;
  const transactional = request.topicData.some((t) =>
    t.partitionData.some((p) => p.records !== null && hasTransactionalRecords(p.records)),
  );
  if (transactional && (request.transactionalId === null || !access.allowsTransactionalId(AclOperation.WRITE, request.transactionalId))) {
    if (request.acks === 0) {
      ctx.closeConnection('acks=0 produce of transactional records not authorized for the transactional id');
      return null;
    }
    return refuse(call, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  }
  const writable = access.topicFilter(AclOperation.WRITE);
  const authorized = request.topicData.filter((t) => writable(t.name));
  if (authorized.length === request.topicData.length) return call.next(request);
  const answered = authorized.length === 0 ? null : await call.next({ ...request, topicData: authorized });
  if (request.acks === 0) {
    ctx.closeConnection('acks=0 produce to topics not authorized for WRITE');
    return null;
  }
  const refused = (t: (typeof request.topicData)[number]) =>
    writable(t.name)
      ? null
      : makeProduceResponseTopicProduceResponse({
          name: t.name,
          partitionResponses: t.partitionData.map((p) =>
            makeProduceResponsePartitionProduceResponse({ index: p.index, errorCode: TOPIC_AUTHORIZATION_FAILED, baseOffset: -1n }),
          ),
        });
  const base = answered ?? makeProduceResponse();
  return { ...base, responses: inRequestOrder(request.topicData, refused, base.responses, (t, r) => t.name === r.name) };
};

/**
 * A follower (replica id >= 0) needs CLUSTER_ACTION on the cluster for every partition, a
 * consumer READ on each topic; a topic id no topic has is answered UNKNOWN_TOPIC_ID. Refused
 * partitions carry no records and high watermark -1.
 */
export const fetch: Policy<ApiKey.Fetch> = async (call) => {
  const { request, version, access } = call;
  const usesTopicIds = version >= 13;
  const replicaId = fetchReplicaId(request, version);
  const follower = replicaId >= 0;
  const followerAllowed = follower && access.allowsCluster(AclOperation.CLUSTER_ACTION);
  const readable = access.topicFilter(AclOperation.READ);
  const refusal = (t: FetchRequestFetchTopic): number | null => {
    if (follower) return followerAllowed ? null : TOPIC_AUTHORIZATION_FAILED;
    const name = usesTopicIds ? requireTopics(call).topicName(t.topicId) : t.topic;
    if (name === undefined) return Errors.UNKNOWN_TOPIC_ID.code;
    return readable(name) ? null : TOPIC_AUTHORIZATION_FAILED;
  };
  const authorized = request.topics.filter((t) => refusal(t) === null);
  // An incremental fetch also answers the partitions its session cached from earlier requests,
  // which this one does not name: Kafka authorizes every partition of the session on every
  // fetch, so a READ taken away since the session began stops its records too.
  const incremental = version >= 7 && request.sessionId !== 0 && request.sessionEpoch > 0;
  const sessionReauthorized = incremental && !follower;
  if (authorized.length === request.topics.length && !sessionReauthorized) return call.next(request);
  const answered = authorized.length > 0 || incremental ? await call.next({ ...request, topics: authorized }) : null;
  const base = answered ?? makeFetchResponse();
  const refusedPartitions = (partitions: readonly number[], errorCode: number) =>
    partitions.map((partitionIndex) =>
      makeFetchResponsePartitionData({ partitionIndex, errorCode, highWatermark: -1n, records: Buffer.alloc(0) }),
    );
  const refused = (t: FetchRequestFetchTopic) => {
    const errorCode = refusal(t);
    if (errorCode === null) return null;
    return makeFetchResponseFetchableTopicResponse({
      topic: t.topic,
      topicId: t.topicId,
      partitions: refusedPartitions(
        t.partitions.map((p) => p.partition),
        errorCode,
      ),
    });
  };
  const responses = sessionReauthorized
    ? base.responses.map((r) => {
        const name = usesTopicIds ? requireTopics(call).topicName(r.topicId) : r.topic;
        if (name === undefined || readable(name)) return r;
        return {
          ...r,
          partitions: refusedPartitions(
            r.partitions.map((p) => p.partitionIndex),
            TOPIC_AUTHORIZATION_FAILED,
          ),
        };
      })
    : base.responses;
  const same = (t: FetchRequestFetchTopic, r: { topic: string; topicId: string }) =>
    usesTopicIds ? r.topicId === t.topicId : r.topic === t.topic;
  return { ...base, responses: inRequestOrder(request.topics, refused, responses, same) };
};

/** DESCRIBE on each topic; refused partitions answer timestamp and offset -1. */
export const listOffsets: Policy<ApiKey.ListOffsets> = async (call) => {
  const { request } = call;
  const describable = call.access.topicFilter(AclOperation.DESCRIBE);
  const authorized = request.topics.filter((t) => describable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeListOffsetsResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    describable(t.name)
      ? null
      : makeListOffsetsResponseListOffsetsTopicResponse({
          name: t.name,
          partitions: t.partitions.map((p) =>
            makeListOffsetsResponseListOffsetsPartitionResponse({
              partitionIndex: p.partitionIndex,
              errorCode: TOPIC_AUTHORIZATION_FAILED,
              timestamp: -1n,
              offset: -1n,
            }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name) };
};

/** CLUSTER_ACTION on the cluster (brokers) or DESCRIBE on each topic (consumers, KIP-320). */
export const offsetForLeaderEpoch: Policy<ApiKey.OffsetForLeaderEpoch> = async (call) => {
  const { request, access } = call;
  if (access.allowsCluster(AclOperation.CLUSTER_ACTION)) return call.next(request);
  const describable = access.topicFilter(AclOperation.DESCRIBE);
  const authorized = request.topics.filter((t) => describable(t.topic));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeOffsetForLeaderEpochResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    describable(t.topic)
      ? null
      : makeOffsetForLeaderEpochResponseOffsetForLeaderTopicResult({
          topic: t.topic,
          partitions: t.partitions.map((p) =>
            makeOffsetForLeaderEpochResponseEpochEndOffset({ partition: p.partition, errorCode: TOPIC_AUTHORIZATION_FAILED }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.topic === r.topic) };
};

/** DELETE on each topic; refused partitions answer low watermark -1. */
export const deleteRecords: Policy<ApiKey.DeleteRecords> = async (call) => {
  const { request } = call;
  const deletable = call.access.topicFilter(AclOperation.DELETE);
  const authorized = request.topics.filter((t) => deletable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeDeleteRecordsResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    deletable(t.name)
      ? null
      : makeDeleteRecordsResponseDeleteRecordsTopicResult({
          name: t.name,
          partitions: t.partitions.map((p) =>
            makeDeleteRecordsResponseDeleteRecordsPartitionResult({
              partitionIndex: p.partitionIndex,
              lowWatermark: -1n,
              errorCode: TOPIC_AUTHORIZATION_FAILED,
            }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name) };
};

/** READ on each topic; refused partitions carry the error's message as Kafka's ApiError does. */
export const describeProducers: Policy<ApiKey.DescribeProducers> = async (call) => {
  const { request } = call;
  const readable = call.access.topicFilter(AclOperation.READ);
  const authorized = request.topics.filter((t) => readable(t.name));
  if (authorized.length === request.topics.length) return call.next(request);
  const base = (authorized.length > 0 ? await call.next({ ...request, topics: authorized }) : null) ?? makeDescribeProducersResponse();
  const refused = (t: (typeof request.topics)[number]) =>
    readable(t.name)
      ? null
      : makeDescribeProducersResponseTopicResponse({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) =>
            makeDescribeProducersResponsePartitionResponse({
              partitionIndex,
              errorCode: TOPIC_AUTHORIZATION_FAILED,
              errorMessage: Errors.TOPIC_AUTHORIZATION_FAILED.message,
            }),
          ),
        });
  return { ...base, topics: inRequestOrder(request.topics, refused, base.topics, (t, r) => t.name === r.name) };
};

/**
 * WRITE on the transactional id; without one, idempotence needs IDEMPOTENT_WRITE on the
 * cluster or WRITE on some topic (KIP-679).
 */
export const initProducerId: Policy<ApiKey.InitProducerId> = async (call) => {
  const { request, access } = call;
  const refused = (errorCode: number) => makeInitProducerIdResponse({ errorCode, producerId: -1n, producerEpoch: -1 });
  if (request.transactionalId !== null) {
    return access.allowsTransactionalId(AclOperation.WRITE, request.transactionalId)
      ? call.next(request)
      : refused(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code);
  }
  const idempotent = access.allowsCluster(AclOperation.IDEMPOTENT_WRITE) || access.allowsAny(AclOperation.WRITE, ResourceType.TOPIC);
  return idempotent ? call.next(request) : refused(Errors.CLUSTER_AUTHORIZATION_FAILED.code);
};

/** ALTER or CLUSTER_ACTION on the cluster; refused, every marker's partitions carry the error. */
export const writeTxnMarkers: Policy<ApiKey.WriteTxnMarkers> = async (call) => {
  const { request, access } = call;
  if (access.allowsCluster(AclOperation.ALTER) || access.allowsCluster(AclOperation.CLUSTER_ACTION)) return call.next(request);
  return makeWriteTxnMarkersResponse({
    markers: request.markers.map((m) =>
      makeWriteTxnMarkersResponseWritableTxnMarkerResult({
        producerId: m.producerId,
        topics: m.topics.map((t) =>
          makeWriteTxnMarkersResponseWritableTxnMarkerTopicResult({
            name: t.name,
            partitions: t.partitionIndexes.map((partitionIndex) =>
              makeWriteTxnMarkersResponseWritableTxnMarkerPartitionResult({
                partitionIndex,
                errorCode: Errors.CLUSTER_AUTHORIZATION_FAILED.code,
              }),
            ),
          }),
        ),
      }),
    ),
  });
};

/** DESCRIBE on the cluster; refused, no log dirs and (v3+) CLUSTER_AUTHORIZATION_FAILED. */
export const describeLogDirs: Policy<ApiKey.DescribeLogDirs> = async (call) =>
  call.access.allowsCluster(AclOperation.DESCRIBE)
    ? call.next(call.request)
    : makeDescribeLogDirsResponse({ errorCode: call.version >= 3 ? Errors.CLUSTER_AUTHORIZATION_FAILED.code : 0, results: [] });
