/**
 * node:tls options from Kafka's ssl.* configs: what Kafka's DefaultSslEngineFactory builds an
 * SSLContext and SSLEngine from, turned into the options tls.createServer and tls.connect take.
 * Key and trust material is read and checked here, so that a bad config fails at startup with
 * the config at fault named, not at the first handshake.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import {
  checkServerIdentity,
  createSecureContext,
  type ConnectionOptions,
  type PeerCertificate,
  type SecureContextOptions,
  type TlsOptions,
  type TLSSocket,
} from 'node:tls';
import { BROKER_CONFIG_DEF_BY_NAME } from '../config/broker-defs.ts';
import { Pkcs12Error, pkcs12Certificates } from './pkcs12.ts';

/** Reads one ssl.* config value already resolved for the listener (listener.name.<l>.ssl.x, else ssl.x, else Kafka's default), or null when unset. Passwords come back as plain strings. */
export type SslConfigLookup = (name: string) => string | null;

export class SslConfigError extends Error {
  override readonly name = 'SslConfigError';

  constructor(
    readonly configName: string,
    message: string,
  ) {
    super(message);
  }
}

/** The ssl.* names this module reads, with Kafka's defaults: the broker's config definitions' (the client's are the same). */
export const SSL_CONFIG_DEFAULTS: ReadonlyMap<string, string | null> = new Map(
  [
    'ssl.protocol',
    'ssl.enabled.protocols',
    'ssl.cipher.suites',
    'ssl.keystore.type',
    'ssl.keystore.location',
    'ssl.keystore.password',
    'ssl.key.password',
    'ssl.keystore.key',
    'ssl.keystore.certificate.chain',
    'ssl.truststore.type',
    'ssl.truststore.location',
    'ssl.truststore.password',
    'ssl.truststore.certificates',
    'ssl.client.auth',
    'ssl.endpoint.identification.algorithm',
    'ssl.principal.mapping.rules',
  ].map((name) => [name, BROKER_CONFIG_DEF_BY_NAME.get(name)?.defaultValue ?? null]),
);

/** node:tls server options for a listener: key/cert from the keystore, ca from the truststore, requestCert/rejectUnauthorized from ssl.client.auth, minVersion/maxVersion from ssl.enabled.protocols, ciphers from ssl.cipher.suites. Reads files synchronously. Throws SslConfigError naming the config at fault. */
export function tlsServerOptions(get: SslConfigLookup): TlsOptions {
  const keystore = loadKeystore(get);
  if (keystore === null) {
    throw new SslConfigError(
      'ssl.keystore.location',
      'An SSL listener needs a key store: set ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain',
    );
  }
  const clientAuth = sslClientAuth(get);
  return {
    ...keystore,
    ...trustedCertificates(get),
    ...protocolRange(get, false),
    ...cipherSuites(get),
    requestCert: clientAuth !== 'none',
    // With "requested" a client may go without a certificate; one it does present must still
    // verify, which peerCertificateRejected tells once the handshake is done.
    rejectUnauthorized: clientAuth === 'required',
  };
}

/** node:tls client options for Sluice's own connections (inter-broker, controller, CLI): keystore (for mTLS) and truststore, checkServerIdentity per ssl.endpoint.identification.algorithm ('https' default = hostname check; '' = none). */
export function tlsClientOptions(get: SslConfigLookup, host: string): ConnectionOptions {
  return {
    ...loadKeystore(get),
    ...trustedCertificates(get),
    ...protocolRange(get, true),
    ...cipherSuites(get),
    ...(isIP(host) === 0 ? { servername: host } : {}),
    rejectUnauthorized: true,
    checkServerIdentity: serverIdentityCheck(get, host),
  };
}

/** The files whose change means the context must be rebuilt (keystore and truststore locations). */
export function keystoreFiles(get: SslConfigLookup): string[] {
  return [config(get, 'ssl.keystore.location'), config(get, 'ssl.truststore.location')].filter((f): f is string => f !== null);
}

/**
 * For ssl.client.auth=requested: why a certificate the client did present is refused (Java fails
 * that handshake; node lets it complete with `authorized` false), or null when the peer is
 * acceptable — it sent no certificate, or one that verifies.
 */
export function peerCertificateRejected(socket: TLSSocket): string | null {
  if (socket.authorized) return null;
  const presented = (socket.getPeerCertificate() as PeerCertificate | Record<string, never>).raw !== undefined;
  return presented ? String(socket.authorizationError) : null;
}

