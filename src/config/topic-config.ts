/**
 * Topic configs as the broker sees them: a topic's overrides (from the metadata log) over
 * the broker configs they fall back to, validated and described as Kafka does, and parsed
 * into what the data path and the storage engine apply. This is the one place a topic
 * config's value is turned into a number or a policy.
 */
import { type CleanupPolicy, type LogConfig, type MessageTimestampType, NEVER } from '../../storage/config.ts';
import type { BrokerConfig, ConfigSynonym, DescribedConfig } from './broker-config.ts';
import { TOPIC_CONFIG_DEFS, TOPIC_CONFIG_DEF_BY_NAME, type TopicConfigDef } from './topic-defs.ts';
import { CONFIG_TYPE_CODE, ConfigException, ConfigSource, checkValue, parseList, type ConfigSourceCode } from './types.ts';

export type TopicOverrides = ReadonlyMap<string, string> | Readonly<Record<string, string>>;

/** A topic's effective config: its own value, else the broker synonym, else Kafka's default. */
export type TopicConfigLookup = (name: string) => string | undefined;

function overrideOf(overrides: TopicOverrides, name: string): string | undefined {
  return overrides instanceof Map ? overrides.get(name) : (overrides as Readonly<Record<string, string>>)[name];
}

export function isTopicConfig(name: string): boolean {
  return TOPIC_CONFIG_DEF_BY_NAME.has(name);
}

/**
 * Checks one topic config as CreateTopics/AlterConfigs must: unknown names and bad values
 * throw ConfigException (answered with INVALID_CONFIG and the message).
 */
export function validateTopicConfig(name: string, value: string): void {
  const def = TOPIC_CONFIG_DEF_BY_NAME.get(name);
  if (def === undefined) throw new ConfigException(name, `Unknown topic config name: ${name}`);
  checkValue(def, value);
}

/** Validates a whole set of overrides; the first bad one throws. */
export function validateTopicConfigs(overrides: TopicOverrides): void {
  const entries = overrides instanceof Map ? [...overrides] : Object.entries(overrides);
  for (const [name, value] of entries) validateTopicConfig(name, value);
}

/** Kafka's default of a topic config (every topic config has one). */
function defaultOf(def: TopicConfigDef): string {
  if (def.defaultValue === null) throw new ConfigException(def.name, `topic config ${def.name} has no default`);
  return def.defaultValue;
}

/** The value a topic gets when it has no override, and where it comes from. */
function brokerDefault(def: TopicConfigDef, broker: BrokerConfig): { value: string; source: ConfigSourceCode } {
  const last = def.synonyms[def.synonyms.length - 1];
  for (const synonym of def.synonyms) {
    const v = broker.get(synonym.name);
    if (v === null) continue;
    const source = broker.source(synonym.name);
    // An unset synonym's default is only used by the last synonym in the chain (as Kafka).
    if (source === ConfigSource.DEFAULT_CONFIG && synonym !== last) continue;
    if (source === ConfigSource.DEFAULT_CONFIG) return { value: defaultOf(def), source };
    return { value: synonym.toTopicValue ? synonym.toTopicValue(v) : v, source };
  }
  return { value: defaultOf(def), source: ConfigSource.DEFAULT_CONFIG };
}

/**
 * Every topic config's effective value for a topic with `overrides`, keyed by Kafka's topic
 * config names (wrap it in a lookup with `topicConfigLookup`).
 */
export function effectiveTopicConfig(overrides: TopicOverrides, broker: BrokerConfig): Record<string, string> {
  const result: Record<string, string> = {};
  for (const def of TOPIC_CONFIG_DEFS) {
    result[def.name] = overrideOf(overrides, def.name) ?? brokerDefault(def, broker).value;
  }
  return result;
}

/** A lookup over topic config values by name (a missing name falls back to Kafka's default). */
export function topicConfigLookup(values: Readonly<Record<string, string>> | ReadonlyMap<string, string>): TopicConfigLookup {
  if (values instanceof Map) return (name) => values.get(name);
  const record = values as Readonly<Record<string, string>>;
  return (name) => (Object.hasOwn(record, name) ? record[name] : undefined);
}

/** The storage engine's settings of a topic with `overrides` on `broker`. */
export function topicLogConfig(overrides: TopicOverrides, broker: BrokerConfig): LogConfig {
  return logConfigOf(topicConfigLookup(effectiveTopicConfig(overrides, broker)));
}

// ---- parsing: the one place a topic config value becomes a number or a policy ----

