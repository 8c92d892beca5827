/**
 * The broker's effective configuration: Kafka's defaults, overlaid by static properties
 * (server.properties < SLUICE_* environment < --override), then by dynamic configs from the
 * metadata log (cluster-wide default < this broker), as Kafka layers them.
 */
import { NEVER } from '../../storage/config.ts';
import { BROKER_CONFIG_DEFS, BROKER_CONFIG_DEF_BY_NAME } from './broker-defs.ts';
import { effectiveTopicConfig } from './topic-config.ts';
import { CONFIG_TYPE_CODE, ConfigException, ConfigSource, checkValue, parseList, type ConfigDef, type ConfigSourceCode } from './types.ts';

export interface ConfigSynonym {
  readonly name: string;
  readonly value: string | null;
  readonly source: ConfigSourceCode;
}

/** One entry as DescribeConfigs reports it. Sensitive values are reported as null. */
export interface DescribedConfig {
  readonly name: string;
  readonly value: string | null;
  readonly readOnly: boolean;
  readonly source: ConfigSourceCode;
  readonly sensitive: boolean;
  readonly documentation: string;
  /** DescribeConfigs v3+ config_type code. */
  readonly configType: number;
  readonly synonyms: readonly ConfigSynonym[];
}

/** Broker configs that stand in for each other, highest precedence first (Kafka's synonyms). */
const BROKER_SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ['log.retention.ms', 'log.retention.minutes', 'log.retention.hours'],
  ['log.roll.ms', 'log.roll.hours'],
  ['log.roll.jitter.ms', 'log.roll.jitter.hours'],
  ['log.flush.interval.ms', 'log.flush.scheduler.interval.ms'],
  ['log.dirs', 'log.dir'],
  ['node.id', 'broker.id'],
];
const SYNONYMS_OF = new Map<string, readonly string[]>();
for (const group of BROKER_SYNONYM_GROUPS) for (const name of group) SYNONYMS_OF.set(name, group.slice(group.indexOf(name)));

export interface Listener {
  /** Listener name (PLAINTEXT, CONTROLLER, ...). */
  readonly name: string;
  /** Host to bind or advertise; '' means the default (127.0.0.1). */
  readonly host: string;
  readonly port: number;
  readonly securityProtocol: string;
}

/** A `host:port` endpoint (controller.quorum.bootstrap.servers). */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface StaticSources {
  /** From server.properties. */
  readonly file?: ReadonlyMap<string, string>;
  /** From SLUICE_* environment variables. */
  readonly env?: ReadonlyMap<string, string>;
  /** From --override flags, in order (later wins). */
  readonly overrides?: ReadonlyMap<string, string>;
}

type ChangeListener = (name: string) => void;

export class BrokerConfig {
  private readonly staticValues = new Map<string, string>();
  private readonly dynamicDefault = new Map<string, string>();
  private readonly dynamicBroker = new Map<string, string>();
  private readonly listenersOnChange: ChangeListener[] = [];
  /** Supplied names no definition knows; Kafka warns about these and goes on. */
  readonly unknownNames: readonly string[];
  /** `listener.name.<listener>.<config>` values (listener lower-case), as set. */
  private readonly listenerValues = new Map<string, string>();

  constructor(sources: StaticSources = {}) {
    const unknown: string[] = [];
    for (const layer of [sources.file, sources.env, sources.overrides]) {
      if (!layer) continue;
      for (const [name, value] of layer) {
        const listenerScoped = LISTENER_PREFIX.exec(name);
        if (listenerScoped !== null) {
          const [, listener = '', config = ''] = listenerScoped;
          const scopedDef = BROKER_CONFIG_DEF_BY_NAME.get(config);
          if (scopedDef !== undefined) checkValue({ ...scopedDef, name }, value);
          this.listenerValues.set(`listener.name.${listener.toLowerCase()}.${config}`, value.trim());
          continue;
        }
        const def = BROKER_CONFIG_DEF_BY_NAME.get(name);
        if (def === undefined) {
          unknown.push(name);
          continue;
        }
        checkValue(def, value);
        this.staticValues.set(name, value.trim());
      }
    }
    this.unknownNames = unknown;
    this.checkConsistency();
  }

