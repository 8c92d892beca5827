export interface JaasLoginModule {
  loginModule: string;
  controlFlag: 'required' | 'requisite' | 'sufficient' | 'optional';
  options: Map<string, string>;
}

export const PLAIN_LOGIN_MODULE = 'org.apache.kafka.common.security.plain.PlainLoginModule';
export const SCRAM_LOGIN_MODULE = 'org.apache.kafka.common.security.scram.ScramLoginModule';
export const OAUTHBEARER_LOGIN_MODULE = 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule';

const CONTROL_FLAGS: ReadonlySet<string> = new Set(['required', 'requisite', 'sufficient', 'optional']);

/**
 * Parses a `sasl.jaas.config` value as Kafka's JaasConfig and JaasContext do: exactly one login module, a control
 * flag, `key=value` options whose values are bare words or quoted strings, and a `;` terminator.
 */
export function parseJaasConfig(value: string): JaasLoginModule {
  const tokenizer = new JaasTokenizer(value);
  const modules: JaasLoginModule[] = [];
  for (let token = tokenizer.next(); token.kind !== 'eof'; token = tokenizer.next()) {
    modules.push(parseLoginModule(tokenizer, token));
  }
  const [module] = modules;
  if (module === undefined) throw new Error('Login module not specified in JAAS config');
  if (modules.length !== 1) throw new Error(`JAAS config property contains ${modules.length} login modules, should be 1 module`);
  return module;
}

function parseLoginModule(tokenizer: JaasTokenizer, first: JaasToken): JaasLoginModule {
  const loginModule = stringValue(first);
  const flagToken = tokenizer.next();
  if (flagToken.kind === 'eof') throw new Error('Login module control flag not specified in JAAS config');
  const controlFlag = parseControlFlag(stringValue(flagToken));
  const options = new Map<string, string>();
  let token = tokenizer.next();
  while (token.kind !== 'eof' && !isChar(token, ';')) {
    // Kafka keeps an option whose key is not a string under a null key no lookup can reach: dropping it is the same.
    const key = stringValue(token);
    if (!isChar(tokenizer.next(), '=')) throw valueNotSpecified(key);
    const optionValue = stringValue(tokenizer.next());
    if (optionValue === undefined) throw valueNotSpecified(key);
    if (key !== undefined) options.set(key, optionValue);
    token = tokenizer.next();
  }
  if (!isChar(token, ';')) throw new Error('JAAS config entry not terminated by semi-colon');
  if (!loginModule) throw new Error('Login module name not specified in JAAS config');
  return { loginModule, controlFlag, options };
}

function parseControlFlag(flag: string | undefined): JaasLoginModule['controlFlag'] {
  if (flag === undefined) throw new Error('Login module control flag is not available in the JAAS config');
  const controlFlag = flag.toLowerCase();
  if (!isControlFlag(controlFlag)) throw new Error(`Invalid login module control flag '${flag}' in JAAS config`);
  return controlFlag;
}

function isControlFlag(flag: string): flag is JaasLoginModule['controlFlag'] {
  return CONTROL_FLAGS.has(flag);
}

function valueNotSpecified(key: string | undefined): Error {
  return new Error(`Value not specified for key '${key ?? 'null'}' in JAAS config`);
}

type JaasToken =
  | { kind: 'eof' }
  | { kind: 'word'; value: string }
  | { kind: 'quoted'; value: string }
  | { kind: 'number' }
  | { kind: 'char'; char: string };

/** The token's text where Java's StreamTokenizer has an `sval` (words and quoted strings). */
function stringValue(token: JaasToken): string | undefined {
  return token.kind === 'word' || token.kind === 'quoted' ? token.value : undefined;
}

function isChar(token: JaasToken, char: string): boolean {
  return token.kind === 'char' && token.char === char;
}

const EOF = -1;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const DOUBLE_QUOTE = 0x22;
const DOLLAR = 0x24;
const SINGLE_QUOTE = 0x27;
const STAR = 0x2a;
const MINUS = 0x2d;
const DOT = 0x2e;
const SLASH = 0x2f;
const BACKSLASH = 0x5c;
const UNDERSCORE = 0x5f;
const ESCAPES: ReadonlyMap<number, number> = new Map([
  [0x61, 0x07], // \a
  [0x62, 0x08], // \b
  [0x66, 0x0c], // \f
  [0x6e, LF], // \n
  [0x72, CR], // \r
  [0x74, 0x09], // \t
  [0x76, 0x0b], // \v
]);

function isAsciiDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isOctalDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x37;
}

/** Numeric start characters of a StreamTokenizer with parseNumbers() on, as Kafka's is by default. */
function isNumberStart(c: number): boolean {
  return isAsciiDigit(c) || c === DOT || c === MINUS;
}

/** Word characters of Kafka's tokenizer: Java's defaults plus '-', '_' and '$'. */
function isWordChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c >= 0xa0 || c === MINUS || c === UNDERSCORE || c === DOLLAR;
}

/**
 * The tokens of java.io.StreamTokenizer as Kafka's JaasConfig configures it, quirks included: a bare value that
 * starts with a digit, '.' or '-' is a number (which Kafka refuses as a value), and a '/' outside quotes starts a
 * comment. Reads UTF-16 code units, as Java reads chars.
 */
class JaasTokenizer {
  private position = 0;
  private peeked: number | undefined;

  constructor(private readonly text: string) {}

  next(): JaasToken {
    for (;;) {
      let c = this.peeked ?? this.read();
      this.peeked = undefined;
      while (c >= 0 && c <= SPACE) c = this.read();
      if (c === EOF) return { kind: 'eof' };
      if (isNumberStart(c)) return this.number(c);
      if (isWordChar(c)) return this.word(c);
      if (c === DOUBLE_QUOTE || c === SINGLE_QUOTE) return this.quoted(c);
      if (c !== SLASH) return { kind: 'char', char: String.fromCharCode(c) };
      this.skipComment();
    }
  }

  private read(): number {
    return this.position < this.text.length ? this.text.charCodeAt(this.position++) : EOF;
  }

  private number(c: number): JaasToken {
    if (c === MINUS) {
      c = this.read();
      if (c !== DOT && !isAsciiDigit(c)) {
        this.peeked = c;
        return { kind: 'char', char: '-' };
      }
    }
    let seenDot = false;
    while (isAsciiDigit(c) || (c === DOT && !seenDot)) {
      if (c === DOT) seenDot = true;
      c = this.read();
    }
    this.peeked = c;
    return { kind: 'number' };
  }

  private word(c: number): JaasToken {
    let value = '';
    do {
      value += String.fromCharCode(c);
      c = this.read();
    } while (isWordChar(c) || isNumberStart(c));
    this.peeked = c;
    return { kind: 'word', value };
  }

  /** A quoted string ends at its closing quote, a line end or the end of input; Java's escapes apply. */
  private quoted(quote: number): JaasToken {
    let value = '';
    let d = this.read();
    while (d !== EOF && d !== quote && d !== LF && d !== CR) {
      let c: number;
      if (d === BACKSLASH) {
        c = this.read();
        const first = c;
        if (isOctalDigit(c)) {
          c -= 0x30;
          let c2 = this.read();
          if (isOctalDigit(c2)) {
            c = (c << 3) + (c2 - 0x30);
            c2 = this.read();
            if (isOctalDigit(c2) && first <= 0x33) {
              c = (c << 3) + (c2 - 0x30);
              d = this.read();
            } else {
              d = c2;
            }
          } else {
            d = c2;
          }
        } else {
          c = ESCAPES.get(c) ?? c;
          d = this.read();
        }
      } else {
        c = d;
        d = this.read();
      }
      // A backslash at the end of input adds (char) -1, as Java's does.
      value += String.fromCharCode(c & 0xffff);
    }
    this.peeked = d === quote ? undefined : d;
    return { kind: 'quoted', value };
  }

  /** Skips a slash-star comment, or the rest of the line after `//` or a lone '/' (Java's default comment char). */
  private skipComment(): void {
    let c = this.read();
    if (c === STAR) {
      let previous = 0;
      for (c = this.read(); c !== SLASH || previous !== STAR; c = this.read()) {
        if (c === CR) {
          c = this.read();
          if (c === LF) c = this.read();
        } else if (c === LF) {
          c = this.read();
        }
        if (c === EOF) return;
        previous = c;
      }
      return;
    }
    do c = this.read();
    while (c !== LF && c !== CR && c !== EOF);
    this.peeked = c;
  }
}
