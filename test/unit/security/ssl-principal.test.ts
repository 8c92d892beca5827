import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { createTestPki, subjectValue, type TestPki } from '../../helpers/certs.ts';
import { distinguishedName, NoMatchingRuleError, SslPrincipalMapper } from '../../../src/security/ssl-principal.ts';

const execFileAsync = promisify(execFile);

describe('distinguishedName', () => {
  let pki: TestPki;
  before(async () => {
    pki = await createTestPki();
  });
  after(() => pki.remove());

  const dnOf = (certPath: string): string => distinguishedName(new X509Certificate(readFileSync(certPath)));

  it("writes the subject as openssl's RFC 2253 form does: most specific RDN first, with ',' and '+' escaped", async () => {
    for (const subject of ['/C=US/ST=CA/L=SF/O=Acme\\, Inc./OU=eng/CN=alice', '/DC=com/DC=example/O=Sluice/OU=a\\+b;c<d>"e"\\\\f/CN=bob']) {
      const cert = await pki.issue(subject);
      assert.equal(dnOf(cert.cert), cert.dn, subject);
    }
    const alice = await pki.client('alice', 'eng');
    assert.equal(dnOf(alice.cert), 'CN=alice,OU=eng,O=Sluice');
  });

  // Where Java's X500Principal.getName() and openssl differ, Java is what Kafka's principals
  // come from: these strings are what Java 17 prints for the same certificates.
  it("follows Java where openssl differs: '=' and every '#' escaped, RDN members in encoded order, other types as #hex", async () => {
    const special = await pki.issue('/DC=com/DC=example/O=Ac\\,me\\+x/OU=a=b/CN=al\\/ice\\+bob+UID=42/CN= #lead; "q" <x> trail ');
    assert.equal(special.dn, 'CN=\\ #lead\\; \\"q\\" \\<x\\> trail\\ ,CN=al/ice\\+bob+UID=42,OU=a=b,O=Ac\\,me\\+x,DC=example,DC=com');
    assert.equal(
      dnOf(special.cert),
      'CN=\\ \\#lead\\; \\"q\\" \\<x\\> trail\\ ,UID=42+CN=al/ice\\+bob,OU=a\\=b,O=Ac\\,me\\+x,DC=example,DC=com',
    );
    const typed = await pki.issue('/C=US/ST=Ca/L=SF/O=Ünïcode/emailAddress=a@b.c/CN=x\\\\y');
    assert.equal(dnOf(typed.cert), 'CN=x\\\\y,1.2.840.113549.1.9.1=#16056140622e63,O=Ünïcode,L=SF,ST=Ca,C=US');
  });

  it('escapes any printable ASCII value as openssl does, up to the extra escapes Java adds', async () => {
    const dir = pki.dir;
    let n = 0;
    const value = fc
      .string({ unit: fc.constantFrom(...'ab Z09,+"\\<>;=#/-.'.split('')), minLength: 1, maxLength: 12 })
      .filter((v) => !/^ {2}| {2}$/.test(v) && v.trim() !== '');
    await fc.assert(
      fc.asyncProperty(value, async (v) => {
        const cert = join(dir, `property-${++n}.pem`);
        await execFileAsync('openssl', [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          `${cert}.key`,
          '-out',
          cert,
          '-days',
          '1',
          '-subj',
          `/O=Sluice/CN=${subjectValue(v)}`,
        ]);
        const { stdout } = await execFileAsync('openssl', ['x509', '-in', cert, '-noout', '-subject', '-nameopt', 'RFC2253']);
        const openssl = stdout.trim().replace(/^subject=/, '');
        // Java escapes '=' and '#' wherever they are, openssl a leading '#' only (and not when
        // it is the whole value): compare with those two escapes taken out of both.
        const withoutOptionalEscapes = (dn: string): string => dn.replace(/\\(.)/g, (pair, c: string) => ('=#'.includes(c) ? c : pair));
        assert.equal(withoutOptionalEscapes(dnOf(cert)), withoutOptionalEscapes(openssl));
      }),
      { numRuns: 25 },
    );
  });
});

