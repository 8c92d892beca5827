import { createHash, timingSafeEqual } from 'node:crypto';
import { type JaasLoginModule, PLAIN_LOGIN_MODULE } from './jaas.ts';
import { SaslAuthenticationError, SaslProtocolError, type SaslServerExchange } from './sasl-errors.ts';

const JAAS_USER_PREFIX = 'user_';

/**
 * The `user_<name>="<password>"` entries of a PlainLoginModule JAAS config (Kafka's PlainServerCallbackHandler).
 * Kafka reads them only from a PlainLoginModule entry, so any other module has no PLAIN users.
 */
export function plainUsers(module: JaasLoginModule): Map<string, string> {
  const users = new Map<string, string>();
  if (module.loginModule !== PLAIN_LOGIN_MODULE) return users;
  for (const [key, password] of module.options) {
    if (key.startsWith(JAAS_USER_PREFIX)) users.set(key.slice(JAAS_USER_PREFIX.length), password);
  }
  return users;
}

/** Server side of PLAIN (RFC 4616) exactly as Kafka's PlainSaslServer: one token `authzid NUL authcid NUL passwd`. */
export function plainServerExchange(users: ReadonlyMap<string, string>): SaslServerExchange {
  return new PlainServerExchange(users);
}

/** The client's single PLAIN token, without an authorization id as Kafka's clients send it. */
export function plainClientToken(username: string, password: string): Buffer {
  return Buffer.from(`\0${username}\0${password}`, 'utf8');
}

class PlainServerExchange implements SaslServerExchange {
  readonly mechanism = 'PLAIN';
  private state: 'RECEIVE_CLIENT_MESSAGE' | 'COMPLETE' | 'FAILED' = 'RECEIVE_CLIENT_MESSAGE';
  private username = '';

  constructor(private readonly users: ReadonlyMap<string, string>) {}

  get complete(): boolean {
    return this.state === 'COMPLETE';
  }

  get authorizationId(): string {
    if (!this.complete) throw new Error('Authentication exchange has not completed');
    return this.username;
  }

  evaluate(token: Buffer): Buffer {
    if (this.state !== 'RECEIVE_CLIENT_MESSAGE') {
      const state = this.state;
      this.state = 'FAILED';
      throw new SaslProtocolError(`Unexpected SASL/PLAIN token in server state ${state}`);
    }
    try {
      this.username = this.authenticate(token);
      this.state = 'COMPLETE';
      return Buffer.alloc(0);
    } catch (e) {
      this.state = 'FAILED';
      throw e;
    }
  }

  /** Kafka's checks, in Kafka's order: the credentials first, then the authorization id. */
  private authenticate(token: Buffer): string {
    const [authorizationIdFromClient, username, password] = plainTokens(token.toString('utf8'));
    if (username === '') throw new SaslAuthenticationError('Authentication failed: username not specified');
    if (password === '') throw new SaslAuthenticationError('Authentication failed: password not specified');
    const expected = this.users.get(username);
    // Compare even for an unknown user so the time taken does not tell which users exist.
    const passwordMatches = equalInConstantTime(password, expected ?? '');
    if (expected === undefined || !passwordMatches)
      throw new SaslAuthenticationError('Authentication failed: Invalid username or password');
    if (authorizationIdFromClient !== '' && authorizationIdFromClient !== username) {
      throw new SaslAuthenticationError('Authentication failed: Client requested an authorization id that is different from username');
    }
    return username;
  }
}

/** Splits as Kafka's PlainSaslServer.extractTokens does: at most four NUL-separated parts, exactly three wanted. */
function plainTokens(message: string): [string, string, string] {
  const tokens: string[] = [];
  let start = 0;
  for (let i = 0; i < 4; i++) {
    const end = message.indexOf('\0', start);
    if (end === -1) {
      tokens.push(message.slice(start));
      break;
    }
    tokens.push(message.slice(start, end));
    start = end + 1;
  }
  const [authorizationId, username, password] = tokens;
  if (tokens.length !== 3 || authorizationId === undefined || username === undefined || password === undefined) {
    throw new SaslAuthenticationError(`Invalid SASL/PLAIN response: expected 3 tokens, got ${tokens.length}`);
  }
  return [authorizationId, username, password];
}

/** Equal-length digests let timingSafeEqual compare passwords of any length. */
function equalInConstantTime(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a, 'utf8').digest(), createHash('sha256').update(b, 'utf8').digest());
}
