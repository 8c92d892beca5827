/**
 * The authorizer `authorizer.class.name` names, kept up to date with the ACLs of the metadata
 * log: Kafka's StandardAuthorizer (the KRaft one), or none. ZooKeeper's AclAuthorizer and
 * custom classes cannot run here, and a configuration naming one fails the start rather than
 * leaving the cluster open.
 */
import type { BrokerConfig } from '../config/broker-config.ts';
import { ConfigException } from '../config/types.ts';
import type { MetadataDelta } from '../metadata/image.ts';
import { StandardAuthorizer, parseSuperUsers } from './authorizer.ts';

export const STANDARD_AUTHORIZER = 'org.apache.kafka.metadata.authorizer.StandardAuthorizer';

/** The configured authorizer, or null when `authorizer.class.name` is empty (every request is allowed, as in Kafka). */
export function configuredAuthorizer(config: BrokerConfig): StandardAuthorizer | null {
  const name = config.getString('authorizer.class.name').trim();
  if (name === '') return null;
  if (name !== STANDARD_AUTHORIZER) {
    throw new ConfigException('authorizer.class.name', `Unsupported authorizer ${name}: Sluice serves ${STANDARD_AUTHORIZER}`);
  }
  let superUsers: string[];
  try {
    superUsers = parseSuperUsers(config.get('super.users'));
  } catch (err) {
    throw new ConfigException('super.users', `Invalid super.users: ${(err as Error).message}`);
  }
  return new StandardAuthorizer({ superUsers, allowEveryoneIfNoAclFound: config.getBoolean('allow.everyone.if.no.acl.found') });
}

/** Applies the ACLs a metadata delta created and removed. */
export function applyAclDelta(authorizer: StandardAuthorizer, delta: MetadataDelta): void {
  for (const id of delta.aclsRemoved) authorizer.removeAcl(id);
  for (const { id, binding } of delta.aclsAdded) authorizer.addAcl(id, binding);
}
