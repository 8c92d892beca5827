export {
  BrokerConfig,
  DEFAULT_BROKER_CONFIG,
  parseListeners,
  type DescribedConfig,
  type ConfigSynonym,
  type HostPort,
  type Listener,
  type StaticSources,
} from './broker-config.ts';
export { BROKER_CONFIG_DEFS } from './broker-defs.ts';
export { TOPIC_CONFIG_DEFS, type TopicConfigDef, type BrokerSynonym } from './topic-defs.ts';
export {
  effectiveTopicConfig,
  describeTopicConfig,
  validateTopicConfig,
  validateTopicConfigs,
  isTopicConfig,
  topicConfigLookup,
  topicLogConfig,
  topicConfigValue,
  topicConfigNumber,
  cleanupPolicyOf,
  logConfigOf,
  DEFAULT_LOG_CONFIG,
  type TopicConfigLookup,
  type TopicOverrides,
} from './topic-config.ts';
export { parseProperties, readPropertiesFile, propertiesFromEnv, envNameToProperty, parseOverride } from './sources.ts';
export {
  ConfigException,
  ConfigSource,
  CONFIG_TYPE_CODE,
  LONG_MAX,
  type ConfigDef,
  type ConfigType,
  type ConfigSourceCode,
  type ConfigUpdateMode,
} from './types.ts';
