import type { ClientQuotaEntity, ClientQuotaLookup } from './entity.ts';

/**
 * Kafka's DefaultQuotaCallback: which quota entity a client's quota comes from, in the eight
 * levels of user/client-id precedence, and the metric tags that name the sensor its usage is
 * recorded in. Clients with equal tags share one sensor, so the tags carry only what the
 * resolved entity distinguishes: `alice` for a quota on user alice (all her client ids share
 * it), `alice` and `app` for `alice`'s `<default>` client quota (each client id has its own).
 */

/** The principal's name (User:alice -> 'alice', ANONYMOUS when unauthenticated) and the request header's client id. */
export interface QuotaClient {
  readonly user: string;
  readonly clientId: string;
}

export interface ClientQuotaSource {
  readonly lookup: ClientQuotaLookup;
  /** Whether some user/client-id entity has a quota of this key. */
  has(key: string): boolean;
}

/** A quota sensor's tags: '' for a part the resolved entity does not distinguish. */
export interface QuotaMetricTags {
  readonly user: string;
  readonly clientId: string;
}

/**
 * The tags for `client`: the first level in precedence order whose entity has a `key` quota
 * decides which parts they keep.
 *
 * Kafka takes a shortcut while quotas exist at one level only (the user part or the client-id
 * part is dropped for everyone); the full walk here gives clients the same limits, and differs
 * only in how clients without any quota are grouped.
 */
export function quotaMetricTags(source: ClientQuotaSource, key: string, client: QuotaClient): QuotaMetricTags {
  const { user, clientId } = client;
  const has = (entity: ClientQuotaEntity): boolean => source.lookup(entity)?.has(key) === true;
  if (has({ user, 'client-id': clientId }) || has({ user, 'client-id': null })) return { user, clientId };
  if (has({ user })) return { user, clientId: '' };
  if (has({ user: null, 'client-id': clientId }) || has({ user: null, 'client-id': null })) return { user, clientId };
  if (has({ user: null })) return { user, clientId: '' };
  return { user: '', clientId };
}

/**
 * The `key` quota of the sensor with these tags, undefined for none (unlimited). Which levels are
 * searched follows from which tags are set, as in Kafka: with an empty client id the
 * `<user, client-id>` levels are never consulted.
 */
export function quotaLimit(source: ClientQuotaSource, key: string, tags: QuotaMetricTags): number | undefined {
  const { user, clientId } = tags;
  const quota = (entity: ClientQuotaEntity): number | undefined => source.lookup(entity)?.get(key);
  if (user !== '' && clientId !== '') {
    return (
      quota({ user, 'client-id': clientId }) ??
      quota({ user, 'client-id': null }) ??
      quota({ user: null, 'client-id': clientId }) ??
      quota({ user: null, 'client-id': null })
    );
  }
  if (user !== '') return quota({ user }) ?? quota({ user: null });
  if (clientId !== '') return quota({ 'client-id': clientId }) ?? quota({ 'client-id': null });
  return undefined;
}
