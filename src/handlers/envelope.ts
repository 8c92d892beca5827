/**
 * EnvelopeRequest on controller listeners (KIP-590), as Kafka's ControllerApis.handleEnvelopeRequest
 * and EnvelopeUtils serve it: a broker forwards a client's admin request wrapped with the
 * client's principal and address, and the controller serves the inner request as that client's,
 * authorizing it against its own, current ACLs and charging it to that client's quotas. The
 * inner request is read with its own header; its response, with its own header, is the
 * envelope's response data.
 *
 * The sender needs CLUSTER_ACTION on the cluster (the Envelope's authorization policy). A
 * principal that does not deserialize is answered PRINCIPAL_DESERIALIZATION_FAILURE; an
 * address that is no IP address, an inner request that does not parse or an API Kafka does not
 * forward, INVALID_REQUEST; an inner version the controller does not serve, UNSUPPORTED_VERSION
 * (the forwarding broker then closes its client's connection so that it negotiates again). An
 * inner response that says NOT_CONTROLLER becomes the envelope's NOT_CONTROLLER, so the broker
 * looks for the active controller.
 */
import { errorResponseFor } from '../../protocol/error-response.ts';
import { Errors, KafkaError, type KafkaErrorCode } from '../../protocol/errors.ts';
import { decodeRequestHeader, encodeResponseHeader, type RequestHeader } from '../../protocol/headers.ts';
import { makeEnvelopeResponse, type EnvelopeRequest, type EnvelopeResponse } from '../../protocol/messages/envelope.ts';
import { ApiKey, apis } from '../../protocol/messages/index.ts';
import { DecodeError, Reader, Writer } from '../../protocol/primitives.ts';
import { encodeFitting } from '../../protocol/error-messages.ts';
import { answersNotController, type ForwardedApiKey } from '../metadata/controller-channel.ts';
import type { Logger } from '../observability/logger.ts';
import { PrincipalSerdeError, deserializePrincipal, principalString } from '../security/principal-serde.ts';
import { hostOfClientAddress, ipAddressString } from '../server/inet-address.ts';
import type { RequestContext, Session } from '../server/session.ts';
import type { HandlerRegistry } from './registry.ts';

/** The APIs Kafka's ApiKeys marks forwardable that this controller serves. */
export const FORWARDABLE_APIS: ReadonlySet<number> = new Set<ForwardedApiKey>([
  ApiKey.CreateTopics,
  ApiKey.DeleteTopics,
  ApiKey.CreatePartitions,
  ApiKey.AlterConfigs,
  ApiKey.IncrementalAlterConfigs,
  ApiKey.ElectLeaders,
  ApiKey.AlterPartitionReassignments,
  ApiKey.ListPartitionReassignments,
  ApiKey.AlterUserScramCredentials,
  ApiKey.AlterClientQuotas,
  ApiKey.CreateAcls,
  ApiKey.DeleteAcls,
]);

export interface EnvelopeServices {
  /** The controller listeners' registrations: the inner request is served as if it came to one. */
  readonly registry: Pick<HandlerRegistry, 'lookup'>;
  readonly logger: Logger;
}