  static definitions(): readonly ConfigDef[] {
    return BROKER_CONFIG_DEFS;
  }

  /** Every explicitly set config and its effective value (sensitive ones masked), for the start-up log. */
  explicitValues(): Record<string, string> {
    const result: Record<string, string> = {};
    for (const def of BROKER_CONFIG_DEFS) {
      if (this.isSet(def.name)) result[def.name] = def.sensitive ? '[hidden]' : this.getString(def.name);
    }
    for (const [name, value] of this.listenerValues) {
      const config = LISTENER_PREFIX.exec(name)?.[2] ?? '';
      const sensitive = BROKER_CONFIG_DEF_BY_NAME.get(config)?.sensitive ?? config.endsWith('sasl.jaas.config');
      result[name] = sensitive ? '[hidden]' : value;
    }
    return result;
  }

  /** The effective value, or null when neither set nor defaulted. */
  get(name: string): string | null {
    const def = this.def(name);
    return this.dynamicBroker.get(name) ?? this.dynamicDefault.get(name) ?? this.staticValues.get(name) ?? def.defaultValue;
  }

  /**
   * A config as one listener reads it (Kafka's valuesWithPrefixOverride):
   * `listener.name.<listener>.<name>`, else the broker's value of `name`. Names only listeners
   * have (`plain.sasl.jaas.config`) are null unless set for the listener.
   */
  listenerValue(listener: string, name: string): string | null {
    const scoped = this.listenerValues.get(`listener.name.${listener.toLowerCase()}.${name}`);
    if (scoped !== undefined) return scoped;
    return BROKER_CONFIG_DEF_BY_NAME.has(name) ? this.get(name) : null;
  }

  /** True when some layer sets the config explicitly (its default does not count). */
  isSet(name: string): boolean {
    return this.dynamicBroker.has(name) || this.dynamicDefault.has(name) || this.staticValues.has(name);
  }

  source(name: string): ConfigSourceCode {
    if (this.dynamicBroker.has(name)) return ConfigSource.DYNAMIC_BROKER_CONFIG;
    if (this.dynamicDefault.has(name)) return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG;
    if (this.staticValues.has(name)) return ConfigSource.STATIC_BROKER_CONFIG;
    return ConfigSource.DEFAULT_CONFIG;
  }

  getString(name: string): string {
    const v = this.get(name);
    if (v === null) throw new ConfigException(name, `Missing required configuration "${name}" which has no default value.`);
    return v;
  }

  getInt(name: string): number {
    return Number(this.getString(name));
  }

  /**
   * Longs as JS numbers, exact to 2^53; larger values (Long.MAX_VALUE, "never") are clamped to
   * Number.MAX_SAFE_INTEGER, storage's NEVER.
   */
  getLong(name: string): number {
    return Math.min(Number(this.getString(name)), NEVER);
  }

  getDouble(name: string): number {
    return Number(this.getString(name));
  }

  getBoolean(name: string): boolean {
    return this.getString(name).toLowerCase() === 'true';
  }

  getList(name: string): string[] {
    const v = this.get(name);
    return v === null ? [] : parseList(v);
  }

  // Derived values, resolved through synonyms as Kafka does.

  get nodeId(): number {
    return this.isSet('node.id') ? this.getInt('node.id') : this.getInt('broker.id');
  }

  get processRoles(): string[] {
    return this.getList('process.roles');
  }

  get logDirs(): string[] {
    return this.get('log.dirs') !== null ? this.getList('log.dirs') : [this.getString('log.dir')];
  }

  /** Where the metadata log lives: metadata.log.dir, else the first log dir. */
  get metadataLogDir(): string {
    const dir = this.get('metadata.log.dir') ?? this.logDirs[0];
    if (dir === undefined) throw new ConfigException('log.dirs', 'No log directory configured (log.dirs, log.dir)');
    return dir;
  }

  /**
   * retention.ms as the broker sets it for topics: log.retention.ms, else .minutes, else
   * .hours, through the same synonyms (and unit conversions) topics fall back to.
   */
  get logRetentionMs(): number {
    return this.topicDefault('retention.ms');
  }

