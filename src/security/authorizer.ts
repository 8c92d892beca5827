/**
 * Kafka's StandardAuthorizer: ACLs from the metadata log decide who may do what. A DENY that
 * applies wins over any ALLOW; with no ALLOW the request is denied, unless no ACL at all names
 * the resource and allow.everyone.if.no.acl.found is set; super users are allowed everything.
 */
import {
  type AclBinding,
  AclOperation,
  AclPermissionType,
  type Authorizer,
  PatternType,
  type RequestIdentity,
  ResourceType,
  WILDCARD,
  WILDCARD_PRINCIPAL,
} from './acl-types.ts';

export interface StandardAuthorizerOptions {
  /** super.users: "User:admin;User:broker" parsed to a list. Super users are allowed everything. */
  readonly superUsers: readonly string[];
  /** allow.everyone.if.no.acl.found (default false): with no ACL on a resource, allow. */
  readonly allowEveryoneIfNoAclFound: boolean;
}

/** super.users as Kafka reads it: principals separated by ';' (SSL names may hold commas), each Type:name. */
export function parseSuperUsers(value: string | null): string[] {
  if (value === null) return [];
  const users = new Set<string>();
  for (const part of value.split(';')) {
    const user = part.trim();
    if (user === '') continue;
    if (!user.includes(':')) throw new Error(`expected a string in format principalType:principalName but got ${user}`);
    users.add(user);
  }
  return [...users];
}

/** The operations each resource type has (Kafka's AclEntry.supportedOperations), for authorized-operations fields. */
const SUPPORTED_OPERATIONS: ReadonlyMap<number, readonly number[]> = new Map([
  [
    ResourceType.TOPIC,
    [
      AclOperation.READ,
      AclOperation.WRITE,
      AclOperation.CREATE,
      AclOperation.DESCRIBE,
      AclOperation.DELETE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
    ],
  ],
  [
    ResourceType.GROUP,
    [AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS],
  ],
  [
    ResourceType.CLUSTER,
    [
      AclOperation.CREATE,
      AclOperation.CLUSTER_ACTION,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
      AclOperation.IDEMPOTENT_WRITE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE,
    ],
  ],
  [ResourceType.TRANSACTIONAL_ID, [AclOperation.DESCRIBE, AclOperation.WRITE]],
  [ResourceType.DELEGATION_TOKEN, [AclOperation.DESCRIBE]],
  [ResourceType.USER, [AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS]],
]);

/** The operations an ALLOW implies DESCRIBE and DESCRIBE_CONFIGS for; a DENY implies nothing. */
const IMPLIES_DESCRIBE: ReadonlySet<number> = new Set([
  AclOperation.DESCRIBE,
  AclOperation.READ,
  AclOperation.WRITE,
  AclOperation.DELETE,
  AclOperation.ALTER,
]);
const IMPLIES_DESCRIBE_CONFIGS: ReadonlySet<number> = new Set([AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS]);

/** Whether the ACL's operation covers the one asked for: ALL covers every one, an ALLOW covers what it implies. */
function operationApplies(binding: AclBinding, operation: number): boolean {
  if (binding.operation === AclOperation.ALL) return true;
  if (binding.permissionType !== AclPermissionType.ALLOW) return operation === binding.operation;
  if (operation === AclOperation.DESCRIBE) return IMPLIES_DESCRIBE.has(binding.operation);
  if (operation === AclOperation.DESCRIBE_CONFIGS) return IMPLIES_DESCRIBE_CONFIGS.has(binding.operation);
  return operation === binding.operation;
}

/**
 * Whether an ACL on the resource allows (true) or denies (false) the operation to the identity,
 * or null when it does not apply to them (Kafka's StandardAuthorizerData.findResult).
 */
function aclResult(binding: AclBinding, identity: RequestIdentity, operation: number): boolean | null {
  if (binding.principal !== identity.principal && binding.principal !== WILDCARD_PRINCIPAL) return null;
  if (binding.host !== WILDCARD && binding.host !== identity.host) return null;
  if (!operationApplies(binding, operation)) return null;
  return binding.permissionType === AclPermissionType.ALLOW;
}

function addTo(buckets: Map<string, AclBinding[]>, name: string, binding: AclBinding): void {
  const bucket = buckets.get(name);
  if (bucket === undefined) buckets.set(name, [binding]);
  else bucket.push(binding);
}

/** Whether the name's bucket became empty (and was dropped). */
function removeFrom(buckets: Map<string, AclBinding[]>, name: string, binding: AclBinding): boolean {
  const bucket = buckets.get(name)!;
  bucket.splice(bucket.indexOf(binding), 1);
  if (bucket.length > 0) return false;
  buckets.delete(name);
  return true;
}