/** The value of topic config `name` in `config`, Kafka's default when it has none. */
export function topicConfigValue(config: TopicConfigLookup, name: string): string {
  const value = config(name);
  if (value !== undefined) return value;
  const def = TOPIC_CONFIG_DEF_BY_NAME.get(name);
  if (def === undefined) throw new ConfigException(name, `Unknown topic config name: ${name}`);
  return defaultOf(def);
}

/**
 * A numeric topic config. Long.MAX_VALUE ("no limit") stays the huge double it parses to;
 * `logConfigOf` clamps it for storage.
 */
export function topicConfigNumber(config: TopicConfigLookup, name: string): number {
  const raw = topicConfigValue(config, name);
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new ConfigException(name, `Invalid value ${raw} for configuration ${name}`);
  return value;
}

/** cleanup.policy (a list of delete and compact) as the log applies it. */
export function cleanupPolicyOf(value: string): CleanupPolicy {
  const parts = new Set(parseList(value));
  for (const p of parts) {
    if (p !== 'compact' && p !== 'delete')
      throw new ConfigException('cleanup.policy', `Invalid value ${value} for configuration cleanup.policy`);
  }
  const compact = parts.has('compact');
  if (compact && parts.has('delete')) return 'compact,delete';
  return compact ? 'compact' : 'delete';
}

function timestampTypeOf(value: string): MessageTimestampType {
  if (value !== 'CreateTime' && value !== 'LogAppendTime') {
    throw new ConfigException('message.timestamp.type', `Invalid value ${value} for configuration message.timestamp.type`);
  }
  return value;
}

/** The storage engine's settings of a topic (Kafka's LogConfig) from its effective config. */
export function logConfigOf(config: TopicConfigLookup): LogConfig {
  // Long.MAX_VALUE means "never": the largest number storage computes with exactly.
  const long = (name: string): number => Math.min(topicConfigNumber(config, name), NEVER);
  return {
    segmentBytes: long('segment.bytes'),
    segmentMs: long('segment.ms'),
    segmentJitterMs: long('segment.jitter.ms'),
    segmentIndexBytes: long('segment.index.bytes'),
    retentionMs: long('retention.ms'),
    retentionBytes: long('retention.bytes'),
    cleanupPolicy: cleanupPolicyOf(topicConfigValue(config, 'cleanup.policy')),
    flushMessages: long('flush.messages'),
    flushMs: long('flush.ms'),
    indexIntervalBytes: long('index.interval.bytes'),
    maxMessageBytes: long('max.message.bytes'),
    minCleanableDirtyRatio: long('min.cleanable.dirty.ratio'),
    minCompactionLagMs: long('min.compaction.lag.ms'),
    maxCompactionLagMs: long('max.compaction.lag.ms'),
    deleteRetentionMs: long('delete.retention.ms'),
    fileDeleteDelayMs: long('file.delete.delay.ms'),
    messageTimestampType: timestampTypeOf(topicConfigValue(config, 'message.timestamp.type')),
  };
}

/** Kafka's defaults for a topic: what a topic with no overrides on a default broker gets. */
export const DEFAULT_LOG_CONFIG: Readonly<LogConfig> = Object.freeze(logConfigOf(() => undefined));

/** DescribeConfigs for a topic resource: every config when `names` is null. */
export function describeTopicConfig(
  overrides: TopicOverrides,
  broker: BrokerConfig,
  names: readonly string[] | null,
  includeSynonyms: boolean,
): DescribedConfig[] {
  const defs = names === null ? TOPIC_CONFIG_DEFS : names.flatMap((n) => TOPIC_CONFIG_DEF_BY_NAME.get(n) ?? []);
  return defs.map((def) => {
    const override = overrideOf(overrides, def.name);
    const fallback = brokerDefault(def, broker);
    const synonyms: ConfigSynonym[] = [];
    if (includeSynonyms) {
      if (override !== undefined) synonyms.push({ name: def.name, value: override, source: ConfigSource.TOPIC_CONFIG });
      for (const synonym of def.synonyms) synonyms.push(...broker.synonymsOf(synonym.name).filter((s) => s.name === synonym.name));
    }
    return {
      name: def.name,
      value: override ?? fallback.value,
      readOnly: false,
      source: override !== undefined ? ConfigSource.TOPIC_CONFIG : fallback.source,
      sensitive: false,
      documentation: def.documentation,
      configType: CONFIG_TYPE_CODE[def.type],
      synonyms,
    };
  });
}

export { TOPIC_CONFIG_DEFS };
