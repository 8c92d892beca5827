import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { MAX_STRING_BYTES, utf8Length } from '../../../protocol/primitives.ts';
import { classicMemberId } from '../../../src/coordinator/member-id.ts';

describe('classic group member ids', () => {
  it('are the client id or group instance id, a dash and the uuid, as Kafka makes them', () => {
    const uuid = randomUUID();
    assert.equal(classicMemberId('consumer-1', uuid), `consumer-1-${uuid}`);
  });

  it('always fit a string, their prefix cut between characters when the id it comes from is long', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: MAX_STRING_BYTES }),
        fc.constantFrom('x', 'é', '€', '😀'),
        fc.nat(MAX_STRING_BYTES),
        (tail, filler, repeat) => {
          const prefix = `${filler.repeat(Math.floor(repeat / 4))}${tail}`;
          if (utf8Length(prefix) > MAX_STRING_BYTES) return;
          const uuid = randomUUID();
          const id = classicMemberId(prefix, uuid);
          assert.ok(utf8Length(id) <= MAX_STRING_BYTES, `${utf8Length(id)} bytes`);
          assert.ok(id.endsWith(`-${uuid}`));
          assert.ok(prefix.startsWith(id.slice(0, -uuid.length - 1)));
          if (utf8Length(prefix) + 1 + uuid.length <= MAX_STRING_BYTES) assert.equal(id, `${prefix}-${uuid}`);
        },
      ),
      { numRuns: 100 },
    );
  });
});