/**
 * The ACLs of one resource type, by name: a check looks up the literal name, the wildcard, and
 * the name's prefixes of only those lengths some PREFIXED ACL has, never every ACL.
 */
class ResourceTypeAcls {
  private readonly literal = new Map<string, AclBinding[]>();
  private readonly prefixed = new Map<string, AclBinding[]>();
  /** How many distinct prefixes have each length. */
  private readonly prefixLengthCounts = new Map<number, number>();
  /** The keys of prefixLengthCounts, ascending. */
  private prefixLengths: number[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(binding: AclBinding): void {
    this.count++;
    if (binding.patternType !== PatternType.PREFIXED) {
      addTo(this.literal, binding.resourceName, binding);
      return;
    }
    const isNewPrefix = !this.prefixed.has(binding.resourceName);
    addTo(this.prefixed, binding.resourceName, binding);
    if (isNewPrefix) this.countPrefixLength(binding.resourceName.length, 1);
  }

  remove(binding: AclBinding): void {
    this.count--;
    if (binding.patternType !== PatternType.PREFIXED) {
      removeFrom(this.literal, binding.resourceName, binding);
      return;
    }
    if (removeFrom(this.prefixed, binding.resourceName, binding)) this.countPrefixLength(binding.resourceName.length, -1);
  }

  /** The ACLs whose pattern applies to a resource of this name, in groups. */
  matching(name: string): AclBinding[][] {
    const groups: AclBinding[][] = [];
    const literal = this.literal.get(name);
    if (literal !== undefined) groups.push(literal);
    if (name !== WILDCARD) {
      const wildcard = this.literal.get(WILDCARD);
      if (wildcard !== undefined) groups.push(wildcard);
    }
    for (const length of this.prefixLengths) {
      if (length > name.length) break;
      const prefixed = this.prefixed.get(name.slice(0, length));
      if (prefixed !== undefined) groups.push(prefixed);
    }
    return groups;
  }

  *all(): IterableIterator<AclBinding> {
    for (const group of this.literal.values()) yield* group;
    for (const group of this.prefixed.values()) yield* group;
  }

  private countPrefixLength(length: number, delta: 1 | -1): void {
    const count = (this.prefixLengthCounts.get(length) ?? 0) + delta;
    if (count === 0) this.prefixLengthCounts.delete(length);
    else this.prefixLengthCounts.set(length, count);
    const lengthsChanged = count === 0 || (count === 1 && delta === 1);
    if (lengthsChanged) this.prefixLengths = [...this.prefixLengthCounts.keys()].sort((a, b) => a - b);
  }
}

function contentKey(binding: AclBinding): string {
  return JSON.stringify([
    binding.resourceType,
    binding.resourceName,
    binding.patternType,
    binding.principal,
    binding.host,
    binding.operation,
    binding.permissionType,
  ]);
}

/** Kafka's SecurityUtils.authorizeByResourceTypeCheckArgs: filters and unknown codes are bugs of the caller. */
function checkAuthorizeAnyArgs(operation: number, resourceType: number): void {
  if (resourceType === ResourceType.ANY) throw new Error('Must specify a non-filter resource type for authorizeByResourceType');
  if (resourceType === ResourceType.UNKNOWN) throw new Error('Unknown resource type');
  if (operation === AclOperation.ANY) throw new Error('Must specify a non-filter operation type for authorizeByResourceType');
  if (operation === AclOperation.UNKNOWN) throw new Error('Unknown operation type');
}

/** Whether some prefix of the name (one character or more) is a denied PREFIXED pattern. */
function deniedByPrefix(name: string, deniedPrefixes: ReadonlySet<string>): boolean {
  for (let length = 1; length <= name.length; length++) {
    if (deniedPrefixes.has(name.slice(0, length))) return true;
  }
  return false;
}

export class StandardAuthorizer implements Authorizer {
  private readonly superUsers: ReadonlySet<string>;
  private readonly allowEveryoneIfNoAclFound: boolean;
  private readonly byId = new Map<string, AclBinding>();
  /** Each stored binding's content, to refuse a second copy as Kafka's AclCache does. */
  private readonly contents = new Set<string>();
  private readonly byResourceType = new Map<number, ResourceTypeAcls>();

  constructor(options: StandardAuthorizerOptions) {
    this.superUsers = new Set(options.superUsers);
    this.allowEveryoneIfNoAclFound = options.allowEveryoneIfNoAclFound;
  }