  /** segment.ms as the broker sets it for topics: log.roll.ms, else log.roll.hours. */
  get logRollMs(): number {
    return this.topicDefault('segment.ms');
  }

  /** A numeric topic config's broker-level value (its synonyms, else Kafka's default), clamped as getLong. */
  private topicDefault(topicConfigName: string): number {
    return Math.min(Number(effectiveTopicConfig({}, this)[topicConfigName]), NEVER);
  }

  /**
   * listener.security.protocol.map as Kafka's effectiveListenerSecurityProtocolMap reads it:
   * names upper-cased, and when the map is left at its default and nothing uses SSL or SASL,
   * every controller listener without an entry is PLAINTEXT.
   */
  get securityProtocolMap(): Map<string, string> {
    const map = new Map<string, string>();
    for (const entry of parseList(this.getString('listener.security.protocol.map'))) {
      const colon = entry.lastIndexOf(':');
      if (colon <= 0) {
        throw new ConfigException(
          'listener.security.protocol.map',
          `Error parsing configuration property 'listener.security.protocol.map': expected {listener}:{security protocol}, got '${entry}'`,
        );
      }
      const protocol = entry
        .slice(colon + 1)
        .trim()
        .toUpperCase();
      if (!SECURITY_PROTOCOLS.includes(protocol)) {
        throw new ConfigException(
          'listener.security.protocol.map',
          `Invalid security protocol \`${entry.slice(colon + 1).trim()}\` defined in listener.security.protocol.map`,
        );
      }
      map.set(entry.slice(0, colon).trim().toUpperCase(), protocol);
    }
    if (!this.isSet('listener.security.protocol.map')) {
      const controllers = this.controllerListenerNames;
      if (
        ![...controllers, ...listenerNamesOf(this.getString('listeners'))].some(
          (name) => name !== 'PLAINTEXT' && SECURITY_PROTOCOLS.includes(name),
        )
      ) {
        for (const name of controllers) if (!map.has(name)) map.set(name, 'PLAINTEXT');
      }
    }
    return map;
  }

  get controllerListenerNames(): string[] {
    return this.getList('controller.listener.names').map((n) => n.toUpperCase());
  }

  /** Listeners to bind. */
  get listeners(): Listener[] {
    return parseListeners(this.getString('listeners'), this.securityProtocolMap, 'listeners');
  }

