/**
 * SaslHandshake and SaslAuthenticate. On a SASL listener they drive the connection's
 * SaslSession (src/server/sasl-session.ts); on any other listener they are answered
 * ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers them once no authentication is pending.
 */
import { Errors } from '../../protocol/errors.ts';
import {
  makeSaslAuthenticateResponse,
  type SaslAuthenticateRequest,
  type SaslAuthenticateResponse,
} from '../../protocol/messages/sasl-authenticate.ts';
import {
  makeSaslHandshakeResponse,
  type SaslHandshakeRequest,
  type SaslHandshakeResponse,
} from '../../protocol/messages/sasl-handshake.ts';
import type { RequestContext } from '../server/session.ts';

export function handleSaslHandshake(ctx: RequestContext, request: SaslHandshakeRequest, version: number): SaslHandshakeResponse {
  const sasl = ctx.session.sasl;
  if (sasl === null) return makeSaslHandshakeResponse({ errorCode: Errors.ILLEGAL_SASL_STATE.code, mechanisms: [] });
  const result = sasl.handshake(request.mechanism, version);
  if (result.closeReason !== null) ctx.closeAfterResponse(result.closeReason);
  return makeSaslHandshakeResponse({ errorCode: result.errorCode, mechanisms: result.mechanisms });
}

export async function handleSaslAuthenticate(ctx: RequestContext, request: SaslAuthenticateRequest): Promise<SaslAuthenticateResponse> {
  const { session } = ctx;
  const sasl = session.sasl;
  if (sasl === null) {
    return makeSaslAuthenticateResponse({
      errorCode: Errors.ILLEGAL_SASL_STATE.code,
      errorMessage: 'SaslAuthenticate request received after successful authentication',
    });
  }
  const result = await sasl.authenticate(request.authBytes);
  if (result.closeReason !== null) ctx.closeAfterResponse(result.closeReason);
  else if (sasl.current === 'complete') {
    session.principal = `User:${sasl.user}`;
    session.authenticated = true;
  }
  return makeSaslAuthenticateResponse({
    errorCode: result.errorCode,
    errorMessage: result.errorMessage,
    authBytes: result.authBytes,
    sessionLifetimeMs: result.sessionLifetimeMs,
  });
}
