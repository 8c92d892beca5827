/**
 * SASL/OAUTHBEARER on the broker (RFC 7628, KIP-255, KIP-768), as Kafka's OAuthBearerSaslServer
 * runs it, with the two token validators Kafka ships: the unsecured one for development
 * (alg "none") and the production one that verifies signatures against a JWKS.
 */
import type { KeyObject } from 'node:crypto';
import type { JwksSource } from './jwks.ts';
import {
  type CompactJws,
  InvalidJwtError,
  type JwtClaims,
  isSupportedJwsAlgorithm,
  jsonTypeName,
  numericDateClaim,
  parseCompactJws,
  stringClaim,
  verifyJwsSignature,
} from './jwt.ts';
import { SaslAuthenticationError, SaslProtocolError } from './sasl-errors.ts';

export const OAUTHBEARER_MECHANISM = 'OAUTHBEARER';

/** sasl.oauthbearer.clock.skew.seconds */
export const DEFAULT_OAUTHBEARER_CLOCK_SKEW_SECONDS = 30;
/** sasl.oauthbearer.sub.claim.name */
export const DEFAULT_OAUTHBEARER_SUB_CLAIM_NAME = 'sub';
/** sasl.oauthbearer.scope.claim.name */
export const DEFAULT_OAUTHBEARER_SCOPE_CLAIM_NAME = 'scope';

export interface OAuthBearerToken {
  principal: string;
  scope: string[];
  /** The token's expiry (`exp`), epoch ms. */
  lifetimeMs: number;
  /** The token's issue time (`iat`), epoch ms, when it has one. */
  startTimeMs: number | null;
}

/** Validates a compact-serialized token string; throws SaslAuthenticationError with a client-safe message. */
export type OAuthBearerValidator = (token: string) => Promise<OAuthBearerToken>;

/** A SaslServerExchange whose tokens are validated asynchronously (a JWKS may have to be fetched). */
export interface AsyncSaslServerExchange {
  readonly mechanism: string;
  /** Throws SaslAuthenticationError / SaslProtocolError. */
  evaluate(token: Buffer): Promise<Buffer>;
  readonly complete: boolean;
  readonly authorizationId: string;
  /** When the session must end (KIP-368): the token's expiry, never before authentication completed. */
  readonly sessionExpiresAtMs: number | null;
}

/** A refusal for want of scope: the client is told `insufficient_scope` and the scope required. */
export class OAuthBearerInsufficientScopeError extends SaslAuthenticationError {
  override name = 'OAuthBearerInsufficientScopeError';
  readonly requiredScope: readonly string[];

  constructor(message: string, requiredScope: readonly string[]) {
    super(message);
    this.requiredScope = requiredScope;
  }
}

// ---------------------------------------------------------------------------------------------
// The client's first message (RFC 7628 section 3.1; OAuthBearerClientInitialResponse)

export interface OAuthBearerClientInitialResponse {
  /** The GS2 authzid, '' when the client gave none. Kept escaped (=2C, =3D), as Kafka compares it. */
  readonly authorizationId: string;
  readonly tokenValue: string;
  /** Every key=value pair but `auth` (KIP-342 SASL extensions). */
  readonly extensions: ReadonlyMap<string, string>;
}

const SEPARATOR = '\x01';
// Kafka's patterns, built as it builds them: `n,[a=<saslname>],^A[<key>=<value>^A]*^A`.
const SASLNAME = `(?:[${SEPARATOR}-\\x2B\\x2D-\\x3C\\x3E-\\x7F]|=2C|=3D)+`; // \x01-\x7F but ',' and '='
const KVPAIRS = `(?:[A-Za-z]+=[\\x21-\\x7E \\t\\r\\n]+${SEPARATOR})*`;
const CLIENT_INITIAL_RESPONSE = new RegExp(`^n,(?:a=(${SASLNAME}))?,${SEPARATOR}(${KVPAIRS})${SEPARATOR}$`);
const AUTH_VALUE = /^(\w+) +([-_.a-zA-Z0-9]+)$/;
const INVALID_CLIENT_FIRST_MESSAGE = 'Invalid OAUTHBEARER client first message';

