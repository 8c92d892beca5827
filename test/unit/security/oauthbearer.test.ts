import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  OAuthBearerInsufficientScopeError,
  type OAuthBearerToken,
  type OAuthBearerValidator,
  oauthBearerServerExchange,
  parseClientInitialResponse,
  unsecuredValidator,
} from '../../../src/security/oauthbearer.ts';
import { SaslAuthenticationError, SaslProtocolError } from '../../../src/security/sasl-errors.ts';

const NOW_MS = 1_700_000_000_000;
const NOW_S = NOW_MS / 1000;
const now = (): number => NOW_MS;

/** An unsecured JWS as Kafka's OAuthBearerUnsecuredLoginCallbackHandler writes one. */
function unsecuredJws(claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'none' }): string {
  const part = (json: Record<string, unknown>) => Buffer.from(JSON.stringify(json)).toString('base64url');
  return `${part(header)}.${part(claims)}.`;
}

/** The client's first message as Kafka's OAuthBearerClientInitialResponse.toBytes writes it. */
function clientFirstMessage(token: string, authzid = '', extensions: Record<string, string> = {}): Buffer {
  const ext = Object.entries(extensions)
    .map(([k, v]) => `\x01${k}=${v}`)
    .join('');
  return Buffer.from(`n,${authzid === '' ? '' : `a=${authzid}`},\x01auth=Bearer ${token}${ext}\x01\x01`);
}

function protocolError(message: string) {
  return (e: unknown) => e instanceof SaslProtocolError && e.message === message;
}

function refused(message: string) {
  return (e: unknown) => e instanceof SaslAuthenticationError && e.message === message;
}

describe('parseClientInitialResponse (OAUTHBEARER client first message)', () => {
  it('takes the token of a message without authzid or extensions', () => {
    const parsed = parseClientInitialResponse(clientFirstMessage('abc.def.'));
    assert.equal(parsed.tokenValue, 'abc.def.');
    assert.equal(parsed.authorizationId, '');
    assert.equal(parsed.extensions.size, 0);
  });

  it('takes the authzid, kept escaped as Kafka compares it', () => {
    const parsed = parseClientInitialResponse(clientFirstMessage('t', 'alice=2Cbob'));
    assert.equal(parsed.authorizationId, 'alice=2Cbob');
  });

  it('takes the extensions, auth excepted, wherever auth stands among them', () => {
    const parsed = parseClientInitialResponse(Buffer.from('n,,\x01traceId=a=b c\x01auth=bearer tok\x01logicalCluster=lkc-1\x01\x01'));
    assert.equal(parsed.tokenValue, 'tok');
    assert.deepEqual(
      parsed.extensions,
      new Map([
        ['traceId', 'a=b c'],
        ['logicalCluster', 'lkc-1'],
      ]),
    );
  });

  it('refuses a message without the closing \\x01\\x01', () => {
    assert.throws(
      () => parseClientInitialResponse(Buffer.from('n,,\x01auth=Bearer tok\x01')),
      protocolError('Invalid OAUTHBEARER client first message'),
    );
    assert.throws(
      () => parseClientInitialResponse(Buffer.from('n,,\x01auth=Bearer tok')),
      protocolError('Invalid OAUTHBEARER client first message'),
    );
  });

  it('refuses a message without auth, or with another scheme', () => {
    assert.throws(
      () => parseClientInitialResponse(Buffer.from('n,,\x01host=example\x01\x01')),
      protocolError("Invalid OAUTHBEARER client first message: 'auth' not specified"),
    );
    assert.throws(
      () => parseClientInitialResponse(Buffer.from('n,,\x01auth=Basic dXNlcg\x01\x01')),
      protocolError('Invalid scheme in OAUTHBEARER client first message: Basic'),
    );
  });

  it('refuses an empty token, and a token of characters outside the JWS alphabet', () => {
    assert.throws(
      () => parseClientInitialResponse(Buffer.from('n,,\x01auth=Bearer \x01\x01')),
      protocolError("Invalid OAUTHBEARER client first message: invalid 'auth' format"),
    );
    assert.throws(
      () => parseClientInitialResponse(Buffer.from('n,,\x01auth=Bearer a+b/c=\x01\x01')),
      protocolError("Invalid OAUTHBEARER client first message: invalid 'auth' format"),
    );
  });

  it('refuses a GS2 header other than n, and an authzid with a bare comma or equals sign', () => {
    for (const message of ['y,,\x01auth=Bearer t\x01\x01', 'n,a=a,b,\x01auth=Bearer t\x01\x01', 'n,a=a=b,\x01auth=Bearer t\x01\x01'])
      assert.throws(() => parseClientInitialResponse(Buffer.from(message)), SaslProtocolError);
  });

  it('reads back whatever a Kafka client writes', () => {
    const token = fc.stringMatching(/^[-_.a-zA-Z0-9]{1,40}$/);
    const authzid = fc.oneof(fc.constant(''), fc.stringMatching(/^(?:[a-zA-Z0-9@._-]|=2C|=3D){1,20}$/));
    const extensions = fc.dictionary(
      fc.stringMatching(/^[A-Za-z]{1,10}$/).filter((k) => k !== 'auth'),
      fc.stringMatching(/^[\x21-\x7E ]{1,20}$/),
      { maxKeys: 4 },
    );
    fc.assert(
      fc.property(token, authzid, extensions, (t, a, ext) => {
        const parsed = parseClientInitialResponse(clientFirstMessage(t, a, ext));
        assert.equal(parsed.tokenValue, t);
        assert.equal(parsed.authorizationId, a);
        assert.deepEqual(parsed.extensions, new Map(Object.entries(ext)));
      }),
    );
  });

  it('fails on any bytes with a SaslProtocolError only', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          parseClientInitialResponse(Buffer.from(bytes));
        } catch (e) {
          assert.ok(e instanceof SaslProtocolError);
        }
      }),
    );
  });
});

