/**
 * Shapes shared by the broker and topic config definitions. Values are kept as Kafka keeps
 * them on the wire (strings, as DescribeConfigs returns them); typed getters parse them.
 */

/** Kafka's ConfigDef.Type, with the DescribeConfigs (v3+) config_type code. */
export type ConfigType = 'boolean' | 'string' | 'int' | 'short' | 'long' | 'double' | 'list' | 'class' | 'password';

export const CONFIG_TYPE_CODE: Record<ConfigType, number> = {
  boolean: 1,
  string: 2,
  int: 3,
  short: 4,
  long: 5,
  double: 6,
  list: 7,
  class: 8,
  password: 9,
};

/** DescribeConfigs config_source codes (DescribeConfigsResponse, KIP-226). */
export const ConfigSource = {
  UNKNOWN: 0,
  TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
  DYNAMIC_BROKER_LOGGER_CONFIG: 6,
} as const;
export type ConfigSourceCode = (typeof ConfigSource)[keyof typeof ConfigSource];

/**
 * Whether a broker config can change without a restart (Kafka's DynamicBrokerConfig):
 * 'read-only' configs are reported with read_only=true by DescribeConfigs.
 */
export type ConfigUpdateMode = 'read-only' | 'per-broker' | 'cluster-wide';

export interface ConfigDef {
  readonly name: string;
  readonly type: ConfigType;
  /** Kafka's default rendered as DescribeConfigs shows it; null when there is none. */
  readonly defaultValue: string | null;
  readonly documentation: string;
  readonly updateMode: ConfigUpdateMode;
  readonly sensitive: boolean;
  /** Returns a reason when `value` (already type-checked) is not acceptable. */
  readonly validate?: (value: string) => string | null;
}

export class ConfigException extends Error {
  constructor(
    readonly configName: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigException';
  }
}

/** Java's Long.MAX_VALUE as Kafka prints it: "never" for flush and compaction-lag settings. */
export const LONG_MAX = '9223372036854775807';

const INT_RE = /^[+-]?\d+$/;

/** Type-checks `value` against `def`; throws ConfigException with Kafka-like wording. */
export function checkValue(def: ConfigDef, value: string): void {
  const v = value.trim();
  const bad = (why: string): never => {
    throw new ConfigException(def.name, `Invalid value ${value} for configuration ${def.name}: ${why}`);
  };
  switch (def.type) {
    case 'boolean':
      if (v.toLowerCase() !== 'true' && v.toLowerCase() !== 'false') bad('Expected value to be either true or false');
      break;
    case 'short':
    case 'int':
    case 'long': {
      if (!INT_RE.test(v)) bad('Not a number of type ' + def.type.toUpperCase());
      const n = BigInt(v);
      const bits = def.type === 'short' ? 15n : def.type === 'int' ? 31n : 63n;
      if (n < -(1n << bits) || n >= 1n << bits) bad('Not a number of type ' + def.type.toUpperCase());
      break;
    }
    case 'double':
      if (v === '' || !Number.isFinite(Number(v))) bad('Not a number of type DOUBLE');
      break;
    default:
      break;
  }
  const reason = def.validate?.(v);
  if (reason) bad(reason);
}

export function parseList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

// Validators, named after Kafka's ConfigDef validators.

export function atLeast(min: number): (v: string) => string | null {
  return (v) => (Number(v) < min ? `Value must be at least ${min}` : null);
}

export function between(min: number, max: number): (v: string) => string | null {
  return (v) => (Number(v) < min || Number(v) > max ? `Value must be no less than ${min} and no more than ${max}` : null);
}

export function validString(...allowed: string[]): (v: string) => string | null {
  return (v) => (allowed.includes(v) ? null : `String must be one of: ${allowed.join(', ')}`);
}

export function validList(...allowed: string[]): (v: string) => string | null {
  return (v) => {
    for (const item of parseList(v)) {
      if (!allowed.includes(item)) return `Invalid value ${item}. Valid values are: ${allowed.join(', ')}`;
    }
    return null;
  };
}
