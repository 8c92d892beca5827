/**
 * One client connection: 4-byte size framing, strictly ordered processing of pipelined
 * requests, corked response writes, back-pressure (per connection, and broker-wide through the
 * request memory pool) and idle expiry.
 */
import { KafkaError } from '../../protocol/errors.ts';
import type { Logger } from '../observability/logger.ts';
import type { ReadBufferLease, ReadBufferPool } from '../../storage/read-buffers.ts';
import { ChunkQueue } from './chunk-queue.ts';
import type { RequestMemoryPool } from './memory-pool.ts';
import type { Session } from './session.ts';
import { guarded, runGuarded } from '../runtime/guard.ts';
import { systemClock, type Clock, yieldToEventLoop } from '../runtime/clock.ts';
import type { NetSocket } from '../runtime/network.ts';

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

/** A response's bytes, as chunks for one writev. */
export interface ResponseFrame {
  readonly chunks: Buffer[];
  /** Called once the socket no longer holds the chunks (written, or dropped unsent). */
  readonly done?: () => void;
  /** Close the connection once this response is written, for this reason. */
  readonly closeAfter?: { reason: string; apiKey: number; apiVersion: number };
  /**
   * A quota's throttle time: the connection is neither read nor served for this long after
   * the response is written (Kafka mutes the channel; clients of KIP-219 versions also wait
   * on their side). A frame without chunks only mutes (an acks=0 produce has no response).
   */
  readonly throttleMs?: number;
}

/** Turns one request frame (without its size prefix) into the response, or null for none. */
export interface FrameProcessor {
  /**
   * `frameLease` holds the buffer the frame was assembled in when it came from
   * `frameBuffers`: the processor releases it once nothing refers to the request's bytes.
   */
  process(session: Session, frame: Buffer, frameLease: ReadBufferLease | null): Promise<ResponseFrame | null>;
  /**
   * Where frames that span socket reads are assembled: a produce stream of hundreds of MB/s
   * would otherwise allocate a fresh buffer per request, and V8 answers that much memory
   * outside its heap with full collections, whether the heap grew or not.
   */
  readonly frameBuffers?: ReadBufferPool;
}

/** A frame read and not yet processed. */
interface QueuedFrame {
  readonly frame: Buffer;
  readonly lease: ReadBufferLease | null;
}

export interface ConnectionLimits {
  /** socket.request.max.bytes: a larger size prefix closes the connection before buffering. */
  readonly maxRequestBytes: number;
  /** sasl.server.max.receive.size: the bound before a SASL client authenticated; maxRequestBytes when absent. */
  readonly maxUnauthenticatedRequestBytes?: number;
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
  /** Bytes read but not yet cut into frames. */
  private readonly pending = new ChunkQueue();
  /** Frames read and not yet processed; each holds its length in the memory pool. */
  private readonly queue: QueuedFrame[] = [];
  private queuedBytes = 0;
  /** Bytes reserved in the pool for the frame whose size prefix is at the front of `pending`, or null. */
  private partialFrameBytes: number | null = null;
  /** Cancels the wait for pool memory while reading is held back by it, else null. */
  private cancelMemoryWait: (() => void) | null = null;
  private processing = false;
  /** Muted by a quota's throttle time (ResponseFrame.throttleMs). */
  private throttled = false;
  private corked = false;
  private paused = false;
  private closing = false;
  private closed = false;

