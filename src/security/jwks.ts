/**
 * The verification keys of sasl.oauthbearer.jwks.endpoint.url, as Kafka's RefreshingHttpsJwks
 * keeps them (KIP-768): fetched once, refreshed every sasl.oauthbearer.jwks.endpoint.refresh.ms
 * with retries backed off from retry.backoff.ms up to retry.backoff.max.ms, and refreshed at
 * once when a token names a key id the set lacks, at most once a minute per key id. Where
 * Kafka rejects that token and refreshes in the background, the lookup here waits for the
 * refresh, so a rotated key is accepted on its first use.
 */
import { type JsonWebKey, type KeyObject, createPublicKey } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type FileSystem, nodeFileSystem } from '../../storage/file-system.ts';
import { type Clock, repeat, schedule, systemClock } from '../runtime/clock.ts';
import { type FailureSink, runGuarded } from '../runtime/guard.ts';
import { isSupportedJwsAlgorithm, keyFitsJwsAlgorithm } from './jwt.ts';

/** sasl.oauthbearer.jwks.endpoint.refresh.ms */
export const DEFAULT_JWKS_ENDPOINT_REFRESH_MS = 3_600_000;
/** sasl.oauthbearer.jwks.endpoint.retry.backoff.ms */
export const DEFAULT_JWKS_ENDPOINT_RETRY_BACKOFF_MS = 100;
/** sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms */
export const DEFAULT_JWKS_ENDPOINT_RETRY_BACKOFF_MAX_MS = 10_000;

// RefreshingHttpsJwks's limits on refreshes asked for by unknown key ids.
const MISSING_KEY_ID_CACHE_MAX_ENTRIES = 16;
const MISSING_KEY_ID_CACHE_IN_FLIGHT_MS = 60_000;
const MISSING_KEY_ID_MAX_KEY_LENGTH = 1000;

/** A request to the endpoint holds up the authentications waiting on it: bound it. */
const JWKS_FETCH_TIMEOUT_MS = 10_000;

export interface JwksSourceOptions {
  refreshMs?: number;
  retryBackoffMs?: number;
  retryBackoffMaxMs?: number;
  fetch?: typeof fetch;
  clock?: Clock;
  /** Reads a file:// JWKS. */
  fileSystem?: Pick<FileSystem, 'readFile'>;
  /** Where a failed scheduled refresh is reported; the keys already held stay in use. */
  onRefreshFailure?: FailureSink;
}

interface VerificationKey {
  readonly kid: string | undefined;
  readonly use: string | undefined;
  readonly alg: string | undefined;
  readonly key: KeyObject;
}

export class JwksSource {
  readonly #url: URL;
  readonly #refreshMs: number;
  readonly #retryBackoffMs: number;
  readonly #retryBackoffMaxMs: number;
  readonly #fetch: typeof fetch;
  readonly #clock: Clock;
  readonly #fileSystem: Pick<FileSystem, 'readFile'>;
  readonly #onRefreshFailure: FailureSink;
  #keys: readonly VerificationKey[] | null = null;
  #inFlight: Promise<readonly VerificationKey[]> | null = null;
  /** Consecutive failed loads while no keys are held, and when the next may start. */
  #loadFailures = 0;
  #lastLoadError: unknown = null;
  #nextLoadAtMs = 0;
  /** Key id -> when it may ask for a refresh again; in least-recently-used order. */
  readonly #missingKeyIds = new Map<string, number>();
  #stopScheduledRefresh: (() => void) | null = null;
  #closed = false;

