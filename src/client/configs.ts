/**
 * Topic and broker configs as an admin client reads and changes them, over the wire only (so it
 * works against any Kafka-compatible cluster): DescribeConfigs with synonyms, and
 * IncrementalAlterConfigs. A broker is named by its id, or '' for the cluster-wide default that
 * every broker without its own value takes (kafka-configs --entity-default).
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeDescribeConfigsRequest,
  makeDescribeConfigsRequestDescribeConfigsResource,
  type DescribeConfigsResponse,
} from '../../protocol/messages/describe-configs.ts';
import {
  makeIncrementalAlterConfigsRequest,
  makeIncrementalAlterConfigsRequestAlterConfigsResource,
  makeIncrementalAlterConfigsRequestAlterableConfig,
  type IncrementalAlterConfigsResponse,
} from '../../protocol/messages/incremental-alter-configs.ts';
import { ApiKey } from '../../protocol/messages/index.ts';
import type { KafkaCluster } from './cluster.ts';
import type { KafkaConnection } from './connection.ts';
import { UnknownTopicError, brokerError } from './errors.ts';
import type { ConfigChanges } from './topics.ts';

/** DescribeConfigs / IncrementalAlterConfigs resource types (Kafka's ConfigResource.Type). */
const RESOURCE_TYPE = { topic: 2, broker: 4 } as const;

/** IncrementalAlterConfigs operations (Kafka's AlterConfigOp.OpType). */
const CONFIG_OP_SET = 0;
const CONFIG_OP_DELETE = 1;

/** The wire's config sources by code, named as Kafka's admin client (ConfigEntry.ConfigSource) names them. */
const CONFIG_SOURCES: readonly string[] = [
  'UNKNOWN',
  'DYNAMIC_TOPIC_CONFIG',
  'DYNAMIC_BROKER_CONFIG',
  'DYNAMIC_DEFAULT_BROKER_CONFIG',
  'STATIC_BROKER_CONFIG',
  'DEFAULT_CONFIG',
  'DYNAMIC_BROKER_LOGGER_CONFIG',
  'DYNAMIC_CLIENT_METRICS_CONFIG',
  'DYNAMIC_GROUP_CONFIG',
];

function configSourceName(code: number): string {
  return CONFIG_SOURCES[code] ?? 'UNKNOWN';
}

export interface ConfigResource {
  type: 'topic' | 'broker';
  /** A topic name, a broker id, or '' for the brokers' cluster-wide default. */
  name: string;
}

export interface ConfigSynonym {
  name: string;
  value: string | null;
  source: string;
}

export interface ConfigEntry {
  name: string;
  /** null when sensitive (the broker does not send it) or unset. */
  value: string | null;
  source: string;
  sensitive: boolean;
  readOnly: boolean;
  /** Where the value comes from, the one in effect first (DescribeConfigs includeSynonyms). */
  synonyms: ConfigSynonym[];
}

/** The source of a value set on the resource itself, the only ones kafka-configs shows without --all. */
function dynamicSource(resource: ConfigResource): string {
  if (resource.type === 'topic') return 'DYNAMIC_TOPIC_CONFIG';
  return resource.name === '' ? 'DYNAMIC_DEFAULT_BROKER_CONFIG' : 'DYNAMIC_BROKER_CONFIG';
}

/** A broker answers only for itself: its own configs go to it, the cluster default to any broker. */
function connectionFor(cluster: KafkaCluster, resource: ConfigResource): Promise<KafkaConnection> {
  if (resource.type === 'broker' && resource.name !== '') return cluster.brokerConnection(Number(resource.name));
  return cluster.anyConnection();
}

/** A broker id must be a node id or '' (the default); anything else fails before a request is sent. */
function checkBrokerName(resource: ConfigResource): void {
  if (resource.type === 'broker' && resource.name !== '' && !/^\d+$/.test(resource.name)) {
    throw new Error(`The entity name for brokers must be a valid integer broker id, but it is: ${resource.name}`);
  }
}

/**
 * The resource's configs sorted by name: with `all`, every config the broker reports (defaults
 * and static ones included); otherwise only those set dynamically on the resource itself.
 */
export async function describeConfigs(cluster: KafkaCluster, resource: ConfigResource, all = false): Promise<ConfigEntry[]> {
  checkBrokerName(resource);
  const conn = await connectionFor(cluster, resource);
  const res = await conn.send<DescribeConfigsResponse>(
    ApiKey.DescribeConfigs,
    makeDescribeConfigsRequest({
      resources: [
        makeDescribeConfigsRequestDescribeConfigsResource({
          resourceType: RESOURCE_TYPE[resource.type],
          resourceName: resource.name,
          configurationKeys: null,
        }),
      ],
      includeSynonyms: true,
    }),
  );
  const r = res.results[0];
  if (r === undefined) throw new Error(`DescribeConfigs answered without ${resource.type} '${resource.name}'`);
  if (r.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code && resource.type === 'topic') throw new UnknownTopicError(resource.name);
  if (r.errorCode !== Errors.NONE.code)
    throw brokerError(r.errorCode, r.errorMessage, `DescribeConfigs ${resource.type} '${resource.name}'`);
  const shown = dynamicSource(resource);
  return r.configs
    .map(
      (c): ConfigEntry => ({
        name: c.name,
        value: c.isSensitive ? null : c.value,
        source: configSourceName(c.configSource),
        sensitive: c.isSensitive,
        readOnly: c.readOnly,
        synonyms: c.synonyms.map((s) => ({ name: s.name, value: c.isSensitive ? null : s.value, source: configSourceName(s.source) })),
      }),
    )
    .filter((c) => all || c.source === shown)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** IncrementalAlterConfigs: set and delete configs of one topic, one broker or the brokers' default. */
export async function alterConfigs(cluster: KafkaCluster, resource: ConfigResource, changes: ConfigChanges): Promise<void> {
  checkBrokerName(resource);
  const conn = await connectionFor(cluster, resource);
  const res = await conn.send<IncrementalAlterConfigsResponse>(
    ApiKey.IncrementalAlterConfigs,
    makeIncrementalAlterConfigsRequest({
      resources: [
        makeIncrementalAlterConfigsRequestAlterConfigsResource({
          resourceType: RESOURCE_TYPE[resource.type],
          resourceName: resource.name,
          configs: [
            ...changes.set.map(([name, value]) =>
              makeIncrementalAlterConfigsRequestAlterableConfig({ name, configOperation: CONFIG_OP_SET, value }),
            ),
            ...changes.delete.map((name) =>
              makeIncrementalAlterConfigsRequestAlterableConfig({ name, configOperation: CONFIG_OP_DELETE, value: null }),
            ),
          ],
        }),
      ],
    }),
  );
  const r = res.responses[0];
  if (r === undefined) throw new Error(`IncrementalAlterConfigs answered without ${resource.type} '${resource.name}'`);
  if (r.errorCode === Errors.UNKNOWN_TOPIC_OR_PARTITION.code && resource.type === 'topic') throw new UnknownTopicError(resource.name);
  if (r.errorCode !== Errors.NONE.code) {
    throw brokerError(r.errorCode, r.errorMessage, `IncrementalAlterConfigs ${resource.type} '${resource.name}'`);
  }
}
