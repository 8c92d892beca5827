// A bare TCP client speaking Kafka framing, for tests that must send exactly the bytes they mean.
import { connect, type Socket } from 'node:net';

export class RawClient {
  private buffered = Buffer.alloc(0);
  private readonly frames: Buffer[] = [];
  private readonly waiters: { resolve: (b: Buffer) => void; reject: (e: Error) => void }[] = [];
  private closedWaiters: (() => void)[] = [];
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      while (this.buffered.length >= 4) {
        const size = this.buffered.readInt32BE(0);
        if (this.buffered.length < 4 + size) break;
        const frame = this.buffered.subarray(4, 4 + size);
        this.buffered = this.buffered.subarray(4 + size);
        const waiter = this.waiters.shift();
        if (waiter) waiter.resolve(frame);
        else this.frames.push(frame);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w.reject(new Error('connection closed'));
      for (const c of this.closedWaiters.splice(0)) c();
    });
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host }, () => {
        socket.off('error', reject);
        resolve(new RawClient(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Writes raw bytes (no framing added). */
  write(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** Writes `payload` behind its 4-byte size. */
  send(payload: Buffer): void {
    const size = Buffer.alloc(4);
    size.writeInt32BE(payload.length);
    this.socket.write(Buffer.concat([size, payload]));
  }

  /** The next response frame (without its size prefix). */
  next(): Promise<Buffer> {
    const frame = this.frames.shift();
    if (frame) return Promise.resolve(frame);
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Resolves when the server has closed the connection. */
  whenClosed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => this.closedWaiters.push(resolve));
  }

  close(): void {
    this.socket.destroy();
  }
}

/**
 * A request frame payload: header v1 (v2 when `flexible`: a tagged-field byte after client id)
 * followed by `body`.
 */
export function requestPayload(
  apiKey: number,
  apiVersion: number,
  correlationId: number,
  body: Buffer,
  flexible = false,
  clientId = 'test',
): Buffer {
  const id = Buffer.from(clientId);
  const header = Buffer.alloc(10 + id.length + (flexible ? 1 : 0));
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(id.length, 8);
  id.copy(header, 10);
  return Buffer.concat([header, body]);
}
