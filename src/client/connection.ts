/**
 * One connection to a Kafka broker, speaking the protocol through our own codec: connect,
 * negotiate versions with ApiVersions, then send requests and await their responses by
 * correlation id. Requests may be pipelined; the broker answers them in order.
 *
 *   const conn = await KafkaConnection.connect('127.0.0.1', 9092);
 *   const res = await conn.send<MetadataResponse>(ApiKey.Metadata, makeMetadataRequest({ topics: null }));
 *   conn.close();
 *
 * Minimal by design (the CLI tools and benchmarks use it): no retries, no reconnects.
 */
import { systemClock, type Clock, type TimerHandle } from '../runtime/clock.ts';
import { systemNetwork, type NetSocket, type Network } from '../runtime/network.ts';
import { encodeRequestHeader, decodeResponseHeader } from '../../protocol/headers.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { makeApiVersionsRequest, type ApiVersionsResponse } from '../../protocol/messages/api-versions.ts';
import { Errors, KafkaError, errorByCode } from '../../protocol/errors.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import { makeSaslHandshakeRequest, type SaslHandshakeResponse } from '../../protocol/messages/sasl-handshake.ts';
import { makeSaslAuthenticateRequest, type SaslAuthenticateResponse } from '../../protocol/messages/sasl-authenticate.ts';
import { plainClientToken } from '../security/plain.ts';
import { ScramClient, type ScramMechanism } from '../security/scram.ts';

export interface ConnectionOptions {
  /** Defaults to `sluice-client`. */
  clientId?: string;
  /** Defaults to 10000. */
  connectTimeoutMs?: number;
  /** Per request; defaults to 30000. On expiry the connection is closed. */
  requestTimeoutMs?: number;
  /** Largest response frame accepted; defaults to 100 MiB. */
  maxResponseBytes?: number;
  /** Where the connection is opened; defaults to the system network (node:net). */
  network?: Network;
  /** Times connects and requests out; defaults to the system clock. */
  clock?: Clock;
  /**
   * Connect over TLS with these options (a listener of security protocol SSL or SASL_SSL), or
   * the options for the host connected to (its name is what the certificate is checked against).
   */
  tls?: TlsConnectionOptions | ((host: string) => TlsConnectionOptions);
  /** Authenticate with SASL after ApiVersions (SASL_PLAINTEXT or SASL_SSL). */
  sasl?: SaslCredentials;
}

/** How a connection to a secured listener authenticates: its TLS and SASL settings. */
export type ClientSecurity = Pick<ConnectionOptions, 'tls' | 'sasl'>;

/** A SASL user of a mechanism Sluice's client speaks. */
export interface SaslCredentials {
  readonly mechanism: 'PLAIN' | ScramMechanism;
  readonly username: string;
  readonly password: string;
}

/** The broker refused the SASL authentication (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM...). */
export class SaslAuthenticationFailedError extends KafkaError {}

/**
 * When a session of `lifetimeMs` is re-authenticated: at 85-95 % of it, as Kafka's clients do,
 * so that a fleet started together does not re-authenticate at once.
 */
function reauthenticationDelayMs(lifetimeMs: number): number {
  return Math.floor(lifetimeMs * (0.85 + Math.random() * 0.1));
}

export interface VersionRange {
  minVersion: number;
  maxVersion: number;
}

export class ConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionError';
  }
}

interface Pending {
  apiKey: number;
  version: number;
  raw: boolean;
  timer: TimerHandle | undefined;
  resolve(value: unknown): void;
  reject(err: Error): void;
}

const SOFTWARE_NAME = 'sluice-client';
const SOFTWARE_VERSION = '0.1.0';

/** Encodes one request frame (length prefix, header, body) as chunks for a vectored write. */
export function encodeRequestFrame(
  apiKey: number,
  version: number,
  correlationId: number,
  clientId: string | null,
  body: unknown,
): Buffer[] {
  const api = apis.get(apiKey);
  if (api === undefined) throw new Error(`unknown api key ${apiKey}`);
  const w = new Writer(512);
  const setLength = w.reserveInt32();
  encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId, clientId });
  api.encodeRequest(w, body, version);
  setLength(w.length - 4);
  return w.toChunks();
}

