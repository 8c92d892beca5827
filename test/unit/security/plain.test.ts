import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parseJaasConfig } from '../../../src/security/jaas.ts';
import { plainClientToken, plainServerExchange, plainUsers } from '../../../src/security/plain.ts';
import { SaslAuthenticationError, SaslProtocolError } from '../../../src/security/sasl-errors.ts';

const users = plainUsers(
  parseJaasConfig(
    `${PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice secret" user_bob='bob\\"s';`,
  ),
);

function refusedWith(message: string) {
  return (e: unknown) => e instanceof SaslAuthenticationError && e.message === message;
}

describe('plainUsers', () => {
  it('takes every user_ option of a PlainLoginModule and nothing else', () => {
    assert.deepEqual(
      users,
      new Map([
        ['admin', 'admin-secret'],
        ['alice', 'alice secret'],
        ['bob', 'bob"s'],
      ]),
    );
  });

  it('finds no users in another login module', () => {
    assert.equal(plainUsers(parseJaasConfig(`${SCRAM_LOGIN_MODULE} required user_alice="x";`)).size, 0);
  });
});

describe('plainServerExchange', () => {
  it('authenticates a known user in one token and answers with an empty token', () => {
    const exchange = plainServerExchange(users);
    assert.equal(exchange.mechanism, 'PLAIN');
    assert.equal(exchange.complete, false);
    assert.deepEqual(exchange.evaluate(plainClientToken('alice', 'alice secret')), Buffer.alloc(0));
    assert.equal(exchange.complete, true);
    assert.equal(exchange.authorizationId, 'alice');
  });

  it('accepts an authorization id equal to the user name', () => {
    const exchange = plainServerExchange(users);
    exchange.evaluate(Buffer.from('bob\0bob\0bob"s'));
    assert.equal(exchange.authorizationId, 'bob');
  });

  it('refuses an authorization id that differs from the user name', () => {
    assert.throws(
      () => plainServerExchange(users).evaluate(Buffer.from('admin\0alice\0alice secret')),
      refusedWith('Authentication failed: Client requested an authorization id that is different from username'),
    );
  });

  it('gives one message for a wrong password and for an unknown user', () => {
    for (const token of [
      plainClientToken('alice', 'wrong'),
      plainClientToken('mallory', 'alice secret'),
      plainClientToken('alice', 'alice'),
    ]) {
      assert.throws(() => plainServerExchange(users).evaluate(token), refusedWith('Authentication failed: Invalid username or password'));
    }
  });

  it('refuses an empty user name or password as Kafka does', () => {
    assert.throws(
      () => plainServerExchange(users).evaluate(plainClientToken('', 'x')),
      refusedWith('Authentication failed: username not specified'),
    );
    assert.throws(
      () => plainServerExchange(users).evaluate(plainClientToken('alice', '')),
      refusedWith('Authentication failed: password not specified'),
    );
  });

  it('refuses a token without exactly two NULs', () => {
    const cases: [string, number][] = [
      ['alice', 1],
      ['alice\0alice secret', 2],
      ['\0alice\0alice secret\0', 4],
      ['\0alice\0alice secret\0x\0y', 4],
    ];
    for (const [token, count] of cases) {
      assert.throws(
        () => plainServerExchange(users).evaluate(Buffer.from(token)),
        refusedWith(`Invalid SASL/PLAIN response: expected 3 tokens, got ${count}`),
      );
    }
  });

  it('refuses a second token after completing, and any token after failing', () => {
    const completed = plainServerExchange(users);
    completed.evaluate(plainClientToken('admin', 'admin-secret'));
    assert.throws(() => completed.evaluate(plainClientToken('admin', 'admin-secret')), SaslProtocolError);
    assert.equal(completed.complete, false);

    const failed = plainServerExchange(users);
    assert.throws(() => failed.evaluate(plainClientToken('admin', 'wrong')), SaslAuthenticationError);
    assert.throws(() => failed.evaluate(plainClientToken('admin', 'admin-secret')), SaslProtocolError);
    assert.throws(() => failed.authorizationId);
  });

  it('authenticates any user with the right password and no one with a wrong one', () => {
    const text = fc.string({ unit: 'grapheme', minLength: 1 }).filter((s) => !s.includes('\0'));
    fc.assert(
      fc.property(text, text, text, (username, password, other) => {
        const known = new Map([[username, password]]);
        const exchange = plainServerExchange(known);
        exchange.evaluate(plainClientToken(username, password));
        assert.equal(exchange.authorizationId, username);
        if (other !== password) {
          assert.throws(() => plainServerExchange(known).evaluate(plainClientToken(username, other)), SaslAuthenticationError);
        }
      }),
    );
  });
});