  constructor(url: string, options: JwksSourceOptions = {}) {
    this.#url = new URL(url);
    if (!['http:', 'https:', 'file:'].includes(this.#url.protocol))
      throw new Error(`sasl.oauthbearer.jwks.endpoint.url must be an http, https or file URL: ${url}`);
    this.#refreshMs = options.refreshMs ?? DEFAULT_JWKS_ENDPOINT_REFRESH_MS;
    this.#retryBackoffMs = options.retryBackoffMs ?? DEFAULT_JWKS_ENDPOINT_RETRY_BACKOFF_MS;
    this.#retryBackoffMaxMs = options.retryBackoffMaxMs ?? DEFAULT_JWKS_ENDPOINT_RETRY_BACKOFF_MAX_MS;
    if (!(this.#refreshMs > 0)) throw new Error(`sasl.oauthbearer.jwks.endpoint.refresh.ms must be positive: ${this.#refreshMs}`);
    if (!(this.#retryBackoffMs >= 0) || !(this.#retryBackoffMaxMs >= this.#retryBackoffMs))
      throw new Error(
        `sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms (${this.#retryBackoffMaxMs}) must be at least retry.backoff.ms (${this.#retryBackoffMs}), which must be non-negative`,
      );
    this.#fetch = options.fetch ?? fetch;
    this.#clock = options.clock ?? systemClock;
    this.#fileSystem = options.fileSystem ?? nodeFileSystem;
    this.#onRefreshFailure = options.onRefreshFailure ?? (() => {});
  }

  /**
   * The key that verifies a JWS with header `kid` and `alg`. Rejects (never throws) when the
   * endpoint cannot be read or holds no such key: the caller refuses that token only.
   */
  async key(kid: string | undefined, alg: string): Promise<KeyObject> {
    if (this.#closed) throw new Error(`JWKS of ${this.#url} is closed`);
    if (!isSupportedJwsAlgorithm(alg)) throw new Error(`Unsupported JWS algorithm: ${alg}`);
    const held = this.#keys;
    let keys = held ?? (await this.#loadWhenAllowed());
    let found = selectKey(keys, kid, alg);
    // Keys read for this very lookup are as fresh as a refresh would make them.
    if (found === undefined && held !== null && this.#mayRefreshFor(kid ?? '')) {
      keys = await this.#load();
      found = selectKey(keys, kid, alg);
    }
    if (found === undefined)
      throw new Error(
        `Unable to find a suitable verification key for JWS w/ header ${JSON.stringify({ kid, alg })} among the ${keys.length} JWKs obtained from ${this.#url}`,
      );
    return found;
  }

  close(): void {
    this.#closed = true;
    this.#stopScheduledRefresh?.();
    this.#stopScheduledRefresh = null;
  }

  /** The first load, or a retry of it no sooner than the backoff after the last failure. */
  #loadWhenAllowed(): Promise<readonly VerificationKey[]> {
    if (this.#inFlight === null && this.#clock.monotonicMs() < this.#nextLoadAtMs)
      return Promise.reject(
        new Error(`JWKS of ${this.#url} is unavailable; the next attempt waits for a backoff`, {
          cause: this.#lastLoadError,
        }),
      );
    return this.#load();
  }

  /** One read of the endpoint, shared by every caller that asks while it runs. */
  #load(): Promise<readonly VerificationKey[]> {
    if (this.#inFlight === null) {
      this.#inFlight = this.#read()
        .then(
          (keys) => this.#install(keys),
          (err: unknown) => {
            if (this.#keys === null) {
              this.#loadFailures += 1;
              this.#lastLoadError = err;
              this.#nextLoadAtMs = this.#clock.monotonicMs() + this.#backoffMs(this.#loadFailures);
            }
            throw err;
          },
        )
        .finally(() => {
          this.#inFlight = null;
        });
    }
    return this.#inFlight;
  }

  #install(keys: readonly VerificationKey[]): readonly VerificationKey[] {
    this.#keys = keys;
    this.#loadFailures = 0;
    this.#lastLoadError = null;
    for (const { kid } of keys) if (kid !== undefined) this.#missingKeyIds.delete(kid);
    if (this.#stopScheduledRefresh === null && !this.#closed)
      this.#stopScheduledRefresh = repeat(this.#clock, this.#refreshMs, () =>
        runGuarded(this.#onRefreshFailure, `scheduled refresh of the JWKS of ${this.#url}`, () => this.#refreshWithRetry()),
      );
    return keys;
  }

  /** Kafka's Retry: attempts backed off exponentially until retry.backoff.max.ms has passed. */
  async #refreshWithRetry(): Promise<void> {
    const endMs = this.#clock.monotonicMs() + this.#retryBackoffMaxMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#load();
        return;
      } catch (err) {
        const waitMs = Math.min(this.#backoffMs(attempt), endMs - this.#clock.monotonicMs());
        if (waitMs <= 0 || this.#closed) throw err;
        await new Promise<void>((resolve) => schedule(this.#clock, waitMs, resolve));
      }
    }
  }

  #backoffMs(attempt: number): number {
    return Math.min(this.#retryBackoffMs * 2 ** (attempt - 1), this.#retryBackoffMaxMs);
  }

  /** RefreshingHttpsJwks.maybeExpediteRefresh: one refresh per unknown key id per minute. */
  #mayRefreshFor(kid: string): boolean {
    if (kid.length > MISSING_KEY_ID_MAX_KEY_LENGTH) return false;
    const nowMs = this.#clock.monotonicMs();
    const nextCheckMs = this.#missingKeyIds.get(kid);
    this.#missingKeyIds.delete(kid);
    if (nextCheckMs !== undefined && nextCheckMs > nowMs) {
      this.#missingKeyIds.set(kid, nextCheckMs);
      return false;
    }
    this.#missingKeyIds.set(kid, nowMs + MISSING_KEY_ID_CACHE_IN_FLIGHT_MS);
    if (this.#missingKeyIds.size > MISSING_KEY_ID_CACHE_MAX_ENTRIES) {
      const eldest = this.#missingKeyIds.keys().next();
      if (eldest.done !== true) this.#missingKeyIds.delete(eldest.value);
    }
    return true;
  }

  async #read(): Promise<readonly VerificationKey[]> {
    return parseJwks(this.#url.protocol === 'file:' ? await this.#readFile() : await this.#fetchText());
  }

  #readFile(): Promise<string> {
    const path = fileURLToPath(this.#url);
    return this.#fileSystem.readFile(path, 'utf8');
  }

  async #fetchText(): Promise<string> {
    const response = await this.#fetch(this.#url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS),
    });
    if (!response.ok) throw new Error(`JWKS endpoint ${this.#url} answered HTTP ${response.status}`);
    return response.text();
  }
}

/**
 * A JWK Set (RFC 7517 section 5). As jose4j does, a key that cannot be used (a symmetric or
 * unknown kty, bad parameters) is skipped rather than failing the whole set.
 */
function parseJwks(text: string): readonly VerificationKey[] {
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    throw new Error('the JWKS is not valid JSON');
  }
  const entries = (set as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(entries)) throw new Error('the JWKS has no "keys" array');
  const keys: VerificationKey[] = [];
  for (const jwk of entries) {
    if (typeof jwk !== 'object' || jwk === null) continue;
    const { kid, use, alg } = jwk as Record<string, unknown>;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    } catch {
      continue;
    }
    keys.push({ kid: optionalString(kid), use: optionalString(use), alg: optionalString(alg), key });
  }
  return keys;
}

function optionalString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** jose4j's VerificationJwkSelector: same kid when the JWS names one, a signing key fit for `alg`. */
function selectKey(keys: readonly VerificationKey[], kid: string | undefined, alg: string): KeyObject | undefined {
  return keys.find(
    (k) =>
      (kid === undefined || k.kid === kid) &&
      (k.use === undefined || k.use === 'sig') &&
      (k.alg === undefined || k.alg === alg) &&
      keyFitsJwsAlgorithm(k.key, alg),
  )?.key;
}
