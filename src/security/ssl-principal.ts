/**
 * The principal of an mTLS peer, as Kafka derives it: the certificate's subject written as
 * Java's X500Principal.getName() writes it, then Kafka's SslPrincipalMapper
 * (ssl.principal.mapping.rules, KIP-371) turns that name into the principal's name.
 */
import type { X509Certificate } from 'node:crypto';

/** One DER element: its tag byte, its content, and its whole encoding (header included). */
export interface DerElement {
  readonly tag: number;
  readonly value: Buffer;
  readonly encoded: Buffer;
}

/** Reads the DER element at `offset` of `buf`. Throws on a truncated or indefinite-length encoding. */
export function readDer(buf: Buffer, offset = 0): DerElement {
  const tag = buf[offset];
  let length = buf[offset + 1];
  if (tag === undefined || length === undefined) throw new Error('malformed DER: truncated header');
  let start = offset + 2;
  if (length & 0x80) {
    const lengthBytes = length & 0x7f;
    if (lengthBytes === 0 || lengthBytes > 4) throw new Error('malformed DER: unsupported length encoding');
    length = 0;
    for (let i = 0; i < lengthBytes; i++) {
      const b = buf[start + i];
      if (b === undefined) throw new Error('malformed DER: truncated length');
      length = length * 256 + b;
    }
    start += lengthBytes;
  }
  const end = start + length;
  if (end > buf.length) throw new Error('malformed DER: content runs past its container');
  return { tag, value: buf.subarray(start, end), encoded: buf.subarray(offset, end) };
}

/** The elements inside a constructed element (a SEQUENCE, a SET, an explicit tag). */
export function derChildren(element: DerElement): DerElement[] {
  const children: DerElement[] = [];
  for (let offset = 0; offset < element.value.length; ) {
    const child = readDer(element.value, offset);
    children.push(child);
    offset += child.encoded.length;
  }
  return children;
}

/** An OBJECT IDENTIFIER's content in dotted form. */
export function derOid(value: Buffer): string {
  const arcs: number[] = [];
  let arc = 0;
  for (const b of value) {
    arc = arc * 128 + (b & 0x7f);
    if (b & 0x80) continue;
    if (arcs.length === 0) arcs.push(arc < 80 ? Math.floor(arc / 40) : 2, arc < 80 ? arc % 40 : arc - 80);
    else arcs.push(arc);
    arc = 0;
  }
  return arcs.join('.');
}

// The keywords RFC 2253 defines and Java's AVAKeyword writes; any other attribute type is
// written as its dotted OID with a '#'-hex value (an emailAddress becomes
// "1.2.840.113549.1.9.1=#16...", as Kafka's principals show it).
const RFC2253_KEYWORDS = new Map([
  ['2.5.4.3', 'CN'],
  ['2.5.4.6', 'C'],
  ['2.5.4.7', 'L'],
  ['2.5.4.8', 'ST'],
  ['2.5.4.9', 'STREET'],
  ['2.5.4.10', 'O'],
  ['2.5.4.11', 'OU'],
  ['0.9.2342.19200300.100.1.1', 'UID'],
  ['0.9.2342.19200300.100.1.25', 'DC'],
]);

// The string types Java writes as text: UTF8String, PrintableString, T61String, IA5String,
// GeneralString, BMPString.
const STRING_TAGS = new Set([0x0c, 0x13, 0x14, 0x16, 0x1b, 0x1e]);
const ESCAPED = ',=+<>#;"\\';

/** The subject of a peer certificate as Java's X500Principal.getName() (RFC 2253: most specific RDN first, e.g. "CN=alice,OU=eng,O=Acme,C=US", with RFC 2253 escaping). */
export function distinguishedName(cert: X509Certificate): string {
  const tbs = derChildren(derChildren(readDer(cert.raw))[0]!);
  // tbsCertificate: [0] version (absent for v1), serialNumber, signature, issuer, validity, subject.
  const subject = tbs[(tbs[0]?.tag === 0xa0 ? 1 : 0) + 4];
  if (subject === undefined) throw new Error('malformed certificate: no subject');
  return derChildren(subject)
    .reverse()
    .map((rdn) => derChildren(rdn).map(attributeTypeAndValue).join('+'))
    .join(',');
}

function attributeTypeAndValue(ava: DerElement): string {
  const [type, value] = derChildren(ava);
  if (type === undefined || value === undefined) throw new Error('malformed certificate: bad attribute in subject');
  const oid = derOid(type.value);
  const keyword = RFC2253_KEYWORDS.get(oid);
  if (keyword === undefined || !STRING_TAGS.has(value.tag)) return `${keyword ?? oid}=#${value.encoded.toString('hex')}`;
  // Java decodes every string type's bytes as UTF-8 (a BMPString included) before escaping.
  return `${keyword}=${escapeValue(value.value.toString('utf8'))}`;
}

function escapeValue(text: string): string {
  let escaped = '';
  for (const c of text) {
    if (ESCAPED.includes(c)) escaped += '\\' + c;
    else if (c === '\0') escaped += '\\00';
    else escaped += c;
  }
  const isBlank = (c: string | undefined): boolean => c === ' ' || c === '\r';
  let lead = 0;
  while (lead < escaped.length && isBlank(escaped[lead])) lead++;
  let trail = escaped.length - 1;
  while (trail >= 0 && isBlank(escaped[trail])) trail--;
  let out = '';
  for (let i = 0; i < escaped.length; i++) out += (i < lead || i > trail ? '\\' : '') + escaped[i];
  return out;
}

/** Thrown by SslPrincipalMapper.name when no rule applies (Kafka's NoMatchingRule). */
export class NoMatchingRuleError extends Error {
  override readonly name = 'NoMatchingRuleError';
}

