import assert from 'node:assert/strict';
import { Errors } from '../../../protocol/errors.ts';
import { SaslSession, type SaslListener } from '../../../src/server/sasl-session.ts';
import { plainClientToken, plainServerExchange } from '../../../src/security/plain.ts';
import { ScramClient, scramCredential, scramServerExchange } from '../../../src/security/scram.ts';

const USERS = new Map([
  ['alice', 'alice-pw'],
  ['bob', 'bob-pw'],
]);
const SALT = Buffer.from('salt-salt-salt');
const BOB_SCRAM = scramCredential('SCRAM-SHA-256', 'bob-pw', SALT, 4096);

function listener(reauthenticationMs = 0): SaslListener {
  return {
    mechanisms: ['PLAIN', 'SCRAM-SHA-256'],
    exchange: (m) =>
      m === 'PLAIN' ? plainServerExchange(USERS) : scramServerExchange('SCRAM-SHA-256', (u) => (u === 'bob' ? BOB_SCRAM : undefined)),
    reauthenticationMs,
    failedAuthenticationDelayMs: 0,
  };
}

describe('SaslSession (the SASL exchange of one connection)', () => {
  it('authenticates with PLAIN after a v1 handshake and answers no session lifetime by default', async () => {
    const s = new SaslSession(listener(), () => 0);
    assert.deepEqual(s.handshake('PLAIN', 1), { errorCode: 0, mechanisms: ['PLAIN', 'SCRAM-SHA-256'], closeReason: null });
    const r = await s.authenticate(plainClientToken('alice', 'alice-pw'));
    assert.equal(r.errorCode, 0);
    assert.equal(r.sessionLifetimeMs, 0n);
    assert.equal(s.current, 'complete');
    assert.equal(s.user, 'alice');
  });

  it('runs a SCRAM exchange over several tokens', async () => {
    const s = new SaslSession(listener(), () => 0);
    s.handshake('SCRAM-SHA-256', 1);
    const client = new ScramClient('SCRAM-SHA-256', 'bob', 'bob-pw');
    const first = await s.authenticate(client.first());
    assert.equal(s.current, 'authenticate');
    const last = await s.authenticate(client.next(first.authBytes));
    client.finish(last.authBytes);
    assert.equal(s.user, 'bob');
  });

  it('refuses a wrong password with SASL_AUTHENTICATION_FAILED, a message without the secret, and a close', async () => {
    const s = new SaslSession(listener(), () => 0);
    s.handshake('PLAIN', 1);
    const r = await s.authenticate(plainClientToken('alice', 'hunter2'));
    assert.equal(r.errorCode, Errors.SASL_AUTHENTICATION_FAILED.code);
    assert.equal(r.errorMessage, 'Authentication failed: Invalid username or password');
    assert.ok(r.closeReason !== null && !r.closeReason.includes('hunter2'));
    assert.equal(s.current, 'failed');
  });

  it('holds back the answer to a failed authentication by connection.failed.authentication.delay.ms', async () => {
    const slept: number[] = [];
    const s = new SaslSession(
      { ...listener(), failedAuthenticationDelayMs: 100 },
      () => 0,
      async (ms) => {
        slept.push(ms);
      },
    );
    s.handshake('PLAIN', 1);
    await s.authenticate(plainClientToken('alice', 'alice-pw'));
    assert.equal(slept.length, 0);
    const t = new SaslSession(
      { ...listener(), failedAuthenticationDelayMs: 100 },
      () => 0,
      async (ms) => {
        slept.push(ms);
      },
    );
    t.handshake('PLAIN', 1);
    await t.authenticate(plainClientToken('alice', 'wrong'));
    assert.deepEqual(slept, [100]);
  });

  it('refuses a garbage token as a failed authentication and closes', async () => {
    const s = new SaslSession(listener(), () => 0);
    s.handshake('SCRAM-SHA-256', 1);
    const r = await s.authenticate(Buffer.from([0xff, 0x00, 0x13, 0x37]));
    assert.equal(r.errorCode, Errors.SASL_AUTHENTICATION_FAILED.code);
    assert.notEqual(r.closeReason, null);
  });

  it('answers UNSUPPORTED_SASL_MECHANISM with the enabled mechanisms, then closes', () => {
    const s = new SaslSession(listener(), () => 0);
    const r = s.handshake('GSSAPI', 1);
    assert.equal(r.errorCode, Errors.UNSUPPORTED_SASL_MECHANISM.code);
    assert.deepEqual(r.mechanisms, ['PLAIN', 'SCRAM-SHA-256']);
    assert.notEqual(r.closeReason, null);
  });

  it('refuses SaslAuthenticate before a handshake and a second handshake mid-exchange (ILLEGAL_SASL_STATE)', async () => {
    const s = new SaslSession(listener(), () => 0);
    assert.equal((await s.authenticate(Buffer.from('x'))).errorCode, Errors.ILLEGAL_SASL_STATE.code);
    const t = new SaslSession(listener(), () => 0);
    t.handshake('SCRAM-SHA-256', 1);
    assert.equal(t.handshake('SCRAM-SHA-256', 1).errorCode, Errors.ILLEGAL_SASL_STATE.code);
  });

  it('after a v0 handshake expects bare tokens (the legacy exchange)', async () => {
    const s = new SaslSession(listener(), () => 0);
    s.handshake('PLAIN', 0);
    assert.equal(s.expectsBareToken, true);
    await s.authenticate(plainClientToken('alice', 'alice-pw'));
    assert.equal(s.expectsBareToken, false);
    assert.equal(s.current, 'complete');
  });

  it('ends a session after connections.max.reauth.ms and re-authenticates it with the same mechanism and principal (KIP-368)', async () => {
    let now = 0;
    const s = new SaslSession(listener(60_000), () => now);
    s.handshake('PLAIN', 1);
    assert.equal((await s.authenticate(plainClientToken('alice', 'alice-pw'))).sessionLifetimeMs, 60_000n);
    now = 59_999;
    assert.equal(s.expired(), false);
    now = 60_000;
    assert.equal(s.expired(), true);
    assert.equal(s.handshake('PLAIN', 1).errorCode, 0);
    assert.equal((await s.authenticate(plainClientToken('alice', 'alice-pw'))).errorCode, 0);
    assert.equal(s.expired(), false);
    now = 200_000;
    assert.equal(s.handshake('PLAIN', 1).errorCode, 0);
    const other = await s.authenticate(plainClientToken('bob', 'bob-pw'));
    assert.equal(other.errorCode, Errors.SASL_AUTHENTICATION_FAILED.code);
    assert.match(other.errorMessage!, /Cannot change principals/);
  });

  it('refuses re-authentication with another mechanism or a v0 handshake', async () => {
    const s = new SaslSession(listener(1000), () => 0);
    s.handshake('PLAIN', 1);
    await s.authenticate(plainClientToken('alice', 'alice-pw'));
    assert.equal(s.handshake('SCRAM-SHA-256', 1).errorCode, Errors.ILLEGAL_SASL_STATE.code);
    const t = new SaslSession(listener(1000), () => 0);
    t.handshake('PLAIN', 1);
    await t.authenticate(plainClientToken('alice', 'alice-pw'));
    assert.equal(t.handshake('PLAIN', 0).errorCode, Errors.ILLEGAL_SASL_STATE.code);
  });
});
