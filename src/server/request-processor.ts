/**
 * Frame -> header -> typed request -> handler -> typed response -> frame.
 *
 * Kafka's rules at the connection level: an unknown api key, a version outside what we
 * serve, or bytes that do not decode close the connection (after one log line), except
 * ApiVersions, whose unsupported versions are answered at v0 with UNSUPPORTED_VERSION and our
 * ranges so the client can retry lower (KIP-511).
 *
 * A request that decoded but could not be served (the handler threw, or its response did not
 * encode) is answered as Kafka's KafkaApis.handleError does: the request's error response,
 * with the KafkaError's code when the handler refused the request (INVALID_REQUEST, ...) and
 * UNKNOWN_SERVER_ERROR for anything else, which is a bug and logged with its stack. Only an
 * acks=0 Produce, which has no response to carry the error, closes the connection.
 */
import { DecodeError, Reader, Writer, type ChunkMemory } from '../../protocol/primitives.ts';
import { encodeFitting } from '../../protocol/error-messages.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { Errors, KafkaError } from '../../protocol/errors.ts';
import { errorResponseFor } from '../../protocol/error-response.ts';
import { decodeRequestHeader, encodeResponseHeader } from '../../protocol/headers.ts';
import type { HandlerRegistry } from '../handlers/registry.ts';
import { unsupportedApiVersionsResponse } from '../handlers/api-versions.ts';
import type { Logger } from '../observability/logger.ts';
import type { RequestObserver } from '../observability/metrics.ts';
import { ReadBufferPool, type ReadBufferLease } from '../../storage/read-buffers.ts';
import { CloseRequestedError, ConnectionClosingError, RequestFailedError, type FrameProcessor, type ResponseFrame } from './connection.ts';
import type { QuotaManagers } from './quota-managers.ts';
import type { RequestContext, Session } from './session.ts';

/** api key (int16) + api version (int16) + correlation id (int32): readable in every header version. */
const FIXED_HEADER_BYTES = 8;

/** What a SASL client may send before it authenticated (Kafka's SaslServerAuthenticator). */
const BEFORE_AUTHENTICATION: ReadonlySet<number> = new Set([ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate]);

/** A handler's request to close the connection once its answer is written. */
type CloseAfter = NonNullable<ResponseFrame['closeAfter']>;

/** What a handler asked of the connection beyond its answer. */
interface AfterResponse {
  close: CloseAfter | null;
  throttleMs: number;
}

/**
 * Idle buffers kept for reuse (storage/read-buffers.ts), for fetch reads, for the request
 * frames assembled across socket reads and for the responses encoded: a few fetches' and
 * produce requests' worth.
 */
const POOLED_BUFFERS_RETAINED_BYTES = 64 * 1024 * 1024;

export class RequestProcessor implements FrameProcessor {
  constructor(
    private readonly registry: HandlerRegistry,
    private readonly logger: Logger,
    /** Told of every request answered, with its response (metrics). */
    private readonly observer: RequestObserver | null = null,
    private readonly buffers = new ReadBufferPool(POOLED_BUFFERS_RETAINED_BYTES),
    /** Client quotas; null charges nothing. */
    private readonly quotas: QuotaManagers | null = null,
  ) {}

  get frameBuffers(): ReadBufferPool {
    return this.buffers;
  }

  async process(session: Session, frame: Buffer, frameLease: ReadBufferLease | null): Promise<ResponseFrame | null> {
    const chunks = await this.respondWithReadBuffers(session, frame);
    // A produce keeps nothing of its request once answered: the records were written to the
    // log and every answer is numbers and strings. Other requests may (a group's member
    // metadata is a slice of its JoinGroup), so their frames are left to the collector.
    if (frameLease !== null && frame.readInt16BE(0) === ApiKey.Produce) frameLease.release();
    return chunks;
  }