export class KafkaConnection {
  /** The broker's version ranges by api key, from ApiVersions. */
  readonly brokerVersions = new Map<number, VersionRange>();
  private readonly pending = new Map<number, Pending>();
  private nextCorrelationId = 1;
  private readonly chunks: Buffer[] = [];
  private buffered = 0;
  private closedError: Error | null = null;
  private readonly requestTimeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly clock: Clock;
  private reauthentication: TimerHandle | undefined;

  private readonly sasl: SaslCredentials | null;

  private constructor(
    private readonly socket: NetSocket,
    readonly host: string,
    readonly port: number,
    readonly clientId: string,
    options: ConnectionOptions,
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 100 * 1024 * 1024;
    this.clock = options.clock ?? systemClock;
    this.sasl = options.sasl ?? null;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(new ConnectionError(`${host}:${port}: ${err.message}`)));
    socket.on('close', () => this.fail(new ConnectionError(`${host}:${port}: connection closed`)));
  }

  /** Opens a connection and negotiates versions (ApiVersions). */
  static async connect(host: string, port: number, options: ConnectionOptions = {}): Promise<KafkaConnection> {
    const socket = await openSocket(
      options.network ?? systemNetwork,
      options.clock ?? systemClock,
      host,
      port,
      options.connectTimeoutMs ?? 10_000,
      typeof options.tls === 'function' ? options.tls(host) : options.tls,
    );
    const conn = new KafkaConnection(socket, host, port, options.clientId ?? SOFTWARE_NAME, options);
    try {
      await conn.negotiate();
      await conn.authenticate();
    } catch (err) {
      conn.close();
      throw err;
    }
    return conn;
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /**
   * The highest version both sides support, at most `cap`; throws when there is none
   * (the broker lacks the API or the ranges do not overlap).
   */
  version(apiKey: number, cap = Number.MAX_SAFE_INTEGER): number {
    const ours = apis.get(apiKey);
    const theirs = this.brokerVersions.get(apiKey);
    const name = ours?.name ?? `api ${apiKey}`;
    if (ours === undefined || theirs === undefined) {
      throw new KafkaError(Errors.UNSUPPORTED_VERSION, `${this.host}:${this.port} does not support ${name}`);
    }
    const version = Math.min(ours.maxVersion, theirs.maxVersion, cap);
    if (version < Math.max(ours.minVersion, theirs.minVersion)) {
      throw new KafkaError(Errors.UNSUPPORTED_VERSION, `no common ${name} version with ${this.host}:${this.port}`);
    }
    return version;
  }

  /** Sends a request at `version` (default: the highest common one) and decodes its response. */
  send<Res>(apiKey: number, request: unknown, version = this.version(apiKey)): Promise<Res> {
    return this.enqueue(apiKey, version, false, (id) => encodeRequestFrame(apiKey, version, id, this.clientId, request)) as Promise<Res>;
  }

  /**
   * Sends a pre-encoded request body (header added here) and resolves with the raw response
   * body after its header: for load generators that encode once and send many times.
   */
  sendEncoded(apiKey: number, version: number, body: Buffer): Promise<Buffer> {
    return this.enqueue(apiKey, version, true, (id) => {
      const w = new Writer(64);
      const setLength = w.reserveInt32();
      encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId: id, clientId: this.clientId });
      setLength(w.length - 4 + body.length);
      return [...w.toChunks(), body];
    }) as Promise<Buffer>;
  }

  close(): void {
    this.fail(new ConnectionError(`${this.host}:${this.port}: connection closed by client`));
  }

  private enqueue(apiKey: number, version: number, raw: boolean, frame: (correlationId: number) => Buffer[]): Promise<unknown> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    const correlationId = this.nextCorrelationId;
    this.nextCorrelationId = (this.nextCorrelationId + 1) & 0x7fffffff;
    let chunks: Buffer[];
    try {
      chunks = frame(correlationId);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return new Promise((resolve, reject) => {
      const timer =
        this.requestTimeoutMs > 0
          ? this.clock.setTimeout(
              () =>
                this.fail(
                  new ConnectionError(
                    `${this.host}:${this.port}: no response to ${apis.get(apiKey)?.name} within ${this.requestTimeoutMs} ms`,
                  ),
                ),
              this.requestTimeoutMs,
            )
          : undefined;
      this.pending.set(correlationId, { apiKey, version, raw, timer, resolve, reject });
      this.socket.cork();
      for (const c of chunks) this.socket.write(c);
      this.socket.uncork();
    });
  }

  private async negotiate(): Promise<void> {
    const ours = apis.get(ApiKey.ApiVersions)!;
    // Seed our own range so the first request can go out at our newest version; a broker
    // that does not know it answers UNSUPPORTED_VERSION at v0 with its range (KIP-511).
    this.brokerVersions.set(ApiKey.ApiVersions, { minVersion: ours.minVersion, maxVersion: ours.maxVersion });
    const request = makeApiVersionsRequest({ clientSoftwareName: SOFTWARE_NAME, clientSoftwareVersion: SOFTWARE_VERSION });
    let res = await this.send<ApiVersionsResponse>(ApiKey.ApiVersions, request, Math.min(ours.maxVersion, 3));
    if (res.errorCode === Errors.UNSUPPORTED_VERSION.code) {
      const theirs = res.apiKeys.find((k) => k.apiKey === ApiKey.ApiVersions);
      res = await this.send<ApiVersionsResponse>(ApiKey.ApiVersions, request, Math.min(theirs?.maxVersion ?? 0, ours.maxVersion));
    }
    if (res.errorCode !== Errors.NONE.code) {
      throw new KafkaError(errorByCode(res.errorCode), `ApiVersions failed at ${this.host}:${this.port}: error ${res.errorCode}`);
    }
    this.brokerVersions.clear();
    for (const k of res.apiKeys) this.brokerVersions.set(k.apiKey, { minVersion: k.minVersion, maxVersion: k.maxVersion });
  }

  /**
   * SaslHandshake v1, then the mechanism's tokens in SaslAuthenticate requests (KIP-152);
   * again before the session the broker granted runs out (KIP-368).
   */
  private async authenticate(): Promise<void> {
    const sasl = this.sasl;
    if (sasl === null) return;
    const where = `${this.host}:${this.port}`;
    const handshake = await this.send<SaslHandshakeResponse>(
      ApiKey.SaslHandshake,
      makeSaslHandshakeRequest({ mechanism: sasl.mechanism }),
      this.version(ApiKey.SaslHandshake, 1),
    );
    if (handshake.errorCode !== Errors.NONE.code) {
      throw new SaslAuthenticationFailedError(
        errorByCode(handshake.errorCode),
        `${where} does not offer SASL ${sasl.mechanism} (it offers ${handshake.mechanisms.join(', ') || 'none'})`,
      );
    }
    const version = this.version(ApiKey.SaslAuthenticate);
    const exchange = async (token: Buffer): Promise<SaslAuthenticateResponse> => {
      const res = await this.send<SaslAuthenticateResponse>(
        ApiKey.SaslAuthenticate,
        makeSaslAuthenticateRequest({ authBytes: token }),
        version,
      );
      if (res.errorCode !== Errors.NONE.code) {
        throw new SaslAuthenticationFailedError(
          errorByCode(res.errorCode),
          `SASL ${sasl.mechanism} authentication as ${sasl.username} at ${where} failed: ${res.errorMessage ?? errorByCode(res.errorCode).name}`,
        );
      }
      return res;
    };
    let last: SaslAuthenticateResponse;
    if (sasl.mechanism === 'PLAIN') {
      last = await exchange(plainClientToken(sasl.username, sasl.password));
    } else {
      const scram = new ScramClient(sasl.mechanism, sasl.username, sasl.password);
      const serverFirst = await exchange(scram.first());
      last = await exchange(scram.next(serverFirst.authBytes));
      scram.finish(last.authBytes);
    }
    const lifetimeMs = Number(last.sessionLifetimeMs);
    if (lifetimeMs > 0 && this.closedError === null) {
      this.reauthentication = this.clock.setTimeout(() => {
        this.reauthentication = undefined;
        this.authenticate().catch((err: Error) => this.fail(new ConnectionError(`${where}: re-authentication failed: ${err.message}`)));
      }, reauthenticationDelayMs(lifetimeMs));
    }
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    while (this.buffered >= 4) {
      const head = this.chunks[0]!.length >= 4 ? this.chunks[0]! : this.coalesce();
      const size = head.readInt32BE(0);
      if (size < 4 || size > this.maxResponseBytes) {
        this.fail(new ConnectionError(`${this.host}:${this.port}: bad response frame size ${size}`));
        return;
      }
      if (this.buffered < 4 + size) return;
      const frame = this.take(4 + size).subarray(4);
      this.onFrame(frame);
      if (this.closedError !== null) return;
    }
  }

  private coalesce(): Buffer {
    const all = Buffer.concat(this.chunks, this.buffered);
    this.chunks.length = 0;
    this.chunks.push(all);
    return all;
  }

  private take(n: number): Buffer {
    const first = this.chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let filled = 0;
      while (filled < n) {
        const c = this.chunks[0]!;
        const k = Math.min(c.length, n - filled);
        c.copy(out, filled, 0, k);
        filled += k;
        if (k === c.length) this.chunks.shift();
        else this.chunks[0] = c.subarray(k);
      }
    }
    this.buffered -= n;
    return out;
  }

  private onFrame(frame: Buffer): void {
    if (frame.length < 4) {
      this.fail(new ConnectionError(`${this.host}:${this.port}: response frame of ${frame.length} bytes`));
      return;
    }
    const correlationId = frame.readInt32BE(0);
    const p = this.pending.get(correlationId);
    if (p === undefined) {
      this.fail(new ConnectionError(`${this.host}:${this.port}: response with unknown correlation id ${correlationId}`));
      return;
    }
    this.pending.delete(correlationId);
    if (p.timer !== undefined) this.clock.clearTimeout(p.timer);
    try {
      const r = new Reader(frame);
      decodeResponseHeader(r, p.apiKey, p.version);
      if (p.raw) {
        p.resolve(frame.subarray(r.offset));
      } else {
        p.resolve(apis.get(p.apiKey)!.decodeResponse(r, responseBodyVersion(p.apiKey, p.version, frame, r.offset)));
      }
    } catch (err) {
      p.reject(err as Error);
    }
  }

  private fail(err: Error): void {
    if (this.closedError !== null) return;
    this.closedError = err;
    if (this.reauthentication !== undefined) this.clock.clearTimeout(this.reauthentication);
    for (const p of this.pending.values()) {
      if (p.timer !== undefined) this.clock.clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    this.socket.destroy();
  }
}

/**
 * A broker that does not support the ApiVersions version asked for answers
 * UNSUPPORTED_VERSION in a v0 body (KIP-511), whatever version the request had.
 */
function responseBodyVersion(apiKey: number, version: number, frame: Buffer, bodyAt: number): number {
  const unsupported =
    apiKey === ApiKey.ApiVersions && frame.length >= bodyAt + 2 && frame.readInt16BE(bodyAt) === Errors.UNSUPPORTED_VERSION.code;
  return unsupported ? 0 : version;
}

function openSocket(
  network: Network,
  clock: Clock,
  host: string,
  port: number,
  timeoutMs: number,
  tls: TlsConnectionOptions | undefined,
): Promise<NetSocket> {
  return new Promise((resolve, reject) => {
    const socket = tls === undefined ? network.connect(host, port) : network.connect(host, port, tls);
    const timer = clock.setTimeout(() => {
      socket.destroy();
      reject(new ConnectionError(`${host}:${port}: connect timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clock.clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (err) => {
      clock.clearTimeout(timer);
      reject(new ConnectionError(`${host}:${port}: ${err.message}`));
    });
  });
}
