/**
 * DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topic and broker resources.
 * Describe reads the image (topic overrides) and the broker's layered config; alterations
 * become ConfigRecords written by the quorum controller.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeAlterConfigsResponse,
  makeAlterConfigsResponseAlterConfigsResourceResponse,
  type AlterConfigsRequest,
  type AlterConfigsResponse,
} from '../../protocol/messages/alter-configs.ts';
import {
  makeDescribeConfigsResponse,
  makeDescribeConfigsResponseDescribeConfigsResourceResult,
  makeDescribeConfigsResponseDescribeConfigsResult,
  makeDescribeConfigsResponseDescribeConfigsSynonym,
  type DescribeConfigsRequest,
  type DescribeConfigsRequestDescribeConfigsResource,
  type DescribeConfigsResponse,
  type DescribeConfigsResponseDescribeConfigsResult,
} from '../../protocol/messages/describe-configs.ts';
import {
  makeIncrementalAlterConfigsResponse,
  makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsResponse,
} from '../../protocol/messages/incremental-alter-configs.ts';
import type { DescribedConfig } from '../config/broker-config.ts';
import { describeTopicConfig } from '../config/topic-config.ts';
import { ConfigSource } from '../config/types.ts';
import { topicNameError } from '../metadata/controller.ts';
import { ConfigResourceType } from '../metadata/records.ts';
import type { MetadataHandlerServices } from './metadata.ts';

export async function handleAlterConfigs(services: MetadataHandlerServices, request: AlterConfigsRequest): Promise<AlterConfigsResponse> {
  const results = await services.metadata.controller.legacyAlterConfigs(
    request.resources.map((r) => ({
      resourceType: r.resourceType,
      resourceName: r.resourceName,
      configs: r.configs.map((c) => ({ name: c.name, value: c.value })),
    })),
    request.validateOnly,
  );
  return makeAlterConfigsResponse({
    throttleTimeMs: 0,
    responses: results.map((r) => makeAlterConfigsResponseAlterConfigsResourceResponse(r)),
  });
}

export async function handleIncrementalAlterConfigs(
  services: MetadataHandlerServices,
  request: IncrementalAlterConfigsRequest,
): Promise<IncrementalAlterConfigsResponse> {
  const results = await services.metadata.controller.incrementalAlterConfigs(
    request.resources.map((r) => ({
      resourceType: r.resourceType,
      resourceName: r.resourceName,
      configs: r.configs.map((c) => ({ name: c.name, configOperation: c.configOperation, value: c.value })),
    })),
    request.validateOnly,
  );
  return makeIncrementalAlterConfigsResponse({
    throttleTimeMs: 0,
    responses: results.map((r) => makeIncrementalAlterConfigsResponseAlterConfigsResourceResponse(r)),
  });
}

export function handleDescribeConfigs(
  services: MetadataHandlerServices,
  request: DescribeConfigsRequest,
  version: number,
): DescribeConfigsResponse {
  const includeSynonyms = version >= 1 && request.includeSynonyms;
  const includeDocumentation = version >= 3 && request.includeDocumentation;
  return makeDescribeConfigsResponse({
    throttleTimeMs: 0,
    results: request.resources.map((resource) => describeResource(services, resource, version, includeSynonyms, includeDocumentation)),
  });
}

function describeResource(
  services: MetadataHandlerServices,
  resource: DescribeConfigsRequestDescribeConfigsResource,
  version: number,
  includeSynonyms: boolean,
  includeDocumentation: boolean,
): DescribeConfigsResponseDescribeConfigsResult {
  const result = (errorCode: number, errorMessage: string | null, configs: DescribedConfig[]) =>
    makeDescribeConfigsResponseDescribeConfigsResult({
      errorCode,
      errorMessage,
      resourceType: resource.resourceType,
      resourceName: resource.resourceName,
      configs: configs.map((c) =>
        makeDescribeConfigsResponseDescribeConfigsResourceResult({
          name: c.name,
          value: c.value,
          readOnly: c.readOnly,
          // v0 only; later versions carry config_source instead.
          isDefault: version === 0 && c.source === ConfigSource.DEFAULT_CONFIG,
          configSource: c.source,
          isSensitive: c.sensitive,
          synonyms: c.synonyms.map((s) =>
            makeDescribeConfigsResponseDescribeConfigsSynonym({ name: s.name, value: s.value, source: s.source }),
          ),
          configType: c.configType,
          documentation: includeDocumentation ? c.documentation : null,
        }),
      ),
    });
  const keys = resource.configurationKeys;
  switch (resource.resourceType) {
    case ConfigResourceType.TOPIC: {
      const nameError = topicNameError(resource.resourceName);
      if (nameError !== null) return result(Errors.INVALID_TOPIC_EXCEPTION.code, nameError, []);
      const image = services.metadata.image();
      if (image.topic(resource.resourceName) === undefined) {
        return result(Errors.UNKNOWN_TOPIC_OR_PARTITION.code, `Topic '${resource.resourceName}' does not exist.`, []);
      }
      return result(
        Errors.NONE.code,
        null,
        describeTopicConfig(image.topicConfigs(resource.resourceName), services.config, keys, includeSynonyms),
      );
    }
    case ConfigResourceType.BROKER: {
      if (resource.resourceName === '') {
        return result(Errors.NONE.code, null, describeClusterDefaults(services.config.describe(keys, true), includeSynonyms));
      }
      if (resource.resourceName !== String(services.nodeId)) {
        return result(
          Errors.INVALID_REQUEST.code,
          `Unexpected broker id, expected ${services.nodeId} or empty string, but received ${resource.resourceName}`,
          [],
        );
      }
      return result(Errors.NONE.code, null, services.config.describe(keys, includeSynonyms));
    }
    case ConfigResourceType.BROKER_LOGGER:
      if (resource.resourceName !== String(services.nodeId)) {
        return result(
          Errors.INVALID_REQUEST.code,
          `Unexpected broker id, expected ${services.nodeId}, but received ${resource.resourceName}`,
          [],
        );
      }
      return result(Errors.NONE.code, null, []);
    default:
      return result(Errors.INVALID_REQUEST.code, `Unsupported resource type ${resource.resourceType}`, []);
  }
}

/**
 * The cluster-wide default resource lists only what is set dynamically at that level, with
 * the value set there: a config this node overrides for itself still shows its default-level
 * value, as Kafka's DescribeConfigs for the resource "" does.
 */
function describeClusterDefaults(described: readonly DescribedConfig[], includeSynonyms: boolean): DescribedConfig[] {
  return described.flatMap((c) => {
    const atDefault = c.synonyms.find((s) => s.name === c.name && s.source === ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG);
    if (atDefault === undefined) return [];
    return [{ ...c, value: atDefault.value, source: atDefault.source, synonyms: includeSynonyms ? [atDefault] : [] }];
  });
}
