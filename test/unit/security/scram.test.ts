import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SaslAuthenticationError, SaslProtocolError } from '../../../src/security/sasl-errors.ts';
import {
  SCRAM_MAX_ITERATIONS,
  SCRAM_MECHANISMS,
  SCRAM_MIN_ITERATIONS,
  ScramClient,
  type ScramCredential,
  type ScramMechanism,
  saltedPassword,
  scramCredential,
  scramCredentialFromSaltedPassword,
  scramMechanismOfType,
  scramMechanismType,
  scramServerExchange,
} from '../../../src/security/scram.ts';

const INVALID_USER_CREDENTIALS = 'Authentication failed: Invalid user credentials';

// RFC 7677 section 3.
const RFC7677 = {
  username: 'user',
  password: 'pencil',
  clientNonce: 'rOprNGfwEbeRWgbNEkqO',
  serverNonce: '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0',
  salt: Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64'),
  iterations: 4096,
  clientFirst: 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO',
  serverFirst: 'r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096',
  clientFinal: 'c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=',
  serverFinal: 'v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=',
};

const rfcCredential = scramCredential('SCRAM-SHA-256', RFC7677.password, RFC7677.salt, RFC7677.iterations);

function rfcServer() {
  return scramServerExchange(
    'SCRAM-SHA-256',
    (username) => (username === RFC7677.username ? rfcCredential : undefined),
    () => RFC7677.serverNonce,
  );
}

function refusedWith(message: string) {
  return (e: unknown) => e instanceof SaslAuthenticationError && e.message === message;
}

/** Refused as Kafka's ScramSaslServer refuses bad credentials: a SaslException whose reason stays in the broker's log. */
function refusedQuietly(message: string) {
  return (e: unknown) => e instanceof SaslProtocolError && e.message === message;
}

/** Runs a whole exchange and returns the server's authorizationId. */
function authenticate(mechanism: ScramMechanism, credentials: Map<string, ScramCredential>, username: string, password: string): string {
  const server = scramServerExchange(mechanism, (name) => credentials.get(name));
  const client = new ScramClient(mechanism, username, password);
  const clientFinal = client.next(server.evaluate(client.first()));
  client.finish(server.evaluate(clientFinal));
  assert.equal(server.complete, true);
  return server.authorizationId;
}