  private async respondWithReadBuffers(session: Session, frame: Buffer): Promise<ResponseFrame | null> {
    if (session.sasl?.expectsBareToken) return bareSaslToken(session, frame);
    const buffers = this.buffers.lease();
    const after: AfterResponse = { close: null, throttleMs: 0 };
    try {
      const chunks = await this.respond(session, frame, buffers, after);
      if (chunks === null) {
        buffers.release();
        return after.throttleMs > 0 ? { chunks: [], throttleMs: after.throttleMs } : null;
      }
      const done = () => buffers.release();
      const throttle = after.throttleMs > 0 ? { throttleMs: after.throttleMs } : {};
      return after.close === null ? { chunks, done, ...throttle } : { chunks, done, closeAfter: after.close, ...throttle };
    } catch (err) {
      buffers.release();
      throw err;
    }
  }

  private async respond(session: Session, frame: Buffer, readBuffers: ReadBufferLease, after: AfterResponse): Promise<Buffer[] | null> {
    if (frame.length < FIXED_HEADER_BYTES) throw new ConnectionClosingError(`truncated request header (${frame.length} bytes)`);
    const apiKey = frame.readInt16BE(0);
    const apiVersion = frame.readInt16BE(2);
    const correlationId = frame.readInt32BE(4);
    if (!session.authenticated && !BEFORE_AUTHENTICATION.has(apiKey)) {
      throw new ConnectionClosingError(
        `unexpected Kafka request of type ${apis.get(apiKey)?.name ?? apiKey} during SASL authentication`,
        apiKey,
        apiVersion,
      );
    }
    if (session.sasl?.expired() && apiKey !== ApiKey.SaslHandshake) {
      throw new ConnectionClosingError('the SASL session expired and the client did not re-authenticate', apiKey, apiVersion);
    }
    const api = this.registry.lookup(apiKey, session.listenerRole);
    if (api === undefined) throw new ConnectionClosingError('unknown or unsupported api key', apiKey, apiVersion);
    if (apiVersion < api.minVersion || apiVersion > api.maxVersion) {
      if (apiKey === ApiKey.ApiVersions && apiVersion > api.maxVersion) {
        return frameResponse(correlationId, apiKey, 0, unsupportedApiVersionsResponse(this.registry, session.listenerRole));
      }
      throw new ConnectionClosingError(`unsupported version (served ${api.minVersion}..${api.maxVersion})`, apiKey, apiVersion);
    }
    const descriptor = apis.get(apiKey);
    if (descriptor === undefined) throw new ConnectionClosingError('api key not in the codec', apiKey, apiVersion);
    const startedAtMs = performance.now();
    const reader = new Reader(frame);
    let ctx: RequestContext;
    let request: unknown;
    let closeReason: string | null = null;
    try {
      const header = decodeRequestHeader(reader);
      request = descriptor.decodeRequest(reader, apiVersion);
      ctx = {
        session,
        header,
        apiKey,
        apiVersion,
        correlationId,
        clientId: header.clientId ?? null,
        closeConnection: (reason) => {
          closeReason = reason;
        },
        closeAfterResponse: (reason) => {
          after.close = { reason, apiKey, apiVersion };
        },
        requestBytes: frame.length,
        throttle: (throttleTimeMs) => {
          after.throttleMs = Math.max(after.throttleMs, throttleTimeMs);
        },
        readBuffers,
      };
    } catch (err) {
      if (err instanceof DecodeError || err instanceof RangeError) {
        throw new ConnectionClosingError(`malformed request: ${err.message}`, apiKey, apiVersion);
      }
      throw err;
    }
    try {
      const pending = api.handler(ctx, request, apiVersion);
      // The time the request held the event loop: decoding and the handler up to its first
      // wait. Kafka charges a request's handler-thread time, not the time it waits (a fetch's
      // long poll, a produce's replication). Read only while some request quota exists.
      const timed = this.quotas?.request.enabled === true;
      const handlingMs = timed ? performance.now() - startedAtMs : 0;
      const response = await pending;
      if (closeReason !== null) throw new CloseRequestedError(closeReason, apiKey, apiVersion);
      if (this.quotas !== null) ctx.throttle(this.quotas.charge(ctx, request, handlingMs));
      if (after.throttleMs > 0 && response !== null) withThrottleTime(response, after.throttleMs);
      const encodingStartedAtMs = timed ? performance.now() : 0;
      const frame = response === null ? null : frameResponse(correlationId, apiKey, apiVersion, response, readBuffers);
      if (timed) this.quotas!.chargeResponseTime(ctx, request, performance.now() - encodingStartedAtMs);
      this.observer?.completed(apiKey, startedAtMs, response);
      return frame;
    } catch (err) {
      if (err instanceof ConnectionClosingError) throw err;
      return this.errorResponse(session, correlationId, apiKey, apiVersion, request, err, startedAtMs);
    }
  }

