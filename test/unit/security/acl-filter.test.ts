import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { createAclsRefusal, filterRefusal, matchesFilter } from '../../../src/security/acl-filter.ts';
import {
  type AclBinding,
  type AclBindingFilter,
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
} from '../../../src/security/acl-types.ts';

const ANY_FILTER: AclBindingFilter = {
  resourceType: ResourceType.ANY,
  resourceName: null,
  patternType: PatternType.ANY,
  principal: null,
  host: null,
  operation: AclOperation.ANY,
  permissionType: AclPermissionType.ANY,
};

function binding(overrides: Partial<AclBinding> = {}): AclBinding {
  return {
    resourceType: ResourceType.TOPIC,
    resourceName: 'Name',
    patternType: PatternType.LITERAL,
    principal: 'User:alice',
    host: '*',
    operation: AclOperation.READ,
    permissionType: AclPermissionType.ALLOW,
    ...overrides,
  };
}

function filter(overrides: Partial<AclBindingFilter>): AclBindingFilter {
  return { ...ANY_FILTER, ...overrides };
}

function patternMatches(filterName: string | null, filterPattern: number, name: string, pattern: number): boolean {
  return matchesFilter(
    binding({ resourceName: name, patternType: pattern }),
    filter({ resourceType: ResourceType.TOPIC, resourceName: filterName, patternType: filterPattern }),
  );
}

describe('matchesFilter', () => {
  it('matches every binding with the ANY filter', () => {
    const bindings = fc.record({
      resourceType: fc.integer({ min: 2, max: 7 }),
      resourceName: fc.string({ minLength: 1 }),
      patternType: fc.constantFrom(PatternType.LITERAL, PatternType.PREFIXED),
      principal: fc.string(),
      host: fc.string(),
      operation: fc.integer({ min: 2, max: 14 }),
      permissionType: fc.constantFrom(AclPermissionType.DENY, AclPermissionType.ALLOW),
    });
    fc.assert(fc.property(bindings, (b) => matchesFilter(b, ANY_FILTER)));
  });

  it('compares the resource type unless the filter says ANY', () => {
    assert.equal(matchesFilter(binding(), filter({ resourceType: ResourceType.GROUP })), false);
    assert.equal(matchesFilter(binding(), filter({ resourceType: ResourceType.TOPIC })), true);
  });

  it('with a LITERAL or PREFIXED filter, selects that pattern type and exactly that name', () => {
    assert.equal(patternMatches('Name', PatternType.LITERAL, 'Name', PatternType.LITERAL), true);
    assert.equal(patternMatches('NAME', PatternType.LITERAL, 'Name', PatternType.LITERAL), false);
    assert.equal(patternMatches('Name', PatternType.LITERAL, 'Name', PatternType.PREFIXED), false);
    assert.equal(patternMatches('Name', PatternType.PREFIXED, 'Name', PatternType.PREFIXED), true);
    assert.equal(patternMatches('Name', PatternType.PREFIXED, 'Name-something', PatternType.PREFIXED), false);
    assert.equal(patternMatches('Name-something', PatternType.PREFIXED, 'Name', PatternType.PREFIXED), false);
    assert.equal(patternMatches('Different', PatternType.PREFIXED, 'Name', PatternType.PREFIXED), false);
  });

  it('does not treat the wildcard name as a wildcard outside MATCH', () => {
    assert.equal(patternMatches('*', PatternType.LITERAL, '*', PatternType.LITERAL), true);
    assert.equal(patternMatches('Name', PatternType.LITERAL, '*', PatternType.LITERAL), false);
    assert.equal(patternMatches('*', PatternType.LITERAL, 'Name', PatternType.LITERAL), false);
    assert.equal(patternMatches('Name', PatternType.ANY, '*', PatternType.LITERAL), false);
  });

  it('with pattern type ANY, selects either pattern type by exact name', () => {
    assert.equal(patternMatches('Name', PatternType.ANY, 'Name', PatternType.LITERAL), true);
    assert.equal(patternMatches('Name', PatternType.ANY, 'Name', PatternType.PREFIXED), true);
    assert.equal(patternMatches('Name-something', PatternType.ANY, 'Name', PatternType.PREFIXED), false);
    assert.equal(patternMatches(null, PatternType.ANY, 'Name', PatternType.PREFIXED), true);
  });

  it('with pattern type MATCH, selects every binding that applies to the name: literal, wildcard and prefixes', () => {
    assert.equal(patternMatches('Name', PatternType.MATCH, 'Name', PatternType.LITERAL), true);
    assert.equal(patternMatches('Name', PatternType.MATCH, '*', PatternType.LITERAL), true);
    assert.equal(patternMatches('Name-something', PatternType.MATCH, 'Name', PatternType.PREFIXED), true);
    assert.equal(patternMatches('Name', PatternType.MATCH, 'Name', PatternType.PREFIXED), true);
    assert.equal(patternMatches('Name-something', PatternType.MATCH, 'Name', PatternType.LITERAL), false);
    assert.equal(patternMatches('Na', PatternType.MATCH, 'Name', PatternType.PREFIXED), false);
    assert.equal(patternMatches(null, PatternType.MATCH, 'Name', PatternType.PREFIXED), true);
  });

  it('compares principal, host, operation and permission unless the filter leaves them open', () => {
    const b = binding();
    assert.equal(matchesFilter(b, filter({ principal: 'User:alice', host: '*' })), true);
    assert.equal(matchesFilter(b, filter({ principal: 'User:bob' })), false);
    assert.equal(matchesFilter(b, filter({ principal: 'User:*' })), false, 'the wildcard principal is a value here, not a pattern');
    assert.equal(matchesFilter(b, filter({ host: '10.0.0.1' })), false);
    assert.equal(matchesFilter(b, filter({ operation: AclOperation.READ })), true);
    assert.equal(matchesFilter(b, filter({ operation: AclOperation.ALL })), false, 'ALL in a filter selects ALL ACLs only');
    assert.equal(matchesFilter(b, filter({ permissionType: AclPermissionType.ALLOW })), true);
    assert.equal(matchesFilter(b, filter({ permissionType: AclPermissionType.DENY })), false);
  });
});

