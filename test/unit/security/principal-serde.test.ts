import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  PrincipalSerdeError,
  deserializePrincipal,
  parsePrincipal,
  principalString,
  serializePrincipal,
} from '../../../src/security/principal-serde.ts';

const principal = fc.record({
  principalType: fc.string({ unit: 'grapheme', maxLength: 20 }).filter((t) => !t.includes(':')),
  name: fc.string({ unit: 'grapheme', maxLength: 200 }),
  tokenAuthenticated: fc.boolean(),
});

describe('principal serde (DefaultKafkaPrincipalBuilder serialize/deserialize)', () => {
  it('round-trips any principal, token-authenticated or not', () => {
    fc.assert(
      fc.property(principal, (p) => {
        assert.deepEqual(deserializePrincipal(serializePrincipal(p)), { ...p });
      }),
    );
  });

  it("writes Kafka's bytes: int16 version 0, then DefaultPrincipalData v0 (compact strings, boolean, no tagged fields)", () => {
    const bytes = serializePrincipal({ principalType: 'User', name: 'alice', tokenAuthenticated: true });
    assert.deepEqual(bytes, Buffer.from([0, 0, 5, ...Buffer.from('User'), 6, ...Buffer.from('alice'), 1, 0]));
  });

  it("the session's principal string and the principal convert both ways; a name may hold colons", () => {
    fc.assert(
      fc.property(principal, (p) => {
        const asString = principalString(p);
        assert.deepEqual(parsePrincipal(asString, p.tokenAuthenticated), { ...p });
      }),
    );
    assert.deepEqual(parsePrincipal('User:CN=a:b'), { principalType: 'User', name: 'CN=a:b', tokenAuthenticated: false });
  });

  it('refuses an unknown version and truncated or arbitrary bytes with PrincipalSerdeError, never anything else', () => {
    const valid = serializePrincipal({ principalType: 'User', name: 'bob', tokenAuthenticated: false });
    const v1 = Buffer.from(valid);
    v1.writeInt16BE(1, 0);
    assert.throws(() => deserializePrincipal(v1), PrincipalSerdeError);
    for (let cut = 0; cut < valid.length - 1; cut++) {
      assert.throws(() => deserializePrincipal(valid.subarray(0, cut)), PrincipalSerdeError);
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          deserializePrincipal(Buffer.from(bytes));
        } catch (err) {
          assert.ok(err instanceof PrincipalSerdeError, String(err));
        }
      }),
    );
  });
});