/** Parses the client's first message; a malformed one is a SaslProtocolError, as Kafka's SaslException. */
export function parseClientInitialResponse(response: Buffer): OAuthBearerClientInitialResponse {
  const match = CLIENT_INITIAL_RESPONSE.exec(response.toString('utf8'));
  if (match === null) throw new SaslProtocolError(INVALID_CLIENT_FIRST_MESSAGE);
  const properties = new Map<string, string>();
  for (const pair of (match[2] ?? '').split(SEPARATOR)) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    properties.set(pair.slice(0, at), pair.slice(at + 1));
  }
  const auth = properties.get('auth');
  if (auth === undefined) throw new SaslProtocolError(`${INVALID_CLIENT_FIRST_MESSAGE}: 'auth' not specified`);
  properties.delete('auth');
  const authMatch = AUTH_VALUE.exec(auth);
  if (authMatch === null) throw new SaslProtocolError(`${INVALID_CLIENT_FIRST_MESSAGE}: invalid 'auth' format`);
  const [, scheme = '', tokenValue = ''] = authMatch;
  if (scheme.toLowerCase() !== 'bearer') throw new SaslProtocolError(`Invalid scheme in OAUTHBEARER client first message: ${scheme}`);
  return { authorizationId: match[1] ?? '', tokenValue, extensions: properties };
}

// ---------------------------------------------------------------------------------------------
// The exchange (OAuthBearerSaslServer)

const INTERNAL_ERROR_ON_SERVER = 'Authentication could not be performed due to an internal error on the server';

/**
 * Server side as Kafka's OAuthBearerSaslServer: a valid token completes the exchange with the
 * token's principal as authorization id; an invalid one is answered with RFC 7628's error JSON
 * and the exchange fails on the client's `\x01` reply, as Kafka does. Extensions are accepted
 * as they come, as both of Kafka's validator callback handlers do.
 */
export function oauthBearerServerExchange(validate: OAuthBearerValidator, nowMs: () => number): AsyncSaslServerExchange {
  return new OAuthBearerServerExchange(validate, nowMs);
}

class OAuthBearerServerExchange implements AsyncSaslServerExchange {
  readonly mechanism = OAUTHBEARER_MECHANISM;
  readonly #validate: OAuthBearerValidator;
  readonly #nowMs: () => number;
  #token: OAuthBearerToken | null = null;
  #sessionExpiresAtMs: number | null = null;
  /** The refusal already sent as error JSON, thrown when the client acknowledges it. */
  #refusal: SaslAuthenticationError | null = null;
  #validating = false;

  constructor(validate: OAuthBearerValidator, nowMs: () => number) {
    this.#validate = validate;
    this.#nowMs = nowMs;
  }

  get complete(): boolean {
    return this.#token !== null;
  }