describe('createAclsRefusal', () => {
  function refusal(overrides: Partial<AclBinding>) {
    return createAclsRefusal(binding(overrides));
  }
  function invalid(message: string) {
    return { errorCode: Errors.INVALID_REQUEST.code, message };
  }

  it('accepts a literal or prefixed ALLOW or DENY with a typed principal', () => {
    assert.equal(refusal({}), null);
    assert.equal(refusal({ patternType: PatternType.PREFIXED, permissionType: AclPermissionType.DENY }), null);
    assert.equal(refusal({ principal: 'User:*', operation: AclOperation.ALL, resourceName: '*' }), null);
    assert.equal(refusal({ resourceType: ResourceType.CLUSTER, resourceName: 'kafka-cluster' }), null);
  });

  it('refuses UNKNOWN and ANY resource types, naming them as Kafka does', () => {
    assert.deepEqual(refusal({ resourceType: ResourceType.ANY }), invalid('Invalid resourceType ANY'));
    assert.deepEqual(refusal({ resourceType: ResourceType.UNKNOWN }), invalid('Invalid resourceType UNKNOWN'));
    assert.deepEqual(refusal({ resourceType: 42 }), invalid('Invalid resourceType UNKNOWN'), 'an undefined code reads as UNKNOWN');
  });

  it('refuses every pattern type but LITERAL and PREFIXED', () => {
    assert.deepEqual(refusal({ patternType: PatternType.MATCH }), invalid('Invalid patternType MATCH'));
    assert.deepEqual(refusal({ patternType: PatternType.ANY }), invalid('Invalid patternType ANY'));
    assert.deepEqual(refusal({ patternType: PatternType.UNKNOWN }), invalid('Invalid patternType UNKNOWN'));
  });

  it('refuses UNKNOWN and ANY operations and permission types', () => {
    assert.deepEqual(refusal({ operation: AclOperation.ANY }), invalid('Invalid operation ANY'));
    assert.deepEqual(refusal({ operation: AclOperation.UNKNOWN }), invalid('Invalid operation UNKNOWN'));
    assert.deepEqual(refusal({ operation: 99 }), invalid('Invalid operation UNKNOWN'));
    assert.deepEqual(refusal({ permissionType: AclPermissionType.ANY }), invalid('Invalid permissionType ANY'));
    assert.deepEqual(refusal({ permissionType: AclPermissionType.UNKNOWN }), invalid('Invalid permissionType UNKNOWN'));
  });

  it('refuses a CLUSTER ACL on any name but kafka-cluster', () => {
    assert.deepEqual(
      refusal({ resourceType: ResourceType.CLUSTER, resourceName: 'my-cluster' }),
      invalid('The only valid name for the CLUSTER resource is kafka-cluster'),
    );
    assert.deepEqual(
      refusal({ resourceType: ResourceType.CLUSTER, resourceName: '*' }),
      invalid('The only valid name for the CLUSTER resource is kafka-cluster'),
    );
  });

  it('refuses an empty resource name', () => {
    assert.deepEqual(refusal({ resourceName: '' }), invalid('Invalid empty resource name'));
    assert.deepEqual(refusal({ resourceName: '', patternType: PatternType.PREFIXED }), invalid('Invalid empty resource name'));
  });

  it('refuses a principal with no type', () => {
    assert.deepEqual(
      refusal({ principal: 'alice' }),
      invalid('Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)'),
    );
    assert.equal(refusal({ principal: 'Group:team:a' }), null, 'the type ends at the first colon; the name may hold more');
  });

  it('checks the codes before the names', () => {
    assert.deepEqual(refusal({ resourceType: ResourceType.ANY, resourceName: '' }), invalid('Invalid resourceType ANY'));
  });
});

