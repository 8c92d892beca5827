/**
 * OAUTHBEARER on a listener, configured as Kafka configures it: by default Kafka's
 * unsecured-token validator (for development: alg "none" tokens, with the
 * `unsecuredValidator*` options of the listener's OAuthBearerLoginModule JAAS entry); with
 * `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` naming Kafka's
 * OAuthBearerValidatorCallbackHandler, signed JWTs checked against the keys of
 * `sasl.oauthbearer.jwks.endpoint.url` and the expected audience and issuer (KIP-768).
 */
import type { BrokerConfig } from '../config/broker-config.ts';
import { ConfigException } from '../config/types.ts';
import type { ServerExchange } from '../server/sasl-session.ts';
import type { JaasLoginModule } from './jaas.ts';
import { JwksSource } from './jwks.ts';
import { jwksValidator, oauthBearerServerExchange, unsecuredValidator, type OAuthBearerValidator } from './oauthbearer.ts';

const VALIDATOR_CALLBACK_HANDLERS: ReadonlySet<string> = new Set([
  'org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler',
  'org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler',
]);
const UNSECURED_CALLBACK_HANDLER =
  'org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler';

export function oauthBearerServer(
  config: BrokerConfig,
  listener: string,
  jaas: JaasLoginModule | null,
  nowMs: () => number,
): () => ServerExchange {
  const handlerName = `listener.name.${listener.toLowerCase()}.oauthbearer.sasl.server.callback.handler.class`;
  const handler = config.listenerValue(listener, 'oauthbearer.sasl.server.callback.handler.class');
  let validate: OAuthBearerValidator;
  if (handler !== null && VALIDATOR_CALLBACK_HANDLERS.has(handler)) {
    validate = jwksValidatorOf(config, listener, nowMs);
  } else if (handler === null || handler === UNSECURED_CALLBACK_HANDLER) {
    validate = unsecuredValidator(jaas?.options ?? new Map(), nowMs);
  } else {
    throw new ConfigException(handlerName, `Unsupported SASL/OAUTHBEARER server callback handler ${handler}`);
  }
  return () => oauthBearerServerExchange(validate, nowMs);
}

function jwksValidatorOf(config: BrokerConfig, listener: string, nowMs: () => number): OAuthBearerValidator {
  const get = (name: string) => config.listenerValue(listener, name);
  const url = get('sasl.oauthbearer.jwks.endpoint.url');
  if (url === null) {
    throw new ConfigException(
      'sasl.oauthbearer.jwks.endpoint.url',
      `OAUTHBEARER on listener ${listener} validates tokens against a JWKS: set sasl.oauthbearer.jwks.endpoint.url`,
    );
  }
  let jwks: JwksSource;
  try {
    jwks = new JwksSource(url, {
      refreshMs: Number(get('sasl.oauthbearer.jwks.endpoint.refresh.ms')),
      retryBackoffMs: Number(get('sasl.oauthbearer.jwks.endpoint.retry.backoff.ms')),
      retryBackoffMaxMs: Number(get('sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms')),
    });
  } catch (err) {
    throw new ConfigException('sasl.oauthbearer.jwks.endpoint.url', (err as Error).message);
  }
  const audience = (get('sasl.oauthbearer.expected.audience') ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  return jwksValidator(
    {
      jwks,
      expectedAudience: audience,
      expectedIssuer: get('sasl.oauthbearer.expected.issuer'),
      subClaimName: get('sasl.oauthbearer.sub.claim.name') ?? 'sub',
      scopeClaimName: get('sasl.oauthbearer.scope.claim.name') ?? 'scope',
      clockSkewSeconds: Number(get('sasl.oauthbearer.clock.skew.seconds')),
    },
    nowMs,
  );
}