describe('SCRAM', () => {
  it('runs the RFC 7677 SCRAM-SHA-256 example byte for byte', () => {
    const server = rfcServer();
    const client = new ScramClient('SCRAM-SHA-256', RFC7677.username, RFC7677.password, RFC7677.clientNonce);
    assert.equal(server.mechanism, 'SCRAM-SHA-256');

    const clientFirst = client.first();
    assert.equal(clientFirst.toString(), RFC7677.clientFirst);
    const serverFirst = server.evaluate(clientFirst);
    assert.equal(serverFirst.toString(), RFC7677.serverFirst);
    assert.equal(server.complete, false);
    const clientFinal = client.next(serverFirst);
    assert.equal(clientFinal.toString(), RFC7677.clientFinal);
    const serverFinal = server.evaluate(clientFinal);
    assert.equal(serverFinal.toString(), RFC7677.serverFinal);
    client.finish(serverFinal);

    assert.equal(server.complete, true);
    assert.equal(server.authorizationId, 'user');
  });

  it('derives the same credential from the salted password as from the password', () => {
    for (const mechanism of SCRAM_MECHANISMS) {
      const salt = Buffer.from('salt');
      const salted = saltedPassword(mechanism, 'secret', salt, SCRAM_MIN_ITERATIONS);
      assert.equal(salted.length, mechanism === 'SCRAM-SHA-256' ? 32 : 64);
      assert.deepEqual(
        scramCredentialFromSaltedPassword(mechanism, salted, salt, SCRAM_MIN_ITERATIONS),
        scramCredential(mechanism, 'secret', salt, SCRAM_MIN_ITERATIONS),
      );
    }
  });

  it('refuses iterations outside Kafka limits', () => {
    const salt = Buffer.from('salt');
    assert.throws(() => scramCredential('SCRAM-SHA-256', 'p', salt, SCRAM_MIN_ITERATIONS - 1), {
      name: 'RangeError',
      message: 'Too few iterations',
    });
    assert.throws(() => scramCredential('SCRAM-SHA-512', 'p', salt, SCRAM_MAX_ITERATIONS + 1), {
      name: 'RangeError',
      message: 'Too many iterations',
    });
    assert.throws(() => scramCredentialFromSaltedPassword('SCRAM-SHA-256', Buffer.alloc(32), salt, 100), RangeError);
    assert.equal(scramCredential('SCRAM-SHA-256', 'p', salt, SCRAM_MAX_ITERATIONS).iterations, SCRAM_MAX_ITERATIONS);
  });

  it("numbers the mechanisms as Kafka's ScramMechanism does", () => {
    assert.equal(scramMechanismType('SCRAM-SHA-256'), 1);
    assert.equal(scramMechanismType('SCRAM-SHA-512'), 2);
    assert.equal(scramMechanismOfType(1), 'SCRAM-SHA-256');
    assert.equal(scramMechanismOfType(2), 'SCRAM-SHA-512');
    assert.equal(scramMechanismOfType(0), undefined);
  });

  it('completes a SCRAM-SHA-512 exchange', () => {
    const credential = scramCredential('SCRAM-SHA-512', 'alice-secret', Buffer.from('NaCl'), 8192);
    assert.equal(credential.storedKey.length, 64);
    assert.equal(authenticate('SCRAM-SHA-512', new Map([['alice', credential]]), 'alice', 'alice-secret'), 'alice');
  });

  it('refuses an unknown user at the first message', () => {
    const server = rfcServer();
    assert.throws(() => server.evaluate(Buffer.from('n,,n=mallory,r=abc')), refusedQuietly(INVALID_USER_CREDENTIALS));
    assert.equal(server.complete, false);
  });

  it('escapes , and = in user names and refuses a name outside the SASL name grammar', () => {
    const credential = scramCredential('SCRAM-SHA-256', 'p', Buffer.from('s'), SCRAM_MIN_ITERATIONS);
    const server = scramServerExchange('SCRAM-SHA-256', (name) => (name === 'a,b=c' ? credential : undefined));
    assert.match(server.evaluate(Buffer.from('n,,n=a=2Cb=3Dc,r=abc')).toString(), /^r=abc[^,]+,s=cw==,i=4096$/);
    assert.equal(new ScramClient('SCRAM-SHA-256', 'a,b=c', 'p', 'abc').first().toString(), 'n,,n=a=2Cb=3Dc,r=abc');
    for (const token of ['n,,n=a=2Db,r=abc', 'n,,n=a=b,r=abc', 'n,,n=,r=abc', 'n,,n=jos\u00e9,r=abc']) {
      assert.throws(() => scramServerExchange('SCRAM-SHA-256', () => credential).evaluate(Buffer.from(token)), SaslProtocolError, token);
    }
  });

  it('refuses channel binding as Kafka does', () => {
    for (const token of ['y,,n=user,r=abc', 'p=tls-unique,,n=user,r=abc']) {
      assert.throws(() => rfcServer().evaluate(Buffer.from(token)), SaslProtocolError);
    }
  });

  it('accepts an authorization id equal to the user name and refuses another', () => {
    assert.match(rfcServer().evaluate(Buffer.from('n,a=user,n=user,r=abc')).toString(), /^r=abc/);
    assert.throws(
      () => rfcServer().evaluate(Buffer.from('n,a=admin,n=user,r=abc')),
      refusedWith('Authentication failed: Client requested an authorization id that is different from username'),
    );
  });

  it('ignores unknown extensions but refuses delegation-token authentication', () => {
    assert.match(rfcServer().evaluate(Buffer.from('n,,n=user,r=abc,foo=bar=baz')).toString(), /^r=abc/);
    assert.match(rfcServer().evaluate(Buffer.from('n,,n=user,r=abc,tokenauth=false')).toString(), /^r=abc/);
    assert.throws(() => rfcServer().evaluate(Buffer.from('n,,n=user,r=abc,tokenauth=TRUE')), refusedQuietly(INVALID_USER_CREDENTIALS));
  });

  it('refuses a wrong proof with the unknown-user message', () => {
    const server = rfcServer();
    server.evaluate(Buffer.from(RFC7677.clientFirst));
    const wrongProof = RFC7677.clientFinal.replace('p=dHzb', 'p=dHzc');
    assert.throws(() => server.evaluate(Buffer.from(wrongProof)), refusedQuietly(INVALID_USER_CREDENTIALS));
    assert.throws(() => server.authorizationId);
  });

  it('refuses a nonce or channel binding that differs from the first messages', () => {
    const cases = [
      RFC7677.clientFinal.replace('r=rOpr', 'r=xOpr'),
      RFC7677.clientFinal.replace(',p=', 'x,p='),
      RFC7677.clientFinal.replace('c=biws', 'c=eSws'),
    ];
    for (const clientFinal of cases) {
      const server = rfcServer();
      server.evaluate(Buffer.from(RFC7677.clientFirst));
      assert.throws(() => server.evaluate(Buffer.from(clientFinal)), SaslProtocolError, clientFinal);
    }
  });

  it('refuses tokens out of order or after the end', () => {
    const early = rfcServer();
    assert.throws(() => early.evaluate(Buffer.from(RFC7677.clientFinal)), SaslProtocolError);
    assert.throws(() => early.evaluate(Buffer.from(RFC7677.clientFirst)), SaslProtocolError);

    const done = rfcServer();
    done.evaluate(Buffer.from(RFC7677.clientFirst));
    done.evaluate(Buffer.from(RFC7677.clientFinal));
    assert.throws(() => done.evaluate(Buffer.from(RFC7677.clientFinal)), SaslProtocolError);
    assert.equal(done.complete, false);

    const client = new ScramClient('SCRAM-SHA-256', 'user', 'pencil', RFC7677.clientNonce);
    assert.throws(() => client.next(Buffer.from(RFC7677.serverFirst)), SaslProtocolError);
    assert.throws(() => client.first(), SaslProtocolError);
  });

  it('client refuses a server nonce that does not extend its own and weak or excessive iterations', () => {
    const cases = [
      RFC7677.serverFirst.replace('r=rOpr', 'r=xOpr'),
      RFC7677.serverFirst.replace('i=4096', 'i=4095'),
      RFC7677.serverFirst.replace('i=4096', 'i=99999999'),
      RFC7677.serverFirst.replace('s=', 's=!'),
    ];
    for (const serverFirst of cases) {
      const client = new ScramClient('SCRAM-SHA-256', 'user', 'pencil', RFC7677.clientNonce);
      client.first();
      assert.throws(() => client.next(Buffer.from(serverFirst)), SaslProtocolError, serverFirst);
    }
  });

  it('client reports a server error', () => {
    const client = new ScramClient('SCRAM-SHA-256', 'user', 'pencil', RFC7677.clientNonce);
    client.first();
    client.next(Buffer.from(RFC7677.serverFirst));
    assert.throws(
      () => client.finish(Buffer.from('e=invalid-proof')),
      refusedWith('Sasl authentication using SCRAM-SHA-256 failed with error: invalid-proof'),
    );
  });

  describe('properties', () => {
    const saslNameChars = fc.oneof(
      fc.constantFrom(',', '='),
      fc.integer({ min: 1, max: 0x7f }).map((c) => String.fromCharCode(c)),
    );
    const username = fc.string({ unit: saslNameChars, minLength: 1, maxLength: 16 });
    const password = fc.string({ unit: 'binary', maxLength: 16 });
    const mechanism = fc.constantFrom(...SCRAM_MECHANISMS);
    const salt = fc.uint8Array({ minLength: 0, maxLength: 32 }).map((bytes) => Buffer.from(bytes));

    it('authenticates any user name with its password, with either mechanism', () => {
      fc.assert(
        fc.property(mechanism, username, password, salt, (m, user, pass, s) => {
          const credentials = new Map([[user, scramCredential(m, pass, s, SCRAM_MIN_ITERATIONS)]]);
          assert.equal(authenticate(m, credentials, user, pass), user);
        }),
        { numRuns: 40 },
      );
    });

    it('refuses a wrong password', () => {
      fc.assert(
        fc.property(mechanism, username, password, password, (m, user, pass, other) => {
          fc.pre(Buffer.compare(Buffer.from(pass), Buffer.from(other)) !== 0);
          const credentials = new Map([[user, scramCredential(m, pass, Buffer.from('salt'), SCRAM_MIN_ITERATIONS)]]);
          assert.throws(() => authenticate(m, credentials, user, other), refusedQuietly(INVALID_USER_CREDENTIALS));
        }),
        { numRuns: 40 },
      );
    });

    it('refuses a client-final message with any byte changed', () => {
      fc.assert(
        fc.property(fc.nat(RFC7677.clientFinal.length - 1), fc.integer({ min: 1, max: 255 }), (index, delta) => {
          const server = rfcServer();
          server.evaluate(Buffer.from(RFC7677.clientFirst));
          const tampered = Buffer.from(RFC7677.clientFinal);
          tampered[index] = (tampered[index]! + delta) % 256;
          assert.throws(
            () => server.evaluate(tampered),
            (e) => e instanceof SaslAuthenticationError || e instanceof SaslProtocolError,
          );
          assert.equal(server.complete, false);
        }),
        { numRuns: 500 },
      );
    });

    it('client refuses a server-final message with any byte changed', () => {
      fc.assert(
        fc.property(fc.nat(RFC7677.serverFinal.length - 1), fc.integer({ min: 1, max: 255 }), (index, delta) => {
          const client = new ScramClient('SCRAM-SHA-256', RFC7677.username, RFC7677.password, RFC7677.clientNonce);
          client.first();
          client.next(Buffer.from(RFC7677.serverFirst));
          const tampered = Buffer.from(RFC7677.serverFinal);
          tampered[index] = (tampered[index]! + delta) % 256;
          assert.throws(
            () => client.finish(tampered),
            (e) => e instanceof SaslAuthenticationError || e instanceof SaslProtocolError,
          );
        }),
        { numRuns: 100 },
      );
    });
  });
});
