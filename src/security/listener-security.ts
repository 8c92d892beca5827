/**
 * What each listener's security protocol and configs mean, on both ends of a connection:
 *
 * - `listenerSecurity`: how a listener authenticates the clients it accepts (TLS options,
 *   the SASL mechanisms it offers, the principal of an SSL client's certificate).
 * - `clientSecurityOf`: how this broker authenticates to another node's listener (the
 *   inter-broker and controller listeners), with the credentials of that listener's JAAS
 *   entry for the mechanism `sasl.mechanism.inter.broker.protocol` (or
 *   `sasl.mechanism.controller.protocol`) names, as Kafka's brokers do.
 *
 * Every value is read as Kafka reads it for a listener: `listener.name.<listener>.<config>`
 * first, then the broker-wide config. A configuration Sluice cannot serve (GSSAPI, a JKS
 * keystore, a SASL listener without its JAAS entry) fails the start with the config named,
 * rather than leaving a listener less secure than it was configured to be.
 */
import type { X509Certificate } from 'node:crypto';
import type { BrokerConfig, Listener } from '../config/broker-config.ts';
import { ConfigException } from '../config/types.ts';
import type { ClientSecurity, SaslCredentials } from '../client/connection.ts';
import type { SaslListener, ServerExchange } from '../server/sasl-session.ts';
import type { ListenerSecurity } from '../server/socket-server.ts';
import { PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parseJaasConfig, type JaasLoginModule } from './jaas.ts';
import { oauthBearerServer } from './oauthbearer-listener.ts';
import { plainServerExchange, plainUsers } from './plain.ts';
import { SCRAM_MECHANISMS, scramMechanismType, scramServerExchange, type ScramCredential, type ScramMechanism } from './scram.ts';
import { SslPrincipalMapper, distinguishedName } from './ssl-principal.ts';
import { SslConfigError, keystoreFiles, peerCertificateRejected, tlsClientOptions, tlsServerOptions, type SslConfigLookup } from './tls.ts';
import type { TLSSocket } from 'node:tls';

/** The SCRAM credential of a user for a mechanism type (1 SHA-256, 2 SHA-512), from the metadata image. */
export type ScramCredentialLookup = (mechanismType: number, user: string) => ScramCredential | undefined;

const SASL_PROTOCOLS: ReadonlySet<string> = new Set(['SASL_PLAINTEXT', 'SASL_SSL']);
const TLS_PROTOCOLS: ReadonlySet<string> = new Set(['SSL', 'SASL_SSL']);
const SERVED_MECHANISMS: ReadonlySet<string> = new Set(['PLAIN', 'OAUTHBEARER', ...SCRAM_MECHANISMS]);

/** A listener's security, built once at start (and again when its keystore changes). */
export interface BuiltListenerSecurity extends ListenerSecurity {
  /** The keystore and truststore files a TLS listener reads, watched for changes. */
  readonly keystoreFiles: readonly string[];
}

export interface ListenerSecurityServices {
  readonly scramCredential: ScramCredentialLookup;
  /** Wall-clock milliseconds (token expiry). */
  readonly nowMs: () => number;
}

export function listenerSecurity(config: BrokerConfig, listener: Listener, services: ListenerSecurityServices): BuiltListenerSecurity {
  const get: SslConfigLookup = (name) => config.listenerValue(listener.name, name);
  const usesTls = TLS_PROTOCOLS.has(listener.securityProtocol);
  const tls = usesTls ? withConfigName(() => tlsServerOptions(get)) : null;
  const sasl = SASL_PROTOCOLS.has(listener.securityProtocol) ? saslListener(config, listener, services) : null;
  const mapper = usesTls
    ? withConfigName(() => SslPrincipalMapper.fromRules(get('ssl.principal.mapping.rules') ?? 'DEFAULT'), 'ssl.principal.mapping.rules')
    : null;
  return {
    tls,
    sasl,
    keystoreFiles: usesTls ? keystoreFiles(get) : [],
    peerRefused: (socket) => (usesTls ? peerCertificateRejected(socket as unknown as TLSSocket) : null),
    principalOf: (cert: X509Certificate | undefined) =>
      mapper === null || cert === undefined ? 'User:ANONYMOUS' : `User:${mapper.name(distinguishedName(cert))}`,
  };
}

function saslListener(config: BrokerConfig, listener: Listener, services: ListenerSecurityServices): SaslListener {
  const mechanisms = (config.listenerValue(listener.name, 'sasl.enabled.mechanisms') ?? '')
    .split(',')
    .map((m) => m.trim().toUpperCase())
    .filter((m) => m !== '');
  const configName = `listener.name.${listener.name.toLowerCase()}.sasl.enabled.mechanisms`;
  if (mechanisms.length === 0) throw new ConfigException(configName, `SASL listener ${listener.name} enables no SASL mechanism`);
  const exchanges = new Map<string, () => ServerExchange>();
  for (const mechanism of mechanisms) {
    if (mechanism === 'GSSAPI') {
      throw new ConfigException(
        configName,
        `SASL mechanism GSSAPI (Kerberos) is not supported: enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER on listener ${listener.name}`,
      );
    }
    if (!SERVED_MECHANISMS.has(mechanism)) {
      throw new ConfigException(configName, `Unsupported SASL mechanism ${mechanism} on listener ${listener.name}`);
    }
    exchanges.set(mechanism, mechanismServer(config, listener, mechanism, services));
  }
  return {
    mechanisms,
    exchange: (mechanism) => exchanges.get(mechanism)!(),
    reauthenticationMs: config.getLong('connections.max.reauth.ms'),
    failedAuthenticationDelayMs: config.getInt('connection.failed.authentication.delay.ms'),
  };
}

