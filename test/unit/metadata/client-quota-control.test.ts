import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import type { AlterClientQuotasRequestEntryData } from '../../../protocol/messages/alter-client-quotas.ts';
import { javaHashMapOrder, planClientQuotaAlterations } from '../../../src/metadata/client-quota-control.ts';
import { imageToRecords, MetadataImage } from '../../../src/metadata/image.ts';
import type { ClientQuotaLookup } from '../../../src/quota/entity.ts';
import { activeController } from './image-sink.ts';

type Entity = [string, string | null][];
type Op = [string, number | null];

const entry = (entity: Entity, ops: Op[]): AlterClientQuotasRequestEntryData => ({
  entity: entity.map(([entityType, entityName]) => ({ entityType, entityName })),
  ops: ops.map(([key, value]) => ({ key, value: value ?? 0, remove: value === null })),
});

const alter = (entries: AlterClientQuotasRequestEntryData[], validateOnly = false) => ({ entries, validateOnly });

/** Decides one entry against `image` and returns its answer. */
function decide(entity: Entity, ops: Op[], image = MetadataImage.EMPTY) {
  const { results } = planClientQuotaAlterations(image, alter([entry(entity, ops)]));
  assert.equal(results.length, 1);
  return [results[0]!.errorCode, results[0]!.errorMessage];
}

const invalid = (message: string) => [Errors.INVALID_REQUEST.code, message];

