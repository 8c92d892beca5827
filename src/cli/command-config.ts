/**
 * `--command-config FILE`: the client properties Kafka's tools read to reach a secured
 * listener (kafka-topics, kafka-configs, kafka-consumer-groups --command-config), as Sluice's
 * client connects with them. Names, values and defaults are the Java client's:
 *
 *   security.protocol   PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
 *   sasl.mechanism      PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default, GSSAPI, is not served)
 *   sasl.jaas.config    PlainLoginModule or ScramLoginModule with username and password
 *   ssl.*               truststore and keystore (PEM or PKCS12), protocols, cipher suites,
 *                       ssl.endpoint.identification.algorithm (https; empty turns it off)
 *
 * As in Kafka's clients, the sasl.* settings apply to the SASL protocols only and the ssl.*
 * settings to SSL and SASL_SSL only. Where Kafka's clients warn of a setting they do not use,
 * a setting this client does not know is refused by name: a misspelt or unsupported security
 * setting must not leave a connection less secure than the file asks.
 */
import type { ClientSecurity, SaslCredentials } from '../client/connection.ts';
import { readPropertiesFile } from '../config/index.ts';
import { PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parseJaasConfig } from '../security/jaas.ts';
import { SCRAM_MECHANISMS } from '../security/scram.ts';
import { SSL_CONFIG_DEFAULTS, SslConfigError, tlsClientOptions, type SslConfigLookup } from '../security/tls.ts';
import { UsageError } from './args.ts';

const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

const SASL_MECHANISMS: readonly string[] = ['PLAIN', ...SCRAM_MECHANISMS];
const SUPPORTED_MECHANISMS = 'PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512';
/** Kafka's default sasl.mechanism. */
const DEFAULT_SASL_MECHANISM = 'GSSAPI';

/** The ssl.* settings a broker reads of its listeners and a client has no use for. */
const LISTENER_ONLY_SSL_CONFIGS: ReadonlySet<string> = new Set(['ssl.client.auth', 'ssl.principal.mapping.rules']);

/** Every setting a command config may hold. */
export const COMMAND_CONFIG_NAMES: ReadonlySet<string> = new Set([
  'security.protocol',
  'sasl.mechanism',
  'sasl.jaas.config',
  ...[...SSL_CONFIG_DEFAULTS.keys()].filter((name) => !LISTENER_ONLY_SSL_CONFIGS.has(name)),
]);

/** The security of `--command-config FILE`; a file that cannot be read or used is a usage error naming it. */
export function readCommandConfig(path: string): ClientSecurity {
  try {
    return commandConfigSecurity(readPropertiesFile(path));
  } catch (err) {
    throw new UsageError(`--command-config ${path}: ${(err as Error).message}`);
  }
}

/**
 * What the client properties mean for a connection: TLS options per host for SSL and
 * SASL_SSL, the SASL credentials for SASL_PLAINTEXT and SASL_SSL. Key and trust material is
 * checked here, so that a bad store fails before any connection is tried; each connection
 * reads it again, as the broker's own client connections do.
 */
export function commandConfigSecurity(properties: ReadonlyMap<string, string>): ClientSecurity {
  for (const name of properties.keys()) {
    if (!COMMAND_CONFIG_NAMES.has(name)) {
      throw new UsageError(
        `unknown or unsupported setting ${name}: sluice reads security.protocol, sasl.mechanism, sasl.jaas.config and the ssl.* settings of a client`,
      );
    }
  }
  // Kafka's ConfigDef trims every string value it parses.
  const get: SslConfigLookup = (name) => properties.get(name)?.trim() ?? null;
  const protocol = securityProtocol(get('security.protocol'));
  const security: { tls?: ClientSecurity['tls']; sasl?: SaslCredentials } = {};
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    checkSsl(get);
    security.tls = (host) => tlsClientOptions(get, host);
  }
  if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') security.sasl = saslCredentials(get);
  return security;
}

function securityProtocol(value: string | null): SecurityProtocol {
  const protocol = SECURITY_PROTOCOLS.find((p) => p === (value ?? 'PLAINTEXT').toUpperCase());
  if (protocol === undefined) {
    throw new UsageError(
      `Invalid value ${value} for configuration security.protocol: String must be one of (case insensitive): ${SECURITY_PROTOCOLS.join(', ')}`,
    );
  }
  return protocol;
}

function checkSsl(get: SslConfigLookup): void {
  try {
    tlsClientOptions(get, 'localhost');
  } catch (err) {
    if (!(err instanceof SslConfigError)) throw err;
    throw new UsageError(err.message.includes(err.configName) ? err.message : `${err.configName}: ${err.message}`);
  }
}

/**
 * The username and password of the JAAS entry. Kafka's client takes them from the login
 * module's credentials whichever mechanism authenticates, so either module serves either.
 */
function saslCredentials(get: SslConfigLookup): SaslCredentials {
  const mechanism = get('sasl.mechanism') ?? DEFAULT_SASL_MECHANISM;
  if (!SASL_MECHANISMS.includes(mechanism)) {
    const what =
      get('sasl.mechanism') === null ? `sasl.mechanism is not set, and Kafka's default ${mechanism}` : `sasl.mechanism ${mechanism}`;
    throw new UsageError(`${what} is not supported: sluice authenticates with ${SUPPORTED_MECHANISMS}`);
  }
  const text = get('sasl.jaas.config');
  const expected = mechanism === 'PLAIN' ? PLAIN_LOGIN_MODULE : SCRAM_LOGIN_MODULE;
  if (text === null)
    throw new UsageError(`sasl.jaas.config is not set: SASL ${mechanism} needs '${expected} required username="..." password="...";'`);
  let jaas: ReturnType<typeof parseJaasConfig>;
  try {
    jaas = parseJaasConfig(text);
  } catch (err) {
    throw new UsageError(`sasl.jaas.config: ${(err as Error).message}`);
  }
  if (jaas.loginModule !== PLAIN_LOGIN_MODULE && jaas.loginModule !== SCRAM_LOGIN_MODULE) {
    throw new UsageError(`sasl.jaas.config: login module ${jaas.loginModule} is not supported: use ${expected}`);
  }
  // ScramLoginModule's tokenauth authenticates with a delegation token, which this client cannot.
  if (jaas.options.get('tokenauth')?.toLowerCase() === 'true') {
    throw new UsageError('sasl.jaas.config: tokenauth (delegation token authentication) is not supported');
  }
  const username = jaas.options.get('username');
  const password = jaas.options.get('password');
  if (username === undefined || password === undefined) {
    throw new UsageError(`sasl.jaas.config: ${jaas.loginModule} needs the username and password options`);
  }
  return { mechanism: mechanism as SaslCredentials['mechanism'], username, password };
}
