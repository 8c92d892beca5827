import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  type AclBinding,
  AclOperation,
  AclPermissionType,
  PatternType,
  type RequestIdentity,
  ResourceType,
} from '../../../src/security/acl-types.ts';
import { StandardAuthorizer, type StandardAuthorizerOptions, parseSuperUsers } from '../../../src/security/authorizer.ts';

const { TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID } = ResourceType;
const { LITERAL, PREFIXED } = PatternType;
const { ALLOW, DENY } = AclPermissionType;
const { ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS } = AclOperation;

const alice: RequestIdentity = { principal: 'User:alice', host: '10.0.0.1' };
const bob: RequestIdentity = { principal: 'User:bob', host: '10.0.0.2' };

function acl(overrides: Partial<AclBinding>): AclBinding {
  return {
    resourceType: TOPIC,
    resourceName: 'orders',
    patternType: LITERAL,
    principal: 'User:alice',
    host: '*',
    operation: READ,
    permissionType: ALLOW,
    ...overrides,
  };
}

function addAll(authorizer: StandardAuthorizer, bindings: readonly AclBinding[]): void {
  for (const [i, b] of bindings.entries()) authorizer.addAcl(`id-${i}`, b);
}

function authorizerWith(bindings: readonly AclBinding[], options: Partial<StandardAuthorizerOptions> = {}): StandardAuthorizer {
  const authorizer = new StandardAuthorizer({ superUsers: [], allowEveryoneIfNoAclFound: false, ...options });
  addAll(authorizer, bindings);
  return authorizer;
}

function bits(...operations: number[]): number {
  return operations.reduce((field, op) => field | (1 << op), 0);
}

describe('parseSuperUsers', () => {
  it('reads none from an unset value', () => {
    assert.deepEqual(parseSuperUsers(null), []);
  });

  it("splits on ';', trims and skips empty entries", () => {
    assert.deepEqual(parseSuperUsers(' User:admin ;User:CN=broker,O=x;; User:admin'), ['User:admin', 'User:CN=broker,O=x']);
  });

  it('refuses a principal without a type, as Kafka does at configure time', () => {
    assert.throws(() => parseSuperUsers('User:admin;bob'), {
      message: 'expected a string in format principalType:principalName but got bob',
    });
  });
});

