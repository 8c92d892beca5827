/** A refused authentication; `message` is safe to send to the client (never contains a secret). */
export class SaslAuthenticationError extends Error {
  override name = 'SaslAuthenticationError';
}

/**
 * A malformed or out-of-sequence token. Kafka answers these (IllegalSaslStateException, SaslException) without
 * their detail, so `message` is for the broker's log, not for the client.
 */
export class SaslProtocolError extends Error {
  override name = 'SaslProtocolError';
}

/** One server-side exchange of one mechanism, for one connection (a new one per (re)authentication). */
export interface SaslServerExchange {
  readonly mechanism: string;
  /** Feeds the client's next token and returns the server's reply (may be empty). Throws SaslAuthenticationError / SaslProtocolError. */
  evaluate(token: Buffer): Buffer;
  readonly complete: boolean;
  /** The authenticated user name once complete (Kafka's authorizationId). */
  readonly authorizationId: string;
}
