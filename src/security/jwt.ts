/**
 * Compact JWS (RFC 7515) as OAUTHBEARER carries it: `base64url(header).base64url(claims).
 * base64url(signature)`. Parsing checks the shape only; `verifyJwsSignature` checks the
 * signature with node:crypto, for the algorithms Kafka's jose4j consumer accepts from a JWKS.
 */
import { type KeyObject, constants, verify } from 'node:crypto';

/** A token that is not a well-formed JWT, or whose signature or claims do not hold. */
export class InvalidJwtError extends Error {
  override name = 'InvalidJwtError';
}

export type JwtClaims = Readonly<Record<string, unknown>>;

/** A well-formed compact JWS whose signature has not been checked yet. */
export interface CompactJws {
  readonly header: JwtClaims;
  readonly claims: JwtClaims;
  /** The `alg` header; undefined when absent or not a string. */
  readonly alg: string | undefined;
  readonly kid: string | undefined;
  /** The ASCII bytes of `header.claims`, what the signature covers (RFC 7515 section 5.2). */
  readonly signingInput: Buffer;
  /** Empty for an unsecured JWS (`alg` "none"). */
  readonly signature: Buffer;
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

export function parseCompactJws(token: string): CompactJws {
  const sections = token.split('.');
  if (sections.length !== 3)
    throw new InvalidJwtError(`JWS compact serializations must have 3 dot-separated Base64URL-encoded values, found ${sections.length}`);
  const [headerSection = '', claimsSection = '', signatureSection = ''] = sections;
  const header = decodeJsonObject(headerSection, 'header');
  const claims = decodeJsonObject(claimsSection, 'claims');
  return {
    header,
    claims,
    alg: typeof header.alg === 'string' ? header.alg : undefined,
    kid: typeof header.kid === 'string' ? header.kid : undefined,
    signingInput: Buffer.from(`${headerSection}.${claimsSection}`, 'ascii'),
    signature: decodeBase64Url(signatureSection, 'signature'),
  };
}

function decodeBase64Url(section: string, what: string): Buffer {
  // Buffer's decoder skips characters outside the alphabet; a token must not carry any.
  if (!BASE64URL.test(section) || section.length % 4 === 1)
    throw new InvalidJwtError(`malformed Base64 URL encoded value in the JWS ${what}`);
  return Buffer.from(section, 'base64url');
}

function decodeJsonObject(section: string, what: string): JwtClaims {
  if (section === '') throw new InvalidJwtError(`Malformed JWS: the ${what} section is empty`);
  let value: unknown;
  try {
    value = JSON.parse(decodeBase64Url(section, what).toString('utf8'));
  } catch (err) {
    if (err instanceof InvalidJwtError) throw err;
    throw new InvalidJwtError(`malformed JSON in the JWS ${what}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidJwtError(`the JWS ${what} is not a JSON object`);
  return value as JwtClaims;
}

interface JwsAlgorithm {
  readonly hash: 'sha256' | 'sha384' | 'sha512';
  readonly scheme: 'pkcs1' | 'pss' | 'ecdsa';
  /** For ECDSA: the curve's OpenSSL name, as KeyObject.asymmetricKeyDetails reports it. */
  readonly namedCurve?: string;
}

/** RSASSA-PKCS1-v1_5, RSASSA-PSS and ECDSA (RFC 7518 section 3); jose4j's asymmetric set. */
const JWS_ALGORITHMS: ReadonlyMap<string, JwsAlgorithm> = new Map([
  ['RS256', { hash: 'sha256', scheme: 'pkcs1' }],
  ['RS384', { hash: 'sha384', scheme: 'pkcs1' }],
  ['RS512', { hash: 'sha512', scheme: 'pkcs1' }],
  ['PS256', { hash: 'sha256', scheme: 'pss' }],
  ['PS384', { hash: 'sha384', scheme: 'pss' }],
  ['PS512', { hash: 'sha512', scheme: 'pss' }],
  ['ES256', { hash: 'sha256', scheme: 'ecdsa', namedCurve: 'prime256v1' }],
  ['ES384', { hash: 'sha384', scheme: 'ecdsa', namedCurve: 'secp384r1' }],
  ['ES512', { hash: 'sha512', scheme: 'ecdsa', namedCurve: 'secp521r1' }],
]);

/** jose4j refuses RSA keys below 2048 bits for RS* and PS*. */
const MIN_RSA_MODULUS_BITS = 2048;

export function isSupportedJwsAlgorithm(alg: string): boolean {
  return JWS_ALGORITHMS.has(alg);
}

/** Whether `key` can verify signatures made with `alg`: key type, curve, RSA size. */
export function keyFitsJwsAlgorithm(key: KeyObject, alg: string): boolean {
  const algorithm = JWS_ALGORITHMS.get(alg);
  if (algorithm === undefined || key.type !== 'public') return false;
  const details = key.asymmetricKeyDetails ?? {};
  if (algorithm.scheme === 'ecdsa') return key.asymmetricKeyType === 'ec' && details.namedCurve === algorithm.namedCurve;
  // A JWK of kty "RSA" serves both PKCS#1 v1.5 and PSS: node imports it as an "rsa" key.
  return key.asymmetricKeyType === 'rsa' && (details.modulusLength ?? 0) >= MIN_RSA_MODULUS_BITS;
}

/** True when `jws` carries a valid signature by `key` under its own `alg`. */
export function verifyJwsSignature(jws: CompactJws, key: KeyObject): boolean {
  if (jws.alg === undefined || !keyFitsJwsAlgorithm(key, jws.alg)) return false;
  const algorithm = JWS_ALGORITHMS.get(jws.alg);
  if (algorithm === undefined) return false;
  try {
    if (algorithm.scheme === 'ecdsa')
      // JWS carries ECDSA signatures as raw R || S (RFC 7518 section 3.4), not DER.
      return verify(algorithm.hash, jws.signingInput, { key, dsaEncoding: 'ieee-p1363' }, jws.signature);
    if (algorithm.scheme === 'pss')
      return verify(
        algorithm.hash,
        jws.signingInput,
        { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
        jws.signature,
      );
    return verify(algorithm.hash, jws.signingInput, key, jws.signature);
  } catch {
    // A signature of the wrong length for the curve or modulus makes OpenSSL throw.
    return false;
  }
}

/** A NumericDate claim (seconds since the epoch) as a number, undefined when absent. */
export function numericDateClaim(claims: JwtClaims, name: string): number | undefined {
  const value = claims[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new InvalidJwtError(`The '${name}' claim was not of type Number: ${jsonTypeName(value)}`);
  return value;
}

/** A string claim, undefined when absent. */
export function stringClaim(claims: JwtClaims, name: string): string | undefined {
  const value = claims[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InvalidJwtError(`The '${name}' claim was not of type String: ${jsonTypeName(value)}`);
  return value;
}

export function jsonTypeName(value: unknown): string {
  if (Array.isArray(value)) return 'List';
  if (typeof value === 'number') return 'Number';
  if (typeof value === 'string') return 'String';
  if (typeof value === 'boolean') return 'Boolean';
  return 'Object';
}
