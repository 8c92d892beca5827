import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { handleDescribeAcls } from '../../../src/handlers/acls.ts';
import { MetadataImage, imageToRecords } from '../../../src/metadata/image.ts';
import { applyAclDelta } from '../../../src/security/authorizer-config.ts';
import { StandardAuthorizer } from '../../../src/security/authorizer.ts';
import { AclOperation, AclPermissionType, PatternType, ResourceType } from '../../../src/security/acl-types.ts';
import { activeController } from './image-sink.ts';

const creation = (
  principal: string,
  fields: Partial<{ resourceName: string; patternType: number; operation: number; permissionType: number }> = {},
) => ({
  resourceType: ResourceType.TOPIC,
  resourceName: fields.resourceName ?? 'orders',
  resourcePatternType: fields.patternType ?? PatternType.LITERAL,
  principal,
  host: '*',
  operation: fields.operation ?? AclOperation.READ,
  permissionType: fields.permissionType ?? AclPermissionType.ALLOW,
});

const ANY_FILTER = {
  resourceTypeFilter: ResourceType.ANY,
  resourceNameFilter: null,
  patternTypeFilter: PatternType.ANY,
  principalFilter: null,
  hostFilter: null,
  operation: AclOperation.ANY,
  permissionType: AclPermissionType.ANY,
};

describe('ACLs in the metadata log', () => {
  it('creates each valid binding once, refuses invalid ones alone, and describes them grouped by resource', async () => {
    const { sink, controller } = await activeController();
    const results = await controller.createAcls([
      creation('User:alice'),
      creation('User:alice'),
      creation('alice'),
      creation('User:bob', { resourceName: 'ord', patternType: PatternType.PREFIXED, operation: AclOperation.WRITE }),
    ]);
    assert.deepEqual(
      results.map((r) => r.errorCode),
      [0, 0, Errors.INVALID_REQUEST.code, 0],
    );
    assert.equal(sink.current.acls.size, 2);
    await controller.createAcls([creation('User:alice')]);
    assert.equal(sink.current.acls.size, 2);
    const described = handleDescribeAcls(sink.current, {
      resourceTypeFilter: ResourceType.TOPIC,
      resourceNameFilter: 'orders',
      patternTypeFilter: PatternType.MATCH,
      principalFilter: null,
      hostFilter: null,
      operation: AclOperation.ANY,
      permissionType: AclPermissionType.ANY,
    });
    assert.deepEqual(
      described.resources.map((r) => [r.resourceName, r.patternType, r.acls.map((a) => a.principal)]),
      [
        ['orders', PatternType.LITERAL, ['User:alice']],
        ['ord', PatternType.PREFIXED, ['User:bob']],
      ],
    );
  });

  it('deletes what each filter matches, each binding once, and keeps the authorizer in step through deltas and snapshots', async () => {
    const { sink, controller } = await activeController();
    const authorizer = new StandardAuthorizer({ superUsers: [], allowEveryoneIfNoAclFound: false });
    await controller.createAcls([creation('User:alice'), creation('User:bob')]);
    for (const delta of sink.deltas) applyAclDelta(authorizer, delta);
    const alice = { principal: 'User:alice', host: '10.0.0.1' };
    assert.equal(authorizer.authorize(alice, AclOperation.READ, ResourceType.TOPIC, 'orders'), true);
    const seen = sink.deltas.length;
    const results = await controller.deleteAcls([{ ...ANY_FILTER, principalFilter: 'User:alice' }, ANY_FILTER]);
    assert.deepEqual(
      results.map((r) => r.matching.map((b) => b.principal)),
      [['User:alice'], ['User:alice', 'User:bob']],
    );
    assert.equal(sink.current.acls.size, 0);
    for (const delta of sink.deltas.slice(seen)) applyAclDelta(authorizer, delta);
    assert.equal(authorizer.authorize(alice, AclOperation.READ, ResourceType.TOPIC, 'orders'), false);
    const refused = await controller.deleteAcls([{ ...ANY_FILTER, patternTypeFilter: 99 }]);
    assert.equal(refused[0]!.errorCode, Errors.INVALID_REQUEST.code);
  });

  it('rebuilds the same ACLs from a snapshot of the image', async () => {
    const { sink, controller } = await activeController();
    await controller.createAcls([
      creation('User:alice'),
      creation('User:*', { operation: AclOperation.ALL, permissionType: AclPermissionType.DENY }),
    ]);
    const rebuilt = MetadataImage.EMPTY.apply(imageToRecords(sink.current), 0, 1).image;
    assert.deepEqual(rebuilt.acls, sink.current.acls);
  });
});
