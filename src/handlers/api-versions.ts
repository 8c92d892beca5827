/**
 * ApiVersions: what this listener serves, exactly as registered (KIP-35), with the client's
 * software name/version recorded on the connection from v3 (KIP-511).
 */
import {
  makeApiVersionsResponse,
  makeApiVersionsResponseApiVersion,
  type ApiVersionsRequest,
  type ApiVersionsResponse,
  type ApiVersionsResponseApiVersion,
} from '../../protocol/messages/api-versions.ts';
import { Errors } from '../../protocol/errors.ts';
import type { ListenerRole, RequestContext } from '../server/session.ts';
import type { HandlerRegistry } from './registry.ts';

/** What ApiVersions reads: the registry's table of served APIs. */
export type ApiVersionsServices = Pick<HandlerRegistry, 'supported'>;

/** KIP-511's rule for client_software_name and client_software_version. */
const SOFTWARE_FIELD = /^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$/;

function apiKeys(registry: ApiVersionsServices, role: ListenerRole): ApiVersionsResponseApiVersion[] {
  return registry.supported(role).map((api) =>
    makeApiVersionsResponseApiVersion({
      apiKey: api.apiKey,
      minVersion: api.minVersion,
      maxVersion: api.maxVersion,
    }),
  );
}

/** The v0-shaped answer to an ApiVersions version newer than ours: error 35 plus our ranges. */
export function unsupportedApiVersionsResponse(registry: ApiVersionsServices, role: ListenerRole): ApiVersionsResponse {
  return makeApiVersionsResponse({ errorCode: Errors.UNSUPPORTED_VERSION.code, apiKeys: apiKeys(registry, role) });
}

export function handleApiVersions(
  registry: ApiVersionsServices,
  ctx: RequestContext,
  request: ApiVersionsRequest,
  version: number,
): ApiVersionsResponse {
  if (version >= 3) {
    const name = request.clientSoftwareName;
    const softwareVersion = request.clientSoftwareVersion;
    if (!SOFTWARE_FIELD.test(name) || !SOFTWARE_FIELD.test(softwareVersion)) {
      return makeApiVersionsResponse({ errorCode: Errors.INVALID_REQUEST.code });
    }
    ctx.session.clientSoftwareName = name;
    ctx.session.clientSoftwareVersion = softwareVersion;
  }
  return makeApiVersionsResponse({
    errorCode: Errors.NONE.code,
    apiKeys: apiKeys(registry, ctx.session.listenerRole),
  });
}
