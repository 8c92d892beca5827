// Request and response headers. The header version follows the API version: request
// header v2 / response header v1 exactly when the API version is flexible, with two
// exceptions Kafka keeps for old clients: ControlledShutdown v0 has no client id (header
// v0), and ApiVersions responses always use header v0 so a client that does not yet know
// the broker's versions can read the error.
import { DecodeError, type Reader } from './primitives.ts';
import type { Writer } from './primitives.ts';
import { ApiKey, apis } from './messages/index.ts';
import {
  decodeRequestHeader as decodeRequestHeaderMessage,
  encodeRequestHeader as encodeRequestHeaderMessage,
} from './messages/request-header.ts';
import {
  decodeResponseHeader as decodeResponseHeaderMessage,
  encodeResponseHeader as encodeResponseHeaderMessage,
} from './messages/response-header.ts';

export interface RequestHeader {
  requestApiKey: number;
  requestApiVersion: number;
  correlationId: number;
  /** Null in header v0 (no client id on the wire) or when the client sent a null string. */
  clientId: string | null;
  /** The header version the request was read with (0, 1 or 2). */
  headerVersion: number;
}

/**
 * The request header version for an API version. Versions above the API's newest still
 * follow its flexibleVersions ("N+"), so a newer client's header still parses and can be
 * answered with UNSUPPORTED_VERSION. Unknown API keys are read as header v1.
 */
export function requestHeaderVersion(apiKey: number, apiVersion: number): number {
  if (apiKey === ApiKey.ControlledShutdown && apiVersion === 0) return 0;
  const api = apis.get(apiKey);
  if (!api) return 1;
  return api.flexibleMinVersion >= 0 && apiVersion >= api.flexibleMinVersion ? 2 : 1;
}

export function responseHeaderVersion(apiKey: number, apiVersion: number): number {
  if (apiKey === ApiKey.ApiVersions) return 0;
  const api = apis.get(apiKey);
  if (!api) return 0;
  return api.flexibleMinVersion >= 0 && apiVersion >= api.flexibleMinVersion ? 1 : 0;
}

export function decodeRequestHeader(r: Reader): RequestHeader {
  if (r.remaining() < 4) throw new DecodeError(`request header: ${r.remaining()} bytes`);
  const apiKey = r.buf.readInt16BE(r.offset);
  const apiVersion = r.buf.readInt16BE(r.offset + 2);
  const headerVersion = requestHeaderVersion(apiKey, apiVersion);
  const h = decodeRequestHeaderMessage(r, headerVersion);
  return {
    requestApiKey: h.requestApiKey,
    requestApiVersion: h.requestApiVersion,
    correlationId: h.correlationId,
    clientId: headerVersion === 0 ? null : h.clientId,
    headerVersion,
  };
}

/** Writes a request header (for our own clients: Raft, replication fetchers, tests). */
export function encodeRequestHeader(
  w: Writer,
  header: { requestApiKey: number; requestApiVersion: number; correlationId: number; clientId: string | null },
): void {
  const headerVersion = requestHeaderVersion(header.requestApiKey, header.requestApiVersion);
  encodeRequestHeaderMessage(
    w,
    {
      requestApiKey: header.requestApiKey,
      requestApiVersion: header.requestApiVersion,
      correlationId: header.correlationId,
      clientId: headerVersion === 0 ? '' : header.clientId,
    },
    headerVersion,
  );
}

export function encodeResponseHeader(w: Writer, correlationId: number, apiKey: number, apiVersion: number): void {
  encodeResponseHeaderMessage(w, { correlationId }, responseHeaderVersion(apiKey, apiVersion));
}

/** Reads a response header; returns the correlation id. */
export function decodeResponseHeader(r: Reader, apiKey: number, apiVersion: number): number {
  return decodeResponseHeaderMessage(r, responseHeaderVersion(apiKey, apiVersion)).correlationId;
}