  /**
   * ACLs are added/removed by id (the AccessControlEntryRecord's uuid) as metadata records replay.
   * A known id, a second copy of a stored ACL or an unknown id on removal throws, as in Kafka:
   * the controller never writes one, so the metadata log is inconsistent.
   */
  addAcl(id: string, binding: AclBinding): void {
    if (this.byId.has(id)) throw new Error(`An ACL with ID ${id} already exists.`);
    const key = contentKey(binding);
    if (this.contents.has(key)) throw new Error(`Unable to add the ACL with ID ${id} to aclsByResource`);
    this.byId.set(id, binding);
    this.contents.add(key);
    let acls = this.byResourceType.get(binding.resourceType);
    if (acls === undefined) {
      acls = new ResourceTypeAcls();
      this.byResourceType.set(binding.resourceType, acls);
    }
    acls.add(binding);
  }

  removeAcl(id: string): void {
    const binding = this.byId.get(id);
    if (binding === undefined) throw new Error(`ID ${id} not found in aclsById.`);
    this.byId.delete(id);
    this.contents.delete(contentKey(binding));
    const acls = this.byResourceType.get(binding.resourceType)!;
    acls.remove(binding);
    if (acls.size === 0) this.byResourceType.delete(binding.resourceType);
  }

  /** Every ACL with its id, for DescribeAcls / DeleteAcls. */
  acls(): ReadonlyMap<string, AclBinding> {
    return this.byId;
  }

  authorize(identity: RequestIdentity, operation: number, resourceType: number, resourceName: string): boolean {
    if (this.superUsers.has(identity.principal)) return true;
    const groups = this.byResourceType.get(resourceType)?.matching(resourceName) ?? [];
    let allowed = false;
    for (const group of groups) {
      for (const binding of group) {
        const result = aclResult(binding, identity, operation);
        if (result === false) return false;
        if (result === true) allowed = true;
      }
    }
    // Any ACL on the resource, whoever it names, turns the default off (Kafka's hasResourceAcls).
    return allowed || (groups.length === 0 && this.allowEveryoneIfNoAclFound);
  }

  /**
   * Kafka's Authorizer.authorizeByResourceType default (KIP-679): allowed when the operation is
   * allowed on a resource named "hardcode" (so super users and the no-ACL default count), or
   * when an ALLOW for exactly this operation (or ALL) names a pattern no DENY covers: a literal
   * name neither denied by name nor under a denied prefix, or a prefix not under a denied prefix.
   */
  authorizeAny(identity: RequestIdentity, operation: number, resourceType: number): boolean {
    checkAuthorizeAnyArgs(operation, resourceType);
    if (this.authorize(identity, operation, resourceType, 'hardcode')) return true;
    const deniedLiterals = new Set<string>();
    const deniedPrefixes = new Set<string>();
    const allowedLiterals = new Set<string>();
    const allowedPrefixes = new Set<string>();
    let wildcardAllowed = false;
    for (const binding of this.byResourceType.get(resourceType)?.all() ?? []) {
      if (binding.host !== identity.host && binding.host !== WILDCARD) continue;
      if (binding.principal !== identity.principal && binding.principal !== WILDCARD_PRINCIPAL) continue;
      if (binding.operation !== operation && binding.operation !== AclOperation.ALL) continue;
      const { resourceName, patternType, permissionType } = binding;
      const wildcard = patternType === PatternType.LITERAL && resourceName === WILDCARD;
      if (permissionType === AclPermissionType.DENY) {
        if (wildcard) return false;
        if (patternType === PatternType.LITERAL) deniedLiterals.add(resourceName);
        else if (patternType === PatternType.PREFIXED) deniedPrefixes.add(resourceName);
      } else if (permissionType === AclPermissionType.ALLOW) {
        if (wildcard) wildcardAllowed = true;
        else if (patternType === PatternType.LITERAL) allowedLiterals.add(resourceName);
        else if (patternType === PatternType.PREFIXED) allowedPrefixes.add(resourceName);
      }
    }
    if (wildcardAllowed) return true;
    for (const name of allowedLiterals) {
      if (!deniedLiterals.has(name) && !deniedByPrefix(name, deniedPrefixes)) return true;
    }
    for (const prefix of allowedPrefixes) {
      if (!deniedByPrefix(prefix, deniedPrefixes)) return true;
    }
    return false;
  }

  /** The operations the resource type has that `identity` may perform on the resource (as Kafka's request layer builds authorized-operations fields). */
  authorizedOperations(identity: RequestIdentity, resourceType: number, resourceName: string): number {
    const operations = SUPPORTED_OPERATIONS.get(resourceType);
    if (operations === undefined) throw new Error('Not a concrete resource type');
    let field = 0;
    for (const operation of operations) {
      if (this.authorize(identity, operation, resourceType, resourceName)) field |= 1 << operation;
    }
    return field;
  }
}