describe('SslPrincipalMapper', () => {
  // Ported from Kafka's SslPrincipalMapperTest.
  it('accepts valid rules', () => {
    for (const rules of [
      'DEFAULT',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT',
      'RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/',
      'RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L',
      'RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U',
      'RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/',
      'RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/',
    ]) {
      assert.doesNotThrow(() => SslPrincipalMapper.fromRules(rules), rules);
    }
  });

  it('refuses invalid rules', () => {
    for (const rules of [
      'default',
      'DEFAUL',
      'DEFAULT/L',
      'DEFAULT/U',
      'RULE:CN=(.*?),OU=ServiceUsers.*/$1',
      'rule:^CN=(.*?),OU=ServiceUsers.*$/$1/',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/L',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/U',
      'RULE:^CN=(.*?),OU=ServiceUsers.*$/LU',
    ]) {
      assert.throws(() => SslPrincipalMapper.fromRules(rules), /Invalid rule/, rules);
    }
  });

  it('maps names with the first rule that applies', () => {
    const mapper = SslPrincipalMapper.fromRules(
      [
        'RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L',
        'RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L',
        'RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U',
        'RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U',
        'DEFAULT',
      ].join(', '),
    );
    assert.equal(mapper.name('CN=Duke,OU=ServiceUsers,O=Org,C=US'), 'duke');
    assert.equal(mapper.name('CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US'), 'duke@sme');
    assert.equal(mapper.name('cn=duke,ou=sme,dc=mycp,dc=com'), 'DUKE@SME');
    assert.equal(mapper.name('cN=duke,OU=JavaSoft,O=Sun Microsystems'), 'DUKE');
    assert.equal(mapper.name('OU=JavaSoft,O=Sun Microsystems,C=US'), 'OU=JavaSoft,O=Sun Microsystems,C=US');
  });

  it('splits rules as Kafka does', () => {
    const cases: [string, string][] = [
      ['[]', ''],
      ['[DEFAULT]', 'DEFAULT'],
      ['[RULE:/]', 'RULE://'],
      ['[RULE:/.*]', 'RULE:/.*/'],
      ['[RULE:/.*/L]', 'RULE:/.*/L'],
      ['[RULE:/, DEFAULT]', 'RULE://,DEFAULT'],
      ['[RULE:/, DEFAULT]', '  RULE:// ,  DEFAULT  '],
      ['[RULE:   /     , DEFAULT]', '  RULE:   /     / ,  DEFAULT  '],
      ['[RULE:  /     /U, DEFAULT]', '  RULE:  /     /U   ,DEFAULT  '],
      ['[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]', '  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  '],
      // empty rules are ignored
      ['[]', ',   , , ,      , , ,   '],
      ['[RULE:/, DEFAULT]', ',,RULE://,,,DEFAULT,,'],
      ['[RULE: /   , DEFAULT]', ',  , RULE: /   /    ,,,   DEFAULT, ,   '],
      ['[RULE:   /  /U, DEFAULT]', '     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,'],
      // escape sequences
      ['[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]', 'RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//'],
      ['[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]', 'RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/'],
      // rules rule
      [
        '[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]',
        'RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT',
      ],
    ];
    for (const [expected, rules] of cases)
      assert.equal(SslPrincipalMapper.fromRules(rules).toString(), `SslPrincipalMapper(rules = ${expected})`, rules);
  });

  it('keeps an escaped comma with whitespace inside a name', () => {
    const mapper = SslPrincipalMapper.fromRules('RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT');
    assert.equal(mapper.name('CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz'), 'Tkac\\, Adam');
  });

  it('treats a reference to a group the pattern lacks as literal text, as Kafka does', () => {
    const mapper = SslPrincipalMapper.fromRules('RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$4/');
    assert.equal(mapper.name('CN=alice,OU=eng,O=Acme'), 'alice@$4');
  });

  it('fails a name no rule applies to, and defaults to DEFAULT', () => {
    assert.throws(
      () => SslPrincipalMapper.fromRules('RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/').name('CN=alice,OU=eng'),
      (err: unknown) => err instanceof NoMatchingRuleError && /No rules apply to CN=alice,OU=eng/.test(err.message),
    );
    assert.equal(SslPrincipalMapper.fromRules(null).name('CN=alice,OU=eng'), 'CN=alice,OU=eng');
  });

  it('gives the DEFAULT rule any name unchanged', () => {
    const mapper = SslPrincipalMapper.fromRules('DEFAULT');
    fc.assert(fc.property(fc.string(), (dn) => mapper.name(dn) === dn));
  });
});