function config(get: SslConfigLookup, name: string): string | null {
  return get(name) ?? SSL_CONFIG_DEFAULTS.get(name) ?? null;
}

function listConfig(get: SslConfigLookup, name: string): string[] {
  return (config(get, name) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

type ClientAuth = 'none' | 'requested' | 'required';

function sslClientAuth(get: SslConfigLookup): ClientAuth {
  const value = config(get, 'ssl.client.auth');
  if (value === 'none' || value === 'requested' || value === 'required') return value;
  throw new SslConfigError(
    'ssl.client.auth',
    `Invalid value ${value} for configuration ssl.client.auth: String must be one of: required, requested, none`,
  );
}

// ---------------------------------------------------------------------------------------------
// Key store

type KeyMaterial = Pick<SecureContextOptions, 'key' | 'cert' | 'pfx'>;

const JKS_REFUSED =
  'JKS stores are not supported. Convert it to PKCS12 with ' +
  '`keytool -importkeystore -srckeystore <store>.jks -destkeystore <store>.p12 -deststoretype PKCS12`, or use PEM';

/** Kafka's DefaultSslEngineFactory.createKeystore: the same combinations allowed and refused, with its messages. */
function loadKeystore(get: SslConfigLookup): KeyMaterial | null {
  const type = storeType(get, 'ssl.keystore.type');
  const location = config(get, 'ssl.keystore.location');
  const password = config(get, 'ssl.keystore.password');
  const keyPassword = config(get, 'ssl.key.password');
  const privateKey = config(get, 'ssl.keystore.key');
  const certificateChain = config(get, 'ssl.keystore.certificate.chain');
  if (privateKey !== null) {
    if (type !== 'PEM') {
      throw new SslConfigError('ssl.keystore.type', `SSL private key can be specified only for PEM, but key store type is ${type}.`);
    }
    if (certificateChain === null) {
      throw new SslConfigError('ssl.keystore.certificate.chain', 'SSL private key is specified, but certificate chain is not specified.');
    }
    if (location !== null) {
      throw new SslConfigError('ssl.keystore.location', 'Both SSL key store location and separate private key are specified.');
    }
    if (password !== null) {
      throw new SslConfigError(
        'ssl.keystore.password',
        'SSL key store password cannot be specified with PEM format, only key password may be specified.',
      );
    }
    return pemKeystore(privateKey, certificateChain, keyPassword, 'ssl.keystore.key', 'ssl.keystore.certificate.chain');
  }
  if (certificateChain !== null) {
    throw new SslConfigError('ssl.keystore.key', 'SSL certificate chain is specified, but private key is not specified');
  }
  if (location === null) {
    if (password !== null) {
      throw new SslConfigError('ssl.keystore.location', 'SSL key store is not specified, but key store password is specified.');
    }
    return null;
  }
  if (type === 'PEM') {
    if (password !== null) {
      throw new SslConfigError(
        'ssl.keystore.password',
        'SSL key store password cannot be specified with PEM format, only key password may be specified',
      );
    }
    const contents = readStore(location, type, 'ssl.keystore.location').toString('utf8');
    return pemKeystore(contents, contents, keyPassword, 'ssl.keystore.location', 'ssl.keystore.location');
  }
  if (type === 'JKS') throw new SslConfigError('ssl.keystore.type', `Cannot load key store ${location}: ${JKS_REFUSED}.`);
  if (password === null) {
    throw new SslConfigError('ssl.keystore.password', 'SSL key store is specified, but key store password is not specified.');
  }
  // OpenSSL opens a PKCS12 file with one password for the store and the key in it.
  if (keyPassword !== null && keyPassword !== password) {
    throw new SslConfigError(
      'ssl.key.password',
      'A PKCS12 key store whose key password differs from ssl.keystore.password is not supported',
    );
  }
  const pfx = [{ buf: readStore(location, type, 'ssl.keystore.location'), passphrase: password }];
  try {
    createSecureContext({ pfx });
  } catch (err) {
    const wrongPassword = /mac verify|bad decrypt/i.test((err as Error).message);
    throw new SslConfigError(
      wrongPassword ? 'ssl.keystore.password' : 'ssl.keystore.location',
      `Failed to load SSL keystore ${location} of type PKCS12: ${wrongPassword ? 'keystore password was incorrect' : (err as Error).message}`,
    );
  }
  return { pfx };
}

function storeType(get: SslConfigLookup, name: 'ssl.keystore.type' | 'ssl.truststore.type'): 'PEM' | 'PKCS12' | 'JKS' {
  const type = (config(get, name) ?? '').toUpperCase();
  if (type === 'PEM' || type === 'PKCS12' || type === 'JKS') return type;
  throw new SslConfigError(name, `Invalid value ${config(get, name)} for configuration ${name}: supported types are PEM and PKCS12`);
}

function readStore(path: string, type: string, configName: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    const what = configName.startsWith('ssl.keystore') ? 'keystore' : 'truststore';
    throw new SslConfigError(configName, `Failed to load SSL ${what} ${path} of type ${type} (${configName}): ${(err as Error).message}`);
  }
}

function pemKeystore(keyPem: string, chainPem: string, keyPassword: string | null, keyConfig: string, chainConfig: string): KeyMaterial {
  const keys = pemBlocks(keyPem, 'PRIVATE KEY', keyConfig);
  if (keys.length !== 1) throw new SslConfigError(keyConfig, `Expected one private key, but found ${keys.length} (${keyConfig})`);
  const chain = pemBlocks(chainPem, 'CERTIFICATE', chainConfig).map((pem) => certificate(pem, chainConfig));
  if (keyPassword === null && keys[0]!.startsWith('-----BEGIN ENCRYPTED')) {
    throw new SslConfigError('ssl.key.password', `The private key in ${keyConfig} is encrypted, but ssl.key.password is not set`);
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey({ key: keys[0]!, format: 'pem', ...(keyPassword === null ? {} : { passphrase: keyPassword }) });
  } catch (err) {
    throw new SslConfigError(
      'ssl.key.password',
      `Private key in ${keyConfig} could not be loaded with ssl.key.password: ${(err as Error).message}`,
    );
  }
  if (!chain[0]!.checkPrivateKey(key)) {
    throw new SslConfigError(keyConfig, `The private key in ${keyConfig} does not belong to the first certificate of ${chainConfig}`);
  }
  return { key: key.export({ type: 'pkcs8', format: 'pem' }).toString(), cert: chain.map((c) => c.toString()).join('') };
}

// Kafka's PemParser, which tolerates whitespace anywhere in the base64 body (a PEM value given
// on one line of a properties file) and text between the entries.
function pemBlocks(pem: string, label: 'PRIVATE KEY' | 'CERTIFICATE', configName: string): string[] {
  const blocks: string[] = [];
  const pattern = /-+BEGIN\s*([A-Z ]*?)\s*-+\s*([A-Za-z0-9+/=\s]*?)-+END\s*\1\s*-+/g;
  for (const m of pem.matchAll(pattern)) {
    const name = m[1]!.replace(/\s+/g, ' ');
    if (!name.endsWith(label)) continue;
    const body = m[2]!.replace(/\s/g, '');
    blocks.push(`-----BEGIN ${name}-----\n${body.replace(/.{1,64}/g, '$&\n')}-----END ${name}-----\n`);
  }
  if (blocks.length === 0) throw new SslConfigError(configName, `No matching ${label} entries in PEM file (${configName})`);
  return blocks;
}

function certificate(pemOrDer: string | Buffer, configName: string): X509Certificate {
  try {
    return new X509Certificate(pemOrDer);
  } catch (err) {
    throw new SslConfigError(configName, `Invalid certificate in ${configName}: ${(err as Error).message}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Trust store

/** Kafka's createTruststore. No trust store means node's default root certificates, as Java falls back to its cacerts. */
function trustedCertificates(get: SslConfigLookup): { ca?: string[] } {
  const type = storeType(get, 'ssl.truststore.type');
  const location = config(get, 'ssl.truststore.location');
  const password = config(get, 'ssl.truststore.password');
  const inline = config(get, 'ssl.truststore.certificates');
  const pemCertificates = (pem: string, configName: string): string[] =>
    pemBlocks(pem, 'CERTIFICATE', configName).map((block) => certificate(block, configName).toString());
  if (inline !== null) {
    if (type !== 'PEM') {
      throw new SslConfigError(
        'ssl.truststore.type',
        `SSL trust store certs can be specified only for PEM, but trust store type is ${type}.`,
      );
    }
    if (location !== null) {
      throw new SslConfigError('ssl.truststore.location', 'Both SSL trust store location and separate trust certificates are specified.');
    }
    if (password !== null)
      throw new SslConfigError('ssl.truststore.password', 'SSL trust store password cannot be specified for PEM format.');
    return { ca: pemCertificates(inline, 'ssl.truststore.certificates') };
  }
  if (location === null) {
    if (password !== null) {
      throw new SslConfigError('ssl.truststore.location', 'SSL trust store is not specified, but trust store password is specified.');
    }
    return {};
  }
  if (type === 'JKS') throw new SslConfigError('ssl.truststore.type', `Cannot load trust store ${location}: ${JKS_REFUSED}.`);
  const contents = readStore(location, type, 'ssl.truststore.location');
  if (type === 'PEM') {
    if (password !== null)
      throw new SslConfigError('ssl.truststore.password', 'SSL trust store password cannot be specified for PEM format.');
    return { ca: pemCertificates(contents.toString('utf8'), 'ssl.truststore.location') };
  }
  const ders = truststorePkcs12Certificates(contents, password, location);
  if (ders.length === 0) throw new SslConfigError('ssl.truststore.location', `The PKCS12 trust store ${location} holds no certificate`);
  return { ca: ders.map((der) => certificate(der, 'ssl.truststore.location').toString()) };
}

/** A PKCS12 trust store's certificates, or Kafka's message naming the config at fault. */
function truststorePkcs12Certificates(p12: Buffer, password: string | null, location: string): Buffer[] {
  try {
    return pkcs12Certificates(p12, password);
  } catch (err) {
    if (!(err instanceof Pkcs12Error)) throw err;
    const failure = (configName: string, reason: string): SslConfigError =>
      new SslConfigError(configName, `Failed to load SSL truststore ${location} of type PKCS12: ${reason}`);
    switch (err.kind) {
      case 'wrong-password':
        throw failure('ssl.truststore.password', err.message);
      case 'password-needed':
        throw failure('ssl.truststore.password', `${err.message}: set ssl.truststore.password`);
      case 'unsupported':
        throw failure(
          'ssl.truststore.type',
          `${err.message} is not supported; convert the trust store to PEM ` +
            '(`openssl pkcs12 -in <store>.p12 -nokeys -out <store>.pem`) and set ssl.truststore.type=PEM',
        );
      case 'unreadable':
        throw failure('ssl.truststore.location', err.message);
    }
  }
}

const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const;
type TlsVersion = (typeof TLS_VERSIONS)[number];

/**
 * ssl.enabled.protocols as node's version range (node enables a contiguous range, so a list
 * with a gap enables the versions between too). ssl.protocol, when a version, caps what a
 * client offers, as Kafka documents: "TLSv1.2" keeps a client from TLSv1.3.
 */
function protocolRange(get: SslConfigLookup, client: boolean): { minVersion: TlsVersion; maxVersion: TlsVersion } {
  const enabled = listConfig(get, 'ssl.enabled.protocols');
  const indexes = (enabled.length === 0 ? ['TLSv1.2', 'TLSv1.3'] : enabled).map((name) => {
    const index = TLS_VERSIONS.indexOf(name as TlsVersion);
    if (index < 0) {
      throw new SslConfigError(
        'ssl.enabled.protocols',
        `Invalid value ${name} in ssl.enabled.protocols: supported protocols are ${TLS_VERSIONS.join(', ')}`,
      );
    }
    return index;
  });
  const protocol = config(get, 'ssl.protocol') ?? 'TLSv1.3';
  const cap = protocol === 'TLS' ? TLS_VERSIONS.length - 1 : TLS_VERSIONS.indexOf(protocol as TlsVersion);
  if (cap < 0) {
    throw new SslConfigError(
      'ssl.protocol',
      `Invalid value ${protocol} for configuration ssl.protocol: use TLS or one of ${TLS_VERSIONS.join(', ')}`,
    );
  }
  const min = Math.min(...indexes);
  const max = client ? Math.min(cap, Math.max(...indexes)) : Math.max(...indexes);
  if (max < min) {
    throw new SslConfigError('ssl.protocol', `ssl.protocol ${protocol} is older than every protocol in ssl.enabled.protocols`);
  }
  return { minVersion: TLS_VERSIONS[min]!, maxVersion: TLS_VERSIONS[max]! };
}

const TLS13_CIPHER_SUITES = new Set([
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_CCM_SHA256',
  'TLS_AES_128_CCM_8_SHA256',
]);

/** The IANA names Java uses for the TLS 1.2 suites both JSSE and OpenSSL offer, with OpenSSL's names. */
export const OPENSSL_CIPHER_NAMES: ReadonlyMap<string, string> = new Map([
  ['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256', 'ECDHE-ECDSA-AES128-GCM-SHA256'],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'ECDHE-ECDSA-AES256-GCM-SHA384'],
  ['TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-CHACHA20-POLY1305'],
  ['TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA', 'ECDHE-ECDSA-AES128-SHA'],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA', 'ECDHE-ECDSA-AES256-SHA'],
  ['TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256', 'ECDHE-ECDSA-AES128-SHA256'],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384', 'ECDHE-ECDSA-AES256-SHA384'],
  ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'ECDHE-RSA-AES128-GCM-SHA256'],
  ['TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384', 'ECDHE-RSA-AES256-GCM-SHA384'],
  ['TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-RSA-CHACHA20-POLY1305'],
  ['TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA', 'ECDHE-RSA-AES128-SHA'],
  ['TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA', 'ECDHE-RSA-AES256-SHA'],
  ['TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256', 'ECDHE-RSA-AES128-SHA256'],
  ['TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384', 'ECDHE-RSA-AES256-SHA384'],
  ['TLS_DHE_RSA_WITH_AES_128_GCM_SHA256', 'DHE-RSA-AES128-GCM-SHA256'],
  ['TLS_DHE_RSA_WITH_AES_256_GCM_SHA384', 'DHE-RSA-AES256-GCM-SHA384'],
  ['TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'DHE-RSA-CHACHA20-POLY1305'],
  ['TLS_DHE_RSA_WITH_AES_128_CBC_SHA', 'DHE-RSA-AES128-SHA'],
  ['TLS_DHE_RSA_WITH_AES_256_CBC_SHA', 'DHE-RSA-AES256-SHA'],
  ['TLS_DHE_RSA_WITH_AES_128_CBC_SHA256', 'DHE-RSA-AES128-SHA256'],
  ['TLS_DHE_RSA_WITH_AES_256_CBC_SHA256', 'DHE-RSA-AES256-SHA256'],
  ['TLS_DHE_DSS_WITH_AES_128_GCM_SHA256', 'DHE-DSS-AES128-GCM-SHA256'],
  ['TLS_DHE_DSS_WITH_AES_256_GCM_SHA384', 'DHE-DSS-AES256-GCM-SHA384'],
  ['TLS_DHE_DSS_WITH_AES_128_CBC_SHA', 'DHE-DSS-AES128-SHA'],
  ['TLS_DHE_DSS_WITH_AES_256_CBC_SHA', 'DHE-DSS-AES256-SHA'],
  ['TLS_DHE_DSS_WITH_AES_128_CBC_SHA256', 'DHE-DSS-AES128-SHA256'],
  ['TLS_DHE_DSS_WITH_AES_256_CBC_SHA256', 'DHE-DSS-AES256-SHA256'],
  ['TLS_RSA_WITH_AES_128_GCM_SHA256', 'AES128-GCM-SHA256'],
  ['TLS_RSA_WITH_AES_256_GCM_SHA384', 'AES256-GCM-SHA384'],
  ['TLS_RSA_WITH_AES_128_CBC_SHA', 'AES128-SHA'],
  ['TLS_RSA_WITH_AES_256_CBC_SHA', 'AES256-SHA'],
  ['TLS_RSA_WITH_AES_128_CBC_SHA256', 'AES128-SHA256'],
  ['TLS_RSA_WITH_AES_256_CBC_SHA256', 'AES256-SHA256'],
]);

/** ssl.cipher.suites in OpenSSL's names; TLS 1.3 suites keep theirs (node routes "TLS_" names to TLS 1.3). */
function cipherSuites(get: SslConfigLookup): { ciphers?: string } {
  const suites = listConfig(get, 'ssl.cipher.suites');
  if (suites.length === 0) return {};
  const names = suites.map((suite) => {
    if (TLS13_CIPHER_SUITES.has(suite)) return suite;
    // Java still answers to the SSL_ prefix of the suites named before TLS 1.0.
    const openssl = OPENSSL_CIPHER_NAMES.get(suite.replace(/^SSL_/, 'TLS_'));
    if (openssl === undefined) throw new SslConfigError('ssl.cipher.suites', `Unsupported cipher suite ${suite} in ssl.cipher.suites`);
    return openssl;
  });
  return { ciphers: names.join(':') };
}

function serverIdentityCheck(get: SslConfigLookup, host: string): NonNullable<ConnectionOptions['checkServerIdentity']> {
  const algorithm = config(get, 'ssl.endpoint.identification.algorithm') ?? '';
  if (algorithm === '') return () => undefined;
  if (algorithm.toLowerCase() === 'https') return (_servername, cert) => checkServerIdentity(host, cert);
  throw new SslConfigError(
    'ssl.endpoint.identification.algorithm',
    `Unknown identification algorithm: ${algorithm} (ssl.endpoint.identification.algorithm: use https, or an empty value to turn the check off)`,
  );
}
