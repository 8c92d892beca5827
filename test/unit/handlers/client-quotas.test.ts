import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import type { DescribeClientQuotasRequestComponentData as Component } from '../../../protocol/messages/describe-client-quotas.ts';
import { handleAlterClientQuotas, handleDescribeClientQuotas } from '../../../src/handlers/client-quotas.ts';
import { MetadataImage } from '../../../src/metadata/image.ts';
import type { MetadataRecord } from '../../../src/metadata/records.ts';
import { activeController } from '../metadata/image-sink.ts';

const EXACT = 0;
const DEFAULT = 1;
const SPECIFIED = 2;

type Entity = [string, string | null][];

const quota = (entity: Entity, key: string, value: number): MetadataRecord => ({
  type: 'ClientQuotaRecord',
  data: { entity: entity.map(([entityType, entityName]) => ({ entityType, entityName })), key, value, remove: false },
});

/** One quota per entity, each a different value, so an answer names what matched. */
const IMAGE = MetadataImage.EMPTY.apply(
  [
    quota([['user', 'alice']], 'producer_byte_rate', 1),
    quota([['user', null]], 'producer_byte_rate', 2),
    quota(
      [
        ['user', 'alice'],
        ['client-id', 'app'],
      ],
      'producer_byte_rate',
      3,
    ),
    quota(
      [
        ['user', null],
        ['client-id', null],
      ],
      'producer_byte_rate',
      4,
    ),
    quota([['client-id', null]], 'consumer_byte_rate', 5),
    quota([['client-id', 'app']], 'consumer_byte_rate', 6),
    quota([['ip', '10.0.0.1']], 'connection_creation_rate', 7),
    quota([['ip', null]], 'connection_creation_rate', 8),
  ],
  7,
  1,
).image;

const describe_ = (components: Component[], strict = false, image = IMAGE) => handleDescribeClientQuotas(image, { components, strict });

/** The values of the entries a filter matched, sorted. */
function matched(components: Component[], strict = false): number[] {
  const res = describe_(components, strict);
  assert.equal(res.errorCode, Errors.NONE.code, res.errorMessage ?? '');
  return res.entries!.map((e) => e.values[0]!.value).sort((a, b) => a - b);
}

const exact = (entityType: string, match: string): Component => ({ entityType, matchType: EXACT, match });
const default_ = (entityType: string): Component => ({ entityType, matchType: DEFAULT, match: null });
const specified = (entityType: string): Component => ({ entityType, matchType: SPECIFIED, match: null });

