/**
 * Kafka's ACL vocabulary, with the wire codes CreateAcls, DescribeAcls, DeleteAcls and
 * AccessControlEntryRecord use (org.apache.kafka.common.resource.ResourceType, PatternType,
 * org.apache.kafka.common.acl.AclOperation, AclPermissionType), and what the request
 * handlers ask of an authorizer.
 */

export const ResourceType = {
  UNKNOWN: 0,
  ANY: 1,
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
  DELEGATION_TOKEN: 6,
  USER: 7,
} as const;
export type ResourceTypeCode = (typeof ResourceType)[keyof typeof ResourceType];

export const PatternType = {
  UNKNOWN: 0,
  ANY: 1,
  MATCH: 2,
  LITERAL: 3,
  PREFIXED: 4,
} as const;
export type PatternTypeCode = (typeof PatternType)[keyof typeof PatternType];

export const AclOperation = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
  CREATE_TOKENS: 13,
  DESCRIBE_TOKENS: 14,
} as const;
export type AclOperationCode = (typeof AclOperation)[keyof typeof AclOperation];

export const AclPermissionType = {
  UNKNOWN: 0,
  ANY: 1,
  DENY: 2,
  ALLOW: 3,
} as const;
export type AclPermissionTypeCode = (typeof AclPermissionType)[keyof typeof AclPermissionType];

/** The name of the one CLUSTER resource. */
export const CLUSTER_RESOURCE_NAME = 'kafka-cluster';
/** A resource name, principal or host that matches every one. */
export const WILDCARD = '*';
export const WILDCARD_PRINCIPAL = 'User:*';

/** One ACL: who (principal, host) may or may not do what (operation) to which resources. */
export interface AclBinding {
  readonly resourceType: number;
  readonly resourceName: string;
  /** LITERAL or PREFIXED. */
  readonly patternType: number;
  readonly principal: string;
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

/** What DescribeAcls and DeleteAcls select with: ANY codes and null strings match everything; MATCH patterns as Kafka's. */
export interface AclBindingFilter {
  readonly resourceType: number;
  readonly resourceName: string | null;
  readonly patternType: number;
  readonly principal: string | null;
  readonly host: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

/** Who is asking: the connection's principal ("User:alice") and the client's address (no port). */
export interface RequestIdentity {
  readonly principal: string;
  readonly host: string;
}

/** What the request handlers ask; an authorizer that allows everything stands in when none is configured. */
export interface Authorizer {
  /** Whether `identity` may perform `operation` on the resource. */
  authorize(identity: RequestIdentity, operation: number, resourceType: number, resourceName: string): boolean;
  /**
   * Whether `identity` may perform `operation` on at least one resource of the type: an ALLOW
   * that no DENY covers (Kafka's authorizeByResourceType, KIP-679), as InitProducerId and
   * CreateTopics need.
   */
  authorizeAny(identity: RequestIdentity, operation: number, resourceType: number): boolean;
  /** The operations `identity` may perform on the resource, as an int32 bitfield (bit N = AclOperation N), for authorized-operations fields. */
  authorizedOperations(identity: RequestIdentity, resourceType: number, resourceName: string): number;
}
