import type { ClientQuotaEntity } from '../../../src/quota/entity.ts';
import type { ClientQuotaSource } from '../../../src/quota/quota-resolution.ts';

export type QuotaEntry = readonly [ClientQuotaEntity, Readonly<Record<string, number>>];

function entityKey(entity: ClientQuotaEntity): string {
  const part = (type: 'user' | 'client-id'): string => (type in entity ? JSON.stringify(entity[type]) : '-');
  return `${part('user')}|${part('client-id')}`;
}

/** A quota source over exactly these entities, as the metadata image's lookup answers. */
export function quotaSource(...entries: QuotaEntry[]): ClientQuotaSource {
  const byEntity = new Map(entries.map(([entity, quotas]) => [entityKey(entity), new Map(Object.entries(quotas))]));
  return {
    lookup: (entity) => byEntity.get(entityKey(entity)),
    has: (key) => [...byEntity.values()].some((quotas) => quotas.has(key)),
  };
}