describe('DescribeClientQuotas', () => {
  it('matches as ClientQuotasImage.describe: exact names, the default, any name, and every entity for an empty filter', () => {
    assert.deepEqual(matched([]), [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.deepEqual(matched([exact('user', 'alice')]), [1, 3]);
    assert.deepEqual(matched([default_('user')]), [2, 4]);
    assert.deepEqual(matched([specified('user')]), [1, 2, 3, 4]);
    assert.deepEqual(matched([exact('user', 'alice'), exact('client-id', 'app')]), [3]);
    assert.deepEqual(matched([specified('user'), default_('client-id')]), [4]);
    assert.deepEqual(matched([specified('client-id')]), [3, 4, 5, 6]);
    assert.deepEqual(matched([exact('user', 'nobody')]), []);
    assert.deepEqual(matched([specified('ip')]), [7, 8]);
    assert.deepEqual(matched([default_('ip')]), [8]);
  });

  it('with strict, matches only entities with no other type than the filter’s', () => {
    assert.deepEqual(matched([], true), []);
    assert.deepEqual(matched([exact('user', 'alice')], true), [1]);
    assert.deepEqual(matched([specified('user')], true), [1, 2]);
    assert.deepEqual(matched([specified('client-id')], true), [5, 6]);
    assert.deepEqual(matched([specified('user'), specified('client-id')], true), [3, 4]);
  });

  it('names the default null and lists each value of the entity', () => {
    const image = MetadataImage.EMPTY.apply(
      [
        quota(
          [
            ['client-id', null],
            ['user', 'bob'],
          ],
          'producer_byte_rate',
          1024,
        ),
        quota(
          [
            ['user', 'bob'],
            ['client-id', null],
          ],
          'request_percentage',
          12.5,
        ),
      ],
      1,
      1,
    ).image;
    const res = describe_([exact('user', 'bob')], false, image);
    assert.deepEqual(res.entries, [
      {
        entity: [
          { entityType: 'user', entityName: 'bob' },
          { entityType: 'client-id', entityName: null },
        ],
        values: [
          { key: 'producer_byte_rate', value: 1024 },
          { key: 'request_percentage', value: 12.5 },
        ],
      },
    ]);
  });

  it('refuses the filters Kafka refuses, with its messages', () => {
    const cases: [Component[], number, string][] = [
      [[exact('', 'x')], Errors.INVALID_REQUEST.code, 'Invalid empty entity type.'],
      [
        [specified('user'), exact('user', 'a')],
        Errors.INVALID_REQUEST.code,
        'Entity type user cannot appear more than once in the filter.',
      ],
      [[specified('group')], Errors.UNSUPPORTED_VERSION.code, 'Unsupported entity type group'],
      [
        [{ entityType: 'user', matchType: EXACT, match: null }],
        Errors.INVALID_REQUEST.code,
        'Request specified MATCH_TYPE_EXACT, but set match string to null.',
      ],
      [
        [{ entityType: 'user', matchType: DEFAULT, match: 'a' }],
        Errors.INVALID_REQUEST.code,
        'Request specified MATCH_TYPE_DEFAULT, but also specified a match string.',
      ],
      [
        [{ entityType: 'user', matchType: SPECIFIED, match: 'a' }],
        Errors.INVALID_REQUEST.code,
        'Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.',
      ],
      [[{ entityType: 'user', matchType: 7, match: null }], Errors.INVALID_REQUEST.code, 'Unknown match type 7'],
      [
        [specified('ip'), specified('user')],
        Errors.INVALID_REQUEST.code,
        'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.',
      ],
      [
        [default_('client-id'), exact('ip', '1.2.3.4')],
        Errors.INVALID_REQUEST.code,
        'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.',
      ],
    ];
    for (const [components, code, message] of cases) {
      const res = describe_(components);
      assert.equal(res.errorCode, code, message);
      assert.equal(res.errorMessage, message);
      assert.equal(res.entries, null);
    }
  });
});

describe('AlterClientQuotas', () => {
  it('answers each entry with its entity and Kafka’s error', async () => {
    const { controller } = await activeController();
    const res = await handleAlterClientQuotas(controller, {
      validateOnly: false,
      entries: [
        { entity: [{ entityType: 'user', entityName: null }], ops: [{ key: 'producer_byte_rate', value: 1024, remove: false }] },
        { entity: [{ entityType: 'user', entityName: 'x' }], ops: [{ key: 'producer_byte_rate', value: 1.5, remove: false }] },
      ],
    });
    const byName = new Map(res.entries.map((e) => [e.entity[0]!.entityName, e]));
    assert.deepEqual(byName.get(null), {
      errorCode: Errors.NONE.code,
      errorMessage: null,
      entity: [{ entityType: 'user', entityName: null }],
    });
    assert.equal(byName.get('x')!.errorCode, Errors.INVALID_REQUEST.code);
    assert.equal(byName.get('x')!.errorMessage, 'producer_byte_rate cannot be a fractional value.');
  });

  it('then DescribeClientQuotas of exactly that entity returns what was set (property)', async () => {
    const name = fc.option(fc.string({ minLength: 1, maxLength: 8 }));
    const entity = fc.oneof(
      fc.record({ user: name }),
      fc.record({ 'client-id': name }),
      fc.record({ user: name, 'client-id': name }),
      fc.record({ ip: fc.option(fc.constantFrom('10.1.2.3', '192.168.0.1', '::1', 'fe80::2')) }),
    );
    const whole = fc.integer({ min: 1, max: 2 ** 40 });
    const userOrClientQuotas = fc.record(
      {
        producer_byte_rate: whole,
        consumer_byte_rate: whole,
        request_percentage: fc.double({ min: 0.01, max: 1000, noNaN: true }),
        controller_mutation_rate: fc.double({ min: 0.01, max: 1000, noNaN: true }),
      },
      { requiredKeys: [] },
    );
    const ipQuotas = fc.record({ connection_creation_rate: fc.integer({ min: 1, max: 2 ** 31 - 1 }) });
    await fc.assert(
      fc.asyncProperty(entity, userOrClientQuotas, ipQuotas, async (e, userQuotas, ipQuota) => {
        const { sink, controller } = await activeController();
        const quotas: Record<string, number> = 'ip' in e ? ipQuota : userQuotas;
        const entityData = Object.entries(e).map(([entityType, entityName]) => ({ entityType, entityName }));
        const ops = Object.entries(quotas).map(([key, value]) => ({ key, value, remove: false }));
        const altered = await handleAlterClientQuotas(controller, { validateOnly: false, entries: [{ entity: entityData, ops }] });
        assert.equal(altered.entries[0]!.errorCode, Errors.NONE.code, altered.entries[0]!.errorMessage ?? '');
        const components = entityData.map(({ entityType, entityName }) =>
          entityName === null ? default_(entityType) : exact(entityType, entityName),
        );
        const described = describe_(components, true, sink.current);
        assert.equal(described.errorCode, Errors.NONE.code);
        if (ops.length === 0) {
          assert.deepEqual(described.entries, []);
          return;
        }
        assert.equal(described.entries!.length, 1);
        const [only] = described.entries!;
        assert.deepEqual(
          new Map(only!.entity.map((d) => [d.entityType, d.entityName])),
          new Map(entityData.map((d) => [d.entityType, d.entityName])),
        );
        assert.deepEqual(new Map(only!.values.map((v) => [v.key, v.value])), new Map(Object.entries(quotas)));
      }),
      { numRuns: 60 },
    );
  });
});
