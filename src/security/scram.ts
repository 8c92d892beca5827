import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { SaslAuthenticationError, SaslProtocolError, type SaslServerExchange } from './sasl-errors.ts';

export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
export const SCRAM_MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512'];

/** Kafka's limits (ScramMechanism, ScramControlManager.MAX_ITERATIONS). */
export const SCRAM_MIN_ITERATIONS = 4096;
export const SCRAM_MAX_ITERATIONS = 16384;

const ALGORITHMS: Readonly<Record<ScramMechanism, { digest: 'sha256' | 'sha512'; lengthBytes: number; type: number }>> = {
  'SCRAM-SHA-256': { digest: 'sha256', lengthBytes: 32, type: 1 },
  'SCRAM-SHA-512': { digest: 'sha512', lengthBytes: 64, type: 2 },
};

/** Kafka's ScramMechanism type codes as in UserScramCredentialRecord / AlterUserScramCredentials: 1 = SHA-256, 2 = SHA-512. */
export function scramMechanismType(m: ScramMechanism): number {
  return ALGORITHMS[m].type;
}

export function scramMechanismOfType(type: number): ScramMechanism | undefined {
  return SCRAM_MECHANISMS.find((m) => ALGORITHMS[m].type === type);
}

export interface ScramCredential {
  salt: Buffer;
  storedKey: Buffer;
  serverKey: Buffer;
  iterations: number;
}

/** RFC 5802 Hi(): PBKDF2 with one block of the mechanism's hash. Passwords are not SASLprep-normalized, as in Kafka. */
export function saltedPassword(mechanism: ScramMechanism, password: string, salt: Buffer, iterations: number): Buffer {
  const { digest, lengthBytes } = ALGORITHMS[mechanism];
  return pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, lengthBytes, digest);
}

/** RFC 5802 credential of a password (salted, never the password itself). */
export function scramCredential(mechanism: ScramMechanism, password: string, salt: Buffer, iterations: number): ScramCredential {
  checkIterations(iterations);
  return scramCredentialFromSaltedPassword(mechanism, saltedPassword(mechanism, password, salt, iterations), salt, iterations);
}

/** The same from a salted password (AlterUserScramCredentials sends salt + saltedPassword, not the password). */
export function scramCredentialFromSaltedPassword(
  mechanism: ScramMechanism,
  saltedPassword: Buffer,
  salt: Buffer,
  iterations: number,
): ScramCredential {
  checkIterations(iterations);
  const { digest } = ALGORITHMS[mechanism];
  return {
    salt: Buffer.from(salt),
    storedKey: hash(digest, clientKey(digest, saltedPassword)),
    serverKey: serverKey(digest, saltedPassword),
    iterations,
  };
}

/** Kafka's messages for UNACCEPTABLE_CREDENTIAL in AlterUserScramCredentials. */
function checkIterations(iterations: number): void {
  if (!Number.isInteger(iterations) || iterations < SCRAM_MIN_ITERATIONS) throw new RangeError('Too few iterations');
  if (iterations > SCRAM_MAX_ITERATIONS) throw new RangeError('Too many iterations');
}

type Digest = (typeof ALGORITHMS)[ScramMechanism]['digest'];

function hash(digest: Digest, data: Buffer): Buffer {
  return createHash(digest).update(data).digest();
}

function hmac(digest: Digest, key: Buffer, data: string | Buffer): Buffer {
  return createHmac(digest, key).update(data).digest();
}

function clientKey(digest: Digest, salted: Buffer): Buffer {
  return hmac(digest, salted, 'Client Key');
}

function serverKey(digest: Digest, salted: Buffer): Buffer {
  return hmac(digest, salted, 'Server Key');
}

function xor(a: Buffer, b: Buffer): Buffer {
  const result = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) result[i] = a[i]! ^ b[i]!;
  return result;
}

