/**
 * Authorization of the transaction APIs, as KafkaApis's handleAddPartitionsToTxnRequest,
 * handleAddOffsetsToTxnRequest, handleEndTxnRequest, handleDescribeTransactionsRequest and
 * handleListTransactionsRequest do it.
 */
import { Errors } from '../../../protocol/errors.ts';
import {
  makeAddPartitionsToTxnResponse,
  makeAddPartitionsToTxnResponseAddPartitionsToTxnPartitionResult,
  makeAddPartitionsToTxnResponseAddPartitionsToTxnTopicResult,
  type AddPartitionsToTxnRequestAddPartitionsToTxnTopic,
} from '../../../protocol/messages/add-partitions-to-txn.ts';
import {
  makeDescribeTransactionsResponse,
  makeDescribeTransactionsResponseTransactionState,
} from '../../../protocol/messages/describe-transactions.ts';
import type { ApiKey } from '../../../protocol/messages/index.ts';
import { INTERNAL_TOPICS } from '../../../protocol/internal-topics.ts';
import { AclOperation } from '../../security/acl-types.ts';
import { clusterOperation, inRequestOrder, refuse, requireTopics, type Policy } from './policy.ts';

/**
 * v4+ comes from brokers verifying a transaction (CLUSTER_ACTION on the cluster). Older
 * versions need WRITE on the transactional id (else every partition answers
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and WRITE on each topic, internal topics never
 * included. One refused topic fails the whole transaction: its partitions answer
 * TOPIC_AUTHORIZATION_FAILED, unknown topics UNKNOWN_TOPIC_OR_PARTITION, the others
 * OPERATION_NOT_ATTEMPTED, and the handler is not called.
 */
export const addPartitionsToTxn: Policy<ApiKey.AddPartitionsToTxn> = async (call) => {
  const { request, version, access } = call;
  if (version >= 4) return clusterOperation<ApiKey.AddPartitionsToTxn>(AclOperation.CLUSTER_ACTION)(call);
  const topics = request.v3AndBelowTopics;
  const answerAll = (partitionError: (topic: string) => number) =>
    makeAddPartitionsToTxnResponse({
      resultsByTopicV3AndBelow: topics.map((t) =>
        makeAddPartitionsToTxnResponseAddPartitionsToTxnTopicResult({
          name: t.name,
          resultsByPartition: t.partitions.map((partitionIndex) =>
            makeAddPartitionsToTxnResponseAddPartitionsToTxnPartitionResult({ partitionIndex, partitionErrorCode: partitionError(t.name) }),
          ),
        }),
      ),
    });
  if (!access.allowsTransactionalId(AclOperation.WRITE, request.v3AndBelowTransactionalId)) {
    return answerAll(() => Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code);
  }
  const writable = access.topicFilter(AclOperation.WRITE);
  const authorized = (t: AddPartitionsToTxnRequestAddPartitionsToTxnTopic) => !INTERNAL_TOPICS.has(t.name) && writable(t.name);
  if (topics.every(authorized)) return call.next(request);
  const exists = (name: string) => requireTopics(call).topicExists(name);
  return answerAll((name) => {
    if (INTERNAL_TOPICS.has(name) || !writable(name)) return Errors.TOPIC_AUTHORIZATION_FAILED.code;
    return exists(name) ? Errors.OPERATION_NOT_ATTEMPTED.code : Errors.UNKNOWN_TOPIC_OR_PARTITION.code;
  });
};

/** WRITE on the transactional id, then READ on the group. */
export const addOffsetsToTxn: Policy<ApiKey.AddOffsetsToTxn> = async (call) => {
  const { request, access } = call;
  if (!access.allowsTransactionalId(AclOperation.WRITE, request.transactionalId)) {
    return refuse(call, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  }
  if (!access.allowsGroup(AclOperation.READ, request.groupId)) return refuse(call, Errors.GROUP_AUTHORIZATION_FAILED);
  return call.next(request);
};

/** WRITE on the transactional id. */
export const endTxn: Policy<ApiKey.EndTxn> = async (call) =>
  call.access.allowsTransactionalId(AclOperation.WRITE, call.request.transactionalId)
    ? call.next(call.request)
    : refuse(call, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);

/** DESCRIBE on each transactional id; each transaction lists only the topics the principal may DESCRIBE. */
export const describeTransactions: Policy<ApiKey.DescribeTransactions> = async (call) => {
  const { request, access } = call;
  const allowed = (id: string) => access.allowsTransactionalId(AclOperation.DESCRIBE, id);
  const authorized = request.transactionalIds.filter(allowed);
  const base =
    (authorized.length === request.transactionalIds.length
      ? await call.next(request)
      : authorized.length > 0
        ? await call.next({ ...request, transactionalIds: authorized })
        : null) ?? makeDescribeTransactionsResponse();
  const refused = (transactionalId: string) =>
    allowed(transactionalId)
      ? null
      : makeDescribeTransactionsResponseTransactionState({ transactionalId, errorCode: Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code });
  const describable = access.topicFilter(AclOperation.DESCRIBE);
  const states = inRequestOrder(request.transactionalIds, refused, base.transactionStates, (id, s) => s.transactionalId === id);
  return { ...base, transactionStates: states.map((s) => ({ ...s, topics: s.topics.filter((t) => describable(t.topic)) })) };
};

/** Only the transactions whose transactional id the principal may DESCRIBE. */
export const listTransactions: Policy<ApiKey.ListTransactions> = async (call) => {
  const response = await call.next(call.request);
  if (response === null) return null;
  const allowed = (id: string) => call.access.allowsTransactionalId(AclOperation.DESCRIBE, id);
  return { ...response, transactionStates: response.transactionStates.filter((s) => allowed(s.transactionalId)) };
};