describe('unsecuredValidator (OAuthBearerUnsecuredValidatorCallbackHandler)', () => {
  const validate = unsecuredValidator(new Map(), now);

  it('accepts an alg "none" token: principal from sub, scope, exp and iat in ms', async () => {
    const token = await validate(unsecuredJws({ sub: 'alice', scope: ['read', ' write ', ''], iat: NOW_S, exp: NOW_S + 60.5 }));
    assert.deepEqual(token, {
      principal: 'alice',
      scope: ['read', 'write'],
      lifetimeMs: NOW_MS + 60_500,
      startTimeMs: NOW_MS,
    });
  });

  it('takes a string scope claim as one scope item, as Kafka does', async () => {
    const token = await validate(unsecuredJws({ sub: 'alice', scope: ' read write ', exp: NOW_S + 60 }));
    assert.deepEqual(token.scope, ['read write']);
    assert.equal(token.startTimeMs, null);
  });

  it('refuses an expired token, and one without exp', async () => {
    await assert.rejects(
      validate(unsecuredJws({ sub: 'alice', exp: NOW_S })),
      refused(
        `The indicated time (${NOW_MS} ms) minus allowable clock skew (0 ms) was on or after the Expiration Time value (${NOW_S}.000000 seconds)`,
      ),
    );
    await assert.rejects(validate(unsecuredJws({ sub: 'alice' })), refused('No expiration time in JWT'));
    await assert.rejects(
      validate(unsecuredJws({ sub: 'alice', exp: 'tomorrow' })),
      refused("The 'exp' claim was not of type Number: String"),
    );
  });

  it('refuses a token without the principal claim, or with a blank one', async () => {
    await assert.rejects(validate(unsecuredJws({ exp: NOW_S + 60 })), refused('No principal name in JWT claim: sub'));
    await assert.rejects(validate(unsecuredJws({ sub: '  ', exp: NOW_S + 60 })), refused('No principal name in JWT claim: sub'));
  });

  it('reads the principal and scope from the claims the options name', async () => {
    const custom = unsecuredValidator(
      new Map([
        ['unsecuredValidatorPrincipalClaimName', ' client_id '],
        ['unsecuredValidatorScopeClaimName', 'scp'],
      ]),
      now,
    );
    const token = await custom(unsecuredJws({ sub: 'ignored', client_id: 'svc', scp: ['a'], exp: NOW_S + 1 }));
    assert.equal(token.principal, 'svc');
    assert.deepEqual(token.scope, ['a']);
    await assert.rejects(custom(unsecuredJws({ sub: 'alice', exp: NOW_S + 1 })), refused('No principal name in JWT claim: client_id'));
  });

  it('refuses a token missing a required scope with insufficient_scope', async () => {
    const scoped = unsecuredValidator(new Map([['unsecuredValidatorRequiredScope', 'read  write']]), now);
    await scoped(unsecuredJws({ sub: 'alice', scope: ['write', 'read', 'admin'], exp: NOW_S + 1 }));
    await assert.rejects(scoped(unsecuredJws({ sub: 'alice', scope: ['read'], exp: NOW_S + 1 })), (e: unknown) => {
      assert.ok(e instanceof OAuthBearerInsufficientScopeError);
      assert.deepEqual(e.requiredScope, ['read', 'write']);
      assert.equal(
        e.message,
        'The provided scope ([read]) was missing a required scope (write).  All required scope elements: [read, write]',
      );
      return true;
    });
  });

  it('allows the configured clock skew on exp and iat, and no more', async () => {
    const skewed = unsecuredValidator(new Map([['unsecuredValidatorAllowableClockSkewMs', '1000']]), now);
    const lately = unsecuredJws({ sub: 'alice', exp: NOW_S - 0.5 });
    const early = unsecuredJws({ sub: 'alice', iat: NOW_S + 0.5, exp: NOW_S + 60 });
    assert.equal((await skewed(lately)).lifetimeMs, NOW_MS - 500);
    await skewed(early);
    await assert.rejects(validate(lately), SaslAuthenticationError);
    await assert.rejects(
      validate(early),
      refused(
        `The Issued At value (${NOW_S + 0.5}00000 seconds) was after the indicated time (${NOW_MS} ms) plus allowable clock skew (0 ms)`,
      ),
    );
    await assert.rejects(skewed(unsecuredJws({ sub: 'alice', exp: NOW_S - 1 })), SaslAuthenticationError);
  });

  it('refuses an exp not after iat', async () => {
    const skewed = unsecuredValidator(new Map([['unsecuredValidatorAllowableClockSkewMs', '10000']]), now);
    await assert.rejects(
      skewed(unsecuredJws({ sub: 'alice', iat: NOW_S + 5, exp: NOW_S + 3 })),
      refused(`The Expiration Time time (${NOW_S + 3}.000000 seconds) was not after the Issued At time (${NOW_S + 5}.000000 seconds)`),
    );
  });

  it('refuses a signed token, a token with a signature, and a malformed one', async () => {
    const claims = { sub: 'alice', exp: NOW_S + 60 };
    await assert.rejects(validate(unsecuredJws(claims, { alg: 'RS256' })), refused("Unsecured JWS must have 'none' for an algorithm"));
    await assert.rejects(validate(unsecuredJws(claims, {})), refused('JWS header must have an Algorithm value'));
    await assert.rejects(validate(`${unsecuredJws(claims)}c2ln`), refused('Unsecured JWS must not contain a digital signature'));
    await assert.rejects(validate('a..b'), refused("Malformed compact serialization contains '..'"));
    await assert.rejects(validate('abc.def'), SaslAuthenticationError);
    await assert.rejects(validate('e30.bm90IGpzb24.'), refused('malformed JSON in the JWS claims'));
  });

  it('refuses a bad option when configured, not when a token arrives', () => {
    assert.throws(() => unsecuredValidator(new Map([['unsecuredValidatorAllowableClockSkewMs', '-1']]), now), /must not be negative/);
    assert.throws(() => unsecuredValidator(new Map([['unsecuredValidatorAllowableClockSkewMs', '1s']]), now));
    assert.throws(() => unsecuredValidator(new Map([['unsecuredValidatorRequiredScope', 'a "b"']]), now), /Invalid scope value: "b"/);
  });
});