describe('client quotas in the metadata log', () => {
  it('stores each entity’s quotas under exactly that entity: a name, the default, and a user with a client id', async () => {
    const { sink, controller } = await activeController();
    const results = await controller.alterClientQuotas(
      alter([
        entry(
          [['user', 'alice']],
          [
            ['producer_byte_rate', 1024],
            ['consumer_byte_rate', 2048],
          ],
        ),
        entry([['client-id', null]], [['request_percentage', 12.5]]),
        entry(
          [
            ['user', 'alice'],
            ['client-id', 'app'],
          ],
          [['controller_mutation_rate', 0.5]],
        ),
        entry([['ip', '10.0.0.1']], [['connection_creation_rate', 30]]),
      ]),
    );
    assert.ok(results.every((r) => r.errorCode === Errors.NONE.code && r.errorMessage === null));
    const image = sink.current;
    const lookup: ClientQuotaLookup = image.clientQuotas;
    assert.deepEqual(
      lookup({ user: 'alice' }),
      new Map([
        ['producer_byte_rate', 1024],
        ['consumer_byte_rate', 2048],
      ]),
    );
    assert.deepEqual(lookup({ 'client-id': null }), new Map([['request_percentage', 12.5]]));
    assert.deepEqual(lookup({ 'client-id': 'app', user: 'alice' }), new Map([['controller_mutation_rate', 0.5]]));
    assert.deepEqual(lookup({ ip: '10.0.0.1' }), new Map([['connection_creation_rate', 30]]));
    assert.equal(lookup({ user: null }), undefined, 'the default is an entity of its own');
    assert.equal(lookup({ 'client-id': 'null' }), undefined, 'a client id named "null" is not the default');
    assert.equal(lookup({ user: 'alice', 'client-id': null }), undefined);
    assert.equal(image.allClientQuotas().length, 4);
    assert.equal(sink.deltas.at(-1)!.clientQuotasChanged, true);
  });

  it('removes a key with remove=true, drops an entity left without keys, and accepts removing an absent key', async () => {
    const { sink, controller } = await activeController();
    await controller.alterClientQuotas(
      alter([
        entry(
          [['user', 'bob']],
          [
            ['producer_byte_rate', 100],
            ['consumer_byte_rate', 200],
          ],
        ),
      ]),
    );
    const first = await controller.alterClientQuotas(
      alter([
        entry(
          [['user', 'bob']],
          [
            ['producer_byte_rate', null],
            ['request_percentage', null],
          ],
        ),
      ]),
    );
    assert.equal(first[0]!.errorCode, Errors.NONE.code);
    assert.deepEqual(sink.written.at(-1)!.length, 1, 'only the key that exists is removed');
    assert.deepEqual(sink.current.clientQuotas({ user: 'bob' }), new Map([['consumer_byte_rate', 200]]));
    await controller.alterClientQuotas(alter([entry([['user', 'bob']], [['consumer_byte_rate', null]])]));
    assert.equal(sink.current.clientQuotas({ user: 'bob' }), undefined);
    assert.deepEqual(sink.current.allClientQuotas(), []);
    const writes = sink.written.length;
    const absent = await controller.alterClientQuotas(alter([entry([['user', 'bob']], [['consumer_byte_rate', null]])]));
    assert.equal(absent[0]!.errorCode, Errors.NONE.code);
    assert.equal(sink.written.length, writes, 'nothing to write');
  });

  it('writes nothing for a value equal to the current one, nor for validateOnly', async () => {
    const { sink, controller } = await activeController();
    const set = alter([entry([['user', 'carol']], [['producer_byte_rate', 5000]])]);
    await controller.alterClientQuotas(set);
    assert.equal(planClientQuotaAlterations(sink.current, set).records.length, 0);
    const writes = sink.written.length;
    const checked = await controller.alterClientQuotas(alter([entry([['user', 'dave']], [['producer_byte_rate', 1]])], true));
    assert.equal(checked[0]!.errorCode, Errors.NONE.code);
    const refused = await controller.alterClientQuotas(alter([entry([['user', 'dave']], [['producer_byte_rate', 1.5]])], true));
    assert.equal(refused[0]!.errorMessage, 'producer_byte_rate cannot be a fractional value.');
    assert.equal(sink.written.length, writes);
    assert.equal(sink.current.clientQuotas({ user: 'dave' }), undefined);
  });

  it('refuses entities as Kafka does, with its messages', () => {
    assert.deepEqual(decide([], [['producer_byte_rate', 1]]), invalid('Invalid empty client quota entity'));
    assert.deepEqual(decide([['group', 'g']], [['producer_byte_rate', 1]]), invalid('Unhandled client quota entity type: group'));
    assert.deepEqual(decide([['user', '']], [['producer_byte_rate', 1]]), invalid('Empty user not supported'));
    assert.deepEqual(decide([['client-id', '']], [['producer_byte_rate', 1]]), invalid('Empty client-id not supported'));
    assert.deepEqual(
      decide(
        [
          ['ip', '10.0.0.1'],
          ['user', 'a'],
        ],
        [['connection_creation_rate', 1]],
      ),
      invalid('Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId'),
    );
    assert.deepEqual(
      decide(
        [
          ['client-id', 'c'],
          ['ip', null],
        ],
        [['connection_creation_rate', 1]],
      ),
      invalid('Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId'),
    );
    assert.deepEqual(
      decide([['ip', 'not an address']], [['connection_creation_rate', 1]]),
      invalid('not an address is not a valid IP or resolvable host.'),
    );
    for (const ip of ['192.168.1.7', '::1', '[fe80::1]', null]) {
      assert.deepEqual(decide([['ip', ip]], [['connection_creation_rate', 5]]), [Errors.NONE.code, null], String(ip));
    }
  });

  it('reads the entity as Kafka does: a type named twice keeps its last name, and the first bad type in HashMap order is reported', async () => {
    const { sink, controller } = await activeController();
    await controller.alterClientQuotas(
      alter([
        entry(
          [
            ['user', 'first'],
            ['user', 'second'],
          ],
          [['producer_byte_rate', 10]],
        ),
      ]),
    );
    assert.equal(sink.current.clientQuotas({ user: 'first' }), undefined);
    assert.deepEqual(sink.current.clientQuotas({ user: 'second' }), new Map([['producer_byte_rate', 10]]));
    // {user=, group=g, ip=x} iterates user first in a HashMap of 3.
    assert.deepEqual(
      decide(
        [
          ['group', 'g'],
          ['ip', 'x'],
          ['user', ''],
        ],
        [['producer_byte_rate', 1]],
      ),
      invalid('Empty user not supported'),
    );
  });

  it('refuses keys and values as Kafka does, with its messages', () => {
    const user: Entity = [['user', 'u']];
    const ip: Entity = [['ip', '1.2.3.4']];
    assert.deepEqual(decide(user, [['connection_creation_rate', 1]]), invalid('Invalid configuration key connection_creation_rate'));
    assert.deepEqual(decide(ip, [['producer_byte_rate', 1]]), invalid('Invalid configuration key producer_byte_rate'));
    assert.deepEqual(decide(user, [['unknown_key', 1]]), invalid('Invalid configuration key unknown_key'));
    assert.deepEqual(decide(user, [['producer_byte_rate', 0]]), invalid('Quota producer_byte_rate must be greater than 0'));
    assert.deepEqual(decide(user, [['request_percentage', -1]]), invalid('Quota request_percentage must be greater than 0'));
    assert.deepEqual(decide(user, [['consumer_byte_rate', 1.5]]), invalid('consumer_byte_rate cannot be a fractional value.'));
    assert.deepEqual(decide(ip, [['connection_creation_rate', 2.25]]), invalid('connection_creation_rate cannot be a fractional value.'));
    assert.deepEqual(
      decide(ip, [['connection_creation_rate', 2 ** 31]]),
      invalid('Proposed value for connection_creation_rate is too large for an INT.'),
    );
    assert.deepEqual(
      decide(user, [['producer_byte_rate', 2 ** 64]]),
      invalid('Proposed value for producer_byte_rate is too large for a LONG.'),
    );
    assert.deepEqual(decide(user, [['producer_byte_rate', 2 ** 63]]), [Errors.NONE.code, null], 'Long.MAX_VALUE as a double');
    assert.deepEqual(decide(user, [['producer_byte_rate', 1 + 1e-7]]), [Errors.NONE.code, null], 'within 1e-6 of a whole number');
    assert.deepEqual(decide(user, [['request_percentage', 0.25]]), [Errors.NONE.code, null]);
    assert.deepEqual(decide(ip, [['connection_creation_rate', 2 ** 31 - 1]]), [Errors.NONE.code, null]);
    assert.deepEqual(decide(user, [['unknown_key', null]]), [Errors.NONE.code, null], 'removing an absent key of any name');
    // The keys are tried in HashMap order: unknown_key (bucket 1) before producer_byte_rate (bucket 3).
    assert.deepEqual(
      decide(user, [
        ['producer_byte_rate', 1.5],
        ['unknown_key', 1],
      ]),
      invalid('Invalid configuration key unknown_key'),
    );
  });

  it('applies an entry whole or not at all, and answers duplicates as Kafka does', async () => {
    const { sink, controller } = await activeController();
    const results = await controller.alterClientQuotas(
      alter([
        entry(
          [['user', 'partial']],
          [
            ['producer_byte_rate', 100],
            ['consumer_byte_rate', 0.5],
          ],
        ),
        entry(
          [['user', 'twice-key']],
          [
            ['producer_byte_rate', 1],
            ['producer_byte_rate', 2],
          ],
        ),
        entry(
          [
            ['user', 'alice'],
            ['client-id', 'app'],
          ],
          [['producer_byte_rate', 7]],
        ),
        entry(
          [
            ['client-id', 'app'],
            ['user', 'alice'],
          ],
          [['consumer_byte_rate', 8]],
        ),
        entry([['user', 'fine']], [['producer_byte_rate', 9]]),
      ]),
    );
    const answer = (name: string) => results.find((r) => r.entity.some((e) => e.entityName === name))!;
    assert.equal(answer('partial').errorMessage, 'consumer_byte_rate cannot be a fractional value.');
    assert.equal(sink.current.clientQuotas({ user: 'partial' }), undefined);
    assert.equal(answer('twice-key').errorMessage, 'Ignoring duplicate entity ClientQuotaEntity(entries={user=twice-key})');
    assert.equal(sink.current.clientQuotas({ user: 'twice-key' }), undefined);
    const duplicate = answer('alice');
    assert.equal(duplicate.errorCode, Errors.INVALID_REQUEST.code);
    assert.equal(duplicate.errorMessage, 'Ignoring duplicate entity ClientQuotaEntity(entries={client-id=app, user=alice})');
    assert.deepEqual(duplicate.entity, [
      { entityType: 'client-id', entityName: 'app' },
      { entityType: 'user', entityName: 'alice' },
    ]);
    // Kafka keeps what the first entry for the entity wrote, though it answers the error.
    assert.deepEqual(sink.current.clientQuotas({ user: 'alice', 'client-id': 'app' }), new Map([['producer_byte_rate', 7]]));
    assert.equal(answer('fine').errorCode, Errors.NONE.code);
    assert.equal(results.length, 4);
  });

  it('answers in the order of Kafka’s HashMap of entities', () => {
    const names: Entity = [
      ['user', 'alice'],
      ['user', null],
      ['client-id', 'app'],
      ['client-id', null],
      ['ip', '1.2.3.4'],
      ['user', 'bob'],
    ];
    const { results } = planClientQuotaAlterations(
      MetadataImage.EMPTY,
      alter(names.map(([type, name]) => entry([[type, name]], [[type === 'ip' ? 'connection_creation_rate' : 'producer_byte_rate', 1]]))),
    );
    // What java.util.HashMap<ClientQuotaEntity, ApiError> iterates for these puts.
    assert.deepEqual(
      results.map((r) => `${r.entity[0]!.entityType}=${r.entity[0]!.entityName}`),
      ['ip=1.2.3.4', 'user=alice', 'user=bob', 'client-id=app', 'user=null', 'client-id=null'],
    );
    assert.deepEqual(
      javaHashMapOrder(['request_percentage', 'producer_byte_rate', 'consumer_byte_rate', 'controller_mutation_rate'], javaHash, 4),
      ['producer_byte_rate', 'consumer_byte_rate', 'controller_mutation_rate', 'request_percentage'],
    );
  });

  it('answers NOT_CONTROLLER for every entry, with its entity as sent, when not active', async () => {
    const { sink, controller } = await activeController();
    sink.active = false;
    const results = await controller.alterClientQuotas(
      alter([entry([['user', 'a']], [['producer_byte_rate', 1]]), entry([['user', 'a']], [['producer_byte_rate', 2]])]),
    );
    assert.deepEqual(
      results.map((r) => [r.entity, r.errorCode]),
      [
        [[{ entityType: 'user', entityName: 'a' }], Errors.NOT_CONTROLLER.code],
        [[{ entityType: 'user', entityName: 'a' }], Errors.NOT_CONTROLLER.code],
      ],
    );
  });

  it('flags client quota changes in the delta only when a ClientQuotaRecord was applied', () => {
    const { delta } = MetadataImage.EMPTY.apply(
      [{ type: 'FeatureLevelRecord', data: { name: 'metadata.version', featureLevel: 21 } }],
      0,
      1,
    );
    assert.equal(delta.clientQuotasChanged, false);
  });

  it('survives a snapshot: the image rebuilt from its records holds the same quotas (property)', () => {
    const entity = fc.oneof(
      fc.record({ user: fc.option(fc.string({ maxLength: 6 })) }, { requiredKeys: [] }),
      fc.record({ user: fc.option(fc.string({ maxLength: 6 })), 'client-id': fc.option(fc.string({ maxLength: 6 })) }),
      fc.record({ ip: fc.option(fc.constantFrom('1.2.3.4', '::1')) }),
    );
    const record = fc.record({
      entity,
      key: fc.constantFrom('producer_byte_rate', 'consumer_byte_rate', 'request_percentage'),
      value: fc.double({ min: 1, max: 1e12, noNaN: true }),
      remove: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(record, { maxLength: 20 }), (quotaRecords) => {
        const records = quotaRecords.map((r) => ({
          type: 'ClientQuotaRecord' as const,
          data: {
            entity: Object.entries(r.entity).map(([entityType, entityName]) => ({ entityType, entityName: entityName ?? null })),
            key: r.key,
            value: r.value,
            remove: r.remove,
          },
        }));
        const image = MetadataImage.EMPTY.apply(records, records.length - 1, 1).image;
        for (const q of image.allClientQuotas()) assert.ok(q.quotas.size > 0, 'no entity without keys');
        const rebuilt = MetadataImage.EMPTY.apply(imageToRecords(image), 0, 1).image;
        assert.deepEqual(rebuilt.clientQuotaEntities, image.clientQuotaEntities);
      }),
    );
  });
});

function javaHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}