  get authorizationId(): string {
    if (this.#token === null) throw new Error('Authentication exchange has not completed');
    return this.#token.principal;
  }

  get sessionExpiresAtMs(): number | null {
    return this.#sessionExpiresAtMs;
  }

  async evaluate(response: Buffer): Promise<Buffer> {
    if (this.#token !== null) throw new SaslProtocolError('OAUTHBEARER authentication has already completed');
    if (this.#validating) throw new SaslProtocolError('OAUTHBEARER token received while another is being validated');
    if (response.length === 1 && response[0] === 0x01 && this.#refusal !== null) throw this.#refusal;
    // Anything but the acknowledgement starts over, as in Kafka: the client may try another token.
    this.#refusal = null;
    const initial = parseClientInitialResponse(response);
    this.#validating = true;
    let token: OAuthBearerToken;
    try {
      token = await this.#validate(initial.tokenValue);
    } catch (err) {
      if (!(err instanceof SaslAuthenticationError))
        throw new SaslProtocolError(`${INTERNAL_ERROR_ON_SERVER}: ${String(err)}`, { cause: err });
      // The client learns only the RFC 7628 status; the reason stays with the broker (cause).
      this.#refusal = new SaslAuthenticationError(errorJson(err), { cause: err });
      return Buffer.from(this.#refusal.message, 'utf8');
    } finally {
      this.#validating = false;
    }
    if (initial.authorizationId !== '' && initial.authorizationId !== token.principal)
      throw new SaslAuthenticationError(
        `Authentication failed: Client requested an authorization id (${initial.authorizationId}) that is different from the token's principal name (${token.principal})`,
      );
    this.#token = token;
    // A token that expires within the validator's clock skew gets a session of zero length,
    // as Kafka's zeroIfNegative(credentialExpirationMs - authenticationEndMs).
    this.#sessionExpiresAtMs = Math.max(token.lifetimeMs, this.#nowMs());
    return Buffer.alloc(0);
  }
}

/** RFC 7628 section 3.2.2, byte for byte as Kafka's jsonErrorResponse writes it. */
function errorJson(refusal: SaslAuthenticationError): string {
  if (refusal instanceof OAuthBearerInsufficientScopeError)
    return `{"status":"insufficient_scope", "scope":"${javaCollection(refusal.requiredScope)}"}`;
  return '{"status":"invalid_token"}';
}

/** Java's AbstractCollection.toString, which Kafka's messages print. */
function javaCollection(items: Iterable<string>): string {
  return `[${[...items].join(', ')}]`;
}

function invalid(reason: string): never {
  throw new InvalidJwtError(reason);
}

/** Runs token checks, turning their InvalidJwtError into a refusal (SaslAuthenticationError). */
function refusingInvalid<T>(check: () => T, prefix = ''): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof InvalidJwtError) throw new SaslAuthenticationError(`${prefix}${err.message}`, { cause: err });
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// OAuthBearerUnsecuredValidatorCallbackHandler (with OAuthBearerUnsecuredJws and
// OAuthBearerValidationUtils). Like Kafka's, it ignores `nbf`.

const UNSECURED_PRINCIPAL_CLAIM_NAME_OPTION = 'unsecuredValidatorPrincipalClaimName';
const UNSECURED_SCOPE_CLAIM_NAME_OPTION = 'unsecuredValidatorScopeClaimName';
const UNSECURED_REQUIRED_SCOPE_OPTION = 'unsecuredValidatorRequiredScope';
const UNSECURED_ALLOWABLE_CLOCK_SKEW_MS_OPTION = 'unsecuredValidatorAllowableClockSkewMs';

interface UnsecuredValidatorConfig {
  readonly principalClaimName: string;
  readonly scopeClaimName: string;
  readonly requiredScope: readonly string[];
  readonly allowableClockSkewMs: number;
}

/**
 * Kafka's OAuthBearerUnsecuredValidatorCallbackHandler, configured by its JAAS options. A bad
 * option throws here, when the listener is configured, rather than on each authentication.
 */
export function unsecuredValidator(options: ReadonlyMap<string, string>, nowMs: () => number): OAuthBearerValidator {
  const option = (name: string): string | undefined => {
    const value = options.get(name)?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const config: UnsecuredValidatorConfig = {
    principalClaimName: option(UNSECURED_PRINCIPAL_CLAIM_NAME_OPTION) ?? 'sub',
    scopeClaimName: option(UNSECURED_SCOPE_CLAIM_NAME_OPTION) ?? 'scope',
    requiredScope: parseScope(option(UNSECURED_REQUIRED_SCOPE_OPTION) ?? ''),
    allowableClockSkewMs: parseAllowableClockSkewMs(option(UNSECURED_ALLOWABLE_CLOCK_SKEW_MS_OPTION)),
  };
  return async (tokenValue) => refusingInvalid(() => validateUnsecuredJws(tokenValue, config, nowMs()));
}

const SCOPE_ITEM = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** OAuthBearerScopeUtils.parseScope: space-delimited scope-tokens (RFC 6749 section 3.3). */
function parseScope(spaceDelimited: string): string[] {
  const items = spaceDelimited.split(' ').filter((item) => item !== '');
  for (const item of items) if (!SCOPE_ITEM.test(item)) throw new Error(`Invalid scope value: ${item}`);
  return items;
}

function parseAllowableClockSkewMs(value: string | undefined): number {
  if (value === undefined) return 0;
  const skewMs = /^[+-]?\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(skewMs) || skewMs > 2 ** 31 - 1)
    throw new Error(`${UNSECURED_ALLOWABLE_CLOCK_SKEW_MS_OPTION} must be an int: ${value}`);
  if (skewMs < 0) throw new Error(`Allowable clock skew millis must not be negative: ${value}`);
  return skewMs;
}

function validateUnsecuredJws(tokenValue: string, config: UnsecuredValidatorConfig, nowMs: number): OAuthBearerToken {
  if (tokenValue.includes('..')) invalid("Malformed compact serialization contains '..'");
  const jws = parseCompactJws(tokenValue);
  if (jws.alg === undefined) invalid('JWS header must have an Algorithm value');
  if (jws.alg !== 'none') invalid("Unsecured JWS must have 'none' for an algorithm");
  if (jws.signature.length > 0) invalid('Unsecured JWS must not contain a digital signature');
  const { claims } = jws;
  const scope = unsecuredScope(claims, config.scopeClaimName);
  const exp = numericDateClaim(claims, 'exp');
  if (exp === undefined) invalid('No expiration time in JWT');
  const principal = stringClaim(claims, config.principalClaimName);
  if (principal === undefined || principal.trim() === '') invalid(`No principal name in JWT claim: ${config.principalClaimName}`);
  const iat = numericDateClaim(claims, 'iat');
  const skewMs = config.allowableClockSkewMs;
  if (iat !== undefined && 1000 * iat > nowMs + skewMs)
    invalid(
      `The Issued At value (${iat.toFixed(6)} seconds) was after the indicated time (${nowMs} ms) plus allowable clock skew (${skewMs} ms)`,
    );
  if (nowMs - skewMs >= 1000 * exp)
    invalid(
      `The indicated time (${nowMs} ms) minus allowable clock skew (${skewMs} ms) was on or after the Expiration Time value (${exp.toFixed(6)} seconds)`,
    );
  if (iat !== undefined && exp <= iat)
    invalid(`The Expiration Time time (${exp.toFixed(6)} seconds) was not after the Issued At time (${iat.toFixed(6)} seconds)`);
  for (const required of config.requiredScope) {
    if (!scope.includes(required))
      throw new OAuthBearerInsufficientScopeError(
        `The provided scope (${javaCollection(scope)}) was missing a required scope (${required}).  All required scope elements: ${javaCollection(config.requiredScope)}`,
        config.requiredScope,
      );
  }
  return {
    principal,
    scope,
    lifetimeMs: Math.round(exp * 1000),
    startTimeMs: iat === undefined ? null : Math.round(iat * 1000),
  };
}

/** A string scope claim is one scope item, as OAuthBearerUnsecuredJws reads it; a list is many. */
function unsecuredScope(claims: JwtClaims, name: string): string[] {
  const value = claims[name];
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value.trim() === '' ? [] : [value.trim()];
  if (!Array.isArray(value)) invalid(`The '${name}' claim was not of type List: ${jsonTypeName(value)}`);
  const scope = new Set<string>();
  for (const item of value) {
    const text = typeof item === 'object' ? '' : String(item);
    if (text.trim() !== '') scope.add(text.trim());
  }
  return [...scope];
}

// ---------------------------------------------------------------------------------------------
// OAuthBearerValidatorCallbackHandler with ValidatorAccessTokenValidator (KIP-768): jose4j's
// JwtConsumer with DISALLOW_NONE, exp and iat required, the configured clock skew, audience and
// issuer, then Kafka's ClaimValidationUtils on scope, exp, sub and iat.

export interface JwksValidatorConfig {
  jwks: JwksSource;
  /** sasl.oauthbearer.expected.audience */
  expectedAudience: string[];
  /** sasl.oauthbearer.expected.issuer */
  expectedIssuer: string | null;
  subClaimName: string;
  scopeClaimName: string;
  clockSkewSeconds: number;
}

const ACCESS_TOKEN_REFUSED = 'Could not validate the access token: ';

/** Kafka's production validator: signature verified against the JWKS, then the claims. */
export function jwksValidator(config: JwksValidatorConfig, nowMs: () => number): OAuthBearerValidator {
  const subClaimName = claimNameOverride(DEFAULT_OAUTHBEARER_SUB_CLAIM_NAME, config.subClaimName);
  const scopeClaimName = claimNameOverride(DEFAULT_OAUTHBEARER_SCOPE_CLAIM_NAME, config.scopeClaimName);
  if (!Number.isSafeInteger(config.clockSkewSeconds) || config.clockSkewSeconds < 0)
    throw new Error(`sasl.oauthbearer.clock.skew.seconds must be a non-negative integer: ${config.clockSkewSeconds}`);
  const expectedAudience = new Set(config.expectedAudience);
  return async (tokenValue) => {
    const jws = refusingInvalid(() => signedJws(tokenValue), ACCESS_TOKEN_REFUSED);
    let key: KeyObject;
    try {
      key = await config.jwks.key(jws.kid, jws.alg);
    } catch (err) {
      throw new SaslAuthenticationError(`${ACCESS_TOKEN_REFUSED}no verification key could be found for the JWS`, {
        cause: err,
      });
    }
    return refusingInvalid(() => {
      if (!verifyJwsSignature(jws, key)) invalid('the JWS signature is invalid');
      return validateJwtClaims(jws.claims, {
        subClaimName,
        scopeClaimName,
        expectedAudience,
        expectedIssuer: config.expectedIssuer,
        clockSkewSeconds: config.clockSkewSeconds,
        nowSeconds: Math.floor(nowMs() / 1000),
      });
    }, ACCESS_TOKEN_REFUSED);
  };
}

function claimNameOverride(name: string, value: string): string {
  const trimmed = value.trim();
  if (trimmed === '') throw new Error(`The ${name} claim name override must not be blank`);
  return trimmed;
}

/**
 * SerializedJwt's three non-empty sections (so an alg "none" JWS, which has no signature, fails
 * here), then jose4j's header checks: an asymmetric algorithm, never "none".
 */
function signedJws(tokenValue: string): CompactJws & { readonly alg: string } {
  const token = tokenValue.trim();
  if (token === '') invalid('Empty JWT provided; expected three sections (header, payload, and signature)');
  const sections = token.split('.');
  const missing = ['header', 'payload', 'signature'].find((_, i) => sections.length === 3 && sections[i] === '');
  if (missing !== undefined)
    invalid(`Malformed JWT provided; expected at least three sections (header, payload, and signature), but ${missing} section missing`);
  const jws = parseCompactJws(token);
  const { alg } = jws;
  if (alg === undefined) invalid('the JWS header has no algorithm');
  if (alg === 'none') invalid("'none' is not an allowed algorithm");
  if (!isSupportedJwsAlgorithm(alg)) invalid(`the JWS algorithm ${alg} is not supported`);
  // No critical header extension is understood here (RFC 7515 section 4.1.11).
  if (jws.header.crit !== undefined) invalid('unrecognized critical JWS header extensions');
  return { ...jws, alg };
}

interface ClaimRules {
  readonly subClaimName: string;
  readonly scopeClaimName: string;
  readonly expectedAudience: ReadonlySet<string>;
  readonly expectedIssuer: string | null;
  readonly clockSkewSeconds: number;
  readonly nowSeconds: number;
}

function validateJwtClaims(claims: JwtClaims, rules: ClaimRules): OAuthBearerToken {
  // jose4j reads NumericDates as whole seconds.
  const exp = wholeSeconds(numericDateClaim(claims, 'exp'));
  const iat = wholeSeconds(numericDateClaim(claims, 'iat'));
  const nbf = wholeSeconds(numericDateClaim(claims, 'nbf'));
  if (exp === undefined) invalid('No Expiration Time (exp) claim present.');
  if (iat === undefined) invalid('No Issued At (iat) claim present.');
  const skew = rules.clockSkewSeconds;
  if (rules.nowSeconds - skew >= exp)
    invalid(
      `The JWT is no longer valid - the evaluation time ${rules.nowSeconds} is on or after the Expiration Time (exp=${exp}) claim value (even when providing ${skew} seconds of leeway to account for clock skew).`,
    );
  if (nbf !== undefined && rules.nowSeconds + skew < nbf)
    invalid(
      `The JWT is not yet valid as the evaluation time ${rules.nowSeconds} is before the Not Before (nbf=${nbf}) claim time (even when providing ${skew} seconds of leeway to account for clock skew).`,
    );
  checkAudience(claims, rules.expectedAudience);
  checkIssuer(claims, rules.expectedIssuer);

  const scope = validateScopes(rules.scopeClaimName, claims[rules.scopeClaimName]);
  if (exp < 0) invalid(`exp value must be non-negative; value given was "${exp * 1000}"`);
  const principal = validateString(rules.subClaimName, stringClaim(claims, rules.subClaimName));
  if (iat < 0) invalid(`iat value must be null or non-negative; value given was "${iat * 1000}"`);
  return { principal, scope, lifetimeMs: exp * 1000, startTimeMs: iat * 1000 };
}

function wholeSeconds(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.trunc(value);
}

/**
 * jose4j's AudValidator. With no expected audience configured Kafka's consumer still refuses a
 * token that carries `aud` (jose4j's default, which Kafka does not skip).
 */
function checkAudience(claims: JwtClaims, expected: ReadonlySet<string>): void {
  const aud = claims.aud;
  if (aud === undefined || aud === null) {
    if (expected.size > 0) invalid('No Audience (aud) claim present.');
    return;
  }
  const audiences = typeof aud === 'string' ? [aud] : aud;
  if (!Array.isArray(audiences) || !audiences.every((a) => typeof a === 'string'))
    invalid("The value of the 'aud' claim is not an array of strings or a single string value.");
  if (audiences.some((a) => expected.has(a))) return;
  const reason =
    expected.size === 0
      ? 'present in the JWT but no expected audience value(s) were provided to the JWT Consumer.'
      : "doesn't contain an acceptable identifier.";
  const wanted = expected.size === 1 ? [...expected][0] : `one of ${javaCollection(expected)}`;
  invalid(`Audience (aud) claim ${javaCollection(audiences)} ${reason} Expected ${wanted} as an aud value.`);
}

/** jose4j's IssValidator, with the issuer required once one is expected. */
function checkIssuer(claims: JwtClaims, expected: string | null): void {
  if (expected === null) return;
  const iss = stringClaim(claims, 'iss');
  if (iss === undefined) invalid(`No Issuer (iss) claim present but was expecting ${expected}`);
  if (iss !== expected) invalid(`Issuer (iss) claim value (${iss}) doesn't match expected value of ${expected}`);
}

/** ClaimValidationUtils.validateScopes: a string is one scope; items non-blank and distinct. */
function validateScopes(scopeClaimName: string, value: unknown): string[] {
  const items = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
  const scope = new Set<string>();
  for (const item of items) {
    const trimmed = validateString(scopeClaimName, typeof item === 'string' ? item : undefined);
    if (scope.has(trimmed)) invalid(`${scopeClaimName} value must not contain duplicates - ${trimmed} already present`);
    scope.add(trimmed);
  }
  return [...scope];
}

function validateString(name: string, value: string | undefined): string {
  if (value === undefined) invalid(`${name} value must be non-null`);
  if (value === '') invalid(`${name} value must be non-empty`);
  const trimmed = value.trim();
  if (trimmed === '') invalid(`${name} value must not contain only whitespace`);
  return trimmed;
}
