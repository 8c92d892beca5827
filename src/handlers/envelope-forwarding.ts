/**
 * The forwarding broker's side of KIP-590, as Kafka's ForwardingManager: a client's admin
 * request goes to the active controller inside an EnvelopeRequest carrying the client's
 * principal (the principal serde's bytes) and IP address, with the client's own request header,
 * so that the controller authorizes it and charges its quotas as that client's. The broker
 * authorizes nothing itself: its metadata image may lag the controller's.
 *
 * The envelope's answer: the inner response, read with the client's header; REQUEST_TIMED_OUT
 * (no controller answered in time) as the request's error response; UNSUPPORTED_VERSION (the
 * controller does not serve the client's version) closes the client's connection, so that it
 * negotiates versions again; any other envelope error is the broker's own misconfiguration and
 * answers UNKNOWN_SERVER_ERROR. The client is held back for the throttle time the controller
 * answered, as Kafka's sendForwardedResponse does.
 */
import { errorResponseFor } from '../../protocol/error-response.ts';
import { Errors } from '../../protocol/errors.ts';
import { decodeResponseHeader, encodeRequestHeader } from '../../protocol/headers.ts';
import { makeEnvelopeRequest } from '../../protocol/messages/envelope.ts';
import { ApiKey, apis, type ApiRequest, type ApiResponse } from '../../protocol/messages/index.ts';
import { DecodeError, Reader, Writer } from '../../protocol/primitives.ts';
import type { ControllerChannel, ForwardedApiKey } from '../metadata/controller-channel.ts';
import { parsePrincipal, serializePrincipal } from '../security/principal-serde.ts';
import { hostOfClientAddress, ipAddressBytes } from '../server/inet-address.ts';
import type { RequestContext } from '../server/session.ts';

const ENVELOPE_VERSION = 0;
/** A peer known by a name rather than an IP address (an in-memory network's) travels as the unspecified address. */
const UNSPECIFIED_ADDRESS = Buffer.alloc(4);

/** `channel` with every request sent as `ctx`'s client's, in an envelope. */
export function forwardingFor(channel: Pick<ControllerChannel, 'send'>, ctx: RequestContext): Pick<ControllerChannel, 'send'> {
  return {
    send: (apiKey, request, version, timeoutMs) => forwardInEnvelope(channel, ctx, apiKey, request, version, timeoutMs),
  };
}

async function forwardInEnvelope<K extends ForwardedApiKey>(
  channel: Pick<ControllerChannel, 'send'>,
  ctx: RequestContext,
  apiKey: K,
  request: ApiRequest<K>,
  version: number,
  timeoutMs: number,
): Promise<ApiResponse<K>> {
  const w = new Writer();
  encodeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId: ctx.correlationId, clientId: ctx.clientId });
  apis.get(apiKey)!.encodeRequest(w, request, version);
  const envelope = makeEnvelopeRequest({
    requestData: w.toBuffer(),
    requestPrincipal: serializePrincipal(parsePrincipal(ctx.session.principal)),
    clientHostAddress: ipAddressBytes(hostOfClientAddress(ctx.session.clientAddress)) ?? UNSPECIFIED_ADDRESS,
  });
  const answer = await channel.send(ApiKey.Envelope, envelope, ENVELOPE_VERSION, timeoutMs);
  const failed = (code: number, message: string | null) => errorResponseFor(apiKey, version, request, code, message) as ApiResponse<K>;
  if (answer.errorCode === Errors.UNSUPPORTED_VERSION.code) {
    ctx.closeConnection(`the active controller does not serve ${apis.get(apiKey)!.name} v${version}`);
    return failed(Errors.UNSUPPORTED_VERSION.code, null);
  }
  if (answer.errorCode === Errors.REQUEST_TIMED_OUT.code) return failed(Errors.REQUEST_TIMED_OUT.code, null);
  if (answer.errorCode !== Errors.NONE.code || answer.responseData === null) {
    const error = Errors.UNKNOWN_SERVER_ERROR;
    return failed(error.code, `The controller refused the forwarded request's envelope (error code ${answer.errorCode}).`);
  }
  const response = readResponse<K>(apiKey, version, ctx.correlationId, answer.responseData);
  if (response === null) return failed(Errors.UNKNOWN_SERVER_ERROR.code, 'The controller answered a response that does not parse.');
  const throttleTimeMs = (response as { throttleTimeMs?: number }).throttleTimeMs;
  if (typeof throttleTimeMs === 'number' && throttleTimeMs > 0) ctx.throttle(throttleTimeMs);
  return response;
}

function readResponse<K extends ForwardedApiKey>(apiKey: K, version: number, correlationId: number, data: Buffer): ApiResponse<K> | null {
  try {
    const r = new Reader(data);
    if (decodeResponseHeader(r, apiKey, version) !== correlationId) return null;
    return apis.get(apiKey)!.decodeResponse(r, version) as ApiResponse<K>;
  } catch (err) {
    if (err instanceof DecodeError || err instanceof RangeError) return null;
    throw err;
  }
}
