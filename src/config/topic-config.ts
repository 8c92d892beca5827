/**
 * Topic configs as the broker sees them: a topic's overrides (from the metadata log) over
 * the broker configs they fall back to, validated and described as Kafka does.
 */
import type { BrokerConfig, ConfigSynonym, DescribedConfig } from './broker-config.ts';
import { TOPIC_CONFIG_DEFS, TOPIC_CONFIG_DEF_BY_NAME, type TopicConfigDef } from './topic-defs.ts';
import { CONFIG_TYPE_CODE, ConfigException, ConfigSource, checkValue, type ConfigSourceCode } from './types.ts';

export type TopicOverrides = ReadonlyMap<string, string> | Readonly<Record<string, string>>;

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

/** The value a topic gets when it has no override, and where it comes from. */
function brokerDefault(def: TopicConfigDef, broker: BrokerConfig): { value: string; source: ConfigSourceCode } {
  for (const synonym of def.synonyms) {
    const v = broker.get(synonym.name);
    if (v === null) continue;
    const source = broker.source(synonym.name);
    // An unset synonym's default is only used by the last synonym in the chain (as Kafka).
    if (source === ConfigSource.DEFAULT_CONFIG && synonym !== def.synonyms[def.synonyms.length - 1]) continue;
    if (source === ConfigSource.DEFAULT_CONFIG) return { value: def.defaultValue!, source };
    return { value: synonym.toTopicValue ? synonym.toTopicValue(v) : v, source };
  }
  return { value: def.defaultValue!, source: ConfigSource.DEFAULT_CONFIG };
}

/**
 * Every topic config's effective value for a topic with `overrides`, keyed by Kafka's topic
 * config names (feed it to storage's logConfigFromProperties).
 */
export function effectiveTopicConfig(overrides: TopicOverrides, broker: BrokerConfig): Record<string, string> {
  const result: Record<string, string> = {};
  for (const def of TOPIC_CONFIG_DEFS) {
    result[def.name] = overrideOf(overrides, def.name) ?? brokerDefault(def, broker).value;
  }
  return result;
}

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