  /** `http.listeners` as host and port (the host unbracketed; empty for every interface). */
  get httpListeners(): { host: string; port: number }[] {
    return this.getList('http.listeners').map((entry) => {
      const address = entry.slice('http://'.length);
      const colon = address.lastIndexOf(':');
      return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(colon + 1)) };
    });
  }

  /** What Metadata/DescribeCluster report; controller listeners are never advertised to clients. */
  get advertisedListeners(): Listener[] {
    const raw = this.get('advertised.listeners');
    const controllers = new Set(this.controllerListenerNames);
    const source = raw === null ? this.listeners : parseListeners(raw, this.securityProtocolMap, 'advertised.listeners');
    return source.filter((l) => !controllers.has(l.name));
  }

  /** `controller.quorum.voters` as {nodeId, host, port}. */
  get quorumVoters(): { nodeId: number; host: string; port: number }[] {
    return this.getList('controller.quorum.voters').map((entry) => {
      const m = /^(\d+)@(.*):(\d+)$/.exec(entry);
      if (!m)
        throw new ConfigException(
          'controller.quorum.voters',
          `Invalid value ${entry} for configuration controller.quorum.voters: expected {id}@{host}:{port}`,
        );
      const [, nodeId = '', host = '', port = ''] = m;
      return { nodeId: Number(nodeId), host: host.replace(/^\[|\]$/g, ''), port: Number(port) };
    });
  }

  /**
   * `controller.quorum.bootstrap.servers` (KIP-853) as {host, port}: the controllers a node
   * that does not list the voters asks for the quorum.
   */
  get quorumBootstrapServers(): HostPort[] {
    return this.getList('controller.quorum.bootstrap.servers').map((entry) => {
      const m = /^(\[[^\]]*\]|[^\s:[\]]+):(\d*)$/.exec(entry);
      if (m === null || m[1] === '[]') {
        throw new ConfigException(
          'controller.quorum.bootstrap.servers',
          `Failed to parse host name from entry ${entry} for the configuration controller.quorum.bootstrap.servers`,
        );
      }
      const port = Number(m[2]);
      if (m[2] === '' || port > 65535) {
        throw new ConfigException(
          'controller.quorum.bootstrap.servers',
          `Failed to parse port from entry ${entry} for the configuration controller.quorum.bootstrap.servers`,
        );
      }
      return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
    });
  }

  /**
   * The listener brokers replicate over: inter.broker.listener.name, else the listener named
   * after security.inter.broker.protocol (PLAINTEXT by default).
   */
  get interBrokerListenerName(): string {
    return (this.get('inter.broker.listener.name') ?? this.getString('security.inter.broker.protocol')).trim().toUpperCase();
  }

  /**
   * Applies a dynamic config from the metadata log (a ConfigRecord for the broker resource:
   * `scope` 'cluster' for the default resource "", 'broker' for this node's id). null deletes.
   */
  setDynamic(name: string, value: string | null, scope: 'cluster' | 'broker'): void {
    const def = this.def(name);
    if (def.updateMode === 'read-only') throw new ConfigException(name, `Cannot update these configs dynamically: [${name}]`);
    if (scope === 'cluster' && def.updateMode === 'per-broker')
      throw new ConfigException(name, `Cannot update these configs at default cluster level, broker id must be specified: [${name}]`);
    const layer = scope === 'cluster' ? this.dynamicDefault : this.dynamicBroker;
    if (value === null) layer.delete(name);
    else {
      checkValue(def, value);
      layer.set(name, value.trim());
    }
    for (const listener of this.listenersOnChange) listener(name);
  }

  /** Called after any dynamic change, with the config name. */
  onChange(listener: ChangeListener): void {
    this.listenersOnChange.push(listener);
  }

  /** DescribeConfigs for the broker resource: every config when `names` is null. */
  describe(names: readonly string[] | null, includeSynonyms: boolean): DescribedConfig[] {
    const defs = names === null ? BROKER_CONFIG_DEFS : names.flatMap((n) => BROKER_CONFIG_DEF_BY_NAME.get(n) ?? []);
    return defs.map((def) => {
      const synonyms = includeSynonyms ? this.synonymsOf(def.name) : [];
      return {
        name: def.name,
        value: def.sensitive ? null : this.get(def.name),
        readOnly: def.updateMode === 'read-only',
        source: this.source(def.name),
        sensitive: def.sensitive,
        documentation: def.documentation,
        configType: CONFIG_TYPE_CODE[def.type],
        synonyms,
      };
    });
  }

  /**
   * Every layer at which `name` and the broker configs it falls back to are set, in
   * precedence order, as DescribeConfigs synonyms.
   */
  synonymsOf(name: string): ConfigSynonym[] {
    const result: ConfigSynonym[] = [];
    for (const synonym of SYNONYMS_OF.get(name) ?? [name]) {
      const def = this.def(synonym);
      const hide = (v: string | null): string | null => (def.sensitive ? null : v);
      const layers: [ReadonlyMap<string, string>, ConfigSourceCode][] = [
        [this.dynamicBroker, ConfigSource.DYNAMIC_BROKER_CONFIG],
        [this.dynamicDefault, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG],
        [this.staticValues, ConfigSource.STATIC_BROKER_CONFIG],
      ];
      for (const [layer, source] of layers) {
        const v = layer.get(synonym);
        if (v !== undefined) result.push({ name: synonym, value: hide(v), source });
      }
      if (def.defaultValue !== null) result.push({ name: synonym, value: hide(def.defaultValue), source: ConfigSource.DEFAULT_CONFIG });
    }
    return result;
  }

  private def(name: string): ConfigDef {
    const def = BROKER_CONFIG_DEF_BY_NAME.get(name);
    if (def === undefined) throw new ConfigException(name, `Unknown broker configuration ${name}`);
    return def;
  }

  /**
   * Cross-field rules Kafka checks at start-up (KafkaConfig.validateValues), with its
   * messages. A config without process.roles (a library default, a unit test) gets only the
   * checks that do not depend on the roles; `sluice start` requires the roles.
   */
  private checkConsistency(): void {
    if (this.isSet('node.id') && this.isSet('broker.id') && this.getInt('node.id') !== this.getInt('broker.id')) {
      throw new ConfigException('broker.id', 'You must set `node.id` to the same value as `broker.id`.');
    }
    const roles = new Set(this.processRoles);
    if (roles.size > 0 && this.nodeId < 0) {
      throw new ConfigException(
        'node.id',
        'Missing configuration `node.id` which is required when `process.roles` is defined (i.e. when running in KRaft mode).',
      );
    }
    const names = new Set<string>();
    for (const l of this.listeners) {
      if (names.has(l.name)) throw new ConfigException('listeners', `Each listener must have a different name, ${l.name} is repeated`);
      names.add(l.name);
    }
    if (roles.size > 0) this.checkKRaft(roles, names);
    if (roles.has('broker')) this.checkBrokerListeners(names);
    for (const l of this.advertisedListeners) {
      if (l.host === '0.0.0.0' || l.host === '::') {
        throw new ConfigException(
          'advertised.listeners',
          `advertised.listeners cannot use the nonroutable meta-address ${l.host}. Use a routable IP address.`,
        );
      }
    }
  }

  private checkKRaft(roles: ReadonlySet<string>, listenerNames: ReadonlySet<string>): void {
    const voterIds = [...new Set(this.quorumVoters.map((v) => v.nodeId))].sort((a, b) => a - b);
    const bootstrapServers = this.quorumBootstrapServers;
    if (voterIds.length === 0 && bootstrapServers.length === 0) {
      throw new ConfigException(
        'controller.quorum.voters',
        'If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers ' +
          'or controller.quorum.voters must contain a parseable set of controllers.',
      );
    }
    const votersText = `controller.quorum.voters=Set(${voterIds.join(', ')})`;
    const controllerNames = this.controllerListenerNames;
    const nodeId = this.nodeId;
    if (!roles.has('controller')) {
      if (voterIds.includes(nodeId)) {
        throw new ConfigException(
          'controller.quorum.voters',
          `If process.roles contains just the 'broker' role, the node id ${nodeId} must not be included in the set of voters ${votersText}`,
        );
      }
      if (controllerNames.length === 0) {
        throw new ConfigException(
          'controller.listener.names',
          'controller.listener.names must contain at least one value when running KRaft with just the broker role',
        );
      }
      if (controllerNames.some((name) => listenerNames.has(name))) {
        throw new ConfigException(
          'listeners',
          "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role",
        );
      }
      const protocols = this.securityProtocolMap;
      for (const name of controllerNames) {
        if (!protocols.has(name)) {
          throw new ConfigException(
            'listener.security.protocol.map',
            `Controller listener with name ${name} defined in controller.listener.names not found in listener.security.protocol.map ` +
              '(an explicit security mapping for each controller listener is required if listener.security.protocol.map is non-empty, ' +
              'or if there are security protocols other than PLAINTEXT in use)',
          );
        }
      }
      const advertised = this.get('advertised.listeners');
      if (advertised !== null && listenerNamesOf(advertised).some((name) => controllerNames.includes(name))) {
        throw new ConfigException(
          'advertised.listeners',
          'The advertised.listeners config must not contain KRaft controller listeners from controller.listener.names when ' +
            'process.roles contains the broker role because Kafka clients that send requests via advertised listeners do not ' +
            'send requests to KRaft controllers -- they only send requests to KRaft brokers.',
        );
      }
      return;
    }
    if (!roles.has('broker')) {
      if ([...listenerNames].some((name) => !controllerNames.includes(name))) {
        throw new ConfigException(
          'listeners',
          'The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller',
        );
      }
      if (this.get('inter.broker.listener.name') !== null && controllerNames.includes(this.interBrokerListenerName)) {
        throw new ConfigException(
          'inter.broker.listener.name',
          'controller.listener.names must not contain an explicitly set inter.broker.listener.name configuration value when process.roles=controller',
        );
      }
    }
    // A controller with only controller.quorum.bootstrap.servers joins as an observer, learns the
    // voters from the log and may then be added to them (KIP-853, `sluice cluster add-controller`).
    if (voterIds.length > 0 && !voterIds.includes(nodeId)) {
      throw new ConfigException(
        'controller.quorum.voters',
        `If process.roles contains the 'controller' role, the node id ${nodeId} must be included in the set of voters ${votersText}`,
      );
    }
    // A one-voter quorum of this node never takes a connection from another voter, so `sluice
    // dev` (and a combined node of a one-node cluster) may run it without a controller listener.
    const soleVoter = roles.has('broker') && voterIds.length === 1 && controllerNames.length === 0;
    if (soleVoter) return;
    if (!controllerNames.some((name) => listenerNames.has(name))) {
      throw new ConfigException(
        'controller.listener.names',
        "controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role",
      );
    }
    if (!controllerNames.every((name) => listenerNames.has(name))) {
      throw new ConfigException(
        'controller.listener.names',
        "controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role",
      );
    }
  }

  /** The broker role's listener rules: an advertised broker listener, the inter-broker one among them. */
  private checkBrokerListeners(listenerNames: ReadonlySet<string>): void {
    if (this.isSet('inter.broker.listener.name') && this.isSet('security.inter.broker.protocol')) {
      throw new ConfigException(
        'inter.broker.listener.name',
        'Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.',
      );
    }
    const interBroker = this.interBrokerListenerName;
    if (this.get('inter.broker.listener.name') !== null && !this.securityProtocolMap.has(interBroker)) {
      throw new ConfigException(
        'inter.broker.listener.name',
        `Listener with name ${interBroker} defined in inter.broker.listener.name not found in listener.security.protocol.map.`,
      );
    }
    const advertised = [...new Set(this.advertisedListeners.map((l) => l.name))];
    if (advertised.length === 0) {
      throw new ConfigException(
        'advertised.listeners',
        'There must be at least one broker advertised listener. Perhaps all listeners appear in controller.listener.names?',
      );
    }
    if (!advertised.includes(interBroker)) {
      throw new ConfigException(
        'inter.broker.listener.name',
        `inter.broker.listener.name must be a listener name defined in advertised.listeners. ` +
          `The valid options based on currently configured listeners are ${advertised.join(',')}`,
      );
    }
    if (!advertised.every((name) => listenerNames.has(name))) {
      throw new ConfigException(
        'advertised.listeners',
        'advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. ' +
          `Found ${advertised.join(',')}. The valid options based on the current configuration are ${[...listenerNames].join(',')}`,
      );
    }
  }
}