// Kafka's RULE_PATTERN, character for character: DEFAULT, RULE:pattern/replacement/[LU], or
// anything else (which must then be empty, else the rule is invalid).
const RULE_PATTERN = String.raw`(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`;
const RULE_SPLITTER = new RegExp(String.raw`\s*(${RULE_PATTERN})\s*(,\s*|$)`, 'g');
const RULE_PARSER = new RegExp(RULE_PATTERN, 'y');
const BACK_REFERENCE = /\$(\d+)/g;

interface Rule {
  apply(distinguishedName: string): string | null;
  toString(): string;
}

const DEFAULT_RULE: Rule = { apply: (dn) => dn, toString: () => 'DEFAULT' };

/** Kafka's SslPrincipalMapper: parses ssl.principal.mapping.rules ("RULE:pattern/replacement/[LU],DEFAULT"); throws on a bad rule like Kafka. */
export class SslPrincipalMapper {
  private constructor(private readonly rules: readonly Rule[]) {}

  /** `null` means Kafka's default, "DEFAULT". */
  static fromRules(rules: string | null): SslPrincipalMapper {
    return new SslPrincipalMapper(
      splitRules(rules ?? 'DEFAULT')
        .map(parseRule)
        .filter((r): r is Rule => r !== null),
    );
  }

  name(distinguishedName: string): string {
    for (const rule of this.rules) {
      const principalName = rule.apply(distinguishedName);
      if (principalName !== null) return principalName;
    }
    throw new NoMatchingRuleError(`No rules apply to ${distinguishedName}, rules [${this.rules.join(', ')}]`);
  }

  toString(): string {
    return `SslPrincipalMapper(rules = [${this.rules.join(', ')}])`;
  }
}

function splitRules(rules: string): string[] {
  return [...rules.trim().matchAll(RULE_SPLITTER)].map((m) => m[1]!);
}

function parseRule(rule: string): Rule | null {
  RULE_PARSER.lastIndex = 0;
  const m = RULE_PARSER.exec(rule);
  if (m === null) throw new Error(`Invalid rule: ${rule}`);
  if (m[0].length !== rule.length) {
    throw new Error(`Invalid rule: \`${rule}\`, unmatched substring: \`${rule.slice(m[0].length)}\``);
  }
  if (m[1] !== undefined) return DEFAULT_RULE;
  if (m[2] === undefined) return null; // an empty rule, ignored as Kafka does
  return replacementRule(m[2], m[4]!, m[6] === 'L', m[6] === 'U');
}

function replacementRule(pattern: string, replacement: string, toLowerCase: boolean, toUpperCase: boolean): Rule {
  let whole: RegExp;
  let global: RegExp;
  try {
    // Java's matches() must cover the whole name; replaceAll then rewrites every match.
    whole = new RegExp(`^(?:${pattern})$`);
    global = new RegExp(pattern, 'g');
  } catch (err) {
    throw new Error(`Invalid rule pattern: ${pattern}: ${(err as Error).message}`);
  }
  const groupCount = new RegExp(`${pattern}|`).exec('')!.length - 1;
  const javaReplacement = escapeLiteralBackReferences(replacement, groupCount);
  return {
    apply(dn) {
      if (!whole.test(dn)) return null;
      const result = dn.replace(global, (...args: unknown[]) =>
        expandReplacement(javaReplacement, args.slice(0, groupCount + 1) as (string | undefined)[]),
      );
      if (toLowerCase) return result.toLowerCase();
      if (toUpperCase) return result.toUpperCase();
      return result;
    },
    toString() {
      return `RULE:${pattern}/${replacement}${toLowerCase ? '/L' : toUpperCase ? '/U' : ''}`;
    },
  };
}

/**
 * Kafka's (from Apache NiFi) treatment of a back reference to a group the pattern lacks: "$4"
 * with three groups is a literal "$4". Ported with its index arithmetic, which measures
 * positions in the original replacement, so that two such references behave as in Kafka.
 */
function escapeLiteralBackReferences(unescaped: string, groupCount: number): string {
  if (groupCount === 0) return unescaped;
  let value = unescaped;
  for (const m of unescaped.matchAll(BACK_REFERENCE)) {
    const digits = m[1]!;
    if (digits.startsWith('0')) continue;
    let index = Number.parseInt(digits, 10);
    while (index > groupCount && index >= 10) index = Math.floor(index / 10);
    if (index > groupCount) {
      const groupStart = m.index + 1;
      value = value.slice(0, groupStart - 1) + '\\' + value.slice(groupStart - 1);
    }
  }
  return value;
}

/** Java's Matcher.appendReplacement: "\x" is a literal x, "$n" the longest group number that exists. */
function expandReplacement(replacement: string, groups: (string | undefined)[]): string {
  const groupCount = groups.length - 1;
  let out = '';
  for (let i = 0; i < replacement.length; i++) {
    const c = replacement[i]!;
    if (c === '\\') {
      i++;
      if (i >= replacement.length) throw new Error('character to be escaped is missing');
      out += replacement[i];
    } else if (c === '$') {
      i++;
      const first = replacement.charCodeAt(i) - 48;
      if (Number.isNaN(first) || first < 0 || first > 9) throw new Error('Illegal group reference');
      let ref = first;
      while (i + 1 < replacement.length) {
        const next = replacement.charCodeAt(i + 1) - 48;
        if (next < 0 || next > 9 || ref * 10 + next > groupCount) break;
        ref = ref * 10 + next;
        i++;
      }
      if (ref > groupCount) throw new Error(`No group ${ref}`);
      out += groups[ref] ?? '';
    } else {
      out += c;
    }
  }
  return out;
}
