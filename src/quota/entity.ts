/**
 * A client quota entity, as ClientQuotaRecord and the quota APIs name one: each entity type
 * present names an entity, null naming that type's default (`<default>` in kafka-configs).
 * `{ user: 'alice', 'client-id': null }` is alice's quota for each of her client ids.
 */
export type QuotaEntityType = 'user' | 'client-id' | 'ip';

export type ClientQuotaEntity = Readonly<Partial<Record<QuotaEntityType, string | null>>>;

/** The quotas of exactly one entity (not resolved through defaults), by quota key; undefined when it has none. */
export type ClientQuotaLookup = (entity: ClientQuotaEntity) => ReadonlyMap<string, number> | undefined;
