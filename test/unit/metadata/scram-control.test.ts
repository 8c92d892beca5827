import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Errors } from '../../../protocol/errors.ts';
import { imageToRecords, MetadataImage } from '../../../src/metadata/image.ts';
import { parseAddScram } from '../../../src/metadata/bootstrap-records.ts';
import { saltedPassword, scramCredential } from '../../../src/security/scram.ts';
import { activeController } from './image-sink.ts';

const SALT = Buffer.from('0123456789abcdef');

const upsert = (name: string, mechanism = 1, iterations = 4096, password = `${name}-pw`) => ({
  name,
  mechanism,
  iterations,
  salt: SALT,
  saltedPassword: saltedPassword(mechanism === 1 ? 'SCRAM-SHA-256' : 'SCRAM-SHA-512', password, SALT, iterations),
});

describe('SCRAM credentials in the metadata log', () => {
  it('stores the keys derived from the salted password, never the password, and removes them', async () => {
    const { sink, controller } = await activeController();
    const results = await controller.alterUserScramCredentials({ deletions: [], upsertions: [upsert('alice'), upsert('bob', 2, 8192)] });
    assert.deepEqual(
      results.map((r) => [r.user, r.errorCode]),
      [
        ['alice', 0],
        ['bob', 0],
      ],
    );
    const stored = sink.current.scramCredential(1, 'alice')!;
    assert.deepEqual(stored, scramCredential('SCRAM-SHA-256', 'alice-pw', SALT, 4096));
    assert.equal(sink.current.scramCredential(2, 'bob')!.iterations, 8192);
    assert.equal(sink.current.scramCredential(2, 'alice'), undefined);
    const removed = await controller.alterUserScramCredentials({ deletions: [{ name: 'alice', mechanism: 1 }], upsertions: [] });
    assert.equal(removed[0]!.errorCode, 0);
    assert.equal(sink.current.scramCredential(1, 'alice'), undefined);
  });

  it('refuses as Kafka does: a user named twice, an unknown mechanism, an empty name, iterations out of bounds, deleting what does not exist', async () => {
    const { sink, controller } = await activeController();
    await controller.alterUserScramCredentials({ deletions: [], upsertions: [upsert('dup')] });
    const results = await controller.alterUserScramCredentials({
      deletions: [
        { name: 'dup', mechanism: 1 },
        { name: 'ghost', mechanism: 1 },
      ],
      upsertions: [upsert('dup'), upsert('odd', 3), upsert(''), upsert('few', 1, 4095), upsert('many', 1, 16385), upsert('fine')],
    });
    const byUser = new Map(results.map((r) => [r.user, r]));
    assert.equal(byUser.get('dup')!.errorCode, Errors.DUPLICATE_RESOURCE.code);
    assert.equal(byUser.get('dup')!.errorMessage, 'A user credential cannot be altered twice in the same request');
    assert.equal(byUser.get('ghost')!.errorCode, Errors.RESOURCE_NOT_FOUND.code);
    assert.equal(byUser.get('odd')!.errorCode, Errors.UNSUPPORTED_SASL_MECHANISM.code);
    assert.equal(byUser.get('')!.errorMessage, 'Username must not be empty');
    assert.equal(byUser.get('few')!.errorMessage, 'Too few iterations');
    assert.equal(byUser.get('many')!.errorMessage, 'Too many iterations');
    assert.equal(byUser.get('fine')!.errorCode, 0);
    assert.deepEqual(
      sink.current
        .allScramCredentials()
        .map((c) => c.user)
        .sort(),
      ['dup', 'fine'],
    );
  });

  it('answers NOT_CONTROLLER for every user when not active', async () => {
    const { sink, controller } = await activeController();
    sink.active = false;
    const results = await controller.alterUserScramCredentials({ deletions: [{ name: 'a', mechanism: 1 }], upsertions: [upsert('b')] });
    assert.deepEqual(
      results.map((r) => [r.user, r.errorCode]),
      [
        ['a', Errors.NOT_CONTROLLER.code],
        ['b', Errors.NOT_CONTROLLER.code],
      ],
    );
  });

  it('survives a snapshot: the image rebuilt from its records holds the same credentials (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            user: fc.string({ minLength: 1, maxLength: 8 }),
            mechanism: fc.constantFrom(1, 2),
            iterations: fc.integer({ min: 4096, max: 16384 }),
          }),
          {
            maxLength: 10,
          },
        ),
        (creds) => {
          const records = creds.map((c) => ({
            type: 'UserScramCredentialRecord' as const,
            data: {
              name: c.user,
              mechanism: c.mechanism,
              salt: SALT,
              storedKey: Buffer.from('s'),
              serverKey: Buffer.from('k'),
              iterations: c.iterations,
            },
          }));
          const image = MetadataImage.EMPTY.apply(records, records.length - 1, 1).image;
          const rebuilt = MetadataImage.EMPTY.apply(imageToRecords(image), 0, 1).image;
          assert.deepEqual(rebuilt.scramCredentials, image.scramCredentials);
        },
      ),
    );
  });

  it('writes the users of `sluice storage format --add-scram` with the first metadata.version, and only into an empty log', async () => {
    const admin = parseAddScram('SCRAM-SHA-512=[name=admin,password="admin secret",iterations=8192]');
    const { sink, controller } = await activeController([admin]);
    assert.deepEqual(
      sink.records().map((r) => r.type),
      ['NoOpRecord', 'FeatureLevelRecord', 'FeatureLevelRecord', 'ConfigRecord', 'UserScramCredentialRecord'],
    );
    const stored = sink.current.scramCredential(2, 'admin')!;
    assert.equal(stored.iterations, 8192);
    assert.deepEqual(stored, scramCredential('SCRAM-SHA-512', 'admin secret', stored.salt, 8192));
    await controller.activate();
    assert.equal(sink.records().filter((r) => r.type === 'UserScramCredentialRecord').length, 1);
  });

  it('reads --add-scram as kafka-storage does and refuses what it cannot use', () => {
    const record = parseAddScram('SCRAM-SHA-256=[name=alice,password=alice-secret]');
    assert.equal(record.type, 'UserScramCredentialRecord');
    assert.throws(() => parseAddScram('SCRAM-SHA-1=[name=a,password=b]'), /not supported/);
    assert.throws(() => parseAddScram('SCRAM-SHA-256=[password=b]'), /'name'/);
    assert.throws(() => parseAddScram('SCRAM-SHA-256=[name=a]'), /'password'/);
    assert.throws(() => parseAddScram('SCRAM-SHA-256=[name=a,password=b,iterations=100]'), /Too few iterations/);
    assert.throws(() => parseAddScram('SCRAM-SHA-256=name=a'), /expected MECHANISM/);
  });
});