class EnvelopeError extends Error {
  constructor(
    readonly error: KafkaErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export async function handleEnvelope(services: EnvelopeServices, ctx: RequestContext, request: EnvelopeRequest): Promise<EnvelopeResponse> {
  let inner: { context: RequestContext; request: unknown };
  try {
    inner = forwardedRequest(services, ctx, request);
  } catch (err) {
    if (!(err instanceof EnvelopeError)) throw err;
    services.logger.info(
      { client: ctx.session.clientAddress, principal: ctx.session.principal, error: err.error.name, reason: err.message },
      'envelope refused',
    );
    return makeEnvelopeResponse({ errorCode: err.error.code });
  }
  const { context } = inner;
  const response = await serveForwarded(services, context, inner.request);
  if (answersNotController(context.apiKey as ForwardedApiKey, response as never)) {
    return makeEnvelopeResponse({ errorCode: Errors.NOT_CONTROLLER.code });
  }
  // An error message quoting a long request value (a 32 KiB topic name) is cut to fit.
  const responseData = encodeFitting(response, () => {
    const w = new Writer();
    encodeResponseHeader(w, context.correlationId, context.apiKey, context.apiVersion);
    apis.get(context.apiKey)!.encodeResponse(w, response, context.apiVersion);
    return w.toBuffer();
  });
  return makeEnvelopeResponse({ responseData, errorCode: Errors.NONE.code });
}

/** The inner request and its context: the client's principal and address on the envelope's connection. */
function forwardedRequest(
  services: EnvelopeServices,
  ctx: RequestContext,
  envelope: EnvelopeRequest,
): { context: RequestContext; request: unknown } {
  const principal = forwardedPrincipal(envelope.requestPrincipal);
  const host = ipAddressString(envelope.clientHostAddress);
  if (host === null) throw new EnvelopeError(Errors.INVALID_REQUEST, 'Failed to parse client address from envelope');
  const reader = new Reader(envelope.requestData);
  const header = readOrRefuse(() => decodeRequestHeader(reader), 'Failed to parse request header from envelope');
  const { requestApiKey: apiKey, requestApiVersion: apiVersion } = header;
  if (!FORWARDABLE_APIS.has(apiKey)) {
    throw new EnvelopeError(
      Errors.INVALID_REQUEST,
      `API ${apis.get(apiKey)?.name ?? apiKey} is not enabled or is not eligible for forwarding`,
    );
  }
  const api = services.registry.lookup(apiKey, 'controller');
  if (api === undefined || apiVersion < api.minVersion || apiVersion > api.maxVersion) {
    throw new EnvelopeError(Errors.UNSUPPORTED_VERSION, `${apis.get(apiKey)!.name} v${apiVersion} is not served`);
  }
  const request = readOrRefuse(
    () => apis.get(apiKey)!.decodeRequest(reader, apiVersion),
    `Failed to parse forwarded request with header ${describe(header)}`,
  );
  const session: Session = {
    ...ctx.session,
    principal,
    // The envelope's port, as Kafka's forwarded RequestContext keeps the connection's client port.
    clientAddress: `${host}:${portOf(ctx.session.clientAddress)}`,
  };
  const context: RequestContext = {
    session,
    header,
    apiKey,
    apiVersion,
    correlationId: header.correlationId,
    clientId: header.clientId,
    closeConnection: ctx.closeConnection,
    closeAfterResponse: ctx.closeAfterResponse,
    requestBytes: envelope.requestData.length,
    // The forwarding broker holds its client back for the throttle time the response carries;
    // Kafka's controller throttles only requests that were not forwarded, never the broker's connection.
    throttle: () => {},
    readBuffers: ctx.readBuffers,
  };
  return { context, request };
}

function forwardedPrincipal(bytes: Buffer | null): string {
  if (bytes === null) throw new EnvelopeError(Errors.PRINCIPAL_DESERIALIZATION_FAILURE, 'The envelope carries no principal');
  try {
    return principalString(deserializePrincipal(bytes));
  } catch (err) {
    if (!(err instanceof PrincipalSerdeError)) throw err;
    throw new EnvelopeError(Errors.PRINCIPAL_DESERIALIZATION_FAILURE, `Failed to deserialize principal: ${err.message}`);
  }
}

function readOrRefuse<T>(read: () => T, message: string): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof DecodeError || err instanceof RangeError)
      throw new EnvelopeError(Errors.INVALID_REQUEST, `${message}: ${err.message}`);
    throw err;
  }
}

/**
 * The inner request served by its controller-listener registration (its authorization
 * included); a refusal or a failure is answered with the API's error response, as the request
 * processor answers a request that came straight to the listener.
 */
async function serveForwarded(services: EnvelopeServices, context: RequestContext, request: unknown): Promise<unknown> {
  const api = services.registry.lookup(context.apiKey, 'controller')!;
  const { apiKey, apiVersion } = context;
  try {
    const response = await api.handler(context, request, apiVersion);
    if (response !== null) return response;
    throw new Error(`api key ${apiKey} answered a forwarded request with no response`);
  } catch (err) {
    const refused = err instanceof KafkaError;
    const error = refused ? err.error : Errors.UNKNOWN_SERVER_ERROR;
    const log = { client: context.session.clientAddress, principal: context.session.principal, apiKey, apiVersion, error: error.name };
    if (refused) services.logger.info({ ...log, reason: err.message }, 'forwarded request refused');
    else services.logger.error({ ...log, err }, 'forwarded request handling failed');
    return errorResponseFor(apiKey, apiVersion, request, error.code, refused ? err.message : null);
  }
}

function portOf(address: string): string {
  return address.slice(hostOfClientAddress(address).length + 1) || '0';
}

function describe(header: RequestHeader): string {
  return `RequestHeader(apiKey=${header.requestApiKey}, apiVersion=${header.requestApiVersion}, clientId=${header.clientId}, correlationId=${header.correlationId})`;
}

/**
 * This node's own broker is the sender of an envelope served in-process (its active controller
 * is local): it is trusted as the node itself, without the network's CLUSTER_ACTION check.
 */
const IN_PROCESS_SENDER: RequestContext = {
  session: {
    connectionId: -1,
    clientAddress: '127.0.0.1:0',
    listenerName: 'in-process',
    securityProtocol: 'PLAINTEXT',
    listenerRole: 'controller',
    principal: 'User:ANONYMOUS',
    authenticated: true,
    sasl: null,
    clientSoftwareName: null,
    clientSoftwareVersion: null,
  },
  header: { requestApiKey: ApiKey.Envelope, requestApiVersion: 0, correlationId: 0, clientId: null, headerVersion: 2 },
  apiKey: ApiKey.Envelope,
  apiVersion: 0,
  correlationId: 0,
  clientId: null,
  closeConnection: () => {},
  closeAfterResponse: () => {},
  requestBytes: 0,
  throttle: () => {},
  readBuffers: { take: (size) => Buffer.allocUnsafe(size) },
};

/** An envelope from this node's broker to its own active controller, in-process. */
export function handleLocalEnvelope(services: EnvelopeServices, request: EnvelopeRequest): Promise<EnvelopeResponse> {
  return handleEnvelope(services, IN_PROCESS_SENDER, request);
}