function equalInConstantTime(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/*
 * RFC 5802's grammar as Kafka's ScramMessages writes it: ASCII only, so a user name outside US-ASCII is refused
 * as Kafka refuses it. Kafka parses a reserved `m=` attribute (and then fails the proof); RFC 5802 says it must
 * fail, so here it is malformed.
 */
const VALUE = '[\\x01-\\x2b\\x2d-\\x7f]+';
const PRINTABLE = '[\\x21-\\x2b\\x2d-\\x7e]+';
const SASL_NAME = '(?:[\\x01-\\x2b\\x2d-\\x3c\\x3e-\\x7f]|=2C|=3D)+';
const BASE64 = '(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?';
const EXTENSIONS = `(?:,[A-Za-z]+=${VALUE})*`;
const CLIENT_FIRST = new RegExp(
  `^(?<gs2Header>n,(?:a=(?<authzid>${SASL_NAME}))?,)(?<bare>n=(?<saslName>${SASL_NAME}),r=(?<nonce>${PRINTABLE})(?<extensions>${EXTENSIONS}))$`,
);
const SERVER_FIRST = new RegExp(`^r=(?<nonce>${PRINTABLE}),s=(?<salt>${BASE64}),i=(?<iterations>[0-9]+)${EXTENSIONS}$`);
const CLIENT_FINAL = new RegExp(
  `^(?<withoutProof>c=(?<channelBinding>${BASE64}),r=(?<nonce>${PRINTABLE})${EXTENSIONS}),p=(?<proof>${BASE64})$`,
);
const SERVER_FINAL = new RegExp(`^(?:e=(?<error>[\\x01-\\x2b\\x2d-\\x3c\\x3e-\\x7f]+)|v=(?<signature>${BASE64})${EXTENSIONS})$`);
const NONCE = new RegExp(`^${PRINTABLE}$`);

/** The SCRAM extension by which a client asks to authenticate with a delegation token (ScramLoginModule.TOKEN_AUTH_CONFIG). */
const TOKEN_AUTH_EXTENSION = 'tokenauth';
const INVALID_USER_CREDENTIALS = 'Authentication failed: Invalid user credentials';

/** RFC 5802 saslname: ',' and '=' escaped as `=2C` and `=3D`. */
function saslName(username: string): string {
  return username.replaceAll('=', '=3D').replaceAll(',', '=2C');
}

/** The grammar already allows '=' only in `=2C` and `=3D`, so a left-to-right decode is unambiguous. */
function usernameOf(saslName: string): string {
  return saslName.replace(/=2C|=3D/g, (escaped) => (escaped === '=2C' ? ',' : '='));
}

/** Base64 that re-encodes to itself: Node's decoder ignores stray bits, and a tampered proof must not pass. */
function strictBase64(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

function randomNonce(): string {
  return randomBytes(24).toString('base64url');
}

function parseExtensions(text: string): Map<string, string> {
  const extensions = new Map<string, string>();
  for (const extension of text.split(',').slice(1)) {
    const separator = extension.indexOf('=');
    extensions.set(extension.slice(0, separator), extension.slice(separator + 1));
  }
  return extensions;
}

/** Server side as Kafka's ScramSaslServer: client-first -> server-first -> client-final -> server-final. `lookup` returns undefined for an unknown user. */
export function scramServerExchange(
  mechanism: ScramMechanism,
  lookup: (username: string) => ScramCredential | undefined,
  nonce: () => string = randomNonce,
): SaslServerExchange {
  return new ScramServerExchange(mechanism, lookup, nonce);
}

type ServerState = 'RECEIVE_CLIENT_FIRST_MESSAGE' | 'RECEIVE_CLIENT_FINAL_MESSAGE' | 'COMPLETE' | 'FAILED';

interface ServerFirstSent {
  credential: ScramCredential;
  username: string;
  gs2Header: string;
  clientFirstBare: string;
  serverFirst: string;
  nonce: string;
}

class ScramServerExchange implements SaslServerExchange {
  private state: ServerState = 'RECEIVE_CLIENT_FIRST_MESSAGE';
  private sent: ServerFirstSent | undefined;
  private username = '';

  constructor(
    readonly mechanism: ScramMechanism,
    private readonly lookup: (username: string) => ScramCredential | undefined,
    private readonly serverNonce: () => string,
  ) {}

  get complete(): boolean {
    return this.state === 'COMPLETE';
  }

  get authorizationId(): string {
    if (!this.complete) throw new Error('Authentication exchange has not completed');
    return this.username;
  }

  evaluate(token: Buffer): Buffer {
    try {
      if (this.state === 'RECEIVE_CLIENT_FIRST_MESSAGE') return this.receiveClientFirst(token.toString('utf8'));
      if (this.state === 'RECEIVE_CLIENT_FINAL_MESSAGE' && this.sent) return this.receiveClientFinal(this.sent, token.toString('utf8'));
      throw new SaslProtocolError(`Unexpected challenge in Sasl server state ${this.state}`);
    } catch (e) {
      this.state = 'FAILED';
      this.sent = undefined;
      throw e;
    }
  }

  private receiveClientFirst(message: string): Buffer {
    const groups = CLIENT_FIRST.exec(message)?.groups;
    if (!groups) throw new SaslProtocolError('Invalid SCRAM client first message format');
    const { gs2Header = '', authzid, bare = '', saslName = '', nonce = '', extensions = '' } = groups;
    // Sluice has no delegation tokens, so a token id is never a known credential.
    if (parseExtensions(extensions).get(TOKEN_AUTH_EXTENSION)?.toLowerCase() === 'true') {
      throw new SaslProtocolError(INVALID_USER_CREDENTIALS);
    }
    const username = usernameOf(saslName);
    const credential = this.lookup(username);
    if (!credential) throw new SaslProtocolError(INVALID_USER_CREDENTIALS);
    // The authzid is a saslname too; Kafka compares it undecoded, which differs only for names with ',' or '='.
    if (authzid !== undefined && usernameOf(authzid) !== username) {
      throw new SaslAuthenticationError('Authentication failed: Client requested an authorization id that is different from username');
    }
    if (credential.iterations < SCRAM_MIN_ITERATIONS) throw new SaslProtocolError(INVALID_USER_CREDENTIALS);
    const serverNonce = this.serverNonce();
    if (!NONCE.test(serverNonce)) throw new Error(`A SCRAM nonce must be printable ASCII without ',': ${serverNonce}`);
    const combinedNonce = nonce + serverNonce;
    const serverFirst = `r=${combinedNonce},s=${credential.salt.toString('base64')},i=${credential.iterations}`;
    this.sent = { credential, username, gs2Header, clientFirstBare: bare, serverFirst, nonce: combinedNonce };
    this.state = 'RECEIVE_CLIENT_FINAL_MESSAGE';
    return Buffer.from(serverFirst, 'utf8');
  }

  private receiveClientFinal(sent: ServerFirstSent, message: string): Buffer {
    const groups = CLIENT_FINAL.exec(message)?.groups;
    if (!groups) throw new SaslProtocolError('Invalid SCRAM client final message format');
    const { withoutProof = '', channelBinding = '', nonce = '', proof = '' } = groups;
    // Without channel binding, c= carries the gs2 header of the client's first message: "biws" for "n,,".
    if (channelBinding !== Buffer.from(sent.gs2Header, 'utf8').toString('base64')) {
      throw new SaslProtocolError('Invalid channel binding in the final client message.');
    }
    if (nonce !== sent.nonce) throw new SaslProtocolError('Invalid client nonce in the final client message.');
    const { digest } = ALGORITHMS[this.mechanism];
    const authMessage = `${sent.clientFirstBare},${sent.serverFirst},${withoutProof}`;
    const clientSignature = hmac(digest, sent.credential.storedKey, authMessage);
    const clientProof = strictBase64(proof);
    if (!clientProof || clientProof.length !== clientSignature.length) throw new SaslProtocolError(INVALID_USER_CREDENTIALS);
    const computedStoredKey = hash(digest, xor(clientSignature, clientProof));
    if (!equalInConstantTime(computedStoredKey, sent.credential.storedKey)) throw new SaslProtocolError(INVALID_USER_CREDENTIALS);
    const serverSignature = hmac(digest, sent.credential.serverKey, authMessage);
    this.username = sent.username;
    this.sent = undefined;
    this.state = 'COMPLETE';
    return Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8');
  }
}

type ClientState = 'SEND_CLIENT_FIRST_MESSAGE' | 'RECEIVE_SERVER_FIRST_MESSAGE' | 'RECEIVE_SERVER_FINAL_MESSAGE' | 'COMPLETE' | 'FAILED';

/**
 * Client side, for Sluice's own client: first() -> token; next(serverFirst) -> clientFinal; finish(serverFinal)
 * throws SaslAuthenticationError if the server signature is wrong or the server sent e=...
 */
export class ScramClient {
  private state: ClientState = 'SEND_CLIENT_FIRST_MESSAGE';
  private readonly clientFirstBare: string;
  private expectedServerSignature: Buffer | undefined;

  constructor(
    private readonly mechanism: ScramMechanism,
    username: string,
    private readonly password: string,
    private readonly nonce: string = randomNonce(),
  ) {
    if (!NONCE.test(nonce)) throw new Error(`A SCRAM nonce must be printable ASCII without ',': ${nonce}`);
    this.clientFirstBare = `n=${saslName(username)},r=${nonce}`;
  }

  first(): Buffer {
    this.advance('SEND_CLIENT_FIRST_MESSAGE', 'RECEIVE_SERVER_FIRST_MESSAGE');
    return Buffer.from(`n,,${this.clientFirstBare}`, 'utf8');
  }

  next(serverFirst: Buffer): Buffer {
    this.advance('RECEIVE_SERVER_FIRST_MESSAGE', 'RECEIVE_SERVER_FINAL_MESSAGE');
    return this.failing(() => this.clientFinal(serverFirst.toString('utf8')));
  }

  finish(serverFinal: Buffer): void {
    this.advance('RECEIVE_SERVER_FINAL_MESSAGE', 'COMPLETE');
    this.failing(() => this.verifyServerFinal(serverFinal.toString('utf8')));
  }

  private clientFinal(serverFirst: string): Buffer {
    const groups = SERVER_FIRST.exec(serverFirst)?.groups;
    if (!groups) throw new SaslProtocolError('Invalid SCRAM server first message format');
    const { nonce = '', salt = '', iterations: iterationsText = '' } = groups;
    if (!nonce.startsWith(this.nonce)) throw new SaslProtocolError('Invalid server nonce: does not start with client nonce');
    const iterations = Number(iterationsText);
    // The upper bound keeps a hostile server from making the client hash for minutes; no Kafka credential exceeds it.
    if (iterations < SCRAM_MIN_ITERATIONS || iterations > SCRAM_MAX_ITERATIONS) {
      throw new SaslProtocolError(
        `Requested iterations ${iterationsText} is outside [${SCRAM_MIN_ITERATIONS}, ${SCRAM_MAX_ITERATIONS}] for ${this.mechanism}`,
      );
    }
    const { digest } = ALGORITHMS[this.mechanism];
    const salted = saltedPassword(this.mechanism, this.password, Buffer.from(salt, 'base64'), iterations);
    const key = clientKey(digest, salted);
    const withoutProof = `c=biws,r=${nonce}`;
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`;
    const proof = xor(key, hmac(digest, hash(digest, key), authMessage));
    this.expectedServerSignature = hmac(digest, serverKey(digest, salted), authMessage);
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8');
  }

  private verifyServerFinal(serverFinal: string): void {
    const groups = SERVER_FINAL.exec(serverFinal)?.groups;
    if (!groups) throw new SaslProtocolError('Invalid SCRAM server final message format');
    const { error, signature = '' } = groups;
    if (error !== undefined) throw new SaslAuthenticationError(`Sasl authentication using ${this.mechanism} failed with error: ${error}`);
    const received = strictBase64(signature);
    if (!received || !this.expectedServerSignature || !equalInConstantTime(received, this.expectedServerSignature)) {
      throw new SaslAuthenticationError('Invalid server signature in server final message');
    }
  }

  private advance(from: ClientState, to: ClientState): void {
    if (this.state !== from) {
      const state = this.state;
      this.state = 'FAILED';
      throw new SaslProtocolError(`Unexpected challenge in Sasl client state ${state}`);
    }
    this.state = to;
  }

  private failing<T>(step: () => T): T {
    try {
      return step();
    } catch (e) {
      this.state = 'FAILED';
      throw e;
    }
  }
}