function mechanismServer(
  config: BrokerConfig,
  listener: Listener,
  mechanism: string,
  services: ListenerSecurityServices,
): () => ServerExchange {
  const jaas = jaasEntry(config, listener.name, mechanism);
  if (mechanism === 'PLAIN') {
    const name = jaasConfigName(listener.name, mechanism);
    if (jaas === null || jaas.loginModule !== PLAIN_LOGIN_MODULE) {
      throw new ConfigException(
        name,
        `SASL/PLAIN on listener ${listener.name} needs ${name} with ${PLAIN_LOGIN_MODULE} and its user_<name>="<password>" entries`,
      );
    }
    const users = plainUsers(jaas);
    return () => plainServerExchange(users);
  }
  if (mechanism === 'OAUTHBEARER') return oauthBearerServer(config, listener.name, jaas, services.nowMs);
  const scram = mechanism as ScramMechanism;
  const type = scramMechanismType(scram);
  return () => scramServerExchange(scram, (user) => services.scramCredential(type, user));
}

/** `listener.name.<listener>.<mechanism>.sasl.jaas.config`, parsed; null when not set. */
function jaasEntry(config: BrokerConfig, listener: string, mechanism: string): JaasLoginModule | null {
  const name = jaasConfigName(listener, mechanism);
  const value = config.listenerValue(listener, `${mechanism.toLowerCase()}.sasl.jaas.config`);
  if (value === null) return null;
  try {
    return parseJaasConfig(value);
  } catch (err) {
    throw new ConfigException(name, `Invalid ${name}: ${(err as Error).message}`);
  }
}

function jaasConfigName(listener: string, mechanism: string): string {
  return `listener.name.${listener.toLowerCase()}.${mechanism.toLowerCase()}.sasl.jaas.config`;
}

/** How this broker connects to the inter-broker listener of other brokers. */
export function interBrokerClientSecurity(config: BrokerConfig): ClientSecurity {
  return clientSecurityOf(config, config.interBrokerListenerName, 'sasl.mechanism.inter.broker.protocol');
}

/** How this node connects to the controllers (controller.listener.names' first listener). */
export function controllerClientSecurity(config: BrokerConfig): ClientSecurity {
  const listener = config.controllerListenerNames[0];
  return listener === undefined ? {} : clientSecurityOf(config, listener, 'sasl.mechanism.controller.protocol');
}

function clientSecurityOf(config: BrokerConfig, listener: string, mechanismConfig: string): ClientSecurity {
  const protocol = config.securityProtocolMap.get(listener) ?? 'PLAINTEXT';
  const security: { tls?: ClientSecurity['tls']; sasl?: SaslCredentials } = {};
  if (TLS_PROTOCOLS.has(protocol)) {
    const get: SslConfigLookup = (name) => config.listenerValue(listener, name);
    // Checked now, so that a bad keystore fails the start rather than every connection.
    withConfigName(() => tlsClientOptions(get, 'localhost'));
    security.tls = (host) => tlsClientOptions(get, host);
  }
  if (SASL_PROTOCOLS.has(protocol)) {
    const mechanism = config.getString(mechanismConfig).trim().toUpperCase();
    const name = jaasConfigName(listener, mechanism);
    if (mechanism !== 'PLAIN' && !(SCRAM_MECHANISMS as readonly string[]).includes(mechanism)) {
      throw new ConfigException(
        mechanismConfig,
        `${mechanismConfig}=${mechanism}: brokers authenticate to each other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`,
      );
    }
    const jaas = jaasEntry(config, listener, mechanism);
    const expected = mechanism === 'PLAIN' ? PLAIN_LOGIN_MODULE : SCRAM_LOGIN_MODULE;
    const username = jaas?.options.get('username');
    const password = jaas?.options.get('password');
    if (jaas === null || jaas.loginModule !== expected || username === undefined || password === undefined) {
      throw new ConfigException(name, `${name} must give ${expected} with the username and password this broker authenticates with`);
    }
    security.sasl = { mechanism: mechanism as SaslCredentials['mechanism'], username, password };
  }
  return security;
}

/** Turns a TLS or mapping-rule error into a ConfigException that names the config at fault. */
function withConfigName<T>(build: () => T, configName = 'ssl'): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof SslConfigError) throw new ConfigException(err.configName, err.message);
    if (err instanceof ConfigException) throw err;
    throw new ConfigException(configName, (err as Error).message);
  }
}
