import assert from 'node:assert/strict';
import { type KeyObject, constants, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Clock, TimerHandle } from '../../../src/runtime/clock.ts';
import { JwksSource } from '../../../src/security/jwks.ts';
import { type JwksValidatorConfig, jwksValidator, oauthBearerServerExchange } from '../../../src/security/oauthbearer.ts';
import { SaslAuthenticationError } from '../../../src/security/sasl-errors.ts';

const NOW_MS = 1_700_000_000_000;
const NOW_S = NOW_MS / 1000;
const now = (): number => NOW_MS;

const part = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url');

interface SigningKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: KeyObject;
  readonly jwk: Record<string, unknown>;
}

function signingKey(kid: string, alg: string): SigningKey {
  const { publicKey, privateKey } = alg.startsWith('ES')
    ? generateKeyPairSync('ec', { namedCurve: { ES256: 'P-256', ES384: 'P-384' }[alg] ?? 'P-521' })
    : generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, alg, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg } };
}

/** A token as an identity provider signs it: compact JWS, ECDSA as raw R || S. */
function signToken(key: SigningKey, claims: object, header: object = { alg: key.alg, kid: key.kid, typ: 'JWT' }): string {
  const input = Buffer.from(`${part(header)}.${part(claims)}`);
  const hash = `sha${key.alg.slice(2)}`;
  const signature = key.alg.startsWith('ES')
    ? sign(hash, input, { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
    : key.alg.startsWith('PS')
      ? sign(hash, input, {
          key: key.privateKey,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
        })
      : sign(hash, input, key.privateKey);
  return `${input}.${signature.toString('base64url')}`;
}

const claims = (extra: object = {}) => ({ sub: 'alice', iat: NOW_S, exp: NOW_S + 3600, ...extra });

/** A JWKS endpoint on 127.0.0.1 whose answer the test sets, counting the requests it serves. */
class JwksEndpoint {
  keys: SigningKey[] = [];
  status = 200;
  body: string | null = null;
  requests = 0;
  readonly #server: Server = createServer((_req, res) => {
    this.requests += 1;
    res.writeHead(this.status, { 'content-type': 'application/json' });
    res.end(this.body ?? JSON.stringify({ keys: this.keys.map((k) => k.jwk) }));
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/jwks`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

function refusedBecause(pattern: RegExp) {
  return (e: unknown) => {
    assert.ok(e instanceof SaslAuthenticationError, String(e));
    assert.match(`${e.message} ${(e.cause as Error | undefined)?.message ?? ''}`, pattern);
    return true;
  };
}

/** Virtual time for the refresh schedule and the backoffs; I/O still runs for real. */
class ManualClock implements Clock {
  #elapsedMs = 0;
  #timers: { atMs: number; fn: () => void; handle: TimerHandle }[] = [];

  now(): number {
    return NOW_MS + this.#elapsedMs;
  }
  monotonicMs(): number {
    return this.#elapsedMs;
  }
  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const handle = {};
    this.#timers.push({ atMs: this.#elapsedMs + delayMs, fn, handle });
    return handle;
  }
  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.handle !== handle);
  }
  setImmediate(fn: () => void): void {
    setImmediate(fn);
  }
  get pendingTimers(): number {
    return this.#timers.length;
  }
  advance(ms: number): void {
    const targetMs = this.#elapsedMs + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.atMs <= targetMs).sort((a, b) => a.atMs - b.atMs)[0];
      if (due === undefined) break;
      this.#elapsedMs = due.atMs;
      this.clearTimeout(due.handle);
      due.fn();
    }
    this.#elapsedMs = targetMs;
  }
}

/** Waits, in real time, for the I/O a timer started; `step` moves virtual time meanwhile. */
async function eventually(condition: () => boolean, step: () => void = () => {}): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail('condition not met within 5 s');
    step();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('jwksValidator against a JWKS endpoint (KIP-768)', () => {
  let rsa: SigningKey;
  let ec: SigningKey;
  let rotated: SigningKey;
  let ps: SigningKey;
  const endpoint = new JwksEndpoint();
  let url: string;
  const sources: JwksSource[] = [];

  before(async () => {
    rsa = signingKey('rsa-1', 'RS256');
    ec = signingKey('ec-1', 'ES256');
    rotated = signingKey('rsa-2', 'RS384');
    ps = signingKey('ps-1', 'PS256');
    url = await endpoint.start();
  });

  beforeEach(() => {
    endpoint.keys = [rsa, ec, ps];
    endpoint.status = 200;
    endpoint.body = null;
    endpoint.requests = 0;
  });

  afterEach(() => {
    for (const source of sources.splice(0)) source.close();
  });

  after(() => endpoint.stop());

  function source(options: ConstructorParameters<typeof JwksSource>[1] = {}, at = url): JwksSource {
    const jwks = new JwksSource(at, options);
    sources.push(jwks);
    return jwks;
  }

  function validator(overrides: Partial<JwksValidatorConfig> = {}) {
    return jwksValidator(
      {
        jwks: overrides.jwks ?? source(),
        expectedAudience: [],
        expectedIssuer: null,
        subClaimName: 'sub',
        scopeClaimName: 'scope',
        clockSkewSeconds: 30,
        ...overrides,
      },
      now,
    );
  }

  it('accepts tokens signed by RS256, ES256 and PS256 keys of the set', async () => {
    const validate = validator();
    const token = await validate(signToken(rsa, claims({ scope: ['read', 'write'] })));
    assert.deepEqual(token, {
      principal: 'alice',
      scope: ['read', 'write'],
      lifetimeMs: (NOW_S + 3600) * 1000,
      startTimeMs: NOW_MS,
    });
    assert.equal((await validate(signToken(ec, claims()))).principal, 'alice');
    assert.equal((await validate(signToken(ps, claims()))).principal, 'alice');
    assert.equal(endpoint.requests, 1, 'the keys are fetched once and cached');
  });

  it('finds the key by algorithm when the token names no kid', async () => {
    const token = signToken(ec, claims(), { alg: 'ES256' });
    assert.equal((await validator()(token)).principal, 'alice');
  });

  it('refuses a token signed by a key other than the one its kid names', async () => {
    const forged = signToken({ ...rotated, kid: 'rsa-1', alg: 'RS256' }, claims());
    await assert.rejects(validator()(forged), refusedBecause(/the JWS signature is invalid/));
  });

  it('refreshes the keys once when a token names an unknown kid, and finds a rotated key', async () => {
    const validate = validator();
    await validate(signToken(rsa, claims()));
    endpoint.keys = [rsa, rotated];
    assert.equal((await validate(signToken(rotated, claims()))).principal, 'alice');
    assert.equal(endpoint.requests, 2);
    await validate(signToken(rotated, claims()));
    assert.equal(endpoint.requests, 2, 'a known kid needs no refresh');
  });

  it('refreshes for an unknown kid at most once a minute, as Kafka does', async () => {
    const validate = validator();
    const stranger = signToken({ ...rotated, kid: 'nobody' }, claims());
    await validate(signToken(rsa, claims()));
    await assert.rejects(validate(stranger), refusedBecause(/Unable to find a suitable verification key/));
    await assert.rejects(validate(stranger), SaslAuthenticationError);
    assert.equal(endpoint.requests, 2);
  });

  it('shares one request among lookups that arrive together', async () => {
    const validate = validator();
    await Promise.all([validate(signToken(rsa, claims())), validate(signToken(ec, claims()))]);
    assert.equal(endpoint.requests, 1);
  });

  it('checks the audience: one of the expected, and none at all when none is expected, as Kafka does', async () => {
    const withAudience = validator({ expectedAudience: ['kafka', 'other'] });
    await withAudience(signToken(rsa, claims({ aud: ['web', 'kafka'] })));
    await withAudience(signToken(rsa, claims({ aud: 'other' })));
    await assert.rejects(
      withAudience(signToken(rsa, claims({ aud: 'web' }))),
      refusedBecause(/Audience \(aud\) claim \[web\] doesn't contain an acceptable identifier/),
    );
    await assert.rejects(withAudience(signToken(rsa, claims())), refusedBecause(/No Audience \(aud\) claim present/));
    await assert.rejects(
      validator()(signToken(rsa, claims({ aud: 'kafka' }))),
      refusedBecause(/no expected audience value\(s\) were provided/),
    );
  });

  it('checks the issuer when one is expected', async () => {
    const validate = validator({ expectedIssuer: 'https://idp.example' });
    await validate(signToken(rsa, claims({ iss: 'https://idp.example' })));
    await assert.rejects(
      validate(signToken(rsa, claims({ iss: 'https://evil.example' }))),
      refusedBecause(/Issuer \(iss\) claim value \(https:\/\/evil.example\) doesn't match/),
    );
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/No Issuer \(iss\) claim present/));
  });

  it('allows sasl.oauthbearer.clock.skew.seconds on exp and nbf, and no more', async () => {
    const validate = validator();
    await validate(signToken(rsa, claims({ exp: NOW_S - 29 })));
    await assert.rejects(validate(signToken(rsa, claims({ exp: NOW_S - 30 }))), refusedBecause(/no longer valid/));
    await validate(signToken(rsa, claims({ nbf: NOW_S + 30 })));
    await assert.rejects(validate(signToken(rsa, claims({ nbf: NOW_S + 31 }))), refusedBecause(/not yet valid/));
    await assert.rejects(validator({ clockSkewSeconds: 0 })(signToken(rsa, claims({ exp: NOW_S }))), refusedBecause(/no longer valid/));
  });

  it('requires exp and iat', async () => {
    const validate = validator();
    await assert.rejects(validate(signToken(rsa, { sub: 'alice', iat: NOW_S })), refusedBecause(/exp/));
    await assert.rejects(validate(signToken(rsa, { sub: 'alice', exp: NOW_S + 60 })), refusedBecause(/iat/));
  });

  it('reads the principal and scope from the configured claims, as Kafka validates them', async () => {
    const validate = validator({ subClaimName: 'client_id', scopeClaimName: 'scp' });
    const token = await validate(signToken(rsa, claims({ client_id: ' svc ', scp: 'read write' })));
    assert.equal(token.principal, 'svc');
    assert.deepEqual(token.scope, ['read write']);
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/client_id value must be non-null/));
    await assert.rejects(
      validate(signToken(rsa, claims({ client_id: 'svc', scp: ['a', 'a'] }))),
      refusedBecause(/must not contain duplicates/),
    );
  });

  it('refuses alg "none" without looking up a key', async () => {
    const unsecured = `${part({ alg: 'none' })}.${part(claims())}.`;
    await assert.rejects(validator()(unsecured), refusedBecause(/signature section missing/));
    const withSignature = `${part({ alg: 'none' })}.${part(claims())}.c2ln`;
    await assert.rejects(validator()(withSignature), refusedBecause(/'none' is not an allowed algorithm/));
    const hmac = `${part({ alg: 'HS256' })}.${part(claims())}.c2ln`;
    await assert.rejects(validator()(hmac), refusedBecause(/HS256 is not supported/));
    assert.equal(endpoint.requests, 0);
  });

  it('refuses, never crashes, when the endpoint is down', async () => {
    const dead = new JwksEndpoint();
    const deadUrl = await dead.start();
    await dead.stop();
    const validate = validator({ jwks: source({}, deadUrl) });
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/no verification key/));
    const exchange = oauthBearerServerExchange(validate, now);
    const answer = await exchange.evaluate(Buffer.from(`n,,\x01auth=Bearer ${signToken(rsa, claims())}\x01\x01`));
    assert.equal(answer.toString(), '{"status":"invalid_token"}');
    await assert.rejects(exchange.evaluate(Buffer.from([1])), SaslAuthenticationError);
  });

  it('backs off, doubling, while the endpoint answers errors or garbage, and recovers when it comes back', async () => {
    const clock = new ManualClock();
    const validate = validator({ jwks: source({ clock, retryBackoffMs: 100, retryBackoffMaxMs: 1000 }) });
    endpoint.status = 503;
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/HTTP 503/));
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/backoff/));
    assert.equal(endpoint.requests, 1, 'no request during the backoff');
    clock.advance(100);
    endpoint.status = 200;
    endpoint.body = '<html>';
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/not valid JSON/));
    clock.advance(199);
    endpoint.body = null;
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/backoff/));
    assert.equal(endpoint.requests, 2, 'the second backoff is twice the first');
    clock.advance(1);
    assert.equal((await validate(signToken(rsa, claims()))).principal, 'alice');
  });

  it('refreshes every refresh.ms, keeping the old keys when a refresh fails, until closed', async () => {
    const clock = new ManualClock();
    const failures: unknown[] = [];
    const jwks = source({
      clock,
      refreshMs: 60_000,
      retryBackoffMs: 100,
      retryBackoffMaxMs: 300,
      onRefreshFailure: (e) => failures.push(e),
    });
    const validate = validator({ jwks });
    await validate(signToken(rsa, claims()));
    endpoint.keys = [rsa, rotated];
    clock.advance(59_999);
    assert.equal(endpoint.requests, 1);
    clock.advance(1);
    await eventually(() => endpoint.requests === 2);
    await eventually(() => clock.pendingTimers === 1);
    assert.equal((await validate(signToken(rotated, claims()))).principal, 'alice');
    assert.equal(endpoint.requests, 2, 'the scheduled refresh already brought the rotated key');

    endpoint.status = 500;
    clock.advance(60_000);
    await eventually(
      () => failures.length === 1,
      () => clock.advance(50),
    );
    assert.equal(endpoint.requests, 5, 'a failed refresh is tried again at 100 and 300 ms, then given up');
    assert.match(String(failures[0]), /HTTP 500/);
    assert.equal((await validate(signToken(rsa, claims()))).principal, 'alice');

    jwks.close();
    assert.equal(clock.pendingTimers, 0);
    await assert.rejects(validate(signToken(rsa, claims())), refusedBecause(/closed/));
  });

  it('reads a file:// JWKS from disk', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sluice-jwks-'));
    try {
      const path = join(dir, 'jwks.json');
      await writeFile(path, JSON.stringify({ keys: [ec.jwk] }));
      const validate = validator({ jwks: source({}, pathToFileURL(path).href) });
      assert.equal((await validate(signToken(ec, claims()))).principal, 'alice');
      assert.equal(endpoint.requests, 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a URL of another scheme and bad refresh settings when configured', () => {
    assert.throws(() => new JwksSource('ftp://idp.example/jwks'), /http, https or file URL/);
    assert.throws(() => new JwksSource(url, { refreshMs: 0 }), /must be positive/);
    assert.throws(() => new JwksSource(url, { retryBackoffMs: 100, retryBackoffMaxMs: 10 }), /retry.backoff/);
    assert.throws(
      () =>
        jwksValidator(
          { jwks: source(), expectedAudience: [], expectedIssuer: null, subClaimName: ' ', scopeClaimName: 'scope', clockSkewSeconds: 30 },
          now,
        ),
      /must not be blank/,
    );
  });
});
