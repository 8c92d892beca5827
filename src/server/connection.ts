/**
 * One client connection: 4-byte size framing, strictly ordered processing of pipelined
 * requests, corked response writes, back-pressure and idle expiry.
 */
import type { Socket } from 'node:net';
import type { Logger } from '../observability/logger.ts';
import type { Session } from '../handlers/registry.ts';
import { ChunkQueue } from './chunk-queue.ts';
import { runGuarded } from '../runtime/guard.ts';

/** Thrown by a FrameProcessor for a protocol violation: log one line, then close. */
export class ConnectionClosingError extends Error {
  constructor(
    readonly reason: string,
    readonly apiKey: number | null = null,
    readonly apiVersion: number | null = null,
  ) {
    super(reason);
    this.name = 'ConnectionClosingError';
  }
}

/** A handler asked for the connection to be closed instead of answering (RequestContext.closeConnection). */
export class CloseRequestedError extends ConnectionClosingError {
  constructor(reason: string, apiKey: number, apiVersion: number) {
    super(reason, apiKey, apiVersion);
    this.name = 'CloseRequestedError';
  }
}

/** A handler or the response encoder threw: a bug, logged at error level, then close. */
export class RequestFailedError extends Error {
  constructor(
    readonly apiKey: number,
    readonly apiVersion: number,
    override readonly cause: unknown,
  ) {
    super(`api key ${apiKey} v${apiVersion} failed: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'RequestFailedError';
  }
}

/** Turns one request frame (without its size prefix) into the response bytes, or null for none. */
export interface FrameProcessor {
  process(session: Session, frame: Buffer): Promise<Buffer[] | null>;
}

export interface ConnectionLimits {
  /** socket.request.max.bytes: a larger size prefix closes the connection before buffering. */
  readonly maxRequestBytes: number;
  /** queued.max.requests, per connection: stop reading while this many requests wait. */
  readonly maxQueuedRequests: number;
  /** connection.max.buffered.bytes: stop reading while queued request bytes + unsent response bytes exceed this. */
  readonly maxBufferedBytes: number;
  /** connections.max.idle.ms */
  readonly idleMs: number;
}

const SIZE_BYTES = 4;
/** A close reason can quote what the client sent (topic names of 32 KB each): logs keep its start. */
const MAX_LOGGED_REASON_CHARS = 1024;
const CLOSE_GRACE_MS = 1000;

export class Connection {
  /** Received bytes not yet cut into frames. */
  /** Bytes read but not yet cut into frames. */
  private readonly pending = new ChunkQueue();
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private processing = false;
  private corked = false;
  private paused = false;
  private closing = false;
  private closed = false;

  constructor(
    readonly session: Session,
    private readonly socket: Socket,
    private readonly processor: FrameProcessor,
    private readonly limits: ConnectionLimits,
    private readonly logger: Logger,
    private readonly onClose: (conn: Connection) => void,
  ) {
    socket.setNoDelay(true);
    if (limits.idleMs > 0) socket.setTimeout(limits.idleMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.updateReading());
    socket.on('timeout', () => this.onIdle());
    socket.on('error', (err) => this.logger.debug({ client: session.clientAddress, err: err.message }, 'connection error'));
    socket.on('close', () => this.finish());
  }

  /** Whether reading is paused by back-pressure (exposed for tests and metrics). */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Bytes held for this connection: queued requests, partial frames and unsent responses. */
  get bufferedBytes(): number {
    return this.queuedBytes + this.pending.length + this.socket.writableLength;
  }

  get queuedRequests(): number {
    return this.queue.length;
  }

  private onData(chunk: Buffer): void {
    if (this.closing) return;
    this.pending.push(chunk);
    while (this.pending.length >= SIZE_BYTES) {
      const size = this.pending.peekInt32();
      if (size < 0 || size > this.limits.maxRequestBytes) {
        this.protocolClose(
          new ConnectionClosingError(
            size < 0 ? `invalid frame size ${size}` : `frame size ${size} exceeds socket.request.max.bytes ${this.limits.maxRequestBytes}`,
          ),
        );
        return;
      }
      if (this.pending.length < SIZE_BYTES + size) break;
      const frame = this.pending.take(SIZE_BYTES + size).subarray(SIZE_BYTES);
      this.queue.push(frame);
      this.queuedBytes += frame.length;
    }
    this.updateReading();
    runGuarded(
      (err) => {
        this.logger.error({ client: this.session.clientAddress, err }, 'closing connection: request processing failed');
        this.socket.destroy();
      },
      'request processing',
      () => this.drainQueue(),
    );
  }

  private async drainQueue(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        // Unsent responses past the bound hold back processing too, not only reading: frames
        // already queued would otherwise turn into unbounded response bytes.
        if (this.socket.writableLength > this.limits.maxBufferedBytes) await this.writableDrained();
        if (this.closed || this.queue.length === 0) break;
        const frame = this.queue.shift()!;
        this.queuedBytes -= frame.length;
        let response: Buffer[] | null;
        try {
          response = await this.processor.process(this.session, frame);
        } catch (err) {
          this.protocolClose(err);
          return;
        }
        if (response !== null && !this.closed) this.write(response);
        this.updateReading();
      }
    } finally {
      this.processing = false;
      if (this.closing && !this.closed) this.socket.end();
    }
  }

  private writableDrained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  /** Writes within one event-loop turn are corked together and leave as one writev. */
  private write(chunks: Buffer[]): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      setImmediate(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    for (const chunk of chunks) this.socket.write(chunk);
  }

  private updateReading(): void {
    if (this.closed) return;
    // A partial frame does not count: it is bounded by maxRequestBytes, and pausing while a
    // frame larger than the bound arrives would never let it complete.
    const over =
      this.queue.length >= this.limits.maxQueuedRequests || this.queuedBytes + this.socket.writableLength > this.limits.maxBufferedBytes;
    if (over && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!over && this.paused && !this.closing) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private onIdle(): void {
    // A request still being answered (a long-poll fetch) is not idleness.
    if (this.processing || this.queue.length > 0) return;
    this.logger.debug({ client: this.session.clientAddress, idleMs: this.limits.idleMs }, 'closing idle connection');
    this.socket.destroy();
  }

  private protocolClose(err: unknown): void {
    if (err instanceof CloseRequestedError) {
      this.logger.info(
        { client: this.session.clientAddress, apiKey: err.apiKey, apiVersion: err.apiVersion, reason: boundedReason(err.reason) },
        'closing connection',
      );
    } else if (err instanceof ConnectionClosingError) {
      this.logger.info(
        { client: this.session.clientAddress, apiKey: err.apiKey, apiVersion: err.apiVersion, reason: boundedReason(err.reason) },
        'closing connection: protocol violation',
      );
    } else if (err instanceof RequestFailedError) {
      this.logger.error(
        { client: this.session.clientAddress, apiKey: err.apiKey, apiVersion: err.apiVersion, err: err.cause },
        'closing connection: request handling failed',
      );
    } else {
      this.logger.error({ client: this.session.clientAddress, err }, 'closing connection: request handling failed');
    }
    this.closing = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    // end() rather than destroy(): responses already written still reach the client; a peer
    // that neither reads nor closes is cut off shortly after.
    this.socket.end();
    this.socket.resume();
    setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /**
   * Graceful close: stop reading, let the request in progress finish and its response go
   * out, drop requests not yet started, then end the socket. Resolves once the socket closed.
   */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closing = true;
    this.socket.pause();
    this.queue.length = 0;
    this.queuedBytes = 0;
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      if (!this.processing) this.socket.end();
    });
  }

  destroy(): void {
    this.socket.destroy();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.pending.clear();
    this.onClose(this);
  }
}

function boundedReason(reason: string): string {
  if (reason.length <= MAX_LOGGED_REASON_CHARS) return reason;
  return `${reason.slice(0, MAX_LOGGED_REASON_CHARS)}... (${reason.length - MAX_LOGGED_REASON_CHARS} more characters)`;
}