/** `listener.name.<listener>.<config>`: a config one listener overrides. */
const LISTENER_PREFIX = /^listener\.name\.([A-Za-z0-9_]+)\.(.+)$/;

/** Kafka's SecurityProtocol names. */
const SECURITY_PROTOCOLS: readonly string[] = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'];

/** The listener names of a `NAME://host:port,...` list, upper-cased, without parsing the rest. */
function listenerNamesOf(value: string): string[] {
  return parseList(value).map((entry) => entry.split('://')[0]!.trim().toUpperCase());
}

/** Parses `NAME://host:port,...`; a bare protocol name (PLAINTEXT) is its own listener name. */
export function parseListeners(value: string, protocolMap: ReadonlyMap<string, string>, configName: string): Listener[] {
  return parseList(value).map((entry) => {
    const m = /^([A-Za-z0-9_]+):\/\/(\[[^\]]*\]|[^:/]*):(\d+)$/.exec(entry);
    if (!m)
      throw new ConfigException(configName, `Invalid value ${entry} for configuration ${configName}: expected LISTENER_NAME://host:port`);
    const [, listenerName = '', host = '', portText = ''] = m;
    const name = listenerName.toUpperCase();
    const securityProtocol = protocolMap.get(name);
    if (securityProtocol === undefined) {
      throw new ConfigException(configName, `No security protocol defined for listener ${name} (see listener.security.protocol.map)`);
    }
    const port = Number(portText);
    if (port > 65535) throw new ConfigException(configName, `Invalid port ${port} in ${configName}`);
    return { name, host: host.replace(/^\[|\]$/g, ''), port, securityProtocol };
  });
}

/** The broker configuration with every value at its definition's default (Kafka's). */
export const DEFAULT_BROKER_CONFIG: BrokerConfig = new BrokerConfig();