  constructor(
    readonly session: Session,
    private readonly socket: NetSocket,
    private readonly processor: FrameProcessor,
    private readonly limits: ConnectionLimits,
    private readonly memory: RequestMemoryPool,
    private readonly logger: Logger,
    private readonly onClose: (conn: Connection) => void,
    private readonly clock: Clock = systemClock,
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

  /** Whether reading is held back because the broker-wide request memory pool is exhausted. */
  get isWaitingForMemory(): boolean {
    return this.cancelMemoryWait !== null;
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
    this.cutFrames();
  }

  /**
   * Cuts complete frames out of `pending` into the queue. A frame's size is reserved in the
   * memory pool as soon as its size prefix is read, as Kafka's NetworkReceive allocates its
   * buffer; when the pool refuses, cutting stops and the socket is not read until memory is
   * released (the bytes already read stay in `pending`: at most one socket read).
   */
  private cutFrames(): void {
    if (this.closing || this.cancelMemoryWait !== null) return;
    while (this.pending.length >= SIZE_BYTES) {
      const frameBytes = this.pending.peekInt32();
      const [maxBytes, boundName] = this.session.authenticated
        ? [this.limits.maxRequestBytes, 'socket.request.max.bytes']
        : [this.limits.maxUnauthenticatedRequestBytes ?? this.limits.maxRequestBytes, 'sasl.server.max.receive.size'];
      if (frameBytes < 0 || frameBytes > maxBytes) {
        this.protocolClose(
          new ConnectionClosingError(
            frameBytes < 0 ? `invalid frame size ${frameBytes}` : `frame size ${frameBytes} exceeds ${boundName} ${maxBytes}`,
          ),
        );
        return;
      }
      if (this.partialFrameBytes === null) {
        if (!this.memory.tryReserve(frameBytes)) {
          this.waitForMemory();
          break;
        }
        this.partialFrameBytes = frameBytes;
      }
      if (this.pending.length < SIZE_BYTES + frameBytes) break;
      const pool = this.processor.frameBuffers;
      const lease = pool !== undefined && this.pending.spans(SIZE_BYTES + frameBytes) ? pool.lease() : null;
      const whole =
        lease === null ? this.pending.take(SIZE_BYTES + frameBytes) : this.pending.take(SIZE_BYTES + frameBytes, (n) => lease.take(n));
      const frame = whole.subarray(SIZE_BYTES);
      this.partialFrameBytes = null;
      this.queue.push({ frame, lease });
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

  private waitForMemory(): void {
    this.cancelMemoryWait = this.memory.whenAvailable(
      guarded(
        (err) => {
          this.logger.error({ client: this.session.clientAddress, err }, 'closing connection: resuming after memory pressure failed');
          this.socket.destroy();
        },
        'resuming after memory pressure',
        () => {
          this.cancelMemoryWait = null;
          this.cutFrames();
        },
      ),
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
        if (this.closed) break;
        const next = this.queue.shift();
        if (next === undefined) break;
        const { frame, lease } = next;
        this.queuedBytes -= frame.length;
        let response: ResponseFrame | null;
        try {
          response = await this.processor.process(this.session, frame, lease);
        } catch (err) {
          this.memory.release(frame.length);
          this.protocolClose(err);
          return;
        }
        if (response !== null) {
          if (this.closed) response.done?.();
          else this.write(response);
          const after = response.closeAfter;
          if (after !== undefined) {
            this.memory.release(frame.length);
            this.protocolClose(new CloseRequestedError(after.reason, after.apiKey, after.apiVersion));
            return;
          }
        }
        // Done: the response is the socket's now (bounded per connection by
        // connection.max.buffered.bytes); the request's bytes go back to the pool.
        this.memory.release(frame.length);
        if ((response?.throttleMs ?? 0) > 0) await this.mute(response!.throttleMs!);
        this.updateReading();
        // A request whose work never waits on I/O (an append written in place, an answer
        // already in the log) completes within microtasks, so without this a connection
        // pipelining such requests would serve its whole queue before the event loop reads
        // any other socket. Kafka serves one request per connection at a time from a shared
        // queue; one request per connection per turn gives every connection its turn.
        if (this.queue.length > 0) await yieldToEventLoop(this.clock);
      }
    } finally {
      this.processing = false;
      if (this.closing && !this.closed) this.socket.end();
    }
  }

  /** Neither reads nor serves the connection for `ms`, or until it closes. */
  private mute(ms: number): Promise<void> {
    this.throttled = true;
    this.updateReading();
    return new Promise((resolve) => {
      const done = (): void => {
        this.clock.clearTimeout(timer);
        this.socket.off('close', done);
        this.throttled = false;
        resolve();
      };
      const timer = this.clock.setTimeout(done, ms);
      this.socket.on('close', done);
    });
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
  private write(response: ResponseFrame): void {
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      this.clock.setImmediate(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    const { chunks, done } = response;
    const last = chunks.length - 1;
    // Writes complete in order: the last chunk's callback comes after every earlier chunk's.
    for (let i = 0; i < last; i++) this.socket.write(chunks[i]!);
    if (last >= 0) this.socket.write(chunks[last]!, done);
    else done?.();
  }

  private updateReading(): void {
    if (this.closed) return;
    // A partial frame does not count: it is bounded by maxRequestBytes, and pausing while a
    // frame larger than the bound arrives would never let it complete.
    const over =
      this.throttled ||
      this.cancelMemoryWait !== null ||
      this.queue.length >= this.limits.maxQueuedRequests ||
      this.queuedBytes + this.socket.writableLength > this.limits.maxBufferedBytes;
    if (over && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!over && this.paused && !this.closing) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private onIdle(): void {
    // A request still being answered (a long-poll fetch), or one the broker holds back for
    // memory, is not idleness.
    if (this.processing || this.queue.length > 0 || this.cancelMemoryWait !== null) return;
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
    } else if (err instanceof RequestFailedError && err.cause instanceof KafkaError) {
      // A refused request that gets no response (Produce with acks=0): closing the connection
      // is how Kafka tells the client, and it logs that at info level too.
      this.logger.info(
        {
          client: this.session.clientAddress,
          apiKey: err.apiKey,
          apiVersion: err.apiVersion,
          error: err.cause.error.name,
          reason: boundedReason(err.cause.message),
        },
        'closing connection: a request without a response was refused',
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
    this.dropUnprocessed();
    // end() rather than destroy(): responses already written still reach the client; a peer
    // that neither reads nor closes is cut off shortly after.
    this.socket.end();
    this.socket.resume();
    const cutOff = this.clock.setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS);
    this.socket.once('close', () => this.clock.clearTimeout(cutOff));
  }

  /**
   * Graceful close: stop reading, let the request in progress finish and its response go
   * out, drop requests not yet started, then end the socket. Resolves once the socket closed.
   */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closing = true;
    this.socket.pause();
    this.dropUnprocessed();
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
    this.dropUnprocessed();
    this.pending.clear();
    this.onClose(this);
  }

  /**
   * Drops the requests not yet started (and the partial frame) and returns their memory to the
   * pool; the request in progress returns its own when it is done.
   */
  private dropUnprocessed(): void {
    for (const { frame } of this.queue) this.memory.release(frame.length);
    this.queue.length = 0;
    this.queuedBytes = 0;
    if (this.partialFrameBytes !== null) this.memory.release(this.partialFrameBytes);
    this.partialFrameBytes = null;
    this.cancelMemoryWait?.();
    this.cancelMemoryWait = null;
  }
}

function boundedReason(reason: string): string {
  if (reason.length <= MAX_LOGGED_REASON_CHARS) return reason;
  return `${reason.slice(0, MAX_LOGGED_REASON_CHARS)}... (${reason.length - MAX_LOGGED_REASON_CHARS} more characters)`;
}