describe('StandardAuthorizer.authorize', () => {
  it('applies a LITERAL ACL to that name only', () => {
    const authorizer = authorizerWith([acl({ resourceName: 'orders' })]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders-eu'), false);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'order'), false);
    assert.equal(authorizer.authorize(alice, READ, GROUP, 'orders'), false, 'another resource type');
  });

  it("applies a LITERAL '*' ACL to every name of its type", () => {
    const authorizer = authorizerWith([acl({ resourceName: '*' })]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'anything'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, '*'), true);
    assert.equal(authorizer.authorize(alice, READ, GROUP, 'anything'), false);
  });

  it('applies a PREFIXED ACL to every name that starts with the prefix', () => {
    const authorizer = authorizerWith([acl({ resourceName: 'ord', patternType: PREFIXED })]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'ord'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'or'), false);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'xorders'), false);
  });

  it("treats a PREFIXED '*' as a prefix, not a wildcard", () => {
    const authorizer = authorizerWith([acl({ resourceName: '*', patternType: PREFIXED })]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, '*orders'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), false);
  });

  it("matches the principal exactly or through 'User:*', whatever the principal's type", () => {
    const authorizer = authorizerWith([
      acl({ principal: 'User:alice', resourceName: 'a' }),
      acl({ principal: 'User:*', resourceName: 'b' }),
      acl({ principal: 'Group:*', resourceName: 'c' }),
    ]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'a'), true);
    assert.equal(authorizer.authorize(bob, READ, TOPIC, 'a'), false);
    assert.equal(authorizer.authorize(bob, READ, TOPIC, 'b'), true);
    assert.equal(authorizer.authorize({ principal: 'Group:x', host: '10.0.0.1' }, READ, TOPIC, 'b'), true, "'User:*' is everyone");
    assert.equal(authorizer.authorize({ principal: 'Group:x', host: '10.0.0.1' }, READ, TOPIC, 'c'), false);
  });

  it("matches the host exactly or through '*'", () => {
    const authorizer = authorizerWith([acl({ host: '10.0.0.1', resourceName: 'a' }), acl({ host: '*', resourceName: 'b' })]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'a'), true);
    assert.equal(authorizer.authorize({ ...alice, host: '10.0.0.9' }, READ, TOPIC, 'a'), false);
    assert.equal(authorizer.authorize({ ...alice, host: '10.0.0.9' }, READ, TOPIC, 'b'), true);
  });

  it('lets a DENY win over any ALLOW, from whichever pattern it comes', () => {
    const authorizer = authorizerWith([
      acl({ resourceName: 'orders', operation: ALL }),
      acl({ resourceName: 'ord', patternType: PREFIXED, operation: WRITE, permissionType: DENY }),
      acl({ resourceName: '*', principal: 'User:*', operation: DELETE, permissionType: DENY }),
    ]);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), true);
    assert.equal(authorizer.authorize(alice, WRITE, TOPIC, 'orders'), false);
    assert.equal(authorizer.authorize(alice, DELETE, TOPIC, 'orders'), false);
  });

  it('lets an ALL ACL cover every operation, to allow or to deny', () => {
    const allowAll = authorizerWith([acl({ operation: ALL })]);
    for (const op of [READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]) {
      assert.equal(allowAll.authorize(alice, op, TOPIC, 'orders'), true);
    }
    const denyAll = authorizerWith([acl({ operation: ALL, permissionType: DENY }), acl({ operation: READ })]);
    assert.equal(denyAll.authorize(alice, READ, TOPIC, 'orders'), false);
  });

  it('lets an ALLOW of READ, WRITE, DELETE or ALTER imply DESCRIBE, and of ALTER_CONFIGS imply DESCRIBE_CONFIGS', () => {
    for (const op of [READ, WRITE, DELETE, ALTER]) {
      assert.equal(authorizerWith([acl({ operation: op })]).authorize(alice, DESCRIBE, TOPIC, 'orders'), true);
    }
    for (const op of [CREATE, ALTER_CONFIGS, DESCRIBE_CONFIGS]) {
      assert.equal(authorizerWith([acl({ operation: op })]).authorize(alice, DESCRIBE, TOPIC, 'orders'), false);
    }
    assert.equal(authorizerWith([acl({ operation: ALTER_CONFIGS })]).authorize(alice, DESCRIBE_CONFIGS, TOPIC, 'orders'), true);
    assert.equal(authorizerWith([acl({ operation: ALTER })]).authorize(alice, DESCRIBE_CONFIGS, TOPIC, 'orders'), false);
    assert.equal(authorizerWith([acl({ operation: DESCRIBE })]).authorize(alice, READ, TOPIC, 'orders'), false, 'no implication upwards');
  });

  it('never lets a DENY imply anything', () => {
    const authorizer = authorizerWith([
      acl({ operation: DESCRIBE }),
      acl({ operation: READ, permissionType: DENY }),
      acl({ operation: DESCRIBE_CONFIGS }),
      acl({ operation: ALTER_CONFIGS, permissionType: DENY }),
    ]);
    assert.equal(authorizer.authorize(alice, DESCRIBE, TOPIC, 'orders'), true);
    assert.equal(authorizer.authorize(alice, DESCRIBE_CONFIGS, TOPIC, 'orders'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), false);
  });

  it('denies by default when no ACL names the resource', () => {
    assert.equal(authorizerWith([]).authorize(alice, READ, TOPIC, 'orders'), false);
  });

  it('allows with allow.everyone.if.no.acl.found when no ACL, of any principal, names the resource', () => {
    const authorizer = authorizerWith(
      [
        acl({ resourceName: 'payments', principal: 'User:bob' }),
        acl({ resourceName: 'pay', patternType: PREFIXED, principal: 'User:bob', host: '10.9.9.9' }),
        acl({ resourceType: GROUP, resourceName: '*', principal: 'User:bob' }),
      ],
      { allowEveryoneIfNoAclFound: true },
    );
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), true, 'ACLs on other names and types do not count');
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'payments'), false, "bob's literal ACL names it");
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'payroll'), false, "bob's prefixed ACL, from another host, names it");
    assert.equal(authorizer.authorize(alice, READ, GROUP, 'g'), false, "bob's wildcard names every group");
  });

  it('allows super users everything, even against DENY ACLs', () => {
    const authorizer = authorizerWith([acl({ resourceName: '*', principal: 'User:*', operation: ALL, permissionType: DENY })], {
      superUsers: ['User:bob'],
    });
    assert.equal(authorizer.authorize(bob, ALTER, TOPIC, 'orders'), true);
    assert.equal(authorizer.authorize(bob, CREATE, CLUSTER, 'kafka-cluster'), true);
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), false);
  });

  it('follows ACLs as they are added and removed by id', () => {
    const authorizer = authorizerWith([]);
    authorizer.addAcl('allow', acl({ resourceName: 'ord', patternType: PREFIXED }));
    authorizer.addAcl('deny', acl({ resourceName: 'orders', permissionType: DENY }));
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), false);
    authorizer.removeAcl('deny');
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), true);
    authorizer.removeAcl('allow');
    assert.equal(authorizer.authorize(alice, READ, TOPIC, 'orders'), false);
    assert.equal(authorizer.acls().size, 0);
  });
});