describe('filterRefusal', () => {
  it('accepts filters of ANY, MATCH and concrete values', () => {
    assert.equal(filterRefusal(ANY_FILTER), null);
    assert.equal(filterRefusal(filter({ patternType: PatternType.MATCH, resourceName: 'x' })), null);
    assert.equal(
      filterRefusal({
        resourceType: ResourceType.TOPIC,
        resourceName: 'x',
        patternType: PatternType.PREFIXED,
        principal: 'User:a',
        host: '*',
        operation: AclOperation.ALL,
        permissionType: AclPermissionType.DENY,
      }),
      null,
    );
  });

  it('refuses UNKNOWN in the resource pattern part', () => {
    const unknownPattern = { errorCode: Errors.INVALID_REQUEST.code, message: 'Unknown patternFilter.' };
    assert.deepEqual(filterRefusal(filter({ resourceType: ResourceType.UNKNOWN })), unknownPattern);
    assert.deepEqual(filterRefusal(filter({ patternType: PatternType.UNKNOWN })), unknownPattern);
    assert.deepEqual(filterRefusal(filter({ resourceType: 77 })), unknownPattern);
  });

  it('refuses UNKNOWN in the entry part', () => {
    const unknownEntry = { errorCode: Errors.INVALID_REQUEST.code, message: 'Unknown entryFilter.' };
    assert.deepEqual(filterRefusal(filter({ operation: AclOperation.UNKNOWN })), unknownEntry);
    assert.deepEqual(filterRefusal(filter({ permissionType: AclPermissionType.UNKNOWN })), unknownEntry);
    assert.deepEqual(filterRefusal(filter({ operation: 15 })), unknownEntry);
  });
});
