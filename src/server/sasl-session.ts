/**
 * The SASL exchange of one connection on a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
 * SaslServerAuthenticator runs it:
 *
 * - Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are served.
 * - SaslHandshake v1 (KIP-152) chooses the mechanism; its tokens then travel in
 *   SaslAuthenticate requests. SaslHandshake v0 chooses it for the legacy exchange, whose tokens
 *   travel as bare size-prefixed frames, without a request header.
 * - A failed authentication is answered (SASL_AUTHENTICATION_FAILED with its reason) after
 *   connection.failed.authentication.delay.ms, and the connection closed; a v0 client, which
 *   cannot read a reason, is only disconnected. The delay holds back that connection alone.
 * - With connections.max.reauth.ms (KIP-368) a session ends: SaslAuthenticate v1+ tells the
 *   client its lifetime, the client authenticates again on the same connection with a new
 *   SaslHandshake before it runs out, and a client that does not is disconnected at its next
 *   request. Re-authentication keeps the mechanism and the principal.
 */
import { Errors } from '../../protocol/errors.ts';
import { SaslAuthenticationError, type SaslServerExchange } from '../security/sasl-errors.ts';

/** A mechanism's server side; OAUTHBEARER validates asynchronously (a JWKS fetch). */
export interface ServerExchange extends Omit<SaslServerExchange, 'evaluate'> {
  evaluate(token: Buffer): Buffer | Promise<Buffer>;
  /** When the credential itself expires (an OAuth token), else absent or null. */
  readonly sessionExpiresAtMs?: number | null;
}

/** What a SASL listener offers, from its configuration. */
export interface SaslListener {
  /** sasl.enabled.mechanisms of the listener, upper-case. */
  readonly mechanisms: readonly string[];
  /** A fresh server exchange of an enabled mechanism. */
  exchange(mechanism: string): ServerExchange;
  /** connections.max.reauth.ms; 0: sessions never end. */
  readonly reauthenticationMs: number;
  /** connection.failed.authentication.delay.ms: how long a failed authentication waits for its answer, to slow down guessing. */
  readonly failedAuthenticationDelayMs: number;
}

export type SaslState = 'handshake' | 'authenticate' | 'legacy-token' | 'complete' | 'failed';

export interface HandshakeResult {
  readonly errorCode: number;
  readonly mechanisms: string[];
  /** Set when the connection must be closed after the answer. */
  readonly closeReason: string | null;
}

export interface AuthenticateResult {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly authBytes: Buffer;
  /** SaslAuthenticate v1+: how long the session lasts; 0 when it does not end. */
  readonly sessionLifetimeMs: bigint;
  readonly closeReason: string | null;
}

export class SaslSession {
  private state: SaslState = 'handshake';
  private mechanism: string | null = null;
  private exchange: ServerExchange | null = null;
  private authorizationId: string | null = null;
  /** Monotonic time the session ends at; null while it never does. */
  private expiresAtMs: number | null = null;

