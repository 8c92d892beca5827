// Raw Kafka framing over a loopback socket: requests are written as the fuzzer built
// them (pipelined, possibly malformed); responses are matched to requests by correlation id.
import { connect, type Socket } from 'node:net';
import { apis } from '../../protocol/messages/index.ts';
import { decodeResponseHeader, encodeRequestHeader } from '../../protocol/headers.ts';
import { Reader, Writer } from '../../protocol/primitives.ts';

/**
 * Responses larger than this close the connection. The broker bounds every response (a Fetch
 * by fetch.max.bytes, 55 MiB, plus what the request itself names, such as 32 KB topic names),
 * so a larger frame is a finding, reported as one.
 */
const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export function encodeHeaderBytes(apiKey: number, apiVersion: number, correlationId: number, clientId: string | null): Buffer {
  const w = new Writer(64);
  encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: apiVersion, correlationId, clientId });
  return w.toBuffer();
}

/** size prefix + header + body */
export function frame(header: Buffer, body: Buffer, declaredSize = header.length + body.length): Buffer {
  const size = Buffer.allocUnsafe(4);
  size.writeInt32BE(declaredSize | 0, 0);
  return Buffer.concat([size, header, body]);
}

export function encodeBody(apiKey: number, version: number, msg: unknown): Buffer {
  const w = new Writer(256);
  apis.get(apiKey)!.encodeRequest(w, msg, version);
  return w.toBuffer();
}

export interface Response {
  /** The response body after its header. */
  body: Reader;
  receivedAtMs: number;
}

interface Pending {
  apiKey: number;
  apiVersion: number;
  resolve: (r: Response | null) => void;
}

/** One client connection. Every wait is bounded by a timeout given by the caller. */
export class FuzzConnection {
  private buffered: Buffer[] = [];
  private bufferedBytes = 0;
  private readonly pending = new Map<number, Pending>();
  private closedFlag = false;
  /** The size of a response frame this side refused (below 4 or over the bound), if any. */
  badFrameSize: number | null = null;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    let markClosed!: () => void;
    this.closed = new Promise((resolve) => {
      markClosed = resolve;
    });
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => {
      /* surfaces as close */
    });
    socket.on('close', () => {
      this.closedFlag = true;
      for (const p of this.pending.values()) p.resolve(null);
      this.pending.clear();
      markClosed();
    });
  }

  static open(host: string, port: number, timeoutMs: number): Promise<FuzzConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`connect timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        resolve(new FuzzConnection(socket));
      });
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  /** The client-side port: the broker logs it as the client address. */
  get localPort(): number {
    return this.socket.localPort ?? 0;
  }

  /**
   * Writes a frame. When `expect` is given, returns a promise of the response with that
   * correlation id, or null if the connection closes or `timeoutMs` passes first.
   */
  send(
    bytes: Buffer,
    expect?: { correlationId: number; apiKey: number; apiVersion: number; timeoutMs: number },
  ): Promise<Response | null> | undefined {
    if (this.closedFlag) return expect ? Promise.resolve(null) : undefined;
    let result: Promise<Response | null> | undefined;
    if (expect) {
      result = new Promise((resolve) => {
        const timer = setTimeout(() => {
          this.pending.delete(expect.correlationId);
          resolve(null);
        }, expect.timeoutMs);
        this.pending.set(expect.correlationId, {
          apiKey: expect.apiKey,
          apiVersion: expect.apiVersion,
          resolve: (r) => {
            clearTimeout(timer);
            resolve(r);
          },
        });
      });
    }
    this.socket.write(bytes);
    return result;
  }

  close(): void {
    this.socket.destroy();
  }

  /** Half-closes after the queued writes are flushed (close() would discard them). */
  end(): void {
    this.socket.end();
  }

  private onData(d: Buffer): void {
    this.buffered.push(d);
    this.bufferedBytes += d.length;
    for (;;) {
      if (this.bufferedBytes < 4) return;
      if (this.buffered[0]!.length < 4) this.buffered = [Buffer.concat(this.buffered, this.bufferedBytes)];
      const size = this.buffered[0]!.readInt32BE(0);
      if (size < 4 || size > MAX_RESPONSE_BYTES) {
        this.badFrameSize = size;
        this.close();
        return;
      }
      // Joined once the whole frame is here: a large response arrives in many chunks.
      if (this.bufferedBytes < 4 + size) return;
      const head = this.buffered.length === 1 ? this.buffered[0]! : Buffer.concat(this.buffered, this.bufferedBytes);
      const body = head.subarray(4, 4 + size);
      const rest = head.subarray(4 + size);
      this.buffered = rest.length > 0 ? [rest] : [];
      this.bufferedBytes = rest.length;
      this.dispatch(body);
    }
  }

  private dispatch(body: Buffer): void {
    const correlationId = body.readInt32BE(0);
    const p = this.pending.get(correlationId);
    if (!p) return;
    this.pending.delete(correlationId);
    const r = new Reader(body);
    try {
      decodeResponseHeader(r, p.apiKey, p.apiVersion);
    } catch {
      p.resolve({ body: new Reader(Buffer.alloc(0)), receivedAtMs: Date.now() });
      return;
    }
    p.resolve({ body: r, receivedAtMs: Date.now() });
  }
}

/** Sends one request and decodes its response; null on close, timeout or an undecodable answer. */
export async function roundTrip<Res>(
  conn: FuzzConnection,
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  msg: unknown,
  timeoutMs: number,
): Promise<Res | null> {
  const bytes = frame(encodeHeaderBytes(apiKey, apiVersion, correlationId, 'sluice-fuzz'), encodeBody(apiKey, apiVersion, msg));
  const res = await conn.send(bytes, { correlationId, apiKey, apiVersion, timeoutMs });
  if (!res) return null;
  try {
    return apis.get(apiKey)!.decodeResponse(res.body, apiVersion) as Res;
  } catch {
    return null;
  }
}
