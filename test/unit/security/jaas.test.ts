import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, parseJaasConfig } from '../../../src/security/jaas.ts';

describe('parseJaasConfig', () => {
  it('reads the login module, its control flag and quoted options', () => {
    const module = parseJaasConfig(`${SCRAM_LOGIN_MODULE} required username="alice" password="alice-secret";`);
    assert.equal(module.loginModule, SCRAM_LOGIN_MODULE);
    assert.equal(module.controlFlag, 'required');
    assert.deepEqual(
      module.options,
      new Map([
        ['username', 'alice'],
        ['password', 'alice-secret'],
      ]),
    );
  });

  it('accepts every control flag in any case', () => {
    for (const [flag, expected] of [
      ['REQUIRED', 'required'],
      ['Requisite', 'requisite'],
      ['sufficient', 'sufficient'],
      ['OPTIONAL', 'optional'],
    ]) {
      assert.equal(parseJaasConfig(`${PLAIN_LOGIN_MODULE} ${flag};`).controlFlag, expected);
    }
  });

  it('reads bare words, both quotes, spaces, escapes and comments as Java StreamTokenizer does', () => {
    const module = parseJaasConfig(
      [
        `${PLAIN_LOGIN_MODULE} required // the broker's own login`,
        '  username=admin_user-1$',
        '  /* quoted values keep spaces */ password="a secret with spaces"',
        `  single='say "hi"' escaped="tab\\there \\"quoted\\" back\\\\slash \\101\\0612 \\u"`,
        ';',
      ].join('\n'),
    );
    assert.deepEqual(
      module.options,
      new Map([
        ['username', 'admin_user-1$'],
        ['password', 'a secret with spaces'],
        ['single', 'say "hi"'],
        ['escaped', 'tab\there "quoted" back\\slash A12 u'],
      ]),
    );
  });

  it('ends a bare value at a character that is not a word character', () => {
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE} required password=pa@ss;`), {
      message: "Value not specified for key 'null' in JAAS config",
    });
  });

  it('keeps the value of a repeated key that comes last', () => {
    const module = parseJaasConfig(`${PLAIN_LOGIN_MODULE} required user_a="1" user_a="2";`);
    assert.equal(module.options.get('user_a'), '2');
  });

  it('refuses a bare value that Java tokenizes as a number', () => {
    assert.throws(() => parseJaasConfig(`${SCRAM_LOGIN_MODULE} required iterations=4096;`), {
      message: "Value not specified for key 'iterations' in JAAS config",
    });
  });

  it('refuses an entry without its terminating semi-colon', () => {
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE} required username="a"`), {
      message: 'JAAS config entry not terminated by semi-colon',
    });
  });

  it('refuses a login module without a control flag', () => {
    assert.throws(() => parseJaasConfig(PLAIN_LOGIN_MODULE), { message: 'Login module control flag not specified in JAAS config' });
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE};`), {
      message: 'Login module control flag is not available in the JAAS config',
    });
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE} username="a";`), {
      message: "Invalid login module control flag 'username' in JAAS config",
    });
  });

  it('refuses two login modules', () => {
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE} required; ${SCRAM_LOGIN_MODULE} required;`), {
      message: 'JAAS config property contains 2 login modules, should be 1 module',
    });
  });

  it('refuses a config with no login module', () => {
    assert.throws(() => parseJaasConfig('  /* nothing */ '), { message: 'Login module not specified in JAAS config' });
  });

  it('refuses an option without a value', () => {
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE} required username;`), {
      message: "Value not specified for key 'username' in JAAS config",
    });
    assert.throws(() => parseJaasConfig(`${PLAIN_LOGIN_MODULE} required username=;`), {
      message: "Value not specified for key 'username' in JAAS config",
    });
  });

  it('round-trips any option value written as a quoted string with escapes', () => {
    const quote = (value: string) => `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }).filter((v) => !/[\r\n]/.test(v)),
        (value) => {
          const module = parseJaasConfig(`${PLAIN_LOGIN_MODULE} required user_x=${quote(value)};`);
          assert.equal(module.options.get('user_x'), value);
        },
      ),
    );
  });
});