  private errorResponse(
    session: Session,
    correlationId: number,
    apiKey: number,
    apiVersion: number,
    request: unknown,
    err: unknown,
    startedAtMs: number,
  ): Buffer[] {
    const refused = err instanceof KafkaError;
    const error = refused ? err.error : Errors.UNKNOWN_SERVER_ERROR;
    const context = { client: session.clientAddress, apiKey, apiVersion, error: error.name };
    if (refused) this.logger.info({ ...context, reason: err.message }, 'request refused');
    else this.logger.error({ ...context, err }, 'request handling failed');
    if (apiKey === ApiKey.Produce && (request as { acks?: number }).acks === 0) {
      this.observer?.completed(apiKey, startedAtMs, { errorCode: error.code });
      throw new RequestFailedError(apiKey, apiVersion, err);
    }
    try {
      const body = errorResponseFor(apiKey, apiVersion, request, error.code, refused ? err.message : null);
      const frame = frameResponse(correlationId, apiKey, apiVersion, body);
      this.observer?.completed(apiKey, startedAtMs, body);
      return frame;
    } catch (encodeErr) {
      throw new RequestFailedError(apiKey, apiVersion, encodeErr);
    }
  }
}

/** Sets a response's throttle_time_ms (every response of a throttled API has one) to at least `throttleMs`. */
function withThrottleTime(response: unknown, throttleMs: number): void {
  const body = response as { throttleTimeMs?: number };
  if (typeof body.throttleTimeMs === 'number') body.throttleTimeMs = Math.max(body.throttleTimeMs, throttleMs);
}

/**
 * One bare token of the legacy SASL exchange (after SaslHandshake v0): the answer is the
 * server's token behind its size, with no response header; a refusal closes the connection
 * unanswered, as Kafka does for these clients.
 */
async function bareSaslToken(session: Session, frame: Buffer): Promise<ResponseFrame> {
  const sasl = session.sasl!;
  const result = await sasl.authenticate(frame);
  if (result.closeReason !== null) throw new ConnectionClosingError(result.closeReason);
  if (sasl.current === 'complete') {
    session.principal = `User:${sasl.user}`;
    session.authenticated = true;
  }
  const size = Buffer.allocUnsafe(4);
  size.writeInt32BE(result.authBytes.length);
  return { chunks: [size, result.authBytes] };
}

/**
 * Encodes `body` with its response header behind a 4-byte size, as chunks for writev, in
 * memory from `chunkMemory` when given (the response's lease, released once it is sent). An
 * error message quoting a request's value past what a string holds is cut to fit.
 */
export function frameResponse(
  correlationId: number,
  apiKey: number,
  apiVersion: number,
  body: unknown,
  chunkMemory: ChunkMemory | null = null,
): Buffer[] {
  const descriptor = apis.get(apiKey);
  if (descriptor === undefined) throw new Error(`api key ${apiKey} is not in the codec`);
  return encodeFitting(body, () => {
    const w = new Writer(undefined, chunkMemory);
    const setSize = w.reserveInt32();
    encodeResponseHeader(w, correlationId, apiKey, apiVersion);
    descriptor.encodeResponse(w, body, apiVersion);
    setSize(w.length - 4);
    return w.toChunks();
  });
}