describe('StandardAuthorizer ACL store', () => {
  it('lists every ACL with its id', () => {
    const a = acl({ resourceName: 'a' });
    const b = acl({ resourceName: 'b', patternType: PREFIXED });
    const authorizer = authorizerWith([]);
    authorizer.addAcl('x', a);
    authorizer.addAcl('y', b);
    assert.deepEqual(
      [...authorizer.acls()],
      [
        ['x', a],
        ['y', b],
      ],
    );
  });

  it('refuses an id twice, a second copy of an ACL, and removing an unknown id, as Kafka does', () => {
    const authorizer = authorizerWith([]);
    authorizer.addAcl('x', acl({}));
    assert.throws(() => authorizer.addAcl('x', acl({ resourceName: 'other' })), { message: 'An ACL with ID x already exists.' });
    assert.throws(() => authorizer.addAcl('y', acl({})), { message: 'Unable to add the ACL with ID y to aclsByResource' });
    assert.throws(() => authorizer.removeAcl('z'), { message: 'ID z not found in aclsById.' });
    assert.equal(authorizer.acls().size, 1);
  });
});

describe('StandardAuthorizer.authorizeAny', () => {
  const user1: RequestIdentity = { principal: 'User:user1', host: '192.168.1.1' };
  const entry = (overrides: Partial<AclBinding>) => acl({ principal: 'User:user1', host: '192.168.1.1', ...overrides });

  it('allows once an ALLOW exists and not while a DENY covers it', () => {
    const authorizer = authorizerWith([]);
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), false);
    authorizer.addAcl('allow', entry({ resourceName: 'sb1' }));
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), true);
    authorizer.addAcl('deny', entry({ resourceName: 'sb1', permissionType: DENY }));
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), false);
    authorizer.removeAcl('deny');
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), true);
  });

  it('ignores DENYs for other principals, hosts, operations and resource types', () => {
    const user1OnHost2 = { ...user1, host: '192.168.1.2' };
    const authorizer = authorizerWith([
      entry({ resourceName: 'sb1', permissionType: DENY }),
      entry({ resourceName: 'sb1', principal: 'User:user2', permissionType: DENY }),
      entry({ resourceName: 'sb1', host: '192.168.1.2', operation: WRITE, permissionType: DENY }),
      entry({ resourceName: 'sb1', principal: 'User:user2', host: '192.168.1.2', permissionType: DENY }),
      entry({ resourceName: 'sb1', host: '192.168.1.2' }),
      entry({ resourceName: 'sb2', host: '192.168.1.2', permissionType: DENY }),
      entry({ resourceType: GROUP, resourceName: 's', patternType: PREFIXED, host: '192.168.1.2', permissionType: DENY }),
    ]);
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), false);
    assert.equal(authorizer.authorizeAny(user1, READ, GROUP), false);
    assert.equal(authorizer.authorizeAny(user1OnHost2, READ, TOPIC), true);
  });

  it('lets a denied prefix dominate every ALLOW under it, and only those', () => {
    const authorizer = authorizerWith([]);
    const group = (name: string, permissionType: number) =>
      entry({ resourceType: GROUP, resourceName: name, patternType: PREFIXED, permissionType });
    authorizer.addAcl('1', group('abcde', ALLOW));
    assert.equal(authorizer.authorizeAny(user1, READ, GROUP), true);
    authorizer.addAcl('2', group('abcd', DENY));
    assert.equal(authorizer.authorizeAny(user1, READ, GROUP), false);
    authorizer.addAcl('3', group('abc', ALLOW));
    assert.equal(authorizer.authorizeAny(user1, READ, GROUP), true);
    authorizer.addAcl('4', group('a', DENY));
    assert.equal(authorizer.authorizeAny(user1, READ, GROUP), false);
    authorizer.addAcl('5', group('ab', ALLOW));
    assert.equal(authorizer.authorizeAny(user1, READ, GROUP), false);
  });

  it('does not let a denied literal dominate an allowed prefix of the same name', () => {
    const authorizer = authorizerWith([
      entry({ resourceName: 'orders', patternType: PREFIXED }),
      entry({ resourceName: 'orders', permissionType: DENY }),
    ]);
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), true);
  });

  it('denies outright on a wildcard DENY, whatever else is allowed', () => {
    const authorizer = authorizerWith([entry({ resourceType: GROUP, resourceName: 'hello', patternType: PREFIXED, operation: WRITE })]);
    assert.equal(authorizer.authorizeAny(user1, WRITE, GROUP), true);
    authorizer.addAcl('deny-all', entry({ resourceType: GROUP, resourceName: '*', operation: WRITE, permissionType: DENY }));
    assert.equal(authorizer.authorizeAny(user1, WRITE, GROUP), false);
    authorizer.addAcl('allow-all', entry({ resourceType: GROUP, resourceName: '*', operation: WRITE }));
    assert.equal(authorizer.authorizeAny(user1, WRITE, GROUP), false);
  });

  it('allows on a wildcard ALLOW', () => {
    const authorizer = authorizerWith([
      entry({ resourceName: '*', principal: 'User:*', host: '*', operation: WRITE }),
      entry({ resourceName: 'hard', patternType: PREFIXED, operation: WRITE, permissionType: DENY }),
    ]);
    assert.equal(authorizer.authorizeAny(user1, WRITE, TOPIC), true);
  });

  it('counts ALL ACLs for every operation', () => {
    const authorizer = authorizerWith([
      entry({ resourceName: 'sb1', operation: WRITE, permissionType: DENY }),
      entry({ resourceName: 'sb1', operation: ALL }),
    ]);
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), true);
    authorizer.addAcl('deny-all', entry({ resourceName: 'sb1', operation: ALL, permissionType: DENY }));
    assert.equal(authorizer.authorizeAny(user1, READ, TOPIC), false);
  });

  it('does not count an implied operation', () => {
    const authorizer = authorizerWith([entry({ resourceType: TRANSACTIONAL_ID, resourceName: 'tx', operation: WRITE })]);
    assert.equal(authorizer.authorize(user1, DESCRIBE, TRANSACTIONAL_ID, 'tx'), true);
    assert.equal(authorizer.authorizeAny(user1, DESCRIBE, TRANSACTIONAL_ID), false);
  });

  it('allows super users, whatever the ACLs', () => {
    const authorizer = authorizerWith([acl({ resourceName: '*', principal: 'User:*', operation: ALL, permissionType: DENY })], {
      superUsers: ['User:user1'],
    });
    assert.equal(authorizer.authorizeAny(user1, WRITE, TOPIC), true);
  });

  it('asks the no-ACL default about a resource named "hardcode", as Kafka does', () => {
    const elsewhere = authorizerWith([acl({ resourceName: 'orders', principal: 'User:bob' })], { allowEveryoneIfNoAclFound: true });
    assert.equal(elsewhere.authorizeAny(user1, WRITE, TOPIC), true);
    const onHardcode = authorizerWith([acl({ resourceName: 'hard', patternType: PREFIXED, principal: 'User:bob' })], {
      allowEveryoneIfNoAclFound: true,
    });
    assert.equal(onHardcode.authorizeAny(user1, WRITE, TOPIC), false);
  });

  it('refuses filter and unknown arguments, as a bug of the caller', () => {
    const authorizer = authorizerWith([]);
    assert.throws(() => authorizer.authorizeAny(user1, READ, ResourceType.ANY), {
      message: 'Must specify a non-filter resource type for authorizeByResourceType',
    });
    assert.throws(() => authorizer.authorizeAny(user1, READ, ResourceType.UNKNOWN), { message: 'Unknown resource type' });
    assert.throws(() => authorizer.authorizeAny(user1, AclOperation.ANY, TOPIC), {
      message: 'Must specify a non-filter operation type for authorizeByResourceType',
    });
    assert.throws(() => authorizer.authorizeAny(user1, AclOperation.UNKNOWN, TOPIC), { message: 'Unknown operation type' });
  });
});

