/**
 * CreateTopics, DeleteTopics and CreatePartitions: decoded requests go to the quorum
 * controller, which validates, writes metadata records and answers once they are committed.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeCreatePartitionsResponse,
  makeCreatePartitionsResponseCreatePartitionsTopicResult,
  type CreatePartitionsRequest,
  type CreatePartitionsResponse,
} from '../../protocol/messages/create-partitions.ts';
import {
  makeCreateTopicsResponse,
  makeCreateTopicsResponseCreatableTopicConfigs,
  makeCreateTopicsResponseCreatableTopicResult,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
} from '../../protocol/messages/create-topics.ts';
import {
  makeDeleteTopicsResponse,
  makeDeleteTopicsResponseDeletableTopicResult,
  type DeleteTopicsRequest,
  type DeleteTopicsResponse,
} from '../../protocol/messages/delete-topics.ts';
import { ZERO_UUID } from '../../protocol/primitives.ts';
import { describeTopicConfig } from '../config/topic-config.ts';
import type { PartitionChangeQuota } from '../metadata/controller.ts';
import type { MetadataHandlerServices } from './metadata.ts';

export async function handleCreateTopics(
  services: MetadataHandlerServices,
  request: CreateTopicsRequest,
  version: number,
  quota?: PartitionChangeQuota,
): Promise<CreateTopicsResponse> {
  const results = await services.metadata.controller.createTopics(
    request.topics.map((t) => ({
      name: t.name,
      numPartitions: t.numPartitions,
      replicationFactor: t.replicationFactor,
      assignments: t.assignments.map((a) => ({ partitionIndex: a.partitionIndex, brokerIds: a.brokerIds })),
      configs: t.configs.map((c) => ({ name: c.name, value: c.value })),
    })),
    request.validateOnly,
    quota,
  );
  const image = services.metadata.image();
  return makeCreateTopicsResponse({
    throttleTimeMs: 0,
    topics: results.map((r, i) => {
      const ok = r.errorCode === Errors.NONE.code;
      // v5+ returns the resulting configs; for validate_only they are what the topic would get.
      const overrides = request.validateOnly
        ? new Map(request.topics[i]!.configs.flatMap((c) => (c.value === null ? [] : [[c.name, c.value] as [string, string]])))
        : image.topicConfigs(r.name);
      const configs =
        ok && version >= 5
          ? describeTopicConfig(overrides, services.config, null, false).map((c) =>
              makeCreateTopicsResponseCreatableTopicConfigs({
                name: c.name,
                value: c.value,
                readOnly: c.readOnly,
                configSource: c.source,
                isSensitive: c.sensitive,
              }),
            )
          : null;
      return makeCreateTopicsResponseCreatableTopicResult({
        name: r.name,
        topicId: ok && !request.validateOnly ? r.topicId : ZERO_UUID,
        errorCode: r.errorCode,
        errorMessage: r.errorMessage,
        topicConfigErrorCode: Errors.NONE.code,
        numPartitions: ok ? r.numPartitions : -1,
        replicationFactor: ok ? r.replicationFactor : -1,
        configs,
      });
    }),
  });
}

export async function handleDeleteTopics(
  services: MetadataHandlerServices,
  request: DeleteTopicsRequest,
  version: number,
  quota?: PartitionChangeQuota,
): Promise<DeleteTopicsResponse> {
  // v0-v5 name topics in topic_names; v6+ in topics, each by name or by id.
  const wanted = version >= 6 ? request.topics : request.topicNames.map((name) => ({ name, topicId: ZERO_UUID }));
  if (!services.config.getBoolean('delete.topic.enable')) {
    return makeDeleteTopicsResponse({
      throttleTimeMs: 0,
      responses: wanted.map((t) =>
        makeDeleteTopicsResponseDeletableTopicResult({
          name: t.name,
          topicId: t.topicId,
          errorCode: Errors.TOPIC_DELETION_DISABLED.code,
          errorMessage: 'Topic deletion is disabled.',
        }),
      ),
    });
  }
  const results = await services.metadata.controller.deleteTopics(
    wanted.map((t) => ({ name: t.name, topicId: t.topicId })),
    quota,
  );
  return makeDeleteTopicsResponse({
    throttleTimeMs: 0,
    responses: results.map((r, i) =>
      makeDeleteTopicsResponseDeletableTopicResult({
        // A topic asked for by an unknown id has no name to report.
        name: r.name ?? wanted[i]!.name,
        topicId: r.topicId,
        errorCode: r.errorCode,
        errorMessage: r.errorMessage,
      }),
    ),
  });
}

export async function handleCreatePartitions(
  services: MetadataHandlerServices,
  request: CreatePartitionsRequest,
  quota?: PartitionChangeQuota,
): Promise<CreatePartitionsResponse> {
  const results = await services.metadata.controller.createPartitions(
    request.topics.map((t) => ({
      name: t.name,
      count: t.count,
      assignments: t.assignments === null ? null : t.assignments.map((a) => ({ brokerIds: a.brokerIds })),
    })),
    request.validateOnly,
    quota,
  );
  return makeCreatePartitionsResponse({
    throttleTimeMs: 0,
    results: results.map((r) =>
      makeCreatePartitionsResponseCreatePartitionsTopicResult({ name: r.name, errorCode: r.errorCode, errorMessage: r.errorMessage }),
    ),
  });
}