describe('oauthBearerServerExchange (OAuthBearerSaslServer)', () => {
  const validate = unsecuredValidator(new Map([['unsecuredValidatorRequiredScope', 'kafka']]), now);
  const good = unsecuredJws({ sub: 'alice', scope: 'kafka', iat: NOW_S, exp: NOW_S + 3600 });

  it('completes on a valid token with its principal as authorization id and its expiry as session end', async () => {
    const exchange = oauthBearerServerExchange(validate, now);
    assert.equal(exchange.mechanism, 'OAUTHBEARER');
    assert.throws(() => exchange.authorizationId, /has not completed/);
    assert.deepEqual(await exchange.evaluate(clientFirstMessage(good, '', { traceId: 'x' })), Buffer.alloc(0));
    assert.equal(exchange.complete, true);
    assert.equal(exchange.authorizationId, 'alice');
    assert.equal(exchange.sessionExpiresAtMs, NOW_MS + 3_600_000);
    await assert.rejects(exchange.evaluate(clientFirstMessage(good)), SaslProtocolError);
  });

  it('accepts an authzid equal to the principal and refuses another', async () => {
    await oauthBearerServerExchange(validate, now).evaluate(clientFirstMessage(good, 'alice'));
    const exchange = oauthBearerServerExchange(validate, now);
    await assert.rejects(
      exchange.evaluate(clientFirstMessage(good, 'bob')),
      refused(
        "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)",
      ),
    );
    assert.equal(exchange.complete, false);
  });

  it("answers an invalid token with the error JSON, then fails on the client's \\x01", async () => {
    const exchange = oauthBearerServerExchange(validate, now);
    const expired = unsecuredJws({ sub: 'alice', scope: 'kafka', exp: NOW_S - 1 });
    const answer = await exchange.evaluate(clientFirstMessage(expired));
    assert.equal(answer.toString(), '{"status":"invalid_token"}');
    assert.equal(exchange.complete, false);
    await assert.rejects(exchange.evaluate(Buffer.from([0x01])), (e: unknown) => {
      assert.ok(e instanceof SaslAuthenticationError);
      assert.equal(e.message, '{"status":"invalid_token"}');
      assert.match(String((e.cause as Error).message), /Expiration Time/);
      return true;
    });
    assert.equal(exchange.complete, false);
  });

  it('answers a token short of scope with insufficient_scope and the scope, as Kafka writes it', async () => {
    const exchange = oauthBearerServerExchange(validate, now);
    const answer = await exchange.evaluate(clientFirstMessage(unsecuredJws({ sub: 'alice', exp: NOW_S + 1 })));
    assert.equal(answer.toString(), '{"status":"insufficient_scope", "scope":"[kafka]"}');
  });

  it('lets the client send another token instead of the \\x01, as Kafka does', async () => {
    const exchange = oauthBearerServerExchange(validate, now);
    await exchange.evaluate(clientFirstMessage('e30.e30.'));
    await exchange.evaluate(clientFirstMessage(good));
    assert.equal(exchange.authorizationId, 'alice');
  });

  it('takes a lone \\x01 with no error pending for a malformed first message', async () => {
    await assert.rejects(
      oauthBearerServerExchange(validate, now).evaluate(Buffer.from([0x01])),
      protocolError('Invalid OAUTHBEARER client first message'),
    );
  });

  it('fails as an internal error, not a refusal, when the validator breaks', async () => {
    const broken: OAuthBearerValidator = async () => {
      throw new TypeError('bug');
    };
    await assert.rejects(
      oauthBearerServerExchange(broken, now).evaluate(clientFirstMessage(good)),
      protocolError('Authentication could not be performed due to an internal error on the server: TypeError: bug'),
    );
  });

  it('refuses a second token while the first is being validated', async () => {
    let release: (token: OAuthBearerToken) => void = () => {};
    const slow: OAuthBearerValidator = () => new Promise((resolve) => (release = resolve));
    const exchange = oauthBearerServerExchange(slow, now);
    const first = exchange.evaluate(clientFirstMessage(good));
    await assert.rejects(exchange.evaluate(clientFirstMessage(good)), SaslProtocolError);
    release({ principal: 'alice', scope: [], lifetimeMs: NOW_MS + 1, startTimeMs: null });
    await first;
    assert.equal(exchange.complete, true);
  });

  it('ends the session no earlier than authentication for a token expiring within the clock skew', async () => {
    const skewed = unsecuredValidator(new Map([['unsecuredValidatorAllowableClockSkewMs', '5000']]), now);
    const exchange = oauthBearerServerExchange(skewed, now);
    await exchange.evaluate(clientFirstMessage(unsecuredJws({ sub: 'alice', exp: NOW_S - 2 })));
    assert.equal(exchange.sessionExpiresAtMs, NOW_MS);
  });
});
