import assert from 'node:assert/strict';
import { type KeyObject, constants, generateKeyPairSync, sign } from 'node:crypto';
import fc from 'fast-check';
import {
  InvalidJwtError,
  keyFitsJwsAlgorithm,
  numericDateClaim,
  parseCompactJws,
  stringClaim,
  verifyJwsSignature,
} from '../../../src/security/jwt.ts';

const part = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');

/** Signs as an identity provider would: JWS compact serialization, ECDSA as raw R || S. */
function signJws(privateKey: KeyObject, header: { alg: string; kid?: string }, claims: object): string {
  const input = Buffer.from(`${part(header)}.${part(claims)}`);
  const hash = `sha${header.alg.slice(2)}`;
  const signature = header.alg.startsWith('ES')
    ? sign(hash, input, { key: privateKey, dsaEncoding: 'ieee-p1363' })
    : header.alg.startsWith('PS')
      ? sign(hash, input, {
          key: privateKey,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
        })
      : sign(hash, input, privateKey);
  return `${input}.${signature.toString('base64url')}`;
}

describe('parseCompactJws', () => {
  it('decodes the header and claims and keeps what the signature covers', () => {
    const token = `${part({ alg: 'RS256', kid: 'k1' })}.${part({ sub: 'alice', exp: 1 })}.c2ln`;
    const jws = parseCompactJws(token);
    assert.equal(jws.alg, 'RS256');
    assert.equal(jws.kid, 'k1');
    assert.deepEqual(jws.claims, { sub: 'alice', exp: 1 });
    assert.equal(jws.signingInput.toString(), token.slice(0, token.lastIndexOf('.')));
    assert.equal(jws.signature.toString(), 'sig');
  });

  it('takes an unsecured JWS with an empty signature', () => {
    const jws = parseCompactJws(`${part({ alg: 'none' })}.${part({})}.`);
    assert.equal(jws.alg, 'none');
    assert.equal(jws.kid, undefined);
    assert.equal(jws.signature.length, 0);
  });

  it('refuses other than three sections, an empty header or claims, bad base64url and non-object JSON', () => {
    const header = part({ alg: 'none' });
    for (const token of [
      'a.b',
      `${header}.${part({})}..`,
      `.${part({})}.`,
      `${header}..`,
      `${header}.e30+.`,
      `${header}.${part([1])}.`,
      `${header}.${part('x')}.`,
      `${header}.bm90IGpzb24.`,
      `${header}.${part({})}.A`,
    ])
      assert.throws(() => parseCompactJws(token), InvalidJwtError, token);
  });

  it('reads back any JSON object as claims', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (claims) => {
        const parsed = parseCompactJws(`${part({ alg: 'none' })}.${part(claims)}.`);
        assert.deepEqual(parsed.claims, JSON.parse(JSON.stringify(claims)));
      }),
    );
  });

  it('fails on any string with an InvalidJwtError only', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('e', 'y', 'J', '9', '.', '-', '_', '=', 'x') }), (token) => {
        try {
          parseCompactJws(token);
        } catch (e) {
          assert.ok(e instanceof InvalidJwtError);
        }
      }),
    );
  });
});

describe('verifyJwsSignature', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const curves = {
    ES256: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    ES384: generateKeyPairSync('ec', { namedCurve: 'P-384' }),
    ES512: generateKeyPairSync('ec', { namedCurve: 'P-521' }),
  };
  const claims = { sub: 'alice', exp: 2_000_000_000 };

  for (const alg of ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'])
    it(`verifies ${alg} with the signer's RSA key only`, () => {
      const jws = parseCompactJws(signJws(rsa.privateKey, { alg }, claims));
      assert.equal(verifyJwsSignature(jws, rsa.publicKey), true);
      assert.equal(verifyJwsSignature(jws, otherRsa.publicKey), false);
    });

  for (const [alg, pair] of Object.entries(curves))
    it(`verifies ${alg} (raw R || S) with a key on its curve only`, () => {
      const jws = parseCompactJws(signJws(pair.privateKey, { alg }, claims));
      assert.equal(verifyJwsSignature(jws, pair.publicKey), true);
      const otherCurve = alg === 'ES256' ? curves.ES384 : curves.ES256;
      assert.equal(verifyJwsSignature(jws, otherCurve.publicKey), false);
    });

  it('refuses a token whose claims were changed after signing', () => {
    const [header, , signature] = signJws(rsa.privateKey, { alg: 'RS256' }, claims).split('.');
    const forged = parseCompactJws(`${header}.${part({ ...claims, sub: 'admin' })}.${signature}`);
    assert.equal(verifyJwsSignature(forged, rsa.publicKey), false);
  });

  it('refuses a signature of the wrong length, alg none, an unknown alg, and an RSA key for ECDSA', () => {
    const es = signJws(curves.ES256.privateKey, { alg: 'ES256' }, claims);
    assert.equal(verifyJwsSignature(parseCompactJws(`${es}AAAA`), curves.ES256.publicKey), false);
    assert.equal(verifyJwsSignature(parseCompactJws(`${part({ alg: 'none' })}.${part(claims)}.`), rsa.publicKey), false);
    const hs = `${part({ alg: 'HS256' })}.${part(claims)}.c2ln`;
    assert.equal(verifyJwsSignature(parseCompactJws(hs), rsa.publicKey), false);
    assert.equal(verifyJwsSignature(parseCompactJws(es), rsa.publicKey), false);
  });

  it('refuses RSA keys under 2048 bits and private keys, as jose4j does', () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    assert.equal(keyFitsJwsAlgorithm(small.publicKey, 'RS256'), false);
    assert.equal(keyFitsJwsAlgorithm(rsa.privateKey, 'RS256'), false);
    assert.equal(keyFitsJwsAlgorithm(rsa.publicKey, 'PS512'), true);
    assert.equal(keyFitsJwsAlgorithm(curves.ES384.publicKey, 'ES256'), false);
  });
});

describe('JWT claims', () => {
  const claims = { exp: 1.5, sub: 'alice', iat: '1', aud: ['a'], nil: null };

  it('reads NumericDate and string claims, absent as undefined', () => {
    assert.equal(numericDateClaim(claims, 'exp'), 1.5);
    assert.equal(numericDateClaim(claims, 'nbf'), undefined);
    assert.equal(numericDateClaim(claims, 'nil'), undefined);
    assert.equal(stringClaim(claims, 'sub'), 'alice');
    assert.equal(stringClaim(claims, 'iss'), undefined);
  });

  it('refuses a claim of the wrong type, naming it as Kafka does', () => {
    assert.throws(() => numericDateClaim(claims, 'iat'), /The 'iat' claim was not of type Number: String/);
    assert.throws(() => stringClaim(claims, 'aud'), /The 'aud' claim was not of type String: List/);
    assert.throws(() => stringClaim(claims, 'exp'), InvalidJwtError);
  });
});