describe('StandardAuthorizer.authorizedOperations', () => {
  it('sets the bit of each operation the resource type has that is allowed', () => {
    const authorizer = authorizerWith([acl({ operation: READ }), acl({ operation: ALTER_CONFIGS })]);
    assert.equal(authorizer.authorizedOperations(alice, TOPIC, 'orders'), bits(READ, DESCRIBE, ALTER_CONFIGS, DESCRIBE_CONFIGS));
    assert.equal(authorizer.authorizedOperations(bob, TOPIC, 'orders'), 0);
  });

  it('covers exactly the operations Kafka lists for each resource type', () => {
    const superUser = authorizerWith([], { superUsers: ['User:alice'] });
    const { CLUSTER_ACTION, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS } = AclOperation;
    assert.equal(
      superUser.authorizedOperations(alice, TOPIC, 't'),
      bits(READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    );
    assert.equal(superUser.authorizedOperations(alice, GROUP, 'g'), bits(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS));
    assert.equal(
      superUser.authorizedOperations(alice, CLUSTER, 'kafka-cluster'),
      bits(CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE),
    );
    assert.equal(superUser.authorizedOperations(alice, TRANSACTIONAL_ID, 'tx'), bits(DESCRIBE, WRITE));
    assert.equal(superUser.authorizedOperations(alice, ResourceType.DELEGATION_TOKEN, 'tok'), bits(DESCRIBE));
    assert.equal(superUser.authorizedOperations(alice, ResourceType.USER, 'u'), bits(CREATE_TOKENS, DESCRIBE_TOKENS));
  });

  it('gives every operation of the type when no ACL names the resource and allow.everyone.if.no.acl.found is set', () => {
    const authorizer = authorizerWith([], { allowEveryoneIfNoAclFound: true });
    assert.equal(authorizer.authorizedOperations(alice, TRANSACTIONAL_ID, 'tx'), bits(DESCRIBE, WRITE));
  });

  it('refuses a resource type that is not concrete', () => {
    assert.throws(() => authorizerWith([]).authorizedOperations(alice, ResourceType.ANY, 'x'), { message: 'Not a concrete resource type' });
  });
});

/** The semantics stated plainly: every ACL examined, no index. */
function naiveAuthorize(
  bindings: readonly AclBinding[],
  options: StandardAuthorizerOptions,
  identity: RequestIdentity,
  operation: number,
  resourceType: number,
  resourceName: string,
): boolean {
  if (options.superUsers.includes(identity.principal)) return true;
  const onResource = bindings.filter(
    (b) =>
      b.resourceType === resourceType &&
      (b.patternType === LITERAL ? b.resourceName === resourceName || b.resourceName === '*' : resourceName.startsWith(b.resourceName)),
  );
  const applying = onResource.filter(
    (b) => (b.principal === identity.principal || b.principal === 'User:*') && (b.host === identity.host || b.host === '*'),
  );
  const denied = applying.some((b) => b.permissionType === DENY && (b.operation === ALL || b.operation === operation));
  if (denied) return false;
  const allowed = applying.some(
    (b) =>
      b.permissionType === ALLOW &&
      (b.operation === ALL ||
        b.operation === operation ||
        (operation === DESCRIBE && new Set<number>([READ, WRITE, DELETE, ALTER]).has(b.operation)) ||
        (operation === DESCRIBE_CONFIGS && b.operation === ALTER_CONFIGS)),
  );
  return allowed || (onResource.length === 0 && options.allowEveryoneIfNoAclFound);
}

describe('StandardAuthorizer against a linear model', () => {
  const names = fc.string({ unit: fc.constantFrom('a', 'b', '*'), minLength: 1, maxLength: 3 });
  const operations = fc.integer({ min: ALL, max: AclOperation.DESCRIBE_TOKENS });
  const principals = fc.constantFrom('User:alice', 'User:bob', 'User:*', 'Group:*', 'Group:alice');
  const hosts = fc.constantFrom('10.0.0.1', '10.0.0.2');
  const bindings = fc.uniqueArray(
    fc.record({
      resourceType: fc.constantFrom(TOPIC, GROUP),
      resourceName: names,
      patternType: fc.constantFrom(LITERAL, PREFIXED),
      principal: principals,
      host: fc.oneof(hosts, fc.constant('*')),
      operation: operations,
      permissionType: fc.constantFrom(ALLOW, DENY),
    }),
    { selector: (b) => JSON.stringify(b), maxLength: 40 },
  );
  const queries = fc.array(
    fc.record({
      identity: fc.record({ principal: fc.constantFrom('User:alice', 'User:bob', 'Group:alice'), host: hosts }),
      operation: operations,
      resourceType: fc.constantFrom(TOPIC, GROUP),
      resourceName: fc.oneof(names, fc.constant('')),
    }),
    { minLength: 1, maxLength: 30 },
  );
  const options = fc.record({
    superUsers: fc.constantFrom([], ['User:bob']),
    allowEveryoneIfNoAclFound: fc.boolean(),
  });

  it('agrees on every check after ACLs are added and some removed', () => {
    fc.assert(
      fc.property(bindings, fc.array(fc.boolean(), { maxLength: 40 }), options, queries, (all, removals, opts, checks) => {
        const authorizer = new StandardAuthorizer(opts);
        addAll(authorizer, all);
        const kept = all.filter((_, i) => {
          if (!removals[i]) return true;
          authorizer.removeAcl(`id-${i}`);
          return false;
        });
        for (const q of checks) {
          const expected = naiveAuthorize(kept, opts, q.identity, q.operation, q.resourceType, q.resourceName);
          assert.equal(authorizer.authorize(q.identity, q.operation, q.resourceType, q.resourceName), expected);
        }
        assert.equal(authorizer.acls().size, kept.length);
      }),
      { numRuns: 300 },
    );
  });

  it('builds authorized operations from the same checks', () => {
    const supported = new Map<number, readonly number[]>([
      [TOPIC, [READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS]],
      [GROUP, [READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS]],
    ]);
    fc.assert(
      fc.property(bindings, options, queries, (all, opts, checks) => {
        const authorizer = new StandardAuthorizer(opts);
        addAll(authorizer, all);
        for (const q of checks) {
          const allowed = supported
            .get(q.resourceType)!
            .filter((op) => naiveAuthorize(all, opts, q.identity, op, q.resourceType, q.resourceName));
          assert.equal(authorizer.authorizedOperations(q.identity, q.resourceType, q.resourceName), bits(...allowed));
        }
      }),
    );
  });
});
