/**
 * What the network server hands a handler with each request: the connection's Session, shared
 * by all its requests, and the RequestContext of the one request. Handlers reach the broker's
 * components through the services they were registered with (src/handlers/index.ts), never
 * through the context.
 */
import type { RequestHeader } from '../../protocol/headers.ts';
import type { ReadBufferSource } from '../../storage/read-buffers.ts';
import type { SaslSession } from './sasl-session.ts';

/** 'controller' for listeners named in controller.listener.names, else 'broker'. */
export type ListenerRole = 'broker' | 'controller';

/**
 * Connection-level state, one object per accepted connection, shared by all its requests.
 * Mutable fields are set by the handlers that negotiate them (ApiVersions v3+ the client
 * software, SASL the principal).
 */
export interface Session {
  /** Unique per accepted connection within this process. */
  readonly connectionId: number;
  /** `host:port` of the peer. */
  readonly clientAddress: string;
  /** Listener name as in `listeners` (PLAINTEXT, CONTROLLER, ...). */
  readonly listenerName: string;
  /** Security protocol of that listener (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL). */
  readonly securityProtocol: string;
  readonly listenerRole: ListenerRole;
  /** Kafka principal string; `User:ANONYMOUS` until authenticated. */
  principal: string;
  /**
   * False on a SASL listener until the client authenticated: until then only ApiVersions and
   * the SASL exchange are served, as Kafka's SaslServerAuthenticator allows.
   */
  authenticated: boolean;
  /** The SASL exchange of a SASL_PLAINTEXT or SASL_SSL connection; null on other listeners. */
  readonly sasl: SaslSession | null;
  /** From ApiVersions v3+ (KIP-511); null until the client sent it. */
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
}

export interface RequestContext {
  readonly session: Session;
  readonly header: RequestHeader;
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly clientId: string | null;
  /**
   * Closes the connection instead of answering this request, as Kafka's
   * RequestChannel.closeConnection does (an acks=0 Produce that failed: the client learns of
   * the error only by reconnecting and refreshing metadata). Requests behind it are dropped.
   */
  closeConnection(reason: string): void;
  /** Answers this request, then closes the connection (a failed SASL authentication, as Kafka closes after its answer). */
  closeAfterResponse(reason: string): void;
  /** The size of the request frame, without its size prefix (what a produce is charged against producer_byte_rate). */
  readonly requestBytes: number;
  /**
   * Holds the connection back for this long after the response (a byte-rate quota the request
   * went over): the response carries the longest throttle time asked for, and the connection
   * is not read until it has passed, as Kafka mutes a throttled channel.
   */
  throttle(throttleTimeMs: number): void;
  /**
   * Buffers for the log reads whose bytes the response carries (Fetch): they are reused once
   * the response has been written, so nothing may keep a slice of them past the response.
   */
  readonly readBuffers: ReadBufferSource;
}