  constructor(
    private readonly listener: SaslListener,
    private readonly nowMs: () => number,
    /** Waits on the broker's clock (the delay of a failed authentication). */
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  get current(): SaslState {
    return this.state;
  }

  /** The principal's name once authenticated. */
  get user(): string | null {
    return this.authorizationId;
  }

  /** A session past its lifetime serves nothing but a new SaslHandshake. */
  expired(): boolean {
    return this.state === 'complete' && this.expiresAtMs !== null && this.nowMs() >= this.expiresAtMs;
  }

  /** Whether the next frame is a bare legacy token rather than a request. */
  get expectsBareToken(): boolean {
    return this.state === 'legacy-token';
  }

  handshake(mechanism: string, version: number): HandshakeResult {
    const mechanisms = [...this.listener.mechanisms];
    const reauthenticating = this.state === 'complete';
    if (this.state !== 'handshake' && !reauthenticating) {
      const closeReason = `unexpected SaslHandshake in SASL state ${this.state}`;
      this.state = 'failed';
      return { errorCode: Errors.ILLEGAL_SASL_STATE.code, mechanisms, closeReason };
    }
    if (!mechanisms.includes(mechanism)) {
      this.state = 'failed';
      return {
        errorCode: Errors.UNSUPPORTED_SASL_MECHANISM.code,
        mechanisms,
        closeReason: `unsupported SASL mechanism ${mechanism}`,
      };
    }
    if (reauthenticating && (version === 0 || mechanism !== this.mechanism)) {
      this.state = 'failed';
      return {
        errorCode: Errors.ILLEGAL_SASL_STATE.code,
        mechanisms,
        closeReason:
          version === 0
            ? 're-authentication needs SaslHandshake v1 or later'
            : `re-authentication changed the SASL mechanism from ${this.mechanism} to ${mechanism}`,
      };
    }
    this.mechanism = mechanism;
    this.exchange = this.listener.exchange(mechanism);
    this.state = version === 0 ? 'legacy-token' : 'authenticate';
    return { errorCode: Errors.NONE.code, mechanisms, closeReason: null };
  }

  /** One SaslAuthenticate token (or one bare legacy token). */
  async authenticate(token: Buffer): Promise<AuthenticateResult> {
    const exchange = this.exchange;
    if ((this.state !== 'authenticate' && this.state !== 'legacy-token') || exchange === null) {
      const reason =
        this.state === 'complete'
          ? 'SaslAuthenticate request received after successful authentication'
          : 'unexpected SaslAuthenticate request';
      return failure(Errors.ILLEGAL_SASL_STATE.code, reason, reason);
    }
    let reply: Buffer;
    try {
      reply = await exchange.evaluate(token);
    } catch (err) {
      this.state = 'failed';
      this.exchange = null;
      if (this.listener.failedAuthenticationDelayMs > 0) await this.sleep(this.listener.failedAuthenticationDelayMs);
      if (err instanceof SaslAuthenticationError) {
        return failure(Errors.SASL_AUTHENTICATION_FAILED.code, err.message, `SASL ${this.mechanism} authentication failed: ${err.message}`);
      }
      const message = `Authentication failed during authentication due to invalid credentials with SASL mechanism ${this.mechanism}`;
      return failure(Errors.SASL_AUTHENTICATION_FAILED.code, message, `SASL ${this.mechanism} exchange refused: ${(err as Error).message}`);
    }
    if (!exchange.complete)
      return { errorCode: Errors.NONE.code, errorMessage: null, authBytes: reply, sessionLifetimeMs: 0n, closeReason: null };
    const user = exchange.authorizationId;
    if (this.authorizationId !== null && user !== this.authorizationId) {
      this.state = 'failed';
      const message = `Cannot change principals during re-authentication from User:${this.authorizationId} to User:${user}`;
      return failure(Errors.SASL_AUTHENTICATION_FAILED.code, message, message);
    }
    this.authorizationId = user;
    this.exchange = null;
    this.state = 'complete';
    const lifetimeMs = this.sessionLifetimeMs(exchange);
    this.expiresAtMs = lifetimeMs === 0 ? null : this.nowMs() + lifetimeMs;
    return { errorCode: Errors.NONE.code, errorMessage: null, authBytes: reply, sessionLifetimeMs: BigInt(lifetimeMs), closeReason: null };
  }

  /** As Kafka: the shorter of connections.max.reauth.ms and the credential's own expiry; 0 when neither applies. */
  private sessionLifetimeMs(exchange: ServerExchange): number {
    const limits: number[] = [];
    if (this.listener.reauthenticationMs > 0) limits.push(this.listener.reauthenticationMs);
    const expiresAt = exchange.sessionExpiresAtMs ?? null;
    if (expiresAt !== null) limits.push(Math.max(1, expiresAt - Date.now()));
    return limits.length === 0 ? 0 : Math.min(...limits);
  }
}

function failure(errorCode: number, errorMessage: string, closeReason: string): AuthenticateResult {
  return { errorCode, errorMessage, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n, closeReason };
}
